prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object SERVICE {
            name: "Service", help: "s",
            counters {
                MAXED: Histogram { name: "A", help: name, unit: ms, buckets: [1ms], aggregate: max },
                LAZY: Histogram { name: "L", help: name, unit: ms, buckets: [1ms], on_demand: true },
                ADDED: Histogram { name: "S", help: name, unit: ms, buckets: [1ms], sum: [JOBS] },
                SCALED: Histogram { name: "F", help: name, unit: ms, buckets: [1ms], factor: / 1024 },
                JOBS: RawCount { name: "Jobs", help: name, range: 1..2, buckets: [1] },
                TOTAL: LargeRawCount { name: "Total", help: name, sum: [JOBS, ADDED] },
            }
        }
    }
}

fn main() {}

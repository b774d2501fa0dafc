prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object SERVICE {
            name: "Service", help: "s",
            counters {
                NEITHER: Histogram { name: "N", help: name, unit: us },
                BOTH: Histogram { name: "B", help: name, unit: us, range: 1us..1s, error: 5%, buckets: [1ms] },
                RANGE_ONLY: Histogram { name: "R", help: name, unit: us, range: 1us..1s },
                NO_UNIT: Histogram { name: "U", help: name, buckets: [1ms] },
                BAD_UNIT: Histogram { name: "X", help: name, unit: sec, buckets: [1, 2] },
            }
        }
    }
}

fn main() {}

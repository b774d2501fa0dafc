prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS = 0 {
            name: "Totals", help: "t", detail: Novice, default: LATENCY, instances: none, costly: false,
            counters {
                LATENCY = 2: AverageTimer { name: "Avg. latency", help: "l", detail: Novice, scale: 0 },
                QUEUE = 4: RawCount { name: "Queue", help: "q", detail: Novice, scale: 0 },
            }
        }
    }
}

fn main() {}

prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals", help: "t", default: LATENCY_BAS, detail: Novce,
            counters {
                LATENCY: AverageTimer { name: "Latency", help: "l" },
                LATENCY_BASE: AverageBase,
            }
        }
        object OTHER {
            name: "Other", help: "o", default: LATENCY_BASE2,
            counters {
                X: AverageBulk { name: "X", help: "x" },
                LATENCY_BASE2: AverageBase,
            }
        }
    }
}

fn main() {}

// Aggregation rules that cannot mean anything, each refused at its token.
prfdata::prfdata_map! {
    pub mod m {
        app: "AggregateMisuse",
        object WORKERS {
            name: "Workers", help: "w", instances: { max: 4, name_len: 8 }, total: true,
            counters {
                UNKNOWN: CounterCounter { name: "Unknown", help: "u", aggregate: average },
                LABEL: Text16 { name: "Label", help: "l", aggregate: last },
                RATIO: RawFraction { name: "Ratio", help: "r", aggregate: max },
                RATIO_BASE: RawBase,
                STARTED: ElapsedTime { name: "Started", help: "s", aggregate: sum },
            }
        }
        object GLOBAL {
            name: "Global", help: "g", total: true,
            counters { N: CounterCounter { name: "N", help: "n" } }
        }
    }
}

fn main() {}

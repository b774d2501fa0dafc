prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals", help: "t",
            counters {
                HITS: RawCount { name: "Hits", help: "h" },
                HITS_BASE: RawBase,
                RATIO: RawFraction { name: "Ratio", help: "r" },
                RATIO_BASE = 8: AverageBase { name: "Base", help: "b" },
            }
        }
    }
}

fn main() {}

prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals",
            counters {
                HITS: RawCount { help: "h" },
                MISSES: RawCount,
            }
        }
        object EMPTY {
            name: "Empty", help: name,
        }
    }
}

fn main() {}

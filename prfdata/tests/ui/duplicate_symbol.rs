prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals", help: "t",
            counters {
                HITS: RawCount { name: "Hits", help: "h" },
                MAP: RawCount { name: "Map", help: "m" },
            }
        }
        object HITS {
            name: "Hits", help: "h", instances: { max: 4, name_len: 8 },
            counters {
                TOTALS: RawCount { name: "Totals", help: "t" },
            }
        }
    }
}

fn main() {}

prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals", help: "t", detial: Advanced, costly: true, cost: 3,
            counters {
                HITS: RawCount { name: "Hits", help: "h", scael: 3, detail: Expert, name: "Again" },
            }
        }
    }
}

fn main() {}

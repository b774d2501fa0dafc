prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS = 0 {
            name: "Totals", help: "t",
            counters {
                A = 3: RawCount { name: "A", help: "a" },
            }
        }
    }
}

fn main() {}

prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS = 0 {
            name: "Totals", help: "t", detail: Novice, default: none, instances: none, costly: false,
            counters {
                A = 2: RawCount { name: "A", help: "a", detail: Novice, scale: 0 },
                B = 2: RawCount { name: "B", help: "b", detail: Novice, scale: 0 },
            }
        }
    }
}

fn main() {}

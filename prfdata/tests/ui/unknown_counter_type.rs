prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals", help: "t",
            counters {
                A: RawCont { name: "A", help: "a" },
                B: Timer100ns { name: "B", help: "b" },
            }
        }
    }
}

fn main() {}

// Offsets left out continue from the previous symbol's: B gets 4, which C already has.
prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals", help: "t",
            counters {
                C = 4: RawCount { name: "C", help: "c" },
                A = 2: RawCount { name: "A", help: "a" },
                B: RawCount { name: "B", help: "b" },
            }
        }
    }
}

fn main() {}

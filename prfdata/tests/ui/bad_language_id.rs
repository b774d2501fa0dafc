prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS {
            name: "Totals", help: "t",
            lang "fr" { name: "Totaux", help: "t" },
            lang "009" { name: "Totals", help: "t" },
            lang "00C" { name: "Totaux", help: name },
            lang "00c" { name: "Totaux", help: "t" },
            counters {
                HITS: RawCount { name: "Hits", help: "h", lang "7" { name: "Treffer" } },
            }
        }
    }
}

fn main() {}

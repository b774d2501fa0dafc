// Regression: "a..b" passed the map's validation, then `activate()` refused it at run time
// (`untrusted::check_name` forbids `..`). It is now a compile error.
prfdata::prfdata_map! {
    pub mod m {
        app: "My..App",
        object TOTALS {
            name: "Totals", help: "t",
            counters {
                HITS: RawCount { name: "Hits", help: "h" },
            }
        }
    }
}

fn main() {}

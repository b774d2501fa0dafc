prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object POOL {
            name: "Pool", help: "p",
            counters {
                PAGES: LargeRawCount { name: "Pages", help: name, factor: % 4 },
            }
        }
    }
}

fn main() {}

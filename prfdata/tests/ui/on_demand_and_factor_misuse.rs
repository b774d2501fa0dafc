prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object POOL {
            name: "Pool", help: "p", instances: { max: 4, name_len: 8 },
            counters {
                SIZE: RawCount { name: "Size", help: name, on_demand: true },
                MEM: LargeRawCount { name: "Memory", help: name, factor: / 0 },
            }
        }
    }
}

fn main() {}

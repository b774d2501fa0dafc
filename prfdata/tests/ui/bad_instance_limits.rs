prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object WORKER {
            name: "Worker", help: "w", instances: { max: 0, name_len: 2000 },
            counters {
                JOBS: RawCount { name: "Jobs", help: "j" },
            }
        }
        object POOL {
            name: "Pool", help: "p", instances: { max: 4 },
            counters {
                SIZE: RawCount { name: "Size", help: "s" },
            }
        }
    }
}

fn main() {}

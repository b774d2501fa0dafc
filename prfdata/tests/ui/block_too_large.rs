// What only the map's `const` validation can find (the size of the block laid out from it) is
// reported at the app name.
prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object WORKER {
            name: "Worker", help: "w", instances: { max: 1048576, name_len: 1024 },
            counters {
                JOBS: LargeRawCount { name: "Jobs", help: "j" },
            }
        }
    }
}

fn main() {}

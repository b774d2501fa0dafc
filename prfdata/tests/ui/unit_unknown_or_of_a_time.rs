prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object POOL {
            name: "Pool", help: "p",
            counters {
                HEAP: LargeRawCount { name: "Heap KiB", help: name, factor: / 1024, unit: kib },
                BUSY: CounterTimer { name: "Busy", help: name, unit: seconds },
                NAME: Text16 { name: "Name", help: name, unit: bytes },
            }
        }
    }
}

fn main() {}

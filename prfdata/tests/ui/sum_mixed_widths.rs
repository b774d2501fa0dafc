prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object IO {
            name: "IO", help: "i",
            counters {
                READS: RawCount { name: "Reads", help: name },
                BYTES: LargeRawCount { name: "Bytes", help: name },
                TOTAL: RawCount { name: "Total", help: name, sum: [READS, BYTES] },
            }
        }
    }
}

fn main() {}

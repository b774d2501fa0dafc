prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object IO {
            name: "IO", help: "i",
            counters {
                READS: RawCount { name: "Reads", help: name },
                WRITES: RawCount { name: "Writes", help: name },
                TOTAL: RawCount { name: "Total", help: name, sum: [READS, WRTIES] },
                SELF: RawCount { name: "Self", help: name, sum: [SELF, READS] },
                NESTED: RawCount { name: "Nested", help: name, sum: [TOTAL, READS] },
                NONE: RawCount { name: "None", help: name, sum: [] },
            }
        }
    }
}

fn main() {}

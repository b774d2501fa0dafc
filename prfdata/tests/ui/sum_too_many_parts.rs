prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object IO {
            name: "IO", help: "i",
            counters {
                A: RawCount { name: "A", help: name },
                B: RawCount { name: "B", help: name },
                C: RawCount { name: "C", help: name },
                D: RawCount { name: "D", help: name },
                E: RawCount { name: "E", help: name },
                F: RawCount { name: "F", help: name },
                G: RawCount { name: "G", help: name },
                H: RawCount { name: "H", help: name },
                I: RawCount { name: "I", help: name },
                ALL: RawCount { name: "All", help: name, sum: [A, B, C, D, E, F, G, H, I] },
            }
        }
    }
}

fn main() {}

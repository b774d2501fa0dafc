// A sharded counter is stored by the app's threads, one slot each: not on demand or a sum (at
// its token), and a 64-bit count or timer (the map's validation, which knows the widths).
prfdata::prfdata_map! {
    pub mod m {
        app: "ShardedMisuse",
        object GLOBAL {
            name: "Global", help: "g",
            counters {
                A: BulkCount { name: "A", help: "a" },
                ASKED: BulkCount { name: "Asked", help: "x", on_demand: true, sharded: true },
                BOTH: BulkCount { name: "Both", help: "b", sum: [A], sharded: true },
            }
        }
    }
}

prfdata::prfdata_map! {
    pub mod narrow {
        app: "ShardedNarrow",
        object GLOBAL {
            name: "Global", help: "g",
            counters { JOBS: CounterCounter { name: "Jobs", help: "j", sharded: true } }
        }
    }
}

fn main() {}

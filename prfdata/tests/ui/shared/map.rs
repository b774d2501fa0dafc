// The map the compile-fail cases misuse (included by each case).
prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object TOTALS = 0 {
            name: "Totals", help: "t", detail: Novice, default: BYTES, instances: none, costly: false,
            counters {
                BYTES = 2: BulkCount { name: "Bytes/sec", help: "b", detail: Novice, scale: 0 },
                QUEUE = 4: RawCount { name: "Queue", help: "q", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 6 {
            name: "Worker", help: "w", detail: Novice, default: DONE,
            instances: { max: 4, name_len: 8 }, costly: false,
            counters {
                DONE = 8: CounterCounter { name: "Done/sec", help: "d", detail: Novice, scale: 0 },
                BUSY = 10: Timer100Ns { name: "Busy", help: "b", detail: Novice, scale: 0 },
            }
        }
        object POOL = 12 {
            name: "Pool", help: "p", detail: Novice, default: none,
            instances: { max: 4, name_len: 8 }, costly: false,
            counters {
                SIZE = 14: LargeRawCount { name: "Size", help: "s", detail: Novice, scale: 0 },
            }
        }
    }
}

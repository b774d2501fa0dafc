//! Sharded buckets that do not fit the shard line (8192 words) are refused at the histogram
//! that passes it.

prfdata::prfdata_map! {
    pub mod m {
        app: "UiHistogramShardLine",
        object SERVICE {
            name: "Service", help: name,
            counters {
                A: Histogram { name: "A", help: name, unit: ns, range: 1us..60s, error: 1%, sharded: true },
                B: Histogram { name: "B", help: name, unit: ns, range: 1us..60s, error: 1%, sharded: true },
                C: Histogram { name: "C", help: name, unit: ns, range: 1us..60s, error: 1%, sharded: true },
            }
        }
    }
}

fn main() {}

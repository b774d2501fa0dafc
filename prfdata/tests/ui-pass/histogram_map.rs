//! A map with histograms of every form (log-linear in time, explicit bounds, log-linear in
//! bytes; sharded and not) compiles.

prfdata::prfdata_map! {
    pub mod m {
        app: "UiHistogramMap",
        object SERVICE {
            name: "Service", help: "s",
            counters {
                JOB_LATENCY: Histogram {
                    name: "Job latency", help: "Submission to completion, microseconds.",
                    unit: us, range: 10us..10s, error: 2%, sharded: true,
                    scale: 0, detail: Novice, aggregate: sum,
                },
                QUEUE_WAIT: Histogram { name: "Queue wait", help: name, unit: ms,
                    buckets: [1ms, 5ms, 25ms, 100ms, 500ms, 2s] },
                SIZES: Histogram { name: "Sizes", help: name, unit: bytes, range: 64..1073741824, error: 10% },
            }
        }
    }
}

fn main() {}

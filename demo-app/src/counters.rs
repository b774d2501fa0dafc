//! The demo's performance data map: what HWInputMon's map was to CPrfData.

prfdata::prfdata_map! {
    /// The counters of the demo job service.
    pub mod demo {
        app: "PrfDataDemo",
        object SERVICE = 0 {
            name: "PrfData Demo Service", help: "The demo job-processing service as a whole.",
            lang "00C" { name: "Service de démo PrfData", help: "Le service de démonstration." },
            detail: Novice, default: JOBS_PER_SEC, instances: none, costly: false,
            counters {
                JOBS_PER_SEC = 2: CounterCounter {
                    name: "Jobs/sec", help: "Jobs completed per second.",
                    lang "00C" { name: "Travaux/s", help: "Travaux terminés par seconde." },
                    detail: Novice, scale: 0,
                },
                BYTES_PER_SEC = 4: BulkCount {
                    name: "Bytes/sec", help: "Payload bytes processed per second.",
                    detail: Novice, scale: -4,
                },
                QUEUE_LENGTH = 6: RawCount {
                    name: "Queue length", help: "Jobs waiting for a worker right now.",
                    detail: Novice, scale: 0,
                },
                AVG_LATENCY = 8: AverageTimer {
                    name: "Avg. job latency", help: "Average seconds from submission to completion.",
                    detail: Advanced, scale: 3,
                },
                AVG_LATENCY_BASE: AverageBase,
                CACHE_HIT_RATIO = 10: RawFraction {
                    name: "Cache hit ratio", help: "Percentage of lookups answered from the cache.",
                    detail: Advanced, scale: 0,
                },
                CACHE_LOOKUPS: RawBase,
                UPTIME = 12: ElapsedTime {
                    name: "Uptime", help: "Seconds since the service started.",
                    detail: Novice, scale: -2,
                },
                // The Windows 95 stat-server extras, one of each.
                OPEN_FILES = 26: RawCount {
                    name: "Open files",
                    help: "Files the service has open, counted in /proc/self/fd when a monitor asks.",
                    on_demand: true,
                },
                CACHE_HITS = 28: RawCount {
                    name: "Cache hits", help: "Lookups answered from the cache.", detail: Advanced,
                },
                CACHE_MISSES = 30: RawCount {
                    name: "Cache misses", help: "Lookups the cache could not answer.", detail: Advanced,
                },
                CACHE_TOTAL = 32: RawCount {
                    name: "Cache lookups",
                    help: "Every cache lookup: the sum of hits and misses, computed by the reader.",
                    detail: Advanced, sum: [CACHE_HITS, CACHE_MISSES],
                },
                QUEUED_KIB = 34: LargeRawCount {
                    name: "Queued payload KiB",
                    help: "Payload waiting in the queue; the service counts bytes, monitors show KiB.",
                    factor: / 1024, unit: bytes,
                },
                CACHE_SCANNED = 36: RawCount {
                    name: "Cache entries scanned",
                    help: "Cache entries the last scan of the cache visited. The scan is costly: the service runs it only while a monitor watches this counter (watch notifications), and leaves the counter at 0 otherwise.",
                    detail: Advanced, scale: 0,
                },
                JOB_LATENCY = 44: Histogram {
                    name: "Job latency",
                    help: "Microseconds from submission to completion, as a histogram: monitors read its percentiles (Job latency:p99) and its mean.",
                    unit: us, range: 10us..10s, error: 2%, sharded: true, detail: Novice,
                },
            }
        }
        object POOL = 14 {
            name: "PrfData Demo Pool", help: "A pool of workers serving one kind of job.",
            detail: Advanced, default: POOL_WORKERS, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                POOL_WORKERS = 16: RawCount {
                    name: "Workers", help: "Workers currently in the pool.",
                    detail: Advanced, scale: 0,
                },
            }
        }
        object PROCESS = 38 {
            name: "PrfData Demo Process",
            help: "One worker process of `demo-app run --processes N`; processes are recycled and sometimes killed, and _Total keeps what the departed ones completed.",
            detail: Novice, default: PROC_JOBS_DONE, instances: { max: 32, name_len: 16 }, costly: false,
            total: true,
            counters {
                PROC_JOBS_DONE = 40: LargeRawCount {
                    name: "Jobs completed",
                    help: "Jobs this process completed; in _Total, every job any worker process ever completed (it never goes backwards).",
                    detail: Novice, scale: -2, aggregate: sum,
                },
                PROC_JOBS_PER_SEC = 42: CounterCounter {
                    name: "Jobs/sec", help: "Jobs this process completes per second.",
                    detail: Novice, scale: 0,
                },
            }
        }
        object WORKER = 18 {
            name: "PrfData Demo Worker",
            help: "One worker thread; workers come and go, and _Total keeps what the retired ones did.",
            detail: Novice, default: BUSY, instances: { max: 64, name_len: 32 }, costly: false,
            total: true,
            counters {
                BUSY = 20: Timer100Ns {
                    name: "% Busy", help: "Percentage of time the worker spent on jobs.",
                    detail: Novice, scale: 0,
                },
                JOBS_DONE = 22: LargeRawCount {
                    name: "Jobs done", help: "Jobs this worker has completed.",
                    detail: Novice, scale: -2,
                },
                WORKER_JOBS_PER_SEC = 24: CounterCounter {
                    name: "Jobs/sec", help: "Jobs this worker completes per second.",
                    detail: Advanced, scale: 0,
                },
                WORKER_LATENCY = 46: Histogram {
                    name: "Job latency",
                    help: "Microseconds from submission to completion of this worker's jobs; in _Total, of every job any worker ever completed.",
                    unit: us, range: 10us..10s, error: 5%, detail: Advanced,
                },
            }
        }
    }
}

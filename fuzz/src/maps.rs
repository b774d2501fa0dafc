//! The maps the fuzz blocks come from, and real blocks built from them ([`build_templates`]).
//!
//! - [`demo`]: `demo-app`'s own map (the same source file), so a template is what the demo
//!   publishes: a service object, pools and their workers.
//! - [`rich`]: a map that uses what the demo does not: a costly parent with a non-costly child,
//!   three levels of parents with a costly grandchild, text counters (global and per instance),
//!   every base-counter pairing, 64-bit and 32-bit values, elapsed time, unique ids, and
//!   histograms (explicit bounds on the global object, sharded log-linear ones per instance).

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, SystemTime};

use prfdata::InstanceSpec;

#[path = "../../demo-app/src/counters.rs"]
mod demo_counters;

pub use demo_counters::demo;

prfdata::prfdata_map! {
    /// Every feature a block can carry, for the fuzzers' templates.
    pub mod rich {
        app: "PrfDataFuzz",
        object SERVER = 0 {
            name: "Fuzz Server", help: "The whole server.",
            detail: Novice, default: REQUESTS, instances: none, costly: false,
            counters {
                REQUESTS = 2: CounterCounter { name: "Requests/sec", help: "r", detail: Novice, scale: 0 },
                BYTES = 4: BulkCount { name: "Bytes/sec", help: "b", detail: Advanced, scale: -3 },
                LATENCY = 6: AverageTimer { name: "Avg. latency", help: "l", detail: Advanced, scale: 3 },
                LATENCY_BASE: AverageBase,
                HITS = 8: LargeRawFraction { name: "Hit ratio", help: "h", detail: Expert, scale: 0 },
                LOOKUPS: LargeRawBase,
                UPTIME = 10: ElapsedTime { name: "Uptime", help: "u", detail: Novice, scale: 0 },
                VERSION = 12: Text32 { name: "Version", help: "v", detail: Novice, scale: 0 },
                QUEUE = 14: QueueLen100Ns { name: "Queue", help: "q", detail: Wizard, scale: 0 },
                OPEN = 40: RawCount { name: "Open", help: "o", on_demand: true },
                PAGES = 42: LargeRawCount { name: "Memory", help: "m", factor: * 4096 },
                SIZES = 48: Histogram { name: "Request size", help: "s", unit: bytes,
                    buckets: [64, 1024, 65536] },
            }
        }
        object SHARD = 16 {
            name: "Fuzz Shard", help: "A costly parent.",
            detail: Novice, default: none, instances: { max: 4, name_len: 16 }, costly: true,
            counters {
                SHARD_SIZE = 18: RawCount { name: "Shard size", help: "s", detail: Novice, scale: 0 },
            }
        }
        object ENTRY = 20 {
            name: "Fuzz Entry", help: "A non-costly child of a shard.",
            detail: Advanced, default: ENTRY_HITS, instances: { max: 16, name_len: 24 }, costly: false,
            counters {
                ENTRY_HITS = 22: SampleFraction { name: "Entry hit %", help: "h", detail: Novice, scale: 0 },
                ENTRY_TRIES: SampleBase,
                OWNER = 24: Text16 { name: "Owner", help: "o", detail: Novice, scale: 0 },
            }
        }
        object HOST = 26 {
            name: "Fuzz Host", help: "A host (packed: counter blocks 8-aligned, not 128).",
            detail: Novice, default: none, instances: { max: 4, name_len: 16 }, costly: false,
            packed: true,
            counters {
                HOST_LOAD = 28: Timer100Ns { name: "% Load", help: "l", detail: Novice, scale: 0 },
            }
        }
        object JOB = 30 {
            name: "Fuzz Job", help: "A job of a host.",
            detail: Novice, default: none, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                JOB_DONE = 32: LargeRawCount { name: "Job done", help: "d", detail: Novice, scale: 0 },
                JOB_TIME = 34: MultiTimer100Ns { name: "Job time", help: "t", detail: Expert, scale: 0 },
                JOB_THREADS: MultiBase,
                JOB_ALL = 44: LargeRawCount { name: "Job total", help: "t", sum: [JOB_DONE, JOB_TIME] },
                JOB_BYTES = 46: BulkCount { name: "Job bytes", help: "b", sharded: true },
                JOB_LATENCY = 50: Histogram { name: "Job latency", help: "l", unit: ns,
                    range: 100ns..1s, error: 25%, sharded: true },
            }
        }
        object TASK = 36 {
            name: "Fuzz Task", help: "A costly task of a job.",
            detail: Wizard, default: none, instances: { max: 8, name_len: 16 }, costly: true,
            counters {
                TASK_STEPS = 38: RawCountHex { name: "Steps", help: "s", detail: Novice, scale: 0 },
            }
        }
    }
}

/// A real block: the bytes of a block file an app published, and what it was.
#[derive(Debug, Clone)]
pub struct Template {
    /// What it holds, for messages.
    pub name: &'static str,
    /// The block file's bytes.
    pub bytes: Vec<u8>,
}

/// The real blocks the structure-aware target edits, built by activating the maps in `dir` and
/// copying the files (see [`env::templates`](crate::env::templates), which builds them once per
/// process in the scratch folder):
///
/// 0. the demo, just started (pools, no workers yet);
/// 1. the demo at work: two pools, five workers, counters moving;
/// 2. the rich map, populated: shards with entries, hosts with jobs with tasks, texts, unique
///    ids, non-ASCII names, an instance removed (a free-list entry);
/// 3. the rich map, empty (no instances).
///
/// # Panics
///
/// If a block cannot be made (`dir` is unusable).
pub fn build_templates(dir: &Path) -> Vec<Template> {
    vec![
        Template {
            name: "demo started",
            bytes: demo_block(dir, false),
        },
        Template {
            name: "demo at work",
            bytes: demo_block(dir, true),
        },
        Template {
            name: "rich populated",
            bytes: rich_block(dir, true),
        },
        Template {
            name: "rich empty",
            bytes: rich_block(dir, false),
        },
    ]
}

fn read_block(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The demo's block, as the demo publishes it (see `demo-app/src/service.rs`).
fn demo_block(dir: &Path, working: bool) -> Vec<u8> {
    let prf = demo::PrfData::activate_in(dir).unwrap_or_else(|e| panic!("demo block: {e}"));
    prf.set_elapsed_start(
        demo::UPTIME,
        (),
        SystemTime::now() - Duration::from_secs(90),
    );
    let pools = ["fast", "bulk"].map(|p| prf.add_instance(demo::POOL, p).expect("pool"));
    if working {
        for i in 0..5u32 {
            let pool = pools[(i % 2) as usize];
            let w = prf
                .add_instance(
                    demo::WORKER,
                    InstanceSpec::named(&format!("worker-{i}")).parent(pool),
                )
                .expect("worker");
            prf.get_ctr64(demo::BUSY, w)
                .store(1_000_000 * i64::from(i), Relaxed);
            prf.get_ctr64(demo::JOBS_DONE, w)
                .store(17 * i64::from(i), Relaxed);
            prf.get_ctr32(demo::WORKER_JOBS_PER_SEC, w)
                .store(i as i32, Relaxed);
            let latency = prf.histogram(demo::WORKER_LATENCY, w);
            for v in [40, 900, 15_000 * u64::from(i + 1)] {
                latency.record(v);
            }
        }
        for (k, pool) in pools.iter().enumerate() {
            prf.get_ctr32(demo::POOL_WORKERS, *pool)
                .store(2 + k as i32, Relaxed);
        }
        prf.get_ctr32(demo::JOBS_PER_SEC, ()).store(420, Relaxed);
        prf.get_ctr64(demo::BYTES_PER_SEC, ())
            .store(1 << 33, Relaxed);
        prf.get_ctr32(demo::QUEUE_LENGTH, ()).store(3, Relaxed);
        prf.get_ctr32(demo::AVG_LATENCY, ()).store(12_345, Relaxed);
        prf.get_ctr32(demo::AVG_LATENCY_BASE, ())
            .store(100, Relaxed);
        prf.get_ctr32(demo::CACHE_HIT_RATIO, ()).store(80, Relaxed);
        prf.get_ctr32(demo::CACHE_LOOKUPS, ()).store(100, Relaxed);
        let latency = prf.histogram(demo::JOB_LATENCY, ());
        for v in [5, 10, 11, 250, 4_000, 120_000, 20_000_000] {
            latency.record(v);
        }
    }
    read_block(prf.path())
}

/// The rich map's block, populated or empty.
fn rich_block(dir: &Path, populated: bool) -> Vec<u8> {
    use rich::*;
    let prf = PrfData::activate_in(dir).unwrap_or_else(|e| panic!("rich block: {e}"));
    prf.set_elapsed_start(UPTIME, (), SystemTime::now() - Duration::from_secs(3600));
    prf.text().set(VERSION, (), "1.4.2 (ünïcode) ✓");
    if populated {
        prf.get_ctr32(REQUESTS, ()).store(7, Relaxed);
        prf.get_ctr64(HITS, ()).store(3, Relaxed);
        prf.get_ctr64(LOOKUPS, ()).store(4, Relaxed);
        let sizes = prf.histogram(SIZES, ());
        for v in [0, 64, 65, 1024, 70_000] {
            sizes.record(v);
        }
        let shards = ["s0", "s1", "ß2"].map(|s| prf.add_instance(SHARD, s).expect("shard"));
        for (k, shard) in shards.iter().enumerate() {
            prf.get_ctr32(SHARD_SIZE, *shard)
                .store(k as i32 * 10, Relaxed);
            for e in 0..3 {
                let name = format!("e{k}{e}");
                let spec = InstanceSpec::named(&name).unique_id(100 + e);
                let entry = prf.add_instance(ENTRY, spec.parent(*shard)).expect("entry");
                prf.text()
                    .set(OWNER, entry, if e == 0 { "alice" } else { "bob ☃" });
                prf.get_ctr32(ENTRY_HITS, entry).store(e, Relaxed);
                prf.get_ctr32(ENTRY_TRIES, entry).store(3, Relaxed);
            }
        }
        // A removed instance leaves a free-list entry and a bumped generation.
        let gone = prf.add_instance(SHARD, "gone").expect("shard");
        prf.remove_instance(gone).expect("remove");
        let host = prf.add_instance(HOST, "h0").expect("host");
        for j in 0..3 {
            let job = prf
                .add_instance(JOB, InstanceSpec::named(&format!("job{j}")).parent(host))
                .expect("job");
            prf.get_ctr64(JOB_DONE, job).store(j.into(), Relaxed);
            prf.get_ctr64(JOB_THREADS, job).store(2, Relaxed);
            // A sharded counter: a slot of this thread, and the counter's own word.
            prf.sharded(JOB_BYTES, job).add(1000 * i64::from(j));
            prf.get_ctr64(JOB_BYTES, job).store(7, Relaxed);
            // A sharded histogram: this thread's line holds the buckets and the sum.
            let latency = prf.histogram(JOB_LATENCY, job);
            for v in [1, 150, 9_999, 2_000_000_000] {
                latency.record(v + 7 * u64::try_from(j).unwrap_or(0));
            }
            for t in 0..2 {
                prf.add_instance(TASK, InstanceSpec::named(&format!("t{t}")).parent(job))
                    .expect("task");
            }
        }
        prf.add_instance(HOST, "h1 (idle)").expect("host");
    }
    read_block(prf.path())
}

//! Group `counter_update`: what one counter increment costs, prfdata against the alternatives.
//!
//! Every implementation is driven through the local [`EventCounter`] trait (parking_lot's
//! `benchmark/src/bin/mutex.rs` compares its locks the same way), by the same loop: each
//! iteration passes the handle through `black_box` and calls `inc` on it, so no implementation
//! can hoist its address computation out of the loop. That is the honest cost of a counter
//! update reached from a handle kept somewhere in the program.
//!
//! | id                  | what one iteration does                                            |
//! |---------------------|--------------------------------------------------------------------|
//! | `raw_atomic_u64`    | `AtomicU64::fetch_add(1, Relaxed)` on the heap: the floor           |
//! | `prfdata_get_ctr64` | `prf.get_ctr64(ctr, inst)` then `fetch_add(1, Relaxed)`            |
//! | `prfdata_get_ctr32` | `prf.get_ctr32(ctr, inst)` then `fetch_add(1, Relaxed)`            |
//! | `prfdata_cached`    | `fetch_add(1, Relaxed)` on an `&AtomicI64` kept from `get_ctr64`   |
//! | `prfdata_sharded`   | `ShardedCtr::add(1)` on a handle kept from `prf.sharded(ctr, ())`: a    |
//! |                     | relaxed load and store of the thread's slot, no locked instruction |
//! | `prometheus_client` | prometheus-client `Counter::inc`                                   |
//! | `prometheus`        | prometheus `IntCounter::inc`                                       |
//! | `metrics`           | metrics `Counter::increment(1)`, registered with metrics-util's    |
//! |                     | `DebuggingRecorder` (its counters are `Arc<AtomicU64>` behind the  |
//! |                     | `CounterFn` trait object)                                          |
//!
//! The binary's second group, `histogram` (`counter_update/histogram.rs`), records latencies:
//! its ids compare with `raw_atomic_u64` of the same run.
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use criterion::{criterion_group, BenchmarkGroup, Criterion};
use metrics::Recorder as _;

// A subfolder without `main.rs`: not a bench target of its own.
#[path = "counter_update/histogram.rs"]
mod histogram;

prfdata::prfdata_map! {
    /// The map the counter benchmarks update: one instanced object, a 32-bit and a 64-bit counter.
    pub mod bench_map {
        app: "PrfDataBenchCounterUpdate",
        object WORKER = 0 {
            name: "Bench Worker", help: "A worker of the counter_update benchmark.",
            detail: Novice, default: DONE, instances: { max: 16, name_len: 16 }, costly: false,
            counters {
                DONE = 2: CounterCounter { name: "Done/sec", help: "d", detail: Novice, scale: 0 },
                BYTES = 4: LargeRawCount { name: "Bytes", help: "b", detail: Novice, scale: 0 },
            }
        }
        object SHARED = 6 {
            name: "Bench Shared", help: "A sharded counter.",
            counters {
                HITS = 8: BulkCount { name: "Hits", help: "h", sharded: true },
            }
        }
    }
}

/// One way to count an event: what this benchmark compares.
trait EventCounter {
    /// Counts one event.
    fn inc(&self);
}

/// `raw_atomic_u64`: the floor.
struct RawAtomic(Box<AtomicU64>);

impl EventCounter for RawAtomic {
    #[inline]
    fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }
}

/// `prfdata_get_ctr64`: look the counter up from the block and the instance, every time.
struct PrfGet64<'a> {
    prf: &'a bench_map::PrfData,
    inst: prfdata::InstanceId<bench_map::WORKER>,
}

impl EventCounter for PrfGet64<'_> {
    #[inline]
    fn inc(&self) {
        self.prf
            .get_ctr64(bench_map::BYTES, self.inst)
            .fetch_add(1, Relaxed);
    }
}

/// `prfdata_get_ctr32`: the same with the 32-bit counter.
struct PrfGet32<'a> {
    prf: &'a bench_map::PrfData,
    inst: prfdata::InstanceId<bench_map::WORKER>,
}

impl EventCounter for PrfGet32<'_> {
    #[inline]
    fn inc(&self) {
        self.prf
            .get_ctr32(bench_map::DONE, self.inst)
            .fetch_add(1, Relaxed);
    }
}

/// `prfdata_cached`: the reference `get_ctr64` returned, kept.
struct PrfCached<'a>(&'a AtomicI64);

impl EventCounter for PrfCached<'_> {
    #[inline]
    fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }
}

/// `prfdata_sharded`: a sharded counter's handle, kept.
impl EventCounter for prfdata::ShardedCtr<'_> {
    #[inline]
    fn inc(&self) {
        self.add(1);
    }
}

impl EventCounter for prometheus_client::metrics::counter::Counter {
    #[inline]
    fn inc(&self) {
        prometheus_client::metrics::counter::Counter::inc(self);
    }
}

impl EventCounter for prometheus::IntCounter {
    #[inline]
    fn inc(&self) {
        prometheus::IntCounter::inc(self);
    }
}

impl EventCounter for metrics::Counter {
    #[inline]
    fn inc(&self) {
        self.increment(1);
    }
}

/// The loop every implementation runs: `iters` increments through a `black_box`ed handle.
#[inline(never)]
fn run<C: EventCounter>(counter: &C, iters: u64) {
    for _ in 0..iters {
        black_box(counter).inc();
    }
}

/// The group, as Criterion sees it.
type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Runs one implementation under `id`: timed by Criterion, or, when `PRFDATA_BENCH_COUNT`
/// is `id:N`, `N` times with no timing at all (for `valgrind --tool=callgrind`, see below).
fn bench<C: EventCounter>(group: &mut Group<'_>, id: &str, counter: &C) {
    match count_only() {
        Some((only, n)) if only == id => run(counter, n),
        Some(_) => {}
        None => {
            group.bench_function(id, |b| b.iter(|| black_box(counter).inc()));
        }
    }
}

/// `PRFDATA_BENCH_COUNT=id:N`: run implementation `id` `N` times and nothing else.
///
/// Instruction counts are free of the machine's noise: the difference between the totals of
/// two runs with different `N`, divided by the difference of the `N`s, is the instructions one
/// increment costs (BENCHMARKS.md gives the command).
fn count_only() -> Option<(String, u64)> {
    let spec = std::env::var("PRFDATA_BENCH_COUNT").ok()?;
    let (id, n) = spec.split_once(':')?;
    Some((id.to_string(), n.parse().ok()?))
}

/// A fresh folder for the benchmark's block (removed by the caller).
fn shm_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "prfdata-bench-counter-update-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("create the benchmark's shm folder");
    dir
}

fn counter_update(c: &mut Criterion) {
    let dir = shm_dir();
    let prf = bench_map::PrfData::activate_in(&dir).expect("activate the benchmark block");
    let inst = prf
        .add_instance(bench_map::WORKER, "worker 0")
        .expect("add an instance");

    let prom_client = prometheus_client::metrics::counter::Counter::<u64>::default();
    let prom = prometheus::IntCounter::new("bench_events", "Events counted by the benchmark.")
        .expect("a valid prometheus counter");
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let metrics_counter = recorder.register_counter(
        &metrics::Key::from_name("bench_events"),
        &metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!())),
    );

    let mut group = c.benchmark_group("counter_update");
    // Each iteration is a few nanoseconds: two seconds hold hundreds of millions of them.
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    bench(
        &mut group,
        "raw_atomic_u64",
        &RawAtomic(Box::new(AtomicU64::new(0))),
    );
    bench(
        &mut group,
        "prfdata_get_ctr64",
        &PrfGet64 { prf: &prf, inst },
    );
    bench(
        &mut group,
        "prfdata_get_ctr32",
        &PrfGet32 { prf: &prf, inst },
    );
    bench(
        &mut group,
        "prfdata_cached",
        &PrfCached(prf.get_ctr64(bench_map::BYTES, inst)),
    );
    let sharded = prf.sharded(bench_map::HITS, ());
    bench(&mut group, "prfdata_sharded", &sharded);
    bench(&mut group, "prometheus_client", &prom_client);
    bench(&mut group, "prometheus", &prom);
    bench(&mut group, "metrics", &metrics_counter);
    group.finish();

    if count_only().is_none() {
        // Every handle counted something: none of them was optimised into a no-op.
        assert!(prf.get_ctr64(bench_map::BYTES, inst).load(Relaxed) > 0);
        assert!(prf.get_ctr32(bench_map::DONE, inst).load(Relaxed) > 0);
        assert!(prom_client.get() > 0 && prom.get() > 0);
    }
    drop(prf);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, counter_update, histogram::histogram);

fn main() {
    if count_only().is_some() {
        counter_update(&mut Criterion::default());
        histogram::histogram(&mut Criterion::default());
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

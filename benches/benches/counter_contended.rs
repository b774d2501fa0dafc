//! Group `counter_contended`: two threads updating counters at once.
//!
//! | id                      | the two threads increment                                      |
//! |-------------------------|----------------------------------------------------------------|
//! | `prfdata_same_counter`  | the same prfdata counter (one instance), via `get_ctr64`        |
//! | `prfdata_two_instances` | the same counter of two different instances, via `get_ctr64`    |
//! | `prfdata_sharded_same_counter` | one sharded counter, each thread through its own slot    |
//! |                         | (`prf.sharded(ctr, ()).add(1)`: a relaxed load and store)            |
//! | `raw_same_counter`      | one heap `AtomicU64`                                            |
//! | `raw_two_counters`      | two heap `AtomicU64`s, each on its own cache line               |
//!
//! Each sample starts both threads at a barrier and lets each do `iters` increments; the time
//! reported per iteration is the wall time until the slower thread finishes, divided by
//! `iters`: the time it takes each of two threads to do one increment while the other does too.
//!
//! prfdata lays the counter blocks of an object's instances out 128 bytes apart at least (layout
//! version 8; `packed: true` in a map keeps them dense), so two instances never share a cache
//! line: `prfdata_two_instances` should cost what `raw_two_counters` costs. A sharded counter
//! gives each thread a cache line of its own for one counter: `prfdata_sharded_same_counter`
//! against `raw_two_counters` (and `raw_same_counter`, what one unsharded counter costs).
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

prfdata::prfdata_map! {
    /// One instanced object with one 64-bit counter (16-byte counter blocks, 128 bytes apart),
    /// and a global object with a sharded counter.
    pub mod bench_map {
        app: "PrfDataBenchCounterContended",
        object WORKER = 0 {
            name: "Bench Worker", help: "A worker of the counter_contended benchmark.",
            detail: Novice, default: BYTES, instances: { max: 16, name_len: 16 }, costly: false,
            counters {
                BYTES = 2: LargeRawCount { name: "Bytes", help: "b", detail: Novice, scale: 0 },
            }
        }
        object SHARED = 4 {
            name: "Bench Shared", help: "One counter all threads update.",
            counters {
                HITS = 6: BulkCount { name: "Hits", help: "h", sharded: true },
            }
        }
    }
}

/// A counter one of the two threads increments: what this benchmark compares.
trait ThreadCounter: Sync {
    /// Counts one event.
    fn inc(&self);
}

impl ThreadCounter for AtomicU64 {
    #[inline]
    fn inc(&self) {
        self.fetch_add(1, Relaxed);
    }
}

/// A prfdata counter, looked up every time as `prfdata_get_ctr64` does.
struct PrfCounter<'a> {
    prf: &'a bench_map::PrfData,
    inst: prfdata::InstanceId<bench_map::WORKER>,
}

impl ThreadCounter for PrfCounter<'_> {
    #[inline]
    fn inc(&self) {
        self.prf
            .get_ctr64(bench_map::BYTES, self.inst)
            .fetch_add(1, Relaxed);
    }
}

/// A heap atomic alone on its cache line (128 bytes: adjacent-line prefetch pairs lines on
/// Intel, as crossbeam-utils' `CachePadded` notes for x86_64).
#[repr(align(128))]
struct Padded(AtomicU64);

/// One thread's part: wait for the other, then `iters` increments, timed.
fn timed<C: ThreadCounter>(barrier: &Barrier, counter: &C, iters: u64) -> Duration {
    barrier.wait();
    let start = Instant::now();
    for _ in 0..iters {
        black_box(counter).inc();
    }
    start.elapsed()
}

/// Two threads, each through its own handle on the sharded counter HITS: wall time of `iters`
/// increments each (the handle, which claims the thread's slot, is taken before the barrier).
fn race_sharded(prf: &bench_map::PrfData, iters: u64) -> Duration {
    let barrier = Barrier::new(2);
    let run = || {
        let hits = prf.sharded(bench_map::HITS, ());
        barrier.wait();
        let start = Instant::now();
        for _ in 0..iters {
            black_box(&hits).add(1);
        }
        start.elapsed()
    };
    std::thread::scope(|s| {
        let other = s.spawn(run);
        let mine = run();
        mine.max(other.join().expect("the other thread"))
    })
}

/// Two threads, one counter each (possibly the same one): wall time of `iters` increments each.
fn race<A: ThreadCounter, B: ThreadCounter>(a: &A, b: &B, iters: u64) -> Duration {
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let other = s.spawn(|| timed(&barrier, a, iters));
        let mine = timed(&barrier, b, iters);
        let theirs = other.join().expect("the other thread");
        mine.max(theirs)
    })
}

fn shm_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "prfdata-bench-counter-contended-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("create the benchmark's shm folder");
    dir
}

fn counter_contended(c: &mut Criterion) {
    let dir = shm_dir();
    let prf = bench_map::PrfData::activate_in(&dir).expect("activate the benchmark block");
    let first = prf.add_instance(bench_map::WORKER, "w0").expect("instance");
    let second = prf.add_instance(bench_map::WORKER, "w1").expect("instance");
    let (one, two) = (
        PrfCounter {
            prf: &prf,
            inst: first,
        },
        PrfCounter {
            prf: &prf,
            inst: second,
        },
    );
    let distance = (prf.get_ctr64(bench_map::BYTES, second) as *const AtomicI64 as usize)
        .abs_diff(prf.get_ctr64(bench_map::BYTES, first) as *const AtomicI64 as usize);
    eprintln!("counter_contended: the two instances' counters are {distance} bytes apart");
    let shared = Padded(AtomicU64::new(0));
    let (left, right) = (Padded(AtomicU64::new(0)), Padded(AtomicU64::new(0)));

    let mut group = c.benchmark_group("counter_contended");
    // Each sample spawns a thread (tens of microseconds): keep samples long enough to hide it.
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.bench_function("prfdata_same_counter", |b| {
        b.iter_custom(|iters| race(&one, &one, iters))
    });
    group.bench_function("prfdata_two_instances", |b| {
        b.iter_custom(|iters| race(&one, &two, iters))
    });
    group.bench_function("prfdata_sharded_same_counter", |b| {
        b.iter_custom(|iters| race_sharded(&prf, iters))
    });
    group.bench_function("raw_same_counter", |b| {
        b.iter_custom(|iters| race(&shared.0, &shared.0, iters))
    });
    group.bench_function("raw_two_counters", |b| {
        b.iter_custom(|iters| race(&left.0, &right.0, iters))
    });
    group.finish();

    drop(prf);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, counter_contended);
criterion_main!(benches);

//! Group `histogram`: what recording one latency costs, prfdata against the alternatives.
//!
//! Every implementation is driven through the local [`Recorder`] trait by the same loop: each
//! iteration takes the next value from a precomputed ring of [`RING`] log-normal microsecond
//! values (median 2 ms, shape 0.8, clamped to 1 µs .. 10 s; the ring's index passes through
//! `black_box`), so the bucket search sees a realistic spread, and passes the handle through
//! `black_box` as `counter_update` does. Compare with `counter_update/raw_atomic_u64` of the
//! same run (the targets in BENCHMARKS.md do).
//!
//! | id                          | what one iteration does                                     |
//! |-----------------------------|-------------------------------------------------------------|
//! | `raw_atomic_add`            | the ring's value added to a heap `AtomicU64` (relaxed): the  |
//! |                             | floor of this loop, ring read included                      |
//! | `raw_atomic_add_two_threads` | two threads at once, each on a `raw_atomic_add` of its own |
//! |                             | (its own cache line: uncontended): the two-thread floor      |
//! | `prfdata_record`            | `HistogramCtr::record(v)` on a kept handle: 1 µs .. 10 s in  |
//! |                             | µs within 2 % (1166 buckets), the bucket's `fetch_add` and   |
//! |                             | the sum in the thread's shard line                           |
//! | `prfdata_record_sharded`    | the same histogram declared `sharded: true`: the buckets in  |
//! |                             | the thread's shard line too, no locked instruction          |
//! | `prfdata_record_two_threads` | two threads at once on `prfdata_record`'s histogram, each   |
//! |                             | through its own handle                                      |
//! | `prfdata_record_sharded_two_threads` | the same on the sharded histogram                   |
//! | `prometheus_client_observe` | prometheus-client `Histogram::observe(v / 1e6)` over        |
//! |                             | `exponential_buckets(1e-6, 2.0, 24)` (seconds)              |
//! | `prometheus_client_observe_two_threads` | the same histogram, two threads at once          |
//! | `metrics_histogram`         | metrics `Histogram::record(v)` registered with metrics-util's |
//! |                             | `DebuggingRecorder` (an `AtomicBucket<f64>` that keeps every |
//! |                             | value until it is drained; drained between timed batches)   |
//! | `hdrhistogram_record`       | hdrhistogram `Histogram::<u64>::new_with_bounds(1, 10^7, 2)` |
//! |                             | `saturating_record(v)`: in-process, `&mut`, not shared       |
//!
//! Two threads: each sample starts both at a barrier, each pinned to a CPU of its own (the first
//! two of the process's affinity mask; unpinned, with a note, when it allows fewer), so that
//! what is measured is the two threads' effect on each other, not the scheduler moving them;
//! the time per iteration is the wall time until the slower one has recorded `iters` values,
//! divided by `iters` (as `counter_contended` reports).
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::Criterion;
use metrics::Recorder as _;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram as PromHistogram};

use super::{count_only, shm_dir, Group};

/// How many precomputed values the loop cycles through (a power of two), unless
/// `PRFDATA_BENCH_RING` says another power of two (see [`ring`]).
pub const RING: usize = 4096;

/// Values recorded between two drains of an implementation that keeps every value.
const BATCH: u64 = 1 << 20;

/// One way to record a value: what this group compares.
pub trait Recorder {
    /// Records `v` microseconds.
    fn record(&mut self, v: u64);

    /// Frees what the recorded values hold, outside the timed loop (for implementations that
    /// keep every value until a scrape).
    fn drain(&mut self) {}
}

/// `raw_atomic_add`: the loop's floor; alone on its cache line (128 bytes: the adjacent-line
/// prefetcher pairs lines), so two threads' own ones never share one.
struct RawAtomic(Box<Padded>);

/// A heap atomic alone on its cache line.
#[repr(align(128))]
struct Padded(AtomicU64);

impl RawAtomic {
    fn new() -> Self {
        RawAtomic(Box::new(Padded(AtomicU64::new(0))))
    }

    fn total(&self) -> u64 {
        self.0 .0.load(Relaxed)
    }
}

impl Recorder for RawAtomic {
    #[inline]
    fn record(&mut self, v: u64) {
        self.0 .0.fetch_add(v, Relaxed);
    }
}

/// `prometheus_client_observe`: seconds, as a Prometheus histogram is meant to be.
impl Recorder for &PromHistogram {
    #[inline]
    fn record(&mut self, v: u64) {
        self.observe(v as f64 / 1e6);
    }
}

/// `metrics_histogram`: the handle and the recorder's snapshotter that drains it.
struct MetricsHistogram {
    handle: metrics::Histogram,
    snapshotter: metrics_util::debugging::Snapshotter,
}

impl Recorder for MetricsHistogram {
    #[inline]
    fn record(&mut self, v: u64) {
        self.handle.record(v as f64);
    }

    fn drain(&mut self) {
        drop(self.snapshotter.snapshot());
    }
}

/// `prfdata_record`, `prfdata_record_sharded`: a kept handle.
impl<T: prfdata::counter_type::CounterType> Recorder for prfdata::HistogramCtr<'_, T> {
    #[inline]
    fn record(&mut self, v: u64) {
        prfdata::HistogramCtr::record(self, v);
    }
}

impl Recorder for hdrhistogram::Histogram<u64> {
    #[inline]
    fn record(&mut self, v: u64) {
        self.saturating_record(v);
    }
}

/// [`RING`] log-normal values in microseconds: median 2 ms, shape 0.8, within 1 µs .. 10 s.
///
/// `PRFDATA_BENCH_RING=N` (a power of two) makes it N values: a loop over the same 4,096
/// values in the same order lets a branch predictor learn them over a run, which can flatter
/// an implementation whose cost is its branches (prometheus-client's bucket search); with
/// 65,536 it cannot, and the ring no longer fits the first-level cache.
pub fn ring() -> Vec<u64> {
    let len = match std::env::var("PRFDATA_BENCH_RING") {
        Ok(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| n.is_power_of_two())
            .expect("PRFDATA_BENCH_RING: a power of two"),
        Err(_) => RING,
    };
    let mut mix = prfdata_testkit::values::Mix(0x9e6c_63d0_676a_9a99);
    (0..len)
        .map(|_| (mix.log_normal(2000.0, 0.8).clamp(1.0, 1e7)) as u64)
        .collect()
}

/// `iters` records of the ring's values, timed in batches of [`BATCH`] with a drain between.
#[inline(never)]
fn timed<R: Recorder>(recorder: &mut R, ring: &[u64], iters: u64) -> Duration {
    let mut elapsed = Duration::ZERO;
    let mut done = 0;
    let mut i = 0usize;
    // A power of two (`ring`).
    let mask = ring.len() - 1;
    while done < iters {
        let batch = BATCH.min(iters - done);
        let start = Instant::now();
        for _ in 0..batch {
            let v = ring[black_box(i) & mask];
            black_box(&mut *recorder).record(v);
            i = i.wrapping_add(1);
        }
        elapsed += start.elapsed();
        recorder.drain();
        done += batch;
    }
    elapsed
}

/// Measures one implementation under `id` (or, with `PRFDATA_BENCH_COUNT=id:N`, runs it `N`
/// times untimed, as `counter_update` does for callgrind).
pub fn bench_one<R: Recorder>(group: &mut Group<'_>, id: &str, recorder: &mut R, ring: &[u64]) {
    match count_only() {
        Some((only, n)) if only == id => {
            timed(recorder, ring, n);
        }
        Some(_) => {}
        None => {
            group.bench_function(id, |b| b.iter_custom(|iters| timed(recorder, ring, iters)));
        }
    }
}

/// Measures two threads recording at once, each pinned to its CPU and through the handle `make`
/// gives it (taken before the start barrier): per iteration, the wall time until the slower thread has
/// recorded `iters` values, divided by `iters` (as `counter_contended` reports).
pub fn bench_two_threads<R, F>(group: &mut Group<'_>, id: &str, make: F, ring: &[u64])
where
    R: Recorder,
    F: Fn() -> R + Sync,
{
    if count_only().is_some() {
        return;
    }
    let cpus = two_cpus();
    let race = |iters: u64| {
        let barrier = Barrier::new(2);
        let run = |which: usize| {
            let _pinned = cpus.and_then(|cpus| Pinned::to(cpus[which]));
            let mut recorder = make();
            barrier.wait();
            timed(&mut recorder, ring, iters)
        };
        std::thread::scope(|s| {
            let other = s.spawn(|| run(1));
            let mine = run(0);
            mine.max(other.join().expect("the other thread"))
        })
    };
    group.bench_function(id, |b| b.iter_custom(race));
}

/// The prfdata ids, on the histograms of `prfdata_testkit::histogram_app` (1 µs .. 10 s in µs
/// within 2 %, one of them sharded): a handle kept by this thread,
/// and one taken by each of two threads (a sharded one claims the thread's slot).
fn prfdata_ids(group: &mut Group<'_>, ring: &[u64]) {
    use prfdata_testkit::histogram_app::app::{PrfData, LATENCY, LATENCY_SHARDED};
    let dir = shm_dir();
    let prf = PrfData::activate_in(&dir).expect("activate the histogram block");
    let mut plain = prf.histogram(LATENCY, ());
    bench_one(group, "prfdata_record", &mut plain, ring);
    let mut sharded = prf.histogram(LATENCY_SHARDED, ());
    bench_one(group, "prfdata_record_sharded", &mut sharded, ring);
    group.sample_size(20);
    let two = "prfdata_record_two_threads";
    bench_two_threads(group, two, || prf.histogram(LATENCY, ()), ring);
    let two = "prfdata_record_sharded_two_threads";
    bench_two_threads(group, two, || prf.histogram(LATENCY_SHARDED, ()), ring);
    group.sample_size(100);
    drop(prf);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The group, as Criterion sees it.
pub fn histogram(c: &mut Criterion) {
    let ring = ring();
    let prom = PromHistogram::new(exponential_buckets(1e-6, 2.0, 24));
    let debugging = metrics_util::debugging::DebuggingRecorder::new();
    let mut metrics_histogram = MetricsHistogram {
        handle: debugging.register_histogram(
            &metrics::Key::from_name("bench_latency"),
            &metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!())),
        ),
        snapshotter: debugging.snapshotter(),
    };
    let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 10_000_000, 2)
        .expect("valid hdrhistogram bounds");
    let mut raw = RawAtomic::new();

    let mut group = c.benchmark_group("histogram");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    bench_one(&mut group, "raw_atomic_add", &mut raw, &ring);
    group.sample_size(20);
    // Each thread's own atomic: uncontended, under the two-thread ids' conditions.
    let two = "raw_atomic_add_two_threads";
    bench_two_threads(&mut group, two, RawAtomic::new, &ring);
    group.sample_size(100);
    prfdata_ids(&mut group, &ring);
    bench_one(&mut group, "prometheus_client_observe", &mut &prom, &ring);
    bench_one(
        &mut group,
        "metrics_histogram",
        &mut metrics_histogram,
        &ring,
    );
    bench_one(&mut group, "hdrhistogram_record", &mut hdr, &ring);
    // Each sample spawns a thread (tens of microseconds): fewer, longer samples hide it.
    group.sample_size(20);
    bench_two_threads(
        &mut group,
        "prometheus_client_observe_two_threads",
        || &prom,
        &ring,
    );
    group.finish();

    if count_only().is_none() {
        // The plain-memory implementations recorded something: neither was optimised into a
        // no-op (the others take a lock or allocate, which the compiler keeps).
        assert!(raw.total() > 0 && !hdr.is_empty());
    }
}

/// The CPUs the two threads of [`bench_two_threads`] run on: the first two of this process's
/// affinity mask, or none (with a note) when it has fewer.
fn two_cpus() -> Option<[usize; 2]> {
    // SAFETY: `cpu_set_t` is plain bits (all zeros is the empty set), and `sched_getaffinity`
    // writes at most the size it is given into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        (libc::sched_getaffinity(0, size, &mut set) == 0).then_some(set)
    };
    let mut cpus = (0..libc::CPU_SETSIZE as usize).filter(|&cpu| {
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's size in bits.
        set.is_some_and(|set| unsafe { libc::CPU_ISSET(cpu, &set) })
    });
    let two = cpus.next().zip(cpus.next()).map(|(a, b)| [a, b]);
    if two.is_none() {
        eprintln!("histogram: fewer than two CPUs allowed: the two-thread ids run unpinned");
    }
    two
}

/// The calling thread pinned to one CPU until this is dropped (then allowed its CPUs of before
/// again), so the scheduler's moves are not part of what the two threads measure.
struct Pinned {
    before: libc::cpu_set_t,
}

impl Pinned {
    /// Pins the calling thread to `cpu`; `None`, unpinned, if the kernel refuses.
    fn to(cpu: usize) -> Option<Pinned> {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: both sets are plain bits, all zeros the empty set; `cpu` comes from the
        // affinity mask, so it is below CPU_SETSIZE; each call reads or writes at most `size`
        // bytes of a set it is given, for the calling thread (pid 0).
        unsafe {
            let mut before: libc::cpu_set_t = std::mem::zeroed();
            let mut only: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut only);
            let pinned = libc::sched_getaffinity(0, size, &mut before) == 0
                && libc::sched_setaffinity(0, size, &only) == 0;
            pinned.then_some(Pinned { before })
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `before` is the mask the kernel gave this thread; the call reads `size` bytes.
        unsafe { libc::sched_setaffinity(0, size, &self.before) };
    }
}

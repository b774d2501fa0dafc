//! Group `lock`: the optex against the locks it could have been.
//!
//! | id                       | one iteration                                                |
//! |--------------------------|--------------------------------------------------------------|
//! | `optex`                  | uncontended `Optex::lock` + unlock, the optex in a shared map |
//! | `std_mutex`              | uncontended `std::sync::Mutex<()>` lock + unlock              |
//! | `parking_lot_mutex`      | uncontended `parking_lot::Mutex<()>` lock + unlock            |
//! | `raw_sync_mutex`         | uncontended raw_sync 0.1.5 `Mutex` (a `PTHREAD_PROCESS_SHARED`|
//! |                          | pthread mutex) in a shared map: the design card's choice, kept|
//! |                          | here only as a baseline                                       |
//! | `optex_two_processes`    | two processes each lock, increment a shared word, unlock      |
//! | `raw_sync_two_processes` | the same with the raw_sync mutex                              |
//!
//! Every lock is driven through the local [`Lock`] trait (as parking_lot's
//! `benchmark/src/bin/mutex.rs`), the cross-process ones also through [`SharedLock`].
//!
//! The two-process variants run a second process: this benchmark binary, re-executed with
//! [`CHILD_ENV`] naming the lock and [`FILE_ENV`] the shared file. The processes meet in that
//! file's [`Region`]: for each Criterion sample the parent posts a turn and its iteration count,
//! waits until the child has taken the turn, starts its clock, then tells the child to start,
//! and both run their iterations at once; the time is the parent's wall time until both have
//! finished, per iteration (so: what one lock + unlock costs each of two processes that want the
//! lock all the time). The child starts only once the clock runs, so none of its iterations
//! escape the measurement (before the start word, a child could run part of a turn while the
//! parent was still waiting for its acknowledgement, and a turn looked faster than it was). Every wait is bounded: the
//! parent gives the child [`TURN_LIMIT`] per turn and kills it after, a watchdog aborts a
//! parent stuck in a lock (a child that died holding a raw_sync mutex would leave it locked
//! forever), and the child exits when its parent is gone or no turn comes for [`IDLE_LIMIT`].
use std::fs::OpenOptions;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, BenchmarkGroup, Criterion};
use memmap2::MmapRaw;
use prfdata::Optex;
use raw_sync::locks::{LockImpl, LockInit};

/// Set in the child process: the [`SharedLock::ID`] of the lock it contends for.
const CHILD_ENV: &str = "PRFDATA_BENCH_LOCK_CHILD";
/// Set in the child process: the shared file holding the [`Region`].
const FILE_ENV: &str = "PRFDATA_BENCH_LOCK_FILE";
/// Longest a turn may take before the parent gives up on the child (a turn is well under a
/// second: Criterion's samples are).
const TURN_LIMIT: Duration = Duration::from_secs(30);
/// Longest the child waits for the next turn; Criterion's analysis between two benchmarks
/// takes well under this.
const IDLE_LIMIT: Duration = Duration::from_secs(60);

/// A lock with nothing to guard but a critical section: what this benchmark compares.
trait Lock {
    /// Takes the lock, runs `f`, releases the lock.
    fn with<R>(&self, f: impl FnOnce() -> R) -> R;
}

impl Lock for std::sync::Mutex<()> {
    #[inline]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.lock().unwrap_or_else(PoisonError::into_inner);
        f()
    }
}

impl Lock for parking_lot::Mutex<()> {
    #[inline]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.lock();
        f()
    }
}

/// A lock that lives in memory shared by processes: created by one, opened by the others.
trait SharedLock: Lock + Sized {
    /// The prefix of its benchmark ids, and its name in [`CHILD_ENV`].
    const ID: &'static str;

    /// Creates the lock in the [`LOCK_BYTES`] at `mem`.
    ///
    /// # Safety
    ///
    /// `mem` is 64-aligned, zero-filled, valid for reads and writes of [`LOCK_BYTES`] bytes, and
    /// stays so (mapped, and touched by nothing but this lock) while the lock is used.
    unsafe fn create(mem: *mut u8) -> Self;

    /// Opens the lock another process created at `mem` (its own mapping of the same memory).
    ///
    /// # Safety
    ///
    /// As [`SharedLock::create`], except that `mem` holds a lock `create` made.
    unsafe fn open(mem: *mut u8) -> Self;
}

/// Bytes reserved for the lock at the start of a [`Region`]: one cache line.
const LOCK_BYTES: usize = 64;

/// The optex in shared memory.
struct SharedOptex(*const Optex);

impl Lock for SharedOptex {
    #[inline]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: `self.0` came from `create` / `open`, whose callers keep the 64 aligned bytes
        // mapped and touched only through `Optex` while `self` is used.
        let optex = unsafe { Optex::from_ptr(self.0) };
        let _guard = optex.lock();
        f()
    }
}

impl SharedLock for SharedOptex {
    const ID: &'static str = "optex";

    unsafe fn create(mem: *mut u8) -> Self {
        // All zero is an unlocked optex.
        SharedOptex(mem.cast())
    }

    unsafe fn open(mem: *mut u8) -> Self {
        SharedOptex(mem.cast())
    }
}

/// raw_sync's process-shared mutex.
struct RawSyncMutex(Box<dyn LockImpl>);

impl Lock for RawSyncMutex {
    #[inline]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.0.lock().expect("pthread_mutex_lock");
        f()
    }
}

impl SharedLock for RawSyncMutex {
    const ID: &'static str = "raw_sync";

    unsafe fn create(mem: *mut u8) -> Self {
        assert!(raw_sync::locks::Mutex::size_of(Some(mem)) <= LOCK_BYTES);
        // SAFETY: `mem` has LOCK_BYTES writable bytes, enough for a pthread_mutex_t (checked
        // above), and stays mapped while the lock is used (the caller's contract). The data
        // pointer is never dereferenced: we guard our own word.
        let (lock, _) = unsafe { raw_sync::locks::Mutex::new(mem, std::ptr::null_mut()) }
            .expect("pthread_mutex_init(PTHREAD_PROCESS_SHARED)");
        RawSyncMutex(lock)
    }

    unsafe fn open(mem: *mut u8) -> Self {
        // SAFETY: as in `create`, and `mem` holds the mutex `create` initialised.
        let (lock, _) = unsafe { raw_sync::locks::Mutex::from_existing(mem, std::ptr::null_mut()) }
            .expect("open the raw_sync mutex");
        RawSyncMutex(lock)
    }
}

/// The shared page both processes map:
///
/// ```text
///  offset  field    written by
///  ------  -------  ------------------------------------------------------------
///       0  lock     LOCK_BYTES for the lock under test
///      64  counter  u64 the lock guards: each process adds 1 per iteration
///     128  go       u64 the parent's last turn
///     136  iters    u64 iterations of that turn (each process)
///     144  ack      u64 the child's last turn taken
///     152  done     u64 the child's last turn finished
///     160  quit     u32 the parent says the child may exit
///     168  start    u64 the parent's last turn whose clock runs: the child may begin
/// ```
struct Region {
    map: MmapRaw,
}

const COUNTER: usize = 64;
const GO: usize = 128;
const ITERS: usize = 136;
const ACK: usize = 144;
const DONE: usize = 152;
const QUIT: usize = 160;
const START: usize = 168;
const REGION_BYTES: usize = 4096;

impl Region {
    /// Maps `path` (created zero-filled by the parent).
    fn map(path: &Path, create: bool) -> Region {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        if create {
            file.set_len(REGION_BYTES as u64).expect("size the region");
        }
        let map = MmapRaw::map_raw(&file).expect("map the region");
        assert!(map.len() >= REGION_BYTES);
        Region { map }
    }

    fn lock_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= REGION_BYTES && off >= LOCK_BYTES);
        // SAFETY: `off` is one of the 8-aligned fields above, inside the page-aligned mapping of
        // REGION_BYTES that `self` keeps alive; both processes only ever access it atomically.
        unsafe { AtomicU64::from_ptr(self.map.as_mut_ptr().add(off).cast()) }
    }

    fn quit(&self) -> &AtomicU32 {
        // SAFETY: as in `u64_at`, for the 4-aligned u32 at QUIT.
        unsafe { AtomicU32::from_ptr(self.map.as_mut_ptr().add(QUIT).cast()) }
    }

    /// The critical section: one increment of the guarded counter, as a load and a store (the
    /// lock, not the instruction, makes it exclusive).
    #[inline]
    fn bump(&self) {
        let counter = self.u64_at(COUNTER);
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// The child process's side of a two-process benchmark: run turns until told to quit.
fn child<L: SharedLock>(path: &Path) {
    let region = Region::map(path, false);
    // SAFETY: the region's first LOCK_BYTES hold the lock the parent created, page-aligned, and
    // `region` outlives `lock` (declared after it, dropped before it).
    let lock = unsafe { L::open(region.lock_ptr()) };
    let parent = std::os::unix::process::parent_id();
    let mut turn = 0;
    loop {
        let idle_since = Instant::now();
        let go = loop {
            let go = region.u64_at(GO).load(Ordering::Acquire);
            if go > turn {
                break go;
            }
            if region.quit().load(Ordering::Acquire) != 0 {
                return;
            }
            if std::os::unix::process::parent_id() != parent || idle_since.elapsed() > IDLE_LIMIT {
                eprintln!("lock benchmark child: parent gone or silent, exiting");
                std::process::exit(2);
            }
            std::thread::sleep(Duration::from_micros(20));
        };
        turn = go;
        let iters = region.u64_at(ITERS).load(Ordering::Relaxed);
        region.u64_at(ACK).store(turn, Ordering::Release);
        // The parent starts its clock right after it sees the acknowledgement: wait for that.
        let mut spins = 0u32;
        while region.u64_at(START).load(Ordering::Acquire) < turn {
            if std::os::unix::process::parent_id() != parent || idle_since.elapsed() > IDLE_LIMIT {
                eprintln!("lock benchmark child: parent gone or silent, exiting");
                std::process::exit(2);
            }
            spins += 1;
            if spins < 1000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        for _ in 0..iters {
            black_box(&lock).with(|| region.bump());
        }
        region.u64_at(DONE).store(turn, Ordering::Release);
    }
}

/// Aborts the process if a turn outlives [`TURN_LIMIT`] (the parent stuck in a lock the child
/// left locked); stops with the benchmark.
struct Watchdog {
    turn_start_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    epoch: Instant,
}

impl Watchdog {
    fn start(what: &'static str) -> Watchdog {
        let turn_start_ms = Arc::new(AtomicU64::new(u64::MAX));
        let stop = Arc::new(AtomicBool::new(false));
        let epoch = Instant::now();
        let thread = {
            let (turn_start_ms, stop) = (Arc::clone(&turn_start_ms), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let start = turn_start_ms.load(Ordering::Relaxed);
                    let now = epoch.elapsed().as_millis() as u64;
                    if start != u64::MAX
                        && now.saturating_sub(start) > TURN_LIMIT.as_millis() as u64
                    {
                        eprintln!("{what}: a turn took over {TURN_LIMIT:?}: aborting");
                        std::process::abort();
                    }
                }
            })
        };
        Watchdog {
            turn_start_ms,
            stop,
            thread: Some(thread),
            epoch,
        }
    }

    fn turn(&self, running: bool) {
        let v = if running {
            self.epoch.elapsed().as_millis() as u64
        } else {
            u64::MAX
        };
        self.turn_start_ms.store(v, Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The parent's side: the child process, the shared region, the lock, and the turn count.
struct TwoProcesses<L: SharedLock> {
    lock: L,
    child: Child,
    turn: u64,
    watchdog: Watchdog,
    path: PathBuf,
    region: Region,
}

impl<L: SharedLock> TwoProcesses<L> {
    fn start() -> TwoProcesses<L> {
        let path = std::env::temp_dir().join(format!(
            "prfdata-bench-lock-{}-{}",
            L::ID,
            std::process::id()
        ));
        let region = Region::map(&path, true);
        // SAFETY: the fresh page is zero-filled and page-aligned, and `region` outlives `lock`
        // (both owned by the returned value, `lock` dropped first).
        let lock = unsafe { L::create(region.lock_ptr()) };
        let child = Command::new(std::env::current_exe().expect("the benchmark's path"))
            .env(CHILD_ENV, L::ID)
            .env(FILE_ENV, &path)
            .stdin(Stdio::null())
            .spawn()
            .expect("start the second process");
        TwoProcesses {
            lock,
            child,
            turn: 0,
            watchdog: Watchdog::start(L::ID),
            path,
            region,
        }
    }

    /// Waits until `word` reaches the current turn, at most [`TURN_LIMIT`].
    fn wait_for(&mut self, word: usize, what: &str) {
        let deadline = Instant::now() + TURN_LIMIT;
        let mut spins = 0u32;
        while self.region.u64_at(word).load(Ordering::Acquire) < self.turn {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "{}: the second process did not {what} in {TURN_LIMIT:?}",
                    L::ID
                );
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{}: the second process exited ({status})", L::ID);
            }
            spins += 1;
            if spins < 1000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// One Criterion sample: both processes do `iters` lock + increment + unlock at once.
    fn turn(&mut self, iters: u64) -> Duration {
        let before = self.region.u64_at(COUNTER).load(Ordering::Relaxed);
        self.turn += 1;
        self.watchdog.turn(true);
        self.region.u64_at(ITERS).store(iters, Ordering::Relaxed);
        self.region.u64_at(GO).store(self.turn, Ordering::Release);
        self.wait_for(ACK, "take the turn");
        let start = Instant::now();
        self.region
            .u64_at(START)
            .store(self.turn, Ordering::Release);
        for _ in 0..iters {
            black_box(&self.lock).with(|| self.region.bump());
        }
        self.wait_for(DONE, "finish the turn");
        let elapsed = start.elapsed();
        self.watchdog.turn(false);
        let after = self.region.u64_at(COUNTER).load(Ordering::Relaxed);
        assert_eq!(after - before, 2 * iters, "{}: the lock let both in", L::ID);
        elapsed
    }
}

impl<L: SharedLock> Drop for TwoProcesses<L> {
    fn drop(&mut self) {
        self.region.quit().store(1, Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Benchmarks an uncontended lock + unlock under `id`: the same loop for all.
fn bench_uncontended<L: Lock>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, lock: &L) {
    group.bench_function(id, |b| b.iter(|| black_box(lock).with(|| ())));
}

/// Benchmarks `L` contended by two processes, as `<ID>_two_processes`.
fn bench_two_processes<L: SharedLock>(group: &mut BenchmarkGroup<'_, WallTime>) {
    let mut procs = TwoProcesses::<L>::start();
    group.bench_function(format!("{}_two_processes", L::ID), |b| {
        b.iter_custom(|iters| procs.turn(iters))
    });
}

fn lock(c: &mut Criterion) {
    let mut group = c.benchmark_group("lock");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    let optex_region = Region::map(&temp_file("optex"), true);
    // SAFETY: a fresh zero-filled page, outliving the lock (dropped at the end of this function,
    // after it).
    let optex = unsafe { SharedOptex::create(optex_region.lock_ptr()) };
    bench_uncontended(&mut group, "optex", &optex);
    bench_uncontended(&mut group, "std_mutex", &std::sync::Mutex::new(()));
    bench_uncontended(
        &mut group,
        "parking_lot_mutex",
        &parking_lot::Mutex::new(()),
    );
    let raw_sync_region = Region::map(&temp_file("raw_sync"), true);
    // SAFETY: as for the optex.
    let raw_sync = unsafe { RawSyncMutex::create(raw_sync_region.lock_ptr()) };
    bench_uncontended(&mut group, "raw_sync_mutex", &raw_sync);

    // A turn spawns nothing, but a sample must be long enough to hide the hand-over.
    group.sample_size(20);
    bench_two_processes::<SharedOptex>(&mut group);
    bench_two_processes::<RawSyncMutex>(&mut group);
    group.finish();

    drop((optex, raw_sync));
    let _ = std::fs::remove_file(temp_file("optex"));
    let _ = std::fs::remove_file(temp_file("raw_sync"));
}

/// A file for a shared region of this process.
fn temp_file(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "prfdata-bench-lock-{what}-{}-single",
        std::process::id()
    ))
}

criterion_group!(benches, lock);

fn main() {
    if let Some(id) = std::env::var_os(CHILD_ENV) {
        let path = PathBuf::from(std::env::var_os(FILE_ENV).expect("FILE_ENV beside CHILD_ENV"));
        match id.to_str() {
            Some(SharedOptex::ID) => child::<SharedOptex>(&path),
            Some(RawSyncMutex::ID) => child::<RawSyncMutex>(&path),
            _ => panic!("unknown lock {id:?}"),
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

//! The optex across real processes.
//!
//! Each test re-executes this test binary as child processes, running only the
//! `child_process_entry` test with [`ROLE_ENV`] naming what the child does. Parent and children
//! share a temporary file mapped `MAP_SHARED` ([`MmapRaw`]); its bytes are only ever reached
//! through raw pointers and atomics, never through `&[u8]`.
//!
//! ```text
//!  offset  size  content
//!  ------  ----  ------------------------------------------------------------------
//!       0    64  the Optex under test
//!      64     8  COUNTER: a plain u64, read and written only under the optex
//!     128     4  READY: children (or child threads) that are set up
//!     132     4  GO: set by the parent to start the children's work
//!     136     4  INSIDE: 1 while some thread is inside the critical section
//!     140     4  VIOLATIONS: times a thread found INSIDE already set
//!     144     4  DIED: acquisitions whose guard said owner_died
//! ```

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use memmap2::MmapRaw;
use prfdata::{Optex, ProcessId};

/// Names the child's role; unset in the parent.
const ROLE_ENV: &str = "PRFDATA_OPTEX_CHILD_ROLE";
/// The shared file's path, for the child.
const FILE_ENV: &str = "PRFDATA_OPTEX_CHILD_FILE";
/// Lock turns per child thread in the `increment` role.
const TURNS_ENV: &str = "PRFDATA_OPTEX_CHILD_TURNS";

const COUNTER: usize = 64;
const READY: usize = 128;
const GO: usize = 132;
const INSIDE: usize = 136;
const VIOLATIONS: usize = 140;
const DIED: usize = 144;
const LEN: usize = 4096;

/// Threads per child in the multi-threaded roles.
const THREADS_PER_CHILD: usize = 2;

/// Bound on any wait for a child to get ready or to finish.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Shared memory

/// A temporary file that is removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new() -> (TempFile, File) {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "prfdata-optex-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(LEN as u64).unwrap();
        (TempFile(path), file)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One process's view of the shared file.
struct Shared {
    map: MmapRaw,
    file: Option<TempFile>,
}

impl Shared {
    /// Creates a zero-filled shared file (the parent's side).
    fn create() -> Shared {
        let (temp, file) = TempFile::new();
        Shared {
            map: MmapRaw::map_raw(&file).unwrap(),
            file: Some(temp),
        }
    }

    /// Maps an existing shared file (a child's side).
    fn open(path: &Path) -> Shared {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let map = MmapRaw::map_raw(&file).unwrap();
        assert!(map.len() >= LEN);
        Shared { map, file: None }
    }

    fn path(&self) -> &Path {
        &self.file.as_ref().expect("parent side").0
    }

    fn optex(&self) -> &Optex {
        // SAFETY:
        // - the mapping is page-aligned (so 64-aligned at offset 0) and LEN >= 64 bytes long,
        //   and lives as long as `self`, which the returned reference borrows;
        // - the file was created zero-filled and its first 64 bytes are only touched through
        //   `Optex`, by this and the other test processes.
        unsafe { Optex::from_ptr(self.map.as_ptr().cast()) }
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        assert!(offset.is_multiple_of(4) && offset + 4 <= LEN);
        // SAFETY: `offset` is 4-aligned and in bounds (checked above) of a live, page-aligned
        // mapping that `self` owns; every process accesses these bytes only atomically.
        unsafe { AtomicU32::from_ptr(self.map.as_mut_ptr().add(offset).cast()) }
    }

    /// The plain counter; to be read and written only under the optex.
    fn counter(&self) -> *mut u64 {
        // SAFETY: COUNTER + 8 <= LEN, inside the mapping; the pointer is 8-aligned because the
        // mapping is page-aligned and COUNTER is a multiple of 8.
        unsafe { self.map.as_mut_ptr().add(COUNTER).cast() }
    }

    fn read_counter(&self) -> u64 {
        // SAFETY: the counter is in bounds and aligned (see `counter`); callers hold the optex
        // or know that no other process runs, so nothing writes it concurrently.
        unsafe { self.counter().read_volatile() }
    }
}

// ---------------------------------------------------------------------------------------------
// Child processes

/// A child process that is killed (and reaped) if the test ends before it does.
struct ChildProc(Option<Child>);

impl ChildProc {
    fn spawn(role: &str, shared: &Shared, env: &[(&str, String)]) -> ChildProc {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "optex::child_process_entry",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env(ROLE_ENV, role)
        .env(FILE_ENV, shared.path())
        .stdout(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        ChildProc(Some(cmd.spawn().unwrap()))
    }

    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    fn signal(&self, signal: i32) {
        // SAFETY: `kill` has no memory-safety preconditions; the pid is our unreaped child, so
        // it cannot have been reused.
        assert_eq!(unsafe { libc::kill(self.pid() as i32, signal) }, 0);
    }

    /// SIGKILL, without reaping: the child stays a zombie until `wait`.
    fn kill(&mut self) {
        self.0.as_mut().unwrap().kill().unwrap();
    }

    /// Waits for the child to exit, at most `timeout` (then kills it and panics).
    fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let child = self.0.as_mut().unwrap();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.0 = None;
                return status;
            }
            if Instant::now() > deadline {
                panic!("child {} did not exit within {timeout:?}", child.id());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits (bounded) until `word` reaches at least `n`.
fn wait_for(word: &AtomicU32, n: u32, what: &str) {
    let deadline = Instant::now() + CHILD_TIMEOUT;
    while word.load(Ordering::Acquire) < n {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The body of every child process; does nothing in a normal test run.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let path = PathBuf::from(std::env::var_os(FILE_ENV).expect("FILE_ENV"));
    let shared = Shared::open(&path);
    match role.as_str() {
        "increment" => {
            let turns: u64 = std::env::var(TURNS_ENV).unwrap().parse().unwrap();
            run_threads(&shared, |shared| {
                for turn in 0..turns {
                    critical_section(shared, || {
                        let c = shared.counter();
                        // SAFETY: in bounds and aligned (see `Shared::counter`), and this thread
                        // holds the optex, which every writer of the counter takes.
                        unsafe {
                            let v = c.read_volatile();
                            if turn % 2048 == 0 {
                                // Now and then give the core away while holding the optex, and
                                // more often hold it for a few microseconds, so that the others
                                // pile up, spin, yield and sleep in the futex.
                                std::thread::yield_now();
                            } else if turn % 64 == 0 {
                                for _ in 0..1000 {
                                    std::hint::spin_loop();
                                }
                            } else {
                                std::hint::spin_loop();
                            }
                            c.write_volatile(v + 1);
                        }
                    });
                }
            });
        }
        "hold_long" => {
            run_threads(&shared, |shared| {
                for _ in 0..4 {
                    critical_section(shared, || std::thread::sleep(Duration::from_millis(60)));
                }
            });
        }
        "hold" => {
            // Lock, say so, and wait to be stopped or killed.
            let guard = shared.optex().lock();
            shared.word(READY).fetch_add(1, Ordering::Release);
            std::thread::sleep(CHILD_TIMEOUT);
            drop(guard);
            std::process::exit(3);
        }
        "hold_and_exit" => {
            std::mem::forget(shared.optex().lock());
            shared.word(READY).fetch_add(1, Ordering::Release);
            std::process::exit(0);
        }
        other => panic!("unknown role {other}"),
    }
}

/// Runs `work` on [`THREADS_PER_CHILD`] threads once the parent sets GO.
fn run_threads(shared: &Shared, work: impl Fn(&Shared) + Sync) {
    std::thread::scope(|s| {
        for _ in 0..THREADS_PER_CHILD {
            s.spawn(|| {
                shared.word(READY).fetch_add(1, Ordering::Release);
                // Spin rather than sleep, so that all threads start together and overlap.
                let deadline = Instant::now() + CHILD_TIMEOUT;
                while shared.word(GO).load(Ordering::Acquire) == 0 {
                    assert!(Instant::now() < deadline, "timed out waiting for GO");
                    std::thread::yield_now();
                }
                work(shared);
            });
        }
    });
}

/// Runs `body` under the optex, recording overlapping critical sections and take-overs.
fn critical_section(shared: &Shared, body: impl FnOnce()) {
    let guard = shared.optex().lock();
    if guard.owner_died() {
        shared.word(DIED).fetch_add(1, Ordering::Relaxed);
    }
    if shared.word(INSIDE).swap(1, Ordering::Relaxed) != 0 {
        shared.word(VIOLATIONS).fetch_add(1, Ordering::Relaxed);
    }
    body();
    shared.word(INSIDE).store(0, Ordering::Relaxed);
    drop(guard);
}

/// Starts `children` children in `role`, lets them work, and waits for them to succeed.
fn run_workers(shared: &Shared, role: &str, children: usize, env: &[(&str, String)]) {
    let mut procs: Vec<_> = (0..children)
        .map(|_| ChildProc::spawn(role, shared, env))
        .collect();
    wait_for(
        shared.word(READY),
        (children * THREADS_PER_CHILD) as u32,
        "children to map the file",
    );
    shared.word(GO).store(1, Ordering::Release);
    let deadline = Instant::now() + CHILD_TIMEOUT;
    for p in &mut procs {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(p.wait(left).success(), "a child failed");
    }
}

/// Locks `optex` in the parent, failing the test instead of hanging if that takes over 5 s.
fn lock_bounded(optex: &Optex) -> prfdata::OptexGuard<'_> {
    optex
        .try_lock_for(Duration::from_secs(5))
        .expect("the optex was not acquired within 5 s")
}

/// Starts a child in the `hold` role and waits until it holds the optex.
fn child_holding(shared: &Shared) -> ChildProc {
    let child = ChildProc::spawn("hold", shared, &[]);
    wait_for(shared.word(READY), 1, "the child to lock");
    assert!(shared.optex().is_locked());
    assert_eq!(shared.optex().owner().map(|o| o.pid), Some(child.pid()));
    child
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn processes_exclude_each_other() {
    const CHILDREN: usize = 4;
    const TURNS: u64 = 100_000;
    let shared = Shared::create();
    let start = Instant::now();
    run_workers(
        &shared,
        "increment",
        CHILDREN,
        &[(TURNS_ENV, TURNS.to_string())],
    );
    eprintln!(
        "{} lock/unlock turns in {:?}",
        CHILDREN as u64 * THREADS_PER_CHILD as u64 * TURNS,
        start.elapsed()
    );
    assert_eq!(shared.word(VIOLATIONS).load(Ordering::Relaxed), 0);
    assert_eq!(
        shared.read_counter(),
        CHILDREN as u64 * THREADS_PER_CHILD as u64 * TURNS,
        "lost updates: the optex let two threads in"
    );
    assert_eq!(shared.word(DIED).load(Ordering::Relaxed), 0);
    assert_eq!(shared.optex().recoveries(), 0);
    assert!(!shared.optex().is_locked());
}

#[test]
fn live_owners_are_never_robbed() {
    // Every hold outlasts CHECK_INTERVAL, so waiters check live owners in other processes
    // many times while ownership moves between processes.
    const CHILDREN: usize = 3;
    let shared = Shared::create();
    run_workers(&shared, "hold_long", CHILDREN, &[]);
    assert_eq!(shared.word(VIOLATIONS).load(Ordering::Relaxed), 0);
    assert_eq!(shared.word(DIED).load(Ordering::Relaxed), 0);
    assert_eq!(shared.optex().recoveries(), 0);
}

#[test]
fn a_waiter_takes_over_from_an_owner_killed_while_holding() {
    let shared = Arc::new(Shared::create());
    let mut child = child_holding(&shared);

    // A thread of ours starts waiting before the owner dies.
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            let guard = shared.optex().lock();
            tx.send((guard.owner_died(), Instant::now())).unwrap();
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(shared.optex().is_locked());

    let killed = Instant::now();
    child.kill(); // not reaped: a zombie until `wait` below
    let (died, acquired) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the waiter never took the optex over");
    let took = acquired.duration_since(killed);
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(died, "the guard must report the dead owner");
    waiter.join().unwrap();
    assert!(!child.wait(CHILD_TIMEOUT).success());
    assert_eq!(shared.optex().recoveries(), 1);
    assert!(!shared.optex().is_locked());
    assert!(
        !lock_bounded(shared.optex()).owner_died(),
        "only the first locker recovers"
    );
}

#[test]
fn a_fresh_locker_takes_over_from_an_owner_killed_while_holding() {
    let shared = Shared::create();
    let mut child = child_holding(&shared);
    child.kill();
    assert!(!child.wait(CHILD_TIMEOUT).success()); // reaped: the pid is gone
    let start = Instant::now();
    let guard = shared
        .optex()
        .try_lock_for(Duration::from_secs(5))
        .expect("no take-over from the dead owner");
    let took = start.elapsed();
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(guard.owner_died());
    assert_eq!(shared.optex().owner(), Some(ProcessId::current()));
}

#[test]
fn an_owner_that_exits_normally_while_holding_is_dead_too() {
    let shared = Shared::create();
    let mut child = ChildProc::spawn("hold_and_exit", &shared, &[]);
    assert!(child.wait(CHILD_TIMEOUT).success());
    assert_eq!(shared.word(READY).load(Ordering::Relaxed), 1);
    assert!(shared.optex().is_locked());
    let start = Instant::now();
    let guard = lock_bounded(shared.optex());
    assert!(guard.owner_died());
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn timed_acquire_gives_up_while_a_stopped_process_holds_the_optex() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    const SLACK: Duration = Duration::from_millis(500);
    let shared = Shared::create();
    let mut child = child_holding(&shared);
    child.signal(libc::SIGSTOP);

    let owner = shared.optex().owner().unwrap();
    assert_eq!(
        Some(owner),
        ProcessId::of(child.pid()),
        "start time published"
    );

    let start = Instant::now();
    assert!(
        shared.optex().try_lock_for(TIMEOUT).is_none(),
        "a stopped owner is alive and must keep the optex"
    );
    let took = start.elapsed();
    assert!(took >= TIMEOUT, "gave up early: {took:?}");
    assert!(took < TIMEOUT + SLACK, "gave up late: {took:?}");
    assert!(shared.optex().try_lock().is_none());
    assert_eq!(shared.optex().recoveries(), 0);

    child.signal(libc::SIGCONT);
    child.kill();
    child.wait(CHILD_TIMEOUT);
    assert!(lock_bounded(shared.optex()).owner_died());
}

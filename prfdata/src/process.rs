//! Process identity that survives pid reuse: a pid plus the process's start time.
//!
//! A pid alone does not name a process for long: once a process exits, the kernel hands its pid
//! to a later process. The [`Optex`](crate::Optex) records the owner of a shared lock as a
//! [`ProcessId`] so that a waiter can tell "the owner is still running" from "the owner died and
//! someone else now has its pid".
//!
//! A pid and a start time name a process only in its own pid namespace (a container's processes
//! have other pids, or none, elsewhere). What the processes of a block need to know about each
//! other across namespaces, whether one is still there, they tell by the locks each holds on the
//! block's file (`crate::block::presence`); [`ProcessId::is_alive`] is for processes of one
//! namespace.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use crate::sys;

/// A process: its pid and the time it started, which together never name two processes.
///
/// `start_time` is the kernel's start time of the process in clock ticks after boot (field 22
/// of `/proc/<pid>/stat` on Linux); it only has to be compared for equality. A start time of 0
/// means "unknown" for [`ProcessId::current`] when `/proc` cannot be read.
///
/// # Examples
///
/// ```
/// use prfdata::process::ProcessId;
///
/// let me = ProcessId::current();
/// assert_eq!(me.pid, std::process::id());
/// assert_eq!(ProcessId::of(me.pid), Some(me));
/// assert!(me.is_alive());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessId {
    /// The process id (`getpid`).
    pub pid: u32,
    /// When the process started, in clock ticks after system boot.
    pub start_time: u64,
}

/// Whether the process a [`ProcessId`] names is still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Liveness {
    /// A process with that pid is running (or stopped) and it started at that start time.
    Alive,
    /// The process has exited: no process has that pid, it is a zombie, or the pid now belongs
    /// to a process that started at another time.
    Dead,
}

/// What the system says about a pid, for callers that must not guess (the optex's owner-death
/// check): unlike [`ProcessId::of`], it tells "gone" from "cannot tell".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// A live (not zombie) process has the pid and started at `start_time`.
    Running { start_time: u64 },
    /// No process has the pid, or only a zombie does.
    Gone,
    /// A process has the pid but its start time could not be read (`/proc` missing, hiding
    /// it, unreadable, or malformed).
    Unknown,
}

/// Asks the system about `pid`.
pub(crate) fn probe(pid: u32) -> Probe {
    match sys::process::stat(pid) {
        Ok(stat) if stat.is_terminated() => Probe::Gone,
        Ok(stat) => Probe::Running {
            start_time: stat.start_time,
        },
        // `/proc` may hide other users' processes (the `hidepid` mount option) or be missing:
        // whatever the reason, ask the kernel whether the pid exists before calling it gone.
        Err(_) if sys::process::pid_exists(pid) => Probe::Unknown,
        Err(_) => Probe::Gone,
    }
}

/// The 32-bit tag of a start time that the optex's state word, the shard owner words and the
/// presence locks of a block ([`crate::layout::presence_offset`]) name a process by, beside its
/// pid: the low 32 bits of the start time, or 1 if those are 0 but the start time is not (0
/// stands for "unknown", as a `start_time` of 0 does).
///
/// Two start times get the same tag only if their low 32 bits are equal (they differ by a
/// multiple of 2^32 clock ticks: 497 days at the usual 100 Hz) or are 0 and 1. The tag is only
/// compared between processes that had the same pid, so a dead process goes unnoticed only if
/// its pid went to a process started that many days apart from it.
#[inline]
pub(crate) fn start_tag(start_time: u64) -> u32 {
    let low = start_time as u32;
    if low == 0 && start_time != 0 {
        1
    } else {
        low
    }
}

/// Cache for [`ProcessId::current`]: 0 until filled, reset to 0 in a forked child.
static CURRENT_PID: AtomicU32 = AtomicU32::new(0);
/// The start time matching [`CURRENT_PID`]; written before it is published.
static CURRENT_START: AtomicU64 = AtomicU64::new(0);

/// Whether the fork handler that empties the cache is registered: it must be before anything
/// is cached, or a child forked in between would inherit its parent's identity.
static FORK_HANDLER: AtomicU8 = AtomicU8::new(UNREGISTERED);
const UNREGISTERED: u8 = 0;
const REGISTERING: u8 = 1;
const REGISTERED: u8 = 2;
/// Registration failed: never cache.
const FAILED: u8 = 3;

/// Runs in the child of every `fork()`: the child has a new pid and start time.
extern "C" fn forget_current_in_child() {
    // Only atomic stores: async-signal-safe, as a fork handler must be.
    CURRENT_PID.store(0, Ordering::Relaxed);
}

impl ProcessId {
    /// The calling process.
    ///
    /// Cached after the first call, so it costs two atomic loads; the cache is emptied in the
    /// child of every `fork()` (by a `pthread_atfork` handler), so a forked child gets its own
    /// identity. (A child made with a raw `clone` system call that skips the fork handlers and
    /// then goes on without `exec` would still see its parent's identity.)
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::process::ProcessId;
    ///
    /// let me = ProcessId::current();
    /// assert_eq!(me.pid, std::process::id());
    /// assert_eq!(me, ProcessId::current());
    /// ```
    #[inline]
    pub fn current() -> ProcessId {
        let pid = CURRENT_PID.load(Ordering::Acquire);
        if pid != 0 {
            return ProcessId {
                pid,
                start_time: CURRENT_START.load(Ordering::Relaxed),
            };
        }
        Self::current_slow()
    }

    #[cold]
    fn current_slow() -> ProcessId {
        let pid = sys::process::current_pid();
        // `/proc` unreadable: 0 stands for "unknown" (see the type's docs).
        let me = ProcessId {
            pid,
            start_time: sys::process::start_time(pid).unwrap_or(0),
        };
        let mut handler = FORK_HANDLER.load(Ordering::Acquire);
        if handler == UNREGISTERED
            && FORK_HANDLER
                .compare_exchange(
                    UNREGISTERED,
                    REGISTERING,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
        {
            handler = if sys::process::on_fork_child(forget_current_in_child) {
                REGISTERED
            } else {
                FAILED
            };
            FORK_HANDLER.store(handler, Ordering::Release);
        }
        if handler == REGISTERED {
            // Concurrent callers store identical values, so the interleaving does not matter.
            CURRENT_START.store(me.start_time, Ordering::Relaxed);
            CURRENT_PID.store(me.pid, Ordering::Release);
        }
        me
    }

    /// The process that has `pid` now, or `None` if there is none, it is a zombie, or its
    /// start time cannot be read.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::process::ProcessId;
    ///
    /// let me = ProcessId::of(std::process::id()).expect("we are running");
    /// assert_eq!(me, ProcessId::current());
    /// assert_eq!(ProcessId::of(0), None);
    /// ```
    pub fn of(pid: u32) -> Option<ProcessId> {
        match probe(pid) {
            Probe::Running { start_time } => Some(ProcessId { pid, start_time }),
            Probe::Gone | Probe::Unknown => None,
        }
    }

    /// Whether this process is still running: `true` if a process that is not a zombie has
    /// `self.pid` and it started at `self.start_time`.
    ///
    /// A stopped (`SIGSTOP`) process is alive. So is one that has called `exec` (same pid and
    /// start time).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::process::ProcessId;
    ///
    /// let mut child = std::process::Command::new("sleep").arg("30").spawn()?;
    /// let id = ProcessId::of(child.id()).expect("just started");
    /// assert!(id.is_alive());
    /// child.kill()?;
    /// child.wait()?;
    /// assert!(!id.is_alive());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_alive(&self) -> bool {
        self.liveness() == Liveness::Alive
    }

    /// [`ProcessId::is_alive`] as a [`Liveness`].
    pub(crate) fn liveness(&self) -> Liveness {
        match probe(self.pid) {
            Probe::Running { start_time } if start_time == self.start_time => Liveness::Alive,
            Probe::Running { .. } | Probe::Gone => Liveness::Dead,
            // The pid exists but we cannot tell whether it was reused: assume not.
            Probe::Unknown => Liveness::Alive,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};
    use std::time::{Duration, Instant};

    #[test]
    fn a_pid_reused_by_a_later_process_is_dead() {
        let reused = ProcessId {
            start_time: ProcessId::current().start_time + 1,
            ..ProcessId::current()
        };
        assert_eq!(reused.liveness(), Liveness::Dead);
        assert!(!reused.is_alive());
    }

    #[test]
    fn this_process_is_alive() {
        assert_eq!(ProcessId::current().liveness(), Liveness::Alive);
        assert!(ProcessId::current().is_alive());
    }

    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep")
    }

    /// Waits (bounded) until `pid` is a zombie or gone.
    fn wait_until_not_running(pid: u32) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while ProcessId::of(pid).is_some() {
            assert!(Instant::now() < deadline, "process {pid} still running");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn current_matches_std_process_id() {
        let me = ProcessId::current();
        assert_eq!(me.pid, std::process::id());
        assert_ne!(me.start_time, 0, "/proc is readable here");
        assert_eq!(ProcessId::current(), me);
    }

    #[test]
    fn of_own_pid_has_our_start_time() {
        let me = ProcessId::of(std::process::id()).unwrap();
        assert_eq!(me, ProcessId::current());
        assert_eq!(me.liveness(), Liveness::Alive);
    }

    #[test]
    fn a_child_that_exited_is_dead() {
        let mut child = sleeper();
        let id = ProcessId::of(child.id()).unwrap();
        assert_eq!(id.liveness(), Liveness::Alive);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(id.liveness(), Liveness::Dead);
        assert_eq!(ProcessId::of(id.pid), None);
    }

    #[test]
    fn a_zombie_is_dead() {
        let mut child = sleeper();
        let id = ProcessId::of(child.id()).unwrap();
        child.kill().unwrap();
        // Not reaped yet: the pid stays taken by a zombie until `wait`.
        wait_until_not_running(id.pid);
        assert!(matches!(
            sys::process::stat(id.pid),
            Ok(s) if s.is_terminated()
        ));
        assert_eq!(id.liveness(), Liveness::Dead);
        assert_eq!(probe(id.pid), Probe::Gone);
        child.wait().unwrap();
    }

    #[test]
    fn a_reused_pid_is_dead() {
        let me = ProcessId::current();
        for start_time in [0, me.start_time.wrapping_sub(1), me.start_time + 1] {
            let impostor = ProcessId { start_time, ..me };
            assert_eq!(impostor.liveness(), Liveness::Dead, "{impostor:?}");
        }
    }

    #[test]
    fn a_pid_no_process_can_have_is_dead() {
        let none = ProcessId {
            pid: (1 << 22) + 1,
            start_time: 1,
        };
        assert_eq!(none.liveness(), Liveness::Dead);
        assert_eq!(ProcessId::of(none.pid), None);
        assert_eq!(probe(0), Probe::Gone);
    }

    #[test]
    fn a_stopped_process_is_alive() {
        let mut child = sleeper();
        let id = ProcessId::of(child.id()).unwrap();
        // SAFETY: `kill` has no memory-safety preconditions; the pid is our unreaped child.
        assert_eq!(unsafe { libc::kill(id.pid as i32, libc::SIGSTOP) }, 0);
        assert_eq!(id.liveness(), Liveness::Alive);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Set in a re-executed test binary to make it play the child.
    const CHILD_ENV: &str = "PRFDATA_PROCESS_TEST_CHILD";

    #[test]
    fn current_in_a_re_executed_child_is_the_child() {
        if std::env::var_os(CHILD_ENV).is_some() {
            let me = ProcessId::current();
            println!("CHILD-ID {} {}", me.pid, me.start_time);
            return;
        }
        let parent = ProcessId::current();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "process::tests::current_in_a_re_executed_child_is_the_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let child_pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("child did not exit in time");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The harness prints the test name on the same line, before our output.
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("CHILD-ID ").map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no CHILD-ID in {stdout:?}"));
        let mut parts = line.split(' ').map(|p| p.parse::<u64>().unwrap());
        let (pid, start_time) = (parts.next().unwrap(), parts.next().unwrap());
        assert_eq!(pid, u64::from(child_pid));
        assert_ne!(pid, u64::from(parent.pid));
        assert!(start_time >= parent.start_time);
    }

    #[test]
    fn current_in_a_forked_child_is_the_child() {
        // Fill the cache (and register the fork handler) before forking.
        let parent = ProcessId::current();
        // SAFETY: the child only runs code that is safe after `fork` in a multi-threaded
        // process with glibc (which makes malloc usable in the child) — reading `/proc`, atomic
        // loads and stores — and leaves with `_exit`, running no destructors or atexit handlers
        // that belong to the parent's threads.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let me = ProcessId::current();
            let ok = me.pid == sys::process::current_pid()
                && me.pid != parent.pid
                && sys::process::start_time(me.pid) == Some(me.start_time)
                && ProcessId::current() == me;
            // SAFETY: `_exit` is async-signal-safe and has no preconditions.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut status = 0;
        loop {
            // SAFETY: `status` is a valid out-pointer; `pid` is our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            assert!(r >= 0, "waitpid failed");
            if r == pid {
                break;
            }
            if Instant::now() > deadline {
                // SAFETY: `pid` is our unreaped child; killing and reaping it has no memory
                // effects on this process.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("forked child did not exit in time");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(libc::WIFEXITED(status), "child status {status:#x}");
        assert_eq!(libc::WEXITSTATUS(status), 0, "child saw the wrong identity");
        assert_eq!(ProcessId::current(), parent);
    }
}

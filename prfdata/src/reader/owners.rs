//! Whether the owners of process-owned instances are alive, as a reader asks it at each read:
//! one `poll` of a process handle per owner, not a `/proc` read per instance.
//!
//! An owner is a [`ProcessId`] (pid and start time) read from a slot, so untrusted: the worst a
//! forged one does is hide an instance or keep a dead one shown, never reach memory. The first
//! time a reader meets an owner it opens a handle on the process that has the pid
//! ([`ProcessHandle`], a pidfd) and only then compares that process's start time with the
//! owner's: a match means the handle names the owner itself, whose exit then shows on the
//! handle, whatever becomes of the pid. A dead owner stays dead (the answer is kept). Without
//! pidfds (old kernels), or past [`MAX_HANDLES`] owners met in the latest two read windows,
//! every read asks `/proc`.
//!
//! Each ask names its read window (the block's sequence value: the owners listed cannot change
//! without it changing). An owner whose instance went (removed, or reclaimed by a writer before
//! any read saw its owner dead) is never asked again, so its handle would be kept for good: when
//! the handles reach [`MAX_HANDLES`], those of owners met in neither the current nor the
//! previous window are closed, at most once per window (at most `MAX_HANDLES` entries looked
//! at, no system call but the closes). The dead owners remembered are bounded by
//! [`MAX_ENTRIES`] the same way: when full, those not met in the latest two windows are
//! forgotten, and all of them if that leaves more than half.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::process::ProcessId;
use crate::sys::process::ProcessHandle;

/// The most dead owners remembered.
const MAX_ENTRIES: usize = 1024;
/// The most process handles (file descriptors) a reader holds: past it, further live owners
/// are asked through `/proc` at each read. A block is untrusted input: it could name every
/// process of its user as owners, and a provider host must not run out of descriptors.
const MAX_HANDLES: usize = 64;

/// The owners a reader has asked about.
#[derive(Debug, Default)]
pub(super) struct OwnerCache {
    inner: Mutex<Inner>,
    /// How many times an owner was asked through `/proc` (tests only).
    #[cfg(test)]
    proc_asks: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Owners running when last asked (at most [`MAX_HANDLES`]); the handle says when one
    /// exits. Each with the window it was last met in.
    alive: HashMap<ProcessId, (ProcessHandle, u64)>,
    /// Owners found dead (at most [`MAX_ENTRIES`]), with the window they were last met in.
    dead: HashMap<ProcessId, u64>,
    /// The window of the latest ask, and the one before it.
    window: u64,
    previous: u64,
    /// The window of the latest sweep of `alive`.
    swept: Option<u64>,
}

impl Inner {
    /// Notes that an ask belongs to `window`.
    fn enter(&mut self, window: u64) {
        if window != self.window {
            self.previous = self.window;
            self.window = window;
        }
    }

    /// Closes the handles of owners met in neither of the latest two windows, once per window.
    fn sweep(&mut self) {
        if self.swept == Some(self.window) {
            return;
        }
        self.swept = Some(self.window);
        let (window, previous) = (self.window, self.previous);
        self.alive
            .retain(|_, (_, met)| *met == window || *met == previous);
    }

    fn remember_dead(&mut self, owner: ProcessId) {
        if self.dead.len() >= MAX_ENTRIES {
            let (window, previous) = (self.window, self.previous);
            self.dead
                .retain(|_, met| *met == window || *met == previous);
            // Many owners listed dead at once (a hostile block): forget them all, so that the
            // next pass over the map comes only after MAX_ENTRIES / 2 more.
            if self.dead.len() > MAX_ENTRIES / 2 {
                self.dead.clear();
            }
        }
        self.dead.insert(owner, self.window);
    }
}

impl OwnerCache {
    /// Whether `owner` is running (a reused pid is another process: dead), asked in read
    /// window `window`.
    pub(super) fn is_alive(&self, owner: ProcessId, window: u64) -> bool {
        // A poisoned lock only means another thread panicked between two map operations: the
        // maps are still a valid cache.
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let inner = &mut *inner;
        inner.enter(window);
        if let Some((handle, met)) = inner.alive.get_mut(&owner) {
            if !handle.exited() {
                *met = window;
                return true;
            }
            inner.alive.remove(&owner);
            inner.remember_dead(owner);
            return false;
        }
        if let Some(met) = inner.dead.get_mut(&owner) {
            *met = window;
            return false;
        }
        let Some(handle) = ProcessHandle::open(owner.pid) else {
            // No process has the pid (dead), or no pidfds here: ask `/proc`, uncached.
            let alive = self.ask_proc(owner);
            if !alive {
                inner.remember_dead(owner);
            }
            return alive;
        };
        // The handle names whoever has the pid now: the owner only if the start times agree.
        if !self.ask_proc(owner) {
            inner.remember_dead(owner);
            return false;
        }
        if inner.alive.len() >= MAX_HANDLES {
            inner.sweep();
        }
        if inner.alive.len() < MAX_HANDLES {
            inner.alive.insert(owner, (handle, window));
        }
        true
    }

    /// Whether `owner` runs, read from `/proc`.
    fn ask_proc(&self, owner: ProcessId) -> bool {
        #[cfg(test)]
        self.proc_asks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        owner.liveness().is_alive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};
    use std::sync::atomic::Ordering::Relaxed;

    /// A running child process, killed and reaped when dropped.
    struct Proc(Child);

    impl Proc {
        fn spawn() -> Proc {
            Proc(
                Command::new("sleep")
                    .arg("60")
                    .spawn()
                    .expect("spawn sleep"),
            )
        }
        fn id(&self) -> ProcessId {
            ProcessId::of(self.0.id()).expect("the child runs")
        }
    }

    impl Drop for Proc {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// One read of a block whose owned instances belong to `owners`: each asked once.
    /// (A read window per read: the sequence value moves with every add and reclamation.)
    fn read(cache: &OwnerCache, owners: &[ProcessId], window: &mut u64) {
        *window += 2;
        for &o in owners {
            assert!(cache.is_alive(o, *window), "{o:?} runs");
        }
    }

    #[test]
    fn owners_whose_instances_went_do_not_use_up_the_handles() {
        let cache = OwnerCache::default();
        let mut window = 0;
        let live: Vec<Proc> = (0..8).map(|_| Proc::spawn()).collect();
        let mut owners: Vec<ProcessId> = live.iter().map(Proc::id).collect();
        // Workers come, are read alive, die, and a writer reclaims their instances before any
        // read sees them dead: no read asks about them again.
        for _ in 0..MAX_HANDLES + 36 {
            let worker = Proc::spawn();
            owners.push(worker.id());
            read(&cache, &owners, &mut window);
            owners.pop();
            drop(worker);
        }
        // A new worker: asked through `/proc` when first met, then through its handle.
        let worker = Proc::spawn();
        owners.push(worker.id());
        read(&cache, &owners, &mut window);
        let asked = cache.proc_asks.load(Relaxed);
        for _ in 0..10 {
            read(&cache, &owners, &mut window);
        }
        assert_eq!(
            cache.proc_asks.load(Relaxed),
            asked,
            "live owners are asked through their handles, whatever died before"
        );
        let inner = cache.inner.lock().unwrap();
        assert!(inner.alive.len() <= MAX_HANDLES && inner.alive.contains_key(&worker.id()));
    }

    #[test]
    fn the_dead_owners_remembered_stay_bounded() {
        let cache = OwnerCache::default();
        let me = ProcessId::current();
        let mut window = 0;
        for k in 1..=3 * MAX_ENTRIES as u64 {
            // Our pid with another start time: a dead owner whose pid was reused.
            let dead = ProcessId {
                start_time: me.start_time + k,
                ..me
            };
            window += 2;
            assert!(!cache.is_alive(dead, window));
            assert!(!cache.is_alive(dead, window), "answered from the cache");
        }
        assert!(cache.inner.lock().unwrap().dead.len() <= MAX_ENTRIES);
        assert!(cache.is_alive(me, window));
    }
}

//! Whether the owners of process-owned instances are alive, as a reader asks it at each read:
//! one `poll` of a process handle per owner, not a `/proc` read per instance.
//!
//! An owner is a [`ProcessId`] (pid and start time) read from a slot, so untrusted: the worst a
//! forged one does is hide an instance or keep a dead one shown, never reach memory. The first
//! time a reader meets an owner it opens a handle on the process that has the pid
//! ([`ProcessHandle`], a pidfd) and only then compares that process's start time with the
//! owner's: a match means the handle names the owner itself, whose exit then shows on the
//! handle, whatever becomes of the pid. A dead owner stays dead (the answer is kept). Without
//! pidfds (old kernels), or past [`MAX_HANDLES`] live owners, every read asks `/proc`. The cache
//! is bounded: past [`MAX_ENTRIES`]
//! the owners not met for [`FORGET_AFTER`] are forgotten, or all if that is not enough.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::process::ProcessId;
use crate::sys::process::ProcessHandle;

/// The most owners remembered.
const MAX_ENTRIES: usize = 1024;
/// The most process handles (file descriptors) a reader holds: past it, further live owners
/// are asked through `/proc` at each read. A block is untrusted input: it could name every
/// process of its user as owners, and a provider host must not run out of descriptors.
const MAX_HANDLES: usize = 64;
/// How long an owner no read has met is kept when the cache is full.
const FORGET_AFTER: Duration = Duration::from_secs(10);

/// The owners a reader has asked about.
#[derive(Debug, Default)]
pub(super) struct OwnerCache {
    seen: Mutex<HashMap<ProcessId, Seen>>,
}

#[derive(Debug)]
enum Seen {
    /// Running when last asked; the handle says when it exits.
    Alive {
        handle: ProcessHandle,
        met: Instant,
    },
    Dead {
        met: Instant,
    },
}

impl OwnerCache {
    /// Whether `owner` is running (a reused pid is another process: dead).
    pub(super) fn is_alive(&self, owner: ProcessId) -> bool {
        let now = Instant::now();
        // A poisoned lock only means another thread panicked between two map operations: the
        // map is still a valid cache.
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = seen.get_mut(&owner) {
            return match entry {
                Seen::Alive { handle, met } if !handle.exited() => {
                    *met = now;
                    true
                }
                _ => {
                    *entry = Seen::Dead { met: now };
                    false
                }
            };
        }
        let Some(handle) = ProcessHandle::open(owner.pid) else {
            // No process has the pid (dead), or no pidfds here: ask `/proc`, uncached.
            let alive = owner.liveness().is_alive();
            if !alive {
                Self::insert(&mut seen, owner, Seen::Dead { met: now }, now);
            }
            return alive;
        };
        // The handle names whoever has the pid now: the owner only if the start times agree.
        if !owner.liveness().is_alive() {
            Self::insert(&mut seen, owner, Seen::Dead { met: now }, now);
            return false;
        }
        let handles = seen
            .values()
            .filter(|e| matches!(e, Seen::Alive { .. }))
            .count();
        if handles < MAX_HANDLES {
            Self::insert(&mut seen, owner, Seen::Alive { handle, met: now }, now);
        }
        true
    }

    fn insert(seen: &mut HashMap<ProcessId, Seen>, owner: ProcessId, entry: Seen, now: Instant) {
        if seen.len() >= MAX_ENTRIES {
            seen.retain(|_, e| {
                let (Seen::Alive { met, .. } | Seen::Dead { met }) = e;
                now.saturating_duration_since(*met) < FORGET_AFTER
            });
            if seen.len() >= MAX_ENTRIES {
                seen.clear();
            }
        }
        seen.insert(owner, entry);
    }
}

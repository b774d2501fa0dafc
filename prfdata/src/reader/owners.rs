//! Whether the owners of process-owned instances are alive, as a reader asks it: once per
//! owner and [`ALIVE_TTL`], not once per instance and read.
//!
//! An owner is a [`ProcessId`] (pid and start time) read from a slot, so untrusted: the worst a
//! forged one does is hide an instance or keep a dead one shown, never reach memory. A dead
//! owner stays dead (its pid and start time never name a running process again), so that answer
//! is kept; a live one is asked again after [`ALIVE_TTL`]. The cache is bounded: past
//! [`MAX_ENTRIES`] it is emptied.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::process::ProcessId;

/// How long a live answer is kept.
pub(super) const ALIVE_TTL: Duration = Duration::from_millis(100);
/// The most owners remembered.
const MAX_ENTRIES: usize = 4096;

/// The owners a reader has asked about.
#[derive(Debug, Default)]
pub(super) struct OwnerCache {
    seen: Mutex<HashMap<ProcessId, Seen>>,
}

#[derive(Clone, Copy, Debug)]
enum Seen {
    Alive(Instant),
    Dead,
}

impl OwnerCache {
    /// Whether `owner` is running (a reused pid is another process: dead).
    pub(super) fn is_alive(&self, owner: ProcessId) -> bool {
        let now = Instant::now();
        // A poisoned lock only means another thread panicked between two map operations: the
        // map is still a valid cache.
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        match seen.get(&owner) {
            Some(Seen::Dead) => return false,
            Some(Seen::Alive(at)) if now.saturating_duration_since(*at) < ALIVE_TTL => return true,
            _ => {}
        }
        let alive = owner.liveness().is_alive();
        if seen.len() >= MAX_ENTRIES {
            seen.clear();
        }
        seen.insert(owner, if alive { Seen::Alive(now) } else { Seen::Dead });
        alive
    }
}

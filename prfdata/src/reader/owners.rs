//! Whether the owners of process-owned instances are alive, as a reader asks it: through the
//! block's presence locks ([`crate::block::presence`]), one `F_OFD_GETLK` per owner, which
//! tells a reused pid from the owner and says the same in every pid namespace (a collector in
//! a container of its own sees none of the app's processes in its `/proc`). Where the kernel
//! would not say, the owner counts as alive: the instance is shown rather than hidden.
//!
//! An owner is a [`ProcessId`] (pid and start time) read from a slot, so untrusted: the worst a
//! forged one does is hide an instance or keep a dead one shown, never reach memory. A dead
//! owner stays dead (the answer is kept: a presence never comes back). An owner found alive is
//! trusted for the reader's liveness interval
//! ([`BlockReader::with_liveness_interval`](super::BlockReader::with_liveness_interval): the
//! provider's 10 ms; zero, the default, asks at every read window).
//!
//! Each ask names its read window (the block's sequence value: the owners listed cannot change
//! without it changing). Both maps are bounded by [`MAX_ENTRIES`]: when one is full, the owners
//! met in neither the current nor the previous window are forgotten, and all of them if that
//! leaves more than half (a hostile block naming thousands of owners).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::block::presence::Probe;
use crate::process::ProcessId;

/// The most owners remembered, dead and alive each.
const MAX_ENTRIES: usize = 1024;

/// The owners a reader has asked about.
#[derive(Debug, Default)]
pub(super) struct OwnerCache {
    inner: Mutex<Inner>,
    /// How many times an owner's presence was asked (tests only).
    #[cfg(test)]
    asks: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Owners found alive: when that was asked, and the window they were last met in.
    alive: HashMap<ProcessId, (Instant, u64)>,
    /// Owners found dead, with the window they were last met in.
    dead: HashMap<ProcessId, u64>,
    /// The window of the latest ask, and the one before it.
    window: u64,
    previous: u64,
}

impl Inner {
    /// Notes that an ask belongs to `window`.
    fn enter(&mut self, window: u64) {
        if window != self.window {
            self.previous = self.window;
            self.window = window;
        }
    }
}

/// Makes room in `map` for one more owner: when it is full, forgets those met in neither of the
/// latest two windows (`met` gives an entry's), and all of them if that leaves more than half.
fn make_room<V>(
    map: &mut HashMap<ProcessId, V>,
    (window, previous): (u64, u64),
    met: fn(&V) -> u64,
) {
    if map.len() < MAX_ENTRIES {
        return;
    }
    map.retain(|_, v| met(v) == window || met(v) == previous);
    if map.len() > MAX_ENTRIES / 2 {
        map.clear();
    }
}

impl OwnerCache {
    /// Whether `owner` is alive (a reused pid is another process: dead), asked in read window
    /// `window` through `probe`; an alive finding younger than `trusted` stands.
    pub(super) fn is_alive(
        &self,
        probe: Probe<'_>,
        owner: ProcessId,
        window: u64,
        trusted: Duration,
    ) -> bool {
        // A poisoned lock only means another thread panicked between two map operations: the
        // maps are still a valid cache.
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let inner = &mut *inner;
        inner.enter(window);
        let windows = (inner.window, inner.previous);
        if let Some(met) = inner.dead.get_mut(&owner) {
            *met = window;
            return false;
        }
        if let Some((asked, met)) = inner.alive.get_mut(&owner) {
            *met = window;
            if asked.elapsed() < trusted {
                return true;
            }
        }
        #[cfg(test)]
        self.asks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if probe.is_alive(owner) {
            if !inner.alive.contains_key(&owner) {
                make_room(&mut inner.alive, windows, |v| v.1);
            }
            inner.alive.insert(owner, (Instant::now(), window));
            true
        } else {
            inner.alive.remove(&owner);
            make_room(&mut inner.dead, windows, |v| *v);
            inner.dead.insert(owner, window);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::presence::Presence;
    use std::sync::atomic::Ordering::Relaxed;

    use crate::sys::range_lock::scratch_file as block;

    #[test]
    fn an_alive_finding_stands_for_the_interval_and_a_dead_one_for_good() {
        let (_dir, file, path) = block();
        let me = ProcessId::current();
        // An owner this process stands in for: a presence under another start time.
        let owner = ProcessId {
            start_time: me.start_time + 5,
            ..me
        };
        let presence = Presence::take(&file, &path, owner).unwrap();
        let cache = OwnerCache::default();
        let probe = Probe(&file);
        let hour = Duration::from_secs(3600);
        assert!(cache.is_alive(probe, owner, 2, hour));
        assert!(cache.is_alive(probe, owner, 4, hour));
        assert_eq!(cache.asks.load(Relaxed), 1, "trusted within the interval");
        drop(presence);
        assert!(cache.is_alive(probe, owner, 6, hour), "still trusted");
        assert!(
            !cache.is_alive(probe, owner, 8, Duration::ZERO),
            "asked: gone"
        );
        assert_eq!(cache.asks.load(Relaxed), 2);
        assert!(!cache.is_alive(probe, owner, 10, hour), "dead for good");
        assert_eq!(cache.asks.load(Relaxed), 2);
    }

    #[test]
    fn the_owners_remembered_stay_bounded() {
        let (_dir, file, _path) = block();
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
            assert!(!cache.is_alive(Probe(&file), dead, window, Duration::ZERO));
            assert!(!cache.is_alive(Probe(&file), dead, window, Duration::ZERO));
        }
        assert!(cache.inner.lock().unwrap().dead.len() <= MAX_ENTRIES);
        assert!(cache.is_alive(Probe(&file), me, window, Duration::ZERO));
    }
}

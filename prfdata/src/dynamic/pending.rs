//! Counters added since the run-time block was last published, and the thread that publishes
//! them within [`PUBLISH_DELAY`].
//!
//! A deferred add (see the parent module's "Adds published in batches") is in the owner's
//! definitions at once, and its value lives here, in a staging word of this process, until the
//! next publication copies it into the new block. Every access to a staging word holds the
//! [`Pending`] lock, which the publication holds too while it copies the words and swaps the
//! new block in: no update is lost to the move.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::State;

/// How long a deferred add waits at most before the publishing thread lays the run-time block
/// out with it: the bound on when collectors and attached processes see it.
pub const PUBLISH_DELAY: Duration = Duration::from_millis(50);

/// A run-time counter's value, wherever it lives now.
pub(super) enum Word<'a> {
    /// A DWORD counter.
    I32(&'a AtomicI32),
    /// A LARGE counter.
    I64(&'a AtomicI64),
}

impl Word<'_> {
    /// The value, sign-extended.
    pub(super) fn load(&self) -> i64 {
        match self {
            Word::I32(a) => i64::from(a.load(Ordering::Relaxed)),
            Word::I64(a) => a.load(Ordering::Relaxed),
        }
    }

    /// Sets the value (truncated to 32 bits for a DWORD).
    pub(super) fn store(&self, value: i64) {
        match self {
            Word::I32(a) => a.store(value as i32, Ordering::Relaxed),
            Word::I64(a) => a.store(value, Ordering::Relaxed),
        }
    }

    /// Adds `delta` (wrapping at the width) and returns the previous value.
    pub(super) fn fetch_add(&self, delta: i64) -> i64 {
        match self {
            Word::I32(a) => i64::from(a.fetch_add(delta as i32, Ordering::Relaxed)),
            Word::I64(a) => a.fetch_add(delta, Ordering::Relaxed),
        }
    }
}

/// The staging word of a counter not published yet.
#[derive(Debug)]
pub(super) enum Staged {
    /// A DWORD counter.
    I32(AtomicI32),
    /// A LARGE counter.
    I64(AtomicI64),
}

impl Staged {
    /// A zero word of `size` bytes (4 or 8).
    pub(super) fn new(size: u32) -> Staged {
        match size {
            4 => Staged::I32(AtomicI32::new(0)),
            _ => Staged::I64(AtomicI64::new(0)),
        }
    }

    /// The word's size in bytes.
    pub(super) fn size(&self) -> u32 {
        match self {
            Staged::I32(_) => 4,
            Staged::I64(_) => 8,
        }
    }

    pub(super) fn word(&self) -> Word<'_> {
        match self {
            Staged::I32(a) => Word::I32(a),
            Staged::I64(a) => Word::I64(a),
        }
    }
}

/// The counters added since the last publication.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// Their values, by symbolic offset.
    pub(super) words: foldhash::HashMap<u32, Staged>,
    /// When the oldest of them was added (`None`: nothing to publish).
    pub(super) since: Option<Instant>,
    /// Set when the owner goes: the publishing thread ends.
    stop: bool,
}

impl Pending {
    /// Whether the owner is going (no add is deferred any more).
    pub(super) fn stopping(&self) -> bool {
        self.stop
    }

    /// Forgets every staged word: the publication that copied them swapped its block in.
    pub(super) fn published(&mut self) {
        self.words.clear();
        self.since = None;
    }
}

/// The pending counters, their lock's condition variable and the publishing thread.
#[derive(Debug, Default)]
pub(super) struct Staging {
    pub(super) pending: Mutex<Pending>,
    wake: Condvar,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Staging {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the publishing thread for the words just staged (`first`: none were before),
    /// started (on the state of `owner`) if it is not running.
    pub(super) fn schedule(&self, owner: &Arc<State>, first: bool) {
        if first {
            self.wake.notify_all();
        }
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if thread.is_some() {
            return;
        }
        let owner = Arc::downgrade(owner);
        let spawned = std::thread::Builder::new()
            .name("prfdata-runtime-publish".into())
            .spawn(move || run(&owner));
        match spawned {
            Ok(handle) => *thread = Some(handle),
            Err(e) => log::warn!("cannot start the run-time publishing thread: {e}"),
        }
    }

    /// Ends the publishing thread (the owner goes: what is still staged is not published).
    pub(super) fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

/// The publishing thread: publishes what is staged [`PUBLISH_DELAY`] after the oldest staged
/// add, until told to stop. It keeps only a weak reference between publications.
fn run(owner: &Weak<State>) {
    loop {
        let Some(state) = owner.upgrade() else {
            return;
        };
        let due = {
            let staging = &state.staging;
            let mut pending = staging.lock();
            loop {
                if pending.stop {
                    return;
                }
                match pending.since {
                    None => {
                        pending = staging
                            .wake
                            .wait(pending)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    Some(since) => break since + PUBLISH_DELAY,
                }
            }
        };
        let now = Instant::now();
        if now < due {
            let staging = &state.staging;
            let pending = staging.lock();
            if !pending.stop {
                let _ = staging.wake.wait_timeout(pending, due - now);
            }
            continue;
        }
        if let Err(e) = state.publish() {
            log::warn!("run-time counters not published (retried in {PUBLISH_DELAY:?}): {e}");
            if let Some(since) = state.staging.lock().since.as_mut() {
                *since = Instant::now();
            }
        }
    }
}

//! Watch notifications: who watches which objects and counters of an app (the Windows 95 stat
//! servers' `PMSG_START_STAT` / `PMSG_STOP_STAT`, reference-counted).
//!
//! The Windows 95 stat-server interface: "Stats that are expensive to maintain should only be kept
//! while someone is watching them. [...] The server should keep a counter of the number of
//! PMSG_START_STAT's it receives for a particular counter, decrement it for each PMSG_STOP_STAT and
//! stop keeping track of the stat when the counter reaches zero." prfdata keeps that count for the
//! app.
//!
//! # The lease table
//!
//! Beside each block, `<shm_dir>/<App>.watch` (created 0600 by the app at activate, removed
//! with the block) holds [`WatchTable::SLOTS`] lease slots that collectors write and the app reads, so a
//! consumer never needs write access to the counter block itself:
//!
//! ```text
//! header (64 bytes)   magic "PRFW" | version | generation (futex word) | slots | slot size
//! slot i (128 bytes)  holder pid | - | holder start time | expiry (perf_counter ticks)
//!                     | - | watched name offsets: 512 bits (bit k = name offset 2k)
//! ```
//!
//! A collector claims a free slot (compare-and-swap of the pid word), writes its identity
//! ([`ProcessId`](crate::ProcessId)), what it watches (a [`WatchSet`]: the objects' and
//! counters' name offsets, as the map and the registry number them) and an expiry, then bumps
//! the generation and wakes the futex. It renews the expiry while it shows the counters
//! ([`Lease::RENEW_INTERVAL`], lease time [`Lease::TTL`]); a lease lapses when its holder is dead (pid
//! and start time) or its expiry passed. A *detached* lease (the PerfStats `StartStat` view)
//! has no holder process and lives only by its expiry.
//!
//! The app's side ([`Watching`]: [`is_watched`](Watching::is_watched),
//! [`on_change`](Watching::on_change), [`events`](Watching::events)) starts a background waiter on first
//! use: it sleeps on the generation word (woken by collectors; its only timeout is the next
//! expiry, so it never polls), recounts the leases and publishes one count per stat, which
//! `is_watched` loads. Everything in the file is untrusted: any same-user process may scribble
//! on it; the app validates what it reads (unknown offsets, a dead or absent holder, an expiry
//! in the past or more than [`Lease::MAX_TTL`] ahead are ignored) and never fails because of it.
//!
//! The collector's side is [`WatchTable`] and [`Lease`].

mod handle;
mod lease;
mod table;
pub(crate) mod waiter;

use std::time::Duration;

pub use handle::Watching;
pub use lease::{Lease, WatchTable};

/// Lease slots in an app's watch table ([`WatchTable::SLOTS`]).
pub(crate) const SLOTS: usize = 64;
/// A lease's life without renewal ([`Lease::TTL`]).
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(5);
/// How often a collector renews ([`Lease::RENEW_INTERVAL`]).
pub(crate) const RENEW_INTERVAL: Duration = Duration::from_secs(1);
/// The longest lease time ([`Lease::MAX_TTL`]).
pub(crate) const MAX_LEASE_TTL: Duration = Duration::from_secs(600);

/// Bits of a [`WatchSet`]: name offsets 0, 2, ..., `2 * (WATCH_BITS - 1)`.
pub(crate) const WATCH_BITS: usize = 512;
pub(crate) const WATCH_WORDS: usize = WATCH_BITS / 64;

/// The objects and counters a lease watches, by name offset (their index in the app's name range:
/// the title index minus the app's `First Counter`, as `prfdata_map!` numbers them with
/// `OBJ = 0`, `CTR = 2`). Offsets from 0 to 1022 can be watched.
///
/// # Examples
///
/// ```
/// use prfdata::watch::WatchSet;
///
/// let mut set = WatchSet::new();
/// assert!(set.insert(0) && set.insert(2));
/// assert!(!set.insert(4096), "beyond the table");
/// assert!(set.contains(2) && !set.contains(4));
/// assert_eq!(set.offsets().collect::<Vec<_>>(), [0, 2]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WatchSet {
    words: [u64; WATCH_WORDS],
}

impl WatchSet {
    /// An empty set.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(prfdata::watch::WatchSet::new().is_empty());
    /// ```
    pub const fn new() -> Self {
        WatchSet {
            words: [0; WATCH_WORDS],
        }
    }

    /// Adds the object or counter at name offset `offset`; `false` (and nothing added) if the
    /// offset is odd (a help offset) or beyond what the table can hold.
    pub fn insert(&mut self, offset: u32) -> bool {
        match bit(offset) {
            Some(k) => {
                self.words[k / 64] |= 1 << (k % 64);
                true
            }
            None => false,
        }
    }

    /// Whether name offset `offset` is in the set.
    pub fn contains(&self, offset: u32) -> bool {
        bit(offset).is_some_and(|k| self.words[k / 64] & (1 << (k % 64)) != 0)
    }

    /// Whether nothing is in the set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The name offsets in the set, ascending.
    pub fn offsets(&self) -> impl Iterator<Item = u32> + '_ {
        (0..WATCH_BITS)
            .filter(|&k| self.words[k / 64] & (1 << (k % 64)) != 0)
            .map(|k| (k * 2) as u32)
    }

    pub(crate) fn words(&self) -> &[u64; WATCH_WORDS] {
        &self.words
    }

    pub(crate) fn from_words(words: [u64; WATCH_WORDS]) -> Self {
        WatchSet { words }
    }
}

/// The bit of name offset `offset`, if it has one.
pub(crate) fn bit(offset: u32) -> Option<usize> {
    let offset = offset as usize;
    (offset.is_multiple_of(2) && offset / 2 < WATCH_BITS).then_some(offset / 2)
}

/// A stat of the app's map started or stopped being watched: what
/// [`Watching::on_change`] callbacks and
/// [`Watching::events`] receive. `Start` comes when the first
/// collector starts watching (the count goes from 0 to 1), `Stop` when the last one stops or its
/// lease lapses: prfdata keeps the Windows 95 stat servers' count of `PMSG_START_STAT`s for the
/// app.
///
/// `object` is the object's position in the map; `counter` the counter's position among its
/// object's counters, or `None` for the object itself.
///
/// # Examples
///
/// ```
/// use prfdata::watch::WatchEvent;
///
/// let e = WatchEvent::Start { object: 0, counter: Some(1) };
/// assert!(e.is_start());
/// assert_eq!(e.stat(), (0, Some(1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WatchEvent {
    /// Someone started watching (the Windows 95 stat servers' `PMSG_START_STAT`).
    Start {
        /// The object's position in the map.
        object: usize,
        /// The counter's position in the object, or `None` for the object.
        counter: Option<usize>,
    },
    /// Nobody watches any more (`PMSG_STOP_STAT` of the last watcher).
    Stop {
        /// The object's position in the map.
        object: usize,
        /// The counter's position in the object, or `None` for the object.
        counter: Option<usize>,
    },
}

impl WatchEvent {
    /// `true` for [`WatchEvent::Start`].
    pub fn is_start(&self) -> bool {
        matches!(self, WatchEvent::Start { .. })
    }

    /// The stat: (object, counter).
    pub fn stat(&self) -> (usize, Option<usize>) {
        match *self {
            WatchEvent::Start { object, counter } | WatchEvent::Stop { object, counter } => {
                (object, counter)
            }
        }
    }

    /// Whether the event is about counter `ctr`.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "WatchEventDoc", object O = 0 { name: "O",
    ///   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    ///   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// let e = prfdata::watch::WatchEvent::Stop { object: 0, counter: Some(0) };
    /// assert!(e.is_for(m::C));
    /// ```
    pub fn is_for<T, O>(&self, ctr: crate::map::CtrId<T, O>) -> bool
    where
        T: crate::counter_type::CounterType,
        O: crate::map::Object,
    {
        self.stat() == (O::INDEX, Some(ctr.index()))
    }
}

/// What can go wrong with a watch table, on the collector's side.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let err = prfdata::watch::WatchTable::open_in(dir.path(), "NoSuchApp").unwrap_err();
/// assert!(matches!(err, prfdata::watch::WatchError::NotActive { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// The app is not running (no watch table), or it is an older app without one.
    #[error("no watch table at {path}: the app is not running, or it does not take watch leases")]
    NotActive {
        /// The table's path.
        path: std::path::PathBuf,
    },
    /// Something other than an app's watch table is at the path (not a regular file of ours,
    /// mode 0600, of the table's size and header).
    #[error("{path} is not a watch table ({reason}); remove it and restart the app")]
    NotATable {
        /// The path.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Every lease slot is taken by a live lease.
    #[error(
        "the watch table {path} is full ({SLOTS} leases held); stop another collector watching \
         the app, or wait for a lapsed lease to be reclaimed"
    )]
    Full {
        /// The table's path.
        path: std::path::PathBuf,
    },
    /// The table could not be opened, mapped or read.
    #[error("cannot use the watch table {path}: {source}")]
    Io {
        /// The table's path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

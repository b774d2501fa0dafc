//! The collector's side: [`WatchTable`] (an app's lease table, opened with the untrusted-file
//! rules) and [`Lease`] (one slot held by this process, renewed while it shows the counters).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::table::{expiry_after, now, path_in, Table, DETACHED_PID};
use super::{WatchError, WatchSet, SLOTS};
use crate::process::ProcessId;
use crate::sys::shm;

/// An app's watch table, opened by a collector to take leases on what it shows.
///
/// # Examples
///
/// ```
/// use prfdata::watch::{Lease, WatchSet, WatchTable};
/// prfdata::prfdata_map! { pub mod m { app: "WatchTableDoc", object O = 0 { name: "O",
///   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
///   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
/// let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// assert!(!prf.watch().is_watched(m::C));
///
/// // A collector (here the same process) watches counter C (name offset 2).
/// let table = WatchTable::open_in(dir.path(), "WatchTableDoc")?;
/// let mut set = WatchSet::new();
/// set.insert(2);
/// let lease = table.lease(&set, Lease::TTL)?;
/// assert_eq!(table.watchers(2), 1);
/// # let t0 = std::time::Instant::now();
/// # while !prf.watch().is_watched(m::C) && t0.elapsed().as_secs() < 10 { std::thread::sleep(std::time::Duration::from_millis(5)); }
/// assert!(prf.watch().is_watched(m::C));
/// drop(lease);
/// assert_eq!(table.watchers(2), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct WatchTable {
    inner: Arc<Opened>,
}

#[derive(Debug)]
struct Opened {
    table: Table,
    path: PathBuf,
    identity: (u64, u64),
}

impl WatchTable {
    /// Lease slots in an app's watch table: how many collectors (and detached PerfStats watches)
    /// can watch one app at once. A full table refuses a new lease ([`WatchError::Full`]).
    pub const SLOTS: usize = SLOTS;

    /// Opens the watch table of `app` in [`shm_dir`](crate::shm_dir).
    ///
    /// # Errors
    ///
    /// As [`WatchTable::open_in`]; [`WatchError::Io`] if the folder cannot be used.
    pub fn open(app: &str) -> Result<Self, WatchError> {
        let dir = crate::shm_dir().map_err(|e| WatchError::Io {
            path: PathBuf::from(app),
            source: std::io::Error::other(e.to_string()),
        })?;
        Self::open_in(&dir, app)
    }

    /// Opens `<dir>/<app>.watch`.
    ///
    /// # Errors
    ///
    /// [`WatchError::NotActive`] if there is none (the app is not running); [`WatchError::NotATable`]
    /// if the name is not a valid app name or what is there is not a table of ours;
    /// [`WatchError::Io`] for other failures.
    pub fn open_in(dir: &Path, app: &str) -> Result<Self, WatchError> {
        let path = path_in(dir, app);
        if let Err(e) = prfdata_untrusted::check_name(prfdata_untrusted::NameKind::App, app) {
            return Err(WatchError::NotATable {
                path,
                reason: e.to_string(),
            });
        }
        let (table, id) = Table::open(&path)?;
        Ok(WatchTable {
            inner: Arc::new(Opened {
                table,
                path,
                identity: (id.dev, id.ino),
            }),
        })
    }

    /// The table's path.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # prfdata::prfdata_map! { pub mod m { app: "WatchPathDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let prf = m::PrfData::activate_in(dir.path())?;
    /// let table = prfdata::watch::WatchTable::open_in(dir.path(), "WatchPathDoc")?;
    /// assert_eq!(table.path(), dir.path().join("WatchPathDoc.watch"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Whether the file at [`WatchTable::path`] is still the one this handle mapped: `false`
    /// once the app exited or restarted (then open the table again).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # prfdata::prfdata_map! { pub mod m { app: "WatchCurrentDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let table = prfdata::watch::WatchTable::open_in(dir.path(), "WatchCurrentDoc")?;
    /// assert!(table.is_current());
    /// drop(prf);
    /// assert!(!table.is_current());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_current(&self) -> bool {
        matches!(shm::path_identity(&self.inner.path), Ok(Some(id)) if id == self.inner.identity)
    }

    /// Takes a lease held by this process on `set`, for `ttl` (at most
    /// [`Lease::MAX_TTL`]); renew it with [`Lease::renew`] before it lapses.
    /// Dropping the lease ends it.
    ///
    /// # Errors
    ///
    /// [`WatchError::Full`] if every slot holds a live lease.
    pub fn lease(&self, set: &WatchSet, ttl: Duration) -> Result<Lease, WatchError> {
        let me = ProcessId::current();
        let slot = self.claim(me.pid, me.start_time, set, ttl)?;
        Ok(Lease {
            table: self.clone(),
            slot,
            me,
            set: *set,
        })
    }

    /// Takes a detached lease on `set`: one no process holds, which lives until
    /// [`WatchTable::stop_detached`] ends it or it is not renewed
    /// ([`WatchTable::renew_detached`]) within `ttl`. The PerfStats view's `StartStat` takes
    /// these, since every `reg query` is a process of its own.
    ///
    /// # Errors
    ///
    /// [`WatchError::Full`] if every slot holds a live lease.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::watch::{WatchSet, WatchTable};
    /// # let dir = tempfile::tempdir()?;
    /// # prfdata::prfdata_map! { pub mod m { app: "WatchDetachedDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let prf = m::PrfData::activate_in(dir.path())?;
    /// let table = WatchTable::open_in(dir.path(), "WatchDetachedDoc")?;
    /// let mut set = WatchSet::new();
    /// set.insert(2);
    /// table.start_detached(&set, std::time::Duration::from_secs(30))?;
    /// table.start_detached(&set, std::time::Duration::from_secs(30))?;
    /// assert_eq!(table.watchers(2), 2);
    /// assert_eq!(table.renew_detached(&set, std::time::Duration::from_secs(30)), 2);
    /// assert!(table.stop_detached(&set));
    /// assert_eq!(table.watchers(2), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_detached(&self, set: &WatchSet, ttl: Duration) -> Result<(), WatchError> {
        self.claim(DETACHED_PID, 0, set, ttl).map(|_| ())
    }

    /// Renews every live detached lease on exactly `set` for `ttl`; returns how many.
    pub fn renew_detached(&self, set: &WatchSet, ttl: Duration) -> usize {
        let table = &self.inner.table;
        let _guard = table.guard();
        let now = now();
        let expiry = expiry_after(ttl);
        let mut n = 0;
        for slot in 0..SLOTS {
            let s = table.read(slot);
            if s.pid == DETACHED_PID && s.set == *set && s.expiry > now {
                table.set_expiry(slot, expiry);
                n += 1;
            }
        }
        if n > 0 {
            table.announce();
        }
        n
    }

    /// Ends one live detached lease on exactly `set` (the Windows 95 stat servers' count: one
    /// `StopStat` per `StartStat`); `false` if there was none.
    pub fn stop_detached(&self, set: &WatchSet) -> bool {
        let table = &self.inner.table;
        let _guard = table.guard();
        let now = now();
        for slot in 0..SLOTS {
            let s = table.read(slot);
            if s.pid == DETACHED_PID && s.set == *set && s.expiry > now && table.free(slot, s.pid) {
                table.announce();
                return true;
            }
        }
        false
    }

    /// How many live leases watch name offset `offset` now, as the app counts them (a holder
    /// that is alive, an expiry ahead but not too far).
    pub fn watchers(&self, offset: u32) -> usize {
        let table = &self.inner.table;
        let _guard = table.guard();
        let now = now();
        (0..SLOTS)
            .map(|slot| table.read(slot))
            .filter(|s| live(table, s, now) && s.set.contains(offset))
            .count()
    }

    fn claim(
        &self,
        pid: u32,
        start_time: u64,
        set: &WatchSet,
        ttl: Duration,
    ) -> Result<usize, WatchError> {
        let table = &self.inner.table;
        let _guard = table.guard();
        let now = now();
        // Two passes: free slots first, then lapsed ones (whose holders a reclaim would drop).
        for reclaim in [false, true] {
            for slot in 0..SLOTS {
                let s = table.read(slot);
                let usable = if reclaim {
                    !live(table, &s, now)
                } else {
                    s.pid == 0
                };
                if usable && table.claim(slot, s.pid, pid) {
                    table.fill(slot, start_time, set, expiry_after(ttl));
                    table.announce();
                    return Ok(slot);
                }
            }
        }
        Err(WatchError::Full {
            path: self.inner.path.clone(),
        })
    }
}

/// Whether a slot of `table` holds a live lease: claimed, an expiry ahead of `now` but not more
/// than [`Lease::MAX_TTL`] ahead, and a holder that is alive (its presence
/// lock on the table, from any pid namespace) or none (detached). What the app counts, too.
pub(crate) fn live(table: &Table, s: &super::table::SlotImage, now: u64) -> bool {
    let max_ahead = crate::clock::ticks(super::MAX_LEASE_TTL) as u64;
    if s.pid == 0 || s.expiry <= now || s.expiry - now > max_ahead {
        return false;
    }
    s.pid == DETACHED_PID || table.holder_alive(s.pid, s.start_time)
}

/// A lease held by this process in an app's watch table: the app counts its objects and counters
/// as watched while it lives and is renewed. Dropping it ends the lease (the app is woken).
#[derive(Debug)]
pub struct Lease {
    table: WatchTable,
    slot: usize,
    me: ProcessId,
    set: WatchSet,
}

impl Lease {
    /// How long a lease lives without renewal: a collector that hangs stops counting after
    /// this; one that dies is dropped sooner, at the app's next look (its pid and start time are
    /// checked).
    pub const TTL: Duration = super::LEASE_TTL;
    /// How often a collector renews its leases (a fifth of [`Lease::TTL`], so that four missed
    /// renewals in a row still do not lapse the lease).
    pub const RENEW_INTERVAL: Duration = super::RENEW_INTERVAL;
    /// The longest lease time a collector may ask for; an expiry further ahead than this is
    /// taken for a scribble and ignored by the app. Ten minutes: far more than any sample
    /// interval.
    pub const MAX_TTL: Duration = super::MAX_LEASE_TTL;

    /// Renews the lease for `ttl` and makes it watch `set` (what the collector shows now). A
    /// lease whose slot another collector reclaimed (it lapsed) is taken again.
    ///
    /// # Errors
    ///
    /// [`WatchError::Full`] if the slot was lost and no other is free.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::watch::{Lease, WatchSet, WatchTable};
    /// # let dir = tempfile::tempdir()?;
    /// # prfdata::prfdata_map! { pub mod m { app: "LeaseRenewDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let prf = m::PrfData::activate_in(dir.path())?;
    /// let table = WatchTable::open_in(dir.path(), "LeaseRenewDoc")?;
    /// let mut lease = table.lease(&WatchSet::new(), Lease::TTL)?;
    /// let mut set = WatchSet::new();
    /// set.insert(0);
    /// lease.renew(&set, Lease::TTL)?;
    /// assert_eq!(table.watchers(0), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn renew(&mut self, set: &WatchSet, ttl: Duration) -> Result<(), WatchError> {
        let table = &self.table.inner.table;
        let guard = table.guard();
        let s = table.read(self.slot);
        let changed = s.set != *set;
        if s.pid == self.me.pid && s.start_time == self.me.start_time {
            if changed {
                table.fill(self.slot, self.me.start_time, set, expiry_after(ttl));
                table.announce();
            } else {
                table.set_expiry(self.slot, expiry_after(ttl));
            }
        } else {
            drop(guard);
            self.slot = self
                .table
                .claim(self.me.pid, self.me.start_time, set, ttl)?;
        }
        self.set = *set;
        Ok(())
    }

    /// The table the lease is in.
    pub fn table(&self) -> &WatchTable {
        &self.table
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let table = &self.table.inner.table;
        let _guard = table.guard();
        let s = table.read(self.slot);
        if s.pid == self.me.pid
            && s.start_time == self.me.start_time
            && table.free(self.slot, s.pid)
        {
            table.announce();
        }
    }
}

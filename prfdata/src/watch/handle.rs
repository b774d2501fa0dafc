//! [`Watching`], the handle [`PrfData::watch`] gives: the app's side of the watch table, over
//! the background waiter's counts ([`waiter`](super::waiter)).

use super::WatchEvent;
use crate::counter_type::CounterType;
use crate::map::{CtrId, Object, PerfDataMap};
use crate::PrfData;

/// Who watches the stats of a [`PrfData`] (the Windows 95 stat servers' start and stop
/// counts): made by [`PrfData::watch`].
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! { pub mod m { app: "WatchingDoc", object O = 0 { name: "O",
///   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
///   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// let table = prfdata::watch::WatchTable::open_in(dir.path(), "WatchingDoc")?;
/// let mut set = prfdata::watch::WatchSet::new();
/// set.insert(2); // C's name offset
/// let _lease = table.lease(&set, prfdata::watch::Lease::TTL)?;
/// # let t0 = std::time::Instant::now();
/// # while !prf.watch().is_watched(m::C) && t0.elapsed().as_secs() < 10 {
/// #     std::thread::sleep(std::time::Duration::from_millis(5));
/// # }
/// assert!(prf.watch().is_watched(m::C));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Watching<'a, M: PerfDataMap> {
    pub(crate) prf: &'a PrfData<M>,
}

impl<M: PerfDataMap> Watching<'_, M> {
    /// Whether a collector watches counter `ctr` now (the Windows 95 stat servers' count of
    /// `PMSG_START_STAT`s minus `PMSG_STOP_STAT`s is above zero): one atomic load of a count the
    /// background waiter keeps, cheap on any path. Use it to compute a costly counter only while
    /// someone looks.
    ///
    /// The first call (of this or [`Watching::is_object_watched`], [`Watching::on_change`],
    /// [`Watching::events`]) starts the waiter (see [`watch`](crate::watch)). A counter
    /// without a name offset (a base) or beyond offset 1022 is never watched; so is every
    /// counter when the watch table cannot be used (logged once, at the first call).
    #[inline]
    pub fn is_watched<T, O>(&self, ctr: CtrId<T, O>) -> bool
    where
        T: CounterType,
        O: Object<Map = M>,
    {
        let offset = M::DEF.objects[O::INDEX].counters[ctr.index()].offset;
        self.prf.watch.waiter().is_some_and(|w| w.count(offset) > 0)
    }

    /// Whether a collector watches object `obj` or any of its counters now.
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "IsObjectWatchedDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// assert!(!prf.watch().is_object_watched(m::O));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn is_object_watched<O: Object<Map = M>>(&self, _obj: O) -> bool {
        self.prf
            .watch
            .waiter()
            .is_some_and(|w| w.object_count(O::INDEX) > 0)
    }

    /// Calls `f` on the background waiter thread each time a stat starts or stops being watched
    /// ([`WatchEvent`]: the first watcher came, the last one left or its lease lapsed). It first
    /// gets a `Start` for every stat watched when it is registered. Keep `f` short: it delays
    /// the next events. It lives as long as the [`PrfData`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// # prfdata::prfdata_map! { pub mod m { app: "OnWatchDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// prf.watch().on_change(move |event| {
    ///     if event.is_for(m::C) {
    ///         log.lock().unwrap().push(event.is_start());
    ///     }
    /// });
    /// let table = prfdata::watch::WatchTable::open_in(dir.path(), "OnWatchDoc")?;
    /// let mut set = prfdata::watch::WatchSet::new();
    /// set.insert(2);
    /// drop(table.lease(&set, prfdata::watch::Lease::TTL)?);
    /// # let t0 = std::time::Instant::now();
    /// # while seen.lock().unwrap().len() < 2 && t0.elapsed().as_secs() < 10 { std::thread::sleep(std::time::Duration::from_millis(5)); }
    /// // Usually [true, false]; a waiter slower than the lease sees neither.
    /// assert!(seen.lock().unwrap().len() % 2 == 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_change(&self, f: impl FnMut(WatchEvent) + Send + 'static) {
        if let Some(w) = self.prf.watch.waiter() {
            w.subscribe(Box::new(f));
        }
    }

    /// A channel of [`WatchEvent`]s, as [`Watching::on_change`] delivers them. The sender lives as
    /// long as the `PrfData` (a dropped receiver costs nothing).
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "WatchEventsDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let events = prf.watch().events();
    /// let table = prfdata::watch::WatchTable::open_in(dir.path(), "WatchEventsDoc")?;
    /// let mut set = prfdata::watch::WatchSet::new();
    /// set.insert(2);
    /// let lease = table.lease(&set, prfdata::watch::Lease::TTL)?;
    /// let first = events.recv_timeout(std::time::Duration::from_secs(10))?;
    /// assert!(first.is_start());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> std::sync::mpsc::Receiver<WatchEvent> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.on_change(move |event| {
            let _ = tx.send(event);
        });
        rx
    }
}

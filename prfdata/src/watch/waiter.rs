//! The app's side: the table it creates at activate ([`Host`]), and the background waiter that
//! sleeps on the table's futex word, recounts the leases and tells the app who watches what.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use super::lease::live;
use super::table::{now, path_in, Table};
use super::{bit, WatchEvent, SLOTS, WATCH_BITS};
use crate::block::fault;
use crate::map::MapDef;
use crate::sys::futex;

/// A callback told of [`WatchEvent`]s.
type Subscriber = Box<dyn FnMut(WatchEvent) + Send>;

/// What a [`PrfData`](crate::PrfData) keeps for watching: the waiter, started on first use. The
/// table is the block's companion: the last member of the block removes it
/// (`crate::block::create`).
pub(crate) struct Host {
    def: &'static MapDef,
    dir: PathBuf,
    waiter: OnceLock<Option<Waiter>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("dir", &self.dir).finish()
    }
}

impl Host {
    /// At activate: creates `<dir>/<app>.watch`. A failure is logged, not fatal: the app runs,
    /// and nothing is ever reported watched.
    pub(crate) fn create(def: &'static MapDef, dir: &Path) -> Host {
        if let Err(e) = Table::create(dir, def.app) {
            log::warn!(
                "cannot create the watch table {}: {e}; watch notifications are off",
                path_in(dir, def.app).display()
            );
        }
        Host::attached(def, dir)
    }

    /// At attach: uses the table the activating process created, if any.
    pub(crate) fn attached(def: &'static MapDef, dir: &Path) -> Host {
        Host {
            def,
            dir: dir.to_path_buf(),
            waiter: OnceLock::new(),
        }
    }

    /// The waiter, started now if this is the first use; `None` if the table cannot be used.
    #[inline]
    pub(crate) fn waiter(&self) -> Option<&Waiter> {
        self.waiter.get_or_init(|| self.start()).as_ref()
    }

    #[cold]
    fn start(&self) -> Option<Waiter> {
        let path = path_in(&self.dir, self.def.app);
        let table = match Table::open(&path) {
            Ok((t, _)) => t,
            Err(e) => {
                log::warn!("watch notifications are off: {e}");
                return None;
            }
        };
        if let Err(e) = fault::init() {
            log::warn!("watch notifications are off: cannot install the SIGBUS handler: {e}");
            return None;
        }
        Waiter::start(self.def, table)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(Some(w)) = self.waiter.take() {
            w.stop();
        }
    }
}

/// How long dropping a `PrfData` waits for its waiter thread to stop. It stops at once when
/// woken; only a table truncated by another process (the futex word's page replaced under the
/// sleeping thread, so no wake can reach it) keeps it asleep: then it is left behind, asleep,
/// rather than the drop hanging.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// The background waiter and what it publishes.
pub(crate) struct Waiter {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Told when the thread's loop ends.
    done: Mutex<std::sync::mpsc::Receiver<()>>,
    /// The process that started the thread (a forked child has no such thread).
    pid: u32,
}

struct Shared {
    def: &'static MapDef,
    table: Table,
    stop: AtomicBool,
    /// Live leases per name-offset bit.
    bits: Vec<AtomicU32>,
    /// Live leases that watch each object or any of its counters, by map position.
    objects: Vec<AtomicU32>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Per stat (in [`stats`] order): watched after the last count.
    watched: Vec<bool>,
    subscribers: Vec<Subscriber>,
}

/// Every stat of the map, in map order: each object, then its counters.
fn stats(def: &MapDef) -> impl Iterator<Item = (usize, Option<usize>)> + '_ {
    def.objects.iter().enumerate().flat_map(|(o, obj)| {
        std::iter::once((o, None)).chain((0..obj.counters.len()).map(move |c| (o, Some(c))))
    })
}

impl Waiter {
    fn start(def: &'static MapDef, table: Table) -> Option<Waiter> {
        let shared = Arc::new(Shared {
            def,
            table,
            stop: AtomicBool::new(false),
            bits: (0..WATCH_BITS).map(|_| AtomicU32::new(0)).collect(),
            objects: def.objects.iter().map(|_| AtomicU32::new(0)).collect(),
            state: Mutex::new(State {
                watched: stats(def).map(|_| false).collect(),
                subscribers: Vec::new(),
            }),
        });
        // The first count now, so that `is_watched` is right from its first call.
        let generation = {
            let _guard = shared.table.guard();
            shared.table.generation().load(Ordering::Acquire)
        };
        let mut next = shared.recount();
        let worker = Arc::clone(&shared);
        let (finished, done) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("prfdata-watch-{}", def.app))
            .spawn(move || {
                let mut seen = generation;
                while !worker.stop.load(Ordering::Acquire) {
                    let timeout = next.map(|at| {
                        Duration::from_nanos(at.saturating_sub(now()).saturating_mul(100))
                    });
                    // The kernel reads the word itself: a truncated table is EFAULT, not SIGBUS.
                    futex::wait(worker.table.generation(), seen, timeout);
                    seen = {
                        let _guard = worker.table.guard();
                        worker.table.generation().load(Ordering::Acquire)
                    };
                    next = worker.recount();
                }
                let _ = finished.send(());
            });
        match thread {
            Ok(handle) => Some(Waiter {
                shared,
                thread: Some(handle),
                done: Mutex::new(done),
                pid: std::process::id(),
            }),
            Err(e) => {
                log::warn!("watch notifications are off: cannot start the waiter thread: {e}");
                None
            }
        }
    }

    /// Live leases on name offset `offset` (0 for an offset the table cannot hold).
    #[inline]
    pub(crate) fn count(&self, offset: Option<u32>) -> u32 {
        offset
            .and_then(bit)
            .and_then(|k| self.shared.bits.get(k))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Live leases that watch object `index` or any of its counters.
    #[inline]
    pub(crate) fn object_count(&self, index: usize) -> u32 {
        self.shared
            .objects
            .get(index)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Adds a subscriber; it first gets a `Start` for every stat watched now.
    pub(crate) fn subscribe(&self, mut f: Subscriber) {
        let mut state = self.shared.lock();
        for (watched, (object, counter)) in state.watched.iter().zip(stats(self.shared.def)) {
            if *watched {
                f(WatchEvent::Start { object, counter });
            }
        }
        state.subscribers.push(f);
    }

    fn stop(mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Bumped, not only woken: a waiter between its stop check and its wait sees a new value.
        {
            let _guard = self.shared.table.guard();
            self.shared.table.announce();
        }
        let Some(thread) = self.thread.take() else {
            return;
        };
        if self.pid != std::process::id() {
            return; // a forked child's copy: the thread is the parent's
        }
        let done = self
            .done
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .recv_timeout(STOP_WAIT);
        match done {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => log::warn!(
                "the watch waiter of {} did not stop within {STOP_WAIT:?} (its table was \
                 truncated?): left behind, asleep",
                self.shared.def.app
            ),
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts the live leases, publishes the counts, tells subscribers what started and
    /// stopped; returns the next expiry among the live leases (when to look again).
    fn recount(&self) -> Option<u64> {
        let mut bits = vec![0u32; WATCH_BITS];
        let mut objects = vec![0u32; self.def.objects.len()];
        let mut next: Option<u64> = None;
        {
            // A truncation of the table under the count maps zeros in (no SIGBUS); a count
            // made from zeros is simply "nobody watches".
            let guard = self.table.guard();
            let now = now();
            for slot in 0..SLOTS {
                let s = self.table.read(slot);
                if !live(&self.table, &s, now) {
                    continue;
                }
                next = Some(next.map_or(s.expiry, |n| n.min(s.expiry)));
                for (k, count) in bits.iter_mut().enumerate() {
                    if s.set.contains((k * 2) as u32) {
                        *count += 1;
                    }
                }
                for (o, obj) in self.def.objects.iter().enumerate() {
                    let any = s.set.contains(obj.offset)
                        || obj
                            .counters
                            .iter()
                            .any(|c| c.offset.is_some_and(|off| s.set.contains(off)));
                    if any {
                        objects[o] += 1;
                    }
                }
            }
            if guard.as_ref().is_some_and(fault::Watch::faulted) {
                bits.iter_mut().for_each(|b| *b = 0);
                objects.iter_mut().for_each(|b| *b = 0);
                next = None;
            }
        }
        for (slot, n) in self.bits.iter().zip(&bits) {
            slot.store(*n, Ordering::Relaxed);
        }
        for (slot, n) in self.objects.iter().zip(&objects) {
            slot.store(*n, Ordering::Relaxed);
        }
        let mut state = self.lock();
        let state = &mut *state;
        for (was, (object, counter)) in state.watched.iter_mut().zip(stats(self.def)) {
            let now_watched = match counter {
                None => objects[object] > 0,
                Some(c) => self.def.objects[object].counters[c]
                    .offset
                    .and_then(bit)
                    .is_some_and(|k| bits[k] > 0),
            };
            if now_watched != *was {
                *was = now_watched;
                let event = if now_watched {
                    WatchEvent::Start { object, counter }
                } else {
                    WatchEvent::Stop { object, counter }
                };
                for f in &mut state.subscribers {
                    f(event);
                }
            }
        }
        next
    }
}

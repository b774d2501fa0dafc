//! The open connections and their cap. A new connection is admitted while fewer than the cap
//! are open; at the cap one is closed to make room ([`Conns::admit`]):
//!
//! 1. the oldest *idle* connection (no request in progress, see [`ConnState::is_idle`]);
//! 2. else the connection whose unfinished request head began first (a head that has not
//!    arrived whole, and nothing else in progress on it): a flood of partial heads only ever
//!    pushes out its own oldest, and an honest head, which arrives whole at once, is never the
//!    oldest for long;
//! 3. else, when every connection has a whole request in progress, the new one is closed at
//!    once (the answer deadlines free the others soon).
//!
//! When accept runs out of open files a connection is closed by the same rule
//! ([`Conns::close_one`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use super::guard::ConnState;

/// The default of `--max-connections`: 512, and at most half the open-files limit
/// ([`effective_cap`]), so that the collector (provider hosts, their pipes, the registry) keeps
/// files of its own under the common default limit of 1,024.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The cap in force: `requested` (`--max-connections`) as given, else
/// [`DEFAULT_MAX_CONNECTIONS`] but at most half the open-files limit (`RLIMIT_NOFILE`); and
/// whether a requested cap is above that half (then accept may run out of files, and idle
/// connections are closed to make room).
pub fn effective_cap(requested: Option<usize>) -> (usize, bool) {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let half = (limit / 2).max(1);
    match requested {
        Some(n) => (n.max(1), n > half),
        None => (DEFAULT_MAX_CONNECTIONS.min(half), false),
    }
}

/// Raises the soft open-files limit to the hard one, as servers commonly do at startup; the
/// limit in force after it.
pub fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(cur), Some(max)) = (limit.current, limit.maximum) {
        if cur < max {
            limit.current = Some(max);
            let _ = setrlimit(Resource::Nofile, limit);
        }
    }
    getrlimit(Resource::Nofile).current
}

/// One open connection, as the table sees it.
struct Entry {
    state: Arc<ConnState>,
    close: Arc<Notify>,
}

/// The table of open connections (ids grow with accept time: the map's order is oldest first).
pub struct Conns {
    cap: usize,
    inner: Mutex<(u64, BTreeMap<u64, Entry>)>,
}

/// An admitted connection: its state, the signal that closes it, and its place in the table
/// (given up on drop).
pub struct Admitted {
    /// What the connection is doing.
    pub state: Arc<ConnState>,
    /// Notified when the connection must close (evicted, or the server stops).
    pub close: Arc<Notify>,
    id: u64,
    conns: Arc<Conns>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.conns.lock().1.remove(&self.id);
    }
}

impl Conns {
    /// An empty table for at most `cap` connections.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap: cap.max(1),
            inner: Mutex::new((0, BTreeMap::new())),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, BTreeMap<u64, Entry>)> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a new connection, closing one at the cap (see the [module docs](self)); `None`
    /// when every connection has a whole request in progress.
    pub fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut inner = self.lock();
        if inner.1.len() >= self.cap && !evict_one(&mut inner.1) {
            return None;
        }
        inner.0 += 1;
        let id = inner.0;
        let (state, close) = (Arc::new(ConnState::new()), Arc::new(Notify::new()));
        inner.1.insert(
            id,
            Entry {
                state: Arc::clone(&state),
                close: Arc::clone(&close),
            },
        );
        Some(Admitted {
            state,
            close,
            id,
            conns: Arc::clone(self),
        })
    }

    /// Closes a connection as at the cap (accept ran out of open files); whether there was one
    /// to close.
    pub fn close_one(&self) -> bool {
        evict_one(&mut self.lock().1)
    }

    /// Closes every connection (the server stops).
    pub fn close_all(&self) {
        for (_, e) in std::mem::take(&mut self.lock().1) {
            e.close.notify_one();
        }
    }
}

/// Removes the oldest idle entry, else the one whose unfinished head began first, and tells
/// its task to close; whether there was one.
fn evict_one(map: &mut BTreeMap<u64, Entry>) -> bool {
    let oldest_head = || {
        map.iter()
            .filter_map(|(id, e)| e.state.unfinished_head_since().map(|since| (since, *id)))
            .min()
            .map(|(_, id)| id)
    };
    let idle = map
        .iter()
        .find(|(_, e)| e.state.is_idle())
        .map(|(id, _)| *id);
    let Some(id) = idle.or_else(oldest_head) else {
        return false;
    };
    if let Some(e) = map.remove(&id) {
        e.close.notify_one();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let conns = Conns::new(2);
        let first = conns.admit().unwrap();
        let _second = conns.admit().unwrap();
        let third = conns.admit();
        assert!(third.is_some(), "the first, idle, made room");
        assert_eq!(conns.lock().1.len(), 2);
        assert!(!conns.lock().1.contains_key(&first.id));
        drop(first);
        assert_eq!(conns.lock().1.len(), 2);
        // None idle: the connection whose unfinished head began first makes room.
        let conns = Conns::new(2);
        let older = conns.admit().unwrap();
        let newer = conns.admit().unwrap();
        newer.state.begin_head_at(5);
        older.state.begin_head_at(9);
        assert!(conns.admit().is_some());
        assert!(!conns.lock().1.contains_key(&newer.id));
        assert!(conns.lock().1.contains_key(&older.id));
        let (cap, over) = effective_cap(Some(7));
        assert_eq!((cap, over), (7, false));
        assert!(effective_cap(None).0 <= DEFAULT_MAX_CONNECTIONS);
    }
}

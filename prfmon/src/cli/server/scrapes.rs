//! The scrapes in flight: `/metrics` and `/perfdata` answers, each holding a collection from
//! the moment it is made until its answer is sent whole (or the client is gone). At most
//! [`SCRAPES`] are in flight at once, so that the server's memory is bounded by the size of a
//! collection, not by the number of clients. A request past them waits up to [`QUEUE_WAIT`]
//! for one to end; every [`QUEUE_STEP`] of that wait, the answer whose client has not taken a
//! byte for the longest (at least [`STALLED`]) is cut and its connection closed, to free its
//! place. A request still without a place is answered 503 with `Retry-After` ([`busy`]). So
//! clients that do not read their answers hold places only while nobody else wants them: they
//! stall only themselves, however many they are, while a client that takes its answer as it is
//! written is never cut.
//!
//! What one scrape in flight holds: the collection (`/perfdata`'s size), the index of the
//! `/metrics` families (a few words per series, less than the series' text), and at most
//! [`CHUNKS_AHEAD`](super::body::CHUNKS_AHEAD) chunks of text ahead of the client. So the
//! resident memory stays under `64 MiB + SCRAPES x (the /perfdata size + the /metrics size)`,
//! which the `serve_large` integration test checks with an 11 MB `/metrics`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::guard::{now_ms, ConnState};
use super::routes::{text, with_header, Answer};

/// The most scrapes in flight: twice the most threads that answer ([`super::WORKERS`]), so
/// that collections never wait for a place while a thread is free.
pub const SCRAPES: usize = 2 * super::WORKERS;

/// How long a scrape waits for a place: half of Prometheus' default scrape timeout (10 s).
pub const QUEUE_WAIT: Duration = Duration::from_secs(5);

/// How often a waiting scrape cuts a stalled answer.
pub const QUEUE_STEP: Duration = Duration::from_millis(500);

/// How long an answer's client must have taken nothing (the kernel's send buffer full, of up to
/// 4 MiB) for the answer to be cut when a scrape needs its place: a client that reads, even
/// over a slow link, takes some of it sooner.
pub const STALLED: Duration = Duration::from_secs(3);

/// The `Retry-After` of a 503 (seconds).
const RETRY_AFTER: &str = "1";

/// The connection a request came on: what it is doing, and the signal that closes it.
#[derive(Clone)]
pub struct Client {
    /// What the connection is doing (whether its writes are blocked, since when).
    pub state: Arc<ConnState>,
    /// Notified to close the connection.
    pub close: Arc<Notify>,
}

/// A scrape's place among the [`SCRAPES`] in flight, given back when the last clone is
/// dropped (the answer's body, and the encoder that writes it).
pub type Permit = Arc<Place>;

/// One place taken (see [`Permit`]).
pub struct Place {
    _permit: OwnedSemaphorePermit,
    id: u64,
    inner: Arc<Inner>,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.inner.lock().1.remove(&self.id);
    }
}

/// The places and who holds them.
#[derive(Default)]
struct Inner {
    held: Mutex<(u64, BTreeMap<u64, Client>)>,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, BTreeMap<u64, Client>)> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The places of the scrapes in flight.
pub struct Scrapes {
    places: Arc<Semaphore>,
    inner: Arc<Inner>,
}

impl Default for Scrapes {
    fn default() -> Self {
        Self {
            places: Arc::new(Semaphore::new(SCRAPES)),
            inner: Arc::default(),
        }
    }
}

impl Scrapes {
    /// A place for a scrape of `client` (see the [module docs](self)); `None` if none came
    /// free within [`QUEUE_WAIT`].
    pub async fn enter(&self, client: &Client) -> Option<Permit> {
        let deadline = tokio::time::Instant::now() + QUEUE_WAIT;
        loop {
            let step = (tokio::time::Instant::now() + QUEUE_STEP).min(deadline);
            let place = Arc::clone(&self.places).acquire_owned();
            if let Ok(Ok(permit)) = tokio::time::timeout_at(step, place).await {
                return Some(self.take(permit, client));
            }
            if step >= deadline {
                return None;
            }
            self.cut_stalled();
        }
    }

    fn take(&self, permit: OwnedSemaphorePermit, client: &Client) -> Permit {
        let mut held = self.inner.lock();
        held.0 += 1;
        let id = held.0;
        held.1.insert(id, client.clone());
        Arc::new(Place {
            _permit: permit,
            id,
            inner: Arc::clone(&self.inner),
        })
    }

    /// Closes the connection whose answer has waited longest (at least [`STALLED`]) for its
    /// client to take a byte, if one has.
    fn cut_stalled(&self) {
        let now = now_ms();
        let stalled = STALLED.as_millis() as u64;
        let held = self.inner.lock();
        let oldest = held
            .1
            .values()
            .filter_map(|c| c.state.blocked_since().map(|since| (since, c)))
            .filter(|(since, _)| now.saturating_sub(*since) >= stalled)
            .min_by_key(|(since, _)| *since);
        if let Some((_, client)) = oldest {
            client.close.notify_one();
        }
    }
}

/// 503 with `Retry-After`: [`SCRAPES`] scrapes are in flight.
pub fn busy() -> Answer {
    let r = text(
        503,
        format!("{SCRAPES} scrapes are being answered already: retry in a second\n"),
    );
    with_header(r, hyper::header::RETRY_AFTER, RETRY_AFTER)
}

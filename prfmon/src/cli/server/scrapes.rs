//! The scrapes in flight: `/metrics` and `/perfdata` answers, each holding a collection from
//! the moment it is made until its answer is sent whole (or the client is gone). At most
//! [`SCRAPES`] are in flight at once, so that the server's memory is bounded by the size of a
//! collection, not by the number of clients: a request past them waits [`QUEUE_WAIT`] for
//! one to end, then is answered 503 with `Retry-After` ([`busy`]).
//!
//! What one scrape in flight holds: the collection (`/perfdata`'s size), the index of the
//! `/metrics` families (a few words per series, less than the series' text), and at most
//! [`CHUNKS_AHEAD`](super::body::CHUNKS_AHEAD) chunks of text ahead of the client. So the
//! resident memory stays under `64 MiB + SCRAPES x (the /perfdata size + the /metrics size)`,
//! which the `serve_large` integration test checks with an 11 MB `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::routes::{text, with_header, Answer};

/// The most scrapes in flight: twice the most threads that answer ([`super::WORKERS`]), so
/// that collections never wait for a permit while a thread is free, and a few clients that
/// read slowly do not turn the others away.
pub const SCRAPES: usize = 2 * super::WORKERS;

/// How long a scrape waits for one in flight to end before it is answered 503.
pub const QUEUE_WAIT: Duration = Duration::from_secs(1);

/// The `Retry-After` of a 503 (seconds).
const RETRY_AFTER: &str = "1";

/// A scrape's place among the [`SCRAPES`] in flight, given back when the last clone is
/// dropped (the answer's body, and the encoder that writes it).
pub type Permit = Arc<OwnedSemaphorePermit>;

/// The places of the scrapes in flight.
#[derive(Debug)]
pub struct Scrapes(Arc<Semaphore>);

impl Default for Scrapes {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(SCRAPES)))
    }
}

impl Scrapes {
    /// A place for one more scrape, waiting at most [`QUEUE_WAIT`] for one; `None` if none
    /// came free.
    pub async fn enter(&self) -> Option<Permit> {
        let permit = Arc::clone(&self.0).acquire_owned();
        match tokio::time::timeout(QUEUE_WAIT, permit).await {
            Ok(Ok(permit)) => Some(Arc::new(permit)),
            _ => None,
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

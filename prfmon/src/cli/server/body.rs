//! The body of an answer: whole (every route but `/metrics`), or written as it is made
//! (`/metrics`: the exposition is encoded on a thread of its own in chunks of [`CHUNK`] bytes,
//! at most [`CHUNKS_AHEAD`] ahead of the client), so that a scrape never holds its whole text.
//!
//! ```text
//! encoder thread:   Exposition::encode_to ─▶ Chunks (fmt::Write) ─▶ channel (CHUNKS_AHEAD) ─┐
//! connection task:                        hyper ◀── AnswerBody::poll_frame ◀─────────────────┘
//! ```
//!
//! A client that stops reading stops its encoder at a full channel. The encoder waits there on
//! a thread of its own, never on one that other requests need (the runtime's workers, or the
//! blocking threads collections run on), so a client that does not read, or reads slowly,
//! holds up only its own answer; the encoders are as many as the scrapes in flight at most
//! ([`super::scrapes`]). The connection's timeouts then close it, the body is dropped and the
//! encoder's next send fails, which ends it. A streamed answer (and a whole one that holds a
//! scrape's place, `/perfdata`'s) is answered, for the connection's deadlines, idle and
//! eviction rules, when its body ends ([`AnswerBody::on_end`]), not when its head is sent.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, SizeHint};
use tokio::sync::mpsc;

use super::scrapes::Permit;

/// Bytes of a streamed body sent at once: large enough that a frame's overhead is noise,
/// small next to any collection worth streaming.
pub const CHUNK: usize = 64 * 1024;

/// Chunks an encoder may have made that the client has not taken: 256 KiB in flight per
/// streamed answer at most.
pub const CHUNKS_AHEAD: usize = 4;

/// What to do when a streamed body ends (or is dropped unfinished).
type OnEnd = Box<dyn FnOnce() + Send + Sync>;

/// An answer's body (see the [module docs](self)).
pub struct AnswerBody {
    kind: Kind,
    on_end: Option<OnEnd>,
    /// The scrape's place in flight, given back when the body is dropped.
    permit: Option<Permit>,
}

enum Kind {
    /// All of it; taken by the first frame.
    Whole(Option<Bytes>),
    /// Chunks as the encoder sends them; the end when it is done.
    Streamed(mpsc::Receiver<Bytes>),
}

impl AnswerBody {
    /// A body of these bytes.
    pub fn whole(bytes: Bytes) -> Self {
        AnswerBody {
            kind: Kind::Whole(Some(bytes)),
            on_end: None,
            permit: None,
        }
    }

    /// A body written by `encode` on a thread of its own, chunk by chunk, as the client takes
    /// it; `permit` is held until both the body and the encoder are done. An error if the
    /// thread cannot be started.
    pub fn streamed(
        permit: Permit,
        encode: impl FnOnce(&mut Chunks) -> std::fmt::Result + Send + 'static,
    ) -> std::io::Result<Self> {
        let (sender, receiver) = mpsc::channel(CHUNKS_AHEAD);
        let held = Permit::clone(&permit);
        std::thread::Builder::new()
            .name("prfmon-encode".into())
            .spawn(move || {
                let _held = held;
                let mut chunks = Chunks {
                    sender,
                    buffer: String::with_capacity(CHUNK),
                };
                // An error is the client gone: nothing to tell.
                let _ = encode(&mut chunks).and_then(|()| chunks.send());
            })?;
        Ok(AnswerBody {
            kind: Kind::Streamed(receiver),
            on_end: None,
            permit: Some(permit),
        })
    }

    /// Holds `permit` until the body is dropped.
    pub fn holding(mut self, permit: Permit) -> Self {
        self.permit = Some(permit);
        self
    }

    /// Whether the answer is done only when its body ends, not when its head is sent: a
    /// streamed body, or one that holds a scrape's place (its client must take it whole
    /// within the answer deadline).
    pub fn ends_later(&self) -> bool {
        matches!(self.kind, Kind::Streamed(_)) || self.permit.is_some()
    }

    /// Calls `done` when the body has been sent whole, or is dropped before.
    pub fn on_end(mut self, done: impl FnOnce() + Send + Sync + 'static) -> Self {
        self.on_end = Some(Box::new(done));
        self
    }

    fn end(&mut self) {
        if let Some(done) = self.on_end.take() {
            done();
        }
    }
}

impl Drop for AnswerBody {
    fn drop(&mut self) {
        self.end();
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        let next = match &mut this.kind {
            Kind::Whole(bytes) => bytes.take().filter(|b| !b.is_empty()),
            Kind::Streamed(receiver) => match receiver.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(next) => next,
            },
        };
        if next.is_none() {
            this.end();
        }
        Poll::Ready(next.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.kind, Kind::Whole(b) if b.as_ref().is_none_or(Bytes::is_empty))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Whole(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Streamed(_) => SizeHint::default(),
        }
    }
}

/// What a streamed body's encoder writes to: text, sent in chunks of [`CHUNK`] bytes.
pub struct Chunks {
    sender: mpsc::Sender<Bytes>,
    buffer: String,
}

impl Chunks {
    /// Sends what is buffered; an error if the body was dropped (the client has gone).
    fn send(&mut self) -> std::fmt::Result {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, String::with_capacity(CHUNK));
        self.sender
            .blocking_send(Bytes::from(chunk))
            .map_err(|_| std::fmt::Error)
    }
}

impl std::fmt::Write for Chunks {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.buffer.push_str(text);
        if self.buffer.len() >= CHUNK {
            self.send()?;
        }
        Ok(())
    }
}

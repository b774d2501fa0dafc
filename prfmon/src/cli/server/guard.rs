//! What one connection's bytes tell before hyper parses them: every byte read passes through
//! [`Guarded`], which follows where each request head begins and ends, so that
//!
//! - a request line longer than [`MAX_REQUEST_LINE`] is answered 414 and a head longer than
//!   [`MAX_HEAD`] 431 the moment the limit is crossed (the bytes beyond it are never kept);
//! - the connection's [`ConnState`] says whether a request is in progress (a head begun, a
//!   request parsed and not yet answered, an answer the client does not take) or the
//!   connection is idle, and since when, for the timeouts ([`super::accept`]) and for closing
//!   idle connections at the cap ([`super::conns`]).
//!
//! Request bodies are not parsed (no route reads one): a request that announces a body is
//! answered with `Connection: close` ([`super::routes`]).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest request line (method, target, version): 8 KiB, as nginx's default
/// `large_client_header_buffers` line. Longer is answered 414 URI Too Long.
pub const MAX_REQUEST_LINE: usize = 8 * 1024;

/// The longest request head (request line and header fields): 16 KiB. Longer is answered 431
/// Request Header Fields Too Large.
pub const MAX_HEAD: usize = 16 * 1024;

/// How many bytes after a refused head are read and dropped before the connection closes, so
/// that the client reads the 414 or 431 instead of a reset.
const DRAIN: u64 = 256 * 1024;

/// Milliseconds since the first call in this process: the clock of [`ConnState`].
pub fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// What one connection is doing, shared by its task, its [`Guarded`] stream and the
/// connection table.
#[derive(Debug, Default)]
pub struct ConnState {
    /// A request head has begun and not ended.
    in_head: AtomicBool,
    /// When the current head began (ms, [`now_ms`]).
    head_since: AtomicU64,
    /// Request heads read.
    heads: AtomicU64,
    /// Requests answered by the service.
    answered: AtomicU64,
    /// The last write did not go through (the client does not read).
    write_blocked: AtomicBool,
    /// Since when writes are blocked (ms).
    blocked_since: AtomicU64,
    /// When the oldest request not yet answered began to be served: its head ended, or the
    /// answer before it did (ms).
    request_since: AtomicU64,
    /// The last byte read or written (ms).
    last_activity: AtomicU64,
}

impl ConnState {
    /// A connection accepted now.
    pub fn new() -> Self {
        let s = Self::default();
        s.last_activity.store(now_ms(), Ordering::Relaxed);
        s
    }

    /// No request in progress: no head begun, every request read answered, no answer stuck.
    pub fn is_idle(&self) -> bool {
        !self.in_head.load(Ordering::Relaxed)
            && !self.write_blocked.load(Ordering::Relaxed)
            && self.heads.load(Ordering::Relaxed) <= self.answered.load(Ordering::Relaxed)
    }

    /// The service answered a request (a streamed one: its body ended).
    pub fn answered(&self) {
        let answered = self.answered.fetch_add(1, Ordering::Relaxed) + 1;
        if self.heads.load(Ordering::Relaxed) > answered {
            // A pipelined request is served from now on.
            self.request_since.store(now_ms(), Ordering::Relaxed);
        }
    }

    /// A request head ended.
    fn head_ended(&self) {
        self.in_head.store(false, Ordering::Relaxed);
        let heads = self.heads.fetch_add(1, Ordering::Relaxed);
        if heads <= self.answered.load(Ordering::Relaxed) {
            self.request_since.store(now_ms(), Ordering::Relaxed);
        }
    }

    /// Since when the oldest request read and not answered has been served (queued for its
    /// turn, collected, or its answer written), if one is.
    pub fn request_since(&self) -> Option<u64> {
        (self.heads.load(Ordering::Relaxed) > self.answered.load(Ordering::Relaxed))
            .then(|| self.request_since.load(Ordering::Relaxed))
    }

    /// Since when a head has been arriving, if one is and nothing else is in progress on the
    /// connection (no request read and not answered, no answer stuck).
    pub fn unfinished_head_since(&self) -> Option<u64> {
        self.head_since().filter(|_| self.is_idle_but_for_head())
    }

    /// A head begins at `ms` ([`now_ms`]), as if its first byte had been read then.
    #[cfg(test)]
    pub fn begin_head_at(&self, ms: u64) {
        self.head_since.store(ms, Ordering::Relaxed);
        self.in_head.store(true, Ordering::Relaxed);
    }

    /// Since when a head has been arriving, if one is.
    pub fn head_since(&self) -> Option<u64> {
        self.in_head
            .load(Ordering::Relaxed)
            .then(|| self.head_since.load(Ordering::Relaxed))
    }

    /// Since when the answer has not been taken, if it has not.
    pub fn blocked_since(&self) -> Option<u64> {
        self.write_blocked
            .load(Ordering::Relaxed)
            .then(|| self.blocked_since.load(Ordering::Relaxed))
    }

    /// The last byte read or written (ms).
    pub fn last_activity(&self) -> u64 {
        self.last_activity.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        self.last_activity.store(now_ms(), Ordering::Relaxed);
    }
}

/// Where the scan of the incoming bytes is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before or in a request line.
    Line,
    /// In the header fields; `at_line_start`: the last byte ended a line.
    Fields { at_line_start: bool },
}

/// A refused head: the canned answer and how far it is written, then the drain.
#[derive(Debug)]
struct Refusal {
    answer: &'static [u8],
    written: usize,
    shut: bool,
    drained: u64,
}

/// The canned answers (the connection closes after them).
const URI_TOO_LONG: &[u8] =
    b"HTTP/1.1 414 URI Too Long\r\nContent-Type: text/plain; charset=utf-8\r\n\
Content-Length: 47\r\nConnection: close\r\n\r\nthe request line is longer than 8 KiB: refused\n";
const HEAD_TOO_LARGE: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: \
text/plain; charset=utf-8\r\nContent-Length: 48\r\nConnection: close\r\n\r\nthe request head \
is larger than 16 KiB: refused\n";

/// A connection's stream, scanned on the way in (see the [module docs](self)).
#[derive(Debug)]
pub struct Guarded<S> {
    inner: S,
    state: std::sync::Arc<ConnState>,
    phase: Phase,
    line: usize,
    head: usize,
    refusal: Option<Refusal>,
}

impl<S> Guarded<S> {
    /// Wraps `inner`, reporting into `state`.
    pub fn new(inner: S, state: std::sync::Arc<ConnState>) -> Self {
        Self {
            inner,
            state,
            phase: Phase::Line,
            line: 0,
            head: 0,
            refusal: None,
        }
    }

    /// Follows `bytes` through the heads; the answer to send instead if a limit is crossed.
    fn scan(&mut self, bytes: &[u8]) -> Option<&'static [u8]> {
        for &b in bytes {
            match self.phase {
                // Empty lines before a request line are allowed (RFC 9112 section 2.2).
                Phase::Line if self.line == 0 && (b == b'\r' || b == b'\n') => continue,
                Phase::Line => {
                    if self.line == 0 {
                        self.state.head_since.store(now_ms(), Ordering::Relaxed);
                        self.state.in_head.store(true, Ordering::Relaxed);
                    }
                    self.line += 1;
                    self.head += 1;
                    if b == b'\n' {
                        self.phase = Phase::Fields {
                            at_line_start: true,
                        };
                    } else if self.line > MAX_REQUEST_LINE {
                        return Some(URI_TOO_LONG);
                    }
                }
                Phase::Fields { at_line_start } => {
                    self.head += 1;
                    if b == b'\n' && at_line_start {
                        self.state.head_ended();
                        (self.phase, self.line, self.head) = (Phase::Line, 0, 0);
                        continue;
                    }
                    if self.head > MAX_HEAD {
                        return Some(HEAD_TOO_LARGE);
                    }
                    self.phase = Phase::Fields {
                        at_line_start: b == b'\n' || (at_line_start && b == b'\r'),
                    };
                }
            }
        }
        None
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Guarded<S> {
    /// Writes the refusal, shuts the write side, drains a bounded amount, then reports the end
    /// of the stream to hyper.
    fn poll_refuse(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let Some(r) = self.refusal.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        while r.written < r.answer.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &r.answer[r.written..]))?;
            if n == 0 {
                return Poll::Ready(Ok(()));
            }
            r.written += n;
        }
        if !r.shut {
            ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
            ready!(Pin::new(&mut self.inner).poll_shutdown(cx))?;
            r.shut = true;
        }
        let mut scratch = [0u8; 4096];
        while r.drained < DRAIN {
            let mut buf = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut self.inner).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                break;
            }
            r.drained += buf.filled().len() as u64;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.refusal.is_some() {
            // The end of the stream for hyper, once the refusal is out.
            return this.poll_refuse(cx);
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let filled = buf.filled().len();
        if filled == before {
            return Poll::Ready(Ok(()));
        }
        this.state.touch();
        if let Some(answer) = this.scan(&buf.filled()[before..]) {
            // The refused bytes never reach hyper.
            buf.set_filled(before);
            if !this.state.is_idle_but_for_head() {
                return Poll::Ready(Err(std::io::Error::other("request head over the limit")));
            }
            this.refusal = Some(Refusal {
                answer,
                written: 0,
                shut: false,
                drained: 0,
            });
            return this.poll_refuse(cx);
        }
        Poll::Ready(Ok(()))
    }
}

impl ConnState {
    /// Idle apart from the head now arriving: nothing else is being answered, so a canned
    /// answer can be written without cutting into another.
    fn is_idle_but_for_head(&self) -> bool {
        !self.write_blocked.load(Ordering::Relaxed)
            && self.heads.load(Ordering::Relaxed) <= self.answered.load(Ordering::Relaxed)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.refusal.is_some() {
            // Nothing of hyper's goes out after a refusal.
            return Poll::Ready(Ok(data.len()));
        }
        match Pin::new(&mut this.inner).poll_write(cx, data) {
            Poll::Pending => {
                if !this.state.write_blocked.swap(true, Ordering::Relaxed) {
                    this.state.blocked_since.store(now_ms(), Ordering::Relaxed);
                }
                Poll::Pending
            }
            Poll::Ready(result) => {
                this.state.write_blocked.store(false, Ordering::Relaxed);
                this.state.touch();
                Poll::Ready(result)
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.refusal.is_some() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.refusal.is_some() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(bytes: &[u8]) -> (Option<&'static [u8]>, u64, bool) {
        let state = std::sync::Arc::new(ConnState::new());
        let mut g = Guarded::new((), std::sync::Arc::clone(&state));
        let answer = g.scan(bytes);
        (
            answer,
            state.heads.load(Ordering::Relaxed),
            state.in_head.load(Ordering::Relaxed),
        )
    }

    #[test]
    fn heads_are_counted_and_limits_refused() {
        assert_eq!(scan(b"GET / HTTP/1.1\r\nA: b\r\n\r\n"), (None, 1, false));
        assert_eq!(
            scan(b"\r\nGET / HTTP/1.0\n\nGET /x HTTP/1.0\r\n"),
            (None, 1, true)
        );
        let mut long = b"GET /".to_vec();
        long.resize(MAX_REQUEST_LINE + 10, b'a');
        assert_eq!(scan(&long).0, Some(URI_TOO_LONG));
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.resize(MAX_HEAD + 10, b'a');
        assert_eq!(scan(&big).0, Some(HEAD_TOO_LARGE));
        for canned in [URI_TOO_LONG, HEAD_TOO_LARGE] {
            let text = String::from_utf8_lossy(canned);
            let (head, body) = text.split_once("\r\n\r\n").unwrap_or_default();
            assert!(
                head.contains(&format!("Content-Length: {}", body.len())),
                "{text}"
            );
        }
    }
}

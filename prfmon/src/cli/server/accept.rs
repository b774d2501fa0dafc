//! The accept loop and one task per connection.
//!
//! Accept errors (`EMFILE`, `ENFILE`, `ECONNABORTED`, ...) are never fatal: the first is
//! logged, later ones are counted and summed up at most once a minute, the loop backs off
//! (10 ms doubling to 1 s) and, when the process or the system is out of open files, closes
//! a connection to get one back, as at the cap ([`Conns::close_one`]). Service resumes by
//! itself when files free up.
//!
//! Each connection is served by hyper's HTTP/1 state machine in a task of its own, through
//! [`Guarded`] (head limits, activity); a watchdog closes it when a head takes longer than
//! [`HEADER_TIMEOUT`] (slowloris), an answer is not taken for [`WRITE_TIMEOUT`] (a client that
//! does not read stalls only its own connection), a request is not answered whole within
//! [`ANSWER_TIMEOUT`] of its head (however it waits: its turn, the collector, a client that
//! reads a little now and then), or it is idle for [`IDLE_TIMEOUT`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

use super::conns::{Admitted, Conns};
use super::guard::{now_ms, ConnState, Guarded, MAX_HEAD};
use super::scrapes::Client;
use super::{routes, Shared, StopFlag};

/// How long a request head may take to arrive, from its first byte (and a TLS handshake).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an answer may wait for the client to read it.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request may take from the end of its head to the end of its answer, whatever
/// it waits for: a deadline, where [`WRITE_TIMEOUT`] starts again at each write that goes
/// through. A minute: several times Prometheus' usual scrape timeout of 10 s, and 60 MB of
/// `/metrics` at 1 MB/s.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a keep-alive connection may stay idle between requests (more than Prometheus'
/// usual scrape interval of 15 to 60 s).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How often a connection's watchdog looks.
const WATCHDOG_TICK: Duration = Duration::from_millis(500);

/// hyper's own buffer limit, behind [`MAX_HEAD`] ([`Guarded`] refuses larger heads first).
const HYPER_BUF: usize = 2 * MAX_HEAD;

/// What the loop and the connections share.
pub struct Ctx {
    /// The routes' state.
    pub shared: Arc<Shared>,
    /// The open connections.
    pub conns: Arc<Conns>,
    /// TLS, if served.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// The stop request.
    pub stop: Arc<StopFlag>,
}

/// Accepts connections until the server is stopped, then closes them all.
pub async fn serve(ctx: Arc<Ctx>, listener: TcpListener) {
    let mut errors = AcceptErrors::default();
    while !ctx.stop.is_set() {
        let accepted = tokio::select! {
            _ = ctx.stop.notify.notified() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((tcp, peer)) => {
                errors.backoff = Duration::ZERO;
                match ctx.conns.admit() {
                    Some(admitted) => {
                        tokio::spawn(connection(Arc::clone(&ctx), tcp, peer, admitted));
                    }
                    // Every connection has a request in progress: this one waits its turn.
                    None => drop(tcp),
                }
            }
            Err(e) => {
                let out_of_files = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                if out_of_files {
                    ctx.conns.close_one();
                }
                let pause = errors.record(&e);
                tokio::time::sleep(pause).await;
            }
        }
    }
    ctx.conns.close_all();
}

/// The accept errors seen: logged once, then summed up at most once a minute.
#[derive(Default)]
struct AcceptErrors {
    count: u64,
    last_log: Option<u64>,
    backoff: Duration,
}

impl AcceptErrors {
    /// Records `e`; how long to pause before the next accept.
    fn record(&mut self, e: &std::io::Error) -> Duration {
        self.count += 1;
        let now = now_ms();
        if self
            .last_log
            .is_none_or(|t| now.saturating_sub(t) >= 60_000)
        {
            log::warn!(
                "prfmon serve: cannot accept a connection: {e} ({} accept errors so far); \
                 connections are closed to make room and accept is retried",
                self.count
            );
            self.last_log = Some(now);
        }
        self.backoff = (self.backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
        self.backoff
    }
}

/// One connection: TLS if served, then HTTP/1 until it ends, times out or is closed.
async fn connection(ctx: Arc<Ctx>, tcp: TcpStream, peer: SocketAddr, admitted: Admitted) {
    let _ = tcp.set_nodelay(true);
    match &ctx.tls {
        None => serve_io(&ctx, tcp, peer, &admitted).await,
        Some(tls) => {
            let handshake = tokio::time::timeout(HEADER_TIMEOUT, tls.accept(tcp));
            let stream = tokio::select! {
                _ = admitted.close.notified() => return,
                done = handshake => match done {
                    Ok(Ok(stream)) => stream,
                    _ => return,
                },
            };
            serve_io(&ctx, stream, peer, &admitted).await;
        }
    }
}

async fn serve_io<S>(ctx: &Arc<Ctx>, io: S, peer: SocketAddr, admitted: &Admitted)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let state = Arc::clone(&admitted.state);
    let shared = Arc::clone(&ctx.shared);
    let client = Client {
        state: Arc::clone(&state),
        close: Arc::clone(&admitted.close),
    };
    let ip = peer.ip().to_canonical();
    let service = service_fn(move |request| {
        let (shared, client) = (Arc::clone(&shared), client.clone());
        async move {
            let r = routes::route(shared, ip, &client, request).await;
            let answered = client.state;
            // A streamed answer (or a scrape's) is answered when its body ends.
            let r = if r.body().ends_later() {
                r.map(|body| body.on_end(move || answered.answered()))
            } else {
                answered.answered();
                r
            };
            Ok::<_, std::convert::Infallible>(r)
        }
    });
    let mut builder = http1::Builder::new();
    // The watchdog times heads from their first byte, and idle connections apart.
    builder
        .header_read_timeout(None)
        .max_buf_size(HYPER_BUF)
        .keep_alive(true);
    let conn =
        builder.serve_connection(TokioIo::new(Guarded::new(io, Arc::clone(&state))), service);
    tokio::select! {
        _ = conn => {}
        _ = watchdog(&state) => {}
        _ = admitted.close.notified() => {}
    }
}

/// Returns when the connection has overstayed: a head, an unread answer or a request for too
/// long, or idle for too long.
async fn watchdog(state: &ConnState) {
    let over =
        |since: u64, limit: Duration| now_ms().saturating_sub(since) > limit.as_millis() as u64;
    loop {
        tokio::time::sleep(WATCHDOG_TICK).await;
        let head = state.head_since().is_some_and(|t| over(t, HEADER_TIMEOUT));
        let write = state
            .blocked_since()
            .is_some_and(|t| over(t, WRITE_TIMEOUT));
        let answer = state
            .request_since()
            .is_some_and(|t| over(t, ANSWER_TIMEOUT));
        let idle = state.is_idle() && over(state.last_activity(), IDLE_TIMEOUT);
        if head || write || answer || idle {
            return;
        }
    }
}

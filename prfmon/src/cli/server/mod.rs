//! The HTTP side of `prfmon serve`: hyper's HTTP/1 on a tokio runtime (the stack
//! metrics-exporter-prometheus serves with), one task per connection, TLS through tokio-rustls.
//! `/metrics` collects on each request on a blocking thread, and encodes as the client reads
//! on a thread of its own ([`body`]: the text is never held whole); collections, which must
//! not interleave within one collector, take turns on a mutex there. At most
//! [`SCRAPES`](scrapes::SCRAPES) scrapes are in flight ([`scrapes`]).
//!
//! | request                         | answer                                              |
//! |---------------------------------|-----------------------------------------------------|
//! | `GET /metrics`                  | 200, a `Global` collection                           |
//! | `GET /metrics?query=Costly`     | 200, a `Costly` collection (also `Global`, indexes)  |
//! | `GET /metrics?query=<other>`    | 400                                                  |
//! | a collection that does not decode (a bug) | 500, with the reason                       |
//! | `GET /perfdata?query=Global`    | 200, the raw PERF_DATA_BLOCK ([`prfmon::remote`]'s wire) |
//! | `GET /names?lang=009`           | 200, the names and explain texts as JSON             |
//! | `GET /factors`                  | 200, the scale factors as JSON                       |
//! | `GET /reg?key=KEY&...`          | 200, what `reg query KEY` prints here; 404 if absent |
//! | `POST /reg?key=HKEY_DYN_DATA\PerfStats\StartStat&v=STAT` (or `StopStat`) | 200, a watch started (ended) for the peer; 403 on a read-only server, 429 / 503 past the limits ([`watches`]) |
//! | `GET` of those two              | 405, `Allow: POST`                                   |
//! | `GET /`                         | 200, a line of text that points to `/metrics`        |
//! | any request without the bearer token, when [`ServeOptions::token`] is set | 401, `WWW-Authenticate: Bearer realm="prfmon"` |
//! | other methods on those paths    | 405, with `Allow`                                    |
//! | any other path                  | 404                                                  |
//!
//! `HEAD` is answered like `GET`, without the body. A client whose `Accept` header names
//! `application/openmetrics-text` (Prometheus does) gets OpenMetrics 1.0.0
//! ([`Exposition::encode`](prfmon::openmetrics::exposition::Exposition::encode)); any other
//! gets Prometheus' classic text format 0.0.4, which is what `curl URL | promtool check
//! metrics` reads. Error bodies name apps, services and stats, never a local path; the full
//! reason is logged here.
//!
//! # Limits
//!
//! | what | limit |
//! |---|---|
//! | open connections | `--max-connections`, default [`DEFAULT_MAX_CONNECTIONS`](conns::DEFAULT_MAX_CONNECTIONS) (512) and at most half the open-files limit; at the cap the oldest idle connection is closed to admit a new one, else the oldest unfinished head ([`conns`]) |
//! | request line | [`MAX_REQUEST_LINE`](guard::MAX_REQUEST_LINE) (8 KiB), else 414 |
//! | request head | [`MAX_HEAD`](guard::MAX_HEAD) (16 KiB), else 431 |
//! | a head's arrival, a TLS handshake | [`HEADER_TIMEOUT`](accept::HEADER_TIMEOUT) (10 s), then the connection closes |
//! | an answer the client does not read | [`WRITE_TIMEOUT`](accept::WRITE_TIMEOUT) (10 s), then the connection closes |
//! | a request, from its head's end to its answer's end | [`ANSWER_TIMEOUT`](accept::ANSWER_TIMEOUT) (60 s), then the connection closes |
//! | scrapes in flight (`/metrics`, `/perfdata`) | [`SCRAPES`](scrapes::SCRAPES) (8); past them a request waits [`QUEUE_WAIT`](scrapes::QUEUE_WAIT) (5 s), cutting answers stalled for [`STALLED`](scrapes::STALLED) (3 s), then 503 with `Retry-After` |
//! | `/metrics` text encoded ahead of the client | [`CHUNKS_AHEAD`](body::CHUNKS_AHEAD) chunks of [`CHUNK`](body::CHUNK) bytes (256 KiB) |
//! | an idle keep-alive connection | [`IDLE_TIMEOUT`](accept::IDLE_TIMEOUT) (90 s) |
//! | accept errors (`EMFILE`, ...) | logged once, backed off (10 ms to 1 s), never fatal |
//!
//! The soft open-files limit is raised to the hard one at startup. Each connection is a task of
//! its own, and each `/metrics` encoder a thread of its own: a client that does not read its
//! answers stalls only its connection. Resident memory is bounded by the scrapes in flight:
//! `64 MiB + SCRAPES x (the /perfdata size + the /metrics size)` ([`scrapes`]).
//!
//! # Who may scrape
//!
//! `prfmon serve` listens on loopback unless told otherwise ([`DEFAULT_LISTEN`]). Listening
//! elsewhere without `--token-file` prints a warning on stderr: anyone who can reach the
//! address reads every counter. With `--token-file FILE` every request must carry
//! `Authorization: Bearer <token>` ([`super::token`]), else it gets 401 with
//! `WWW-Authenticate: Bearer`; Prometheus sends it with `authorization: { credentials_file:
//! FILE }` in the scrape job. What is exported, and how it is named and typed:
//! [`prfmon::openmetrics`].
//!
//! # Remote monitoring
//!
//! `/perfdata`, `/names`, `/factors` and `/reg` are what another machine's `prfmon query | list
//! | typeperf | watch --computer HOST:PORT` and `prfmon reg query \\HOST\KEY` read
//! ([`prfmon::remote`]): the collector's bytes as they are, the Perflib names, and any key
//! through the same read path as the local `reg query` ([`prfmon::perfstats::keys::query_text`]).
//! They take the same token. A server without a token is read-only: the PerfStats writes
//! (`StartStat`, `StopStat`) need the token or `--allow-remote-watch` ([`watches`] has the
//! per-peer and per-app bounds). With [`ServeOptions::tls`] (`--tls-cert FILE --tls-key FILE`)
//! every answer goes over TLS.

mod accept;
mod body;
mod conns;
mod guard;
mod reg;
mod routes;
mod scrapes;
mod tls;
pub mod watches;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use prfdata_registry::FileRegistry;
use tokio::sync::Notify;

use super::token::BearerToken;
use prfmon::openmetrics::BucketLimit;
use prfmon::session::Session;

pub use conns::{effective_cap, raise_open_files_limit};

/// Where `prfmon serve` listens unless told otherwise: loopback only, so that counters are
/// not published to the network by accident; `--listen 0.0.0.0:9358` publishes them. The port
/// is in the range Prometheus exporters conventionally use (9100 and up); check it against
/// the other exporters of a machine before relying on it.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9358";

/// The most threads answering requests (the runtime's workers, and as many for the blocking
/// work of collections; `/metrics` encoders have threads of their own, see [`scrapes`]): the
/// machine's cores, at most four. Collections take turns on one mutex, so more would only wait.
pub const WORKERS: usize = 4;

/// [`DEFAULT_LISTEN`] as an address.
const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9358);

/// What went wrong when starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        message: String,
    },
    /// The certificate or key file cannot be read.
    #[error("{}: cannot read it: {source}", path.display())]
    TlsFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate or key file holds no usable PEM block.
    #[error("{}: {reason}", path.display())]
    TlsPem {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The certificate and key do not make a TLS configuration (a key that does not match).
    #[error("TLS: {message}")]
    Tls {
        /// Why, naming both files.
        message: String,
    },
    /// The socket is not an IP socket (never for [`MetricsServer::bind`]).
    #[error("the server is not listening on an IP address")]
    NotIp,
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The address to listen on ([`DEFAULT_LISTEN`]).
    pub listen: SocketAddr,
    /// The `Perflib` language of names and explain texts.
    pub lang: String,
    /// Threads answering requests ([`WORKERS`] at most is useful).
    pub workers: usize,
    /// The token every request must carry (`Authorization: Bearer <token>`); `None` lets
    /// every client in, read-only.
    pub token: Option<BearerToken>,
    /// Serve over TLS with this certificate chain and key (PEM files); `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
    /// `--max-connections`; `None`: [`DEFAULT_MAX_CONNECTIONS`](conns::DEFAULT_MAX_CONNECTIONS), at most half the open-files
    /// limit ([`effective_cap`]).
    pub max_connections: Option<usize>,
    /// `--allow-remote-watch`: peers without a token may start and stop watches.
    pub allow_remote_watch: bool,
    /// `--histogram-bucket-limit`: the most buckets a histogram series shows in `/metrics`.
    pub bucket_limit: BucketLimit,
}

/// The PEM files `--tls-cert` and `--tls-key` name.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, the server's first.
    pub cert: std::path::PathBuf,
    /// The private key (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub key: std::path::PathBuf,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            listen: DEFAULT_ADDR,
            lang: "009".into(),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get().min(WORKERS)),
            token: None,
            tls: None,
            max_connections: None,
            allow_remote_watch: false,
            bucket_limit: BucketLimit::ALL,
        }
    }
}

/// The stop request: a flag, and a wake-up for the accept loop.
#[derive(Debug, Default)]
pub struct StopFlag {
    set: AtomicBool,
    notify: Notify,
}

impl StopFlag {
    fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }
}

/// Stops a running [`MetricsServer`] from another thread (or a signal handler's thread).
#[derive(Debug, Clone)]
pub struct Stopper(Arc<StopFlag>);

impl Stopper {
    /// Asks the server to stop; [`MetricsServer::run`] returns once the requests in progress
    /// are answered.
    pub fn stop(&self) {
        self.0.set.store(true, Ordering::SeqCst);
        self.0.notify.notify_one();
    }
}

impl Shared {
    /// The session, when its turn comes.
    pub(super) fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the requests share.
pub struct Shared {
    /// The machine's one session: collections, and the facts read once per registry change.
    session: Mutex<Session>,
    /// The registry the session reads, for `/names`, `/factors` and `/reg`.
    registry: FileRegistry,
    lang: String,
    token: Option<BearerToken>,
    /// Whether peers may start and stop watches (a token, or `--allow-remote-watch`).
    allow_watch: bool,
    /// The most buckets a histogram series shows in `/metrics`.
    bucket_limit: BucketLimit,
    /// The watches held for peers.
    watches: Mutex<watches::PeerWatches>,
    /// The places of the scrapes in flight.
    scrapes: scrapes::Scrapes,
}

/// A bound `/metrics` server over one session.
pub struct MetricsServer {
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    addr: SocketAddr,
    workers: usize,
    cap: usize,
    stop: Arc<StopFlag>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .field("workers", &self.workers)
            .field("max_connections", &self.cap)
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Opens the listening socket (and reads the TLS files) to serve `session`, the local
    /// machine's over `registry`. Port 0 picks a free port: see
    /// [`local_addr`](Self::local_addr).
    pub fn bind(
        session: Session,
        registry: FileRegistry,
        options: ServeOptions,
    ) -> Result<Self, ServeError> {
        let tls = options.tls.as_ref().map(tls::acceptor).transpose()?;
        let bind_error = |e: std::io::Error| ServeError::Bind {
            addr: options.listen,
            message: e.to_string(),
        };
        let listener = std::net::TcpListener::bind(options.listen).map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        let addr = listener.local_addr().map_err(|_| ServeError::NotIp)?;
        let (cap, over) = effective_cap(options.max_connections);
        if over {
            log::warn!(
                "prfmon serve: --max-connections {cap} is more than half the open-files limit: \
                 accept may run out of files (then connections are closed to make room)"
            );
        }
        let allow_watch = options.token.is_some() || options.allow_remote_watch;
        Ok(Self {
            listener,
            shared: Arc::new(Shared {
                session: Mutex::new(session),
                registry,
                lang: options.lang,
                token: options.token,
                allow_watch,
                bucket_limit: options.bucket_limit,
                watches: Mutex::new(watches::PeerWatches::default()),
                scrapes: scrapes::Scrapes::default(),
            }),
            tls,
            addr,
            workers: options.workers.max(1),
            cap,
            stop: Arc::new(StopFlag::default()),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connection cap in force.
    pub fn max_connections(&self) -> usize {
        self.cap
    }

    /// A handle that stops [`run`](Self::run).
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.stop))
    }

    /// Serves requests until stopped, then closes the session (its providers' Close is
    /// called, as when a monitor closes `HKEY_PERFORMANCE_DATA`).
    pub fn run(self) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.workers)
            .max_blocking_threads(self.workers)
            .thread_name("prfmon-serve")
            .enable_io()
            .enable_time()
            .build();
        match runtime {
            Ok(runtime) => {
                let ctx = Arc::new(accept::Ctx {
                    shared: Arc::clone(&self.shared),
                    conns: conns::Conns::new(self.cap),
                    tls: self.tls,
                    stop: self.stop,
                });
                let listener = self.listener;
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => accept::serve(ctx, listener).await,
                        Err(e) => log::error!("prfmon serve: cannot listen: {e}"),
                    }
                });
                // Waits for the collections in progress on the blocking threads.
                drop(runtime);
            }
            Err(e) => log::error!("prfmon serve: cannot start the runtime: {e}"),
        }
        // The tasks are gone: this is the last reference, and dropping it closes the session.
        if let Ok(shared) = Arc::try_unwrap(self.shared) {
            let session = shared.session.into_inner();
            session.unwrap_or_else(PoisonError::into_inner).close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::routes::collect_query;
    use super::*;

    // What were the doc examples of this module when it was in the library.

    #[test]
    fn example_module() -> Result<(), Box<dyn std::error::Error>> {
        use std::io::{Read, Write};

        let dir = tempfile::tempdir()?;
        let registry = FileRegistry::open(dir.path())?;
        let session = Session::local(registry.clone(), Default::default(), "009")?;
        let options = ServeOptions {
            listen: "127.0.0.1:0".parse()?,
            ..Default::default()
        };
        let server = MetricsServer::bind(session, registry, options)?;
        let addr = server.local_addr();
        let stop = server.stopper();
        let running = std::thread::spawn(move || server.run());

        let mut stream = std::net::TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
        stream.write_all(b"GET /nothing HTTP/1.0\r\n\r\n")?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        assert!(answer.starts_with("HTTP/1.0 404"));

        stop.stop();
        running.join().expect("the server thread");
        Ok(())
    }

    #[test]
    fn example_default_listen() -> Result<(), Box<dyn std::error::Error>> {
        let addr: std::net::SocketAddr = DEFAULT_LISTEN.parse()?;
        assert!(addr.ip().is_loopback());
        Ok(())
    }

    #[test]
    fn example_workers() -> Result<(), Box<dyn std::error::Error>> {
        assert!((1..=WORKERS).contains(&ServeOptions::default().workers));
        Ok(())
    }

    #[test]
    fn example_serve_error() -> Result<(), Box<dyn std::error::Error>> {
        let e = ServeError::Bind {
            addr: "127.0.0.1:1".parse().unwrap(),
            message: "busy".into(),
        };
        assert!(e.to_string().contains("127.0.0.1:1"));
        Ok(())
    }

    #[test]
    fn example_serve_options() -> Result<(), Box<dyn std::error::Error>> {
        let o = ServeOptions::default();
        assert!(o.listen.ip().is_loopback());
        assert_eq!(o.lang, "009");
        Ok(())
    }

    #[test]
    fn example_collect_query() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(collect_query(""), Ok("Global".to_owned()));
        assert_eq!(collect_query("query=costly"), Ok("Costly".to_owned()));
        assert_eq!(collect_query("query=1848+1860"), Ok("1848 1860".to_owned()));
        assert_eq!(
            collect_query("query=1848%201860"),
            Ok("1848 1860".to_owned())
        );
        assert!(collect_query("query=Foreign%20x").is_err());
        Ok(())
    }

    #[test]
    fn the_default_address_is_loopback() {
        let addr: SocketAddr = DEFAULT_LISTEN.parse().unwrap();
        assert!(addr.ip().is_loopback());
        assert_eq!(ServeOptions::default().listen, addr);
    }

    #[test]
    fn queries_are_decoded_and_checked() {
        assert_eq!(collect_query("x=1&query=GLOBAL"), Ok("Global".into()));
        assert_eq!(collect_query("query="), Ok("Global".into()));
        assert_eq!(
            collect_query("query=%2"),
            Err("bad %-escape at byte 0 of the query\n".into())
        );
        assert!(collect_query("query=Jobs").is_err());
        assert!(collect_query("query=%FF").is_err());
    }
}

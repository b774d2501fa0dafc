//! The HTTP side: `/metrics` collects and encodes on each request, with a small pool of
//! worker threads (`tiny_http`) so that scrapes are served concurrently while collections,
//! which must not interleave within one collector, take turns on a mutex.
//!
//! | request                         | answer                                              |
//! |---------------------------------|-----------------------------------------------------|
//! | `GET /metrics`                  | 200, a `Global` collection                           |
//! | `GET /metrics?query=Costly`     | 200, a `Costly` collection (also `Global`, indexes)  |
//! | `GET /metrics?query=<other>`    | 400                                                  |
//! | a collection that does not decode (a bug) | 500, with the reason                       |
//! | `GET /perfdata?query=Global`    | 200, the raw PERF_DATA_BLOCK ([`prfmon::remote`]'s wire) |
//! | `GET /names?lang=009`           | 200, the names and explain texts as JSON             |
//! | `GET /reg?key=KEY&...`          | 200, what `reg query KEY` prints here; 404 if absent |
//! | `GET /`                         | 200, a line of text that points to `/metrics`        |
//! | any request without the bearer token, when [`ServeOptions::token`] is set | 401, `WWW-Authenticate: Bearer realm="prfmon"` |
//! | other methods on those paths    | 405                                                  |
//! | any other path                  | 404                                                  |
//!
//! `HEAD` is answered like `GET`, without the body. A client whose `Accept` header names
//! `application/openmetrics-text` (Prometheus does) gets OpenMetrics 1.0.0
//! ([`Exposition::encode`]); any other gets Prometheus' classic text format 0.0.4
//! ([`Exposition::encode_text`]), which is what `curl URL | promtool check metrics` reads.
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
//! `/perfdata`, `/names` and `/reg` are what another machine's `prfmon query | list |
//! typeperf | watch --computer HOST:PORT` and `prfmon reg query \\HOST\KEY` read
//! ([`prfmon::remote`]): the collector's bytes as they are, the Perflib names, and any key
//! through the same read path as the local `reg query` ([`super::cmd::reg::query_text`]).
//! They take the same token. With [`ServeOptions::tls`] (`--tls-cert FILE --tls-key FILE`)
//! every answer goes over TLS (rustls, through tiny_http's `ssl-rustls`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prfdata_registry::Registry;
use tiny_http::{Header, Method, Request, Response, Server};

use super::token::BearerToken;
use prfmon::collector::Collector;
use prfmon::names::Names;
use prfmon::openmetrics::exposition::{Exposition, CONTENT_TYPE, TEXT_CONTENT_TYPE};

/// Where `prfmon serve` listens unless told otherwise: loopback only, so that counters are
/// not published to the network by accident; `--listen 0.0.0.0:9358` publishes them. The port
/// is in the range Prometheus exporters conventionally use (9100 and up); check it against
/// the other exporters of a machine before relying on it.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9358";

/// Worker threads answering requests. Scrapes mostly wait for the collection mutex, so a
/// few suffice: four lets a slow scrape, a second Prometheus and two browsers be served at
/// once on a 2-core machine.
pub const WORKERS: usize = 4;

/// [`DEFAULT_LISTEN`] as an address.
const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9358);

/// How often an idle worker looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

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
    /// Worker threads ([`WORKERS`]).
    pub workers: usize,
    /// The token every request must carry (`Authorization: Bearer <token>`); `None` lets
    /// every client in.
    pub token: Option<BearerToken>,
    /// Serve over TLS with this certificate chain and key (PEM files); `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
}

/// The PEM files `--tls-cert` and `--tls-key` name.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, the server's first.
    pub cert: std::path::PathBuf,
    /// The private key (PKCS#8 or RSA).
    pub key: std::path::PathBuf,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            listen: DEFAULT_ADDR,
            lang: "009".into(),
            workers: WORKERS,
            token: None,
            tls: None,
        }
    }
}

/// Stops a running [`MetricsServer`] from another thread (or a signal handler).
#[derive(Debug, Clone)]
pub struct Stopper(Arc<AtomicBool>);

impl Stopper {
    /// Asks the server to stop; [`MetricsServer::run`] returns within about 100 ms plus the
    /// requests in progress.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// What the workers share.
struct Shared<R: Registry> {
    collector: Mutex<Collector<R>>,
    lang: String,
    token: Option<BearerToken>,
    /// The last names read, kept when a later read fails.
    names: Mutex<Arc<Names>>,
}

/// A bound `/metrics` server over one collector.
pub struct MetricsServer<R: Registry> {
    server: Arc<Server>,
    shared: Arc<Shared<R>>,
    addr: SocketAddr,
    workers: usize,
    stop: Arc<AtomicBool>,
}

impl<R: Registry> std::fmt::Debug for MetricsServer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl<R: Registry + Send + 'static> MetricsServer<R>
where
    Collector<R>: Send,
{
    /// Opens the listening socket. Port 0 picks a free port: see [`local_addr`](Self::local_addr).
    pub fn bind(collector: Collector<R>, options: ServeOptions) -> Result<Self, ServeError> {
        let bind_error = |e: Box<dyn std::error::Error + Send + Sync>| ServeError::Bind {
            addr: options.listen,
            message: e.to_string(),
        };
        let server = match &options.tls {
            None => Server::http(options.listen).map_err(bind_error)?,
            Some(files) => {
                let read = |path: &std::path::Path| {
                    std::fs::read(path).map_err(|source| ServeError::TlsFile {
                        path: path.to_path_buf(),
                        source,
                    })
                };
                let config = tiny_http::SslConfig {
                    certificate: read(&files.cert)?,
                    private_key: read(&files.key)?,
                };
                check_pem(
                    &files.cert,
                    &config.certificate,
                    &files.key,
                    &config.private_key,
                )?;
                Server::https(options.listen, config).map_err(bind_error)?
            }
        };
        let addr = server.server_addr().to_ip().ok_or(ServeError::NotIp)?;
        let names = Names::load(collector.registry(), &options.lang).unwrap_or_default();
        Ok(Self {
            server: Arc::new(server),
            shared: Arc::new(Shared {
                collector: Mutex::new(collector),
                lang: options.lang,
                token: options.token,
                names: Mutex::new(Arc::new(names)),
            }),
            addr,
            workers: options.workers.max(1),
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle that stops [`run`](Self::run).
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.stop))
    }

    /// Serves requests on the worker threads until stopped, then closes the collector (its
    /// providers' Close is called, as when a monitor closes `HKEY_PERFORMANCE_DATA`).
    pub fn run(self) {
        let handles: Vec<_> = (0..self.workers)
            .map(|_| {
                let server = Arc::clone(&self.server);
                let shared = Arc::clone(&self.shared);
                let stop = Arc::clone(&self.stop);
                std::thread::spawn(move || worker(&server, &shared, &stop))
            })
            .collect();
        for h in handles {
            let _ = h.join();
        }
        // The workers are gone: this is the last reference, and dropping it closes the
        // collector.
        if let Ok(shared) = Arc::try_unwrap(self.shared) {
            let collector = shared
                .collector
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            collector.close();
        }
    }
}

/// Checks that the certificate file holds a certificate and the key file a PKCS#8 or RSA key,
/// before tiny_http reads them (it panics on a key file without one).
fn check_pem(
    cert_path: &std::path::Path,
    cert: &[u8],
    key_path: &std::path::Path,
    key: &[u8],
) -> Result<(), ServeError> {
    use ureq::tls::{parse_pem, PemItem};
    let has_cert = parse_pem(cert).any(|item| matches!(item, Ok(PemItem::Certificate(_))));
    if !has_cert {
        return Err(ServeError::TlsPem {
            path: cert_path.to_path_buf(),
            reason: "no CERTIFICATE block: give the server's certificate chain in PEM",
        });
    }
    // tiny_http reads PKCS#8, else PKCS#1 (RSA); a SEC1 EC key it cannot read.
    let text = String::from_utf8_lossy(key);
    let has_key = parse_pem(key).any(|item| matches!(item, Ok(PemItem::PrivateKey(_))))
        && (text.contains("-----BEGIN PRIVATE KEY-----")
            || text.contains("-----BEGIN RSA PRIVATE KEY-----"));
    if !has_key {
        return Err(ServeError::TlsPem {
            path: key_path.to_path_buf(),
            reason: "no PRIVATE KEY or RSA PRIVATE KEY block (PKCS#8 or PKCS#1, unencrypted); \
                     convert an EC key with `openssl pkcs8 -topk8 -nocrypt`",
        });
    }
    Ok(())
}

/// One worker: answers requests until the stop flag is set.
fn worker<R: Registry>(server: &Server, shared: &Shared<R>, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match server.recv_timeout(POLL) {
            Ok(Some(request)) => answer(request, shared),
            Ok(None) => {}
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn text(status: u16, body: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    let mut r = Response::from_string(body).with_status_code(status);
    if let Some(h) = header("Content-Type", "text/plain; charset=utf-8") {
        r.add_header(h);
    }
    r
}

/// Whether `request` may be answered: no token is required, or its `Authorization` header
/// carries it.
fn authorized<R: Registry>(request: &Request, shared: &Shared<R>) -> bool {
    let Some(token) = &shared.token else {
        return true;
    };
    request
        .headers()
        .iter()
        .any(|h| h.field.equiv("Authorization") && token.accepts(h.value.as_str()))
}

fn answer<R: Registry>(request: Request, shared: &Shared<R>) {
    if !authorized(&request, shared) {
        let mut r = text(
            401,
            "a bearer token is required: Authorization: Bearer <token>\n",
        );
        if let Some(h) = header("WWW-Authenticate", "Bearer realm=\"prfmon\"") {
            r.add_header(h);
        }
        let _ = request.respond(r);
        return;
    }
    let url = request.url().to_owned();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let method = request.method().clone();
    let allowed = matches!(method, Method::Get | Method::Head);
    let response = match path {
        "/metrics" if allowed => match collect_query(query) {
            Ok(value) => {
                let openmetrics = wants_openmetrics(&request);
                let (body, content_type) = match scrape(shared, &value) {
                    Ok(e) if openmetrics => (e.encode(), CONTENT_TYPE),
                    Ok(e) => (e.encode_text(), TEXT_CONTENT_TYPE),
                    // Prometheus then records the scrape as failed (`up` = 0).
                    Err(message) => {
                        let _ = request.respond(text(500, &format!("{message}\n")));
                        return;
                    }
                };
                let mut r = Response::from_string(body);
                if let Some(h) = header("Content-Type", content_type) {
                    r.add_header(h);
                }
                r
            }
            Err(message) => text(400, &message),
        },
        "/perfdata" if allowed => match collect_query(query) {
            Ok(value) => perfdata(shared, &value),
            Err(message) => text(400, &message),
        },
        "/names" if allowed => names_answer(shared, query),
        "/factors" if allowed => factors_answer(shared),
        "/reg" if allowed => reg_answer(shared, query),
        "/" if allowed => text(200, "prfmon serve: the metrics are at /metrics\n"),
        "/" | "/metrics" | "/perfdata" | "/names" | "/factors" | "/reg" => {
            let mut r = text(405, "only GET and HEAD\n");
            if let Some(h) = header("Allow", "GET, HEAD") {
                r.add_header(h);
            }
            r
        }
        _ => text(404, "not found: the metrics are at /metrics\n"),
    };
    // The client may have gone; nothing to do about it.
    let _ = request.respond(response);
}

/// The value of `key` in a URL query, decoded; `None` if absent.
fn param(query: &str, key: &str) -> Result<Option<String>, String> {
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == key {
            return percent_decode(v).map(Some);
        }
    }
    Ok(None)
}

fn binary(body: Vec<u8>, content_type: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    let mut r = Response::from_data(body);
    if let Some(h) = header("Content-Type", content_type) {
        r.add_header(h);
    }
    r
}

/// `/perfdata`: one collection, the bytes as collected, the services in a header.
fn perfdata<R: Registry>(shared: &Shared<R>, query: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    let collection = shared
        .collector
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .collect_with_services(query);
    let mut r = binary(collection.bytes, "application/octet-stream");
    let services = prfmon::remote::encode_services(&collection.services);
    if let Some(h) = header(prfmon::remote::SERVICES_HEADER, &services) {
        r.add_header(h);
    }
    r
}

/// `/names?lang=009`: the names of one language as JSON.
fn names_answer<R: Registry>(
    shared: &Shared<R>,
    query: &str,
) -> Response<std::io::Cursor<Vec<u8>>> {
    let lang = match param(query, "lang") {
        Ok(lang) => lang.unwrap_or_else(|| shared.lang.clone()),
        Err(message) => return text(400, &message),
    };
    if lang.is_empty() || !lang.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return text(400, "lang must be a Perflib language subkey such as 009\n");
    }
    let names = {
        let collector = shared
            .collector
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Names::load(collector.registry(), &lang)
    };
    match names.map(|n| serde_json::to_vec(&n)) {
        Ok(Ok(body)) => binary(body, "application/json"),
        Ok(Err(e)) => text(500, &format!("cannot encode the names: {e}\n")),
        Err(e) => text(404, &format!("no names for language {lang}: {e}\n")),
    }
}

/// `/factors`: the scale factors (seed 000) as JSON, name index to `*N` / `/N`.
fn factors_answer<R: Registry>(shared: &Shared<R>) -> Response<std::io::Cursor<Vec<u8>>> {
    let factors = {
        let collector = shared
            .collector
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        prfmon::factor::Factors::load(collector.registry())
    };
    match factors.map(|f| serde_json::to_vec(&f.to_texts())) {
        Ok(Ok(body)) => binary(body, "application/json"),
        Ok(Err(e)) => text(500, &format!("cannot encode the factors: {e}\n")),
        Err(e) => text(500, &format!("cannot read the factors: {e}\n")),
    }
}

/// `/reg?key=KEY[&v=NAME][&ve=1][&s=1][&se=SEP][&z=1]`: what `reg query` prints.
fn reg_answer<R: Registry>(shared: &Shared<R>, query: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    let get = |k: &str| param(query, k);
    let parsed = (|| -> Result<_, String> {
        let key = get("key")?.ok_or("key= is required\n")?;
        let value = match (get("v")?, get("ve")?) {
            (Some(v), _) => Some(v),
            (None, Some(_)) => Some(String::new()),
            (None, None) => None,
        };
        let separator = get("se")?;
        Ok((
            key,
            value,
            get("s")?.is_some(),
            separator,
            get("z")?.is_some(),
        ))
    })();
    let (key, value, recurse, separator, type_numbers) = match parsed {
        Ok(p) => p,
        Err(message) => return text(400, &message),
    };
    let options = prfdata_registry::reg_cli::QueryOptions {
        value: value.as_deref(),
        recurse,
        separator: separator.as_deref().unwrap_or("\\0"),
        type_numbers,
    };
    let result = {
        let mut collector = shared
            .collector
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The PerfStats keys are computed from a collection (seed 003 step 8: a remote
        // StartStat/StatData/StopStat acts on this machine's apps).
        let view = super::cmd::perfstats::needs_view(&key)
            .then(|| super::cmd::perfstats::view_with(&mut collector));
        super::cmd::reg::query_text(collector.registry(), &key, &options, view.as_ref())
    };
    use super::cmd::reg::QueryError;
    match result {
        Ok(out) => text(200, &out),
        Err(QueryError::Registry(
            prfdata_registry::RegistryError::KeyNotFound(_)
            | prfdata_registry::RegistryError::ValueNotFound { .. },
        )) => text(404, &format!("{}\n", prfdata_registry::reg_cli::NOT_FOUND)),
        Err(e) => text(400, &format!("ERROR: {e}\n")),
    }
}

/// Whether the client's `Accept` names OpenMetrics (Prometheus' does); others get the
/// classic text format.
fn wants_openmetrics(request: &Request) -> bool {
    request.headers().iter().any(|h| {
        h.field.equiv("Accept")
            && h.value
                .as_str()
                .to_ascii_lowercase()
                .contains("application/openmetrics-text")
    })
}

/// One collection for `query`. Collections take turns on the collector's mutex.
fn scrape<R: Registry>(shared: &Shared<R>, query: &str) -> Result<Exposition, String> {
    let mut collector = shared
        .collector
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let collection = collector.collect_with_services(query);
    // Names are read on each scrape so that names changed by lodctr are seen; a failed read
    // keeps the last names.
    let fresh = Names::load(collector.registry(), &shared.lang).ok();
    drop(collector);
    let names = {
        let mut last = shared.names.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(fresh) = fresh {
            *last = Arc::new(fresh);
        }
        Arc::clone(&last)
    };
    // The collector builds the block and validates every object, so an error is a bug; the
    // scrape answers 500 with the reason.
    prfmon::decode::decode(&collection.bytes)
        .map(|snapshot| Exposition::new(&snapshot, &collection.services, &names))
        .map_err(|e| format!("prfmon: the collection does not decode: {e}"))
}

/// The Collect value for the URL query: `query=Global` (the default), `query=Costly`, or
/// space-separated object name indexes (`query=1848+1860`).
pub fn collect_query(query: &str) -> Result<String, String> {
    let mut value = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, v) = pair.split_once('=').unwrap_or((pair, ""));
        if key == "query" {
            value = Some(percent_decode(v)?);
        }
    }
    let Some(value) = value else {
        return Ok("Global".into());
    };
    let trimmed = value.trim();
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("global") {
        Ok("Global".into())
    } else if trimmed.eq_ignore_ascii_case("costly") {
        Ok("Costly".into())
    } else if trimmed.split_whitespace().all(|w| w.parse::<u32>().is_ok()) {
        Ok(trimmed.split_whitespace().collect::<Vec<_>>().join(" "))
    } else {
        Err(format!(
            "query must be Global, Costly or object name indexes, not {trimmed:?}\n"
        ))
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte.
fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad %-escape at byte {i} of the query\n"))?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "the query is not UTF-8\n".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    // What were the doc examples of this module when it was in the library.

    #[test]
    fn example_module() -> Result<(), Box<dyn std::error::Error>> {
        use prfdata_registry::FileRegistry;
        use prfmon::collector::Collector;
        use std::io::{Read, Write};

        let dir = tempfile::tempdir()?;
        let registry = FileRegistry::open(dir.path())?;
        let collector = Collector::open(registry, Default::default())?;
        let options = ServeOptions {
            listen: "127.0.0.1:0".parse()?,
            ..Default::default()
        };
        let server = MetricsServer::bind(collector, options)?;
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
        assert_eq!(ServeOptions::default().workers, WORKERS);
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

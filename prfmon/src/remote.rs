//! Another machine's counters, through its `prfmon serve`: what Windows' remote registry
//! service gives a monitor that opens `HKEY_PERFORMANCE_DATA` on another computer.
//!
//! [`Remote`] is the second source of a [`crate::session::Session`]: it asks the server for
//! the exact PERF_DATA_BLOCK its collector returns, and for the names that go with it, so that
//! decoding, sampling, typeperf and watch run unchanged on the bytes. It also reads any
//! registry key the server's `reg query` would show ([`Remote::reg_query`]).
//!
//! # The wire
//!
//! | request | answer |
//! |---|---|
//! | `GET /perfdata?query=Global` ([`PERFDATA_PATH`]) | `application/octet-stream`: the PERF_DATA_BLOCK; header [`SERVICES_HEADER`]: the service of each object ([`encode_services`]) |
//! | `GET /names?lang=009` ([`NAMES_PATH`]) | JSON: [`Names`] (`counter`, `help`: index → text) |
//! | `GET /factors` ([`FACTORS_PATH`]) | JSON: the Windows 95 stat-server interface's scale factors by name index (`{"1852": "/1024"}`, [`Factors::to_texts`](crate::factor::Factors::to_texts)) |
//! | `GET /reg?key=KEY[&v=NAME][&ve=1][&s=1][&se=SEP][&z=1]` ([`REG_PATH`]) | `text/plain`: what `prfmon reg query` prints there; 404 for a key or value that does not exist; `POST` for a `StartStat` / `StopStat` value (a write) |
//!
//! Every request carries `Authorization: Bearer <token>` when a token is given. Plain HTTP
//! unless the address starts with `https://` or a CA file is given; TLS is rustls (through
//! `ureq`), trusting the CA file given, else Mozilla's root certificates (`webpki-roots`).
//! Every request, connection included, ends within [`RemoteOptions::timeout`]: a server that
//! is down or stalled gives [`RemoteError::Unreachable`] or [`RemoteError::TimedOut`], never
//! a hang.
//!
//! # A remote that lies
//!
//! An answer is untrusted input. Its body is read into one buffer sized from its
//! `Content-Length`, at most [`RemoteOptions::max_answer`] bytes ([`DEFAULT_MAX_ANSWER`]):
//! larger is [`RemoteError::TooLarge`] before a byte is read. A body that ends before its
//! `Content-Length` is [`RemoteError::CutShort`] with both counts. A redirect is not followed
//! ([`RemoteError::Redirected`], naming where it pointed): the token goes only to the address
//! the user named. The PERF_DATA_BLOCK is checked in place ([`prfdata_wire::view::DataView`]), not
//! copied out, so an answer costs the client its size and the view's offsets (8 bytes per
//! instance). An error's body is read up to [`MAX_MESSAGE`] bytes.
//!
//! # Examples
//!
//! ```
//! use prfmon::remote::{Remote, RemoteError, RemoteOptions};
//! use std::time::Duration;
//!
//! // Nothing listens on a port just released: the error names the address.
//! let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
//! let options = RemoteOptions { timeout: Duration::from_secs(5), ..Default::default() };
//! let remote = Remote::new(&format!("127.0.0.1:{port}"), &options)?;
//! let error = remote.collect_with_services("Global").unwrap_err();
//! assert!(matches!(error, RemoteError::Unreachable { .. }));
//! assert!(error.to_string().contains(&format!("127.0.0.1:{port}")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::Agent;

use crate::collector::Collection;
use crate::names::Names;

mod body;

use body::BodyError;

/// The port `prfmon serve` listens on unless told otherwise, and the one a `\\HOST` path
/// without a port reaches.
pub const DEFAULT_PORT: u16 = 9358;

/// How long a request may take, connection included, unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The raw collection.
pub const PERFDATA_PATH: &str = "/perfdata";
/// The names and explain texts.
pub const NAMES_PATH: &str = "/names";
/// The counters' scale factors (the Windows 95 stat-server interface's `PSTF_FACTOR_*`).
pub const FACTORS_PATH: &str = "/factors";
/// A registry key, as `reg query` prints it.
pub const REG_PATH: &str = "/reg";
/// The response header of [`PERFDATA_PATH`] that names the service of each object.
pub const SERVICES_HEADER: &str = "Prfmon-Services";

/// The largest answer read unless told otherwise ([`RemoteOptions::max_answer`], `--max-answer`):
/// the largest block an app may publish ([`prfdata::reader::BlockReader::MAX_BLOCK_SIZE`], 1 GiB), so that a
/// collection of one app of any size crosses the wire while a hostile server can make the client
/// hold no more than that (and twice it to decode). A collection can be larger: one service's
/// Collect answers up to 2 GiB
/// ([`BlockReader::MAX_COLLECT_ANSWER`](prfdata::reader::BlockReader::MAX_COLLECT_ANSWER): an app
/// has two blocks) and a collection of several up to 4 GiB
/// ([`MAX_PERF_DATA_BLOCK`](crate::datablock::MAX_PERF_DATA_BLOCK)); such an answer is refused
/// naming its size and `--max-answer`, which admits it when raised.
pub const DEFAULT_MAX_ANSWER: u64 = prfdata::reader::BlockReader::MAX_BLOCK_SIZE;

/// The most of an error answer's body read and shown (its first lines say what went wrong).
pub const MAX_MESSAGE: u64 = 64 * 1024;

/// How to reach a remote `prfmon serve`.
///
/// # Examples
///
/// ```
/// let o = prfmon::remote::RemoteOptions::default();
/// assert_eq!(o.timeout, prfmon::remote::DEFAULT_TIMEOUT);
/// assert!(o.token.is_none() && o.tls_ca.is_none());
/// ```
#[derive(Clone)]
pub struct RemoteOptions {
    /// The bearer token sent with every request.
    pub token: Option<String>,
    /// A PEM file of the certificate authorities to trust; implies TLS.
    pub tls_ca: Option<PathBuf>,
    /// How long one request may take, connecting included.
    pub timeout: Duration,
    /// The largest answer body read, in bytes ([`DEFAULT_MAX_ANSWER`]).
    pub max_answer: u64,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        Self {
            token: None,
            tls_ca: None,
            timeout: DEFAULT_TIMEOUT,
            max_answer: DEFAULT_MAX_ANSWER,
        }
    }
}

impl std::fmt::Debug for RemoteOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteOptions")
            .field("token", &self.token.as_ref().map(|_| ".."))
            .field("tls_ca", &self.tls_ca)
            .field("timeout", &self.timeout)
            .field("max_answer", &self.max_answer)
            .finish()
    }
}

/// Why a remote gave nothing.
///
/// # Examples
///
/// ```
/// let e = prfmon::remote::Remote::new("", &Default::default()).unwrap_err();
/// assert!(e.to_string().contains("address"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The address is not `HOST`, `HOST:PORT` or `http(s)://HOST:PORT`.
    #[error("bad remote address `{address}`: {reason}; give HOST, HOST:PORT or https://HOST:PORT")]
    BadAddress {
        /// The address given.
        address: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The CA file cannot be read or holds no certificate.
    #[error("--tls-ca {}: {reason}", path.display())]
    TlsCa {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// No answer within the timeout.
    #[error(
        "{address} did not answer within {} s (is prfmon serve running there? raise --timeout \
         for a slow link)",
        timeout.as_secs_f64()
    )]
    TimedOut {
        /// The server.
        address: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The connection failed (refused, no route, unknown host, TLS handshake refused).
    #[error("cannot reach {address}: {reason} (is prfmon serve running and listening there?)")]
    Unreachable {
        /// The server.
        address: String,
        /// Why.
        reason: String,
    },
    /// 401: no token, or the wrong one.
    #[error(
        "{address} refused the request (401): it requires a bearer token; give the file that \
         holds it with --token-file FILE"
    )]
    Unauthorized {
        /// The server.
        address: String,
    },
    /// 404 on a registry key or value.
    #[error("{address}: {message}")]
    NotFound {
        /// The server.
        address: String,
        /// The server's message.
        message: String,
    },
    /// Another error status.
    #[error("{address} answered {status}: {message}")]
    Status {
        /// The server.
        address: String,
        /// The HTTP status.
        status: u16,
        /// The body of the answer.
        message: String,
    },
    /// The answer is larger than `--max-answer`.
    #[error(
        "{address} sent an answer of {}, more than --max-answer {limit} bytes allows; \
         if that machine's collections are this large, raise it with --max-answer BYTES",
        size.map_or_else(|| "more bytes".to_owned(), |s| format!("{s} bytes"))
    )]
    TooLarge {
        /// The server.
        address: String,
        /// The announced size (`Content-Length`), if any.
        size: Option<u64>,
        /// The cap.
        limit: u64,
    },
    /// The body ended before its `Content-Length` did.
    #[error(
        "{address} sent {received} bytes of an answer {}, then the connection ended{}: the \
         answer was cut short",
        expected.map_or_else(|| "of unknown length".to_owned(), |e| format!("whose Content-Length is {e} bytes")),
        reason.as_ref().map_or_else(String::new, |r| format!(" ({r})"))
    )]
    CutShort {
        /// The server.
        address: String,
        /// `Content-Length`, if given.
        expected: Option<u64>,
        /// The bytes that came.
        received: u64,
        /// What the connection said, if it failed.
        reason: Option<String>,
    },
    /// This machine could not hold more of the answer.
    #[error(
        "{address} sent {received} bytes of an answer {}, and this machine has no memory for          more: lower --max-answer BYTES to refuse such answers before reading them",
        expected.map_or_else(|| "of unknown length".to_owned(), |e| format!("whose Content-Length is {e} bytes"))
    )]
    NoMemory {
        /// The server.
        address: String,
        /// `Content-Length`, if given.
        expected: Option<u64>,
        /// The bytes that came.
        received: u64,
    },
    /// A redirect, which is not followed.
    #[error(
        "{address} answered {status}, a redirect to {location}, which is not followed: give \
         the address of the prfmon serve itself (--computer HOST:PORT or \\\\HOST:PORT)"
    )]
    Redirected {
        /// The server.
        address: String,
        /// The HTTP status (3xx).
        status: u16,
        /// Where it pointed: its `Location` header.
        location: String,
    },
    /// The answer is not what the protocol says.
    #[error("{address} sent an answer that cannot be read: {reason}")]
    BadAnswer {
        /// The server.
        address: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// `reg query`'s options, as [`Remote::reg_query`] sends them.
///
/// # Examples
///
/// ```
/// let q = prfmon::remote::RegQuery { key: r"HKLM\SOFTWARE".into(), ..Default::default() };
/// assert!(!q.recurse && q.value.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegQuery {
    /// The key.
    pub key: String,
    /// Only this value (`""`: the default value).
    pub value: Option<String>,
    /// Every key below too (`/s`).
    pub recurse: bool,
    /// The REG_MULTI_SZ separator shown (`/se`).
    pub separator: Option<String>,
    /// Type numbers after type names (`/z`).
    pub type_numbers: bool,
}

/// A connection to another machine's `prfmon serve`.
pub struct Remote {
    agent: Agent,
    /// `http(s)://host:port`.
    base: String,
    /// `host:port`, for messages.
    address: String,
    token: Option<String>,
    timeout: Duration,
    max_answer: u64,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// `address` split into scheme, host and port: `HOST` (port [`DEFAULT_PORT`]), `HOST:PORT`,
/// `[v6]:PORT`, each optionally after `http://` or `https://`.
///
/// # Examples
///
/// ```
/// use prfmon::remote::parse_address;
/// assert_eq!(parse_address("db1")?, (false, "db1".into(), 9358));
/// assert_eq!(parse_address("https://127.0.0.1:1234")?, (true, "127.0.0.1".into(), 1234));
/// assert_eq!(parse_address("[::1]:80")?, (false, "[::1]".into(), 80));
/// assert!(parse_address("db1:http").is_err());
/// # Ok::<(), prfmon::remote::RemoteError>(())
/// ```
pub fn parse_address(address: &str) -> Result<(bool, String, u16), RemoteError> {
    let bad = |reason: &str| RemoteError::BadAddress {
        address: address.to_owned(),
        reason: reason.to_owned(),
    };
    let text = address.trim();
    let (https, rest) = if let Some(r) = strip_prefix_ignore_case(text, "https://") {
        (true, r)
    } else if let Some(r) = strip_prefix_ignore_case(text, "http://") {
        (false, r)
    } else {
        (false, text)
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Err(bad("no host"));
    }
    if rest.contains(['/', '\\', '?', '#', '@']) || rest.chars().any(char::is_whitespace) {
        return Err(bad("a host and port only, without a path"));
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (inside, after) = v6.split_once(']').ok_or_else(|| bad("no closing `]`"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(bad("text after `]`")),
        };
        (format!("[{inside}]"), port)
    } else {
        match rest.split_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (rest.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(bad("no host"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
    };
    Ok((https, host, port))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The certificates of a PEM file.
fn read_ca(path: &Path) -> Result<Vec<Certificate<'static>>, RemoteError> {
    let error = |reason: String| RemoteError::TlsCa {
        path: path.to_path_buf(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|e| error(format!("cannot read it: {e}")))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(error(format!("not a PEM file: {e}"))),
        }
    }
    if certs.is_empty() {
        return Err(error("no CERTIFICATE in it".into()));
    }
    Ok(certs)
}

impl Remote {
    /// A client of the `prfmon serve` at `address` (see [`parse_address`]). Nothing is sent
    /// yet; the CA file, if any, is read now.
    ///
    /// # Errors
    ///
    /// [`RemoteError::BadAddress`], [`RemoteError::TlsCa`].
    pub fn new(address: &str, options: &RemoteOptions) -> Result<Self, RemoteError> {
        let (https, host, port) = parse_address(address)?;
        let https = https || options.tls_ca.is_some();
        let roots = match &options.tls_ca {
            Some(path) => RootCerts::Specific(Arc::new(read_ca(path)?)),
            None => RootCerts::WebPki,
        };
        let config = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(options.timeout))
            .https_only(https)
            .max_redirects(0)
            .tls_config(TlsConfig::builder().root_certs(roots).build())
            .build();
        let address = format!("{host}:{port}");
        Ok(Self {
            agent: config.into(),
            base: format!("{}://{address}", if https { "https" } else { "http" }),
            address,
            token: options.token.clone(),
            timeout: options.timeout,
            max_answer: options.max_answer,
        })
    }

    /// `host:port`.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = prfmon::remote::Remote::new("db1", &Default::default())?;
    /// assert_eq!(r.address(), "db1:9358");
    /// # Ok::<(), prfmon::remote::RemoteError>(())
    /// ```
    pub fn address(&self) -> &str {
        &self.address
    }

    /// One GET of `path?query`; the status, the services header and the body.
    fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Answer, RemoteError> {
        self.send(false, path, query)
    }

    /// One GET, or POST (a PerfStats write), of `path?query`.
    fn send(&self, post: bool, path: &str, query: &[(&str, &str)]) -> Result<Answer, RemoteError> {
        let mut url = format!("{}{path}", self.base);
        for (i, (k, v)) in query.iter().enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(k);
            url.push('=');
            url.push_str(&encode_component(v));
        }
        let bearer = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let sent = match (post, &bearer) {
            (true, Some(b)) => self
                .agent
                .post(&url)
                .header("Authorization", b)
                .send_empty(),
            (true, None) => self.agent.post(&url).send_empty(),
            (false, Some(b)) => self.agent.get(&url).header("Authorization", b).call(),
            (false, None) => self.agent.get(&url).call(),
        };
        let mut response = sent.map_err(|e| self.transport(e))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let services = header(SERVICES_HEADER);
        let location = header("Location");
        if status != 200 {
            let body = response.body_mut().as_reader();
            let message = String::from_utf8_lossy(&body::read_prefix(body, MAX_MESSAGE))
                .trim()
                .to_owned();
            return Err(self.status_error(status, message, location));
        }
        let declared = response.body().content_length();
        let reader = response.body_mut().as_reader();
        let body =
            body::read_capped(reader, declared, self.max_answer).map_err(|e| self.body_error(e))?;
        Ok(Answer { services, body })
    }

    /// The error for an answer of `status` (not 200) whose body says `message`.
    fn status_error(&self, status: u16, message: String, location: Option<String>) -> RemoteError {
        let address = self.address.clone();
        match status {
            401 => RemoteError::Unauthorized { address },
            404 => RemoteError::NotFound { address, message },
            300..=399 => RemoteError::Redirected {
                address,
                status,
                location: location.unwrap_or_else(|| "nowhere (no Location header)".into()),
            },
            _ => RemoteError::Status {
                address,
                status,
                message,
            },
        }
    }

    fn body_error(&self, e: BodyError) -> RemoteError {
        let address = self.address.clone();
        match e {
            BodyError::TooLarge { size, limit } => RemoteError::TooLarge {
                address,
                size,
                limit,
            },
            BodyError::CutShort {
                expected,
                received,
                reason,
            } => RemoteError::CutShort {
                address,
                expected,
                received,
                reason,
            },
            BodyError::TimedOut => RemoteError::TimedOut {
                address,
                timeout: self.timeout,
            },
            BodyError::NoMemory { expected, received } => RemoteError::NoMemory {
                address,
                expected,
                received,
            },
        }
    }

    fn transport(&self, e: ureq::Error) -> RemoteError {
        let address = self.address.clone();
        let timed_out = match &e {
            ureq::Error::Timeout(_) => true,
            ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::TimedOut,
            _ => false,
        };
        match e {
            _ if timed_out => RemoteError::TimedOut {
                address,
                timeout: self.timeout,
            },
            ureq::Error::BodyExceedsLimit(limit) => RemoteError::TooLarge {
                address,
                size: None,
                limit,
            },
            other => RemoteError::Unreachable {
                address,
                reason: other.to_string(),
            },
        }
    }

    fn bad_answer(&self, reason: String) -> RemoteError {
        RemoteError::BadAnswer {
            address: self.address.clone(),
            reason,
        }
    }

    /// One collection of `query` on the remote machine: the PERF_DATA_BLOCK its collector
    /// returned, byte for byte, with the service of each object.
    ///
    /// # Errors
    ///
    /// Every [`RemoteError`] but `BadAddress` and `TlsCa`; [`RemoteError::BadAnswer`] when
    /// the services do not match the objects.
    pub fn collect_with_services(&self, query: &str) -> Result<Collection, RemoteError> {
        let answer = self.get(PERFDATA_PATH, &[("query", query)])?;
        let header = answer.services.as_deref().unwrap_or("");
        if !header.is_ascii() {
            return Err(self.bad_answer(format!("{SERVICES_HEADER} is not ASCII")));
        }
        let services = decode_services(header).map_err(|reason| self.bad_answer(reason))?;
        // Checked in place: a copy of every instance would cost many times the answer.
        let objects = prfdata_wire::view::DataView::parse(&answer.body)
            .map_err(|e| self.bad_answer(format!("the PERF_DATA_BLOCK does not decode: {e}")))?
            .object_count();
        if objects != services.len() {
            return Err(self.bad_answer(format!(
                "{objects} objects but {} services in {SERVICES_HEADER}",
                services.len()
            )));
        }
        Ok(Collection {
            bytes: answer.body,
            services,
        })
    }

    /// The remote machine's names and explain texts of language `lang` (`009`).
    ///
    /// # Errors
    ///
    /// As [`collect_with_services`](Self::collect_with_services).
    pub fn names(&self, lang: &str) -> Result<Names, RemoteError> {
        let answer = self.get(NAMES_PATH, &[("lang", lang)])?;
        serde_json::from_slice(&answer.body)
            .map_err(|e| self.bad_answer(format!("the names do not decode: {e}")))
    }

    /// The remote machine's scale factors (the Windows 95 stat-server interface), for its displayed values.
    ///
    /// # Errors
    ///
    /// As [`collect_with_services`](Self::collect_with_services).
    pub fn factors(&self) -> Result<crate::factor::Factors, RemoteError> {
        let answer = self.get(FACTORS_PATH, &[])?;
        let texts: std::collections::BTreeMap<u32, String> =
            serde_json::from_slice(&answer.body)
                .map_err(|e| self.bad_answer(format!("the factors are not JSON: {e}")))?;
        Ok(crate::factor::Factors::from_texts(&texts))
    }

    /// What `prfmon reg query` prints on the remote machine for `query`.
    ///
    /// # Errors
    ///
    /// [`RemoteError::NotFound`] for a key or value that does not exist there; the others as
    /// [`collect_with_services`](Self::collect_with_services).
    pub fn reg_query(&self, query: &RegQuery) -> Result<String, RemoteError> {
        let mut params: Vec<(&str, &str)> = vec![("key", &query.key)];
        match query.value.as_deref() {
            Some("") => params.push(("ve", "1")),
            Some(v) => params.push(("v", v)),
            None => {}
        }
        if query.recurse {
            params.push(("s", "1"));
        }
        if let Some(sep) = &query.separator {
            params.push(("se", sep));
        }
        if query.type_numbers {
            params.push(("z", "1"));
        }
        // StartStat and StopStat start and end watches there: writes, sent as POST.
        let write = crate::perfstats::stat_write(&query.key, query.value.as_deref()).is_some();
        let answer = self.send(write, REG_PATH, &params)?;
        String::from_utf8(answer.body).map_err(|_| self.bad_answer("the key is not UTF-8".into()))
    }
}

/// One answer: its services header (lossily decoded) and body.
struct Answer {
    services: Option<String>,
    body: Vec<u8>,
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::remote::encode_component("a b,c%"), "a%20b%2Cc%25");
/// ```
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-decodes `text` (`%XX`; `+` stays a plus).
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::remote::decode_component("a%20b%2Cc").as_deref(), Ok("a b,c"));
/// assert!(prfmon::remote::decode_component("%zz").is_err());
/// ```
pub fn decode_component(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad %-escape at byte {i}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8".to_owned())
}

/// The [`SERVICES_HEADER`] value for `services`: each name percent-encoded, joined by `,`.
///
/// # Examples
///
/// ```
/// use prfmon::remote::{decode_services, encode_services};
/// let services = vec!["App".to_owned(), "A,B C".to_owned()];
/// assert_eq!(encode_services(&services), "App,A%2CB%20C");
/// assert_eq!(decode_services(&encode_services(&services)), Ok(services));
/// assert_eq!(decode_services(""), Ok(vec![]));
/// ```
pub fn encode_services(services: &[String]) -> String {
    services
        .iter()
        .map(|s| encode_component(s))
        .collect::<Vec<_>>()
        .join(",")
}

/// The services of a [`SERVICES_HEADER`] value (see [`encode_services`]).
///
/// # Errors
///
/// A bad `%`-escape or a name that is not UTF-8.
pub fn decode_services(header: &str) -> Result<Vec<String>, String> {
    if header.trim().is_empty() {
        return Ok(Vec::new());
    }
    header
        .split(',')
        .map(|s| decode_component(s.trim()).map_err(|e| format!("{SERVICES_HEADER}: {e}")))
        .collect()
}

//! The answers (the route table is in the [module docs of the server](super)). Every piece of
//! work that touches the collector or the registry runs on a blocking thread
//! ([`tokio::task::spawn_blocking`]), so the connections' tasks never wait on it; collections
//! take turns on the collector's mutex there. `/metrics` and `/perfdata` first take a place
//! among the scrapes in flight ([`super::scrapes`]), else are answered 503. Error bodies name
//! apps, services and stats, never a local path: the full reason is logged here.

use std::net::IpAddr;
use std::sync::Arc;

use hyper::body::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::body::AnswerBody;
use super::scrapes::{self, Client, Permit};
use super::Shared;
use prfmon::names::Names;
use prfmon::openmetrics::exposition::{Exposition, CONTENT_TYPE, TEXT_CONTENT_TYPE};
use prfmon::session::Contents;

/// An answer: whole, or `/metrics`' written as it is encoded ([`AnswerBody`]).
pub type Answer = Response<AnswerBody>;

/// The routes that exist (for 405 rather than 404).
const ROUTES: [&str; 6] = ["/", "/metrics", "/perfdata", "/names", "/factors", "/reg"];

/// An answer of `status` with `body` of `content_type`.
pub fn answer(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    let mut r = Response::new(AnswerBody::whole(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    r
}

/// A text answer.
pub fn text(status: u16, body: impl Into<String>) -> Answer {
    answer(status, "text/plain; charset=utf-8", body.into())
}

/// Adds a header whose value is valid (the others are left out).
pub fn with_header(mut r: Answer, name: HeaderName, value: &str) -> Answer {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
    r
}

/// 405 with the methods that are allowed.
pub fn not_allowed(allow: &str) -> Answer {
    let r = text(405, format!("only {allow}\n"));
    with_header(r, hyper::header::ALLOW, allow)
}

/// Runs `work` on a blocking thread.
pub async fn blocking<F>(shared: &Arc<Shared>, work: F) -> Answer
where
    F: FnOnce(&Shared) -> Answer + Send + 'static,
{
    let shared = Arc::clone(shared);
    tokio::task::spawn_blocking(move || work(&shared))
        .await
        .unwrap_or_else(|e| {
            log::error!("prfmon serve: a request's work failed: {e}");
            text(500, "internal error: the server's log has the reason\n")
        })
}

/// Answers one request of `client`, whose address is `peer`.
pub async fn route(
    shared: Arc<Shared>,
    peer: IpAddr,
    client: &Client,
    request: Request<hyper::body::Incoming>,
) -> Answer {
    // No route reads a body: one that was sent is not parsed, and the connection closes.
    let has_body = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() != b"0")
        || request
            .headers()
            .contains_key(hyper::header::TRANSFER_ENCODING);
    let mut r = dispatch(&shared, peer, client, &request).await;
    if has_body {
        r.headers_mut()
            .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

async fn dispatch(
    shared: &Arc<Shared>,
    peer: IpAddr,
    client: &Client,
    request: &Request<hyper::body::Incoming>,
) -> Answer {
    if !authorized(request.headers(), shared) {
        let r = text(
            401,
            "a bearer token is required: Authorization: Bearer <token>\n",
        );
        return with_header(
            r,
            hyper::header::WWW_AUTHENTICATE,
            "Bearer realm=\"prfmon\"",
        );
    }
    let path = request.uri().path();
    let query = request.uri().query().unwrap_or("").to_owned();
    let method = request.method().clone();
    let read = method == Method::GET || method == Method::HEAD;
    match path {
        "/metrics" if read => match collect_query(&query) {
            Ok(value) => {
                let openmetrics = wants_openmetrics(request.headers());
                match shared.scrapes.enter(client).await {
                    Some(p) => blocking(shared, move |s| metrics(s, &value, openmetrics, p)).await,
                    None => scrapes::busy(),
                }
            }
            Err(message) => text(400, message),
        },
        "/perfdata" if read => match collect_query(&query) {
            Ok(value) => match shared.scrapes.enter(client).await {
                Some(p) => {
                    blocking(shared, move |s| perfdata(s, &value).map(|b| b.holding(p))).await
                }
                None => scrapes::busy(),
            },
            Err(message) => text(400, message),
        },
        "/names" if read => blocking(shared, move |s| names_answer(s, &query)).await,
        "/factors" if read => blocking(shared, factors_answer).await,
        "/reg" => super::reg::answer(shared, peer, &method, &query).await,
        "/" if read => text(200, "prfmon serve: the metrics are at /metrics\n"),
        p if ROUTES.contains(&p) => not_allowed("GET, HEAD"),
        _ => text(404, "not found: the metrics are at /metrics\n"),
    }
}

/// Whether the request may be answered: no token is required, or an `Authorization` header
/// carries it.
fn authorized(headers: &HeaderMap, shared: &Shared) -> bool {
    let Some(token) = &shared.token else {
        return true;
    };
    headers
        .get_all(hyper::header::AUTHORIZATION)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| token.accepts(v)))
}

/// Whether the client's `Accept` names OpenMetrics (Prometheus' does); others get the
/// classic text format.
fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers.get_all(hyper::header::ACCEPT).iter().any(|v| {
        String::from_utf8_lossy(v.as_bytes())
            .to_ascii_lowercase()
            .contains("application/openmetrics-text")
    })
}

/// `/metrics`: one collection, encoded as the client reads it (the text is never held whole),
/// holding `permit` until it is sent.
fn metrics(shared: &Shared, query: &str, openmetrics: bool, permit: Permit) -> Answer {
    let exposition = match scrape(shared, query) {
        Ok(e) => e,
        // Prometheus then records the scrape as failed (`up` = 0).
        Err(message) => {
            log::error!("{message}");
            return text(500, format!("{message}\n"));
        }
    };
    let (content_type, body) = if openmetrics {
        let body = AnswerBody::streamed(permit, move |out| exposition.encode_to(out));
        (CONTENT_TYPE, body)
    } else {
        let body = AnswerBody::streamed(permit, move |out| exposition.encode_text_to(out));
        (TEXT_CONTENT_TYPE, body)
    };
    match body {
        Ok(body) => {
            let mut r = Response::new(body);
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static(content_type),
            );
            r
        }
        Err(e) => {
            log::error!("prfmon serve: cannot start a thread to encode /metrics: {e}");
            with_header(
                text(503, "the server cannot start a thread now: retry later\n"),
                hyper::header::RETRY_AFTER,
                "1",
            )
        }
    }
}

/// One collection for `query`, named with the session's facts, which are read again when the
/// registry changed (lodctr), one `stat` telling (a failed read keeps the last ones).
/// Collections take turns on the session's mutex.
fn scrape(shared: &Shared, query: &str) -> Result<Exposition, String> {
    let mut session = shared.session();
    let collection = session.collect(query).map_err(|e| format!("prfmon: {e}"))?;
    // The collector builds the block and validates every object, so an error is a bug; the
    // scrape answers 500 with the reason.
    let snapshot = prfdata_wire::snapshot::decode_owned(collection.bytes)
        .map_err(|e| format!("prfmon: the collection does not decode: {e}"))?;
    session.follow(Contents::of(&snapshot, &collection.services));
    let machine = session.machine();
    Ok(Exposition::with_units(
        &snapshot,
        &collection.services,
        &machine.names,
        &machine.units,
    )
    .with_bucket_limit(shared.bucket_limit))
}

/// `/perfdata`: one collection, the bytes as collected, the services in a header.
fn perfdata(shared: &Shared, query: &str) -> Answer {
    let collection = match shared.session().collect(query) {
        Ok(c) => c,
        Err(e) => return text(500, format!("prfmon: {e}\n")),
    };
    let r = answer(200, "application/octet-stream", collection.bytes);
    let services = prfmon::remote::encode_services(&collection.services);
    match HeaderName::from_bytes(prfmon::remote::SERVICES_HEADER.as_bytes()) {
        Ok(name) => with_header(r, name, &services),
        Err(_) => r,
    }
}

/// `/names?lang=009`: the names of one language as JSON.
fn names_answer(shared: &Shared, query: &str) -> Answer {
    let lang = match param(query, "lang") {
        Ok(lang) => lang.unwrap_or_else(|| shared.lang.clone()),
        Err(message) => return text(400, message),
    };
    if lang.is_empty() || !lang.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return text(400, "lang must be a Perflib language subkey such as 009\n");
    }
    match Names::load(&shared.registry, &lang).map(|n| serde_json::to_vec(&n)) {
        Ok(Ok(body)) => answer(200, "application/json", body),
        Ok(Err(e)) => text(500, format!("cannot encode the names: {e}\n")),
        Err(e) => {
            log::debug!("/names?lang={lang}: {e}");
            text(404, format!("no names for language {lang}\n"))
        }
    }
}

/// `/factors`: the scale factors (`PSTF_FACTOR_*`) as JSON, name index to `*N` / `/N`.
fn factors_answer(shared: &Shared) -> Answer {
    match prfmon::factor::Factors::load(&shared.registry).map(|f| serde_json::to_vec(&f.to_texts()))
    {
        Ok(Ok(body)) => answer(200, "application/json", body),
        Ok(Err(e)) => text(500, format!("cannot encode the factors: {e}\n")),
        Err(e) => {
            log::warn!("/factors: {e}");
            text(
                500,
                "cannot read the factors: the server's log has the reason\n",
            )
        }
    }
}

/// The value of `key` in a URL query, decoded; `None` if absent.
pub fn param(query: &str, key: &str) -> Result<Option<String>, String> {
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == key {
            return percent_decode(v).map(Some);
        }
    }
    Ok(None)
}

/// The Collect value for the URL query: `query=Global` (the default), `query=Costly`, or
/// space-separated object name indexes (`query=1848+1860`).
pub fn collect_query(query: &str) -> Result<String, String> {
    let Some(value) = param_last(query, "query")? else {
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

/// The last value of `key` in a URL query (every one is decoded).
fn param_last(query: &str, key: &str) -> Result<Option<String>, String> {
    let mut value = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == key {
            value = Some(percent_decode(v)?);
        }
    }
    Ok(value)
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

//! `/reg?key=KEY[&v=NAME][&ve=1][&s=1][&se=SEP][&z=1]`: what `reg query` prints here, read with
//! GET; and the two writes of the PerfStats view, `POST` of a `StartStat` or `StopStat` value
//! ([`prfmon::perfstats::stat_write`]), which start or end a watch held for the peer
//! ([`super::watches`]).

use std::net::IpAddr;
use std::sync::{Arc, PoisonError};

use hyper::Method;
use prfdata_registry::RegistryError;
use prfmon::perfstats::{stat_write, PerfStatsError, StatWrite};

use super::routes::{blocking, not_allowed, param, text, Answer};
use super::watches::PeerWatchError;
use super::Shared;
use prfmon::perfstats::keys::{needs_view, query_text, stat_text, view_with, QueryError};

/// A parsed `/reg` query.
struct RegQuery {
    key: String,
    value: Option<String>,
    recurse: bool,
    separator: Option<String>,
    type_numbers: bool,
}

fn parse(query: &str) -> Result<RegQuery, String> {
    let get = |k: &str| param(query, k);
    let key = get("key")?.ok_or("key= is required\n")?;
    let value = match (get("v")?, get("ve")?) {
        (Some(v), _) => Some(v),
        (None, Some(_)) => Some(String::new()),
        (None, None) => None,
    };
    Ok(RegQuery {
        key,
        value,
        recurse: get("s")?.is_some(),
        separator: get("se")?,
        type_numbers: get("z")?.is_some(),
    })
}

/// Answers `/reg` for `peer`.
pub async fn answer(shared: &Arc<Shared>, peer: IpAddr, method: &Method, query: &str) -> Answer {
    let q = match parse(query) {
        Ok(q) => q,
        Err(message) => return text(400, message),
    };
    match stat_write(&q.key, q.value.as_deref()) {
        Some(_) if method != Method::POST => not_allowed("POST"),
        Some(_) if !shared.allow_watch => error(&PeerWatchError::ReadOnly),
        Some(write) => blocking(shared, move |s| watch(s, peer, write, &q)).await,
        None if method == Method::GET || method == Method::HEAD => {
            blocking(shared, move |s| read(s, peer, &q)).await
        }
        None => not_allowed("GET, HEAD"),
    }
}

fn error(e: &PeerWatchError) -> Answer {
    text(e.status(), format!("ERROR: {e}\n"))
}

/// `StartStat` or `StopStat` of a stat, for `peer`.
fn watch(shared: &Shared, peer: IpAddr, write: StatWrite, q: &RegQuery) -> Answer {
    let stat = q.value.as_deref().unwrap_or_default();
    let view = view_with(&mut shared.session());
    let target = match view.watch_target(stat) {
        Ok(t) => t,
        Err(PerfStatsError::NoSuchStat { .. }) => {
            return text(404, format!("{}\n", prfdata_registry::reg_cli::NOT_FOUND))
        }
        Err(e) => return text(400, format!("ERROR: {e}\n")),
    };
    let mut watches = shared
        .watches
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let (result, op) = match write {
        StatWrite::Start => (watches.start(peer, &target.app, target.set), "StartStat"),
        StatWrite::Stop => (
            watches.stop(peer, &target.app, target.set, stat),
            "StopStat",
        ),
    };
    match result {
        Ok(()) => text(200, format!("\n{}", stat_text(op, stat, target.value))),
        Err(e) => error(&e),
    }
}

/// A read: what `reg query` prints; a `StatData` read renews the peer's watches of the stat.
fn read(shared: &Shared, peer: IpAddr, q: &RegQuery) -> Answer {
    let options = prfdata_registry::reg_cli::QueryOptions {
        value: q.value.as_deref(),
        recurse: q.recurse,
        separator: q.separator.as_deref().unwrap_or("\\0"),
        type_numbers: q.type_numbers,
    };
    // The PerfStats keys are computed from a collection: a remote StatData reads this
    // machine's apps.
    let view = needs_view(&q.key).then(|| view_with(&mut shared.session()));
    if let (Some(view), Some(stat)) = (&view, q.value.as_deref()) {
        if let Ok(target) = view.watch_target(stat) {
            shared
                .watches
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .renew(peer, &target.app, target.set);
        }
    }
    match query_text(&shared.registry, &q.key, &options, view.as_ref()) {
        Ok(out) => text(200, out),
        Err(e) => query_error(&q.key, &e),
    }
}

/// A failed read: not found (404), a bad key or stat (400, the message names only the key),
/// or the registry cannot be read (500; the reason, with its file, is logged here).
fn query_error(key: &str, e: &QueryError) -> Answer {
    match e {
        QueryError::Registry(
            RegistryError::KeyNotFound(_) | RegistryError::ValueNotFound { .. },
        ) => text(404, format!("{}\n", prfdata_registry::reg_cli::NOT_FOUND)),
        QueryError::Registry(e @ RegistryError::BadKeyPath { .. }) => {
            text(400, format!("ERROR: {e}\n"))
        }
        QueryError::View(message) => text(400, format!("ERROR: {message}\n")),
        QueryError::Registry(e) => {
            log::warn!("remote reg query {key}: {e}");
            text(
                500,
                "ERROR: the registry cannot be read here; the server's log has the reason\n",
            )
        }
    }
}

//! `reg query` on the PerfStats keys (KB Q174631, [`super`]), for `prfmon reg query` and
//! `prfmon serve`'s `GET /reg` alike ([`query_text`]): the `Enum` view under `HKLM\System\CurrentControlSet\Control\PerfStats` and `HKEY_DYN_DATA\PerfStats`
//! (`StartStat`, `StatData`, `StopStat`), computed from a collection made for the query.

use prfdata_registry::reg_cli::{self, QueryOptions};
use prfdata_registry::{normalize_key, FileRegistry, Registry, RegistryError};
use prfdata_untrusted::text::{escape_field, Style};

use super::{dyn_data_path, PerfStats, PerfStatsError};
use crate::session::Session;

/// The PerfStats key below `HKLM\System\CurrentControlSet\Control`.
const PERFSTATS_UNDER_HKLM: &str = r"HKLM\System\CurrentControlSet\Control\PerfStats";

/// Whether `key` is the PerfStats key under HKLM or below it (served by the view).
pub fn is_enum_path(key: &str) -> bool {
    normalize_key(key).is_ok_and(|k| {
        let k = k.to_ascii_lowercase();
        let base = PERFSTATS_UNDER_HKLM.to_ascii_lowercase();
        k == base || k.starts_with(&format!("{base}\\"))
    })
}

/// Whether `key` is served by the PerfStats view (the `Enum` keys or `HKEY_DYN_DATA`).
pub fn needs_view(key: &str) -> bool {
    is_enum_path(key) || dyn_data_path(key).is_some()
}

/// One collection (`Global`, then the costly objects) and the names, as a PerfStats view.
pub fn view(registry: &FileRegistry) -> Result<PerfStats, String> {
    let mut session = Session::local(registry.clone(), Default::default(), "009")
        .map_err(|e| format!("cannot collect the PerfStats view: {e}"))?;
    Ok(view_with(&mut session))
}

/// [`view`] through an open session (`serve` answering a remote `reg query`): its facts are
/// followed after the `Global` collection, so that apps installed since are seen.
pub fn view_with(session: &mut Session) -> PerfStats {
    let mut snapshot = match session.snapshot("Global") {
        Ok((snapshot, contents)) => {
            session.follow(contents);
            snapshot
        }
        Err(_) => Default::default(),
    };
    let costly = session
        .snapshot("Costly")
        .map(|(s, _)| s)
        .unwrap_or_default();
    crate::merge::merge_missing(&mut snapshot, costly);
    let machine = session.machine();
    PerfStats::with_factors(
        &snapshot,
        &machine.names,
        machine.apps.clone(),
        &machine.factors,
    )
}

/// The three operations under `HKEY_DYN_DATA\PerfStats`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Start,
    Data,
    Stop,
}

const OPS: [(Op, &str); 3] = [
    (Op::Start, "StartStat"),
    (Op::Data, "StatData"),
    (Op::Stop, "StopStat"),
];

/// `reg query HKEY_DYN_DATA\<rest> [/v NAME] [/s]`.
pub fn dyn_text(
    view: &PerfStats,
    rest: &str,
    value: Option<&str>,
    recursive: bool,
) -> Result<String, QueryError> {
    let parts: Vec<&str> = rest.split('\\').filter(|p| !p.is_empty()).collect();
    let not_found = || RegistryError::KeyNotFound(format!(r"HKEY_DYN_DATA\{rest}"));
    let op = match parts.as_slice() {
        [] => None,
        [p] if p.eq_ignore_ascii_case("PerfStats") => None,
        [p, sub] if p.eq_ignore_ascii_case("PerfStats") => Some(
            OPS.iter()
                .find(|(_, n)| n.eq_ignore_ascii_case(sub))
                .ok_or_else(not_found)?
                .0,
        ),
        _ => return Err(not_found().into()),
    };
    let root_only = parts.is_empty();
    let key_of = |name: &str| format!(r"HKEY_DYN_DATA\PerfStats\{name}");
    let mut text = String::from("\n");
    match (op, value) {
        (Some(op), Some(stat)) => {
            let name = OPS.iter().find(|(o, _)| *o == op).map_or("", |(_, n)| n);
            let result = match op {
                Op::Start => view.start_stat(stat),
                Op::Data => view.stat_data(stat),
                Op::Stop => view.stop_stat(stat),
            };
            let v = match result {
                Ok(v) => v,
                Err(PerfStatsError::NoSuchStat { .. }) => {
                    return Err(RegistryError::ValueNotFound {
                        key: key_of(name),
                        name: stat.to_string(),
                    }
                    .into())
                }
                Err(e) => return Err(QueryError::View(e.to_string())),
            };
            text.push_str(&stat_text(name, stat, v));
        }
        (None, Some(_)) => return Err(not_found().into()),
        (op, None) => {
            if root_only {
                text.push_str("HKEY_DYN_DATA\\PerfStats\n");
            } else if let Some(op) = op {
                // Listing StartStat or StopStat would start or stop every stat: only StatData
                // lists its values; the others need /v Object\Counter.
                let name = OPS.iter().find(|(o, _)| *o == op).map_or("", |(_, n)| n);
                text.push_str(&data_listing(view, op, name, &key_of(name)));
            } else {
                for (op, name) in OPS {
                    if recursive {
                        text.push_str(&data_listing(view, op, name, &key_of(name)));
                    } else {
                        text.push_str(&key_of(name));
                        text.push('\n');
                    }
                }
            }
        }
    }
    Ok(text)
}

/// The answer to a query of `value` under `HKEY_DYN_DATA\PerfStats\<op>`, as reg.exe prints a
/// REG_BINARY value (the value after a newline, as the rest of `reg query`'s output).
pub fn stat_text(op: &str, stat: &str, v: u32) -> String {
    format!(
        "HKEY_DYN_DATA\\PerfStats\\{op}\n{}\n\n",
        binary_line(stat, v)
    )
}

/// A key of the dynamic view and, for `StatData`, every stat's value.
fn data_listing(view: &PerfStats, op: Op, _name: &str, key: &str) -> String {
    let mut text = format!("{key}\n");
    if op == Op::Data {
        for o in view.objects() {
            for c in &o.counters {
                if let Ok(v) = c.value {
                    text.push_str(&binary_line(&format!(r"{}\{}", o.key, c.key), v));
                    text.push('\n');
                }
            }
        }
    }
    text.push('\n');
    text
}

/// reg.exe's line for a REG_BINARY value: the bytes in hex, in memory order (a DWORD's
/// little-endian bytes, as `RegQueryValueEx` fills the caller's buffer).
fn binary_line(name: &str, v: u32) -> String {
    let hex: String = v.to_le_bytes().iter().map(|b| format!("{b:02X}")).collect();
    format!(
        "    {}    REG_BINARY    {hex}",
        escape_field(name, Style::Terminal)
    )
}

/// What `reg query KEY` prints, read from `registry`: the one read path of `reg query`, which
/// `prfmon serve` answers remote readers with too (`GET /reg`), so that a key readable here is
/// readable from another machine the same way. The PerfStats keys are read from `view`.
///
/// # Errors
///
/// The key or value is not there, or `view` is needed and not given or cannot answer.
pub fn query_text<R: Registry + ?Sized>(
    registry: &R,
    key: &str,
    options: &QueryOptions<'_>,
    view: Option<&PerfStats>,
) -> Result<String, QueryError> {
    let perfstats = || QueryError::View(format!("{key} needs a PerfStats view (a collection)"));
    if let Some(rest) = dyn_data_path(key) {
        let view = view.ok_or_else(perfstats)?;
        return dyn_text(view, &rest, options.value, options.recurse);
    }
    if is_enum_path(key) {
        let view = view.ok_or_else(perfstats)?;
        return Ok(reg_cli::query_with(&view.enum_hive(), key, options)?);
    }
    Ok(reg_cli::query_with(&registry.snapshot()?, key, options)?)
}

/// Why [`query_text`] gave no text.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The key or value is not there, or the registry could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The PerfStats view could not answer (a stat that cannot be watched or read).
    #[error("{0}")]
    View(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dyn_paths_and_binary_lines() {
        assert_eq!(
            dyn_data_path(r"HKEY_DYN_DATA\PerfStats\StatData").as_deref(),
            Some(r"PerfStats\StatData")
        );
        assert_eq!(dyn_data_path(r"hkdd").as_deref(), Some(""));
        assert_eq!(dyn_data_path(r"HKLM\PerfStats"), None);
        assert!(is_enum_path(
            r"HKEY_LOCAL_MACHINE\System\CurrentControlSet\Control\PerfStats\Enum"
        ));
        assert!(!is_enum_path(
            r"HKLM\System\CurrentControlSet\Control\PerfStatsX"
        ));
        assert_eq!(
            binary_line(r"A\B", 100),
            r"    A\B    REG_BINARY    64000000"
        );
    }
}

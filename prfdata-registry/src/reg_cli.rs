//! `reg query` output as Windows' reg.exe prints it, so a person or a test can look inside the
//! registry the way they would on Windows:
//!
//! ```text
//!
//! HKEY_LOCAL_MACHINE\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib
//!     Last Counter    REG_DWORD    0x738
//!     Last Help    REG_DWORD    0x739
//!     Base Index    REG_DWORD    0x737
//!
//! HKEY_LOCAL_MACHINE\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib\009
//! ```
//!
//! The shape, as reg.exe has it (and as Wine's conformance tests, run against Windows, pin it):
//!
//! - Always a blank line first.
//! - `reg query KEY`: the full key path and one line per value (`REG_DWORD` in hex,
//!   `REG_MULTI_SZ` entries joined with `\0`) and a blank line, if the key has values; then
//!   the full path of each subkey. A key without values prints no header.
//! - `reg query KEY /s`: the key as above, then every key below it in depth-first order, each as
//!   its path, its values and a blank line (with or without values).
//! - `reg query KEY /v NAME`: the path, the value's line and a blank line; with `/s`, that for
//!   every key below that has the value, then `End of search: N match(es) found.`.
//! - `reg query KEY /ve` on a key without a default value: the path and
//!   `(Default)    REG_SZ    (value not set)`.
//! - `/se C` joins `REG_MULTI_SZ` entries with `C` instead of `\0`; `/z` adds the type's number
//!   after its name (`REG_DWORD (4)`).

use super::error::RegistryError;
use super::hive::{display_key, normalize_key, Hive};
use super::value::Value;
use prfdata_untrusted::text::{escape_field, Style};

/// reg.exe's message for a key or value that does not exist.
pub const NOT_FOUND: &str =
    "ERROR: The system was unable to find the specified registry key or value.";
/// reg.exe's message after a successful change.
pub const SUCCESS: &str = "The operation completed successfully.";
/// What reg.exe shows for a default value that is not set (`/ve`).
pub const VALUE_NOT_SET: &str = "(value not set)";

/// How [`query_with`] prints: `reg query`'s switches.
///
/// # Examples
///
/// ```
/// use prfdata_registry::reg_cli::QueryOptions;
/// let opts = QueryOptions { recurse: true, ..Default::default() };
/// assert_eq!(opts.separator, "\\0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryOptions<'a> {
    /// `/v NAME`, or `/ve` as `Some("")`: only this value. `None`: every value.
    pub value: Option<&'a str>,
    /// `/s`: every key below too.
    pub recurse: bool,
    /// `/se SEP`: what joins `REG_MULTI_SZ` entries (default the two characters `\0`).
    pub separator: &'a str,
    /// `/z`: the type's number after its name.
    pub type_numbers: bool,
}

impl Default for QueryOptions<'_> {
    fn default() -> Self {
        Self {
            value: None,
            recurse: false,
            separator: "\\0",
            type_numbers: false,
        }
    }
}

/// One value line: four spaces, the name (`(Default)` if empty), the type, the data, separated
/// by four spaces.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{reg_cli, Value};
/// assert_eq!(reg_cli::value_line("First Counter", &Value::Dword(1848)),
///            "    First Counter    REG_DWORD    0x738");
/// ```
pub fn value_line(name: &str, value: &Value) -> String {
    line_with(name, value, &QueryOptions::default())
}

fn line_with(name: &str, value: &Value, opts: &QueryOptions<'_>) -> String {
    let name = if name.is_empty() { "(Default)" } else { name };
    let ty = value.value_type();
    let ty = if opts.type_numbers {
        format!("{ty} ({})", ty.code())
    } else {
        ty.to_string()
    };
    let data = match value {
        Value::MultiSz(entries) => entries
            .iter()
            .map(|e| shown(e))
            .collect::<Vec<_>>()
            .join(opts.separator),
        other => shown(&other.display_data()).into_owned(),
    };
    format!("    {}    {ty}    {data}", shown(name))
}

/// A key path, value name or string as a line shows it: every control character escaped,
/// newline and tab too, so that a name (a counter's, an instance's, written by whoever may
/// write the registry) never starts a line of its own.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    escape_field(text, Style::Terminal)
}

/// A key's path as [`display_key`] writes it, escaped as [`shown`] does.
fn shown_key(key: &str) -> String {
    shown(&display_key(key)).into_owned()
}

/// The text `reg query KEY [/v NAME]` prints (see [`query_with`] for every switch). A missing
/// key or value is [`RegistryError::KeyNotFound`] / [`RegistryError::ValueNotFound`]; print
/// [`NOT_FOUND`] for either, as reg.exe does.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{paths, perflib, reg_cli};
///
/// let hive = perflib::new_hive();
/// let out = reg_cli::query(&hive, paths::PERFLIB, Some("Last Counter"))?;
/// assert_eq!(out, "\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Perflib\n    Last Counter    REG_DWORD    0x736\n\n");
/// assert!(reg_cli::query(&hive, r"HKLM\Nope", None).is_err());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn query(hive: &Hive, key: &str, value: Option<&str>) -> Result<String, RegistryError> {
    query_with(
        hive,
        key,
        &QueryOptions {
            value,
            ..QueryOptions::default()
        },
    )
}

/// The text `reg query KEY [/v NAME | /ve] [/s] [/se SEP] [/z]` prints, in reg.exe's shape
/// (see the [module docs](self)).
///
/// # Errors
///
/// [`RegistryError::KeyNotFound`] for a missing key, [`RegistryError::ValueNotFound`] for a
/// missing named value without `/s` (reg.exe prints [`NOT_FOUND`] for either).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{reg_cli::{self, QueryOptions}, Hive, Value};
///
/// let mut hive = Hive::new();
/// hive.set_value(r"HKLM\Test", "A", Value::Dword(1))?;
/// hive.set_value(r"HKLM\Test\Sub", "B", Value::MultiSz(vec!["x".into(), "y".into()]))?;
/// let opts = QueryOptions { recurse: true, separator: ",", ..Default::default() };
/// assert_eq!(reg_cli::query_with(&hive, r"HKLM\Test", &opts)?,
///     "\nHKEY_LOCAL_MACHINE\\Test\n    A    REG_DWORD    0x1\n\n\
///      HKEY_LOCAL_MACHINE\\Test\\Sub\n    B    REG_MULTI_SZ    x,y\n\n");
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn query_with(
    hive: &Hive,
    key: &str,
    opts: &QueryOptions<'_>,
) -> Result<String, RegistryError> {
    let norm = normalize_key(key)?;
    let stored = hive
        .key_path(&norm)
        .ok_or_else(|| RegistryError::KeyNotFound(norm.clone()))?;
    let mut out = String::from("\n");
    match opts.value {
        None => query_all(hive, &stored, opts, false, &mut out)?,
        Some(wanted) if opts.recurse => {
            let mut found = 0usize;
            query_value_below(hive, &stored, wanted, opts, &mut found, &mut out)?;
            out.push_str(&format!("End of search: {found} match(es) found.\n"));
        }
        Some(wanted) => {
            let values = hive.values(&stored)?.unwrap_or_default();
            match values.iter().find(|(n, _)| n.eq_ignore_ascii_case(wanted)) {
                Some((name, v)) => {
                    out.push_str(&format!(
                        "{}\n{}\n\n",
                        shown_key(&stored),
                        line_with(name, v, opts)
                    ));
                }
                None if wanted.is_empty() => {
                    out.push_str(&format!(
                        "{}\n    (Default)    REG_SZ    {VALUE_NOT_SET}\n",
                        shown_key(&stored)
                    ));
                }
                None => {
                    return Err(RegistryError::ValueNotFound {
                        key: stored.clone(),
                        name: wanted.to_owned(),
                    })
                }
            }
        }
    }
    Ok(out)
}

/// One key of `reg query` without `/v`: header and values (if any, or always when below the
/// queried key), then the subkeys' paths or, with `/s`, the subkeys themselves.
fn query_all(
    hive: &Hive,
    key: &str,
    opts: &QueryOptions<'_>,
    below: bool,
    out: &mut String,
) -> Result<(), RegistryError> {
    let values = hive.values(key)?.unwrap_or_default();
    if !values.is_empty() || below {
        out.push_str(&shown_key(key));
        out.push('\n');
    }
    for (name, v) in values {
        out.push_str(&line_with(name, v, opts));
        out.push('\n');
    }
    if !values.is_empty() || below {
        out.push('\n');
    }
    for sub in hive.subkeys(key)? {
        if opts.recurse {
            query_all(hive, &sub, opts, true, out)?;
        } else {
            out.push_str(&shown_key(&sub));
            out.push('\n');
        }
    }
    Ok(())
}

/// `reg query KEY /v NAME /s`: every key at or below `key` that has the value.
fn query_value_below(
    hive: &Hive,
    key: &str,
    wanted: &str,
    opts: &QueryOptions<'_>,
    found: &mut usize,
    out: &mut String,
) -> Result<(), RegistryError> {
    let values = hive.values(key)?.unwrap_or_default();
    if let Some((name, v)) = values.iter().find(|(n, _)| n.eq_ignore_ascii_case(wanted)) {
        out.push_str(&format!(
            "{}\n{}\n\n",
            shown_key(key),
            line_with(name, v, opts)
        ));
        *found += 1;
    }
    for sub in hive.subkeys(key)? {
        query_value_below(hive, &sub, wanted, opts, found, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{paths, perflib};

    #[test]
    fn full_query_lists_values_then_subkeys() {
        let hive = perflib::new_hive();
        let out = query(
            &hive,
            r"hklm\software\microsoft\windows nt\currentversion\perflib",
            None,
        )
        .unwrap();
        let long = r"HKEY_LOCAL_MACHINE\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib";
        assert_eq!(
            out,
            format!(
                "\n{long}\n    Last Counter    REG_DWORD    0x736\n    Last Help    REG_DWORD    0x737\n    Base Index    REG_DWORD    0x737\n\n{long}\\009\n"
            )
        );
        let lang = query(&hive, &paths::perflib_language("009"), None).unwrap();
        assert!(
            lang.contains("    Counter    REG_MULTI_SZ    \n"),
            "{lang:?}"
        );
    }
}

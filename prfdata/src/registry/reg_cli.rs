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
//! A blank line, the full key path, one line per value (`REG_DWORD` in hex, `REG_MULTI_SZ`
//! entries joined with `\0`), a blank line, then the full path of each subkey.

use super::error::RegistryError;
use super::hive::{display_key, normalize_key, Hive};
use super::value::Value;

/// reg.exe's message for a key or value that does not exist.
pub const NOT_FOUND: &str =
    "ERROR: The system was unable to find the specified registry key or value.";
/// reg.exe's message after a successful change.
pub const SUCCESS: &str = "The operation completed successfully.";

/// One value line: four spaces, the name (`(Default)` if empty), the type, the data, separated
/// by four spaces.
///
/// # Examples
///
/// ```
/// use prfdata::registry::{reg_cli, Value};
/// assert_eq!(reg_cli::value_line("First Counter", &Value::Dword(1848)),
///            "    First Counter    REG_DWORD    0x738");
/// ```
pub fn value_line(name: &str, value: &Value) -> String {
    let name = if name.is_empty() { "(Default)" } else { name };
    format!(
        "    {name}    {}    {}",
        value.value_type(),
        value.display_data()
    )
}

/// The text `reg query KEY [/v NAME]` prints. A missing key or value is
/// [`RegistryError::KeyNotFound`] / [`RegistryError::ValueNotFound`]; print [`NOT_FOUND`]
/// for either, as reg.exe does.
///
/// # Examples
///
/// ```
/// use prfdata::registry::{paths, perflib, reg_cli};
///
/// let hive = perflib::new_hive();
/// let out = reg_cli::query(&hive, paths::PERFLIB, Some("Last Counter"))?;
/// assert_eq!(out, "\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Perflib\n    Last Counter    REG_DWORD    0x736\n\n");
/// assert!(reg_cli::query(&hive, r"HKLM\Nope", None).is_err());
/// # Ok::<(), prfdata::registry::RegistryError>(())
/// ```
pub fn query(hive: &Hive, key: &str, value: Option<&str>) -> Result<String, RegistryError> {
    let norm = normalize_key(key)?;
    let stored = hive
        .key_path(&norm)
        .ok_or_else(|| RegistryError::KeyNotFound(norm.clone()))?;
    let values = hive.values(&stored)?.unwrap_or_default();
    let mut out = format!("\n{}\n", display_key(&stored));
    if let Some(wanted) = value {
        let v = hive
            .value(&stored, wanted)?
            .ok_or_else(|| RegistryError::ValueNotFound {
                key: stored.clone(),
                name: wanted.to_owned(),
            })?;
        let name = values
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(wanted))
            .map_or(wanted, |(n, _)| n.as_str());
        out.push_str(&value_line(name, v));
        out.push_str("\n\n");
        return Ok(out);
    }
    for (name, v) in values {
        out.push_str(&value_line(name, v));
        out.push('\n');
    }
    let subkeys = hive.subkeys(&stored)?;
    if !values.is_empty() || !subkeys.is_empty() {
        out.push('\n');
    }
    for sub in subkeys {
        out.push_str(&display_key(&sub));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{paths, perflib};

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

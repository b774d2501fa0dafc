//! The Perflib key: `Base Index`, `Last Counter`, `Last Help`, and the per-language `Counter`
//! and `Help` text tables.
//!
//! The MSJ article (Richter, August 1998): "The Base Index value (1847) indicates the highest number that Microsoft has
//! reserved for the system's own objects and counters. Objects and counters that you add must
//! be above this number." This registry holds no system counters, so a new one starts at
//! Last Counter 1846, Last Help 1847 and the first driver loaded gets 1848 / 1849.
//!
//! A text table is a REG_MULTI_SZ of `index\0text\0` pairs in ascending index order:
//!
//! ```text
//! Counter: "1848\0Device Name\0" "1850\0Counter A\0" ... "\0"
//! Help:    "1849\0Displays performance statistics on Device Name\0" ... "\0"
//! ```

use std::collections::BTreeMap;

use super::error::{ensure, wrong_type, RegistryError};
use super::hive::Hive;
use super::paths::{self, PERFLIB};
use super::store::Registry;
use super::value::{Value, ValueType};

/// `Base Index` of a new registry (the MSJ article).
pub const BASE_INDEX: u32 = 1847;
/// `Last Counter` of a new registry: no counter name above the reserved range yet.
pub const INITIAL_LAST_COUNTER: u32 = BASE_INDEX - 1;
/// `Last Help` of a new registry.
pub const INITIAL_LAST_HELP: u32 = BASE_INDEX;
/// The language every registry has: US English.
pub const DEFAULT_LANGUAGE: &str = "009";

/// Value name `Base Index`.
pub const BASE_INDEX_VALUE: &str = "Base Index";
/// Value name `Last Counter` (Perflib and a service's Performance key).
pub const LAST_COUNTER: &str = "Last Counter";
/// Value name `Last Help` (Perflib and a service's Performance key).
pub const LAST_HELP: &str = "Last Help";
/// Value name of a language's counter-name table.
pub const COUNTER: &str = "Counter";
/// Value name of a language's help-text table.
pub const HELP: &str = "Help";

/// The state of a new registry: Perflib with `Last Counter` 1846, `Last Help` 1847,
/// `Base Index` 1847 and an empty `009` language, and an empty `Services` key.
///
/// # Examples
///
/// ```
/// use prfdata_registry::perflib;
/// let hive = perflib::new_hive();
/// assert_eq!(perflib::last_counter_help(&hive)?, (1846, 1847));
/// assert!(perflib::counter_text(&hive, "009")?.counter.is_empty());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn new_hive() -> Hive {
    let mut hive = Hive::new();
    let set = |hive: &mut Hive, key: &str, name: &str, value| {
        // The paths are constants known to be valid.
        let _ = hive.set_value(key, name, value);
    };
    set(
        &mut hive,
        PERFLIB,
        LAST_COUNTER,
        Value::Dword(INITIAL_LAST_COUNTER),
    );
    set(
        &mut hive,
        PERFLIB,
        LAST_HELP,
        Value::Dword(INITIAL_LAST_HELP),
    );
    set(
        &mut hive,
        PERFLIB,
        BASE_INDEX_VALUE,
        Value::Dword(BASE_INDEX),
    );
    let lang = paths::perflib_language(DEFAULT_LANGUAGE);
    set(&mut hive, &lang, COUNTER, Value::MultiSz(Vec::new()));
    set(&mut hive, &lang, HELP, Value::MultiSz(Vec::new()));
    // Every Windows registry has the Services key; drivers come and go beneath it.
    let _ = hive.create_key(paths::SERVICES);
    hive
}

/// Reads a REG_DWORD that must exist.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, paths};
/// let hive = perflib::new_hive();
/// assert_eq!(perflib::read_dword(&hive, paths::PERFLIB, "Base Index")?, 1847);
/// assert!(perflib::read_dword(&hive, paths::PERFLIB, "Nope").is_err());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn read_dword(hive: &Hive, key: &str, name: &str) -> Result<u32, RegistryError> {
    read_optional_dword(hive, key, name)?.ok_or_else(|| RegistryError::ValueNotFound {
        key: key.to_owned(),
        name: name.to_owned(),
    })
}

/// Reads a REG_DWORD that may be absent; present with another type is an error.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, paths};
/// let hive = perflib::new_hive();
/// assert_eq!(perflib::read_optional_dword(&hive, paths::PERFLIB, "Nope")?, None);
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn read_optional_dword(
    hive: &Hive,
    key: &str,
    name: &str,
) -> Result<Option<u32>, RegistryError> {
    match hive.value(key, name)? {
        None => Ok(None),
        Some(Value::Dword(n)) => Ok(Some(*n)),
        Some(other) => Err(wrong_type(key, name, ValueType::Dword, other)),
    }
}

/// Perflib's `Last Counter` and `Last Help`.
///
/// # Examples
///
/// ```
/// let hive = prfdata_registry::perflib::new_hive();
/// assert_eq!(prfdata_registry::perflib::last_counter_help(&hive)?, (1846, 1847));
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn last_counter_help(hive: &Hive) -> Result<(u32, u32), RegistryError> {
    Ok((
        read_dword(hive, PERFLIB, LAST_COUNTER)?,
        read_dword(hive, PERFLIB, LAST_HELP)?,
    ))
}

/// Perflib's `Base Index` (1847 if absent).
///
/// # Examples
///
/// ```
/// let hive = prfdata_registry::perflib::new_hive();
/// assert_eq!(prfdata_registry::perflib::base_index(&hive)?, 1847);
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn base_index(hive: &Hive) -> Result<u32, RegistryError> {
    Ok(read_optional_dword(hive, PERFLIB, BASE_INDEX_VALUE)?.unwrap_or(BASE_INDEX))
}

/// One language's text: counter names and help texts by index.
///
/// # Examples
///
/// ```
/// use prfdata_registry::CounterText;
/// let text = CounterText::default();
/// assert!(text.counter.is_empty() && text.help.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterText {
    /// `Counter`: even indexes → names.
    pub counter: BTreeMap<u32, String>,
    /// `Help`: odd indexes → explain texts.
    pub help: BTreeMap<u32, String>,
}

/// Parses a text table (`index\0text\0` pairs) into an index → text map.
///
/// # Examples
///
/// ```
/// use prfdata_registry::perflib;
///
/// let entries = vec!["1848".to_string(), "Device Name".to_string()];
/// let map = perflib::parse_text_table(&entries, "Perflib\\009", "Counter")?;
/// assert_eq!(map[&1848], "Device Name");
/// assert!(perflib::parse_text_table(&["x".to_string()], "k", "Counter").is_err());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn parse_text_table(
    entries: &[String],
    key: &str,
    name: &str,
) -> Result<BTreeMap<u32, String>, RegistryError> {
    let bad = |entry: usize, reason: String| RegistryError::BadTextTable {
        key: key.to_owned(),
        name: name.to_owned(),
        entry,
        reason,
    };
    if !entries.len().is_multiple_of(2) {
        return Err(bad(
            entries.len() - 1,
            "an index without text (odd number of entries)".into(),
        ));
    }
    let mut map = BTreeMap::new();
    for (pair, chunk) in entries.chunks_exact(2).enumerate() {
        let index: u32 = chunk[0]
            .trim()
            .parse()
            .map_err(|_| bad(pair * 2, format!("`{}` is not an index", chunk[0])))?;
        ensure(map.insert(index, chunk[1].clone()).is_none(), || {
            bad(pair * 2, format!("index {index} appears twice"))
        })?;
    }
    Ok(map)
}

/// Renders an index → text map as a text table, ascending by index.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use prfdata_registry::perflib;
///
/// let map = BTreeMap::from([(1850, "B".to_string()), (1848, "A".to_string())]);
/// assert_eq!(perflib::format_text_table(&map), ["1848", "A", "1850", "B"]);
/// ```
pub fn format_text_table(map: &BTreeMap<u32, String>) -> Vec<String> {
    map.iter()
        .flat_map(|(i, t)| [i.to_string(), t.clone()])
        .collect()
}

/// Reads one text table of a language (empty if the value is absent).
///
/// # Examples
///
/// ```
/// use prfdata_registry::perflib;
/// let hive = perflib::new_hive();
/// assert!(perflib::read_text_table(&hive, "009", "Help")?.is_empty());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn read_text_table(
    hive: &Hive,
    lang: &str,
    name: &str,
) -> Result<BTreeMap<u32, String>, RegistryError> {
    let key = paths::perflib_language(lang);
    match read_optional_multi_sz(hive, &key, name)? {
        None => Ok(BTreeMap::new()),
        Some(entries) => parse_text_table(entries, &key, name),
    }
}

/// The entries of a REG_MULTI_SZ that may be absent; present with another type is an error.
pub(crate) fn read_optional_multi_sz<'h>(
    hive: &'h Hive,
    key: &str,
    name: &str,
) -> Result<Option<&'h [String]>, RegistryError> {
    match hive.value(key, name)? {
        None => Ok(None),
        Some(Value::MultiSz(entries)) => Ok(Some(entries)),
        Some(other) => Err(wrong_type(key, name, ValueType::MultiSz, other)),
    }
}

/// A language's `Counter` and `Help` tables as index → text maps.
///
/// # Examples
///
/// ```
/// use prfdata_registry::perflib;
/// let text = perflib::counter_text(&perflib::new_hive(), "009")?;
/// assert!(text.counter.is_empty());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn counter_text(hive: &Hive, lang: &str) -> Result<CounterText, RegistryError> {
    Ok(CounterText {
        counter: read_text_table(hive, lang, COUNTER)?,
        help: read_text_table(hive, lang, HELP)?,
    })
}

/// [`counter_text`] read from a registry's current state.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, FileRegistry};
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// assert!(perflib::read_counter_text(&reg, "009")?.help.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_counter_text<R: Registry + ?Sized>(
    registry: &R,
    lang: &str,
) -> Result<CounterText, RegistryError> {
    counter_text(&registry.snapshot()?, lang)
}

/// The languages present under Perflib: subkeys holding a `Counter` or `Help` value, by name.
///
/// # Examples
///
/// ```
/// use prfdata_registry::perflib;
/// assert_eq!(perflib::languages(&perflib::new_hive())?, ["009"]);
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn languages(hive: &Hive) -> Result<Vec<String>, RegistryError> {
    let mut out = Vec::new();
    for sub in hive.subkeys(PERFLIB)? {
        if hive.value(&sub, COUNTER)?.is_some() || hive.value(&sub, HELP)?.is_some() {
            if let Some((_, name)) = sub.rsplit_once('\\') {
                out.push(name.to_owned());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_index_is_an_error() {
        let e: Vec<String> = ["2", "a", "2", "b"].map(String::from).to_vec();
        assert!(parse_text_table(&e, "k", "Counter").is_err());
    }

    #[test]
    fn wrong_type_is_reported() {
        let mut hive = new_hive();
        hive.set_value(PERFLIB, LAST_COUNTER, Value::Sz("1846".into()))
            .unwrap();
        assert!(matches!(
            last_counter_help(&hive),
            Err(RegistryError::WrongType { .. })
        ));
    }
}

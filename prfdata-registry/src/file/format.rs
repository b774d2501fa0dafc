//! The store format of `registry.toml` (see the [module docs](super#on-disk-layout)): the tree
//! as TOML, and the journal sequence number it includes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::change::Change;
use crate::error::{ensure, RegistryError};
use crate::hive::{normalize_key, Hive};
use crate::paths;
use crate::value::{UnknownValueType, Value, ValueType};

/// The store format version written in `format =`. Format 2 may be extended by the journal
/// `registry.log` (the records after its `sequence`); format 1, written before there was a
/// journal, is read as sequence 0.
const FORMAT: u32 = 2;
/// The oldest store format this build reads.
const OLDEST_FORMAT: u32 = 1;

const HEADER: &str = "\
# prfdata counter-name registry (file-backed). One [[key]] per registry key, values in order.
# Changes made after this file was written are in registry.log beside it (the records after
# `sequence`), folded in here when that journal outgrows this file. Change the registry with
# `prfmon reg add` / `prfmon reg delete` / `prfmon lodctr`: they lock it and write both files
# safely. Hand edits are read, but are not locked against those tools.
";

#[derive(Serialize)]
struct FileOut<'a> {
    format: u32,
    #[serde(skip_serializing_if = "is_zero")]
    sequence: u64,
    key: Vec<KeyOut<'a>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct KeyOut<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    value: Vec<ValueOut<'a>>,
}

#[derive(Serialize)]
struct ValueOut<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
    data: DataOut<'a>,
}

/// A value's data as the store and the journal write it: a number, a string or a list.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum DataOut<'a> {
    Number(u32),
    Text(&'a str),
    List(&'a [String]),
}

impl<'a> From<&'a Value> for DataOut<'a> {
    fn from(value: &'a Value) -> Self {
        match value {
            Value::Sz(s) | Value::ExpandSz(s) => DataOut::Text(s),
            Value::Dword(n) => DataOut::Number(*n),
            Value::MultiSz(list) => DataOut::List(list),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    format: toml::Spanned<u32>,
    #[serde(default)]
    sequence: Option<toml::Spanned<u64>>,
    #[serde(default)]
    key: Vec<KeyIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyIn {
    path: toml::Spanned<String>,
    #[serde(default)]
    value: Vec<ValueIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ValueIn {
    name: toml::Spanned<String>,
    #[serde(rename = "type")]
    ty: toml::Spanned<String>,
    data: toml::Spanned<toml::Value>,
}

/// Renders a hive in the store format (see the module docs). Fails only if the TOML writer
/// refuses the data.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{decode_hive, encode_hive, Hive, Value};
///
/// let mut hive = Hive::new();
/// hive.set_value(r"HKLM\SYSTEM\X", "Export", Value::MultiSz(vec!["a".into()]))?;
/// let text = encode_hive(&hive)?;
/// assert!(text.contains(r"path = 'HKLM\SYSTEM\X'"));
/// assert_eq!(decode_hive(&text, "mem.toml")?, hive);
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn encode_hive(hive: &Hive) -> Result<String, RegistryError> {
    encode_store(hive, 0)
}

/// Renders a hive as a store that includes the journal up to record `sequence`.
pub(super) fn encode_store(hive: &Hive, sequence: u64) -> Result<String, RegistryError> {
    let key = hive
        .keys()
        .map(|(path, values)| KeyOut {
            path,
            value: values
                .iter()
                .map(|(name, v)| ValueOut {
                    name,
                    ty: v.value_type().name(),
                    data: DataOut::from(v),
                })
                .collect(),
        })
        .collect();
    let body = toml::to_string_pretty(&FileOut {
        format: FORMAT,
        sequence,
        key,
    })
    .map_err(|e| RegistryError::Encode {
        path: PathBuf::from(paths::STORE_FILE),
        message: e.to_string(),
    })?;
    Ok(format!("{HEADER}\n{body}"))
}

/// Parses the store format. `path` names the file in errors, which carry the line.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{decode_hive, RegistryError};
///
/// let err = decode_hive("format = 1\n[[key]]\npath = 'HKXX\\Nope'\n", "r.toml").unwrap_err();
/// assert!(matches!(err, RegistryError::Corrupt { line: Some(3), .. }), "{err}");
/// assert!(err.to_string().contains("r.toml"));
/// ```
pub fn decode_hive(text: &str, path: impl AsRef<Path>) -> Result<Hive, RegistryError> {
    decode_store(text, path.as_ref()).map(|(hive, _)| hive)
}

/// What a store's text says where: errors naming the file and the line of an offset.
struct Source<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Source<'_> {
    fn corrupt(&self, offset: usize, message: String) -> RegistryError {
        let line = self
            .text
            .get(..offset)
            .map_or(0, |t| t.bytes().filter(|&b| b == b'\n').count())
            + 1;
        RegistryError::Corrupt {
            path: self.path.to_path_buf(),
            line: Some(line),
            message,
        }
    }
}

/// Parses the store format: the tree and the last journal record it includes.
pub(super) fn decode_store(text: &str, path: &Path) -> Result<(Hive, u64), RegistryError> {
    let src = Source { text, path };
    let file: FileIn = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_owned();
        match e.span() {
            Some(span) => src.corrupt(span.start, message),
            None => RegistryError::Corrupt {
                path: path.to_path_buf(),
                line: None,
                message,
            },
        }
    })?;
    let format = *file.format.get_ref();
    if format > FORMAT {
        return Err(RegistryError::NewerFormat {
            path: path.to_path_buf(),
            format,
            reads: FORMAT,
        });
    }
    if format < OLDEST_FORMAT {
        return Err(src.corrupt(
            file.format.span().start,
            format!("unknown format {format} (this build reads {OLDEST_FORMAT} to {FORMAT})"),
        ));
    }
    let mut hive = Hive::new();
    let mut seen = std::collections::HashSet::new();
    for key in file.key {
        let at = key.path.span().start;
        let norm = normalize_key(key.path.get_ref()).map_err(|e| src.corrupt(at, e.to_string()))?;
        ensure(norm.contains('\\'), || {
            src.corrupt(at, format!("`{norm}` is a root key"))
        })?;
        let folded: String = norm.chars().flat_map(char::to_lowercase).collect();
        ensure(seen.insert(folded), || {
            src.corrupt(at, format!("key `{norm}` appears twice"))
        })?;
        hive.create_key(&norm)
            .map_err(|e| src.corrupt(at, e.to_string()))?;
        let mut names = std::collections::HashSet::new();
        for v in key.value {
            let name = v.name.get_ref();
            let folded: String = name.chars().flat_map(char::to_lowercase).collect();
            if !names.insert(folded) {
                return Err(src.corrupt(
                    v.name.span().start,
                    format!("value `{name}` appears twice in `{norm}`"),
                ));
            }
            let value = decode_value(&src, &v)?;
            hive.set_value(&norm, name, value)
                .map_err(|e| src.corrupt(v.data.span().start, e.to_string()))?;
        }
    }
    Ok((hive, file.sequence.map_or(0, |s| *s.get_ref())))
}

/// One `[[key.value]]`'s data, of the type it names.
fn decode_value(src: &Source<'_>, v: &ValueIn) -> Result<Value, RegistryError> {
    let name = v.name.get_ref();
    let ty: ValueType =
        v.ty.get_ref()
            .parse()
            .map_err(|e: UnknownValueType| src.corrupt(v.ty.span().start, e.to_string()))?;
    let at = v.data.span().start;
    let bad = |what: &str| src.corrupt(at, format!("value `{name}` ({ty}): data must be {what}"));
    Ok(match (ty, v.data.get_ref()) {
        (ValueType::Sz, toml::Value::String(s)) => Value::Sz(s.clone()),
        (ValueType::ExpandSz, toml::Value::String(s)) => Value::ExpandSz(s.clone()),
        (ValueType::Dword, toml::Value::Integer(n)) => {
            Value::Dword(u32::try_from(*n).map_err(|_| bad("an integer from 0 to 4294967295"))?)
        }
        (ValueType::MultiSz, toml::Value::Array(items)) => Value::MultiSz(
            items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("an array of strings"))?,
        ),
        (ValueType::Sz | ValueType::ExpandSz, _) => return Err(bad("a string")),
        (ValueType::Dword, _) => return Err(bad("an integer")),
        (ValueType::MultiSz, _) => return Err(bad("an array of strings")),
    })
}

/// The most a `[[key]]` table adds to the store beyond its path: `[[key]]`, `path = `, quotes
/// and blank lines.
const KEY_OVERHEAD: u64 = 32;
/// The most a `[[key.value]]` table adds beyond its name and data: the header, `name = `,
/// `type = "REG_EXPAND_SZ"`, `data = [`, `]` and blank lines.
const VALUE_OVERHEAD: u64 = 96;
/// The most a REG_MULTI_SZ entry adds beyond its string: indent, comma and newline.
const ENTRY_OVERHEAD: u64 = 8;

/// The most the string `s` takes in the store: the TOML writer writes each byte as itself,
/// except `"`, `\` and the five control characters with short escapes (2 bytes each) and every
/// other control character (`\uXXXX`, 6 bytes); the quotes take at most 7 more (a multi-line
/// string's `"""`, newline and `"""`).
fn string_bound(s: &str) -> u64 {
    let body: u64 = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | b'\t' | b'\n' | 0x0c | b'\r' => 2,
            0..=0x1f | 0x7f => 6,
            _ => 1,
        })
        .sum();
    body + 8
}

/// The most the value `v` takes in the store, with its name `name`.
fn value_bound(name: &str, v: &Value) -> u64 {
    let data = match v {
        Value::Sz(s) | Value::ExpandSz(s) => string_bound(s),
        Value::Dword(_) => 10,
        Value::MultiSz(list) => list.iter().map(|e| string_bound(e) + ENTRY_OVERHEAD).sum(),
    };
    VALUE_OVERHEAD + string_bound(name) + data
}

/// The most the key `key` and its ancestors take in the store, were none of them there.
fn key_bound(key: &str) -> u64 {
    let depth = key.split('\\').count() as u64;
    depth * (KEY_OVERHEAD + string_bound(key))
}

/// The most `change` can make the store grow: what it adds counted in full, what it removes not
/// at all. A writer adds this up over the journal's records so that the tree never grows past
/// what [`MAX_STORE_SIZE`](super::MAX_STORE_SIZE) lets it write when it folds them in.
pub(super) fn growth_bound(change: &Change) -> u64 {
    match change {
        Change::CreateKey { key } => key_bound(key),
        Change::SetValue { key, name, value } => key_bound(key) + value_bound(name, value),
        Change::Splice { insert, .. } => insert
            .iter()
            .map(|e| string_bound(e) + ENTRY_OVERHEAD)
            .sum(),
        Change::DeleteKey { .. } | Change::DeleteValue { .. } => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perflib;

    #[test]
    fn corrupt_files_name_the_line() {
        let cases = [
            ("format = 1\n[[key]\n", 2),
            ("format = 1\n[[key]]\npath = 'HKLM\\A'\n[[key.value]]\nname = 'x'\ntype = 'REG_DWORD'\ndata = -1\n", 7),
            ("format = 1\n[[key]]\npath = 'HKLM\\A'\n[[key.value]]\nname = 'x'\ntype = 'REG_BINARY'\ndata = 1\n", 6),
            ("format = 0\n", 1),
            ("format = 2\nsequence = -1\n", 2),
            ("format = 1\n[[key]]\npath = 'HKLM\\A'\n[[key]]\npath = 'hklm\\a'\n", 5),
        ];
        for (text, line) in cases {
            match decode_hive(text, "x.toml") {
                Err(RegistryError::Corrupt { line: Some(l), .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_newer_format_is_not_called_corrupt() {
        let newer = FORMAT + 1;
        let err = decode_hive(&format!("format = {newer}\n"), "x.toml").unwrap_err();
        assert!(
            matches!(&err, RegistryError::NewerFormat { format, reads: FORMAT, .. } if *format == newer),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(!text.contains("corrupt"), "{text}");
        assert!(
            text.contains(&format!("is format {newer}, written by a newer prfdata"))
                && text.contains(&format!("reads formats up to {FORMAT}: rebuild")),
            "{text}"
        );
    }

    #[test]
    fn round_trips_every_type_and_the_sequence() {
        let mut hive = perflib::new_hive();
        let k = r"HKLM\SYSTEM\CurrentControlSet\Services\Weird 'name\Performance";
        hive.set_value(k, "Library", Value::ExpandSz("%HOME%/lib\"x\".so".into()))
            .unwrap();
        hive.set_value(k, "Open", Value::Sz(String::new())).unwrap();
        hive.set_value(k, "Export", Value::MultiSz(vec!["a\nb".into()]))
            .unwrap();
        hive.create_key(r"HKLM\Empty").unwrap();
        let text = encode_store(&hive, 41).unwrap();
        assert_eq!(
            decode_store(&text, "x".as_ref()).unwrap(),
            (hive.clone(), 41)
        );
        let text = encode_hive(&hive).unwrap();
        assert!(!text.contains("sequence ="), "{text}");
        assert_eq!(decode_store(&text, "x".as_ref()).unwrap(), (hive, 0));
    }

    proptest::proptest! {
        /// The growth bound holds for any text: what a change adds to the store is never more
        /// than `growth_bound` says.
        #[test]
        fn growth_is_bounded(
            name in "\\PC{0,12}",
            texts in proptest::collection::vec("(?s).{0,40}", 0..6),
            key in "[A-Za-z0-9 _'\"\\-]{1,20}",
        ) {
            let key = format!(r"HKLM\SOFTWARE\{}\Sub", key.trim());
            let mut hive = perflib::new_hive();
            let before = encode_hive(&hive).unwrap().len() as u64;
            hive.track();
            let listed = hive.set_value(&key, &name, Value::MultiSz(texts.clone()));
            let _ = hive.set_value(&key, "Single", Value::ExpandSz(texts.concat()));
            if listed.is_ok() {
                hive.splice_multi_sz(&key, &name, 0, 0, texts.clone()).unwrap();
            }
            let bound: u64 = hive.take_changes().iter().map(growth_bound).sum();
            let after = encode_hive(&hive).unwrap().len() as u64;
            proptest::prop_assert!(after <= before + bound, "{after} > {before} + {bound}");
        }
    }
}

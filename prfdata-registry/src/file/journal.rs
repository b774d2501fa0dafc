//! The journal format of `registry.log` (see the [module docs](super#the-journal)): a header
//! line naming the store's sequence number the journal follows, then one line per committed
//! update, each with its own checksum.
//!
//! ```text
//! prfdata-registry-log 1 base 17
//! 1c291ca3 {"seq":18,"ops":[{"op":"splice","key":"HKLM\\...\\Perflib\\009","name":"Counter",...},...]}
//! 0e5d4f10 {"seq":19,"ops":[...]}
//! ```
//!
//! A record is its CRC-32 (8 hex digits, over the JSON text), a space, one JSON object on one
//! line (JSON escapes every newline in a string), and a newline. Its `ops` are the update's
//! [`Change`]s in order; an op without `key` is in the key of the op before it.
//!
//! What a reader does with what it finds:
//!
//! | found | taken as |
//! |---|---|
//! | the last line without its newline, or failing its checksum | a record torn by a writer killed while appending it: ignored (the next writer cuts it off) |
//! | a line failing its checksum with another line after it | a damaged journal: an error naming the file and the line |
//! | a line with a good checksum that is not a record, a sequence number out of order | a damaged journal: the same error |

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::format::DataOut;
use crate::change::Change;
use crate::error::{ensure, RegistryError};
use crate::value::{Value, ValueType};

/// The first word of the header line.
const MAGIC: &str = "prfdata-registry-log";
/// The journal format version, the header's second word.
const FORMAT: u32 = 1;

/// The header line of a journal that follows the store's record `base`.
pub(super) fn header(base: u64) -> String {
    format!("{MAGIC} {FORMAT} base {base}\n")
}

#[derive(Serialize)]
struct RecordOut<'a> {
    seq: u64,
    ops: Vec<OpOut<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum OpOut<'a> {
    CreateKey {
        #[serde(skip_serializing_if = "Option::is_none")]
        key: Option<&'a str>,
    },
    DeleteKey {
        #[serde(skip_serializing_if = "Option::is_none")]
        key: Option<&'a str>,
    },
    Set {
        #[serde(skip_serializing_if = "Option::is_none")]
        key: Option<&'a str>,
        name: &'a str,
        #[serde(rename = "type")]
        ty: &'static str,
        data: DataOut<'a>,
    },
    Delete {
        #[serde(skip_serializing_if = "Option::is_none")]
        key: Option<&'a str>,
        name: &'a str,
    },
    Splice {
        #[serde(skip_serializing_if = "Option::is_none")]
        key: Option<&'a str>,
        name: &'a str,
        at: usize,
        remove: usize,
        insert: &'a [String],
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordIn {
    seq: u64,
    ops: Vec<OpIn>,
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum OpIn {
    CreateKey {
        key: Option<String>,
    },
    DeleteKey {
        key: Option<String>,
    },
    Set {
        key: Option<String>,
        name: String,
        #[serde(rename = "type")]
        ty: String,
        data: DataIn,
    },
    Delete {
        key: Option<String>,
        name: String,
    },
    Splice {
        key: Option<String>,
        name: String,
        at: usize,
        remove: usize,
        insert: Vec<String>,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum DataIn {
    Number(u32),
    Text(String),
    List(Vec<String>),
}

/// The key a change is in.
fn key_of(change: &Change) -> &str {
    match change {
        Change::CreateKey { key }
        | Change::DeleteKey { key }
        | Change::SetValue { key, .. }
        | Change::DeleteValue { key, .. }
        | Change::Splice { key, .. } => key,
    }
}

fn op_out<'a>(change: &'a Change, key: Option<&'a str>) -> OpOut<'a> {
    match change {
        Change::CreateKey { .. } => OpOut::CreateKey { key },
        Change::DeleteKey { .. } => OpOut::DeleteKey { key },
        Change::SetValue { name, value, .. } => OpOut::Set {
            key,
            name,
            ty: value.value_type().name(),
            data: DataOut::from(value),
        },
        Change::DeleteValue { name, .. } => OpOut::Delete { key, name },
        Change::Splice {
            name,
            at,
            remove,
            insert,
            ..
        } => OpOut::Splice {
            key,
            name,
            at: *at,
            remove: *remove,
            insert,
        },
    }
}

/// The record line of update `seq`, with its newline.
pub(super) fn encode_record(seq: u64, changes: &[Change]) -> Result<Vec<u8>, RegistryError> {
    let mut previous: Option<&str> = None;
    let ops = changes
        .iter()
        .map(|c| {
            let key = key_of(c);
            let named = (previous != Some(key)).then_some(key);
            previous = Some(key);
            op_out(c, named)
        })
        .collect();
    let json = serde_json::to_vec(&RecordOut { seq, ops }).map_err(|e| RegistryError::Encode {
        path: crate::paths::LOG_FILE.into(),
        message: e.to_string(),
    })?;
    let mut line = format!("{:08x} ", crc32fast::hash(&json)).into_bytes();
    line.extend_from_slice(&json);
    line.push(b'\n');
    Ok(line)
}

/// One committed update read back from the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Record {
    /// Its sequence number.
    pub(super) seq: u64,
    /// Its changes, in order.
    pub(super) changes: Vec<Change>,
    /// The 1-based line it is on.
    pub(super) line: usize,
}

/// A journal as read: its header, its committed records, and where they end.
#[derive(Debug, Default)]
pub(super) struct Journal {
    /// The store sequence number the journal follows, `None` if it has no complete header
    /// (an empty file, or one torn while it was started).
    pub(super) base: Option<u64>,
    /// The records, in order, their sequence numbers `base + 1`, `base + 2`, ...
    pub(super) records: Vec<Record>,
    /// The length of the header and the records: what follows is torn.
    pub(super) end: usize,
    /// Where the last record starts (`end` when there is none).
    pub(super) last_start: usize,
    /// The length of the header line (0 without one).
    pub(super) header_len: usize,
}

impl Journal {
    /// The sequence number of the last record, or the base without records.
    pub(super) fn last_seq(&self) -> Option<u64> {
        self.records.last().map(|r| r.seq).or(self.base)
    }
}

/// Parses a journal; `path` names it in errors, which carry the line (see the
/// [module docs](self) for what is torn and what is damaged).
pub(super) fn parse(bytes: &[u8], path: &Path) -> Result<Journal, RegistryError> {
    let corrupt = |line: usize, message: String| RegistryError::Corrupt {
        path: path.to_path_buf(),
        line: Some(line),
        message,
    };
    let mut journal = Journal::default();
    let mut lines = bytes.split_inclusive(|&b| b == b'\n');
    let Some(first) = lines.next().filter(|l| l.ends_with(b"\n")) else {
        return Ok(journal);
    };
    let base = parse_header(first).ok_or_else(|| {
        corrupt(
            1,
            format!("not a registry journal header (expected `{MAGIC} {FORMAT} base N`)"),
        )
    })?;
    journal.base = Some(base);
    journal.header_len = first.len();
    journal.end = first.len();
    journal.last_start = first.len();
    let mut expected = base;
    for (i, line) in lines.enumerate() {
        let number = i + 2;
        let Some(json) = checked(line) else {
            if journal.end + line.len() == bytes.len() {
                // The last line, incomplete or failing its checksum: torn.
                break;
            }
            return Err(corrupt(
                number,
                "the record's checksum does not match, and records follow it: the journal \
                 is damaged"
                    .into(),
            ));
        };
        let record: RecordIn = serde_json::from_slice(json)
            .map_err(|e| corrupt(number, format!("not a journal record: {e}")))?;
        expected = expected
            .checked_add(1)
            .ok_or_else(|| corrupt(number, "the sequence number overflows".into()))?;
        let seq = record.seq;
        ensure(seq == expected, || {
            corrupt(
                number,
                format!("record with sequence number {seq}, expected {expected}"),
            )
        })?;
        let changes = changes_in(record.ops).map_err(|m| corrupt(number, m))?;
        journal.last_start = journal.end;
        journal.end += line.len();
        journal.records.push(Record {
            seq: record.seq,
            changes,
            line: number,
        });
    }
    Ok(journal)
}

/// The sequence number and changes of one record line, if it is one whose checksum matches:
/// what a writer checks a record against before it appends it.
pub(super) fn decode_record(line: &[u8]) -> Option<(u64, Vec<Change>)> {
    let record: RecordIn = serde_json::from_slice(checked(line)?).ok()?;
    Some((record.seq, changes_in(record.ops).ok()?))
}

/// The header's base sequence number, if `line` is a header.
fn parse_header(line: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(line).ok()?.strip_suffix('\n')?;
    let mut words = text.split(' ');
    let ok = words.next() == Some(MAGIC)
        && words.next() == Some(&FORMAT.to_string())
        && words.next() == Some("base");
    let base = words.next()?.parse().ok()?;
    (ok && words.next().is_none()).then_some(base)
}

/// The JSON of a complete record line whose checksum matches.
fn checked(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\n")?;
    let (sum, json) = (line.get(..8)?, line.get(9..)?);
    if line.get(8) != Some(&b' ') {
        return None;
    }
    let sum = u32::from_str_radix(std::str::from_utf8(sum).ok()?, 16).ok()?;
    (crc32fast::hash(json) == sum).then_some(json)
}

/// A record's ops as changes: each op's key given or its predecessor's, its data of its type.
fn changes_in(ops: Vec<OpIn>) -> Result<Vec<Change>, String> {
    let mut previous: Option<String> = None;
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.into_iter().enumerate() {
        let mut key_or_previous = |key: Option<String>| {
            let key = key
                .or_else(|| previous.clone())
                .ok_or_else(|| format!("op {i} names no key, and no op before it does"))?;
            previous = Some(key.clone());
            Ok::<_, String>(key)
        };
        out.push(match op {
            OpIn::CreateKey { key } => Change::CreateKey {
                key: key_or_previous(key)?,
            },
            OpIn::DeleteKey { key } => Change::DeleteKey {
                key: key_or_previous(key)?,
            },
            OpIn::Set {
                key,
                name,
                ty,
                data,
            } => {
                let key = key_or_previous(key)?;
                let value =
                    value_of(&ty, data).map_err(|m| format!("op {i}: value `{name}`: {m}"))?;
                Change::SetValue { key, name, value }
            }
            OpIn::Delete { key, name } => Change::DeleteValue {
                key: key_or_previous(key)?,
                name,
            },
            OpIn::Splice {
                key,
                name,
                at,
                remove,
                insert,
            } => Change::Splice {
                key: key_or_previous(key)?,
                name,
                at,
                remove,
                insert,
            },
        });
    }
    Ok(out)
}

/// A `set` op's data as a value of the type it names.
fn value_of(ty: &str, data: DataIn) -> Result<Value, String> {
    let ty: ValueType = ty
        .parse()
        .map_err(|e: crate::UnknownValueType| e.to_string())?;
    match (ty, data) {
        (ValueType::Sz, DataIn::Text(s)) => Ok(Value::Sz(s)),
        (ValueType::ExpandSz, DataIn::Text(s)) => Ok(Value::ExpandSz(s)),
        (ValueType::Dword, DataIn::Number(n)) => Ok(Value::Dword(n)),
        (ValueType::MultiSz, DataIn::List(list)) => Ok(Value::MultiSz(list)),
        (ty, _) => Err(format!("the data is not {ty} data")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Change> {
        let key = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib\009".to_owned();
        vec![
            Change::Splice {
                key: key.clone(),
                name: "Counter".into(),
                at: 4,
                remove: 0,
                insert: vec!["1852".into(), "Queue \"depth\"\n".into()],
            },
            Change::SetValue {
                key,
                name: "Last".into(),
                value: Value::Dword(7),
            },
            Change::DeleteKey {
                key: r"HKLM\A".into(),
            },
        ]
    }

    fn journal_of(records: &[(u64, Vec<Change>)], base: u64) -> Vec<u8> {
        let mut bytes = header(base).into_bytes();
        for (seq, changes) in records {
            bytes.extend(encode_record(*seq, changes).unwrap());
        }
        bytes
    }

    #[test]
    fn records_read_back_as_written() {
        let bytes = journal_of(&[(8, sample()), (9, vec![])], 7);
        let journal = parse(&bytes, "r.log".as_ref()).unwrap();
        assert_eq!(journal.base, Some(7));
        assert_eq!(journal.end, bytes.len());
        assert_eq!(journal.last_seq(), Some(9));
        assert_eq!(journal.records[0].changes, sample());
        assert_eq!(journal.records[1].line, 3);
        // The key of the second op is its predecessor's: written once.
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text.matches("Perflib").count(), 1, "{text}");
    }

    #[test]
    fn a_torn_last_record_is_ignored() {
        let whole = journal_of(&[(1, sample()), (2, sample())], 0);
        let second = journal_of(&[(1, sample())], 0).len();
        for cut in [second + 1, second + 9, whole.len() - 1] {
            let journal = parse(&whole[..cut], "r.log".as_ref()).unwrap();
            assert_eq!(
                (journal.records.len(), journal.end),
                (1, second),
                "cut at {cut}"
            );
        }
        // Complete but for a damaged byte, and last: torn as well (a crash before the data
        // reached the disk).
        let mut damaged = whole.clone();
        damaged[second + 20] ^= 1;
        assert_eq!(parse(&damaged, "r.log".as_ref()).unwrap().records.len(), 1);
        // A header torn before its newline: an empty journal.
        assert_eq!(parse(&whole[..5], "r.log".as_ref()).unwrap().base, None);
    }

    #[test]
    fn damage_before_the_last_record_is_an_error_naming_the_line() {
        let mut bytes = journal_of(&[(1, sample()), (2, sample()), (3, sample())], 0);
        let at = journal_of(&[(1, sample())], 0).len() + 30;
        bytes[at] ^= 1;
        let err = parse(&bytes, "r.log".as_ref()).unwrap_err();
        assert!(
            matches!(err, RegistryError::Corrupt { line: Some(3), .. }),
            "{err}"
        );
        assert!(err.to_string().contains("r.log"), "{err}");
    }

    #[test]
    fn out_of_order_records_and_bad_headers_are_errors() {
        let gap = journal_of(&[(1, sample()), (3, sample()), (4, sample())], 0);
        assert!(matches!(
            parse(&gap, "r.log".as_ref()),
            Err(RegistryError::Corrupt { line: Some(3), .. })
        ));
        for header in [
            "prfdata-registry-log 2 base 0\n",
            "base 0\n",
            "prfdata-registry-log 1 base x\n",
        ] {
            assert!(
                matches!(
                    parse(header.as_bytes(), "r.log".as_ref()),
                    Err(RegistryError::Corrupt { line: Some(1), .. })
                ),
                "{header}"
            );
        }
        // A good checksum over something that is not a record.
        let json = br#"{"seq":1,"ops":[{"op":"set","name":"x","type":"REG_DWORD","data":1}]}"#;
        let mut bytes = header(0).into_bytes();
        bytes.extend(format!("{:08x} ", crc32fast::hash(json)).bytes());
        bytes.extend(json);
        bytes.extend(b"\n");
        let err = parse(&bytes, "r.log".as_ref()).unwrap_err();
        assert!(err.to_string().contains("names no key"), "{err}");
    }
}

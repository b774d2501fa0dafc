//! The decoder's golden files (`tests/golden/`): collections from the fuzz corpus
//! (`fuzz/corpus/decode/`: the demo's Global and worker objects, the rich map's Global and
//! costly objects) and the sample object of `prfdata-testkit` in a block, each with
//! - `NAME.raw`: the PERF_DATA_BLOCK bytes;
//! - `NAME.json`: what [`DataView::parse`] reads from them, every field of every object,
//!   counter, instance and value, as pretty JSON;
//! - `NAME.truncations`: the error each prefix of the bytes fails with, as it is and with its
//!   `TotalByteLength` cut to match, one line per run of lengths that fail alike
//!   (`FIRST..=LAST prefix|resized error`).
//!
//! The files were first written by the decoder the view replaced, so the view reproduces what
//! it decoded and refused. After a deliberate change, `PRFDATA_BLESS=1 cargo test -p prfdata-wire
//! --test golden` writes them again from the view.

use std::path::{Path, PathBuf};

use prfdata_wire::error::DecodeError;
use prfdata_wire::snapshot::{CounterDef, DataSnapshot, InstanceData, RawValue};
use prfdata_wire::view::DataView;
use serde::Serialize;

/// The golden collections, by file name.
const NAMES: [&str; 5] = [
    "sample",
    "demo-global",
    "demo-worker",
    "rich-costly",
    "rich-global",
];

fn golden(name: &str, ext: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/{name}.{ext}"))
}

fn bless() -> bool {
    std::env::var_os("PRFDATA_BLESS").is_some()
}

/// `text` against the golden file `name.ext` (which bless mode writes instead).
fn check(name: &str, ext: &str, text: &str) {
    let path = golden(name, ext);
    if bless() {
        std::fs::write(&path, text).expect("write a golden file");
        return;
    }
    let pinned = std::fs::read_to_string(&path).expect("read a golden file");
    assert!(
        pinned == text,
        "{} differs from what the view reads:\n{text}",
        path.display()
    );
}

/// A snapshot, every field.
#[derive(Serialize)]
struct Collection {
    version: u32,
    revision: u32,
    total_byte_length: u32,
    header_length: u32,
    default_object: i32,
    system_time: prfdata_wire::snapshot::SystemTimeFields,
    perf_time: i64,
    perf_freq: i64,
    perf_time_100nsec: i64,
    system_name: String,
    objects: Vec<Object>,
}

/// An object, every field, its instances and values copied out.
#[derive(Serialize)]
struct Object {
    offset: usize,
    name_index: u32,
    help_index: u32,
    detail_level: u32,
    default_counter: i32,
    num_instances: i32,
    code_page: u32,
    perf_time: i64,
    perf_freq: i64,
    counters: Vec<CounterDef>,
    values: Vec<RawValue>,
    instances: Vec<InstanceData>,
}

/// A snapshot as the golden JSON.
fn json(snap: &DataSnapshot) -> String {
    let collection = Collection {
        version: snap.version,
        revision: snap.revision,
        total_byte_length: snap.total_byte_length,
        header_length: snap.header_length,
        default_object: snap.default_object,
        system_time: snap.system_time,
        perf_time: snap.perf_time,
        perf_freq: snap.perf_freq,
        perf_time_100nsec: snap.perf_time_100nsec,
        system_name: snap.system_name.clone(),
        objects: snap
            .objects
            .iter()
            .map(|o| Object {
                offset: o.offset,
                name_index: o.name_index,
                help_index: o.help_index,
                detail_level: o.detail_level,
                default_counter: o.default_counter,
                num_instances: o.num_instances,
                code_page: o.code_page,
                perf_time: o.perf_time,
                perf_freq: o.perf_freq,
                counters: o.counters.clone(),
                values: o.values().map(|v| v.to_vec()).unwrap_or_default(),
                instances: o.instance_data(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&collection).expect("a snapshot serialises") + "\n"
}

/// An error of `len` bytes, with a truncation's `available` written `LEN` when it is all of
/// them and `LEN-OFFSET` when it is all from the structure's offset on.
fn describe(err: &DecodeError, len: usize) -> String {
    match *err {
        DecodeError::Truncated {
            offset,
            what,
            need,
            available,
        } => {
            let available = match available {
                a if a == len as u64 => "LEN".to_owned(),
                a if a == (len - offset) as u64 => "LEN-OFFSET".to_owned(),
                a => a.to_string(),
            };
            format!(
                "truncated {what} at offset {offset}: needs {need} bytes, {available} available"
            )
        }
        ref other => other.to_string(),
    }
}

/// The truncation lines of `bytes`: how each shorter prefix fails (`prefix`), and how it fails
/// with its `TotalByteLength` set to its length (`resized`: the objects are then cut short),
/// as `decode` says.
fn truncations(bytes: &[u8], decode: impl Fn(&[u8]) -> Result<(), DecodeError>) -> String {
    let mut runs: Vec<(usize, usize, String)> = Vec::new();
    let mut push = |len: usize, text: String| match runs.last_mut() {
        Some((_, last, t)) if *t == text => *last = len,
        _ => runs.push((len, len, text)),
    };
    for len in 0..bytes.len() {
        let err = decode(&bytes[..len]).expect_err("a shorter prefix fails");
        push(len, format!("prefix {}", describe(&err, len)));
    }
    for len in 88..bytes.len() {
        let mut cut = bytes[..len].to_vec();
        cut[20..24].copy_from_slice(&(len as u32).to_le_bytes());
        let text = match decode(&cut) {
            Ok(()) => "decodes".to_owned(),
            Err(err) => describe(&err, len),
        };
        push(len, format!("resized {text}"));
    }
    runs.iter()
        .map(|(first, last, text)| format!("{first}..={last} {text}\n"))
        .collect()
}

fn raw(name: &str) -> Vec<u8> {
    std::fs::read(golden(name, "raw")).expect("read a golden block")
}

#[test]
fn the_real_collections_decode_as_recorded() {
    for name in NAMES {
        let bytes = raw(name);
        let snap = DataView::parse(&bytes).expect("decodes").to_snapshot();
        assert!(!snap.objects.is_empty(), "{name}");
        check(name, "json", &json(&snap));
        // The snapshot that keeps the bytes reads the same.
        let owned = prfdata_wire::snapshot::decode_owned(bytes.clone()).expect("decodes");
        assert_eq!(json(&owned), json(&snap), "{name}");
    }
}

#[test]
fn every_truncation_fails_as_recorded() {
    for name in NAMES {
        let bytes = raw(name);
        let lines = truncations(&bytes, |b| DataView::parse(b).map(drop));
        check(name, "truncations", &lines);
        let owned = truncations(&bytes, |b| {
            prfdata_wire::snapshot::decode_owned(b.to_vec()).map(drop)
        });
        assert_eq!(owned, lines, "{name}");
    }
}

#[test]
fn a_dword_aligned_block_reads_in_place() {
    // Each block one byte further on: the views need no alignment.
    for name in NAMES {
        let bytes = raw(name);
        let mut shifted = vec![0u8; bytes.len() + 1];
        shifted[1..].copy_from_slice(&bytes);
        let snap = DataView::parse(&shifted[1..])
            .expect("decodes")
            .to_snapshot();
        let pinned = std::fs::read_to_string(golden(name, "json")).expect("read a golden file");
        assert_eq!(json(&snap), pinned, "{name}");
    }
}

//! Inputs the fuzz targets found (`fuzz/`, docs/testing.md, "Fuzzing"), replayed through the public API.
//! Each input is committed as `fuzz/corpus/<target>/regression-*`, so the fuzzers start from
//! it as well.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use prfdata::reader::{BlockReader, ReadError};

/// A committed fuzz input.
fn committed(target: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `bytes` as a block file an app of this user left: a regular file, owner-only.
fn block_file(dir: &Path, bytes: &[u8]) -> PathBuf {
    let path = dir.join("Fuzz.blk");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .expect("create the block file");
    file.write_all(bytes).expect("write the block file");
    path
}

/// `block_reader` found a counter record whose `CounterOffset` is 0xFFFFFFF0: adding its size
/// overflowed in the reader's bounds check (a panic in debug builds, a wrapped sum that passed
/// the check in release builds).
#[test]
fn a_counter_offset_near_u32_max_is_refused_without_overflow() {
    let bytes = committed("block_reader", "regression-counter-offset-overflow.blk");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = block_file(dir.path(), &bytes);
    let err = BlockReader::open_path("Fuzz", &path).expect_err("the block is invalid");
    assert!(
        matches!(
            err,
            ReadError::Field { what: "counter beyond its block", value, .. } if value > u64::from(u32::MAX - 64)
        ),
        "{err}"
    );
}

/// `lodctr_ini` found a driver name holding `\` and a tab, so that one key of its Performance
/// path ended in whitespace: the key was made as a parent, but the store file then read back
/// without it (a path's end was trimmed, its middle was not), so the registry refused to write
/// the update ("does not read back"), and `X\a ` named the key `X\a`. Such a key name is now
/// refused, with the path, wherever it is in the path.
#[test]
fn a_key_name_ending_in_whitespace_is_refused_wherever_it_is() {
    use prfdata_registry::{
        lodctr, update, FileRegistry, LodctrOptions, Registry, RegistryError, Value,
    };

    let dir = tempfile::tempdir().expect("temp dir");
    let reg = FileRegistry::open(dir.path().join("registry")).expect("registry");
    let before = reg.snapshot().expect("snapshot");
    for path in [r"HKLM\SOFTWARE\a	\Performance", r"HKLM\SOFTWARE\a \b"] {
        let err = update(&reg, |h| h.set_value(path, "V", Value::Dword(1))).expect_err(path);
        assert!(
            matches!(&err, RegistryError::BadKeyPath { path: p, .. } if p == path),
            "{path:?}: {err}"
        );
    }
    // The committed .INI (its symbol file after the marker is the lodctr design specification's
    // devdef.h).
    let input = committed("lodctr_ini", "regression-key-name-trailing-space.ini");
    std::fs::write(dir.path().join("fuzz.ini"), input).expect("write the .INI");
    std::fs::write(
        dir.path().join("devdef.h"),
        "#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2\n#define DEVICE_COUNTER_2 4\n",
    )
    .expect("write devdef.h");
    // Since driver names are validated before they become key paths, the input is refused
    // earlier, for its `\` and its length; either way it is refused and nothing is written.
    let err = lodctr(&reg, dir.path().join("fuzz.ini"), &LodctrOptions::default())
        .expect_err("a driver name with a key name ending in whitespace");
    let message = err.to_string();
    assert!(
        message.contains("whitespace") || message.contains("service name"),
        "{err}"
    );
    assert_eq!(reg.snapshot().expect("snapshot"), before, "nothing written");
}

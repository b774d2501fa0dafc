//! Inputs the fuzz targets found (`fuzz/`, README "Fuzzing"), replayed through the public API.
//! Each input is committed as `fuzz/corpus/<target>/regression-*`, so the fuzzers start from
//! it as well.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use prfdata::block::reader::{BlockReader, ReadError};

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

//! The block file: created owner-only, stale blocks replaced, live ones and symlinks refused,
//! removed on drop and at exit.

use crate::common;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::testmap::PrfData;
use prfdata::Error;

const BLOCK: &str = "PrfDataTest.blk";
const WATCH: &str = "PrfDataTest.watch";

/// Child roles: `hold` activates and waits to be killed; `exit` activates and exits without
/// dropping its handle.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    match common::role().as_deref() {
        Some("hold") => {
            let _prf = PrfData::activate_in(&common::child_dir()).expect("child activates");
            std::thread::sleep(Duration::from_secs(60));
            panic!("the parent should have killed this child");
        }
        Some("exit") => {
            let prf = PrfData::activate_in(&common::child_dir()).expect("child activates");
            std::mem::forget(prf);
            std::process::exit(0);
        }
        _ => {}
    }
}

fn spawn_holder(dir: &std::path::Path) -> common::ChildProcess {
    let child = common::spawn_child("block::child_entry", "hold", dir, &[]);
    assert!(
        common::wait_until(Duration::from_secs(20), || dir.join(BLOCK).exists()),
        "the child published its block"
    );
    child
}

#[test]
fn the_block_is_owner_only_and_removed_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let meta = std::fs::symlink_metadata(prf.path()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(meta.file_type().is_file());
    // No temporary file is left beside it; its watch table is (owner-only too).
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, [BLOCK, WATCH]);
    let watch = std::fs::symlink_metadata(dir.path().join(WATCH)).unwrap();
    assert_eq!(watch.permissions().mode() & 0o777, 0o600);
    drop(prf);
    assert!(!dir.path().join(BLOCK).exists());
    assert!(
        !dir.path().join(WATCH).exists(),
        "the watch table goes with the block"
    );
}

#[test]
fn a_live_block_of_another_map_is_refused_with_a_live_pid() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_holder(dir.path());
    let err = other_map::PrfData::activate_in(dir.path()).unwrap_err();
    let pid = child.id();
    let _ = child.kill();
    let _ = child.wait();
    match err {
        Error::AlreadyActive { pid: owner, .. } => assert_eq!(owner, pid),
        other => panic!("expected AlreadyActive, got {other}"),
    }
}

#[test]
fn a_live_block_of_the_same_map_is_joined() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_holder(dir.path());
    let prf = PrfData::activate_in(dir.path()).expect("joins the live block");
    let reader = prfdata::reader::BlockReader::open_path("PrfDataTest", prf.path()).unwrap();
    assert_eq!(
        reader.owner_pid(),
        child.id(),
        "the header names its publisher"
    );
    let mut members: Vec<u32> = reader.members().unwrap().iter().map(|p| p.pid).collect();
    members.sort_unstable();
    let mut expected = vec![child.id(), std::process::id()];
    expected.sort_unstable();
    assert_eq!(members, expected);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_stale_block_of_a_killed_process_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_holder(dir.path());
    let dead = child.id();
    child.kill().unwrap(); // SIGKILL: no destructor, no atexit
    child.wait().unwrap();
    assert!(
        dir.path().join(BLOCK).exists(),
        "a killed owner leaves its block behind"
    );
    let prf = PrfData::activate_in(dir.path()).expect("the stale block is adopted");
    let reader = prfdata::reader::BlockReader::open_path("PrfDataTest", prf.path()).unwrap();
    assert_eq!(reader.owner_pid(), dead, "the same block");
    let members: Vec<u32> = reader.members().unwrap().iter().map(|p| p.pid).collect();
    assert_eq!(members, [std::process::id()], "the dead member was pruned");
}

#[test]
fn a_stale_block_of_another_map_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_holder(dir.path());
    child.kill().unwrap();
    child.wait().unwrap();
    let prf = other_map::PrfData::activate_in(dir.path()).expect("the stale block is replaced");
    let reader = prfdata::reader::BlockReader::open_path("PrfDataTest", prf.path()).unwrap();
    assert_eq!(reader.owner_pid(), std::process::id());
}

#[test]
fn a_block_whose_member_pid_was_reused_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_holder(dir.path());
    let dead = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    // Make the members table name a live pid (ours) with another start time: a reused pid.
    let path = dir.path().join(BLOCK);
    let mut bytes = std::fs::read(&path).unwrap();
    let members = u32::from_le_bytes(bytes[176..180].try_into().unwrap()) as usize;
    assert_eq!(
        bytes[members..members + 4],
        dead.to_le_bytes(),
        "the child's entry"
    );
    bytes[members..members + 4].copy_from_slice(&std::process::id().to_le_bytes());
    bytes[members + 8..members + 16].copy_from_slice(&1u64.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    other_map::PrfData::activate_in(dir.path()).expect("a reused pid does not keep a block alive");
}

#[test]
fn a_symlink_at_the_block_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, b"precious").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join(BLOCK)).unwrap();
    match PrfData::activate_in(dir.path()).unwrap_err() {
        Error::Symlink { path } => assert_eq!(path, dir.path().join(BLOCK)),
        other => panic!("expected Symlink, got {other}"),
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert!(std::fs::symlink_metadata(dir.path().join(BLOCK))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_normal_exit_removes_the_block_even_without_drop() {
    let dir = tempfile::tempdir().unwrap();
    let child = common::spawn_child("block::child_entry", "exit", dir.path(), &[]);
    common::wait_ok(child, Duration::from_secs(30));
    assert!(!dir.path().join(BLOCK).exists());
    assert!(!dir.path().join(WATCH).exists(), "nor its watch table");
}

prfdata::prfdata_map! {
    mod other_map {
        app: "PrfDataTest",
        object ONLY = 0 {
            name: "Only", help: "A different layout under the same app name.",
            detail: Novice, default: none, instances: none, costly: false,
            counters {
                X = 2: RawCount { name: "X", help: "x", detail: Novice, scale: 0 },
            }
        }
    }
}

#[test]
fn attaching_with_another_map_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _prf = PrfData::activate_in(dir.path()).unwrap();
    match other_map::PrfData::attach_in(dir.path()).unwrap_err() {
        Error::MapMismatch { .. } => {}
        other => panic!("expected MapMismatch, got {other}"),
    }
    match PrfData::attach_in(tempfile::tempdir().unwrap().path()).unwrap_err() {
        Error::NotActive { app, .. } => assert_eq!(app, "PrfDataTest"),
        other => panic!("expected NotActive, got {other}"),
    }
}

/// An activation that replaces a dead app's block of another map marks the old block closed
/// first, as its last process would have: a reader that trusts a liveness finding for long (the
/// provider's, 10 ms) and still maps the old block ends its reads at once instead of serving the
/// dead app's values until it next looks at the path.
#[test]
fn a_stale_block_replaced_by_another_map_ends_its_readers_reads_at_once() {
    use prfdata::reader::{BlockReader, ReadError};
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_holder(dir.path());
    let path = dir.path().join(BLOCK);
    let reader = BlockReader::open_path("PrfDataTest", &path)
        .unwrap()
        .with_liveness_interval(Duration::from_secs(3600));
    let read = |r: &BlockReader| r.read_with(Duration::from_secs(5), |_| Ok(()));
    read(&reader).expect("a live app's block, found alive and trusted for an hour");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!reader.has_ended(), "a kill announces nothing");
    let other = other_map::PrfData::activate_in(dir.path()).unwrap();
    assert!(
        reader.has_ended(),
        "the replacing activation closed the stale block"
    );
    assert!(matches!(read(&reader), Err(ReadError::Replaced)));
    let again = BlockReader::open_path("PrfDataTest", &path).unwrap();
    assert_eq!(
        again.objects().len(),
        1,
        "the path holds the other map's block"
    );
    drop(other);
}

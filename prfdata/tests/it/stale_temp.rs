//! An activation killed between creating its temporary file and publishing it leaves
//! `.<app>.<pid>.<n>.tmp` behind; the next activation in that folder removes it, and never the
//! temporary file of an activation still running.
//!
//! The kill uses a fault hook of debug builds (`PRFDATA_BLOCK_FAULT=before-publish`: the
//! activating process SIGKILLs itself between the two steps); release builds have no hook, and
//! these tests only exist in debug builds.
#![cfg(debug_assertions)]

use crate::common;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::testmap::PrfData;

const BLOCK: &str = "PrfDataTest.blk";
const WATCH: &str = "PrfDataTest.watch";

/// Child role `activate`: activate in the given folder (the parent sets the fault hook).
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if common::role().as_deref() == Some("activate") {
        let _prf = PrfData::activate_in(&common::child_dir()).expect("activate");
        panic!("the fault hook should have killed this process before it published");
    }
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Activates in a child that is killed half-way; returns its pid.
fn killed_half_way(dir: &Path) -> u32 {
    let mut child = common::spawn_child(
        "stale_temp::child_entry",
        "activate",
        dir,
        &[("PRFDATA_BLOCK_FAULT", "before-publish".into())],
    );
    let pid = child.id();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status.signal(), Some(libc::SIGKILL), "killed by the hook");
    pid
}

#[test]
fn the_temporary_file_of_a_killed_activation_is_removed_by_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let pid = killed_half_way(dir.path());
    let left = names(dir.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].starts_with(&format!(".PrfDataTest.{pid}.")) && left[0].ends_with(".tmp"),
        "{left:?}"
    );
    assert!(!dir.path().join(BLOCK).exists(), "killed before publishing");

    let prf = PrfData::activate_in(dir.path()).unwrap();
    assert_eq!(
        names(dir.path()),
        [BLOCK, WATCH],
        "the stale temporary file is gone (the block and its watch table are there)"
    );
    drop(prf);
    assert!(names(dir.path()).is_empty());
}

#[test]
fn stale_temporary_files_of_other_apps_go_too_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let dead = killed_half_way(dir.path());
    let other_app = format!(".OtherApp.{dead}.7.tmp");
    let unrelated = [
        format!(".OtherApp.{dead}.tmp"),    // not the form
        format!("OtherApp.{dead}.7.tmp"),   // not hidden
        format!(".Other App.{dead}.7.tmp"), // not an app name
        format!(".OtherApp.{dead}.7.tmp.keep"),
    ];
    for name in std::iter::once(&other_app).chain(&unrelated) {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.path().join(name))
            .unwrap();
    }
    let _prf = PrfData::activate_in(dir.path()).unwrap();
    let mut expected: Vec<String> = unrelated.to_vec();
    expected.push(BLOCK.to_string());
    expected.push(WATCH.to_string());
    expected.sort();
    assert_eq!(names(dir.path()), expected);
}

#[test]
fn the_temporary_file_of_a_running_activation_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    // Ours: a live creator (this process) that holds its lock, as a running activation does.
    let live = dir
        .path()
        .join(format!(".PrfDataTest.{}.1.tmp", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&live)
        .unwrap();
    // SAFETY: flock on a valid open descriptor.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) },
        0
    );
    // A dead creator's file whose lock somebody holds: not removed either.
    let dead = killed_half_way(dir.path());
    let locked = names(dir.path())
        .into_iter()
        .find(|n| n.starts_with(&format!(".PrfDataTest.{dead}.")))
        .unwrap();
    let held = std::fs::File::open(dir.path().join(&locked)).unwrap();
    // SAFETY: as above.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_SH) },
        0
    );

    let prf = PrfData::activate_in(dir.path()).unwrap();
    let after = names(dir.path());
    assert!(after.contains(&live.file_name().unwrap().to_string_lossy().into_owned()));
    assert!(after.contains(&locked), "{after:?}");
    drop((prf, held));
    // Its lock released, the dead creator's file goes with the next activation.
    let _prf = PrfData::activate_in(dir.path()).unwrap();
    assert!(!names(dir.path()).contains(&locked));
}

//! A child made with `fork` inherits the handle: it may update counters and add and remove
//! instances (its locks are its own: the parent recovers the block if the child dies holding
//! one), but dropping the handle in the child, or the child's exit, never removes or changes
//! the parent's block, and a guard the child inherited neither unlocks the parent's lock nor
//! closes its write section.
//!
//! Each test re-executes this binary (so that the fork happens in a process that runs only that
//! test) and forks there with `libc::fork`; the forked child reports through its exit code.
//!
//! Regression: a `PrfData` dropped in a forked child deleted the parent's block.

use crate::common;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use common::testmap::{self, PrfData, ITEMS};
use prfdata::layout::SEQ_OFFSET;

/// Forks: after the fork each process owns its own copy of `value`. The child passes its copy
/// to `child` and exits with the code it returns (through `exit`, running exit handlers, if
/// `normal_exit`, else `_exit`); the parent waits for it and gets its copy back with the child's
/// exit code (minus the signal number if a signal ended it).
fn fork_with<T>(value: T, normal_exit: bool, child: impl FnOnce(T) -> i32) -> (T, i32) {
    // SAFETY: this process runs a single test (`--test-threads=1`), and the child only calls
    // code that is safe after `fork` with glibc (allocation included), then leaves with `exit`
    // or `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(value))).unwrap_or(101);
        // SAFETY: ends the child; `exit` runs the exit handlers (the block's among them).
        unsafe {
            if normal_exit {
                libc::exit(code)
            } else {
                libc::_exit(code)
            }
        }
    }
    let start = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(r >= 0, "waitpid");
        if r == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            // SAFETY: our unreaped child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child did not finish within 30 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    (value, code)
}

/// The block's inode: the same number means the same file.
fn inode(path: &Path) -> u64 {
    std::fs::symlink_metadata(path)
        .expect("the block exists")
        .ino()
}

fn seq(path: &Path) -> u64 {
    let mut buf = [0u8; 8];
    std::fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut buf, SEQ_OFFSET as u64)
        .unwrap();
    u64::from_le_bytes(buf)
}

/// Child roles, one per test; each forks inside.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    match common::role().as_deref() {
        Some("drop-in-child") => drop_in_child(),
        Some("exit-in-child") => exit_in_child(),
        Some("close-in-child") => close_in_child(),
        Some("instances-in-child") => instances_in_child(),
        Some("guard-across-fork") => guard_across_fork(),
        Some("parent-killed-holding") => parent_killed_holding(),
        _ => {}
    }
}

fn drop_in_child() {
    let dir = common::child_dir();
    let prf = PrfData::activate_in(&dir).unwrap();
    let before = inode(prf.path());
    let (prf, code) = fork_with(prf, false, |prf| {
        prf.get_ctr64(testmap::HITS, ()).fetch_add(5, Relaxed);
        // The child's copy of the handle: dropping it must leave the parent's block alone.
        drop(prf);
        0
    });
    assert_eq!(code, 0);
    assert_eq!(
        inode(prf.path()),
        before,
        "the parent's block is still there"
    );
    assert_eq!(prf.get_ctr64(testmap::HITS, ()).load(Relaxed), 5, "shared");
    let path = prf.path().to_path_buf();
    drop(prf);
    assert!(!path.exists(), "the parent's own drop removes it");
}

/// `close` in the child: it is not a member in its own name, so it leaves nothing and says the
/// block stays with the member it lists (the parent), which then removes it.
fn close_in_child() {
    let dir = common::child_dir();
    let prf = PrfData::activate_in(&dir).unwrap();
    let before = inode(prf.path());
    let (prf, code) = fork_with(prf, false, |prf| match prf.close() {
        prfdata::Departure::StillHeld { members: 1 } => 0,
        _ => 2,
    });
    assert_eq!(
        code, 0,
        "the child's close answered StillHeld {{ members: 1 }}"
    );
    assert_eq!(
        inode(prf.path()),
        before,
        "the child's close left the block"
    );
    let path = prf.path().to_path_buf();
    assert_eq!(prf.close(), prfdata::Departure::Removed);
    assert!(!path.exists());
}

fn exit_in_child() {
    let dir = common::child_dir();
    let prf = PrfData::activate_in(&dir).unwrap();
    let before = inode(prf.path());
    // `exit` runs the exit handlers, the one that removes owned blocks among them.
    let (prf, code) = fork_with(prf, true, |prf| {
        // Not dropped: only the exit handler is left to (wrongly) remove the block.
        std::mem::forget(prf);
        0
    });
    assert_eq!(code, 0);
    assert_eq!(inode(prf.path()), before, "the child's exit left the block");
}

fn instances_in_child() {
    let dir = common::child_dir();
    let prf = PrfData::activate_in(&dir).unwrap();
    let mine = prf.add_instance(ITEMS, "parent's").unwrap();
    let (prf, code) = fork_with(prf, false, |prf| {
        let theirs = prf.add_instance(ITEMS, "child's").unwrap();
        prf.get_ctr64(testmap::ITEM_HITS, theirs).store(7, Relaxed);
        prf.remove_instance(mine).unwrap();
        // Die holding the lock, in the middle of a write section: the lock names this child.
        let whole = prf.lock_ctrs();
        // SAFETY: ends this process at once, as a crash would.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        drop(whole);
        1
    });
    assert_eq!(code, -libc::SIGKILL);
    // The parent recovers the lock from the dead child (the optex checks its owner every
    // 50 ms; the test's bounded wait fails it if it never does).
    let items = prf.instances().list(ITEMS).unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(prf.instances().name(items[0]).as_deref(), Some("child's"));
    assert_eq!(prf.get_ctr64(testmap::ITEM_HITS, items[0]).load(Relaxed), 7);
    assert_eq!(
        seq(prf.path()) % 2,
        0,
        "the dead child's section was closed"
    );
}

fn guard_across_fork() {
    let dir = common::child_dir();
    let prf = PrfData::activate_in(&dir).unwrap();
    let whole = prf.lock_ctrs();
    let odd = seq(prf.path());
    assert_eq!(odd % 2, 1);
    let (whole, code) = fork_with(whole, false, |whole| {
        // The child's copy of the guard: dropping it must not end the parent's hold.
        drop(whole);
        0
    });
    assert_eq!(code, 0);
    assert_eq!(
        seq(prf.path()),
        odd,
        "the parent's write section is still open"
    );
    std::thread::scope(|s| {
        let locked_out = s
            .spawn(|| prf.lock_ctrs_for(std::time::Duration::ZERO).is_err())
            .join()
            .unwrap();
        assert!(locked_out, "the parent still holds the lock");
    });
    drop(whole);
    assert_eq!(seq(prf.path()), odd + 1);
}

/// Waits (at most 60 s) for the file `name` in `dir`.
fn wait_file(dir: &Path, name: &str) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
            return text;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no {name}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The parent forks a child, then takes the lock and waits to be killed. The child, told the
/// parent is dead, takes the lock (recovered from its dead parent) and reports.
fn parent_killed_holding() {
    let dir = common::child_dir();
    let prf = PrfData::activate_in(&dir).unwrap();
    // SAFETY: this process runs a single test on one thread; the child only calls code that is
    // safe after `fork` with glibc, then leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        wait_file(&dir, "parent-killed");
        let reader = prfdata::reader::BlockReader::open_path("PrfDataTest", prf.path());
        let alive = reader.is_ok_and(|r| r.owner_alive());
        let report = match prf.lock_ctrs_for(Duration::from_secs(10)) {
            Ok(guard) => format!("recovered={} alive={alive}", guard.owner_died()),
            Err(e) => format!("{e} alive={alive}"),
        };
        std::fs::write(dir.join("child-report"), report).unwrap();
        // SAFETY: ends the child without the parent's exit handlers.
        unsafe { libc::_exit(0) }
    }
    let _guard = prf.lock_ctrs();
    std::fs::write(dir.join("holding"), b"").unwrap();
    std::thread::sleep(Duration::from_secs(60));
    panic!("the test should have killed this process");
}

fn run(role: &str) {
    let dir = tempfile::tempdir().unwrap();
    let child = common::spawn_child("fork::child_entry", role, dir.path(), &[]);
    common::wait_ok(child, Duration::from_secs(60));
}

#[test]
fn a_handle_dropped_in_a_forked_child_leaves_the_parents_block() {
    run("drop-in-child");
}

#[test]
fn close_in_a_forked_child_leaves_the_parents_block() {
    run("close-in-child");
}

#[test]
fn a_forked_child_exiting_leaves_the_parents_block() {
    run("exit-in-child");
}

#[test]
fn a_forked_child_adds_and_removes_instances_under_its_own_name() {
    run("instances-in-child");
}

#[test]
fn a_guard_copied_into_a_forked_child_does_not_release_the_parents_lock() {
    run("guard-across-fork");
}

/// A process killed (`SIGKILL`) while it holds the block's lock, its forked child still alive:
/// the child does not keep its parent's presence (its fork handler closed its copy), so it
/// recovers the lock from its dead parent; and it is present itself (taken at the fork), so a
/// reader still finds a process of the app on the block.
#[test]
fn a_forked_child_recovers_the_lock_of_its_parent_killed_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut parent = common::spawn_child(
        "fork::child_entry",
        "parent-killed-holding",
        dir.path(),
        &[],
    );
    wait_file(dir.path(), "holding");
    parent.kill().unwrap();
    parent.wait().unwrap();
    std::fs::write(dir.path().join("parent-killed"), b"").unwrap();
    let report = wait_file(dir.path(), "child-report");
    assert_eq!(report, "recovered=true alive=true");
}

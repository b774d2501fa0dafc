//! Files from elsewhere at a block's path: a FIFO, a socket, a directory, a device or an
//! oversized file is refused at once, by kind, naming the path, by `activate` and `attach`
//! (and by the reader, which opens blocks the same way). Nothing there is followed, read from
//! or waited on.
//!
//! Regression: a FIFO at the block path made `activate` (and `demo-app run`) wait forever
//! in `open`, for a writer that never came.

use crate::common;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use common::testmap::PrfData;
use prfdata::layout::MAX_BLOCK_SIZE;
use prfdata::Error;

const APP: &str = "PrfDataTest";
const BLOCK: &str = "PrfDataTest.blk";

/// Bound on any one call: a call that blocks fails the test instead of hanging it.
const LIMIT: Duration = Duration::from_secs(20);

/// Runs `f` on a new thread and waits for it at most [`LIMIT`].
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(LIMIT)
        .unwrap_or_else(|_| panic!("{what} did not return within {LIMIT:?}"))
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// Asserts that activating and attaching in `dir` are refused because of what is at the block
/// path, naming it and its kind, and that the reader refuses it too.
fn assert_refused(dir: &Path, kind: &str) {
    let path = dir.join(BLOCK);
    for (what, result) in [
        ("activate", {
            let d = dir.to_path_buf();
            bounded("activate", move || PrfData::activate_in(&d).map(|_| ()))
        }),
        ("attach", {
            let d = dir.to_path_buf();
            bounded("attach", move || PrfData::attach_in(&d).map(|_| ()))
        }),
    ] {
        match result {
            Err(Error::NotRegular { path: p, kind: k }) => {
                assert_eq!(p, path, "{what}");
                assert_eq!(k, kind, "{what}");
                let msg = Error::NotRegular { path: p, kind: k }.to_string();
                assert!(
                    msg.contains(&path.display().to_string()) && msg.contains(kind),
                    "{msg}"
                );
            }
            other => panic!("{what}: expected NotRegular ({kind}), got {other:?}"),
        }
    }
    let p = path.clone();
    let read = bounded("the reader's open", move || {
        prfdata::reader::BlockReader::open_path(APP, &p).is_err()
    });
    assert!(read, "the reader refuses it too");
}

#[test]
fn a_fifo_at_the_block_path_is_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join(BLOCK));
    assert_refused(dir.path(), "FIFO (named pipe)");
    // Nothing was left beside it, and it is still a FIFO (not replaced, not removed).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [BLOCK]);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(dir.path().join(BLOCK))
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_fifo_at_the_block_path_does_not_hang_a_separate_process() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join(BLOCK));
    let child = common::spawn_child(
        "block_files::child_entry",
        "activate-refused",
        dir.path(),
        &[],
    );
    common::wait_ok(child, LIMIT);
}

/// Child role `activate-refused`: activation in the given folder must fail with NotRegular.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if common::role().as_deref() == Some("activate-refused") {
        match PrfData::activate_in(&common::child_dir()) {
            Err(Error::NotRegular { .. }) => {}
            other => panic!("expected NotRegular, got {other:?}"),
        }
    }
}

#[test]
fn a_socket_at_the_block_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(dir.path().join(BLOCK)).unwrap();
    assert_refused(dir.path(), "socket");
}

#[test]
fn a_directory_at_the_block_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(BLOCK)).unwrap();
    assert_refused(dir.path(), "directory");
}

#[test]
#[cfg_attr(
    not(prfdata_tests_mknod),
    ignore = "needs CAP_MKNOD, to make a device node (run as root; see prfdata/build.rs)"
)]
fn a_device_at_the_block_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join(BLOCK);
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // /dev/null's numbers (1, 3): a device that is harmless even if something did open it.
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 3)) };
    assert_eq!(
        rc,
        0,
        "mknod: {}: making a device node needs CAP_MKNOD: run as root, or rebuild as this user \
         (`cargo clean -p prfdata`) so that the test is reported ignored",
        std::io::Error::last_os_error()
    );
    assert_refused(dir.path(), "character device");
}

#[test]
fn a_file_larger_than_any_block_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(BLOCK);
    {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .unwrap();
        file.set_len(MAX_BLOCK_SIZE + 1).unwrap(); // sparse: no space used
    }
    for result in [
        PrfData::attach_in(dir.path()).map(|_| ()),
        PrfData::activate_in(dir.path()).map(|_| ()),
    ] {
        match result {
            Err(Error::TooLarge { path: p, size, max }) => {
                assert_eq!(p, path);
                assert_eq!((size, max), (MAX_BLOCK_SIZE + 1, MAX_BLOCK_SIZE));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        MAX_BLOCK_SIZE + 1,
        "left alone"
    );
}

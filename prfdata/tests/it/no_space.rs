//! A full block folder fails `activate` with `Error::NoSpace` naming ENOSPC and the path, and
//! leaves nothing behind, instead of letting the app run into `SIGBUS` the first time it
//! touches a page of its block that the tmpfs has no room for.
//!
//! The folder is a real tmpfs of 256 KiB, mounted for the test (root only, as CI runs) and
//! filled to its last pages. Where mounting is not allowed, the child process runs under an
//! `RLIMIT_FSIZE` smaller than the block instead, and the reservation fails with EFBIG.
//!
//! Regression: the block was created sparse on the full tmpfs, `activate` succeeded, and
//! the child died of SIGBUS when it updated the counters of its instances.

use crate::common;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use common::testmap::{self, PrfData};
use prfdata::Error;

/// Child exit codes.
const REFUSED_AS_EXPECTED: i32 = 0;
const OTHER_ERROR: i32 = 3;
const ACTIVATED: i32 = 4;

/// The errno name the child expects (`ENOSPC` on the tmpfs, `EFBIG` under RLIMIT_FSIZE).
const ERRNO_ENV: &str = "PRFDATA_TEST_ERRNO";
/// Set to a byte count: the child limits its file size to it first.
const FSIZE_ENV: &str = "PRFDATA_TEST_FSIZE";

/// Child role `activate-full`: activate in the given folder; it must fail with NoSpace naming
/// the expected errno and the block's path. If it activates, touch every counter of every
/// instance (what an app does; it dies of SIGBUS there if its pages were never reserved).
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if common::role().as_deref() != Some("activate-full") {
        return;
    }
    if let Some(limit) = std::env::var_os(FSIZE_ENV) {
        let limit: u64 = limit.to_str().unwrap().parse().unwrap();
        // SAFETY: plain system calls on this process; `rl` outlives the call. Ignoring SIGXFSZ
        // makes a write past the limit fail with EFBIG instead of killing the process.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &rl), 0);
        }
    }
    let expected = std::env::var(ERRNO_ENV).unwrap();
    let dir = common::child_dir();
    let code = match PrfData::activate_in(&dir) {
        Err(e @ Error::NoSpace { .. }) => {
            let msg = e.to_string();
            let Error::NoSpace { path, errno, .. } = e else {
                unreachable!()
            };
            let named = msg.contains(&expected) && msg.contains(&path.display().to_string());
            if errno == expected && path == dir.join("PrfDataTest.blk") && named {
                REFUSED_AS_EXPECTED
            } else {
                eprintln!("NoSpace, but not as expected: {msg}");
                OTHER_ERROR
            }
        }
        Err(e) => {
            eprintln!("activate failed otherwise: {e}");
            OTHER_ERROR
        }
        Ok(prf) => {
            for i in 0..64 {
                let item = prf
                    .add_instance(testmap::ITEMS, &format!("item {i}"))
                    .unwrap();
                prf.get_ctr64(testmap::ITEM_HITS, item)
                    .fetch_add(1, Relaxed);
            }
            ACTIVATED
        }
    };
    std::process::exit(code);
}

/// A tmpfs mounted on a temporary folder, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` bytes, or says why it cannot.
    fn mount(size: usize) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={size},mode=0700"))
            .arg("prfdata-test")
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Fills the file system of `dir` with a file `filler`, leaving `spare` bytes (about) free.
fn fill(dir: &Path, spare: u64) -> PathBuf {
    let filler = dir.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0xA5u8; 4096];
    loop {
        match file.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("fill: {e}"),
        }
    }
    file.flush().ok();
    let len = file.metadata().unwrap().len();
    file.set_len(len.saturating_sub(spare)).unwrap();
    filler
}

/// Runs the `activate-full` child on `dir` and waits for it (bounded).
fn run_child(dir: &Path, env: &[(&str, String)]) -> std::process::ExitStatus {
    let mut child = common::spawn_child("no_space::child_entry", "activate-full", dir, env);
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn assert_refused(status: std::process::ExitStatus) {
    assert_eq!(
        status.signal(),
        None,
        "the child was killed by signal {:?} (SIGBUS is 7): its block was not reserved",
        status.signal()
    );
    match status.code() {
        Some(REFUSED_AS_EXPECTED) => {}
        Some(ACTIVATED) => panic!("activate succeeded in a full folder"),
        other => panic!("the child failed: {other:?}"),
    }
}

/// Names in `dir` other than `filler`.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "filler")
        .collect()
}

#[test]
fn a_full_tmpfs_fails_activate_with_enospc_instead_of_sigbus_later() {
    let block_size =
        prfdata::map::offsets::total_size(<testmap::Map as prfdata::map::PerfDataMap>::DEF) as u64;
    match Tmpfs::mount(256 * 1024) {
        Ok(fs) => {
            // One page free: room for the header and records, not for the whole block.
            assert!(block_size > 3 * 4096, "the test block spans several pages");
            let filler = fill(fs.path(), 4096);
            assert_refused(run_child(fs.path(), &[(ERRNO_ENV, "ENOSPC".into())]));
            assert_eq!(
                leftovers(fs.path()),
                Vec::<String>::new(),
                "nothing left behind"
            );
            // Room made, the same folder works.
            std::fs::remove_file(filler).unwrap();
            let prf = PrfData::activate_in(fs.path()).expect("activates once there is room");
            let item = prf.add_instance(testmap::ITEMS, "x").unwrap();
            prf.get_ctr64(testmap::ITEM_HITS, item)
                .fetch_add(1, Relaxed);
        }
        Err(why) => {
            eprintln!("no tmpfs ({why}); using RLIMIT_FSIZE in the child instead");
            let dir = tempfile::tempdir().unwrap();
            let limit = (block_size / 2).to_string();
            assert_refused(run_child(
                dir.path(),
                &[(ERRNO_ENV, "EFBIG".into()), (FSIZE_ENV, limit)],
            ));
            assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        }
    }
}

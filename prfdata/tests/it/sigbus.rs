//! The reader's process-wide `SIGBUS` handler, in child processes: it repairs faults in the
//! mappings being read and nothing else. A fault anywhere else goes to the handler installed
//! before it, or, if there was none, kills the process with `SIGBUS` as it would have without
//! prfdata.

use crate::common;
use std::ffi::c_int;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use crate::common::snapshot::{ReadAll, Snapshot};
use common::testmap::PrfData;
use prfdata::reader::{BlockReader, ReadError};

/// What the application's own handler exits with.
const APP_HANDLER_EXIT: i32 = 42;

extern "C" fn app_handler(_sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: `_exit` is async-signal-safe.
    unsafe { libc::_exit(APP_HANDLER_EXIT) };
}

/// Installs [`app_handler`] for SIGBUS, as an application might before it reads any block.
fn install_app_handler() {
    // SAFETY: all-zero is a valid `sigaction`; the handler has the SA_SIGINFO signature.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = app_handler as *const () as libc::sighandler_t;
        act.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut act.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()), 0);
    }
}

/// Opens a reader on a block in `dir` (installing prfdata's handler), then faults on a mapping
/// of another file, which no reader watches.
fn fault_outside_any_read(dir: &std::path::Path) {
    let prf = PrfData::activate_in(dir).expect("activate");
    let reader = BlockReader::open_path("PrfDataTest", prf.path()).expect("open the block");
    let mut snap = Snapshot::default();
    reader.read(&mut snap).expect("read the block");
    let path = dir.join("other");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    file.set_len(8192).unwrap();
    let map = memmap2::MmapRaw::map_raw(&file).unwrap();
    file.set_len(0).unwrap();
    // SAFETY: in bounds of the mapping; the read faults (the file is empty now), which is the
    // point: no reader watches this mapping.
    let byte = unsafe { std::ptr::read_volatile(map.as_ptr().add(4096)) };
    println!("read {byte} past the end of a file: not reached");
}

/// Child roles.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    let Some(role) = common::role() else {
        return;
    };
    let dir = common::child_dir();
    match role.as_str() {
        "no-prior-handler" => {
            // The Rust runtime installs a SIGBUS handler of its own (for stack overflows): take
            // it away, so that prfdata's handler finds the default action before it.
            // SAFETY: restoring the default action of a signal.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
            fault_outside_any_read(&dir);
        }
        "prior-handler" => {
            install_app_handler();
            fault_outside_any_read(&dir);
        }
        "prior-handler-truncated-read" => {
            install_app_handler();
            let prf = PrfData::activate_in(&dir).expect("activate");
            let reader = BlockReader::open_path("PrfDataTest", prf.path()).expect("open");
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(prf.path())
                .unwrap();
            file.set_len(0).unwrap();
            // Inside a read window: ours, not the application's handler.
            let got = reader.read_with(Duration::from_millis(20), |view| {
                (0..view.reader().objects().len())
                    .map(|k| view.live_count(k))
                    .collect::<Result<Vec<_>, _>>()
            });
            assert!(
                matches!(got, Err(ReadError::Truncated { actual: 0, .. })),
                "{got:?}"
            );
            assert!(reader.is_replaced(), "the reader is spent");
            std::mem::forget(prf); // its own mapping is past the end of the file now
            std::process::exit(0);
        }
        other => panic!("unknown role {other}"),
    }
}

fn run(role: &str) -> std::process::ExitStatus {
    let dir = tempfile::tempdir().unwrap();
    let mut child = common::spawn_child("sigbus::child_entry", role, dir.path(), &[]);
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the {role} child did not finish");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_fault_outside_any_read_still_kills_with_sigbus() {
    let status = run("no-prior-handler");
    assert_eq!(status.signal(), Some(libc::SIGBUS), "{status:?}");
}

#[test]
fn a_fault_outside_any_read_goes_to_the_handler_installed_before() {
    let status = run("prior-handler");
    assert_eq!(status.code(), Some(APP_HANDLER_EXIT), "{status:?}");
}

#[test]
fn a_fault_inside_a_read_is_the_readers_even_under_another_handler() {
    let status = run("prior-handler-truncated-read");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

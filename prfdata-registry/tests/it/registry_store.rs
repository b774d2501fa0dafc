//! The file-backed store: a process killed in the middle of an update leaves the old state or
//! the new one and no lock held; a corrupt store file is a clear error naming file and line.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use prfdata_registry::{
    paths, update, FileRegistry, Hive, Registry, RegistryError, Value, FAULT_ENV,
};

const CHILD_ENV: &str = "PRFDATA_TEST_STORE_CHILD";
const CHILD_WAIT: Duration = Duration::from_secs(60);
const SIGKILL: i32 = 9;

/// The update the child makes: several keys and values, so a torn write would show.
fn big_edit(hive: &mut Hive) -> Result<(), RegistryError> {
    for i in 0..200 {
        hive.set_value(
            &paths::performance(&format!("Svc{i:03}")),
            "Library",
            Value::Sz(format!("/opt/svc{i}/libperf.so")),
        )?;
    }
    hive.set_value(paths::PERFLIB, "Last Counter", Value::Dword(9998))
}

/// Entry point of the re-executed test binary: `PRFDATA_TEST_STORE_CHILD=<registry root>`.
#[test]
fn child_entry() {
    let Ok(root) = std::env::var(CHILD_ENV) else {
        return;
    };
    let reg = FileRegistry::open(root).expect("child: open registry");
    update(&reg, big_edit).expect("child: update");
    std::process::exit(0);
}

fn spawn_child(root: &Path, fault: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "registry_store::child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, root)
        .env(FAULT_ENV, fault)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child")
}

fn wait_bounded(mut child: Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + CHILD_WAIT;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("child did not finish within {CHILD_WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn killed_child_leaves_old_or_new(fault: &str, expect_new: bool) {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    let old = reg.snapshot().unwrap();
    let mut new = old.clone();
    big_edit(&mut new).unwrap();

    let status = wait_bounded(spawn_child(dir.path(), fault));
    assert_eq!(
        status.signal(),
        Some(SIGKILL),
        "{fault}: child must die by SIGKILL"
    );

    let after = reg.snapshot().expect("the store still loads");
    let want = if expect_new { &new } else { &old };
    assert!(
        after == *want,
        "{fault}: store holds neither the old nor the new state"
    );

    // The flock died with the process: the next update is granted at once.
    let started = Instant::now();
    update(&reg, |hive| {
        hive.set_value(r"HKLM\SOFTWARE\After", "ok", Value::Dword(1))
    })
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty(), "stale temp files: {leftovers:?}");
}

#[test]
fn killed_after_taking_the_lock_leaves_the_old_state() {
    killed_child_leaves_old_or_new("after-lock", false);
}

#[test]
fn killed_mid_temp_write_leaves_the_old_state() {
    killed_child_leaves_old_or_new("mid-temp-write", false);
}

#[test]
fn killed_after_temp_write_leaves_the_old_state() {
    killed_child_leaves_old_or_new("after-temp-write", false);
}

#[test]
fn killed_after_rename_leaves_the_new_state() {
    killed_child_leaves_old_or_new("after-rename", true);
}

#[test]
fn corrupt_store_is_an_error_naming_file_and_line_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    let garbage = "format = 1\n\n[[key]]\npath = 'HKLM\\X'\n[[key.value]]\nname = 'n'\ntype = 'REG_DWORD'\ndata = \"not a number\"\n";
    std::fs::write(reg.store_path(), garbage).unwrap();

    let err = reg.snapshot().unwrap_err();
    assert!(
        matches!(&err, RegistryError::Corrupt { line: Some(8), .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("registry.toml") && msg.contains("line 8"),
        "{msg}"
    );

    let res = update(&reg, |hive| hive.set_value(r"HKLM\Y", "v", Value::Dword(1)));
    assert!(matches!(res, Err(RegistryError::Corrupt { .. })));
    assert_eq!(std::fs::read_to_string(reg.store_path()).unwrap(), garbage);
}

#[test]
fn binary_garbage_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    std::fs::write(reg.store_path(), [0xff, 0xfe, 0x00, 0x41]).unwrap();
    assert!(matches!(reg.snapshot(), Err(RegistryError::Corrupt { .. })));
}

#[test]
fn updates_from_threads_are_serialised() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..10 {
                    update(&reg, |hive| {
                        let n = hive
                            .value(r"HKLM\SOFTWARE\Count", "n")?
                            .and_then(Value::as_dword)
                            .unwrap_or(0);
                        hive.set_value(r"HKLM\SOFTWARE\Count", "n", Value::Dword(n + 1))
                    })
                    .unwrap();
                }
            });
        }
    });
    let hive = reg.snapshot().unwrap();
    assert_eq!(
        hive.value(r"HKLM\SOFTWARE\Count", "n").unwrap(),
        Some(&Value::Dword(40))
    );
}

/// The temporary files in a registry folder.
fn temp_files(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect()
}

#[test]
fn a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    let before = reg.snapshot().unwrap();
    let status = wait_bounded(spawn_child(dir.path(), "mid-temp-write"));
    assert_eq!(status.signal(), Some(SIGKILL));
    assert_eq!(
        temp_files(dir.path()).len(),
        1,
        "the killed writer left one"
    );

    // A reader only: no update runs, and the temp file still goes.
    let reg = FileRegistry::open(dir.path()).unwrap();
    assert_eq!(reg.snapshot().unwrap(), before);
    assert!(
        temp_files(dir.path()).is_empty(),
        "{:?}",
        temp_files(dir.path())
    );
}

#[test]
fn a_live_writers_temp_file_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    FileRegistry::open(dir.path()).unwrap();
    // A writer in the middle of its update: it holds the lock and has its temp file.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join(paths::LOCK_FILE))
        .unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let temp = dir
        .path()
        .join(format!("{}.tmp.4194304", paths::STORE_FILE));
    std::fs::write(&temp, "format = 1\n").unwrap();

    FileRegistry::open(dir.path()).unwrap();
    assert!(temp.exists(), "a live writer's temp file was removed");

    drop(lock);
    FileRegistry::open(dir.path()).unwrap();
    assert!(!temp.exists(), "the lock is free: the file is stale");
}

//! Files another process could have placed, through the real `prfmon` binary: `/dev/zero`, a
//! FIFO whose writer never writes, a sparse file above the size cap, and a symbolic link to a
//! file of another user. Each is refused quickly, with a message naming the file and the rule,
//! in a process whose address space is capped at 1 GiB (so unbounded memory shows as a crash,
//! not as a slow test) and under a bounded wait (so a hang fails instead of blocking CI).

use crate::common;

use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{finish, Run};

/// The address-space cap of every prfmon run here.
const MEMORY_CAP: u64 = 1 << 30;

/// Runs `prfmon args...` with `PRFDATA_REGISTRY=root`, its address space capped at
/// [`MEMORY_CAP`], no stdin, and a bounded wait.
pub fn prfmon_capped(root: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prfmon"));
    command
        .args(args)
        .env("PRFDATA_REGISTRY", root)
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs in the forked child before exec and only makes one system call
    // (setrlimit), which is async-signal-safe; it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(|| {
            let limit = rustix::process::Rlimit {
                current: Some(MEMORY_CAP),
                maximum: Some(MEMORY_CAP),
            };
            rustix::process::setrlimit(rustix::process::Resource::As, limit)
                .map_err(std::io::Error::from)
        });
    }
    finish(command.spawn().expect("spawn prfmon"))
}

/// A FIFO at `path`, and an open writer that never writes (kept open by the caller).
fn fifo_with_silent_writer(path: &Path) -> File {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    // Read-write: on Linux this open does not wait for a reader, and the FIFO has a writer.
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open the FIFO")
}

/// A sparse file of `size` bytes (no disk used).
fn sparse(path: &Path, size: u64) {
    File::create(path)
        .and_then(|f| f.set_len(size))
        .expect("sparse file");
}

/// A file with `text` owned by another user (uid and gid 65534, `nobody`) when running as root.
fn other_users_file(path: &Path, text: &str) -> PathBuf {
    std::fs::write(path, text).expect("write");
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(path, Some(65534), Some(65534)).expect("chown to nobody");
    }
    path.to_path_buf()
}

/// A refusal: exit status 1, no panic, and stderr naming `path` and containing `rule`.
fn assert_refused(run: &Run, path: &Path, rule: &str) {
    assert_eq!(run.code, 1, "status; stderr: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&path.display().to_string()),
        "names {}: {}",
        path.display(),
        run.stderr
    );
    assert!(run.stderr.contains(rule), "says `{rule}`: {}", run.stderr);
}

#[test]
fn decode_refuses_dev_zero_a_fifo_and_a_file_over_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");

    let run = prfmon_capped(&root, &["decode", "/dev/zero"]);
    assert_refused(&run, Path::new("/dev/zero"), "is a character device");

    let fifo = dir.path().join("data.fifo");
    let _writer = fifo_with_silent_writer(&fifo);
    let run = prfmon_capped(&root, &["decode", fifo.to_str().unwrap()]);
    assert_refused(&run, &fifo, "is a FIFO, not a regular file");

    // 4 GiB: one byte past MAX_DECODE_INPUT, the largest PERF_DATA_BLOCK (a sparse file).
    let big = dir.path().join("big.raw");
    sparse(&big, u64::from(u32::MAX) + 1);
    let run = prfmon_capped(&root, &["decode", big.to_str().unwrap()]);
    assert_refused(&run, &big, "is larger than the 4294967295 bytes allowed");
}

#[test]
fn decode_follows_a_link_the_user_typed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    let raw = dir.path().join("collection.raw");
    let run = prfmon_capped(&root, &["query", "--raw", raw.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let link = dir.path().join("link.raw");
    std::os::unix::fs::symlink(&raw, &link).unwrap();
    let run = prfmon_capped(&root, &["decode", link.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

const DEVDEF_H: &str = "#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2\n";
const DEVICE_INI: &str = "[info]\ndrivername=DriverName\nsymbolfile=devdef.h\n[languages]\n009=English\n[text]\nOBJECT_1_009_NAME=Device Name\nDEVICE_COUNTER_1_009_NAME=Counter A\n";

#[test]
fn lodctr_refuses_dev_zero_a_fifo_and_an_ini_over_the_cap_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    assert_eq!(prfmon_capped(&root, &["reg", "query", "HKLM"]).code, 0);
    let before = std::fs::read(root.join("registry.toml")).unwrap();

    let run = prfmon_capped(&root, &["lodctr", "/dev/zero"]);
    assert_refused(&run, Path::new("/dev/zero"), "is a character device");

    let fifo = dir.path().join("device.ini");
    let _writer = fifo_with_silent_writer(&fifo);
    let run = prfmon_capped(&root, &["lodctr", fifo.to_str().unwrap()]);
    assert_refused(&run, &fifo, "is a FIFO, not a regular file");

    // 8 MiB + 1: MAX_INI_SIZE.
    let big = dir.path().join("big.ini");
    sparse(&big, 8 * 1024 * 1024 + 1);
    let run = prfmon_capped(&root, &["lodctr", big.to_str().unwrap()]);
    assert_refused(&run, &big, "is larger than the 8388608 bytes allowed");

    assert_eq!(std::fs::read(root.join("registry.toml")).unwrap(), before);
}

#[test]
fn lodctr_refuses_a_symbol_file_that_is_a_link_or_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    let ini = dir.path().join("device.ini");
    std::fs::write(&ini, DEVICE_INI).unwrap();

    // devdef.h is a link to a file another user owns (the contents would even load).
    let theirs = other_users_file(&dir.path().join("theirs.h"), DEVDEF_H);
    let h = dir.path().join("devdef.h");
    std::os::unix::fs::symlink(&theirs, &h).unwrap();
    let run = prfmon_capped(&root, &["lodctr", ini.to_str().unwrap()]);
    assert_refused(&run, &h, "is a symbolic link");

    // devdef.h is a FIFO nobody writes to.
    std::fs::remove_file(&h).unwrap();
    let _writer = fifo_with_silent_writer(&h);
    let run = prfmon_capped(&root, &["lodctr", ini.to_str().unwrap()]);
    assert_refused(&run, &h, "is a FIFO, not a regular file");
    assert!(
        run.stderr.contains("device.ini:3"),
        "names the symbolfile= line: {}",
        run.stderr
    );
}

#[test]
fn lodctr_follows_a_link_to_the_ini_the_user_typed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    std::fs::write(dir.path().join("devdef.h"), DEVDEF_H).unwrap();
    std::fs::write(dir.path().join("device.ini"), DEVICE_INI).unwrap();
    let link = dir.path().join("link.ini");
    std::os::unix::fs::symlink(dir.path().join("device.ini"), &link).unwrap();
    let run = prfmon_capped(&root, &["lodctr", link.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_registry_store_that_is_a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    std::fs::create_dir_all(&root).unwrap();
    let store = root.join("registry.toml");
    let _writer = fifo_with_silent_writer(&store);
    for args in [
        &["reg", "query", "HKLM"][..],
        &["reg", "add", r"HKLM\SOFTWARE\X", "/f"],
    ] {
        let run = prfmon_capped(&root, args);
        assert_refused(&run, &store, "is a FIFO, not a regular file");
    }
    // The collecting commands' trust checks refuse it first (with or without --trust-path).
    let run = prfmon_capped(&root, &["query"]);
    assert_refused(&run, &store, "not a regular file");
}

#[test]
fn a_registry_store_linked_to_another_users_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Another user's registry, with a service of theirs.
    let theirs_root = dir.path().join("theirs");
    let run = prfmon_capped(
        &theirs_root,
        &[
            "reg",
            "add",
            r"HKLM\SYSTEM\CurrentControlSet\Services\Theirs\Performance",
            "/v",
            "Library",
            "/d",
            "/home/them/libevil.so",
            "/f",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let their_store = theirs_root.join("registry.toml");
    let text = std::fs::read_to_string(&their_store).unwrap();
    other_users_file(&their_store, &text);

    let root = dir.path().join("registry");
    std::fs::create_dir_all(&root).unwrap();
    let store = root.join("registry.toml");
    std::os::unix::fs::symlink(&their_store, &store).unwrap();
    let run = prfmon_capped(&root, &["reg", "query", r"HKLM\SYSTEM", "/s"]);
    assert_refused(&run, &store, "is a symbolic link");
    assert!(!run.stdout.contains("libevil"), "{}", run.stdout);
    // The collecting commands' trust checks refuse the other user's file first; with
    // `--trust-path` they admit it, and the file rule still refuses the link.
    let run = prfmon_capped(&root, &["list"]);
    if rustix::process::geteuid().is_root() {
        assert_refused(
            &run,
            &store,
            "is owned by neither root nor the collector's user",
        );
    } else {
        assert_refused(&run, &store, "is a symbolic link");
    }
    let trust = dir.path().display().to_string();
    let run = prfmon_capped(&root, &["list", "--trust-path", &trust]);
    assert_refused(&run, &store, "is a symbolic link");
    let run = prfmon_capped(&root, &["reg", "add", r"HKLM\SOFTWARE\X", "/f"]);
    assert_refused(&run, &store, "is a symbolic link");
    assert_eq!(std::fs::read_to_string(&their_store).unwrap(), text);
}

#[test]
fn a_registry_store_over_the_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    std::fs::create_dir_all(&root).unwrap();
    let store = root.join("registry.toml");
    // 16 MiB + 1: MAX_STORE_SIZE.
    sparse(&store, 16 * 1024 * 1024 + 1);
    let run = prfmon_capped(&root, &["reg", "query", "HKLM"]);
    assert_refused(&run, &store, "is larger than the 16777216 bytes allowed");
}

#[test]
fn a_registry_lock_linked_to_another_users_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    assert_eq!(prfmon_capped(&root, &["reg", "query", "HKLM"]).code, 0);
    let theirs = other_users_file(&dir.path().join("their-file"), "theirs\n");
    let lock = root.join("registry.lock");
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&theirs, &lock).unwrap();
    let before = std::fs::read(root.join("registry.toml")).unwrap();

    let run = prfmon_capped(&root, &["reg", "add", r"HKLM\SOFTWARE\X", "/f"]);
    assert_refused(&run, &lock, "is a symbolic link");
    assert_eq!(std::fs::read(root.join("registry.toml")).unwrap(), before);
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs\n");
}

#[test]
fn lodctr_restore_refuses_dev_zero_a_fifo_and_a_file_over_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    assert_eq!(prfmon_capped(&root, &["reg", "query", "HKLM"]).code, 0);

    let run = prfmon_capped(&root, &["lodctr", "/R:/dev/zero"]);
    assert_refused(&run, Path::new("/dev/zero"), "is a character device");

    let fifo = dir.path().join("saved.fifo");
    let _writer = fifo_with_silent_writer(&fifo);
    let run = prfmon_capped(&root, &["lodctr", &format!("/R:{}", fifo.display())]);
    assert_refused(&run, &fifo, "is a FIFO, not a regular file");

    let big = dir.path().join("saved.toml");
    sparse(&big, 16 * 1024 * 1024 + 1);
    let run = prfmon_capped(&root, &["lodctr", &format!("/R:{}", big.display())]);
    assert_refused(&run, &big, "is larger than the 16777216 bytes allowed");
}

#[test]
fn lodctr_save_to_a_fifo_without_a_reader_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    let fifo = dir.path().join("saved.fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let run = prfmon_capped(&root, &["lodctr", &format!("/S:{}", fifo.display())]);
    assert_refused(&run, &fifo, "is a FIFO, not a regular file");
    let run = prfmon_capped(&root, &["lodctr", "/S:/dev/null"]);
    assert_refused(&run, Path::new("/dev/null"), "is a character device");
}

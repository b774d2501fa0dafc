//! The registry against other local users: private to its owner (folder 0700, files 0600), an
//! old registry open to others tightened when its owner opens it (one message), another user
//! can neither read the store nor hold the lock every update takes, and root writing a user's
//! registry leaves it that user's. Real processes: `prfmon` as the owner (root here), a copy of
//! this test binary run as uid 65534.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use prfdata_testkit::{ready, ChildGuard};

use crate::common::{prfmon, Run, TEST_WAIT};
use crate::privilege::{
    assert_root, chmod, other_users_folder, self_command_as, shared_tempdir, spawn_copied,
    OTHER_UID,
};

/// A key every update here writes.
const KEY: &str = r"HKLM\SOFTWARE\PrivacyTest";

/// Tells the re-executed binary it is the other user's probe: the registry folder to try.
const PROBE_ROOT: &str = "PRFMON_TEST_PROBE_ROOT";
/// Where the probe writes what it could do.
const PROBE_REPORT: &str = "PRFMON_TEST_PROBE_REPORT";

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

fn owner(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().uid()
}

/// `prfmon reg add KEY /v name /d data /f` on the registry in `root`.
fn reg_add(root: &Path, name: &str) -> Run {
    prfmon(root, &["reg", "add", KEY, "/v", name, "/d", "x", "/f"])
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn a_new_registry_is_private_to_its_owner() {
    assert_root("a_new_registry_is_private_to_its_owner");
    let dir = shared_tempdir();
    let root = dir.path().join("state/prfdata");
    let run = reg_add(&root, "First");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mode(&root), 0o700, "the folder");
    assert_eq!(mode(&root.join("registry.toml")), 0o600, "the store");
    assert_eq!(mode(&root.join("registry.lock")), 0o600, "the lock file");
    assert_eq!(mode(&root.join("registry.log")), 0o600, "the journal");
    assert_eq!(
        mode(&dir.path().join("state")),
        0o700,
        "a folder made on the way"
    );
    // Every later update keeps the store and the journal private (an update appends a record
    // to the journal, or writes both files again).
    let journal = std::fs::metadata(root.join("registry.log")).unwrap().len();
    assert_eq!(reg_add(&root, "Second").code, 0);
    assert!(
        std::fs::metadata(root.join("registry.log")).unwrap().len() > journal,
        "the update went to the journal"
    );
    assert_eq!(mode(&root.join("registry.toml")), 0o600);
    assert_eq!(mode(&root.join("registry.log")), 0o600);

    // A folder the user made for it (mkdir: 0755) holds nothing yet: made private, silently.
    let made = dir.path().join("made");
    std::fs::create_dir(&made).unwrap();
    chmod(&made, 0o755);
    let run = reg_add(&made, "First");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(mode(&made), 0o700);
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn an_old_registry_open_to_others_is_tightened_with_one_message() {
    assert_root("an_old_registry_open_to_others_is_tightened_with_one_message");
    let dir = shared_tempdir();
    let root = dir.path().join("registry");
    assert_eq!(reg_add(&root, "Old").code, 0);
    // As the registry was made before: 0755 and 0644.
    chmod(&root, 0o755);
    chmod(&root.join("registry.toml"), 0o644);
    chmod(&root.join("registry.lock"), 0o644);
    chmod(&root.join("registry.log"), 0o644);

    let run = prfmon(&root, &["reg", "query", KEY]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains(&root.display().to_string()))
        .collect();
    assert_eq!(said.len(), 1, "one message: {}", run.stderr);
    for part in [
        "0755 to 0700",
        "registry.toml 0644 to 0600",
        "registry.lock 0644 to 0600",
        "registry.log 0644 to 0600",
    ] {
        assert!(said[0].contains(part), "{part:?} in {}", said[0]);
    }
    assert_eq!(mode(&root), 0o700);
    assert_eq!(mode(&root.join("registry.toml")), 0o600);
    assert_eq!(mode(&root.join("registry.lock")), 0o600);
    assert_eq!(mode(&root.join("registry.log")), 0o600);

    let again = prfmon(&root, &["reg", "query", KEY]);
    assert!(
        !again.stderr.contains(&root.display().to_string()),
        "nothing left to say: {}",
        again.stderr
    );
}

/// `ok`, or the kind of error.
fn outcome(error: Option<&std::io::Error>) -> String {
    error.map_or_else(|| "ok".to_owned(), |e| format!("{:?}", e.kind()))
}

/// The other user's probe: opens `registry.lock` read-only and `flock`s it (what any user who
/// can open the file can do), reads `registry.toml` and `registry.log`, opens the registry as
/// prfdata does, reports the four, and holds the lock, if it got it, until it is killed.
#[test]
#[ignore = "entry point for the other user's probe process"]
fn other_user_probe() {
    let (Some(root), Some(report)) = (
        std::env::var_os(PROBE_ROOT).map(PathBuf::from),
        std::env::var_os(PROBE_REPORT).map(PathBuf::from),
    ) else {
        return;
    };
    let lock = std::fs::File::open(root.join("registry.lock")).and_then(|file| {
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
        Ok(file)
    });
    let read = std::fs::read(root.join("registry.toml"));
    let journal = std::fs::read(root.join("registry.log"));
    let opened = prfdata_registry::FileRegistry::open(&root)
        .map_or_else(|e| e.to_string(), |_| "ok".to_owned());
    let text = format!(
        "lock: {}\nread: {}\njournal: {}\nopen: {opened}\n",
        outcome(lock.as_ref().err()),
        outcome(read.as_ref().err()),
        outcome(journal.as_ref().err())
    );
    ready::publish(&report, text.as_bytes()).expect("the probe's report");
    if lock.is_ok() {
        std::thread::sleep(TEST_WAIT);
    }
}

/// Runs [`other_user_probe`] as uid 65534 on the registry in `root`, from a copy of this binary
/// in `dir` (which every user can reach); returns it, running, and its report's lines.
fn probe(dir: &Path, root: &Path) -> (ChildGuard, Vec<String>) {
    let reports = other_users_folder(dir, "probe");
    let report = reports.join("report");
    let child = spawn_copied(
        self_command_as(
            dir,
            &prfdata_testkit::test_path!("other_user_probe"),
            Some(OTHER_UID),
        )
        .env(PROBE_ROOT, root)
        .env(PROBE_REPORT, &report),
    )
    .expect("spawn the probe");
    let guard = ChildGuard::new(child, "the other user's probe");
    let said = String::from_utf8(ready::wait(&report, TEST_WAIT)).unwrap();
    (guard, said.lines().map(str::to_owned).collect())
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn another_user_can_neither_hold_the_registry_lock_nor_read_the_store() {
    assert_root("another_user_can_neither_hold_the_registry_lock_nor_read_the_store");
    let dir = shared_tempdir();
    let root = dir.path().join("registry");
    assert_eq!(reg_add(&root, "Before").code, 0);
    let (_probe, said) = probe(dir.path(), &root);
    assert_eq!(
        said[..3],
        [
            "lock: PermissionDenied",
            "read: PermissionDenied",
            "journal: PermissionDenied"
        ],
        "what uid {OTHER_UID} could do"
    );

    // The owner's update goes through at once, the probe still running (it would have held
    // the lock for the whole LOCK_WAIT, 30 s, and the update failed).
    let run = reg_add(&root, "After");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn a_users_registry_stays_theirs_when_root_writes_it() {
    assert_root("a_users_registry_stays_theirs_when_root_writes_it");
    let dir = shared_tempdir();
    let root = other_users_folder(dir.path(), "registry");
    chmod(&root, 0o700);
    // Root's update creates the store, the lock file and a temporary file in the user's
    // folder: each is given to the folder's owner.
    let run = reg_add(&root, "ByRoot");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(reg_add(&root, "AgainByRoot").code, 0, "a journal record");
    for name in ["registry.toml", "registry.lock", "registry.log"] {
        let path = root.join(name);
        assert_eq!(owner(&path), OTHER_UID, "{name}");
        assert_eq!(mode(&path), 0o600, "{name}");
    }
    assert_eq!(owner(&root), OTHER_UID);
    assert_eq!(
        mode(&root),
        0o700,
        "not root's to change, and private already"
    );
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn a_registry_of_another_user_is_refused_naming_its_owner_and_the_fix() {
    assert_root("a_registry_of_another_user_is_refused_naming_its_owner_and_the_fix");
    const THIRD_UID: u32 = OTHER_UID - 1;
    // A folder a third user made, open to all: uid 65534 would share it with them.
    let dir = shared_tempdir();
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(THIRD_UID), Some(THIRD_UID)).unwrap();
    chmod(&theirs, 0o777);
    let (_probe, said) = probe(dir.path(), &theirs);
    let open = &said[3];
    for part in [
        "registry folder",
        &format!("owned by uid {THIRD_UID}"),
        &format!("(uid {OTHER_UID})"),
        "PRFDATA_REGISTRY",
    ] {
        assert!(open.contains(part), "{part:?} in {open}");
    }
    assert!(
        !theirs.join("registry.toml").exists(),
        "nothing was written there"
    );

    // The user's own folder, with a lock file the third user planted while it was open.
    let dir = shared_tempdir();
    let own = other_users_folder(dir.path(), "own");
    let planted = own.join("registry.lock");
    std::fs::write(&planted, "").unwrap();
    std::os::unix::fs::chown(&planted, Some(THIRD_UID), Some(THIRD_UID)).unwrap();
    chmod(&planted, 0o666);
    let (_probe, said) = probe(dir.path(), &own);
    let open = &said[3];
    for part in [
        "registry lock file",
        &format!("owned by uid {THIRD_UID}"),
        "remove it",
    ] {
        assert!(open.contains(part), "{part:?} in {open}");
    }
}

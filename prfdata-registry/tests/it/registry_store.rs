//! The file-backed store and its journal: a process killed in the middle of an update leaves
//! the old state or the new one, no record applied twice and no lock held; a corrupt store or
//! journal is a clear error naming file and line; a torn last record is left out and cut off.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use prfdata_registry::{
    log_appends, paths, store_writes, update, FileRegistry, Hive, Registry, RegistryError, Value,
    FAULT_ENV,
};

const CHILD_ENV: &str = "PRFDATA_TEST_STORE_CHILD";
/// Which update the child makes: [`Edit`]'s name.
const EDIT_ENV: &str = "PRFDATA_TEST_STORE_EDIT";
const CHILD_WAIT: Duration = Duration::from_secs(60);
const SIGKILL: i32 = 9;

/// The key of the list every update here appends to: an update applied twice would show as
/// its entry twice.
const LIST_KEY: &str = r"HKLM\SOFTWARE\JournalTest";

/// The update a child makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    /// One entry appended to the list and one value set: a journal record.
    Small,
    /// The same and 2,000 services: more than the journal takes, so the update writes a new
    /// store (and starts a new journal).
    Big,
}

impl Edit {
    fn name(self) -> &'static str {
        match self {
            Edit::Small => "small",
            Edit::Big => "big",
        }
    }

    fn apply(self, hive: &mut Hive) -> Result<(), RegistryError> {
        if self == Edit::Big {
            for i in 0..2000 {
                hive.set_value(
                    &paths::performance(&format!("Svc{i:04}")),
                    "Library",
                    Value::Sz(format!("/opt/svc{i}/libperf.so")),
                )?;
            }
        }
        append_entry(hive, "child")?;
        hive.set_value(paths::PERFLIB, "Last Counter", Value::Dword(9998))
    }
}

/// Appends `entry` to the list at [`LIST_KEY`] (made if missing).
fn append_entry(hive: &mut Hive, entry: &str) -> Result<(), RegistryError> {
    if hive.value(LIST_KEY, "List")?.is_none() {
        hive.set_value(LIST_KEY, "List", Value::MultiSz(Vec::new()))?;
    }
    let len = list(hive).len();
    hive.splice_multi_sz(LIST_KEY, "List", len, 0, [entry.to_owned()])
}

/// The list's entries.
fn list(hive: &Hive) -> Vec<String> {
    hive.value(LIST_KEY, "List")
        .unwrap()
        .and_then(Value::as_multi_sz)
        .map(<[String]>::to_vec)
        .unwrap_or_default()
}

/// Entry point of the re-executed test binary: `PRFDATA_TEST_STORE_CHILD=<registry root>`,
/// `PRFDATA_TEST_STORE_EDIT=small|big`.
#[test]
fn child_entry() {
    let Ok(root) = std::env::var(CHILD_ENV) else {
        return;
    };
    let edit = match std::env::var(EDIT_ENV).as_deref() {
        Ok("small") => Edit::Small,
        _ => Edit::Big,
    };
    let reg = FileRegistry::open(root).expect("child: open registry");
    update(&reg, |hive| edit.apply(hive)).expect("child: update");
    std::process::exit(0);
}

fn spawn_child(root: &Path, fault: &str, edit: Edit) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "registry_store::child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, root)
        .env(EDIT_ENV, edit.name())
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

/// A registry whose journal holds two updates (two entries of the list) besides the new
/// registry's state.
fn registry_with_a_journal(root: &Path) -> FileRegistry {
    let reg = FileRegistry::open(root).unwrap();
    for entry in ["parent 1", "parent 2"] {
        update(&reg, |hive| append_entry(hive, entry)).unwrap();
    }
    reg
}

fn killed_child_leaves_old_or_new(fault: &str, edit: Edit, expect_new: bool) {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry_with_a_journal(dir.path());
    let old = reg.snapshot().unwrap();
    let mut new = old.clone();
    edit.apply(&mut new).unwrap();

    let status = wait_bounded(spawn_child(dir.path(), fault, edit));
    assert_eq!(
        status.signal(),
        Some(SIGKILL),
        "{fault}: child must die by SIGKILL"
    );

    let want = if expect_new { &new } else { &old };
    for reader in [reg.clone(), FileRegistry::open(dir.path()).unwrap()] {
        let after = reader.snapshot().expect("the registry still loads");
        assert_eq!(list(&after), list(want), "{fault}: the list");
        assert!(
            after == *want,
            "{fault}: the registry holds neither the old nor the new state"
        );
    }

    // The flock died with the process: the next update is granted at once, and goes on from
    // the state the reader saw.
    let started = Instant::now();
    update(&reg, |hive| append_entry(hive, "after")).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut next = want.clone();
    append_entry(&mut next, "after").unwrap();
    assert!(
        FileRegistry::open(dir.path()).unwrap().snapshot().unwrap() == next,
        "{fault}: the update after it"
    );
    assert!(
        temp_files(dir.path()).is_empty(),
        "stale temp files: {:?}",
        temp_files(dir.path())
    );
}

#[test]
fn killed_after_taking_the_lock_leaves_the_old_state() {
    killed_child_leaves_old_or_new("after-lock", Edit::Small, false);
}

#[test]
fn killed_mid_append_leaves_the_old_state_and_the_torn_record_is_cut() {
    killed_child_leaves_old_or_new("mid-append", Edit::Small, false);
}

#[test]
fn killed_after_append_before_fsync_leaves_the_new_state() {
    killed_child_leaves_old_or_new("after-append", Edit::Small, true);
}

#[test]
fn killed_mid_temp_write_leaves_the_old_state() {
    killed_child_leaves_old_or_new("mid-temp-write", Edit::Big, false);
}

#[test]
fn killed_after_temp_write_leaves_the_old_state() {
    killed_child_leaves_old_or_new("after-temp-write", Edit::Big, false);
}

/// Killed between the new store's rename and the new journal: the old journal's records are
/// all in the new store, and none is applied again.
#[test]
fn killed_after_rename_leaves_the_new_state_with_no_record_applied_twice() {
    killed_child_leaves_old_or_new("after-rename", Edit::Big, true);
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
    let status = wait_bounded(spawn_child(dir.path(), "mid-temp-write", Edit::Big));
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

/// A registry with four updates in its journal; returns it and the journal's lines.
fn registry_with_records(root: &Path) -> (FileRegistry, Vec<String>) {
    let reg = registry_with_a_journal(root);
    for entry in ["parent 3", "parent 4"] {
        update(&reg, |hive| append_entry(hive, entry)).unwrap();
    }
    let text = std::fs::read_to_string(reg.log_path()).unwrap();
    let lines = text.lines().map(str::to_owned).collect();
    (reg, lines)
}

/// A record damaged before the last one is no torn append: the journal is corrupt, an error
/// naming the file and the line, for readers and writers alike, and nothing is written over it.
#[test]
fn a_damaged_record_before_the_last_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, lines) = registry_with_records(dir.path());
    assert_eq!(lines.len(), 5, "a header and four records: {lines:?}");
    let mut damaged = lines.clone();
    damaged[2] = damaged[2].replace("parent 2", "parent X");
    let text = damaged.join("\n") + "\n";
    std::fs::write(reg.log_path(), &text).unwrap();

    let err = FileRegistry::open(dir.path())
        .unwrap()
        .snapshot()
        .unwrap_err();
    assert!(
        matches!(&err, RegistryError::Corrupt { line: Some(3), .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("registry.log") && msg.contains("line 3"),
        "{msg}"
    );
    let res = update(&reg, |hive| append_entry(hive, "more"));
    assert!(matches!(res, Err(RegistryError::Corrupt { .. })), "{res:?}");
    assert_eq!(std::fs::read_to_string(reg.log_path()).unwrap(), text);
}

/// A journal whose records do not follow each other, or that follows a later store than the
/// one beside it, is an error naming the file and the line.
#[test]
fn a_journal_out_of_sequence_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, lines) = registry_with_records(dir.path());
    let skipped = [&lines[..2], &lines[3..]].concat().join("\n") + "\n";
    std::fs::write(reg.log_path(), skipped).unwrap();
    let err = reg.snapshot().unwrap_err();
    assert!(
        matches!(&err, RegistryError::Corrupt { line: Some(3), .. }),
        "{err:?}"
    );

    let later = lines[0].replace("base 0", "base 7") + "\n";
    std::fs::write(reg.log_path(), later).unwrap();
    let err = reg.snapshot().unwrap_err();
    assert!(
        matches!(&err, RegistryError::Corrupt { line: Some(1), .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("registry.log"), "{err}");
}

/// The last record torn (a writer killed while appending it, or what a crash left of it): left
/// out by readers, cut off by the next writer, which appends after the last whole record.
#[test]
fn a_torn_last_record_is_left_out_and_cut_by_the_next_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, lines) = registry_with_records(dir.path());
    let whole = lines[..4].join("\n") + "\n";
    let before = {
        std::fs::write(reg.log_path(), &whole).unwrap();
        FileRegistry::open(dir.path()).unwrap().snapshot().unwrap()
    };
    assert_eq!(list(&before), ["parent 1", "parent 2", "parent 3"]);
    for torn in [&lines[4][..lines[4].len() / 2], lines[4].as_str()] {
        // Half a record, or a whole one but for its last bytes' damage.
        let tail = if torn.len() == lines[4].len() {
            format!("{}x\n", &torn[..torn.len() - 1])
        } else {
            torn.to_owned()
        };
        std::fs::write(reg.log_path(), format!("{whole}{tail}")).unwrap();
        let reader = FileRegistry::open(dir.path()).unwrap();
        assert!(reader.snapshot().unwrap() == before, "torn: {tail:?}");
    }
    update(&reg, |hive| append_entry(hive, "next")).unwrap();
    let text = std::fs::read_to_string(reg.log_path()).unwrap();
    assert!(text.starts_with(&whole), "the whole records are kept");
    assert_eq!(text.lines().count(), 5, "the torn one is replaced: {text}");
    let after = FileRegistry::open(dir.path()).unwrap().snapshot().unwrap();
    assert_eq!(list(&after), ["parent 1", "parent 2", "parent 3", "next"]);
}

/// The journal is a file found by convention in the folder: a link there is refused, as for
/// the store.
#[test]
fn a_journal_that_is_a_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, _) = registry_with_records(dir.path());
    let elsewhere = dir.path().join("elsewhere.log");
    std::fs::rename(reg.log_path(), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, reg.log_path()).unwrap();
    let err = reg.snapshot().unwrap_err();
    assert!(
        matches!(&err, RegistryError::File(e) if e.to_string().contains("symbolic link")),
        "{err:?}"
    );
    assert!(update(&reg, |hive| append_entry(hive, "x")).is_err());
}

/// Counts this process's writes: run alone in a child (`PRFDATA_TEST_STORE_COUNT=<root>`),
/// since the counts are the whole process's.
#[test]
fn count_child() {
    let Ok(root) = std::env::var(COUNT_ENV) else {
        return;
    };
    let reg = FileRegistry::open(&root).unwrap();
    let (writes, appends) = (store_writes(), log_appends());
    // What each update that did not write the store appended.
    let mut sizes = Vec::new();
    for i in 0..1000 {
        let (before, rewrites) = (
            std::fs::metadata(reg.log_path()).unwrap().len(),
            store_writes(),
        );
        update(&reg, |hive| append_entry(hive, &format!("entry {i:04}"))).unwrap();
        if store_writes() == rewrites {
            sizes.push(std::fs::metadata(reg.log_path()).unwrap().len() - before);
        }
    }
    let (writes, appends) = (store_writes() - writes, log_appends() - appends);
    assert_eq!(writes + appends, 1000, "one commit per update");
    assert!((1..=6).contains(&writes), "{writes} store writes");
    // The same bytes but for the digits of the sequence number and the entry's position.
    let (tenth, last) = (sizes[9], sizes[sizes.len() - 1]);
    assert!(tenth > 0 && last <= tenth + 6, "{tenth} and {last} bytes");
    std::process::exit(0);
}

/// Tells the re-executed binary to run [`count_child`] in this registry folder.
const COUNT_ENV: &str = "PRFDATA_TEST_STORE_COUNT";

/// Updates go to the journal, and the store is written again only when the journal outgrows
/// it: 1,000 small updates cost a few store writes, and each record as many bytes as the one
/// before.
#[test]
fn small_updates_append_records_and_rewrite_the_store_rarely() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "registry_store::count_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(COUNT_ENV, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let out = child.wait_with_output().expect("the child's output");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hive = FileRegistry::open(dir.path()).unwrap().snapshot().unwrap();
    assert_eq!(list(&hive).len(), 1000);
    assert_eq!(list(&hive)[999], "entry 0999");
}

/// Tells the re-executed binary to run [`writer_child`] in this registry folder.
const WRITER_ENV: &str = "PRFDATA_TEST_STORE_WRITER";
/// How many updates each writer child makes.
const WRITER_UPDATES: usize = 150;

/// One writer of [`readers_see_whole_updates_while_writers_append_and_fold`]: each update
/// appends a 2 KiB entry to the list and sets `n` to the list's length, so that the journal is
/// folded into the store several times.
#[test]
fn writer_child() {
    let Ok(root) = std::env::var(WRITER_ENV) else {
        return;
    };
    let reg = FileRegistry::open(&root).unwrap();
    let entry = "x".repeat(2048);
    for _ in 0..WRITER_UPDATES {
        update(&reg, |hive| {
            append_entry(hive, &entry)?;
            let n = list(hive).len() as u32;
            hive.set_value(LIST_KEY, "n", Value::Dword(n))
        })
        .unwrap();
    }
    std::process::exit(0);
}

/// Readers take no lock: while two processes append records and fold the journal, every
/// snapshot is one committed state (the list as long as `n` says), never older than the last.
#[test]
fn readers_see_whole_updates_while_writers_append_and_fold() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    let spawn = || {
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "registry_store::writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WRITER_ENV, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child")
    };
    let mut writers = [spawn(), spawn()];
    let deadline = Instant::now() + CHILD_WAIT;
    let (mut last, mut reads) = (0, 0);
    loop {
        let mut running = 0;
        for w in &mut writers {
            running += usize::from(w.try_wait().expect("try_wait").is_none());
        }
        let hive = reg.snapshot().expect("a snapshot while writers write");
        let n = hive
            .value(LIST_KEY, "n")
            .unwrap()
            .and_then(Value::as_dword)
            .unwrap_or(0) as usize;
        assert_eq!(list(&hive).len(), n, "a snapshot of a whole update");
        assert!(
            n >= last,
            "a snapshot older than the one before ({n} < {last})"
        );
        (last, reads) = (n, reads + 1);
        if running == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the writers did not finish");
    }
    for w in &mut writers {
        assert!(w.wait().unwrap().success());
    }
    assert_eq!(last, 2 * WRITER_UPDATES, "after {reads} reads");
}

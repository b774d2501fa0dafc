//! The registry's journal through the real binary: `prfmon reg`, `lodctr` and `unlodctr` commit
//! small updates as records appended to `registry.log`, leaving `registry.toml` as it was, and
//! every one of them reads the store with the journal's records replayed over it.

use std::path::Path;

use crate::common::prfmon;

const DEVDEF_H: &str =
    "#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2\n#define DEVICE_COUNTER_2 4\n";

const INI: &str =
    "[info]\ndrivername=JournalDriver\nsymbolfile=devdef.h\n\n[languages]\n009=English\n\n\
[text]\nOBJECT_1_009_NAME=Journal Device\nOBJECT_1_009_HELP=help\n\
DEVICE_COUNTER_1_009_NAME=Journal A\nDEVICE_COUNTER_1_009_HELP=help\n\
DEVICE_COUNTER_2_009_NAME=Journal B\nDEVICE_COUNTER_2_009_HELP=help\n";

const SERVICE: &str = r"HKLM\SYSTEM\CurrentControlSet\Services\JournalDriver\Performance";
const KEY: &str = r"HKLM\SOFTWARE\JournalTest";

/// The store's bytes and the journal's length.
fn files(root: &Path) -> (Vec<u8>, u64) {
    (
        std::fs::read(root.join("registry.toml")).unwrap(),
        std::fs::metadata(root.join("registry.log")).map_or(0, |m| m.len()),
    )
}

/// `prfmon reg query ARGS` on `root`: its output, the command succeeding.
fn query(root: &Path, args: &[&str]) -> String {
    let run = prfmon(root, &[&["reg", "query"], args].concat());
    assert_eq!(run.code, 0, "reg query {args:?}: {}", run.stderr);
    run.stdout
}

#[test]
fn reg_lodctr_and_unlodctr_read_what_the_journal_holds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    std::fs::write(dir.path().join("devdef.h"), DEVDEF_H).unwrap();
    let ini = dir.path().join("JournalDriver.ini");
    std::fs::write(&ini, INI).unwrap();
    let everything = query(&root, &["HKLM", "/s"]);
    let (store, mut journal) = files(&root);

    // Each command's update is one record: the store stays, the journal grows, the next
    // command (a new process) reads the change.
    let mut committed = |what: &str| {
        let (now, len) = files(&root);
        assert!(now == store, "{what}: the store was written again");
        assert!(len > journal, "{what}: no record in the journal");
        journal = len;
    };
    let run = prfmon(
        &root,
        &[
            "reg",
            "add",
            KEY,
            "/v",
            "Answer",
            "/t",
            "REG_DWORD",
            "/d",
            "42",
            "/f",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    committed("reg add");
    assert!(query(&root, &[KEY, "/v", "Answer"]).contains("REG_DWORD    0x2a"));

    let run = prfmon(&root, &["lodctr", &ini.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    committed("lodctr");
    assert!(query(&root, &[SERVICE, "/v", "First Counter"]).contains("REG_DWORD    0x738"));
    let save = format!("/S:{}", dir.path().join("saved.toml").display());
    let names = prfmon(&root, &["lodctr", &save]);
    assert_eq!(names.code, 0, "{}", names.stderr);
    let saved = std::fs::read_to_string(dir.path().join("saved.toml")).unwrap();
    assert!(saved.contains("Journal Device"), "lodctr /S: saved {saved}");

    // lodctr refuses a driver the journal says is loaded.
    let again = prfmon(&root, &["lodctr", &ini.display().to_string()]);
    assert_eq!(again.code, 1, "{}", again.stdout);
    assert!(again.stderr.contains("already"), "{}", again.stderr);

    let run = prfmon(&root, &["unlodctr", "JournalDriver"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    committed("unlodctr");
    let run = prfmon(&root, &["reg", "delete", KEY, "/f"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    committed("reg delete");
    assert_eq!(
        query(&root, &["HKLM", "/s"]),
        everything,
        "the journal's records replayed give back the tree before them"
    );
}

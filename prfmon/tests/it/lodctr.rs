//! `prfmon lodctr` / `prfmon unlodctr` through the real binary: the seed example, errors,
//! /S: and /R:, and 8 lodctr processes at once.

use crate::common;

use std::path::Path;

use common::{finish, prfmon, spawn};

const DEVDEF_H: &str =
    "#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2\n#define DEVICE_COUNTER_2 4\n";

fn ini(driver: &str) -> String {
    format!(
        "[info]\ndrivername={driver}\nsymbolfile=devdef.h\n\n[languages]\n009=English\n00C=OtherLanguage\n\n[text]\n\
         OBJECT_1_009_NAME={driver} Device\nOBJECT_1_009_HELP={driver} device help\n\
         OBJECT_1_00C_NAME={driver} Device other\nOBJECT_1_00C_HELP={driver} device help other\n\
         DEVICE_COUNTER_1_009_NAME={driver} A\nDEVICE_COUNTER_1_009_HELP={driver} A help\n\
         DEVICE_COUNTER_2_009_NAME={driver} B\nDEVICE_COUNTER_2_009_HELP={driver} B help\n"
    )
}

fn setup(dir: &Path, drivers: &[&str]) {
    std::fs::write(dir.join("devdef.h"), DEVDEF_H).unwrap();
    for d in drivers {
        std::fs::write(dir.join(format!("{d}.ini")), ini(d)).unwrap();
    }
}

/// Every key and value, as `prfmon reg query HKLM /s` prints them: the store with the
/// journal's records replayed over it (the store file alone holds only what was folded in).
fn everything(root: &Path) -> String {
    let run = prfmon(root, &["reg", "query", "HKLM", "/s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[test]
fn lodctr_then_unlodctr_restores_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    setup(dir.path(), &["DriverName"]);
    assert_eq!(prfmon(&root, &["reg", "query", "HKLM"]).code, 0);
    let before = everything(&root);

    let run = prfmon(&root, &["lodctr", &path(dir.path(), "DriverName.ini")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "Loaded counters for DriverName: First Counter 1848, Last Counter 1852, First Help 1849, Last Help 1853\n"
    );
    let q = prfmon(
        &root,
        &[
            "reg",
            "query",
            r"HKLM\SYSTEM\CurrentControlSet\Services\DriverName\Performance",
            "/v",
            "First Counter",
        ],
    );
    assert!(
        q.stdout
            .contains("    First Counter    REG_DWORD    0x738\n"),
        "{}",
        q.stdout
    );
    let q = prfmon(
        &root,
        &[
            "reg",
            "query",
            r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib\00C",
            "/v",
            "Counter",
        ],
    );
    assert!(
        q.stdout
            .contains(r"REG_MULTI_SZ    1848\0DriverName Device other"),
        "{}",
        q.stdout
    );

    let again = prfmon(&root, &["lodctr", &path(dir.path(), "DriverName.ini")]);
    assert_eq!(again.code, 1);
    assert!(
        again.stderr.contains("DriverName.ini:2") && again.stderr.contains("already"),
        "{}",
        again.stderr
    );
    let replaced = prfmon(
        &root,
        &["lodctr", "--replace", &path(dir.path(), "DriverName.ini")],
    );
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);

    let run = prfmon(&root, &["unlodctr", "DriverName"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(everything(&root), before);

    let run = prfmon(&root, &["unlodctr", "DriverName"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("DriverName has no counters loaded"),
        "{}",
        run.stderr
    );
}

#[test]
fn lodctr_error_names_file_and_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    setup(dir.path(), &[]);
    std::fs::write(
        dir.path().join("bad.ini"),
        ini("Bad").replace("OBJECT_1_00C_NAME", "OBJECT_1_007_NAME"),
    )
    .unwrap();
    assert_eq!(prfmon(&root, &["reg", "query", "HKLM"]).code, 0);
    let before = everything(&root);
    let run = prfmon(&root, &["lodctr", &path(dir.path(), "bad.ini")]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("bad.ini:12") && run.stderr.contains("007"),
        "{}",
        run.stderr
    );
    assert_eq!(everything(&root), before);
}

#[test]
fn save_and_restore_with_windows_switches() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    setup(dir.path(), &["First", "Second"]);
    assert_eq!(
        prfmon(&root, &["lodctr", &path(dir.path(), "First.ini")]).code,
        0
    );
    let saved_state = everything(&root);
    let saved = format!("/S:{}", path(dir.path(), "saved.toml"));
    let run = prfmon(&root, &["lodctr", &saved]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        prfmon(&root, &["lodctr", &path(dir.path(), "Second.ini")]).code,
        0
    );
    let restore = format!("/R:{}", path(dir.path(), "saved.toml"));
    let run = prfmon(&root, &["lodctr", &restore]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(everything(&root), saved_state);
}

#[test]
fn eight_lodctr_binaries_at_once_get_disjoint_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    let drivers: Vec<String> = (0..8).map(|i| format!("Drv{i}")).collect();
    let names: Vec<&str> = drivers.iter().map(String::as_str).collect();
    setup(dir.path(), &names);
    let children: Vec<_> = names
        .iter()
        .map(|d| {
            spawn(
                &root,
                &["lodctr", &path(dir.path(), &format!("{d}.ini"))],
                "",
            )
        })
        .collect();
    let mut ranges = Vec::new();
    for child in children {
        let run = finish(child);
        assert_eq!(run.code, 0, "{}", run.stderr);
        // "Loaded counters for DrvN: First Counter X, Last Counter Y, First Help Z, Last Help W"
        let numbers: Vec<u32> = run
            .stdout
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .filter(|n| *n >= 1848)
            .collect();
        assert_eq!(numbers.len(), 4, "{}", run.stdout);
        ranges.push((numbers[0], numbers[3]));
    }
    ranges.sort();
    for pair in ranges.windows(2) {
        assert!(pair[0].1 < pair[1].0, "overlap: {ranges:?}");
    }
    for d in &names {
        let q = prfmon(
            &root,
            &[
                "reg",
                "query",
                r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib\009",
                "/v",
                "Counter",
            ],
        );
        assert!(
            q.stdout.contains(&format!("\\0{d} B")),
            "{d} missing: {}",
            q.stdout
        );
    }
}

#[test]
fn unlodctr_of_a_misspelled_driver_suggests_the_installed_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    setup(dir.path(), &["DriverName"]);
    let run = prfmon(&root, &["lodctr", &path(dir.path(), "DriverName.ini")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = prfmon(&root, &["unlodctr", "DriverNam"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "prfmon unlodctr: driver DriverNam has no counters loaded (no First Counter under its \
         Performance key); did you mean DriverName?\n"
    );
    let run = prfmon(&root, &["unlodctr", "Unrelated"]);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
}

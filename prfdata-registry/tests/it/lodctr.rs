//! lodctr / unlodctr: the lodctr design specification's own example, every error case (registry
//! unchanged), replace, /S: and /R:, and 8 lodctr processes at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use prfdata_registry::{
    first_counter_help, lodctr, paths, perflib, performance_services, restore_settings,
    save_settings, unlodctr, FileRegistry, LodctrError, LodctrOptions, Registry, Value,
};

use crate::lodctr_spec::{DEVDEF_H, DEVICE_INI};

struct Fixture {
    dir: tempfile::TempDir,
    reg: FileRegistry,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let reg = FileRegistry::open(dir.path().join("registry")).expect("open registry");
        std::fs::write(dir.path().join("devdef.h"), DEVDEF_H).expect("write devdef.h");
        std::fs::write(dir.path().join("device.ini"), DEVICE_INI).expect("write device.ini");
        Self { dir, reg }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write fixture");
        path
    }

    fn ini(&self) -> PathBuf {
        self.dir.path().join("device.ini")
    }

    /// The store file's exact contents (it is UTF-8 text, so a failure shows a readable diff).
    fn store_bytes(&self) -> String {
        std::fs::read_to_string(self.reg.store_path()).expect("read store")
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn lodctr_spec_example_loads_and_unloads_exactly() {
    let f = Fixture::new();
    let before = f.store_bytes();

    let range = lodctr(&f.reg, f.ini(), &LodctrOptions::default()).expect("lodctr");
    assert_eq!(
        (
            range.first_counter,
            range.last_counter,
            range.first_help,
            range.last_help
        ),
        (1848, 1852, 1849, 1853)
    );
    let hive = f.reg.snapshot().expect("snapshot");
    assert_eq!(perflib::last_counter_help(&hive).unwrap(), (1852, 1853));

    let en = perflib::counter_text(&hive, "009").unwrap();
    assert_eq!(en.counter[&1848], "Device Name");
    assert_eq!(
        en.help[&1849],
        "Displays performance statistics on Device Name"
    );
    assert_eq!(en.counter[&1850], "Counter A");
    assert_eq!(en.help[&1851], "Displays the current value of Counter A");
    assert_eq!(en.counter[&1852], "Counter B");
    assert_eq!(en.help[&1853], "Displays the current rate of Devices B");
    let other = perflib::counter_text(&hive, "00C").unwrap();
    assert_eq!(other.counter[&1850], "Counter A in other language");
    assert_eq!(other.help.len(), 3);

    // Windows' REG_MULTI_SZ format: index\0text\0 pairs, ascending.
    assert_eq!(
        hive.value(&paths::perflib_language("009"), "Counter")
            .unwrap(),
        Some(&Value::MultiSz(strings(&[
            "1848",
            "Device Name",
            "1850",
            "Counter A",
            "1852",
            "Counter B"
        ])))
    );
    let perf = paths::performance("DriverName");
    for (name, want) in [
        ("First Counter", 1848),
        ("Last Counter", 1852),
        ("First Help", 1849),
        ("Last Help", 1853),
    ] {
        assert_eq!(
            hive.value(&perf, name).unwrap(),
            Some(&Value::Dword(want)),
            "{name}"
        );
    }
    assert_eq!(
        first_counter_help(&f.reg, "DriverName").unwrap(),
        (1848, 1849)
    );

    let removed = unlodctr(&f.reg, "DriverName").expect("unlodctr");
    assert_eq!(removed, range);
    assert_eq!(
        f.store_bytes(),
        before,
        "unlodctr must restore the store exactly"
    );
}

#[test]
fn second_driver_follows_and_last_counter_tracks_what_is_in_use() {
    let f = Fixture::new();
    let before = f.store_bytes();
    lodctr(&f.reg, f.ini(), &LodctrOptions::default()).unwrap();
    let second = f.write(
        "second.ini",
        "[info]\ndrivername=Second\nsymbolfile=devdef.h\n[languages]\n009=\n[text]\n\
         OBJECT_1_009_NAME=Second object\nDEVICE_COUNTER_1_009_NAME=Second A\n",
    );
    let r = lodctr(&f.reg, &second, &LodctrOptions::default()).unwrap();
    assert_eq!(
        (r.first_counter, r.first_help, r.last_counter, r.last_help),
        (1854, 1855, 1856, 1857)
    );

    // Removing the first driver leaves Perflib's Last values at the second's.
    unlodctr(&f.reg, "DriverName").unwrap();
    let hive = f.reg.snapshot().unwrap();
    assert_eq!(perflib::last_counter_help(&hive).unwrap(), (1856, 1857));
    assert!(!hive.key_exists(&paths::perflib_language("00C")));
    unlodctr(&f.reg, "Second").unwrap();
    assert_eq!(f.store_bytes(), before);
}

#[test]
fn replace_reloads_a_loaded_driver() {
    let f = Fixture::new();
    lodctr(&f.reg, f.ini(), &LodctrOptions::default()).unwrap();
    let changed = DEVICE_INI.replace("=Counter A\n", "=Counter A v2\n");
    let ini = f.write("device.ini", &changed);
    let opts = LodctrOptions {
        replace: true,
        ..Default::default()
    };
    let r = lodctr(&f.reg, &ini, &opts).unwrap();
    assert_eq!(r.first_counter, 1848);
    let en = perflib::read_counter_text(&f.reg, "009").unwrap();
    assert_eq!(en.counter[&1850], "Counter A v2");
    assert_eq!(en.counter.len(), 3);
}

/// Runs lodctr (or unlodctr) expecting an error, and checks the store did not change.
fn assert_rejected(f: &Fixture, run: impl FnOnce() -> Result<(), LodctrError>) -> LodctrError {
    let before = f.store_bytes();
    let err = run().expect_err("must fail");
    assert_eq!(
        f.store_bytes(),
        before,
        "a failed run must write nothing: {err}"
    );
    err
}

fn load(f: &Fixture, ini: &Path) -> Result<(), LodctrError> {
    lodctr(&f.reg, ini, &LodctrOptions::default()).map(|_| ())
}

#[test]
fn odd_offset_names_file_and_line() {
    let f = Fixture::new();
    f.write(
        "devdef.h",
        &DEVDEF_H.replace("DEVICE_COUNTER_2 4", "DEVICE_COUNTER_2 5"),
    );
    let err = assert_rejected(&f, || load(&f, &f.ini()));
    match &err {
        LodctrError::OddOffset {
            line,
            symbol,
            offset,
            symbol_line,
            ..
        } => {
            assert_eq!(
                (*line, symbol.as_str(), *offset, *symbol_line),
                (21, "DEVICE_COUNTER_2", 5, 7)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("device.ini:21"), "{err}");
}

#[test]
fn missing_symbol_names_file_and_line() {
    let f = Fixture::new();
    f.write(
        "devdef.h",
        &DEVDEF_H.replace("#define DEVICE_COUNTER_1 2\n", ""),
    );
    let err = assert_rejected(&f, || load(&f, &f.ini()));
    assert!(
        matches!(&err, LodctrError::UnknownSymbol { line: 16, symbol, .. } if symbol == "DEVICE_COUNTER_1"),
        "{err:?}"
    );
    assert!(err.to_string().contains("device.ini:16"), "{err}");
}

#[test]
fn unlisted_language_names_file_and_line() {
    let f = Fixture::new();
    let ini = f.write("device.ini", &DEVICE_INI.replace("00C=OtherLanguage\n", ""));
    let err = assert_rejected(&f, || load(&f, &ini));
    assert!(
        matches!(&err, LodctrError::UnknownLanguage { line: 12, language, .. } if language == "00C"),
        "{err:?}"
    );
}

#[test]
fn missing_info_keys_are_errors() {
    let f = Fixture::new();
    for (key, text) in [
        (
            "drivername",
            DEVICE_INI.replace("drivername=DriverName\n", ""),
        ),
        (
            "symbolfile",
            DEVICE_INI.replace("symbolfile=devdef.h\n", ""),
        ),
    ] {
        let ini = f.write("device.ini", &text);
        let err = assert_rejected(&f, || load(&f, &ini));
        assert!(
            matches!(&err, LodctrError::MissingInfoKey { key: k, line: Some(2), .. } if *k == key),
            "{err:?}"
        );
        assert!(err.to_string().contains("device.ini:2"), "{err}");
    }
}

#[test]
fn unreadable_symbol_file_is_an_error() {
    let f = Fixture::new();
    let ini = f.write("device.ini", &DEVICE_INI.replace("devdef.h", "missing.h"));
    let err = assert_rejected(&f, || load(&f, &ini));
    assert!(
        matches!(&err, LodctrError::SymbolFileUnreadable { line: 4, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("missing.h"), "{err}");
}

#[test]
fn unreadable_ini_and_bad_text_key_are_errors() {
    let f = Fixture::new();
    let missing = f.dir.path().join("nope.ini");
    let err = assert_rejected(&f, || load(&f, &missing));
    assert!(matches!(err, LodctrError::IniUnreadable { .. }), "{err:?}");

    let ini = f.write(
        "device.ini",
        &DEVICE_INI.replace("OBJECT_1_009_NAME", "OBJECT_1_009_TITLE"),
    );
    let err = assert_rejected(&f, || load(&f, &ini));
    assert!(
        matches!(err, LodctrError::BadTextKey { line: 11, .. }),
        "{err:?}"
    );
}

#[test]
fn driver_already_loaded_is_an_error_unless_replace() {
    let f = Fixture::new();
    load(&f, &f.ini()).unwrap();
    let err = assert_rejected(&f, || load(&f, &f.ini()));
    assert!(
        matches!(
            &err,
            LodctrError::AlreadyLoaded {
                line: 3,
                first_counter: 1848,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn unlodctr_of_a_driver_not_loaded_is_an_error() {
    let f = Fixture::new();
    let err = assert_rejected(&f, || unlodctr(&f.reg, "DriverName").map(|_| ()));
    assert!(matches!(err, LodctrError::NotLoaded { .. }), "{err:?}");
}

#[test]
fn save_and_restore_bring_back_the_saved_names_and_values() {
    let f = Fixture::new();
    load(&f, &f.ini()).unwrap();
    let after_first = f.store_bytes();
    let saved = f.dir.path().join("perf-settings.toml");
    save_settings(&f.reg, &saved).unwrap();

    let second = f.write(
        "second.ini",
        "[info]\ndrivername=Second\nsymbolfile=devdef.h\n[languages]\n009=\n[text]\nOBJECT_1_009_NAME=S\n",
    );
    load(&f, &second).unwrap();
    unlodctr(&f.reg, "DriverName").unwrap();

    restore_settings(&f.reg, &saved).unwrap();
    assert_eq!(f.store_bytes(), after_first);
    let services = performance_services(&f.reg).unwrap();
    assert_eq!(services.len(), 1);
    assert_eq!(services[0].first_counter, Some(1848));
}

// ---- 8 lodctr processes at once -------------------------------------------------------------

const CHILD_ENV: &str = "PRFDATA_TEST_LODCTR_CHILD";
const PROCESSES: usize = 8;
const CHILD_WAIT: Duration = Duration::from_secs(60);

/// Entry point of the re-executed test binary: `PRFDATA_TEST_LODCTR_CHILD=<registry>|<ini>`.
#[test]
fn child_entry() {
    let Ok(job) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (root, ini) = job.split_once('|').expect("job is root|ini");
    let reg = FileRegistry::open(root).expect("child: open registry");
    match lodctr(&reg, ini, &LodctrOptions::default()) {
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("child lodctr failed: {e}");
            std::process::exit(3)
        }
    }
}

fn spawn_child(root: &Path, ini: &Path) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "lodctr::child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("{}|{}", root.display(), ini.display()))
        .stdout(Stdio::null())
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

#[test]
fn eight_lodctr_processes_get_disjoint_ranges() {
    let f = Fixture::new();
    let inis: Vec<PathBuf> = (0..PROCESSES)
        .map(|i| {
            f.write(
                &format!("drv{i}.ini"),
                &format!(
                    "[info]\ndrivername=Drv{i}\nsymbolfile=devdef.h\n[languages]\n009=\n[text]\n\
                     OBJECT_1_009_NAME=Drv{i} object\nOBJECT_1_009_HELP=Drv{i} object help\n\
                     DEVICE_COUNTER_2_009_NAME=Drv{i} B\nDEVICE_COUNTER_2_009_HELP=Drv{i} B help\n"
                ),
            )
        })
        .collect();
    let children: Vec<Child> = inis
        .iter()
        .map(|ini| spawn_child(f.reg.root(), ini))
        .collect();
    for child in children {
        assert!(wait_bounded(child).success());
    }

    let hive = f.reg.snapshot().unwrap();
    let text = perflib::counter_text(&hive, "009").unwrap();
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for i in 0..PROCESSES {
        let svc = prfdata_registry::service::read_service(&hive, &format!("Drv{i}"))
            .unwrap()
            .expect("service loaded");
        let (fc, lh) = (svc.first_counter.unwrap(), svc.last_help.unwrap());
        assert_eq!(fc % 2, 0);
        assert_eq!(lh, fc + 5);
        assert_eq!(text.counter[&fc], format!("Drv{i} object"));
        assert_eq!(text.help[&(fc + 1)], format!("Drv{i} object help"));
        assert_eq!(text.counter[&(fc + 4)], format!("Drv{i} B"));
        assert_eq!(text.help[&(fc + 5)], format!("Drv{i} B help"));
        ranges.push((fc, lh));
    }
    ranges.sort();
    for pair in ranges.windows(2) {
        assert!(pair[0].1 < pair[1].0, "overlapping ranges {ranges:?}");
    }
    assert_eq!(ranges[0].0, 1848);
    let top = ranges[PROCESSES - 1];
    assert_eq!(
        perflib::last_counter_help(&hive).unwrap(),
        (top.1 - 1, top.1)
    );
    assert_eq!(text.counter.len(), 2 * PROCESSES);
}

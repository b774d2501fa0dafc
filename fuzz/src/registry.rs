//! The registry's readers: lodctr's counter .INI file (with its symbol file) and the store file
//! `registry.toml`.
//!
//! - [`check_ini`]: the .INI is read as `prfmon lodctr FILE.ini` reads it
//!   ([`CounterIni::read`]), then loaded into a fresh Perflib hive ([`apply_lodctr`]), loaded
//!   again with `replace`, and unloaded ([`apply_unlodctr`]). Each step succeeds or fails with a
//!   typed error; a hive lodctr produced encodes as a store that reads back the same (else the
//!   store could not be written), its names read back, and after unlodctr the driver is gone.
//! - [`check_store`]: the bytes are the store file of a registry folder and, after
//!   [`JOURNAL_MARKER`], its journal `registry.log`, read through [`FileRegistry`] as every tool
//!   reads them (the store, then the journal's later records replayed over it). Without a
//!   journal the store also reads through [`decode_hive`], and both agree. A tree that reads
//!   encodes and reads back the same (else the next update could not write it), and what the
//!   tools read from it (Perflib's indexes and names, the services, `reg query` of each key)
//!   reads without a panic. With a journal, the same files read twice give the same tree, and
//!   an update over them (which cuts a torn last record, then appends a record or folds the
//!   journal into a new store) leaves the tree before it plus the change, or, when it fails,
//!   the tree before it.

use std::path::PathBuf;

use prfdata_registry::ini::CounterIni;
use prfdata_registry::{
    apply_lodctr, apply_unlodctr, decode_hive, encode_hive, perflib, performance_services, reg_cli,
    service, update, Commit, FileRegistry, Hive, LodctrOptions, Registry, RegistryError, Value,
};

/// What separates the .INI from its symbol file in a `lodctr_ini` input; without it the symbol
/// file is the lodctr design specification's `devdef.h`.
pub const SYMBOLS_MARKER: &[u8] = b"\0SYMBOLS\0";

/// What separates the store from its journal in a `registry_store` input; without it the
/// folder has no journal.
pub const JOURNAL_MARKER: &[u8] = b"\0JOURNAL\0";

/// The key the update of [`check_store`] sets a value in.
const FUZZ_KEY: &str = r"HKLM\SOFTWARE\PrfDataFuzz";

/// The lodctr design specification's symbol file.
pub const DEVDEF_H: &str = "// begin devdef.H file\n\n// legal constant definitions\n\n\
#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2\n#define DEVICE_COUNTER_2 4\n\n\n// end devdef.H file\n";

/// A registry held in memory, for the readers that take a [`Registry`].
#[derive(Debug, Clone)]
pub struct MemRegistry(pub Hive);

impl Registry for MemRegistry {
    fn snapshot(&self) -> Result<Hive, RegistryError> {
        Ok(self.0.clone())
    }

    fn transact(&self, edit: &mut dyn FnMut(&mut Hive) -> Commit) -> Result<(), RegistryError> {
        // Read-only: the edit runs on a copy that is thrown away.
        let _ = edit(&mut self.0.clone());
        Ok(())
    }
}

fn folder(name: &str) -> PathBuf {
    let dir = crate::env::get().work.join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Splits a `lodctr_ini` input into the .INI bytes and the symbol file's.
///
/// # Examples
///
/// ```
/// use prfdata_fuzz::registry::split_ini_input;
/// assert_eq!(split_ini_input(b"[info]\0SYMBOLS\0#define A 0"), (&b"[info]"[..], &b"#define A 0"[..]));
/// assert_eq!(split_ini_input(b"[info]").1, prfdata_fuzz::registry::DEVDEF_H.as_bytes());
/// ```
pub fn split_ini_input(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes
        .windows(SYMBOLS_MARKER.len())
        .position(|w| w == SYMBOLS_MARKER)
    {
        Some(at) => (&bytes[..at], &bytes[at + SYMBOLS_MARKER.len()..]),
        None => (bytes, DEVDEF_H.as_bytes()),
    }
}

/// Reads `bytes` as a counter .INI file (`devdef.h` beside it) and runs lodctr and unlodctr on
/// a hive (see the module docs).
///
/// # Panics
///
/// When a step panics or a property of the module docs does not hold.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::registry::check_ini(b"[info]\ndrivername=D\nsymbolfile=devdef.h\n\
///     [languages]\n009=English\n[text]\nOBJECT_1_009_NAME=Device\n");
/// ```
pub fn check_ini(bytes: &[u8]) {
    let dir = folder("ini");
    let (ini, symbols) = split_ini_input(bytes);
    let ini_path = dir.join("fuzz.ini");
    let write = |path: &PathBuf, bytes: &[u8]| {
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    write(&ini_path, ini);
    write(&dir.join("devdef.h"), symbols);

    let ini = match CounterIni::read(&ini_path) {
        Ok(ini) => ini,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let _ = ini.largest_offset();
    let mut hive = perflib::new_hive();
    let range = match apply_lodctr(&mut hive, &ini, &LodctrOptions::default()) {
        Ok(range) => range,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    assert!(
        range.first_counter <= range.last_counter && range.first_help <= range.last_help,
        "{range:?}"
    );
    round_trip(&hive, "after lodctr");
    for lang in perflib::languages(&hive).unwrap_or_default() {
        if let Err(e) = perflib::counter_text(&hive, &lang) {
            panic!("lodctr wrote Perflib\\{lang} so that it does not read back: {e}");
        }
    }
    let replace = LodctrOptions {
        replace: true,
        ..LodctrOptions::default()
    };
    if let Err(e) = apply_lodctr(&mut hive, &ini, &replace) {
        panic!("lodctr --replace of a driver just loaded: {e}");
    }
    if let Err(e) = apply_unlodctr(&mut hive, &ini.driver) {
        panic!("unlodctr of a driver just loaded: {e}");
    }
    let reg = MemRegistry(hive);
    assert!(
        service::first_counter_help(&reg, &ini.driver).is_err(),
        "{} still has its indexes after unlodctr",
        ini.driver
    );
    round_trip(&reg.0, "after unlodctr");
}

/// `hive` encodes, and the encoding reads back as `hive`.
fn round_trip(hive: &Hive, when: &str) {
    let text = match encode_hive(hive) {
        Ok(t) => t,
        Err(e) => panic!("{when}: the hive does not encode: {e}"),
    };
    match decode_hive(&text, "registry.toml") {
        Ok(back) => assert!(
            back == *hive,
            "{when}: the store reads back different:\n{text}"
        ),
        Err(e) => panic!("{when}: the store it encodes to does not read back: {e}\n{text}"),
    }
}

/// Splits a `registry_store` input into the store's bytes and the journal's, if any.
///
/// # Examples
///
/// ```
/// use prfdata_fuzz::registry::split_store_input;
/// assert_eq!(split_store_input(b"format = 2\n\0JOURNAL\0log"), (&b"format = 2\n"[..], Some(&b"log"[..])));
/// assert_eq!(split_store_input(b"format = 2\n").1, None);
/// ```
pub fn split_store_input(bytes: &[u8]) -> (&[u8], Option<&[u8]>) {
    match bytes
        .windows(JOURNAL_MARKER.len())
        .position(|w| w == JOURNAL_MARKER)
    {
        Some(at) => (&bytes[..at], Some(&bytes[at + JOURNAL_MARKER.len()..])),
        None => (bytes, None),
    }
}

/// Reads `bytes` (a store, and a journal after [`JOURNAL_MARKER`]) as a registry folder's
/// files, through the file and in memory (see the module docs).
///
/// # Panics
///
/// When a reader panics or a property of the module docs does not hold.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::registry::check_store(b"format = 1\n[[key]]\npath = 'HKLM\\SOFTWARE'\n");
/// prfdata_fuzz::registry::check_store(b"format = 2\n");
/// prfdata_fuzz::registry::check_store(b"format = 2\nsequence = 3\n\0JOURNAL\0prfdata-registry-log 1 base 3\n");
/// ```
pub fn check_store(bytes: &[u8]) {
    let dir = folder("store");
    let (store_bytes, journal) = split_store_input(bytes);
    let store = dir.join("registry.toml");
    std::fs::write(&store, store_bytes).unwrap_or_else(|e| panic!("{}: {e}", store.display()));
    let log = dir.join("registry.log");
    match journal {
        Some(j) => std::fs::write(&log, j).unwrap_or_else(|e| panic!("{}: {e}", log.display())),
        None => {
            let _ = std::fs::remove_file(&log);
        }
    }
    let hive = match journal {
        Some(_) => match read_with_journal(&dir) {
            Some(hive) => hive,
            None => return,
        },
        None => match read_store(store_bytes, &dir) {
            Some(hive) => hive,
            None => return,
        },
    };
    round_trip(&hive, "a registry as read");
    read_as_the_tools_do(hive);
}

/// The tree of a store alone, read through the file and with [`decode_hive`]: both agree.
/// `None` if both refuse it.
fn read_store(bytes: &[u8], dir: &std::path::Path) -> Option<Hive> {
    let store = dir.join("registry.toml");
    let from_file = FileRegistry::open(dir).and_then(|r| r.snapshot());
    let in_memory = std::str::from_utf8(bytes)
        .ok()
        .map(|text| decode_hive(text, &store));
    match (from_file, in_memory) {
        (Ok(a), Some(Ok(b))) => {
            assert!(a == b, "the file and decode_hive read different trees");
            Some(a)
        }
        (Err(e), Some(Err(_)) | None) => {
            let _ = e.to_string();
            None
        }
        (Ok(_), None) => panic!("a store that is not UTF-8 was read"),
        (Ok(_), Some(Err(e))) => panic!("the file read, decode_hive refused it: {e}"),
        (Err(e), Some(Ok(_))) => panic!("decode_hive read it, the file was refused: {e}"),
    }
}

/// The tree of a store and its journal, read twice (the same both times), then updated once
/// (see the module docs). `None` if the files are refused.
fn read_with_journal(dir: &std::path::Path) -> Option<Hive> {
    let reg = match FileRegistry::open(dir) {
        Ok(reg) => reg,
        Err(e) => {
            let _ = e.to_string();
            return None;
        }
    };
    let hive = match reg.snapshot() {
        Ok(hive) => hive,
        Err(e) => {
            let _ = e.to_string();
            return None;
        }
    };
    match reg.snapshot() {
        Ok(again) => assert!(again == hive, "the same files read as two trees"),
        Err(e) => panic!("the files read, then were refused: {e}"),
    }
    let mut expected = hive.clone();
    let set = |h: &mut Hive| {
        h.create_key(FUZZ_KEY)?;
        h.set_value(FUZZ_KEY, "Updated", Value::Dword(1))
    };
    let outcome = update(&reg, |h| set(h));
    let after = FileRegistry::open(dir)
        .and_then(|r| r.snapshot())
        .unwrap_or_else(|e| panic!("the files an update left are refused: {e}"));
    match outcome {
        Ok(()) => {
            set(&mut expected).unwrap_or_else(|e| panic!("the update applied to a copy: {e}"));
            assert!(after == expected, "the update left another tree");
        }
        Err(e) => {
            let _ = e.to_string();
            assert!(after == hive, "a failed update changed the tree");
        }
    }
    Some(hive)
}

/// What the tools read from `hive` reads without a panic.
fn read_as_the_tools_do(hive: Hive) {
    let _ = perflib::last_counter_help(&hive);
    let _ = perflib::base_index(&hive);
    for lang in perflib::languages(&hive).unwrap_or_default() {
        let _ = perflib::counter_text(&hive, &lang);
    }
    for (key, _) in hive.keys().take(32) {
        let _ = reg_cli::query(&hive, key, None);
        let _ = hive.subkeys(key);
    }
    let _ = service::services_in(&hive);
    let reg = MemRegistry(hive);
    let _ = prfmon::names::Names::load(&reg, "009");
    if let Ok(services) = performance_services(&reg) {
        for s in services.iter().take(8) {
            let _ = service::first_counter_help(&reg, &s.name);
        }
    }
}

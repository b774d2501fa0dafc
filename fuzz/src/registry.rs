//! The registry's readers: lodctr's counter .INI file (with its symbol file) and the store file
//! `registry.toml`.
//!
//! - [`check_ini`]: the .INI is read as `prfmon lodctr FILE.ini` reads it
//!   ([`CounterIni::read`]), then loaded into a fresh Perflib hive ([`apply_lodctr`]), loaded
//!   again with `replace`, and unloaded ([`apply_unlodctr`]). Each step succeeds or fails with a
//!   typed error; a hive lodctr produced encodes as a store that reads back the same (else the
//!   store could not be written), its names read back, and after unlodctr the driver is gone.
//! - [`check_store`]: the bytes are the store file of a registry folder, read through
//!   [`FileRegistry`] as every tool reads it, and through [`decode_hive`]; both agree. A store
//!   that reads encodes and reads back the same (else the next update could not write it), and
//!   what the tools read from it (Perflib's indexes and names, the services, `reg query` of each
//!   key) reads without a panic.

use std::path::PathBuf;

use prfdata_registry::ini::CounterIni;
use prfdata_registry::{
    apply_lodctr, apply_unlodctr, decode_hive, encode_hive, perflib, performance_services, reg_cli,
    service, Commit, FileRegistry, Hive, LodctrOptions, Registry, RegistryError,
};

/// What separates the .INI from its symbol file in a `lodctr_ini` input; without it the symbol
/// file is the lodctr design specification's `devdef.h`.
pub const SYMBOLS_MARKER: &[u8] = b"\0SYMBOLS\0";

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

/// Reads `bytes` as a registry store, through the file and in memory (see the module docs).
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
/// ```
pub fn check_store(bytes: &[u8]) {
    let dir = folder("store");
    let store = dir.join("registry.toml");
    std::fs::write(&store, bytes).unwrap_or_else(|e| panic!("{}: {e}", store.display()));
    let from_file = FileRegistry::open(&dir).and_then(|r| r.snapshot());
    let in_memory = std::str::from_utf8(bytes)
        .ok()
        .map(|text| decode_hive(text, &store));
    let hive = match (from_file, in_memory) {
        (Ok(a), Some(Ok(b))) => {
            assert!(a == b, "the file and decode_hive read different trees");
            a
        }
        (Err(e), Some(Err(_)) | None) => {
            let _ = e.to_string();
            return;
        }
        (Ok(_), None) => panic!("a store that is not UTF-8 was read"),
        (Ok(_), Some(Err(e))) => panic!("the file read, decode_hive refused it: {e}"),
        (Err(e), Some(Ok(_))) => panic!("decode_hive read it, the file was refused: {e}"),
    };
    round_trip(&hive, "a store as read");

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

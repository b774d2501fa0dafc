//! A map changed since it was installed (updated without reinstalling) is refused at
//! `activate` and at `install`, with a message that names the range, the map's need and the fix.

use std::path::Path;
use std::time::Duration;

use crate::common;
use prfdata::install::{install_in, InstallError, InstallOptions};
use prfdata_registry::{lodctr, FileRegistry, LodctrOptions};

prfdata::prfdata_map! {
    /// Version 1, as installed.
    pub mod v1 {
        app: "PrfDataFit",
        object SERVER = 0 {
            name: "Fit Server", help: "s", detail: Novice, default: none, instances: none, costly: false,
            counters {
                REQUESTS = 2: RawCount { name: "Requests", help: "r", detail: Novice, scale: 0 },
                ERRORS = 4: RawCount { name: "Errors", help: "e", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// Version 2: one more counter, past version 1's range.
    pub mod grown {
        app: "PrfDataFit",
        object SERVER = 0 {
            name: "Fit Server", help: "s", detail: Novice, default: none, instances: none, costly: false,
            counters {
                REQUESTS = 2: RawCount { name: "Requests", help: "r", detail: Novice, scale: 0 },
                ERRORS = 4: RawCount { name: "Errors", help: "e", detail: Novice, scale: 0 },
                RETRIES = 6: RawCount { name: "Retries", help: "t", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// Version 3: the same range, the two counters' offsets swapped (their names would swap).
    pub mod swapped {
        app: "PrfDataFit",
        object SERVER = 0 {
            name: "Fit Server", help: "s", detail: Novice, default: none, instances: none, costly: false,
            counters {
                REQUESTS = 4: RawCount { name: "Requests", help: "r", detail: Novice, scale: 0 },
                ERRORS = 2: RawCount { name: "Errors", help: "e", detail: Novice, scale: 0 },
            }
        }
    }
}

const RESULT: &str = "activate.txt";

/// Child: activates the map `PRFDATA_TEST_ROLE` names against `PRFDATA_REGISTRY` and writes
/// `ok` or the error (its variant and message) to `RESULT` in its shm folder.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    let Some(role) = common::role() else {
        return;
    };
    let outcome = match role.as_str() {
        "v1" => v1::PrfData::activate().map(drop),
        "grown" => grown::PrfData::activate().map(drop),
        "swapped" => swapped::PrfData::activate().map(drop),
        other => panic!("unknown role {other}"),
    };
    let text = match outcome {
        Ok(()) => "ok".to_owned(),
        Err(e @ prfdata::Error::InstalledNames { .. }) => format!("InstalledNames: {e}"),
        Err(e) => format!("other: {e}"),
    };
    std::fs::write(common::child_dir().join(RESULT), text).unwrap();
}

/// Activates `role`'s map in a child process whose registry is `registry`: what it said.
fn activate_in_child(role: &str, shm: &Path, registry: &Path) -> String {
    let _ = std::fs::remove_file(shm.join(RESULT));
    let child = common::spawn_child(
        "names_fit::child_entry",
        role,
        shm,
        &[("PRFDATA_REGISTRY", registry.display().to_string())],
    );
    common::wait_ok(child, Duration::from_secs(30));
    std::fs::read_to_string(shm.join(RESULT)).unwrap()
}

struct Setup {
    _dir: tempfile::TempDir,
    shm: std::path::PathBuf,
    registry: std::path::PathBuf,
    ini_dir: std::path::PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let shm = dir.path().join("shm");
        std::fs::create_dir_all(&shm).unwrap();
        Setup {
            shm,
            registry: dir.path().join("registry"),
            ini_dir: dir.path().join("ini"),
            _dir: dir,
        }
    }

    fn reg(&self) -> FileRegistry {
        FileRegistry::open(&self.registry).unwrap()
    }

    fn options(&self, replace: bool) -> InstallOptions {
        InstallOptions {
            library: "/opt/app/libprfdata_provider.so".into(),
            ini_dir: self.ini_dir.clone(),
            replace,
        }
    }

    fn activate(&self, role: &str) -> String {
        activate_in_child(role, &self.shm, &self.registry)
    }
}

#[test]
fn activate_refuses_a_map_grown_past_its_installed_names() {
    let s = Setup::new();
    let range = install_in(&s.reg(), &v1::MAP, &s.options(false)).unwrap();
    assert_eq!((range.first_counter, range.last_counter), (1848, 1852));
    assert_eq!(s.activate("v1"), "ok", "the installed map activates");

    let said = s.activate("grown");
    assert!(said.starts_with("InstalledNames: "), "{said}");
    assert!(said.contains("installed with names 1848..=1852"), "{said}");
    assert!(said.contains("needs names up to 1854"), "{said}");
    assert!(said.contains("reinstall"), "{said}");
    assert!(!s.shm.join("PrfDataFit.blk").exists(), "nothing published");

    // Reinstalled, it activates.
    install_in(&s.reg(), &grown::MAP, &s.options(true)).unwrap();
    assert_eq!(s.activate("grown"), "ok");
}

#[test]
fn activate_refuses_a_map_whose_offsets_moved_inside_the_range() {
    let s = Setup::new();
    install_in(&s.reg(), &v1::MAP, &s.options(false)).unwrap();
    let said = s.activate("swapped");
    assert!(said.starts_with("InstalledNames: "), "{said}");
    assert!(
        said.contains(&format!("{:016x}", v1::MAP.fingerprint())),
        "names the installed fingerprint: {said}"
    );
    assert!(
        said.contains(&format!("{:016x}", swapped::MAP.fingerprint())),
        "and the map's: {said}"
    );
}

#[test]
fn activate_checks_only_the_range_after_a_hand_lodctr() {
    let s = Setup::new();
    // install writes the .INI; loading it by hand records no fingerprint.
    install_in(&s.reg(), &v1::MAP, &s.options(false)).unwrap();
    lodctr(
        &s.reg(),
        s.ini_dir.join("PrfDataFit.ini"),
        &LodctrOptions {
            replace: true,
            service: None,
        },
    )
    .unwrap();
    assert_eq!(
        s.activate("swapped"),
        "ok",
        "inside the range, nothing to tell"
    );
    let said = s.activate("grown");
    assert!(said.contains("fingerprint none recorded"), "{said}");
    assert!(said.contains("needs names up to 1854"), "{said}");
}

#[test]
fn activate_without_an_installation_is_not_checked() {
    let s = Setup::new();
    assert_eq!(s.activate("grown"), "ok", "no registry at all");
    install_in(&s.reg(), &v1::MAP, &s.options(false)).unwrap();
    prfdata::install::uninstall_in(&s.reg(), &v1::MAP).unwrap();
    assert_eq!(s.activate("grown"), "ok", "a registry without the app");
}

#[test]
fn install_refuses_another_map_over_an_installation_unless_replacing() {
    let s = Setup::new();
    install_in(&s.reg(), &v1::MAP, &s.options(false)).unwrap();
    match install_in(&s.reg(), &swapped::MAP, &s.options(false)).unwrap_err() {
        InstallError::MapChanged(e) => {
            assert_eq!(e.installed_fingerprint, Some(v1::MAP.fingerprint()));
            assert!(e.to_string().contains("reinstall"), "{e}");
        }
        other => panic!("{other}"),
    }
    let h = std::fs::read_to_string(s.ini_dir.join("PrfDataFit.h")).unwrap();
    assert!(
        h.contains("#define REQUESTS 2\n") && h.contains("#define ERRORS 4\n"),
        "a refused install leaves the installed files as they were: {h}"
    );
    match install_in(&s.reg(), &grown::MAP, &s.options(false)).unwrap_err() {
        InstallError::MapChanged(e) => assert_eq!(e.needed_last_counter, 1854),
        other => panic!("{other}"),
    }
    // The same map again is the old "already loaded"; replacing installs the new one.
    assert!(matches!(
        install_in(&s.reg(), &v1::MAP, &s.options(false)),
        Err(InstallError::Lodctr(_))
    ));
    let range = install_in(&s.reg(), &grown::MAP, &s.options(true)).unwrap();
    assert_eq!(range.last_counter, range.first_counter + 6);
}

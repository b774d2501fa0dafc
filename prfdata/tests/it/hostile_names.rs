//! Names that become registry keys or file names, from an .INI file, the registry or a map:
//! `/`, `\`, `..`, NUL and control characters and over-long names are refused with an error
//! naming the value and the rule, before anything is written; and install never writes through
//! a symbolic link planted where its .INI / .h go.

use crate::common;
use common::testmap;
use prfdata::install::{install_in, InstallError, InstallOptions};
use prfdata::map::MapDef;
use prfdata_registry::{
    lodctr, register_service, set_service_enabled, unlodctr, FileRegistry, LodctrError,
    LodctrOptions, Registry, RegistryError, ServiceConfig,
};
use prfdata_untrusted::{BadName, NameKind, NameRule};

/// Names that could leave their key or folder, with the rule each breaks.
fn hostile() -> Vec<(String, NameRule)> {
    vec![
        (r"Other\Performance".into(), NameRule::Backslash),
        ("../../etc/evil".into(), NameRule::Slash),
        ("..".into(), NameRule::DotDot),
        ("a\u{0}b".into(), NameRule::Nul),
        ("line\nbreak".into(), NameRule::Control { ch: '\n' }),
        ("x".repeat(256), NameRule::TooLong { len: 256, max: 255 }),
    ]
}

#[test]
fn lodctr_refuses_a_drivername_that_is_not_one_key_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("registry")).unwrap();
    let before = reg.snapshot().unwrap();
    std::fs::write(dir.path().join("d.h"), "#define OBJ 0\n").unwrap();
    for (name, rule) in hostile() {
        if name.contains('\n') || name.contains('\0') {
            continue; // one .INI line cannot hold them; the registry calls below check them
        }
        let ini = dir.path().join("d.ini");
        std::fs::write(
            &ini,
            format!("[info]\ndrivername={name}\nsymbolfile=d.h\n[languages]\n009=\n[text]\nOBJ_009_NAME=o\n"),
        )
        .unwrap();
        let err = lodctr(&reg, &ini, &LodctrOptions::default()).unwrap_err();
        match &err {
            LodctrError::BadDriverName {
                line: 2,
                source:
                    BadName {
                        kind: NameKind::Service,
                        rule: r,
                        value,
                    },
                ..
            } => {
                assert_eq!((r, value), (&rule, &name));
            }
            other => panic!("{name:?}: {other:?}"),
        }
        assert!(err.to_string().contains("d.ini:2"), "{err}");
        assert_eq!(reg.snapshot().unwrap(), before, "{name:?}: nothing written");
    }
}

#[test]
fn registry_calls_refuse_service_names_that_are_not_one_key() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("registry")).unwrap();
    let before = reg.snapshot().unwrap();
    let config = ServiceConfig::new("/opt/x/lib.so", "Open", "Collect", "Close");
    for (name, rule) in hostile() {
        let bad = |e: RegistryError| match e {
            RegistryError::BadName(b) => assert_eq!((b.rule, &b.value), (rule, &name)),
            other => panic!("{name:?}: {other:?}"),
        };
        bad(register_service(&reg, &name, &config).unwrap_err());
        bad(set_service_enabled(&reg, &name, false).unwrap_err());
        bad(prfdata_registry::first_counter_help(&reg, &name).unwrap_err());
        match unlodctr(&reg, &name).unwrap_err() {
            LodctrError::Registry(e) => bad(e),
            other => panic!("{name:?}: {other:?}"),
        }
        assert_eq!(reg.snapshot().unwrap(), before, "{name:?}: nothing written");
    }
}

#[test]
fn a_block_path_never_leaves_the_block_folder() {
    for app in ["../escape", "a/b", "..", "", "x\u{1b}"] {
        match prfdata::block_path(app) {
            Err(prfdata::Error::BadName(b)) => assert_eq!(b.kind, NameKind::App, "{app:?}"),
            other => panic!("{app:?}: {other:?}"),
        }
    }
    let too_long = "x".repeat(65);
    assert!(prfdata::block_path(&too_long).is_err());
}

#[test]
fn install_refuses_an_app_name_that_leaves_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("registry")).unwrap();
    let before = reg.snapshot().unwrap();
    let evil = MapDef {
        app: "../evil",
        objects: testmap::MAP.objects,
    };
    let options = InstallOptions {
        library: dir.path().join("libprfdata_provider.so"),
        ini_dir: dir.path().join("ini"),
        replace: false,
    };
    let err = install_in(&reg, &evil, &options).unwrap_err();
    assert!(matches!(err, InstallError::Map(_)), "{err:?}");
    assert!(!dir.path().join("evil.ini").exists());
    assert!(!dir.path().join("evil.h").exists());
    assert_eq!(reg.snapshot().unwrap(), before);
}

#[test]
fn install_replaces_a_planted_link_instead_of_writing_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("registry")).unwrap();
    let ini_dir = dir.path().join("ini");
    std::fs::create_dir_all(&ini_dir).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    for name in ["PrfDataTest.ini", "PrfDataTest.h"] {
        std::os::unix::fs::symlink(&victim, ini_dir.join(name)).unwrap();
    }
    let options = InstallOptions {
        library: dir.path().join("libprfdata_provider.so"),
        ini_dir: ini_dir.clone(),
        replace: false,
    };
    install_in(&reg, &testmap::MAP, &options).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    for name in ["PrfDataTest.ini", "PrfDataTest.h"] {
        let meta = std::fs::symlink_metadata(ini_dir.join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name} is a file now");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&ini_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

//! Names from the registry and the command line that would leave their key or folder, through
//! real processes: a `Linkage\Export` entry that walks out of the block folder to another app's
//! block (read by the real provider cdylib in a provider host), and driver names given to
//! `lodctr` / `unlodctr` / `lodctr /E:`.

use crate::common;
use crate::prfdata_app;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{finish, prfmon, Run};
use prfdata_registry::{
    paths, register_service, update, FileRegistry, Registry, ServiceConfig, Value,
};

prfdata::prfdata_map! {
    /// The app whose block sits outside the collector's block folder.
    pub mod esc {
        app: "PrfmonEscape",
        object SECRET = 0 {
            name: "Escape Secret", help: "Data from outside the block folder.",
            detail: Novice, default: VALUE, instances: none, costly: false,
            counters {
                VALUE = 2: RawCount { name: "Secret value", help: "A value.", detail: Novice, scale: 0 },
            }
        }
    }
}

/// The app: publishes its block and a known value, then waits to be killed.
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    if std::env::var_os(prfdata_app::APP_ROLE).is_none() {
        return;
    }
    let prf = esc::PrfData::activate().expect("the app activates");
    prf.get_ctr32(esc::VALUE, ())
        .store(4242, std::sync::atomic::Ordering::Relaxed);
    prfdata_app::app_ready(b"up");
    std::thread::sleep(Duration::from_secs(60));
}

/// `prfmon args...` with the registry of `installed` and the block folder `shm`.
fn prfmon_with_shm(registry: &Path, shm: &Path, args: &[&str]) -> Run {
    let child = Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .args(args)
        .env("PRFDATA_REGISTRY", registry)
        .env("PRFDATA_SHM_DIR", shm)
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prfmon");
    finish(child)
}

#[test]
fn an_export_entry_never_leads_the_provider_out_of_the_block_folder() {
    let mut installed = prfdata_app::install(&esc::MAP);
    // The app publishes into `elsewhere`, which is not the collector's block folder.
    let elsewhere = installed.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let collector_shm = std::mem::replace(&mut installed.shm, elsewhere.clone());
    let _app = prfdata_app::spawn_app(&installed, &prfdata_testkit::test_path!("app_child"));

    // Seen where it lives: the test's control.
    let run = prfmon_with_shm(&installed.registry, &elsewhere, &["query"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Escape Secret"), "{}", run.stdout);

    // A service whose Export walks from the collector's block folder to the app's block, with
    // the Performance values the provider's Open looks up under that name.
    let registry = FileRegistry::open(&installed.registry).unwrap();
    let sneaky = "../elsewhere/PrfmonEscape";
    let provider = {
        let hive = registry.snapshot().unwrap();
        match hive
            .value(&paths::performance("PrfmonEscape"), "Library")
            .unwrap()
        {
            Some(Value::Sz(s)) => s.clone(),
            other => panic!("Library: {other:?}"),
        }
    };
    let mut config = ServiceConfig::new(
        provider,
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    config.export = vec![sneaky.to_owned()];
    register_service(&registry, "Sneaky", &config).unwrap();
    update(&registry, |hive| {
        let key = format!(r"{}\{sneaky}\Performance", paths::SERVICES);
        hive.set_value(&key, "First Counter", Value::Dword(installed.first_counter))?;
        hive.set_value(
            &key,
            "First Help",
            Value::Dword(installed.first_counter + 1),
        )
    })
    .unwrap();

    for args in [&["query"][..], &["query", "--in-process"]] {
        let run = prfmon_with_shm(&installed.registry, &collector_shm, args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            !run.stdout.contains("Escape Secret"),
            "{args:?}: the provider read a block outside its folder:\n{}",
            run.stdout
        );
    }
}

#[test]
fn lodctr_refuses_a_drivername_that_is_another_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    assert_eq!(prfmon(&root, &["reg", "query", "HKLM"]).code, 0);
    let before = std::fs::read(root.join("registry.toml")).unwrap();
    std::fs::write(dir.path().join("d.h"), "#define OBJ 0\n").unwrap();
    for name in [r"Victim\Performance", "../../x", ".."] {
        let ini = dir.path().join("d.ini");
        std::fs::write(
            &ini,
            format!("[info]\ndrivername={name}\nsymbolfile=d.h\n[languages]\n009=\n[text]\nOBJ_009_NAME=o\n"),
        )
        .unwrap();
        let run = prfmon(&root, &["lodctr", ini.to_str().unwrap()]);
        assert_eq!(run.code, 1, "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains("d.ini:2") && run.stderr.contains("is refused"),
            "{name}: {}",
            run.stderr
        );
        assert_eq!(
            std::fs::read(root.join("registry.toml")).unwrap(),
            before,
            "{name}: nothing written"
        );
    }
}

#[test]
fn unlodctr_and_enable_name_the_value_and_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    for (args, value) in [
        (vec!["unlodctr", r"A\Performance"], r#""A\\Performance""#),
        (vec!["unlodctr", "a/../b"], r#""a/../b""#),
        (vec!["lodctr", "/E:a/b"], r#""a/b""#),
        (vec!["lodctr", "/D:.."], r#""..""#),
    ] {
        let run = prfmon(&root, &args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(value) && run.stderr.contains("is refused"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

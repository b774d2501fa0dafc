//! An app that installs itself into the default registry (`install`) with a provider library
//! that is not there: refused with the fix named, before any folder or file is made.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prfdata_registry::install::{
    install, CounterNames, CounterSet, InstallOptions, ObjectNames, Text,
};

/// The variable that makes the re-executed test binary the installing app: the library to
/// register. The registry is `PRFDATA_REGISTRY`.
const LIBRARY_ENV: &str = "PRFDATA_TEST_INSTALL_LIBRARY";
/// The counter-file folder the app names.
const INI_ENV: &str = "PRFDATA_TEST_INSTALL_INI";
/// How long the child may take.
const CHILD_WAIT: Duration = Duration::from_secs(60);

fn set() -> CounterSet {
    CounterSet {
        app: "MissingProvider".into(),
        objects: vec![ObjectNames {
            symbol: "OBJ".into(),
            offset: 0,
            texts: vec![Text::new("009", "Missing Provider", "o")],
            counters: vec![CounterNames {
                symbol: "CTR".into(),
                offset: 2,
                texts: vec![Text::new("009", "Ctr", "c")],
                factor: None,
                unit: None,
            }],
        }],
        fingerprint: Some(1),
    }
}

/// Entry point of the re-executed test binary: installs into the default registry and prints
/// the error (or `installed`) on stdout.
#[test]
fn install_child() {
    let (Some(library), Some(ini_dir)) = (std::env::var_os(LIBRARY_ENV), std::env::var_os(INI_ENV))
    else {
        return;
    };
    let options = InstallOptions {
        library: library.into(),
        ini_dir: ini_dir.into(),
        replace: true,
    };
    match install(&set(), &options) {
        Ok(_) => println!("installed"),
        Err(e) => println!("{e}"),
    }
    std::process::exit(0);
}

/// Runs [`install_child`] with the registry and counter files under `dir`; returns its stdout.
fn install_as_app(dir: &Path, library: &Path) -> String {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "install::install_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PRFDATA_REGISTRY", dir.join("registry"))
        .env(LIBRARY_ENV, library)
        .env(INI_ENV, dir.join("ini"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the installing app");
    let deadline = Instant::now() + CHILD_WAIT;
    while child.try_wait().expect("wait for the app").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the installing app did not end within {CHILD_WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().expect("the app's output");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_missing_provider_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let cases = [
        (
            dir.path().join("nowhere/libprfdata_provider.so"),
            "does not exist",
        ),
        (dir.path().to_path_buf(), "is not a regular file"),
    ];
    for (library, why) in cases {
        let said = install_as_app(dir.path(), &library);
        assert!(said.contains(why), "{library:?}: {said}");
        assert!(said.contains("cargo build -p prfdata-provider"), "{said}");
        let made: Vec<_> = std::fs::read_dir(dir.path())
            .expect("the temp folder")
            .map(|entry| entry.expect("an entry").file_name())
            .collect();
        assert!(
            made.is_empty(),
            "install made {made:?} although it refused the library"
        );
    }
}

/// Install records the set's objects in NT's `Object List` value (the objects' name indexes,
/// separated by spaces, under `Services\<app>\Performance`), in declaration order, so that a
/// monitor tells the app's objects from its counters while no process of the app runs; uninstall
/// removes it with the rest.
#[test]
fn install_records_the_object_list() {
    use prfdata_registry::install::{install_in, uninstall_in};
    use prfdata_registry::service::OBJECT_LIST;
    use prfdata_registry::{paths, FileRegistry, Registry, Value};
    let dir = tempfile::tempdir().expect("a temp folder");
    let registry = FileRegistry::open(dir.path().join("registry")).expect("a registry");
    let mut two = set();
    two.app = "TwoObjects".into();
    let mut second = two.objects[0].clone();
    (second.symbol, second.offset) = ("OBJ2".into(), 10);
    second.texts = vec![Text::new("009", "Second Object", "o")];
    second.counters[0].symbol = "CTR2".into();
    second.counters[0].offset = 4;
    two.objects.push(second);
    let options = InstallOptions {
        library: "/opt/app/libprfdata_provider.so".into(),
        ini_dir: dir.path().join("ini"),
        replace: false,
    };
    let range = install_in(&registry, &two, &options).expect("install");
    let hive = registry.snapshot().expect("a snapshot");
    let list = hive
        .value(&paths::performance("TwoObjects"), OBJECT_LIST)
        .expect("the key reads");
    let first = range.first_counter;
    assert_eq!(list, Some(&Value::Sz(format!("{first} {}", first + 10))));

    uninstall_in(&registry, "TwoObjects").expect("uninstall");
    let hive = registry.snapshot().expect("a snapshot");
    assert!(
        !hive.key_exists(&paths::performance("TwoObjects")),
        "uninstall leaves no Performance key"
    );
}

//! `demo-app live` as a script runs it: without a terminal, on a copy of the programs the way
//! they are installed (demo-app, prfmon and the provider library in one folder), in a sandbox
//! (`PRFDATA_REGISTRY`, `PRFDATA_SHM_DIR`).
//!
//! prfmon's binary comes from the workspace build (`cargo build --workspace`, or `cargo test
//! --workspace`, which builds it for prfmon's own tests).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use prfdata_testkit::Sandbox;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-app");

/// The folder `root/bin` with a copy of demo-app, prfmon and the provider library, as an
/// installation has them: `live` finds prfmon and the provider beside its own executable.
pub(crate) fn programs(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    for (from, name) in [
        (PathBuf::from(DEMO), "demo-app"),
        (prfdata_testkit::target_binary("prfmon"), "prfmon"),
        (
            prfdata_testkit::provider_library(),
            "libprfdata_provider.so",
        ),
    ] {
        std::fs::copy(&from, bin.join(name)).unwrap();
    }
    bin
}

/// The names of the files in `dir`.
fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The CSV records of `text`, every line one record of the header's width; panics naming the
/// first line that is not.
fn csv_records(text: &str) -> Vec<csv::StringRecord> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let records: Vec<csv::StringRecord> = reader
        .records()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("stdout is not pure CSV ({e}):\n{text}"));
    assert_eq!(
        records.len(),
        text.lines().count(),
        "one record a line:\n{text}"
    );
    records
}

#[test]
fn live_without_a_terminal_writes_pure_csv_on_stdout() {
    let sandbox = Sandbox::new();
    let root = sandbox.dir.path();
    let bin = programs(root);
    let before = files(&bin);
    let child = Command::new(bin.join("demo-app"))
        .args(["live", "--duration", "4", "--workers", "4"])
        .env("PRFDATA_REGISTRY", root.join("registry"))
        .env("PRFDATA_SHM_DIR", root.join("shm"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = prfdata_testkit::finish(child, Duration::from_secs(60));
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    let records = csv_records(&run.stdout);
    assert!(records.len() >= 3, "a header and samples:\n{}", run.stdout);
    let header = &records[0];
    let total = header
        .iter()
        .position(|c| c.ends_with(r"\PrfData Demo Worker(_Total)\% Busy"))
        .unwrap_or_else(|| panic!("the workers' _Total is a column: {header:?}"));
    for row in &records[2..] {
        assert!(
            !row[total].trim().is_empty(),
            "the workers' column has a value in every sample after the first: {row:?}"
        );
    }
    assert!(
        run.stderr.contains("installed PrfDataDemo: names "),
        "the install note goes to stderr: {}",
        run.stderr
    );
    assert_eq!(
        files(&bin),
        before,
        "a sandboxed run writes nothing beside the programs"
    );
    assert!(
        root.join("registry/ini/PrfDataDemo.ini").is_file(),
        "the .ini goes under the registry: {:?}",
        files(&root.join("registry"))
    );
}

/// `demo-app install` alone prints its note on stdout, for a person or a script to read.
#[test]
fn install_prints_what_it_installed_on_stdout() {
    let sandbox = Sandbox::new();
    let root = sandbox.dir.path();
    let bin = programs(root);
    let out = Command::new(bin.join("demo-app"))
        .arg("install")
        .env("PRFDATA_REGISTRY", root.join("registry"))
        .env("PRFDATA_SHM_DIR", root.join("shm"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("installed PrfDataDemo: names "),
        "{stdout}"
    );
    assert!(!bin.join("PrfDataDemo.ini").exists());
    assert!(root.join("registry/ini/PrfDataDemo.h").is_file());
}

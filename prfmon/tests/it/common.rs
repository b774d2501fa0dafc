//! Runs the real `prfmon` binary against a registry in a temp folder, with a bounded wait;
//! the deliberately bad test providers (`prfmon-test-providers`) and the C provider.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub use prfdata_testkit::sandbox::write_names;
pub use prfdata_testkit::{bounded, Run};

/// How long one prfmon run may take before the test fails instead of hanging.
pub const RUN_WAIT: Duration = Duration::from_secs(60);

/// The `prfmon` binary built with these tests.
pub const PRFMON: &str = env!("CARGO_BIN_EXE_prfmon");

/// Starts `prfmon args...` with `PRFDATA_REGISTRY=root`, feeds it `stdin`.
pub fn spawn(root: &Path, args: &[&str], stdin: &str) -> std::process::Child {
    let mut child = Command::new(PRFMON)
        .args(args)
        .env("PRFDATA_REGISTRY", root)
        .env_remove("PRFDATA_SHM_DIR")
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prfmon");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    child
}

/// Waits for a started run, failing the test after [`RUN_WAIT`].
pub fn finish(child: std::process::Child) -> Run {
    prfdata_testkit::finish(child, RUN_WAIT)
}

/// Runs `prfmon args...` to the end.
pub fn prfmon(root: &Path, args: &[&str]) -> Run {
    finish(spawn(root, args, ""))
}

/// Runs `prfmon args...` with `stdin` as its input.
pub fn prfmon_with_input(root: &Path, args: &[&str], stdin: &str) -> Run {
    finish(spawn(root, args, stdin))
}

// ---------------------------------------------------------------------------------------------
// Providers for the collector tests.
// ---------------------------------------------------------------------------------------------

use std::path::PathBuf;

use prfdata_registry::{register_service, FileRegistry, ServiceConfig};
use prfmon::collector::CollectorOptions;

/// How long a test waits for anything the collector does before it fails.
pub const TEST_WAIT: Duration = Duration::from_secs(60);

/// The deliberately bad provider library (`prfmon-test-providers`), which cargo builds into
/// the same `deps` folder as the test binaries because prfmon dev-depends on it.
pub fn test_providers_library() -> PathBuf {
    prfdata_testkit::cdylib("prfmon_test_providers")
}

/// A private copy of the provider library in `dir`: its own host process and its own state.
pub fn provider_copy(dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(format!("libprovider_{name}.so"));
    std::fs::copy(test_providers_library(), &copy).expect("copy the provider library");
    copy
}

/// Registers `service` with `library` in the test provider's `mode`, its object at
/// `index`, with `timeout_ms` for Open and Collect.
pub fn register(
    registry: &FileRegistry,
    service: &str,
    library: &Path,
    mode: &str,
    index: u32,
    timeout_ms: u32,
) {
    let export = [mode.to_owned(), index.to_string()];
    register_exporting(registry, service, library, &export, timeout_ms);
}

/// Registers `service` with the test provider `library`, its `Linkage\Export` strings
/// `export` (mode, name index, then what the mode reads: see the provider's docs), with
/// `timeout_ms` for Open and Collect.
pub fn register_exporting(
    registry: &FileRegistry,
    service: &str,
    library: &Path,
    export: &[String],
    timeout_ms: u32,
) {
    let mut cfg = ServiceConfig::new(
        library.display().to_string(),
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    cfg.export = export.to_vec();
    cfg.open_timeout_ms = timeout_ms;
    cfg.collect_timeout_ms = timeout_ms;
    register_service(registry, service, &cfg).expect("register the service");
}

/// Writes English names and explain texts for the test provider's object at `index`:
/// object `title`, counters `title Count` and `title Calls`.
pub fn name_object(registry: &FileRegistry, index: u32, title: &str) {
    write_names(
        registry,
        index,
        &[
            (title.to_owned(), format!("{title} help.")),
            (format!("{title} Count"), format!("How many {title}.")),
            (
                format!("{title} Calls"),
                format!("Collect calls of {title}."),
            ),
        ],
    );
}

/// The name index of [`good_and_bad`]'s good provider's object.
pub const GOOD_INDEX: u32 = 1848;
/// The name index of [`good_and_bad`]'s bad provider's object.
pub const BAD_INDEX: u32 = 1860;

/// A registry under `dir/reg` with the test provider in mode `good` (service `Good`, its object
/// named) and a copy in mode `bad_mode` (service `bad_service`); returns the registry's root.
pub fn good_and_bad(dir: &Path, bad_service: &str, bad_mode: &str) -> PathBuf {
    let root = dir.join("reg");
    let registry = FileRegistry::open(&root).unwrap();
    register(
        &registry,
        "Good",
        &provider_copy(dir, "good"),
        "good",
        GOOD_INDEX,
        5_000,
    );
    register(
        &registry,
        bad_service,
        &provider_copy(dir, bad_mode),
        bad_mode,
        BAD_INDEX,
        5_000,
    );
    name_object(&registry, GOOD_INDEX, "Good");
    root
}

/// Collector options for tests: host processes run the `prfmon` built for this test.
pub fn options() -> CollectorOptions {
    CollectorOptions {
        host_exe: Some(PathBuf::from(PRFMON)),
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The third-party provider written in C (tests/c-provider/provider.c).
// ---------------------------------------------------------------------------------------------

/// Builds the C provider into `dir/libcprovider.so` with the system's `cc`, as a vendor's
/// shared object (`-shared -fPIC`, warnings as errors).
pub fn c_provider(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c-provider/provider.c");
    let out = dir.join("libcprovider.so");
    let child = Command::new("cc")
        .args([
            "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
        ])
        .arg(&out)
        .arg(&source)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cc (gcc or clang) to build the C provider");
    let run = finish(child);
    assert_eq!(run.code, 0, "cc {}: {}", source.display(), run.stderr);
    out
}

/// Registers `service` with the C provider at `library`: `mode` (`good`, `dword`, `word`),
/// its object at `index`, its value `value`.
pub fn register_c(
    registry: &FileRegistry,
    service: &str,
    library: &Path,
    mode: &str,
    index: u32,
    value: u32,
) {
    let mut cfg = ServiceConfig::new(
        library.display().to_string(),
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    cfg.export = vec![mode.to_owned(), index.to_string(), value.to_string()];
    register_service(registry, service, &cfg).expect("register the C provider's service");
}

/// Names the C provider's object at `index`: `title`, counters `title Value`, `title Large`,
/// `title Calls`.
pub fn name_c_object(registry: &FileRegistry, index: u32, title: &str) {
    let entries: Vec<(String, String)> = ["", " Value", " Large", " Calls"]
        .iter()
        .map(|suffix| (format!("{title}{suffix}"), format!("{title}{suffix} help.")))
        .collect();
    write_names(registry, index, &entries);
}

/// The C provider's large counter for `value`: 2^40 + `value`.
pub fn c_large(value: u32) -> i64 {
    (1i64 << 40) + i64::from(value)
}

// ---------------------------------------------------------------------------------------------
// Provider host processes.
// ---------------------------------------------------------------------------------------------

/// This process's provider host processes: (pid, command line with its NULs).
pub fn provider_hosts() -> Vec<(String, Vec<u8>)> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .to_owned();
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (ppid == me && cmdline.windows(15).any(|w| w == b"__provider-host"))
                .then(|| (entry.file_name().to_string_lossy().into_owned(), cmdline))
        })
        .collect()
}

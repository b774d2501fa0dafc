//! Runs the real `prfmon` binary against a registry in a temp folder, with a bounded wait.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one prfmon run may take before the test fails instead of hanging.
pub const RUN_WAIT: Duration = Duration::from_secs(60);

/// What a run printed and how it ended.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Starts `prfmon args...` with `PRFDATA_REGISTRY=root`, feeds it `stdin`.
pub fn spawn(root: &Path, args: &[&str], stdin: &str) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .args(args)
        .env("PRFDATA_REGISTRY", root)
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
pub fn finish(mut child: std::process::Child) -> Run {
    let deadline = Instant::now() + RUN_WAIT;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("prfmon did not finish within {RUN_WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("collect output");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
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

use prfdata_registry::{
    paths, register_service, update, FileRegistry, RegistryError, ServiceConfig, Value,
};
use prfmon::collector::CollectorOptions;

/// How long a test waits for anything the collector does before it fails.
pub const TEST_WAIT: Duration = Duration::from_secs(60);

/// The deliberately bad provider library (`prfmon-test-providers`), which cargo builds into
/// the same `deps` folder as the test binaries because prfmon dev-depends on it.
pub fn provider_library() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().expect("deps folder");
    let lib = dir.join("libprfmon_test_providers.so");
    assert!(lib.is_file(), "{} was not built", lib.display());
    lib
}

/// A private copy of the provider library in `dir`: its own host process and its own state.
pub fn provider_copy(dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(format!("libprovider_{name}.so"));
    std::fs::copy(provider_library(), &copy).expect("copy the provider library");
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
    let mut cfg = ServiceConfig::new(
        library.display().to_string(),
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    cfg.export = vec![mode.to_owned(), index.to_string()];
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

/// Writes English names and explain texts from `index` on: `entries[i]` names index
/// `index + 2i` and explains `index + 2i + 1`.
pub fn write_names(registry: &FileRegistry, index: u32, entries: &[(String, String)]) {
    let key = paths::perflib_language("009");
    update(registry, |hive| {
        let mut counter = match hive.value(&key, "Counter")? {
            Some(Value::MultiSz(v)) => v.clone(),
            _ => Vec::new(),
        };
        let mut help = match hive.value(&key, "Help")? {
            Some(Value::MultiSz(v)) => v.clone(),
            _ => Vec::new(),
        };
        for (i, (name, text)) in entries.iter().enumerate() {
            let n = index + 2 * i as u32;
            counter.extend([n.to_string(), name.clone()]);
            help.extend([(n + 1).to_string(), text.clone()]);
        }
        hive.set_value(&key, "Counter", Value::MultiSz(counter))?;
        hive.set_value(&key, "Help", Value::MultiSz(help))?;
        Ok::<(), RegistryError>(())
    })
    .expect("write the names");
}

/// Collector options for tests: host processes run the `prfmon` built for this test.
pub fn options() -> CollectorOptions {
    CollectorOptions {
        host_exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_prfmon"))),
        ..Default::default()
    }
}

/// Runs `f` on another thread and fails the test if it takes longer than `limit`.
pub fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("did not finish within {limit:?}")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the bounded work panicked"),
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

//! Where messages go: the library logs through the `log` facade, the `prfmon` binary writes
//! the records to stderr as `prfmon: <message>` (in the collector and in its provider hosts),
//! `PRFMON_LOG` sets the level, and what a provider library says reaches the collector's
//! stderr too.

use std::path::Path;
use std::process::{Command, Stdio};

use prfdata_registry::{performance_services, register_service, FileRegistry, ServiceConfig};

use crate::common::{self, finish, Run, PRFMON};

/// A registry with a good provider and one that panics in Collect.
fn good_and_panicking(dir: &Path) -> std::path::PathBuf {
    crate::common::good_and_bad(dir, "Panicky", "panic")
}

/// `prfmon args...` against `root` with `PRFMON_LOG` set to `level` (or unset).
fn prfmon_logging(root: &Path, args: &[&str], level: Option<&str>) -> Run {
    let mut command = Command::new(PRFMON);
    command
        .args(args)
        .env("PRFDATA_REGISTRY", root)
        .env_remove("PRFDATA_SHM_DIR")
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .env_remove("PRFMON_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(level) = level {
        command.env("PRFMON_LOG", level);
    }
    finish(command.spawn().expect("spawn prfmon"))
}

const DISABLED: &str = "prfmon: disabled the performance counters of service Panicky";

#[test]
fn the_collectors_warnings_reach_stderr_with_the_prfmon_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let root = good_and_panicking(dir.path());
    for level in [None, Some("warn"), Some("WARN")] {
        let run = prfmon_logging(&root, &["query"], level);
        assert_eq!(run.code, 0, "{level:?}: {}", run.stderr);
        assert!(run.stderr.contains(DISABLED), "{level:?}: {}", run.stderr);
        // Reset for the next run: the provider was disabled in the registry.
        let again = common::prfmon(&root, &["lodctr", "/E:Panicky"]);
        assert_eq!(again.code, 0, "{}", again.stderr);
    }
}

#[test]
fn prfmon_log_off_silences_the_messages_and_changes_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = good_and_panicking(dir.path());
    let run = prfmon_logging(&root, &["query"], Some("off"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("disabled the performance"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("Object Good (1848)"), "{}", run.stdout);
    let services = performance_services(&FileRegistry::open(&root).unwrap()).unwrap();
    let panicky = services.iter().find(|s| s.name == "Panicky").unwrap();
    assert!(panicky.disabled, "still disabled, only not said");
}

#[test]
fn a_prfmon_log_that_is_not_a_level_is_reported_and_the_default_kept() {
    let dir = tempfile::tempdir().unwrap();
    let root = good_and_panicking(dir.path());
    let run = prfmon_logging(&root, &["query"], Some("loud"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("PRFMON_LOG=\"loud\" is not a level"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(DISABLED), "{}", run.stderr);
}

/// The provider host logs what goes wrong on its side through the same logger: a collector
/// that speaks garbage gets a protocol error on the host's stderr (the collector's).
#[test]
fn a_provider_hosts_own_errors_reach_its_stderr() {
    let library = common::test_providers_library();
    let mut child = Command::new(PRFMON)
        .arg("__provider-host")
        .arg(&library)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn a provider host");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("the host's stdin");
        // A frame length far beyond any request, then nothing.
        let _ = stdin.write_all(&[0xFF; 16]);
    }
    let run = finish(child);
    assert_eq!(run.code, 2, "a protocol error: {}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("prfmon: provider host ({}): ", library.display())),
        "{}",
        run.stderr
    );
}

/// Regression guard for the move of the libraries to `log`: a provider library is a cdylib
/// with its own copy of `log`, which the collector's logger does not reach; what the real
/// provider says (here: Open refused, the app named in Export is not installed) must still
/// reach the collector's stderr, from a provider host and in process.
#[test]
fn the_real_providers_messages_reach_the_collectors_stderr() {
    let sandbox = prfdata_testkit::Sandbox::new();
    let registry = sandbox.open();
    let mut cfg = ServiceConfig::new(
        prfdata_testkit::provider_library().display().to_string(),
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    cfg.export = vec!["GhostApp".into()];
    register_service(&registry, "Ghost", &cfg).expect("register the service");
    for mode in [&["query"][..], &["query", "--in-process"][..]] {
        let mut command = Command::new(PRFMON);
        sandbox
            .apply_env(&mut command)
            .args(mode)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let run = finish(command.spawn().expect("spawn prfmon"));
        assert_eq!(run.code, 0, "{mode:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("app GhostApp is not installed"),
            "{mode:?}: the provider's own message: {}",
            run.stderr
        );
        assert!(
            run.stderr
                .contains("prfmon: service Ghost: Open returned 2; skipped"),
            "{mode:?}: the collector's message: {}",
            run.stderr
        );
    }
}

/// The last line of a failed run's stderr, checked: exit status 1, the subcommand's prefix, a
/// sentence rather than a Rust Debug rendering.
fn assert_one_prefixed_sentence(sub: &str, run: &Run) {
    assert_eq!(run.code, 1, "{sub}: {}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("prfmon {sub}: ")),
        "{sub}: the error is not said after `prfmon {sub}: `: {}",
        run.stderr
    );
    for debug in ["{ ", "Os {", "Error:", "kind: "] {
        assert!(
            !last.contains(debug),
            "{sub}: Debug text {debug:?} in {last}"
        );
    }
}

#[test]
fn every_subcommand_says_its_error_as_one_prefixed_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    FileRegistry::open(&root).unwrap();
    let missing = dir.path().join("missing.file").display().to_string();
    let used = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let used = used.local_addr().unwrap().to_string();
    let calls: [(&str, Vec<&str>); 9] = [
        ("query", vec!["query", "Nothing"]),
        ("list", vec!["list", "Nothing"]),
        ("typeperf", vec!["typeperf", "no-backslash", "-sc", "1"]),
        ("watch", vec!["watch", r"\Nope\Nothing"]),
        ("decode", vec!["decode", &missing]),
        ("lodctr", vec!["lodctr", &missing]),
        ("unlodctr", vec!["unlodctr", "NoSuchDriver"]),
        ("reg", vec!["reg", "query", r"HKLM\SOFTWARE\NoSuchKey"]),
        (
            "serve",
            vec!["serve", "--listen", &used, "--log-to", "stderr"],
        ),
    ];
    for (sub, args) in &calls {
        assert_one_prefixed_sentence(sub, &prfmon_logging(&root, args, None));
    }
    // A registry written by a newer prfdata is said to be newer, not corrupt.
    std::fs::write(root.join("registry.toml"), "format = 999\n").unwrap();
    let run = prfmon_logging(&root, &["query"], None);
    assert_one_prefixed_sentence("query", &run);
    assert!(
        run.stderr.contains("newer prfdata") && !run.stderr.contains("corrupt"),
        "{}",
        run.stderr
    );
}

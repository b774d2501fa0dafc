//! What the provider logs reaches a host that `dlopen`s it only when the host asks
//! (`PRFDATA_PROVIDER_LOG`), and then on stderr, prefixed `prfdata-provider: `: its copy of
//! `log` is out of reach of the host's logger. Without the variable it prints nothing.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Provider;

/// Child: load the library with `dlopen` and Open an app that is not installed.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if std::env::var_os("PROV_LOG_CHILD").is_none() {
        return;
    }
    let p = Provider::load();
    assert_ne!(
        p.open(&["NotInstalledApp"]),
        0,
        "Open fails for an app not installed"
    );
}

/// Runs the child with `PRFDATA_PROVIDER_LOG` set to `level` (or unset) and returns its stderr.
fn child_stderr(level: Option<&str>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "logging::child_entry",
        "--include-ignored",
        "--test-threads=1",
        "--nocapture",
    ])
    .env("PROV_LOG_CHILD", "1")
    .env("PRFDATA_REGISTRY", dir.path().join("registry"))
    .env("PRFDATA_SHM_DIR", dir.path())
    .env_remove("PRFDATA_PROVIDER_LOG")
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if let Some(level) = level {
        cmd.env("PRFDATA_PROVIDER_LOG", level);
    }
    let child = cmd.spawn().unwrap();
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(60), "the child ended");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_dlopened_provider_logs_to_stderr_only_when_the_host_asks() {
    let asked = child_stderr(Some("warn"));
    assert!(
        asked.contains("prfdata-provider: Open: app NotInstalledApp is not installed"),
        "{asked}"
    );
    let silent = child_stderr(None);
    assert!(!silent.contains("prfdata-provider:"), "{silent}");
    let off = child_stderr(Some("off"));
    assert!(!off.contains("prfdata-provider:"), "{off}");
}

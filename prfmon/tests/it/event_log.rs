//! The event log ("How a performance DLL interfaces with a monitor"): the collector reports a
//! provider's failure once per condition, not on every Collect, to the system log (`--log-to
//! syslog`, a datagram socket the test binds and names with `PRFDATA_SYSLOG_SOCKET`) or to stderr.
//! Real `prfmon` processes, a real provider library failing every Collect in its host process.

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{finish, Run, PRFMON};

const FAILED: &str = "service Failing: Collect returned 5; its data is ignored";
const COLLECTIONS: &str = "20";

/// A registry with a good provider and one whose Collect fails every time.
fn good_and_failing(dir: &Path) -> std::path::PathBuf {
    crate::common::good_and_bad(dir, "Failing", "fail-collect")
}

/// `prfmon typeperf` making 20 collections, with `extra` arguments and the system log at
/// `socket`.
fn twenty_collections(root: &Path, extra: &[&str], socket: &Path) -> Run {
    let mut command = Command::new(PRFMON);
    command
        .args(["typeperf", r"\Good(*)\*", "-sc", COLLECTIONS, "-si", "0.02"])
        .args(extra)
        .env("PRFDATA_REGISTRY", root)
        .env("PRFDATA_SYSLOG_SOCKET", socket)
        .env_remove("PRFDATA_SHM_DIR")
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .env_remove("PRFMON_LOG")
        .env_remove("PRFMON_LOG_TO")
        .env_remove("PRFDATA_PROVIDER_LOG_TO")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().expect("spawn prfmon"))
}

/// Every datagram waiting on `receiver`.
fn received(receiver: &UnixDatagram) -> Vec<String> {
    receiver
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = receiver.recv(&mut buf) {
        out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    out
}

#[test]
fn a_provider_failing_every_collect_is_logged_once_to_the_system_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = good_and_failing(dir.path());
    let socket = dir.path().join("log.sock");
    let receiver = UnixDatagram::bind(&socket).unwrap();
    let run = twenty_collections(&root, &["--log-to", "syslog"], &socket);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout.lines().count(),
        21,
        "20 rows and a header: {run:?}"
    );
    assert!(!run.stderr.contains(FAILED), "{run:?}");
    let messages = received(&receiver);
    let failed: Vec<&String> = messages.iter().filter(|m| m.contains(FAILED)).collect();
    assert_eq!(failed.len(), 1, "{messages:#?}");
    // syslog(3)'s local format: facility user (1), severity warning (4).
    assert!(failed[0].starts_with("<12>prfmon["), "{}", failed[0]);
    assert!(
        failed[0].ends_with(&format!("]: {FAILED}")),
        "{}",
        failed[0]
    );
}

#[test]
fn on_stderr_too_the_failure_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = good_and_failing(dir.path());
    let socket = dir.path().join("log.sock");
    let receiver = UnixDatagram::bind(&socket).unwrap();
    // stderr is the default for typeperf.
    let run = twenty_collections(&root, &[], &socket);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr.matches(FAILED).count(), 1, "{}", run.stderr);
    assert!(received(&receiver).is_empty());
}

#[test]
fn without_a_system_log_messages_go_to_stderr_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = good_and_failing(dir.path());
    let socket = dir.path().join("nobody-listens.sock");
    let run = twenty_collections(&root, &["--log-to", "syslog"], &socket);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("no system log at {}", socket.display())),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches(FAILED).count(), 1, "{}", run.stderr);
}

#[test]
fn the_provider_library_reports_a_killed_app_once_to_the_system_log() {
    use crate::serve_common::{get, setup, Guard, WAIT};
    use std::io::{BufRead, BufReader};

    // The real provider library, in a provider host process; the app killed, its block left
    // behind.
    let setup = setup();
    let app = setup.start_app("static");
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(app.id() as i32, libc::SIGKILL) }, 0);
    drop(app);
    let socket = setup.path("log.sock");
    let receiver = UnixDatagram::bind(&socket).unwrap();
    let mut command = Command::new(PRFMON);
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("PRFDATA_SYSLOG_SOCKET", &socket)
        .env_remove("PRFMON_LOG")
        .env_remove("PRFMON_LOG_TO")
        .env_remove("PRFDATA_PROVIDER_LOG")
        .env_remove("PRFDATA_PROVIDER_LOG_TO")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    setup.apply_env(&mut command);
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let _serve = Guard::new(child, "prfmon serve");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("prfmon serve: listening on http://") {
                let _ = tx.send(rest.trim_end_matches("/metrics").to_owned());
            }
        }
    });
    let addr = rx.recv_timeout(WAIT).expect("serve printed its address");
    let addr = addr.parse().unwrap();
    for _ in 0..20 {
        assert_eq!(get(addr, "/metrics").status, 200);
    }
    let messages = received(&receiver);
    let provider: Vec<&String> = messages
        .iter()
        .filter(|m| m.contains("prfdata-provider[") && m.contains("ServeTestApp"))
        .collect();
    assert_eq!(provider.len(), 1, "{messages:#?}");
    // Facility daemon (3), severity warning (4).
    assert!(
        provider[0].starts_with("<28>prfdata-provider["),
        "{}",
        provider[0]
    );
}

//! Who may scrape `prfmon serve`: loopback by default; a warning on stderr when it listens
//! beyond loopback without `--token-file`; with `--token-file`, every request must carry
//! `Authorization: Bearer <token>` (401 with `WWW-Authenticate: Bearer` otherwise), and the
//! token file is checked like a secret. Real `prfmon serve` processes, real HTTP requests.

use crate::serve_common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serve_common::*;

const TOKEN: &str = "0123456789abcdef-prfmon-test-token";
const WARNING: &str = "without --token-file: anyone who can reach this address reads every counter";

/// A token file in `dir` holding `content`, with `mode`.
fn token_file(dir: &Path, content: &str, mode: u32) -> PathBuf {
    let file = dir.join("token");
    std::fs::write(&file, content).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    file
}

/// `prfmon serve args...` that is expected to exit: its exit code and stderr.
fn serve_exits(setup: &Setup, args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .arg("serve")
        .args(args)
        .env("PRFDATA_REGISTRY", &setup.registry)
        .env("PRFDATA_SHM_DIR", &setup.shm)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("prfmon serve {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn with_a_token_file_every_request_needs_the_bearer_token() {
    let setup = setup();
    let _app = setup.start_app("static");
    let file = token_file(setup.dir.path(), &format!("  {TOKEN}\n"), 0o600);
    let file_arg = file.display().to_string();
    let (_serve, addr, log) =
        setup.start_serve(&["--listen", "127.0.0.1:0", "--token-file", &file_arg]);
    let addr = addr.expect("prfmon serve listening");

    let refused: [&[(&str, &str)]; 5] = [
        &[],
        &[("Authorization", "Bearer wrong-token-wrong-token")],
        &[("Authorization", &format!("Bearer {TOKEN}x"))],
        &[(
            "Authorization",
            &format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
        )],
        &[("Authorization", &format!("Basic {TOKEN}"))],
    ];
    for headers in refused {
        for target in ["/metrics", "/", "/nothing"] {
            let r = request_with(addr, "GET", target, headers);
            assert_eq!(r.status, 401, "{target} {headers:?}: {}", r.head);
            // Header names are case-insensitive (RFC 9110 section 5.1).
            assert!(
                r.head
                    .to_ascii_lowercase()
                    .contains("www-authenticate: bearer"),
                "{target}: {}",
                r.head
            );
            assert!(!r.body.contains("prfdata_"), "{}", r.body);
        }
    }
    let bearer = format!("Bearer {TOKEN}");
    let r = request_with(addr, "GET", "/metrics", &[("Authorization", &bearer)]);
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.body.contains("prfdata_serve_test_service_queue_length"),
        "{}",
        r.body
    );
    // The scheme is case-insensitive (RFC 7235).
    let lower = format!("bearer {TOKEN}");
    let r = request_with(addr, "GET", "/metrics", &[("Authorization", &lower)]);
    assert_eq!(r.status, 200, "{}", r.head);
    let log = log.lock().unwrap().clone();
    assert!(!log.contains(WARNING), "{log}");
}

#[test]
fn listening_beyond_loopback_without_a_token_warns() {
    let setup = setup();
    let (serve, addr, log) = setup.start_serve(&["--listen", "0.0.0.0:0"]);
    addr.expect("prfmon serve listening");
    let text = log.lock().unwrap().clone();
    assert!(
        text.contains("prfmon serve: warning: listening on 0.0.0.0:"),
        "{text}"
    );
    assert!(text.contains(WARNING), "{text}");
    drop(serve);

    // Loopback, or a token: no warning.
    let file = token_file(setup.dir.path(), TOKEN, 0o600);
    let file_arg = file.display().to_string();
    for args in [
        &["--listen", "127.0.0.1:0"][..],
        &["--listen", "0.0.0.0:0", "--token-file", &file_arg][..],
    ] {
        let (serve, addr, log) = setup.start_serve(args);
        addr.expect("prfmon serve listening");
        let text = log.lock().unwrap().clone();
        assert!(!text.contains("warning"), "{args:?}: {text}");
        drop(serve);
    }
}

#[test]
fn a_token_file_must_be_kept_like_a_secret() {
    let setup = setup();
    let dir = setup.dir.path();
    let cases: [(&str, u32, &str); 4] = [
        (
            TOKEN,
            0o644,
            "mode 0644: a token file must be owned by root or this server's user",
        ),
        (TOKEN, 0o640, "and be readable by no one else; chmod 600 it"),
        (
            "short\n",
            0o600,
            "the token is 5 characters long; use at least 16",
        ),
        ("\n \n", 0o600, "the token is 0 characters long"),
    ];
    for (content, mode, expected) in cases {
        let file = token_file(dir, content, mode);
        let file_arg = file.display().to_string();
        let (code, stderr) = serve_exits(
            &setup,
            &["--listen", "127.0.0.1:0", "--token-file", &file_arg],
        );
        assert_ne!(code, 0, "{content:?} {mode:o}: {stderr}");
        assert!(
            stderr.contains(&format!("--token-file {file_arg}")),
            "{stderr}"
        );
        assert!(
            stderr.contains(expected),
            "expected `{expected}` in: {stderr}"
        );
    }
    let (code, stderr) = serve_exits(
        &setup,
        &[
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            &dir.display().to_string(),
        ],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("not a regular file"), "{stderr}");
}

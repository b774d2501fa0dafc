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

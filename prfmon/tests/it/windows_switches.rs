//! The Windows tools' habits through the real binary: `/?` and `-?` print the help of every
//! Windows-style command (reg and its subcommands, lodctr, unlodctr, typeperf, watch), and
//! `watch -si` sets the sample interval as typeperf's `-si` does.

use crate::common;
use crate::sampling_app;

use std::process::{Command, Stdio};

use common::{finish, PRFMON};
use sampling_app::{shell_env, App};

/// `prfmon args...` in an empty working folder (a file named `/?` could not be there anyway,
/// but nothing else can be read by mistake either), against an empty registry.
fn run_in_empty_folder(args: &[&str]) -> prfdata_testkit::Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let child = Command::new(PRFMON)
        .args(args)
        .current_dir(dir.path())
        .env("PRFDATA_REGISTRY", dir.path().join("registry"))
        .env("PRFDATA_SHM_DIR", dir.path().join("shm"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prfmon");
    finish(child)
}

#[test]
fn every_windows_style_command_prints_its_help_for_slash_question() {
    let commands: [&[&str]; 8] = [
        &["reg"],
        &["reg", "query"],
        &["reg", "add"],
        &["reg", "delete"],
        &["lodctr"],
        &["unlodctr"],
        &["typeperf"],
        &["watch"],
    ];
    for command in commands {
        for help in ["/?", "-?"] {
            let mut args = command.to_vec();
            args.push(help);
            let run = run_in_empty_folder(&args);
            let usage = format!("Usage: prfmon {}", command.join(" "));
            assert_eq!(
                run.code,
                0,
                "prfmon {}: {}\n{}",
                args.join(" "),
                run.stderr,
                run.stdout
            );
            assert!(
                run.stdout.contains(&usage),
                "prfmon {} prints `{usage}`:\n{}{}",
                args.join(" "),
                run.stdout,
                run.stderr
            );
        }
    }
    // A Windows-style switch's value is still a value: `reg add KEY /v /?` names a value `/?`.
    let run = run_in_empty_folder(&["reg", "add", r"HKLM\SOFTWARE\X", "/v", "/?", "/d", "1"]);
    assert!(!run.stdout.contains("Usage:"), "{}", run.stdout);
}

#[test]
fn watch_takes_typeperfs_si_as_its_interval() {
    let bad = run_in_empty_folder(&["watch", r"\A\B", "-si", "soon"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("bad sample interval `soon`"),
        "{}",
        bad.stderr
    );
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn watch_si_samples_at_that_interval_in_a_terminal() {
    let app = App::start();
    let pane = crate::watch::Pane::start_with(
        &shell_env(&app),
        r"'\TP Service\Queue length' -si 0.5 --frames 2 --no-scale",
    );
    let screen = pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
    assert!(!screen.contains("unexpected argument"), "{screen}");
}

//! `prfmon ... | head`: every subcommand that prints ends quietly when the reader of its
//! standard output has gone, as coreutils do (killed by SIGPIPE, nothing on stderr), never
//! with a "failed printing to stdout" panic. The pipe's read end is closed before prfmon
//! starts, so its first write meets a pipe without a reader, every time.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{name_object, prfmon, provider_copy, register, RUN_WAIT};
use prfdata_registry::FileRegistry;

/// Runs `prfmon args...` with its stdout a pipe whose read end is already closed; returns the
/// exit status and stderr.
fn into_closed_pipe(root: &Path, args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .args(args)
        .env("PRFDATA_REGISTRY", root)
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prfmon");
    let deadline = Instant::now() + RUN_WAIT;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("prfmon {args:?} did not finish within {RUN_WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_printing_subcommand_ends_quietly_when_the_reader_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    let registry = FileRegistry::open(&root).unwrap();
    let lib = provider_copy(dir.path(), "good");
    register(&registry, "Good", &lib, "good", 2000, 10_000);
    name_object(&registry, 2000, "Good Obj");
    let raw = dir.path().join("collection.raw");
    assert_eq!(
        prfmon(&root, &["query", "--raw", raw.to_str().unwrap()]).code,
        0
    );
    std::fs::write(dir.path().join("d.h"), "#define OBJ 0\n").unwrap();
    let ini = dir.path().join("d.ini");
    std::fs::write(
        &ini,
        "[info]\ndrivername=Drv\nsymbolfile=d.h\n[languages]\n009=\n[text]\nOBJ_009_NAME=o\n",
    )
    .unwrap();
    let save = format!("/S:{}", dir.path().join("saved.toml").display());

    let commands: Vec<Vec<&str>> = vec![
        vec!["query"],
        vec!["reg", "query", "HKLM"],
        vec!["reg", "query", "HKLM", "/s"],
        vec!["reg", "add", r"HKLM\SOFTWARE\X", "/v", "A", "/d", "1", "/f"],
        vec!["reg", "delete", r"HKLM\SOFTWARE\X", "/f"],
        vec!["query", "--json"],
        vec!["decode", raw.to_str().unwrap()],
        vec!["list"],
        vec!["list", "--json"],
        vec!["typeperf", "-q"],
        vec![
            "typeperf",
            r"\Good Obj(*)\Good Obj Count",
            "-sc",
            "2",
            "-si",
            "0.1",
        ],
        vec!["lodctr", ini.to_str().unwrap()],
        vec!["unlodctr", "Drv"],
        vec!["lodctr", "/D:Good"],
        vec!["lodctr", "/E:Good"],
        vec!["lodctr", &save],
        vec!["--help"],
    ];
    let commands: Vec<Vec<String>> = commands
        .into_iter()
        .map(|c| c.into_iter().map(str::to_owned).collect())
        .collect();
    for args in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, stderr) = into_closed_pipe(&root, &args);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        let quiet = status.signal() == Some(libc::SIGPIPE) || status.code() == Some(0);
        assert!(quiet, "{args:?}: {status:?}, stderr: {stderr}");
        assert_eq!(stderr, "", "{args:?}: nothing on stderr");
    }
}

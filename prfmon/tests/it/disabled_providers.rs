//! Disabled providers, as an operator meets them: `lodctr /D:` and `/E:` switch a service off
//! and on in one atomic registry update; `query`, `list`, `typeperf`, `watch` and `serve` say
//! once, on stderr, which providers are disabled and the exact command that re-enables each
//! (also for one the collector disables during the run); and an object asked for by name or
//! index that no provider delivered makes the command exit non-zero, naming it.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{name_object, prfmon, provider_copy, register, Run, TEST_WAIT};
use prfdata_registry::FileRegistry;

/// A registry with two good providers: `Alpha` (object 1848, "Alpha Obj") and `Beta` (object
/// 1860, "Beta Obj"), each with its own copy of the test provider library.
fn two_services(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("registry");
    let registry = FileRegistry::open(&root).unwrap();
    for (service, index, title) in [("Alpha", 1848, "Alpha Obj"), ("Beta", 1860, "Beta Obj")] {
        let lib = provider_copy(dir, service);
        register(&registry, service, &lib, "good", index, 10_000);
        name_object(&registry, index, title);
    }
    root
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

const BETA_DISABLED: &str = "the provider of service Beta is disabled";
const REENABLE_BETA: &str = "re-enable it with: prfmon lodctr /E:Beta";

#[test]
fn lodctr_d_and_e_switch_a_provider_off_and_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = two_services(dir.path());
    let perf = r"HKLM\SYSTEM\CurrentControlSet\Services\Beta\Performance";

    let run = prfmon(&root, &["lodctr", "/D:Beta"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "Disabled the performance counters of service Beta\n"
    );
    let q = prfmon(
        &root,
        &["reg", "query", perf, "/v", "Disable Performance Counters"],
    );
    assert!(
        q.stdout
            .contains("    Disable Performance Counters    REG_DWORD    0x1\n"),
        "{}",
        q.stdout
    );
    let run = prfmon(&root, &["query"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("Alpha Obj") && !run.stdout.contains("Beta Obj"),
        "{}",
        run.stdout
    );

    let run = prfmon(&root, &["lodctr", "/e:beta"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let q = prfmon(
        &root,
        &["reg", "query", perf, "/v", "Disable Performance Counters"],
    );
    assert_eq!(q.code, 1, "the value is gone: {}", q.stdout);
    let run = prfmon(&root, &["query"]);
    assert!(run.stdout.contains("Beta Obj"), "{}", run.stdout);
    assert!(!run.stderr.contains("disabled"), "{}", run.stderr);

    let before = std::fs::read(root.join("registry.toml")).unwrap();
    let run = prfmon(&root, &["lodctr", "/D:Gamma"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("service Gamma has no Performance key"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(root.join("registry.toml")).unwrap(), before);
}

#[test]
fn collecting_commands_name_each_disabled_provider_once_with_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let root = two_services(dir.path());
    assert_eq!(prfmon(&root, &["lodctr", "/D:Beta"]).code, 0);

    let runs: [(&str, Run); 4] = [
        ("query", prfmon(&root, &["query"])),
        ("list", prfmon(&root, &["list"])),
        (
            "typeperf",
            prfmon(
                &root,
                &["typeperf", r"\Alpha Obj(*)\Alpha Obj Count", "-sc", "1"],
            ),
        ),
        // No terminal here, so watch stops after its checks; the message comes first.
        (
            "watch",
            prfmon(
                &root,
                &["watch", r"\Alpha Obj(*)\Alpha Obj Count", "--frames", "1"],
            ),
        ),
    ];
    for (command, run) in &runs {
        assert_eq!(
            count(&run.stderr, BETA_DISABLED),
            1,
            "{command}: {}",
            run.stderr
        );
        assert_eq!(
            count(&run.stderr, REENABLE_BETA),
            1,
            "{command}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&format!("prfmon {command}: ")),
            "{command}: {}",
            run.stderr
        );
    }
    assert_eq!(runs[0].1.code, 0);
    assert_eq!(runs[2].1.code, 0, "{}", runs[2].1.stderr);
}

#[test]
fn serve_names_a_disabled_provider_before_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    let root = two_services(dir.path());
    assert_eq!(prfmon(&root, &["lodctr", "/D:Beta"]).code, 0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("PRFDATA_REGISTRY", &root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let listening = line.contains("listening on");
            let _ = tx.send(line);
            if listening {
                break;
            }
        }
    });
    let deadline = Instant::now() + TEST_WAIT;
    let mut lines = Vec::new();
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                let done = line.contains("listening on");
                lines.push(line);
                if done {
                    break;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = lines.join("\n");
    assert!(text.contains("listening on"), "{text}");
    assert_eq!(count(&text, BETA_DISABLED), 1, "{text}");
    assert_eq!(count(&text, REENABLE_BETA), 1, "{text}");
}

#[test]
fn a_provider_disabled_during_the_run_is_reported_with_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    let registry = FileRegistry::open(&root).unwrap();
    let lib = provider_copy(dir.path(), "liar");
    register(&registry, "Liar", &lib, "lie-bytes", 1848, 10_000);
    name_object(&registry, 1848, "Liar Obj");
    let run = prfmon(&root, &["query"]);
    assert_eq!(
        count(&run.stderr, "re-enable them with: prfmon lodctr /E:Liar"),
        1,
        "{}",
        run.stderr
    );
    // The next run finds it disabled in the registry, and says so.
    let run = prfmon(&root, &["query"]);
    assert_eq!(
        count(&run.stderr, "re-enable it with: prfmon lodctr /E:Liar"),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn an_object_named_but_not_delivered_fails_the_command_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = two_services(dir.path());
    assert_eq!(prfmon(&root, &["lodctr", "/D:Beta"]).code, 0);

    // By index list and by name: Alpha's object is printed, Beta's named as missing.
    for words in [
        &["query", "1848 1860"][..],
        &["query", "1848", "1860"],
        &["query", "Beta Obj"],
    ] {
        let run = prfmon(&root, words);
        assert_eq!(run.code, 1, "{words:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(
                "object \"Beta Obj\" (1860) is not collected: no installed service's name \
                 range holds it, and the providers of Beta are disabled"
            ),
            "{words:?}: {}",
            run.stderr
        );
        if words[1].starts_with("1848") {
            assert!(
                run.stdout.contains("Alpha Obj"),
                "{words:?}: {}",
                run.stdout
            );
        }
    }
    let run = prfmon(&root, &["query", "1848"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Alpha Obj"), "{}", run.stdout);

    let run = prfmon(&root, &["list", "Beta Obj"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("Beta Obj"), "{}", run.stderr);

    // typeperf and watch name it as not found now and wait for it (it may be enabled while
    // they run); typeperf -sc ends with status 1, naming it, when it never came.
    let path = r"\Beta Obj(*)\Beta Obj Count";
    for command in ["typeperf", "watch"] {
        let args: Vec<&str> = if command == "typeperf" {
            vec![command, path, "-sc", "1"]
        } else {
            vec![command, path, "--frames", "1"]
        };
        let run = prfmon(&root, &args);
        assert_eq!(run.code, 1, "{command}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("not found now: {path}")),
            "{command}: {}",
            run.stderr
        );
    }
    let run = prfmon(&root, &["typeperf", path, "-sc", "1"]);
    assert!(
        run.stderr
            .contains(&format!("{path} matched no counter in 1 sample")),
        "{}",
        run.stderr
    );
}

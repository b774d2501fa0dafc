//! README.md's "Instrument an app", run as written: the example program it shows byte for
//! byte (prfdata/examples/my_service.rs, included here and run as this test binary
//! re-executed) publishes in a sandbox, the README's `prfmon` commands run against it, and
//! what they print is the README's, numbers and the machine's name aside.

#[path = "../../../prfdata/examples/my_service.rs"]
mod my_service;

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use prfdata_testkit::{wait_until, ChildGuard, Sandbox};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

use super::common::{finish, PRFMON, TEST_WAIT};

/// The variable that makes the re-executed test binary the example program.
const ROLE: &str = "PRFMON_TEST_MY_SERVICE";
/// The example's source, as the README must show it.
const EXAMPLE: &str = include_str!("../../../prfdata/examples/my_service.rs");
/// How the README starts a collector command (the clone's build, as after the quick start).
const PRFMON_IN_README: &str = "./target/debug/prfmon";

/// The README's fenced code blocks, in order: (info string, text).
fn code_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                open = Some((info.to_string(), String::new()));
            }
            Event::Text(text) => {
                if let Some((_, body)) = open.as_mut() {
                    body.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    blocks
}

fn readme_blocks() -> Vec<(String, String)> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    code_blocks(&std::fs::read_to_string(readme).expect("README.md is readable"))
}

/// `text` with each run of digits as `0` and the machine's name in a counter path (`\\host\`)
/// as `HOST`: what the walk's output shares with the README whatever the machine and the moment.
fn masked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\\\\") {
        out.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        if let Some(end) = rest
            .find('\\')
            .filter(|&end| !rest[..end].contains(['"', '\n']))
        {
            out.push_str("HOST");
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    let mut digits = false;
    out.chars()
        .filter_map(|c| {
            let was = std::mem::replace(&mut digits, c.is_ascii_digit());
            match (c.is_ascii_digit(), was) {
                (true, true) => None,
                (true, false) => Some('0'),
                _ => Some(c),
            }
        })
        .collect()
}

/// Entry point of the re-executed test binary: the example's `main`, its status as the exit
/// code.
#[test]
#[ignore = "entry point for child processes"]
fn my_service_child() {
    if std::env::var_os(ROLE).is_none() {
        return;
    }
    let code = my_service::main();
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 });
}

/// The example started in `sandbox` with `provider` as `PRFDATA_PROVIDER`.
fn start_example(sandbox: &Sandbox, provider: &Path) -> ChildGuard {
    let mut command =
        prfdata_testkit::self_command(&prfdata_testkit::test_path!("my_service_child"));
    sandbox
        .apply_env(&mut command)
        .env(ROLE, "1")
        .env("PRFDATA_PROVIDER", provider)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    ChildGuard::new(command.spawn().expect("spawn the example"), "the example")
}

/// Waits (bounded) for the example to end; returns its exit code and stderr.
fn wait_for_exit(example: &mut ChildGuard) -> (i32, String) {
    let status = wait_until(TEST_WAIT, "the example to end", || {
        example.child().try_wait().expect("wait for the example")
    });
    let mut stderr = String::new();
    if let Some(mut pipe) = example.child().stderr.take() {
        pipe.read_to_string(&mut stderr)
            .expect("the example's stderr");
    }
    (status.code().unwrap_or(-1), stderr)
}

#[test]
fn readme_code_is_the_example() {
    let rust: Vec<String> = readme_blocks()
        .into_iter()
        .filter(|(info, body)| info == "rust" && body.contains("prfdata_map!"))
        .map(|(_, body)| body)
        .collect();
    assert_eq!(rust.len(), 1, "README.md shows one app");
    assert!(
        rust[0] == EXAMPLE,
        "README.md's app differs from prfdata/examples/my_service.rs"
    );
}

#[test]
fn the_readme_walk_runs_as_written() {
    let blocks = readme_blocks();
    let at = blocks
        .iter()
        .position(|(info, body)| info == "sh" && body.contains(PRFMON_IN_README))
        .expect("README.md has a sh block of prfmon commands");
    let (info, expected) = blocks
        .get(at + 1)
        .expect("a block of what they print follows");
    assert_eq!(info, "text", "what the prfmon commands print follows them");
    let sandbox = Sandbox::new();
    let mut example = start_example(&sandbox, &prfdata_testkit::provider_library());
    wait_until(TEST_WAIT, "the example's block", || {
        std::fs::read_dir(&sandbox.shm)
            .ok()?
            .flatten()
            .next()
            .map(|_| ())
    });
    let mut printed = String::new();
    for line in blocks[at]
        .1
        .lines()
        .filter(|line| line.starts_with(PRFMON_IN_README))
    {
        let line = line.replacen(PRFMON_IN_README, &format!("'{PRFMON}'"), 1);
        let mut command = Command::new("sh");
        sandbox
            .apply_env(&mut command)
            .args(["-c", &line])
            .env("TZ", "UTC");
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let run = finish(command.spawn().expect("spawn sh"));
        assert_eq!(run.code, 0, "{line}: {}", run.stderr);
        printed.push_str(&run.stdout);
    }
    assert_eq!(
        masked(&printed),
        masked(expected),
        "what the README's commands print:\n{printed}"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(example.id() as i32).expect("a pid"),
        rustix::process::Signal::INT,
    )
    .expect("Ctrl-C to the example");
    let (code, stderr) = wait_for_exit(&mut example);
    assert_eq!(code, 0, "the example ends cleanly on Ctrl-C: {stderr}");
    let left: Vec<_> = std::fs::read_dir(&sandbox.shm)
        .expect("the block folder")
        .collect();
    assert!(left.is_empty(), "the example left {left:?} behind");
}

#[test]
fn a_missing_provider_stops_the_example_with_a_sentence() {
    let sandbox = Sandbox::new();
    let mut example = start_example(&sandbox, &sandbox.path("nowhere/libprfdata_provider.so"));
    let (code, stderr) = wait_for_exit(&mut example);
    assert_eq!(code, 1, "{stderr}");
    let said = stderr
        .lines()
        .find(|line| line.starts_with("my_service: "))
        .unwrap_or_default();
    assert!(
        said.contains("does not exist") && said.contains("cargo build -p prfdata-provider"),
        "{stderr}"
    );
    assert!(
        !sandbox.registry.exists(),
        "the example wrote a registry although it refused"
    );
}

//! Two `demo-app run` of one user in one block folder share the demo's block: what each says
//! about it (it joined another's block; it left the block to the other, or removed it) and the
//! instances a second run leaves behind (none).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use prfdata::reader::BlockReader;
use prfdata_testkit::{wait_until, ChildGuard, Sandbox};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-app");
/// The longest a step of these tests waits (a run starting, stopping, saying something).
const LIMIT: Duration = Duration::from_secs(30);

/// `demo-app run ARGS` in `root`'s sandbox, its stderr written to `root/<name>.stderr`.
fn run(root: &Path, name: &str, args: &[&str]) -> ChildGuard {
    let stderr = std::fs::File::create(root.join(format!("{name}.stderr"))).unwrap();
    let child = Command::new(DEMO)
        .arg("run")
        .args(args)
        .env("PRFDATA_REGISTRY", root.join("registry"))
        .env("PRFDATA_SHM_DIR", root.join("shm"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    ChildGuard::new(child, format!("demo-app run ({name})"))
}

/// What run `name` wrote to stderr so far.
fn said(root: &Path, name: &str) -> String {
    std::fs::read_to_string(root.join(format!("{name}.stderr"))).unwrap_or_default()
}

/// Waits (bounded) until run `name` has said `text`; returns all it said.
fn wait_said(root: &Path, name: &str, text: &str) -> String {
    wait_until(LIMIT, &format!("run {name} says {text:?}"), || {
        let got = said(root, name);
        got.contains(text).then_some(got)
    })
}

/// Waits (bounded) for `child` to exit successfully.
fn wait_ok(child: &mut Child, what: &str) {
    let status = wait_until(LIMIT, what, || child.try_wait().unwrap());
    assert!(status.success(), "{what}: {status}");
}

/// Sends SIGINT (Ctrl-C) to `child`.
fn ctrl_c(child: &Child) {
    // SAFETY: `kill` has no memory-safety preconditions; the pid is our own unreaped child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

/// The first run, until its block is published with its pools.
fn first_run(root: &Path, args: &[&str]) -> ChildGuard {
    let guard = run(root, "first", args);
    wait_said(root, "first", "running with");
    let block = root.join("shm/PrfDataDemo.blk");
    wait_until(LIMIT, "the first run's block", || {
        block.exists().then_some(())
    });
    guard
}

#[test]
fn the_first_of_two_runs_to_stop_says_the_block_stays() {
    let sandbox = Sandbox::new();
    let root = sandbox.dir.path();
    let block = root.join("shm/PrfDataDemo.blk");
    let mut first = first_run(root, &["--workers", "1", "--duration", "3"]);
    let mut second = run(root, "second", &["--workers", "1"]);
    wait_said(root, "second", "running with");

    wait_ok(first.child(), "the first run stops after its duration");
    let first_said = said(root, "first");
    assert!(
        first_said
            .contains("left the block to 1 other process of PrfDataDemo (it stays published)"),
        "{first_said}"
    );
    assert!(!first_said.contains("block removed"), "{first_said}");
    assert!(block.exists(), "the second run still publishes the block");

    ctrl_c(second.child());
    wait_ok(second.child(), "the second run stops on Ctrl-C");
    let second_said = said(root, "second");
    assert!(second_said.contains("; block removed"), "{second_said}");
    assert!(!block.exists(), "the last run out removed the block");
}

#[test]
fn a_second_run_says_it_joined() {
    let sandbox = Sandbox::new();
    let root = sandbox.dir.path();
    let mut first = first_run(root, &["--workers", "1"]);
    let pid = first.id();
    let mut second = run(root, "second", &["--workers", "1"]);
    let second_said = wait_said(root, "second", "joined the block");
    assert!(
        second_said.contains(&format!(
            "demo-app: joined the block another process of PrfDataDemo publishes (pid {pid}): \
             counters add up; set PRFDATA_SHM_DIR to run apart"
        )),
        "{second_said}"
    );
    assert!(
        !said(root, "first").contains("joined"),
        "the first run published the block: {}",
        said(root, "first")
    );
    for child in [second.child(), first.child()] {
        ctrl_c(child);
        wait_ok(child, "a run stops on Ctrl-C");
    }
}

/// The instance names of the demo's Pool object in the block at `block`.
fn pools(block: &Path) -> Vec<String> {
    let reader = BlockReader::open_path("PrfDataDemo", block).unwrap();
    let pool = reader
        .objects()
        .iter()
        .position(|o| o.max_instances == 8)
        .expect("the Pool object");
    reader
        .read_with(Duration::from_secs(2), |view| {
            let table = view.instances(pool)?;
            let mut names = Vec::new();
            for pos in 0..table.len() {
                let inst = table.get(pos)?;
                let mut name = Vec::new();
                table.name_units(&inst, &mut name)?;
                names.push(String::from_utf16_lossy(&name));
            }
            Ok(names)
        })
        .expect("a consistent read")
}

#[test]
fn a_joined_run_that_stops_leaves_no_pools_behind() {
    let sandbox = Sandbox::new();
    let root = sandbox.dir.path();
    let block = root.join("shm/PrfDataDemo.blk");
    let mut first = first_run(root, &["--workers", "2"]);
    wait_until(LIMIT, "the first run's pools", || {
        (pools(&block).len() == 2).then_some(())
    });
    let mut second = run(root, "second", &["--workers", "2", "--duration", "2"]);
    wait_ok(second.child(), "the second run stops after its duration");
    let mut left = pools(&block);
    left.sort();
    assert_eq!(
        left,
        ["bulk", "fast"],
        "the second run's pools went with it"
    );
    ctrl_c(first.child());
    wait_ok(first.child(), "the first run stops on Ctrl-C");
}

//! Shared by the integration tests: a test map, and child processes made by re-executing the
//! test binary.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

prfdata::prfdata_map! {
    /// The map the integration tests publish.
    pub mod testmap {
        app: "PrfDataTest",
        object TOTALS = 0 {
            name: "Test Totals", help: "Process-wide test counters.",
            detail: Novice, default: HITS, instances: none, costly: false,
            counters {
                HITS = 2: LargeRawCount { name: "Hits", help: "Increments.", detail: Novice, scale: 0 },
                HITS32 = 4: RawCount { name: "Hits32", help: "32-bit increments.", detail: Novice, scale: 0 },
                UNGUARDED = 6: LargeRawCount { name: "Unguarded", help: "Updated only under lock_ctrs, non-atomically.", detail: Wizard, scale: 0 },
            }
        }
        object ITEMS = 8 {
            name: "Test Items", help: "Instances the tests add and remove.",
            detail: Advanced, default: ITEM_HITS, instances: { max: 64, name_len: 40 }, costly: false,
            counters {
                ITEM_HITS = 10: LargeRawCount { name: "Item hits", help: "Per-item increments.", detail: Novice, scale: 0 },
                ITEM_TAG = 12: RawCount { name: "Item tag", help: "A value tied to the name.", detail: Novice, scale: 0 },
            }
        }
        object PARTS = 14 {
            name: "Test Parts", help: "Children of items.",
            detail: Expert, default: none, instances: { max: 16, name_len: 8 }, costly: true,
            counters {
                PART_SIZE = 16: RawCount { name: "Part size", help: "A size.", detail: Expert, scale: -1 },
            }
        }
    }
}

/// The environment variable that selects a child's role.
pub const ROLE: &str = "PRFDATA_TEST_ROLE";

/// Starts this test binary again running only `entry` (an ignored test), with `role` and extra
/// environment.
pub fn spawn_child(entry: &str, role: &str, dir: &Path, env: &[(&str, String)]) -> Child {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        entry,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .env("PRFDATA_SHM_DIR", dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn child test process")
}

/// Waits for a child for at most `limit`, killing it (and failing) if it takes longer.
pub fn wait_ok(mut child: Child, limit: Duration) {
    let start = Instant::now();
    loop {
        match child.try_wait().expect("wait for child") {
            Some(status) => {
                assert!(status.success(), "child failed: {status}");
                return;
            }
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("child did not finish within {limit:?}");
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Polls `cond` every millisecond until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    cond()
}

/// The role this process was started for, if it is a child.
pub fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// The shm dir a child was given.
pub fn child_dir() -> std::path::PathBuf {
    std::env::var_os("PRFDATA_SHM_DIR")
        .expect("child has PRFDATA_SHM_DIR")
        .into()
}

//! Objects and counters added and removed at run time (as Windows 95 stat servers have them), end
//! to end: an app process adds a run-time object and counters while a collector reads it in a loop
//! and an attached worker process updates the same counter; `prfmon list` and the registry follow
//! every change, and no update is lost to a re-layout.

use crate::common;
use crate::prfdata_app;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prfdata::dynamic::{CounterSpec, ObjectSpec};
use prfdata_registry::{perflib, FileRegistry};
use prfdata_testkit::ChildGuard;
use prfdata_wire::snapshot::decode;
use prfdata_wire::winperf::{PERF_COUNTER_LARGE_RAWCOUNT, PERF_COUNTER_RAWCOUNT};
use prfmon::collector::{Collector, Isolation};

prfdata::prfdata_map! {
    /// The installed map; everything else is added at run time.
    pub mod dynmap {
        app: "PrfmonDyn",
        object BASE = 0 {
            name: "Dyn Base", help: "The installed object.", detail: Novice, default: none,
            instances: none, costly: false,
            counters {
                TICKS = 2: RawCount { name: "Ticks", help: "t", detail: Novice, scale: 0 },
            }
        }
    }
}

/// Offsets the run-time object and counters get (above the installed map's highest, 2).
const PLUGIN: u32 = 4;
const CALLS: u32 = 6;
const ERRORS: u32 = 8;

const ROLE: &str = "PRFMON_DYN_ROLE";

fn shm() -> PathBuf {
    PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").expect("PRFDATA_SHM_DIR"))
}

/// Waits (bounded) for the file `name` in the block folder.
fn wait_file(dir: &Path, name: &str) -> String {
    prfdata_testkit::wait_until(Duration::from_secs(60), name, || {
        std::fs::read_to_string(dir.join(name)).ok()
    })
}

fn say(dir: &Path, name: &str, text: &str) {
    prfdata_testkit::ready::publish(&dir.join(name), text.as_bytes()).unwrap();
}

/// Child: the owner (adds and removes on the parent's word, increments Calls until "stop") or
/// an attached worker (increments the same counter through `dyn_counter`).
#[test]
#[ignore = "entry point for the app child processes"]
fn app_child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let dir = shm();
    let stop = || dir.join("stop").exists();
    if role == "attached" {
        let prf = dynmap::PrfData::attach().expect("attach");
        let calls = prfdata_testkit::wait_until(Duration::from_secs(60), "Calls", || {
            prf.dynamic().dyn_counter(CALLS).ok()
        });
        say(&dir, "attached-ready", "");
        let mut n = 0u64;
        while !stop() {
            calls.fetch_add(1).expect("the counter lives until the end");
            n += 1;
        }
        say(&dir, "attached-count", &n.to_string());
        return;
    }
    let prf = dynmap::PrfData::activate().expect("activate");
    let plugin = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Dyn Plugin", "Added at run time."))
        .unwrap();
    let calls = prf
        .dynamic()
        .add_counter(
            plugin,
            &CounterSpec::new("Dyn Calls", "Calls.", PERF_COUNTER_LARGE_RAWCOUNT),
        )
        .unwrap();
    assert_eq!((plugin.offset(), calls.offset()), (PLUGIN, CALLS));
    say(&dir, "ready", "");
    std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let mut n = 0u64;
            while !stop() {
                calls.fetch_add(1).unwrap();
                n += 1;
            }
            n
        });
        wait_file(&dir, "add");
        let errors = prf
            .dynamic()
            .add_counter(
                plugin,
                &CounterSpec::new("Dyn Errors", "Errors.", PERF_COUNTER_RAWCOUNT),
            )
            .unwrap();
        assert_eq!(errors.offset(), ERRORS);
        errors.store(7).unwrap();
        say(&dir, "added", "");
        wait_file(&dir, "remove");
        prf.dynamic().remove_counter(&errors).unwrap();
        assert!(errors.load().is_err(), "a removed counter is gone");
        say(&dir, "removed", "");
        let n = worker.join().unwrap();
        say(&dir, "owner-count", &n.to_string());
    });
    wait_file(&dir, "exit");
}

/// The run-time object's Calls value in one collection, if the object is there.
fn calls(c: &mut Collector<FileRegistry>, first: u32) -> Option<i64> {
    let snap = decode(&c.collect("Global")).ok()?;
    let obj = snap
        .objects
        .iter()
        .find(|o| o.name_index == first + PLUGIN)?;
    let i = obj
        .counters
        .iter()
        .position(|k| k.name_index == first + CALLS)?;
    obj.values()?.int(i)
}

fn registry_names(installed: &prfdata_app::Installed) -> std::collections::BTreeMap<u32, String> {
    perflib::read_counter_text(&installed.open(), "009")
        .unwrap()
        .counter
}

#[test]
fn counters_added_at_run_time_are_listed_named_and_keep_every_update() {
    let installed = prfdata_app::install(&dynmap::MAP);
    let _env = installed.process_env();
    let dir = installed.shm.clone();
    let first = installed.first_counter;
    let spawn = |role: &str| {
        let mut command = prfdata_testkit::self_command(&prfdata_testkit::test_path!("app_child"));
        installed
            .apply_env(&mut command)
            .env(ROLE, role)
            .stdout(Stdio::null());
        ChildGuard::new(command.spawn().unwrap(), role)
    };
    let _owner = spawn("owner");
    wait_file(&dir, "ready");
    let _attached = spawn("attached");
    wait_file(&dir, "attached-ready");

    // A collector reads Calls in a loop through every re-layout: a count never goes back.
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = Arc::clone(&done);
        let registry = installed.open();
        std::thread::spawn(move || {
            let mut options = common::options();
            options.isolation = Isolation::HostProcess;
            let mut c = Collector::open(registry, options).unwrap();
            let mut seen = Vec::new();
            while !done.load(Ordering::Relaxed) && seen.len() < 100_000 {
                if let Some(v) = calls(&mut c, first) {
                    seen.push(v);
                }
            }
            c.close();
            seen
        })
    };

    let list = prfdata_app::prfmon_for(&installed, &["list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(
        list.stdout
            .contains(&format!("Object: Dyn Plugin ({})", first + PLUGIN)),
        "{}",
        list.stdout
    );
    assert!(
        list.stdout
            .contains(&format!("Counter: Dyn Calls ({})", first + CALLS)),
        "{}",
        list.stdout
    );
    assert_eq!(registry_names(&installed)[&(first + CALLS)], "Dyn Calls");

    say(&dir, "add", "");
    wait_file(&dir, "added");
    let list = prfdata_app::prfmon_for(&installed, &["list", "Dyn Plugin"]);
    assert!(
        list.stdout
            .contains(&format!("Counter: Dyn Errors ({})", first + ERRORS)),
        "{}",
        list.stdout
    );
    assert_eq!(registry_names(&installed)[&(first + ERRORS)], "Dyn Errors");
    let query = prfdata_app::prfmon_for(&installed, &["query"]);
    assert!(
        query.stdout.contains("Dyn Errors") && query.stdout.contains("Dyn Calls"),
        "{}",
        query.stdout
    );

    say(&dir, "remove", "");
    wait_file(&dir, "removed");
    let list = prfdata_app::prfmon_for(&installed, &["list", "Dyn Plugin"]);
    assert!(!list.stdout.contains("Dyn Errors"), "{}", list.stdout);
    assert!(list.stdout.contains("Dyn Calls"), "{}", list.stdout);
    let names = registry_names(&installed);
    assert!(!names.contains_key(&(first + ERRORS)), "{names:?}");
    assert_eq!(names[&(first + CALLS)], "Dyn Calls");

    say(&dir, "stop", "");
    let owner: i64 = wait_file(&dir, "owner-count").parse().unwrap();
    let attached: i64 = wait_file(&dir, "attached-count").parse().unwrap();
    done.store(true, Ordering::Relaxed);
    let seen = reader.join().unwrap();
    assert!(seen.len() >= 2, "the loop read Calls: {seen:?}");
    for pair in seen.windows(2) {
        assert!(
            pair[0] <= pair[1],
            "Calls went back: {} then {}",
            pair[0],
            pair[1]
        );
    }
    assert!(attached > 0 && owner > 0);

    // Every update of both processes is there: none was lost to the two re-layouts.
    let registry = installed.open();
    let mut c = Collector::open(registry, common::options()).unwrap();
    assert_eq!(calls(&mut c, first), Some(owner + attached));
    c.close();
    say(&dir, "exit", "");
}

//! A provider is not disabled for waiting within its documented bounds: three apps of one
//! service's `Linkage\Export`, each with `OnDemand Timeout` at its documented maximum
//! (10,000 ms), stopped (`SIGSTOP`). Their on-demand waits used to add up (30 s) past the
//! service's `Collect Timeout` (10 s), and the collector disabled the healthy provider ("did
//! not return within 10000 ms"). Now one Collect waits one bounded time for all of them, below
//! the `Collect Timeout`, serves their last values, and does not wait again for an app that
//! missed its deadline until it serves again.
//!
//! Real processes throughout: the apps (this binary re-executed), the collector's provider host
//! and the real provider library.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use prfdata_registry::service::{DEFAULT_COLLECT_TIMEOUT_MS, DISABLE, EXPORT};
use prfdata_registry::{paths, stats, update, FileRegistry, Registry, RegistryError, Value};
use prfdata_testkit::{ready, ChildGuard, Sandbox, WAIT};
use prfmon::collector::Collector;
use prfmon::names::Names;

use crate::common;

prfdata::prfdata_map! {
    pub mod od_a {
        app: "OdBoundA",
        object OBJ = 0 {
            name: "Od Bound A", help: name,
            counters { ANSWER = 2: RawCount { name: "Answer A", help: name, on_demand: true }, }
        }
    }
}
prfdata::prfdata_map! {
    pub mod od_b {
        app: "OdBoundB",
        object OBJ = 0 {
            name: "Od Bound B", help: name,
            counters { ANSWER = 2: RawCount { name: "Answer B", help: name, on_demand: true }, }
        }
    }
}
prfdata::prfdata_map! {
    pub mod od_c {
        app: "OdBoundC",
        object OBJ = 0 {
            name: "Od Bound C", help: name,
            counters { ANSWER = 2: RawCount { name: "Answer C", help: name, on_demand: true }, }
        }
    }
}

/// The apps: (app, object name, counter name).
const APPS: [(&str, &str, &str); 3] = [
    ("OdBoundA", "Od Bound A", "Answer A"),
    ("OdBoundB", "Od Bound B", "Answer B"),
    ("OdBoundC", "Od Bound C", "Answer C"),
];

/// The env var that makes this binary an app child: the app's name.
const ROLE: &str = "PRFMON_OD_BOUND_APP";

fn answer_file(shm: &std::path::Path, app: &str) -> PathBuf {
    shm.join(format!("answer-{app}"))
}

/// An app child: activates its map and answers the number in its answer file when asked.
#[test]
#[ignore = "entry point for the app child processes"]
fn app_entry() {
    let Ok(app) = std::env::var(ROLE) else {
        return;
    };
    let shm = PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").expect("PRFDATA_SHM_DIR"));
    let file = answer_file(&shm, &app);
    let answer = move || {
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(-1)
    };
    // Kept alive until the process is killed.
    let _prf: Box<dyn std::any::Any> = match app.as_str() {
        "OdBoundA" => {
            let prf = od_a::PrfData::activate().expect("activate A");
            prf.on_demand(od_a::ANSWER, answer).expect("register A");
            Box::new(prf)
        }
        "OdBoundB" => {
            let prf = od_b::PrfData::activate().expect("activate B");
            prf.on_demand(od_b::ANSWER, answer).expect("register B");
            Box::new(prf)
        }
        _ => {
            let prf = od_c::PrfData::activate().expect("activate C");
            prf.on_demand(od_c::ANSWER, answer).expect("register C");
            Box::new(prf)
        }
    };
    ready::publish(&shm.join(format!("ready-{app}")), b"").expect("say ready");
    std::thread::sleep(Duration::from_secs(120));
}

/// Installs the three apps, each `OnDemand Timeout` 10,000 ms, and makes the first app's
/// service export all three (the other two services disabled, so that one provider serves
/// them all).
fn install(sandbox: &Sandbox) -> FileRegistry {
    for map in [&od_a::MAP, &od_b::MAP, &od_c::MAP] {
        sandbox.install(map);
    }
    let registry = sandbox.open();
    update(&registry, |hive| {
        for (app, _, _) in APPS {
            hive.set_value(
                &paths::performance(app),
                stats::ON_DEMAND_TIMEOUT,
                Value::Dword(stats::MAX_ON_DEMAND_TIMEOUT_MS),
            )?;
        }
        let all = APPS.iter().map(|(app, _, _)| (*app).to_owned()).collect();
        hive.set_value(&paths::linkage("OdBoundA"), EXPORT, Value::MultiSz(all))?;
        for (app, _, _) in &APPS[1..] {
            hive.set_value(&paths::performance(app), DISABLE, Value::Dword(1))?;
        }
        Ok::<(), RegistryError>(())
    })
    .expect("configure the apps");
    registry
}

/// The answers of the three apps in one Global collection.
fn answers(collector: &mut Collector<FileRegistry>, names: &Names) -> Vec<Option<i64>> {
    let snapshot = prfmon::decode::decode(&collector.collect("Global")).expect("a valid block");
    APPS.iter()
        .map(|(_, object, _)| {
            let obj = snapshot
                .objects
                .iter()
                .find(|o| names.name(o.name_index) == *object)?;
            obj.values()?.int(0)
        })
        .collect()
}

#[test]
fn stopped_on_demand_apps_cost_one_bounded_wait_below_the_collect_timeout() {
    let sandbox = Sandbox::new();
    let registry = install(&sandbox);
    let names = Names::load(&registry, "009").unwrap();
    let write_answers = |base: i64| {
        for (i, (app, _, _)) in APPS.iter().enumerate() {
            std::fs::write(
                answer_file(&sandbox.shm, app),
                (base + i as i64).to_string(),
            )
            .unwrap();
        }
    };
    write_answers(10);
    let apps: Vec<ChildGuard> = APPS
        .iter()
        .map(|(app, _, _)| {
            let mut command =
                prfdata_testkit::self_command(&prfdata_testkit::test_path!("app_entry"));
            sandbox
                .apply_env(&mut command)
                .env(ROLE, app)
                .stdout(Stdio::null());
            let child = ChildGuard::new(command.spawn().expect("spawn an app"), *app);
            ready::wait(&sandbox.shm.join(format!("ready-{app}")), WAIT);
            child
        })
        .collect();

    let _env = sandbox.process_env();
    let mut collector = Collector::open(sandbox.open(), common::options()).expect("collector");
    assert_eq!(collector.open_services(), ["OdBoundA"]);
    let served = Instant::now();
    while answers(&mut collector, &names) != [Some(10), Some(11), Some(12)] {
        assert!(served.elapsed() < WAIT, "the apps serve their answers");
    }

    for app in &apps {
        app.stop(WAIT);
    }
    write_answers(20);
    let collect_timeout = Duration::from_millis(DEFAULT_COLLECT_TIMEOUT_MS.into());
    let start = Instant::now();
    let stopped = answers(&mut collector, &names);
    let took = start.elapsed();
    eprintln!("Collect with the three apps stopped: {took:?}");
    assert!(
        collector.disabled().is_empty(),
        "the provider waited within its bounds and was disabled: {:?}",
        collector.disabled()
    );
    assert_eq!(stopped, [Some(10), Some(11), Some(12)], "the last values");
    assert!(
        took < collect_timeout,
        "{took:?}: below the Collect Timeout"
    );
    // The apps missed their deadline: the next Collect does not wait for them again.
    let start = Instant::now();
    assert_eq!(
        answers(&mut collector, &names),
        [Some(10), Some(11), Some(12)]
    );
    let again = start.elapsed();
    eprintln!("The next Collect: {again:?}");
    assert!(
        again < collect_timeout / 4,
        "{again:?}: the next Collect waited for the stopped apps again"
    );
    let hive = registry.snapshot().unwrap();
    let service = prfdata_registry::service::read_service(&hive, "OdBoundA").unwrap();
    assert!(service.is_some_and(|s| !s.disabled), "not disabled");

    for app in &apps {
        app.resume();
    }
    let resumed = Instant::now();
    while answers(&mut collector, &names) != [Some(20), Some(21), Some(22)] {
        assert!(
            resumed.elapsed() < WAIT,
            "fresh answers once the apps run again"
        );
    }
    assert!(collector.disabled().is_empty());
}

//! A provider is not disabled for waiting within its documented bounds: three apps of one
//! service's `Linkage\Export`, each with `OnDemand Timeout` at its documented maximum
//! (10,000 ms), stopped (`SIGSTOP`). Their on-demand waits used to add up (30 s) past the
//! service's `Collect Timeout` (10 s), and the collector disabled the healthy provider ("did
//! not return within 10000 ms"). Now one Collect waits one bounded time for all of them, below
//! the `Collect Timeout`, serves their last values, and does not wait again for an app that
//! missed its deadline until it serves again.
//!
//! The collector times a Collect by the `Collect Timeout` of the service it calls, which need
//! not be one of the apps it exports: a service `OdCombined` (1,000 ms) exporting two apps whose
//! own services keep the default 10 s must wait below its own timeout too.
//!
//! Real processes throughout: the apps (this binary re-executed), the collector's provider host
//! and the real provider library.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use prfdata_registry::install::{CLOSE_FUNCTION, COLLECT_FUNCTION, OPEN_FUNCTION};
use prfdata_registry::service::{DEFAULT_COLLECT_TIMEOUT_MS, DISABLE, EXPORT};
use prfdata_registry::{
    paths, register_service, stats, update, FileRegistry, Hive, Registry, RegistryError,
    ServiceConfig, Value,
};
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

/// An app: (app, object name, counter name).
type AppRow = (&'static str, &'static str, &'static str);

/// The apps.
const APPS: [AppRow; 3] = [
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
            prf.on_demand()
                .serve(od_a::ANSWER, answer)
                .expect("register A");
            Box::new(prf)
        }
        "OdBoundB" => {
            let prf = od_b::PrfData::activate().expect("activate B");
            prf.on_demand()
                .serve(od_b::ANSWER, answer)
                .expect("register B");
            Box::new(prf)
        }
        _ => {
            let prf = od_c::PrfData::activate().expect("activate C");
            prf.on_demand()
                .serve(od_c::ANSWER, answer)
                .expect("register C");
            Box::new(prf)
        }
    };
    ready::publish(&shm.join(format!("ready-{app}")), b"").expect("say ready");
    std::thread::sleep(Duration::from_secs(120));
}

/// Sets the `OnDemand Timeout` of `apps` to its documented maximum (10,000 ms) and disables
/// their own services, so that only the service that exports them runs the provider for them.
fn max_on_demand_own_services_disabled(
    hive: &mut Hive,
    apps: &[AppRow],
) -> Result<(), RegistryError> {
    for (app, _, _) in apps {
        hive.set_value(
            &paths::performance(app),
            stats::ON_DEMAND_TIMEOUT,
            Value::Dword(stats::MAX_ON_DEMAND_TIMEOUT_MS),
        )?;
        hive.set_value(&paths::performance(app), DISABLE, Value::Dword(1))?;
    }
    Ok(())
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
        max_on_demand_own_services_disabled(hive, &APPS)?;
        hive.delete_value(&paths::performance(APPS[0].0), DISABLE)?;
        let all = APPS.iter().map(|(app, _, _)| (*app).to_owned()).collect();
        hive.set_value(&paths::linkage("OdBoundA"), EXPORT, Value::MultiSz(all))?;
        Ok::<(), RegistryError>(())
    })
    .expect("configure the apps");
    registry
}

/// Writes each app's answer: `base` for the first, `base + 1` for the second, and so on.
fn write_answers(sandbox: &Sandbox, apps: &[AppRow], base: i64) {
    for (i, (app, _, _)) in apps.iter().enumerate() {
        std::fs::write(
            answer_file(&sandbox.shm, app),
            (base + i as i64).to_string(),
        )
        .unwrap();
    }
}

/// Starts `apps` (killed when the guards drop), each once it said it is ready.
fn spawn_apps(sandbox: &Sandbox, apps: &[AppRow]) -> Vec<ChildGuard> {
    apps.iter()
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
        .collect()
}

/// The answers of `apps` in one Global collection.
fn answers(
    collector: &mut Collector<FileRegistry>,
    names: &Names,
    apps: &[AppRow],
) -> Vec<Option<i64>> {
    let snapshot =
        prfdata_wire::snapshot::decode(&collector.collect("Global")).expect("a valid block");
    apps.iter()
        .map(|(_, object, _)| {
            let obj = snapshot
                .objects
                .iter()
                .find(|o| names.name(o.name_index) == *object)?;
            obj.values()?.int(0)
        })
        .collect()
}

/// Collects until `apps` answer `want`, for at most [`WAIT`].
fn wait_for_answers(
    collector: &mut Collector<FileRegistry>,
    names: &Names,
    apps: &[AppRow],
    want: &[Option<i64>],
) {
    let start = Instant::now();
    while answers(collector, names, apps) != want {
        assert!(start.elapsed() < WAIT, "the apps answer {want:?}");
    }
}

/// Stops `apps`, gives them new answers they cannot serve, and collects once: the provider
/// must return below `collect_timeout` with the last values and stay enabled. Returns how
/// long the Collect took.
fn collect_with_apps_stopped(
    sandbox: &Sandbox,
    collector: &mut Collector<FileRegistry>,
    names: &Names,
    (apps, children): (&[AppRow], &[ChildGuard]),
    collect_timeout: Duration,
) -> Duration {
    let last = answers(collector, names, apps);
    for child in children {
        child.stop(WAIT);
    }
    write_answers(sandbox, apps, 20);
    let start = Instant::now();
    let stopped = answers(collector, names, apps);
    let took = start.elapsed();
    eprintln!("Collect with the apps stopped: {took:?}");
    assert!(
        collector.disabled().is_empty(),
        "the provider waited within its bounds and was disabled: {:?}",
        collector.disabled()
    );
    assert_eq!(stopped, last, "the last values");
    assert!(
        took < collect_timeout,
        "{took:?}: below the Collect Timeout"
    );
    took
}

#[test]
fn stopped_on_demand_apps_cost_one_bounded_wait_below_the_collect_timeout() {
    let sandbox = Sandbox::new();
    let registry = install(&sandbox);
    let names = Names::load(&registry, "009").unwrap();
    write_answers(&sandbox, &APPS, 10);
    let apps = spawn_apps(&sandbox, &APPS);

    let _env = sandbox.process_env();
    let mut collector = Collector::open(sandbox.open(), common::options()).expect("collector");
    assert_eq!(collector.open_services(), ["OdBoundA"]);
    wait_for_answers(
        &mut collector,
        &names,
        &APPS,
        &[Some(10), Some(11), Some(12)],
    );

    let collect_timeout = Duration::from_millis(DEFAULT_COLLECT_TIMEOUT_MS.into());
    collect_with_apps_stopped(
        &sandbox,
        &mut collector,
        &names,
        (&APPS, &apps),
        collect_timeout,
    );
    // The apps missed their deadline: the next Collect does not wait for them again.
    let start = Instant::now();
    assert_eq!(
        answers(&mut collector, &names, &APPS),
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
    wait_for_answers(
        &mut collector,
        &names,
        &APPS,
        &[Some(20), Some(21), Some(22)],
    );
    assert!(collector.disabled().is_empty());
}

/// The service that exports apps A and B in the regression test below, and its timeout.
const COMBINED: &str = "OdCombined";
const COMBINED_TIMEOUT_MS: u32 = 1_000;

/// Regression: the provider capped its wait at half the smallest `Collect Timeout` among the
/// apps it serves (5 s here), while the collector timed the Collect by the exporting service's
/// own (1 s), and disabled the provider for waiting within its bounds.
#[test]
fn a_service_exporting_other_apps_waits_below_its_own_collect_timeout() {
    let served = &APPS[..2];
    let sandbox = Sandbox::new();
    sandbox.install(&od_a::MAP);
    sandbox.install(&od_b::MAP);
    let registry = sandbox.open();
    update(&registry, |hive| {
        max_on_demand_own_services_disabled(hive, served)
    })
    .expect("configure the apps");
    let library = prfdata_testkit::provider_library();
    let mut combined = ServiceConfig::new(
        library.display().to_string(),
        OPEN_FUNCTION,
        COLLECT_FUNCTION,
        CLOSE_FUNCTION,
    );
    combined.collect_timeout_ms = COMBINED_TIMEOUT_MS;
    combined.export = served.iter().map(|(app, _, _)| (*app).to_owned()).collect();
    register_service(&registry, COMBINED, &combined).expect("register the combined service");
    let names = Names::load(&registry, "009").unwrap();
    write_answers(&sandbox, served, 10);
    let apps = spawn_apps(&sandbox, served);

    let _env = sandbox.process_env();
    let mut collector = Collector::open(sandbox.open(), common::options()).expect("collector");
    assert_eq!(collector.open_services(), [COMBINED]);
    wait_for_answers(&mut collector, &names, served, &[Some(10), Some(11)]);

    collect_with_apps_stopped(
        &sandbox,
        &mut collector,
        &names,
        (served, &apps),
        Duration::from_millis(COMBINED_TIMEOUT_MS.into()),
    );
    let hive = registry.snapshot().unwrap();
    let service = prfdata_registry::service::read_service(&hive, COMBINED).unwrap();
    assert!(service.is_some_and(|s| !s.disabled), "not disabled");
}

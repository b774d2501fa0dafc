//! Each object exactly once, attributed to its own service, whatever the mapping of services to
//! provider library files, in both isolation modes.
//!
//! The setup is the usual deployment plus a third-party provider: three prfdata apps (blocks
//! published by this test process) installed with the real `libprfdata_provider.so`, two of
//! them through one library path and the third through a symlink to it; and a provider written
//! in C (built here with `cc`) registered under four services: two through one path, one
//! through a symlink, one through a copy of the file. Every consumer is run as the real
//! `prfmon` binary: `query --json`, `typeperf` (CSV columns), `list --json` and `serve`
//! (`/metrics` labels).
//!
//! Regression: perflib's V1 Collect gets no service handle, so when the collector called one
//! loaded copy of a library once per service, every service returned every app's objects (and
//! the C provider's services all returned the object of the last Open).

use crate::common;
use crate::serve_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;

use common::{c_large, c_provider, finish, name_c_object, register_c};
use prfdata_registry::{performance_services, FileRegistry};
use prfmon::openmetrics::naming::metric_stem;
use serve_common::{get, samples, Setup};

prfdata::prfdata_map! {
    /// App Alpha: a service-wide object and a worker object with instances.
    pub mod alpha {
        app: "IsoAlpha",
        object JOBS = 0 {
            name: "Alpha Jobs", help: "Alpha as a whole.",
            detail: Novice, default: QUEUE, instances: none, costly: false,
            counters {
                QUEUE = 2: RawCount { name: "Alpha Queue", help: "Jobs waiting.", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 4 {
            name: "Alpha Worker", help: "One Alpha worker.",
            detail: Novice, default: DONE, instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                DONE = 6: RawCount { name: "Alpha Done", help: "Jobs done.", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// App Beta: a service-wide object and a worker object with instances.
    pub mod beta {
        app: "IsoBeta",
        object JOBS = 0 {
            name: "Beta Jobs", help: "Beta as a whole.",
            detail: Novice, default: QUEUE, instances: none, costly: false,
            counters {
                QUEUE = 2: RawCount { name: "Beta Queue", help: "Jobs waiting.", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 4 {
            name: "Beta Worker", help: "One Beta worker.",
            detail: Novice, default: DONE, instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                DONE = 6: RawCount { name: "Beta Done", help: "Jobs done.", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// App Gamma: a service-wide object and a worker object with instances.
    pub mod gamma {
        app: "IsoGamma",
        object JOBS = 0 {
            name: "Gamma Jobs", help: "Gamma as a whole.",
            detail: Novice, default: QUEUE, instances: none, costly: false,
            counters {
                QUEUE = 2: RawCount { name: "Gamma Queue", help: "Jobs waiting.", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 4 {
            name: "Gamma Worker", help: "One Gamma worker.",
            detail: Novice, default: DONE, instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                DONE = 6: RawCount { name: "Gamma Done", help: "Jobs done.", detail: Novice, scale: 0 },
            }
        }
    }
}

/// A prfdata app's objects: `<Name> Jobs` (queue `queue`) and `<Name> Worker` (`w1`, `w2`).
struct AppExpect {
    service: &'static str,
    name: &'static str,
    queue: i64,
    done: [i64; 2],
}

const APPS: [AppExpect; 3] = [
    AppExpect {
        service: "IsoAlpha",
        name: "Alpha",
        queue: 101,
        done: [1, 2],
    },
    AppExpect {
        service: "IsoBeta",
        name: "Beta",
        queue: 202,
        done: [3, 4],
    },
    AppExpect {
        service: "IsoGamma",
        name: "Gamma",
        queue: 303,
        done: [5, 6],
    },
];

/// A C provider service: object `title` at `index`, counter `title Value` = `value`.
struct CExpect {
    service: &'static str,
    title: &'static str,
    index: u32,
    value: u32,
}

const C_SERVICES: [CExpect; 4] = [
    CExpect {
        service: "CeeOne",
        title: "Cee One",
        index: 6000,
        value: 11,
    },
    CExpect {
        service: "CeeTwo",
        title: "Cee Two",
        index: 6010,
        value: 22,
    },
    CExpect {
        service: "CeeThree",
        title: "Cee Three",
        index: 6020,
        value: 33,
    },
    CExpect {
        service: "CeeFour",
        title: "Cee Four",
        index: 6030,
        value: 44,
    },
];

/// Every object the setup publishes, with the service that must be named for it.
fn expected_objects() -> BTreeMap<String, &'static str> {
    let mut out = BTreeMap::new();
    for app in &APPS {
        out.insert(format!("{} Jobs", app.name), app.service);
        out.insert(format!("{} Worker", app.name), app.service);
    }
    for c in &C_SERVICES {
        out.insert(c.title.to_owned(), c.service);
    }
    out
}

/// The registry, the blocks and the library files of the setup.
struct Fixture {
    setup: Setup,
    _apps: (alpha::PrfData, beta::PrfData, gamma::PrfData),
}

/// `link` → `target`.
fn symlink(target: &Path, link: &Path) -> PathBuf {
    std::os::unix::fs::symlink(target, link).expect("make a symlink");
    link.to_path_buf()
}

fn fixture() -> Fixture {
    let sandbox = prfdata_testkit::Sandbox::new();
    let shm = sandbox.shm.clone();
    let libs = sandbox.path("lib");
    std::fs::create_dir_all(&libs).expect("lib dir");
    let registry = sandbox.open();

    // The prfdata provider as installed: one file, reached by two apps through its path and
    // by the third through a symlink.
    let provider = libs.join("libprfdata_provider.so");
    std::fs::copy(prfdata_testkit::provider_library(), &provider).expect("copy the provider");
    let provider_link = symlink(&provider, &libs.join("libprfdata_provider_link.so"));
    sandbox.install_with(&alpha::MAP, &provider);
    sandbox.install_with(&beta::MAP, &provider);
    sandbox.install_with(&gamma::MAP, &provider_link);

    // The C provider: two services through one path, one through a symlink, one through a
    // copy of the file.
    let c = c_provider(&libs);
    let c_link = symlink(&c, &libs.join("libcprovider_link.so"));
    let c_copy = libs.join("libcprovider_copy.so");
    std::fs::copy(&c, &c_copy).expect("copy the C provider");
    for (spec, library) in C_SERVICES.iter().zip([&c, &c, &c_link, &c_copy]) {
        register_c(
            &registry,
            spec.service,
            library,
            "good",
            spec.index,
            spec.value,
        );
        name_c_object(&registry, spec.index, spec.title);
    }

    let a = alpha::PrfData::activate_in(&shm).expect("activate Alpha");
    a.get_ctr32(alpha::QUEUE, ())
        .store(APPS[0].queue as i32, Relaxed);
    let b = beta::PrfData::activate_in(&shm).expect("activate Beta");
    b.get_ctr32(beta::QUEUE, ())
        .store(APPS[1].queue as i32, Relaxed);
    let g = gamma::PrfData::activate_in(&shm).expect("activate Gamma");
    g.get_ctr32(gamma::QUEUE, ())
        .store(APPS[2].queue as i32, Relaxed);
    for (i, worker) in ["w1", "w2"].into_iter().enumerate() {
        let w = a.add_instance(alpha::WORKER, worker).expect("Alpha worker");
        a.get_ctr32(alpha::DONE, w)
            .store(APPS[0].done[i] as i32, Relaxed);
        let w = b.add_instance(beta::WORKER, worker).expect("Beta worker");
        b.get_ctr32(beta::DONE, w)
            .store(APPS[1].done[i] as i32, Relaxed);
        let w = g.add_instance(gamma::WORKER, worker).expect("Gamma worker");
        g.get_ctr32(gamma::DONE, w)
            .store(APPS[2].done[i] as i32, Relaxed);
    }
    Fixture {
        setup: Setup { sandbox },
        _apps: (a, b, g),
    }
}

impl Fixture {
    /// Runs `prfmon args...` against the setup.
    fn prfmon(&self, args: &[&str]) -> common::Run {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_prfmon"));
        let child = self
            .setup
            .apply_env(&mut command)
            .args(args)
            .env("TZ", "UTC")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn prfmon");
        let run = finish(child);
        assert_eq!(run.code, 0, "prfmon {args:?}: {}", run.stderr);
        run
    }

    fn registry(&self) -> FileRegistry {
        FileRegistry::open(&self.setup.registry).expect("registry")
    }
}

/// Nothing skipped, disabled or returned twice.
fn assert_quiet(what: &str, stderr: &str) {
    for bad in ["skipped", "disabled", "was returned"] {
        assert!(!stderr.contains(bad), "{what}: {stderr}");
    }
}

/// `prfmon query --json`: every object once, with its service and its values.
fn check_query(f: &Fixture, mode: &[&str]) {
    let run = f.prfmon(&[&["query", "--json"], mode].concat());
    assert_quiet("query", &run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("query JSON");
    let objects = json["objects"].as_array().expect("objects");
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for o in objects {
        let name = o["name"].as_str().unwrap_or_default().to_owned();
        let service = o["service"].as_str().unwrap_or("(none)").to_owned();
        seen.entry(name).or_default().push(service);
    }
    let want: BTreeMap<String, Vec<String>> = expected_objects()
        .into_iter()
        .map(|(name, service)| (name, vec![service.to_owned()]))
        .collect();
    assert_eq!(seen, want, "{mode:?}: each object once, from its service");

    let object = |name: &str| {
        objects
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("object {name}"))
    };
    for app in &APPS {
        assert_eq!(
            object(&format!("{} Jobs", app.name))["values"][0],
            app.queue,
            "{mode:?}"
        );
        let workers = &object(&format!("{} Worker", app.name))["instances"];
        for (i, done) in app.done.iter().enumerate() {
            assert_eq!(workers[i]["name"], ["w1", "w2"][i], "{mode:?}");
            assert_eq!(workers[i]["values"][0], *done, "{mode:?}");
        }
    }
    for c in &C_SERVICES {
        let o = object(c.title);
        assert_eq!(o["index"], c.index, "{mode:?}");
        assert_eq!(o["values"][0], c.value, "{mode:?}");
        assert_eq!(o["values"][1], c_large(c.value), "{mode:?}");
    }
}

/// Samples `typeperf` takes: Open, three Collects and Close for every service, the ones in
/// `dlmopen` namespaces included.
const TYPEPERF_SAMPLES: usize = 3;

/// `prfmon typeperf`: one column per counter instance, each once, with its value in every
/// sample; each C service counts its own Collect calls.
fn check_typeperf(f: &Fixture, mode: &[&str]) {
    let mut paths: Vec<String> = Vec::new();
    for app in &APPS {
        paths.push(format!(r"\{0} Jobs\{0} Queue", app.name));
        paths.push(format!(r"\{0} Worker(*)\{0} Done", app.name));
    }
    for c in &C_SERVICES {
        for counter in ["Value", "Large", "Calls"] {
            paths.push(format!(r"\{0}\{0} {counter}", c.title));
        }
    }
    let samples = TYPEPERF_SAMPLES.to_string();
    let args: Vec<&str> = ["typeperf"]
        .into_iter()
        .chain(paths.iter().map(String::as_str))
        .chain(["-sc", &samples, "-si", "0.1"])
        .chain(mode.iter().copied())
        .collect();
    let run = f.prfmon(&args);
    assert_quiet("typeperf", &run.stderr);
    let rows: Vec<Vec<String>> = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(run.stdout.as_bytes())
        .records()
        .map(|r| r.expect("a CSV record").iter().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        rows.len(),
        1 + TYPEPERF_SAMPLES,
        "a header and the samples:\n{}",
        run.stdout
    );
    let host = prfmon::datablock::host_name();
    // (column, value in every sample, or None for a Collect-call count)
    let mut want: Vec<(String, Option<String>)> = Vec::new();
    for app in &APPS {
        want.push((
            format!(r"\\{host}\{0} Jobs\{0} Queue", app.name),
            Some(format!("{}.000000", app.queue)),
        ));
        for (i, w) in ["w1", "w2"].iter().enumerate() {
            want.push((
                format!(r"\\{host}\{0} Worker({w})\{0} Done", app.name),
                Some(format!("{}.000000", app.done[i])),
            ));
        }
    }
    for c in &C_SERVICES {
        want.push((
            format!(r"\\{host}\{0}\{0} Value", c.title),
            Some(format!("{}.000000", c.value)),
        ));
        want.push((
            format!(r"\\{host}\{0}\{0} Large", c.title),
            Some(format!("{}.000000", c_large(c.value))),
        ));
        want.push((format!(r"\\{host}\{0}\{0} Calls", c.title), None));
    }
    let columns: Vec<&String> = want.iter().map(|(column, _)| column).collect();
    assert_eq!(
        rows[0][1..].iter().collect::<Vec<_>>(),
        columns,
        "{mode:?}: the CSV columns, each once"
    );
    let mut calls: Vec<Vec<&str>> = Vec::new();
    for row in &rows[1..] {
        let mut row_calls = Vec::new();
        for ((column, value), got) in want.iter().zip(&row[1..]) {
            match value {
                Some(value) => assert_eq!(got, value, "{mode:?}: {column}"),
                None => row_calls.push(got.as_str()),
            }
        }
        calls.push(row_calls);
    }
    // One copy of the state per service: every C service saw exactly the collections of
    // this run, one Collect each (a shared copy would count them for all its services).
    for (k, row_calls) in calls.iter().enumerate() {
        let want = format!("{}.000000", k + 1);
        assert!(
            row_calls.iter().all(|c| *c == want),
            "{mode:?}: Collect calls in sample {}: {row_calls:?}",
            k + 1
        );
    }
}

/// `prfmon list --json`: every object once, offered by its service alone.
fn check_list(f: &Fixture, mode: &[&str]) {
    let run = f.prfmon(&[&["list", "--json"], mode].concat());
    assert_quiet("list", &run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("list JSON");
    let mut seen: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for o in json.as_array().expect("a list") {
        let name = o["name"].as_str().unwrap_or_default().to_owned();
        seen.entry(name).or_default().push(o["services"].clone());
    }
    let want: BTreeMap<String, Vec<serde_json::Value>> = expected_objects()
        .into_iter()
        .map(|(name, service)| (name, vec![serde_json::json!([service])]))
        .collect();
    assert_eq!(
        seen, want,
        "{mode:?}: each object listed once, with its service"
    );
}

/// `prfmon serve`: each object's series once, labelled with its own service.
fn check_serve(f: &Fixture, mode: &[&str]) {
    let args = [&["--listen", "127.0.0.1:0"], mode].concat();
    let (_serve, addr, log) = f.setup.start_serve(&args);
    let addr = addr.expect("prfmon serve listens");
    let r = get(addr, "/metrics");
    assert_eq!(r.status, 200, "{r:?}");
    let s = samples(&r.body);
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    for app in &APPS {
        let jobs = format!("{} Jobs", app.name);
        let stem = metric_stem(&jobs, &format!("{} Queue", app.name));
        want.insert(
            format!("{stem}{{app=\"{}\"}}", app.service),
            app.queue.to_string(),
        );
        let workers = format!("{} Worker", app.name);
        let stem = metric_stem(&workers, &format!("{} Done", app.name));
        for (i, w) in ["w1", "w2"].iter().enumerate() {
            want.insert(
                format!("{stem}{{app=\"{}\",perf_instance=\"{w}\"}}", app.service),
                app.done[i].to_string(),
            );
        }
    }
    for c in &C_SERVICES {
        for (counter, value) in [("Value", i64::from(c.value)), ("Large", c_large(c.value))] {
            let stem = metric_stem(c.title, &format!("{} {counter}", c.title));
            want.insert(
                format!("{stem}{{app=\"{}\"}}", c.service),
                value.to_string(),
            );
        }
    }
    // Every series of these counters, whatever its labels: only the wanted ones, so no
    // counter is exposed under another service's name.
    let got: BTreeMap<String, String> = s
        .into_iter()
        .filter(|(series, _)| {
            want.keys()
                .any(|w| w.split('{').next() == series.split('{').next())
        })
        .collect();
    assert_eq!(got, want, "{mode:?}: /metrics series and app labels");
    drop(_serve);
    let log = log.lock().map(|l| l.clone()).unwrap_or_default();
    assert_quiet("serve", &log);
}

fn check_all(mode: &[&str]) {
    let f = fixture();
    check_query(&f, mode);
    check_typeperf(&f, mode);
    check_list(&f, mode);
    check_serve(&f, mode);
    assert!(
        performance_services(&f.registry())
            .expect("services")
            .iter()
            .all(|s| !s.disabled),
        "no provider disabled"
    );
}

#[test]
fn shared_provider_libraries_give_each_object_once_from_its_service_in_host_processes() {
    check_all(&[]);
}

#[test]
fn shared_provider_libraries_give_each_object_once_from_its_service_in_process() {
    check_all(&["--in-process"]);
}

/// glibc's static TLS holds about ten `dlmopen` namespaces: in process, the services of one
/// file beyond that are skipped (not disabled) with an error naming the library and the
/// service and pointing to host isolation; the others are collected, each once. Host
/// processes have no such limit.
#[test]
fn in_process_services_beyond_the_namespaces_glibc_allows_are_skipped_with_a_clear_error() {
    const SERVICES: u32 = 16;
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("registry");
    let registry = FileRegistry::open(&root).expect("registry");
    let c = c_provider(dir.path());
    let name = |n: u32| format!("Many{n:02}");
    for n in 0..SERVICES {
        register_c(&registry, &name(n), &c, "good", 7000 + 10 * n, n);
    }
    // glibc's default room for static TLS (512 bytes beyond what is loaded at start), so that a
    // tunable set on the machine does not move the limit.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .args(["query", "--json", "--in-process"])
        .env("PRFDATA_REGISTRY", &root)
        .env("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=512")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn prfmon");
    let in_process = finish(child);
    assert_eq!(in_process.code, 0, "{}", in_process.stderr);
    let json: serde_json::Value = serde_json::from_str(&in_process.stdout).expect("JSON");
    let objects = json["objects"].as_array().expect("objects");
    let mut collected = Vec::new();
    for o in objects {
        let service = o["service"].as_str().expect("a service").to_owned();
        let n: u32 = service["Many".len()..].parse().expect("a service number");
        assert_eq!(o["index"], 7000 + 10 * n, "{service}'s own object");
        assert_eq!(o["values"][0], n, "{service}'s own value");
        collected.push(n);
    }
    let skipped: Vec<u32> = (0..SERVICES).filter(|n| !collected.contains(n)).collect();
    assert!(
        collected.len() >= 8 && !skipped.is_empty(),
        "collected {collected:?}, skipped {skipped:?}: {}",
        in_process.stderr
    );
    assert_eq!(
        collected,
        (0..collected.len() as u32).collect::<Vec<_>>(),
        "the first services, each once"
    );
    for n in &skipped {
        let line = in_process
            .stderr
            .lines()
            .find(|l| l.contains(&format!("service {}:", name(*n))))
            .unwrap_or_else(|| panic!("no error for {}: {}", name(*n), in_process.stderr));
        assert!(
            line.contains(&c.display().to_string())
                && line.contains("use host-process isolation")
                && line.ends_with("skipped"),
            "{line}"
        );
    }
    assert!(
        performance_services(&registry)
            .expect("services")
            .iter()
            .all(|s| !s.disabled),
        "skipped, not disabled"
    );

    let hosted = common::prfmon(&root, &["query", "--json"]);
    assert_eq!(hosted.code, 0, "{}", hosted.stderr);
    let json: serde_json::Value = serde_json::from_str(&hosted.stdout).expect("JSON");
    let services: Vec<String> = json["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .map(|o| o["service"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(services, (0..SERVICES).map(name).collect::<Vec<_>>());
}

/// A process that opens in-process collectors again and again (a test suite, a program that
/// reconnects) keeps collecting: each service's copy of a shared library is reused, not
/// loaded into yet another `dlmopen` namespace (which glibc does not reliably reclaim).
#[test]
fn in_process_collectors_opened_again_and_again_reuse_the_copies_of_their_libraries() {
    use prfmon::collector::{Collector, CollectorOptions, Isolation};
    common::bounded(common::TEST_WAIT, || {
        let dir = tempfile::tempdir().expect("temp dir");
        let registry = FileRegistry::open(dir.path().join("reg")).expect("registry");
        let lib = common::provider_copy(dir.path(), "again");
        let services = ["AgainA", "AgainB", "AgainC"];
        for (k, service) in services.iter().enumerate() {
            common::register(
                &registry,
                service,
                &lib,
                "good",
                1848 + 12 * k as u32,
                5_000,
            );
        }
        for pass in 0..20 {
            let options = CollectorOptions {
                isolation: Isolation::InProcess,
                ..common::options()
            };
            let mut collector = Collector::open(registry.clone(), options).expect("collector");
            assert_eq!(collector.open_services(), services, "pass {pass}");
            let collection = collector.collect_with_services("Global");
            let snap = prfdata_wire::snapshot::decode(&collection.bytes).expect("decodes");
            let indexes: Vec<u32> = snap.objects.iter().map(|o| o.name_index).collect();
            assert_eq!(indexes, [1848, 1860, 1872], "pass {pass}");
            assert_eq!(collection.services, services, "pass {pass}");
            collector.close();
        }
    });
}

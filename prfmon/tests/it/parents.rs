//! Parent links through the whole chain: a real app process publishing children under
//! parents, the real provider cdylib (in this process and in provider host processes), and
//! prfmon's decoder and PDH names. A child instance has the same PDH name (`parent/child#n`)
//! whatever the query (Global, Costly, an index list naming it alone), and a consumer that
//! combines two collections (`typeperf`) shows each object once.

use crate::common;
use crate::prfdata_app;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use prfdata::InstanceSpec;
use prfdata_app::Installed;
use prfdata_registry::FileRegistry;
use prfdata_testkit::ProcessEnv;
use prfdata_wire::snapshot::{decode, DataSnapshot};
use prfmon::collector::{Collector, CollectorOptions, Isolation};
use prfmon::names::{instance_names, Names};

prfdata::prfdata_map! {
    /// Shards (costly) with entries; hosts with jobs, jobs with (costly) tasks.
    pub mod pt {
        app: "PdhParentsTest",
        object SHARD = 0 {
            name: "PT Shard", help: "A costly parent of entries.",
            detail: Novice, default: none, instances: { max: 4, name_len: 16 }, costly: true,
            counters {
                SIZE = 2: RawCount { name: "Size", help: "s", detail: Novice, scale: 0 },
            }
        }
        object ENTRY = 4 {
            name: "PT Entry", help: "An entry of a shard.",
            detail: Novice, default: none, instances: { max: 16, name_len: 16 }, costly: false,
            counters {
                HITS = 6: RawCount { name: "Hits", help: "h", detail: Novice, scale: 0 },
            }
        }
        object HOST = 8 {
            name: "PT Host", help: "A host.",
            detail: Novice, default: none, instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                LOAD = 10: RawCount { name: "Load", help: "l", detail: Novice, scale: 0 },
            }
        }
        object JOB = 12 {
            name: "PT Job", help: "A job of a host.",
            detail: Novice, default: none, instances: { max: 16, name_len: 16 }, costly: false,
            counters {
                DONE = 14: RawCount { name: "Done", help: "d", detail: Novice, scale: 0 },
            }
        }
        object TASK = 16 {
            name: "PT Task", help: "A costly task of a job.",
            detail: Novice, default: none, instances: { max: 32, name_len: 16 }, costly: true,
            counters {
                STEPS = 18: RawCount { name: "Steps", help: "s", detail: Novice, scale: 0 },
            }
        }
    }
}

/// The instances the app publishes, as PDH names them (two jobs named `j` under `h2`).
const EXPECTED: [(&str, &[&str]); 5] = [
    ("PT Shard", &["s1", "s2"]),
    ("PT Entry", &["s2/e1", "s1/e2"]),
    ("PT Host", &["h1", "h2"]),
    ("PT Job", &["h2/j", "h1/j", "h2/j#1"]),
    ("PT Task", &["j/t1", "j/t2", "j/t3"]),
];

/// The app child: publishes the tree, says so, and waits to be killed (bounded).
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    if std::env::var_os(prfdata_app::APP_ROLE).is_none() {
        return;
    }
    let prf = pt::PrfData::activate().expect("the app activates");
    let s1 = prf.add_instance(pt::SHARD, "s1").unwrap();
    let s2 = prf.add_instance(pt::SHARD, "s2").unwrap();
    prf.add_instance(pt::ENTRY, InstanceSpec::named("e1").parent(s2))
        .unwrap();
    prf.add_instance(pt::ENTRY, InstanceSpec::named("e2").parent(s1))
        .unwrap();
    let h1 = prf.add_instance(pt::HOST, "h1").unwrap();
    let h2 = prf.add_instance(pt::HOST, "h2").unwrap();
    let j0 = prf
        .add_instance(pt::JOB, InstanceSpec::named("j").parent(h2))
        .unwrap();
    let j1 = prf
        .add_instance(pt::JOB, InstanceSpec::named("j").parent(h1))
        .unwrap();
    let j2 = prf
        .add_instance(pt::JOB, InstanceSpec::named("j").parent(h2))
        .unwrap();
    for (name, job) in [("t1", j2), ("t2", j0), ("t3", j1)] {
        prf.add_instance(pt::TASK, InstanceSpec::named(name).parent(job))
            .unwrap();
    }
    prfdata_app::app_ready(b"");
    std::thread::sleep(Duration::from_secs(60));
}

/// The app installed once for this module's tests (removed when the process exits).
fn setup() -> &'static Installed {
    static SETUP: OnceLock<Installed> = OnceLock::new();
    SETUP.get_or_init(|| {
        let installed = prfdata_app::install(&pt::MAP);
        prfdata_testkit::remove_at_exit(installed.dir.path());
        installed
    })
}

/// The running app; one at a time (the tests share its name and folders), with this process's
/// `PRFDATA_*` environment set to its folders (the in-process provider reads them there;
/// provider hosts inherit them).
struct App {
    _process: prfdata_app::AppProcess,
    _env: ProcessEnv,
}

fn start_app() -> App {
    let env = setup().process_env();
    App {
        _process: prfdata_app::spawn_app(setup(), &prfdata_testkit::test_path!("app_child")),
        _env: env,
    }
}

/// Each object of `snap` by name, with its instances' PDH names; fails if an object appears
/// twice.
fn pdh_names(snap: &DataSnapshot, names: &Names) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for obj in &snap.objects {
        let name = names.name(obj.name_index);
        let previous = out.insert(name.clone(), instance_names(snap, obj));
        assert!(previous.is_none(), "{name} appears twice");
    }
    out
}

/// Every query form: the collection's objects and names must be the expected ones.
fn names_in_every_query(isolation: Isolation) {
    let _app = start_app();
    let setup = setup();
    let registry = FileRegistry::open(&setup.registry).unwrap();
    let names = Names::load(&registry, "009").unwrap();
    let options = CollectorOptions {
        isolation,
        host_exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_prfmon"))),
        ..Default::default()
    };
    let mut collector = Collector::open(registry, options).unwrap();
    let index = |offset: u32| (setup.first_counter + offset).to_string();
    let expected: BTreeMap<&str, &[&str]> = EXPECTED.into_iter().collect();
    for (query, objects) in [
        (
            "Global".to_owned(),
            vec!["PT Entry", "PT Host", "PT Job", "PT Shard"],
        ),
        (
            "Costly".to_owned(),
            vec!["PT Host", "PT Job", "PT Shard", "PT Task"],
        ),
        (index(4), vec!["PT Entry", "PT Shard"]),
        (index(12), vec!["PT Host", "PT Job"]),
        (index(16), vec!["PT Host", "PT Job", "PT Task"]),
        (
            format!("{} {}", index(16), index(4)),
            vec!["PT Entry", "PT Host", "PT Job", "PT Shard", "PT Task"],
        ),
    ] {
        let snap = decode(&collector.collect(&query)).unwrap();
        let got = pdh_names(&snap, &names);
        assert_eq!(
            got.keys().map(String::as_str).collect::<Vec<_>>(),
            objects,
            "objects of {query} ({isolation:?})"
        );
        for (object, instances) in &got {
            assert_eq!(
                instances,
                &expected[object.as_str()],
                "{object} in {query} ({isolation:?})"
            );
        }
    }
    collector.close();
}

#[test]
fn a_child_has_the_same_pdh_name_in_every_query_in_process() {
    names_in_every_query(Isolation::InProcess);
}

#[test]
fn a_child_has_the_same_pdh_name_in_every_query_in_provider_hosts() {
    names_in_every_query(Isolation::HostProcess);
}

fn prfmon(args: &[&str]) -> common::Run {
    prfdata_app::prfmon_for(setup(), args)
}

/// `prfmon query "<the task object>"`, by index and by name: the tasks come with their jobs
/// and hosts, named under them.
#[test]
fn query_for_a_child_object_alone_names_it_under_its_parent() {
    let _app = start_app();
    let by_index = (setup().first_counter + 16).to_string();
    for query in [by_index.as_str(), "PT Task"] {
        let run = prfmon(&["query", query, "--json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let objects = json["objects"].as_array().unwrap();
        let names: Vec<&str> = objects
            .iter()
            .map(|o| o["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["PT Host", "PT Job", "PT Task"], "{query}");
        let tasks: Vec<&str> = objects[2]["instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap())
            .collect();
        assert_eq!(tasks, ["j/t1", "j/t2", "j/t3"], "{query}");
    }
}

fn columns(csv_text: &str) -> Vec<String> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv_text.as_bytes())
        .records()
        .next()
        .expect("a header row")
        .expect("a CSV record")
        .iter()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

/// `typeperf` collects `Global`, then the costly tasks by index (which brings the jobs and
/// hosts again): every column once, every child under its parent; the entries of the costly
/// shards are named under them in `Global` itself.
#[test]
fn typeperf_shows_each_object_once_and_children_under_their_parents() {
    let _app = start_app();
    let run = prfmon(&[
        "typeperf",
        r"\PT Task(*)\Steps",
        r"\PT Job(*)\Done",
        r"\PT Entry(*)\Hits",
        "-sc",
        "1",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let host = prfmon::datablock::host_name();
    let expected: Vec<String> = [
        "PT Task(j/t1)\\Steps",
        "PT Task(j/t2)\\Steps",
        "PT Task(j/t3)\\Steps",
        "PT Job(h2/j)\\Done",
        "PT Job(h1/j)\\Done",
        "PT Job(h2/j#1)\\Done",
        "PT Entry(s2/e1)\\Hits",
        "PT Entry(s1/e2)\\Hits",
    ]
    .iter()
    .map(|p| format!(r"\\{host}\{p}"))
    .collect();
    assert_eq!(columns(&run.stdout), expected, "{}", run.stdout);

    // The listing combines Global and Costly: each path once.
    let run = prfmon(&["typeperf", "-qx"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let mut unique = lines.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), lines.len(), "{}", run.stdout);
    for path in [
        r"\PT Task(j/t1)\Steps",
        r"\PT Entry(s2/e1)\Hits",
        r"\PT Job(h2/j#1)\Done",
    ] {
        assert!(lines.contains(&path), "{path} in\n{}", run.stdout);
    }
}

//! End to end with a real app process: install, activate, collect through the dlopen'ed
//! provider cdylib (in a provider host process), decode, and the values match what the app wrote.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use prfdata_registry::FileRegistry;
use prfdata_testkit::{ChildGuard, ProcessEnv, Sandbox};
use prfdata_wire::snapshot::{decode, DataSnapshot, ObjectData};
use prfmon::collector::{Collector, Isolation};
use prfmon::names::{instance_names, Names};

prfdata::prfdata_map! {
    /// The test app's counters.
    pub mod e2e {
        app: "PrfmonE2E",
        object SERVER = 0 {
            name: "E2E Server", help: "The server as a whole.",
            detail: Novice, default: CONNECTIONS, instances: none, costly: false,
            counters {
                CONNECTIONS = 2: RawCount { name: "Connections", help: "Open connections.", detail: Novice, scale: 0 },
                BYTES = 4: BulkCount { name: "Bytes/sec", help: "Bytes sent.", detail: Novice, scale: 0 },
                HIT = 6: RawFraction { name: "Hit ratio", help: "Cache hits.", detail: Novice, scale: 0 },
                HIT_BASE: RawBase,
            }
        }
        object POOL = 8 {
            name: "E2E Pool", help: "A pool.", detail: Novice, default: SIZE,
            instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                SIZE = 10: RawCount { name: "Size", help: "Pool size.", detail: Novice, scale: 0 },
            }
        }
        object BUILD = 16 {
            name: "E2E Build", help: "What is running.", detail: Novice, default: none,
            instances: none, costly: false,
            counters {
                VERSION = 18: Text32 { name: "Version", help: "The build's version.", detail: Novice, scale: 0 },
            }
        }
        object SESSION = 12 {
            name: "E2E Session", help: "A session.", detail: Novice, default: SENT,
            instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                SENT = 14: LargeRawCount { name: "Sent", help: "Bytes sent in the session.", detail: Novice, scale: 0 },
            }
        }
    }
}

struct Env {
    sandbox: Sandbox,
    first_counter: u32,
}

/// One registry and shm folder for this module's tests (removed when the process exits); a
/// test that runs the app holds them as this process's environment (see [`start_app`]), which
/// provider hosts inherit.
fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let sandbox = Sandbox::new();
        prfdata_testkit::remove_at_exit(sandbox.dir.path());
        let range = sandbox.install(&e2e::MAP);
        Env {
            sandbox,
            first_counter: range.first_counter,
        }
    })
}

/// Child: the app. Publishes known values, then waits to be killed.
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    if std::env::var("E2E_ROLE").as_deref() != Ok("app") {
        return;
    }
    use std::sync::atomic::Ordering::Relaxed;
    let prf = e2e::PrfData::activate().expect("the app activates");
    prf.get_ctr32(e2e::CONNECTIONS, ()).store(12_345, Relaxed);
    prf.get_ctr64(e2e::BYTES, ()).store(1 << 40, Relaxed);
    prf.get_ctr32(e2e::HIT, ()).store(3, Relaxed);
    prf.get_ctr32(e2e::HIT_BASE, ()).store(4, Relaxed);
    prf.text().set(e2e::VERSION, (), "1.2.3-é");
    let pool = prf.add_instance(e2e::POOL, "pool").unwrap();
    prf.get_ctr32(e2e::SIZE, pool).store(2, Relaxed);
    for (name, sent) in [("alice", 100), ("bob", 200), ("bob", 300)] {
        let s = prf
            .add_instance(
                e2e::SESSION,
                prfdata::InstanceSpec::named(name).parent(pool),
            )
            .unwrap();
        prf.get_ctr64(e2e::SENT, s).store(sent, Relaxed);
    }
    std::fs::write(ready(), b"").unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

fn ready() -> PathBuf {
    PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").unwrap()).join("ready")
}

/// The running app; tests hold it one at a time (they share the app's name and folders), with
/// this process's `PRFDATA_*` environment pointing at them (the in-process provider reads it).
struct App {
    _child: ChildGuard,
    _env: ProcessEnv,
}

fn start_app() -> App {
    let env = env().sandbox.process_env();
    let _ = std::fs::remove_file(ready());
    let mut command = prfdata_testkit::self_command(&prfdata_testkit::test_path!("app_child"));
    command.env("E2E_ROLE", "app").stdout(Stdio::null());
    let child = ChildGuard::new(command.spawn().unwrap(), "the app");
    prfdata_testkit::wait_until(Duration::from_secs(30), "the app started", || {
        ready().exists().then_some(())
    });
    App {
        _child: child,
        _env: env,
    }
}

fn collector(isolation: Isolation) -> Collector<FileRegistry> {
    let reg = FileRegistry::open(&env().sandbox.registry).unwrap();
    let mut options = common::options();
    options.isolation = isolation;
    Collector::open(reg, options).unwrap()
}

fn object(snap: &DataSnapshot, index: u32) -> &ObjectData {
    snap.objects
        .iter()
        .find(|o| o.name_index == index)
        .unwrap_or_else(|| panic!("object {index}"))
}

fn check_values(snap: &DataSnapshot, names: &Names) {
    let fc = env().first_counter;
    let server = object(snap, fc);
    assert!(!server.has_instances());
    let values: Vec<i64> = server
        .values()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(values, [12_345, 1 << 40, 3, 4]);
    assert_eq!(names.name(server.name_index), "E2E Server");
    assert_eq!(names.name(server.counters[2].name_index), "Hit ratio");
    let build = object(snap, fc + 16);
    assert_eq!(
        build.values().unwrap().to_vec(),
        [prfdata_wire::snapshot::RawValue::Text("1.2.3-é".into())],
        "a text counter"
    );
    let sessions = object(snap, fc + 12);
    assert_eq!(
        instance_names(snap, sessions),
        ["pool/alice", "pool/bob", "pool/bob#1"],
        "PDH names: parent/child, duplicates numbered"
    );
    let sent: Vec<i64> = sessions
        .instances()
        .map(|i| i.values().int(0).unwrap())
        .collect();
    assert_eq!(sent, [100, 200, 300]);
    assert!(sessions
        .instances()
        .all(|i| i.def().parent_object_title_index.get() == fc + 8));
}

#[test]
fn an_app_process_is_collected_through_the_provider_host() {
    let _app = start_app();
    let names = Names::load(&FileRegistry::open(&env().sandbox.registry).unwrap(), "009").unwrap();
    let mut c = collector(Isolation::HostProcess);
    let bytes = common::bounded(Duration::from_secs(30), move || {
        let b = c.collect("Global");
        (c, b)
    });
    let (c, bytes) = bytes;
    let snap = decode(&bytes).unwrap();
    check_values(&snap, &names);
    assert!(
        c.disabled().is_empty(),
        "the real provider is never disabled"
    );
    c.close();
}

#[test]
fn two_collectors_read_the_same_app_at_once() {
    let _app = start_app();
    let names = Names::load(&FileRegistry::open(&env().sandbox.registry).unwrap(), "009").unwrap();
    let threads: Vec<_> = [Isolation::HostProcess, Isolation::InProcess]
        .into_iter()
        .map(|isolation| {
            std::thread::spawn(move || {
                let mut c = collector(isolation);
                (0..20).map(|_| c.collect("Global")).collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        for bytes in t.join().unwrap() {
            check_values(&decode(&bytes).unwrap(), &names);
        }
    }
}

#[test]
fn prfmon_query_prints_the_app() {
    let _app = start_app();
    let mut command = Command::new(env!("CARGO_BIN_EXE_prfmon"));
    env().sandbox.apply_env(&mut command).arg("query");
    let out = command.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("E2E Server") && text.contains("12345"),
        "{text}"
    );
    assert!(text.contains("pool/bob#1"), "{text}");
}

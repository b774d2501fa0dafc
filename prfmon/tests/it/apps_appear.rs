//! Long-running collectors follow the registry: an app installed after `prfmon serve`, a
//! `prfmon typeperf` or a library [`Collector`] started is collected, one uninstalled is no
//! longer collected, and one reinstalled under other names is collected under the new names,
//! each within 2 s and without a restart.
//!
//! The app is a real process (this binary re-executed) that installs its map with the real
//! provider and activates its block, as an application's first run does; the collectors are the
//! real `prfmon` binary and the library API with provider host processes. Each wait is bounded
//! by [`SEEN_WITHIN`] (the requirement, 2 s, with room for a loaded machine); the time it took
//! is printed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use prfdata::install::{install_in, uninstall_in, InstallOptions};
use prfdata_registry::{FileRegistry, Registry};
use prfdata_testkit::{ready, ChildGuard, Sandbox, WAIT};
use prfmon::collector::Collector;
use prfmon::names::Names;

use crate::common;

prfdata::prfdata_map! {
    pub mod v1 {
        app: "AppearApp",
        object SERVICE = 0 {
            name: "Appear Service", help: "The app, first build.",
            counters {
                VALUE = 2: RawCount { name: "Appear Value", help: "A fixed value." },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// The same app reinstalled with other names (and so another map fingerprint).
    pub mod v2 {
        app: "AppearApp",
        object SERVICE = 0 {
            name: "Appear Renamed", help: "The app, second build.",
            counters {
                VALUE = 2: RawCount { name: "Renamed Value", help: "A fixed value." },
            }
        }
    }
}

/// What the requirement allows between a registry change and its collection.
pub(crate) const REQUIRED: Duration = Duration::from_secs(2);
/// How long a test waits for it before failing: the requirement with room for a loaded
/// machine (not a timing target; the time it took is printed).
pub(crate) const SEEN_WITHIN: Duration = Duration::from_secs(5);

/// The value each build publishes.
pub(crate) const V1_VALUE: i32 = 4242;
pub(crate) const V2_VALUE: i32 = 777;

/// The env var that makes this binary the app child: `v1` or `v2`, the build it runs.
const ROLE: &str = "PRFMON_APPEAR_APP";

/// The app child: installs its build with the real provider (`library` from the env), then
/// activates it, publishes its value, says ready (with the instant its install was done, in
/// nanoseconds since 1970) and waits to be killed.
#[test]
#[ignore = "entry point for the app child process"]
fn app_entry() {
    let Ok(build) = std::env::var(ROLE) else {
        return;
    };
    use std::sync::atomic::Ordering::Relaxed;
    let registry = FileRegistry::open_default().expect("the sandbox registry");
    let shm = PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").expect("PRFDATA_SHM_DIR"));
    let options = InstallOptions {
        library: std::env::var_os("PRFMON_APPEAR_LIBRARY")
            .map_or_else(prfdata_testkit::provider_library, PathBuf::from),
        ini_dir: shm.join("ini"),
        replace: true,
    };
    // Kept alive until the process is killed.
    let (installed, _prf): (std::time::SystemTime, Box<dyn std::any::Any>) = if build == "v1" {
        install_in(&registry, &v1::MAP, &options).expect("install v1");
        let installed = std::time::SystemTime::now();
        let prf = v1::PrfData::activate().expect("activate v1");
        prf.get_ctr32(v1::VALUE, ()).store(V1_VALUE, Relaxed);
        (installed, Box::new(prf))
    } else {
        install_in(&registry, &v2::MAP, &options).expect("install v2");
        let installed = std::time::SystemTime::now();
        let prf = v2::PrfData::activate().expect("activate v2");
        prf.get_ctr32(v2::VALUE, ()).store(V2_VALUE, Relaxed);
        (installed, Box::new(prf))
    };
    let since_1970 = installed
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_nanos();
    ready::publish(
        &shm.join(format!("ready-{build}")),
        since_1970.to_string().as_bytes(),
    )
    .expect("say ready");
    std::thread::sleep(Duration::from_secs(120));
}

/// Starts the app child of `build` (installing itself with `library`, or the built provider)
/// and waits until it published; returns it and the instant it said so (after its install).
pub(crate) fn start_app(
    sandbox: &Sandbox,
    build: &str,
    library: Option<&Path>,
) -> (ChildGuard, Instant) {
    let (child, _) = start_app_timed(sandbox, build, library);
    (child, Instant::now())
}

/// [`start_app`], returning the wall-clock instant the child's install was done instead.
pub(crate) fn start_app_timed(
    sandbox: &Sandbox,
    build: &str,
    library: Option<&Path>,
) -> (ChildGuard, std::time::SystemTime) {
    let ready_file = sandbox.shm.join(format!("ready-{build}"));
    let _ = std::fs::remove_file(&ready_file);
    let mut command = prfdata_testkit::self_command(&prfdata_testkit::test_path!("app_entry"));
    sandbox
        .apply_env(&mut command)
        .env(ROLE, build)
        .stdout(Stdio::null());
    if let Some(library) = library {
        command.env("PRFMON_APPEAR_LIBRARY", library);
    }
    let child = ChildGuard::new(command.spawn().expect("spawn the app"), "the app");
    let said = ready::wait(&ready_file, WAIT);
    let nanos: u64 = String::from_utf8_lossy(&said)
        .parse()
        .expect("the install instant, in nanoseconds");
    (child, std::time::UNIX_EPOCH + Duration::from_nanos(nanos))
}

/// The sandbox with an empty registry (created, so that the collectors can check it).
pub(crate) fn empty_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    drop(sandbox.open());
    sandbox
}

/// The value of `object`'s counter `counter` in a PERF_DATA_BLOCK, named through the
/// registry's current names; `None` when the block does not hold it.
fn value_in(bytes: &[u8], registry: &FileRegistry, object: &str, counter: &str) -> Option<i64> {
    let names = Names::load(registry, "009").ok()?;
    let snapshot = prfdata_wire::snapshot::decode(bytes).expect("a valid PERF_DATA_BLOCK");
    let obj = snapshot
        .objects
        .iter()
        .find(|o| names.name(o.name_index) == object)?;
    let c = obj
        .counters
        .iter()
        .position(|c| names.name(c.name_index) == counter)?;
    obj.values()?.int(c)
}

/// Polls `look` until it gives `want`, at most [`SEEN_WITHIN`] after `since`; returns how long
/// after `since` it did.
pub(crate) fn seen<T: PartialEq + std::fmt::Debug>(
    what: &str,
    since: Instant,
    want: T,
    mut look: impl FnMut() -> T,
) -> Duration {
    loop {
        let now = look();
        if now == want {
            let took = since.elapsed();
            eprintln!("{what}: seen after {took:?} (required: within {REQUIRED:?})");
            return took;
        }
        assert!(
            since.elapsed() < SEEN_WITHIN,
            "{what}: still {now:?} after {SEEN_WITHIN:?} (required: within {REQUIRED:?}), \
             wanted {want:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP/1.0 GET, the body as bytes (the `/perfdata` answer is binary).
pub(crate) fn get_bytes(addr: SocketAddr, target: &str) -> Vec<u8> {
    let mut stream = TcpStream::connect_timeout(&addr, WAIT).expect("connect to serve");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(stream, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head");
    assert!(raw.starts_with(b"HTTP/1.1 200") || raw.starts_with(b"HTTP/1.0 200"));
    raw.split_off(end + 4)
}

#[test]
fn serve_collects_apps_installed_uninstalled_and_renamed_after_it_started() {
    let sandbox = empty_sandbox();
    let registry = sandbox.open();
    let serve = crate::serve_common::Setup { sandbox };
    let (_serve, addr, log) = serve.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("serve listens");
    let perfdata = || get_bytes(addr, "/perfdata?query=Global");
    assert_eq!(
        prfdata_wire::snapshot::decode(&perfdata())
            .unwrap()
            .objects
            .len(),
        0,
        "nothing installed yet"
    );

    let (app, installed) = start_app(&serve.sandbox, "v1", None);
    seen(
        "serve: an app installed",
        installed,
        Some(i64::from(V1_VALUE)),
        || value_in(&perfdata(), &registry, "Appear Service", "Appear Value"),
    );

    let removed = {
        uninstall_in(&registry, &v1::MAP).expect("uninstall v1");
        Instant::now()
    };
    seen("serve: the app uninstalled", removed, 0, || {
        prfdata_wire::snapshot::decode(&perfdata())
            .unwrap()
            .objects
            .len()
    });
    drop(app);

    let (_app, renamed) = start_app(&serve.sandbox, "v2", None);
    seen(
        "serve: the app renamed",
        renamed,
        Some(i64::from(V2_VALUE)),
        || value_in(&perfdata(), &registry, "Appear Renamed", "Renamed Value"),
    );
    let log = log.lock().unwrap().clone();
    assert!(!log.contains("disabled"), "no provider disabled: {log}");
}

#[test]
fn typeperf_follows_an_uninstall_and_a_reinstall_of_the_app_it_samples() {
    let sandbox = empty_sandbox();
    let registry = sandbox.open();
    let (app, _) = start_app(&sandbox, "v1", None);
    let mut command = std::process::Command::new(common::PRFMON);
    sandbox
        .apply_env(&mut command)
        .args(["typeperf", r"\Appear Service\Appear Value", "-si", "0.1"])
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut typeperf = ChildGuard::new(command.spawn().expect("spawn typeperf"), "typeperf");
    let stdout = typeperf.child().stdout.take().expect("typeperf's stdout");
    // Each row's value column, as typeperf writes it (`"4242.000000"`, or `" "` for none).
    let (tx, rows) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let value = line.rsplit(',').next().unwrap_or("").trim_matches('"');
            if tx.send(value.to_owned()).is_err() {
                return;
            }
        }
    });
    let last_row = |since: Instant| -> String {
        let mut last = String::new();
        while let Ok(row) = rows.recv_timeout(Duration::from_millis(50)) {
            last = row;
        }
        assert!(since.elapsed() < WAIT, "typeperf writes rows");
        last
    };
    let started = Instant::now();
    seen("typeperf: the app sampled", started, true, || {
        last_row(started).starts_with("4242")
    });

    let removed = {
        uninstall_in(&registry, &v1::MAP).expect("uninstall v1");
        Instant::now()
    };
    seen(
        "typeperf: the app uninstalled",
        removed,
        " ".to_owned(),
        || last_row(removed),
    );

    // Installed again (the same names come back at the same indexes): sampled again.
    let options = InstallOptions {
        library: prfdata_testkit::provider_library(),
        ini_dir: sandbox.path("ini"),
        replace: true,
    };
    install_in(&registry, &v1::MAP, &options).expect("install v1 again");
    let back = Instant::now();
    seen("typeperf: the app installed again", back, true, || {
        last_row(back).starts_with("4242")
    });
    drop(typeperf);
    drop(app);
}

/// The provider host processes of this process running `library`.
fn hosts_running(library: &Path) -> usize {
    let want = library.as_os_str().as_encoded_bytes();
    common::provider_hosts()
        .iter()
        .filter(|(_, cmdline)| cmdline.windows(want.len()).any(|w| w == want))
        .count()
}

#[test]
fn a_collector_follows_installs_library_moves_uninstalls_and_renames() {
    let sandbox = empty_sandbox();
    let registry = sandbox.open();
    let _env = sandbox.process_env();
    let mut collector = Collector::open(sandbox.open(), common::options()).expect("collector");
    assert!(collector.open_services().is_empty());
    let value = |collector: &mut Collector<FileRegistry>, object: &str, counter: &str| {
        let bytes = collector.collect("Global");
        value_in(&bytes, &registry, object, counter)
    };

    let (app, installed) = start_app(&sandbox, "v1", None);
    seen(
        "collector: an app installed",
        installed,
        Some(i64::from(V1_VALUE)),
        || value(&mut collector, "Appear Service", "Appear Value"),
    );

    // Installed again with its provider at another path: that library is loaded instead.
    let moved = sandbox.path("libprovider_moved.so");
    std::fs::copy(prfdata_testkit::provider_library(), &moved).expect("copy the provider");
    let options = InstallOptions {
        library: moved.clone(),
        ini_dir: sandbox.path("ini"),
        replace: true,
    };
    install_in(&registry, &v1::MAP, &options).expect("install v1 with the moved library");
    let since = Instant::now();
    seen(
        "collector: the library moved",
        since,
        (1, Some(i64::from(V1_VALUE))),
        || {
            let v = value(&mut collector, "Appear Service", "Appear Value");
            (hosts_running(&moved), v)
        },
    );

    let removed = {
        uninstall_in(&registry, &v1::MAP).expect("uninstall v1");
        Instant::now()
    };
    seen("collector: the app uninstalled", removed, 0, || {
        prfdata_wire::snapshot::decode(&collector.collect("Global"))
            .unwrap()
            .objects
            .len()
    });
    assert_eq!(hosts_running(&moved), 0, "its provider host stopped");
    drop(app);

    let (_app, renamed) = start_app(&sandbox, "v2", None);
    seen(
        "collector: the app renamed",
        renamed,
        Some(i64::from(V2_VALUE)),
        || value(&mut collector, "Appear Renamed", "Renamed Value"),
    );
    assert!(
        collector.disabled().is_empty(),
        "{:?}",
        collector.disabled()
    );
    let hive = registry.snapshot().unwrap();
    let service = prfdata_registry::service::read_service(&hive, "AppearApp").unwrap();
    assert!(service.is_some_and(|s| !s.disabled));
}

/// A service whose Open failed (its `Linkage\Export` names an app not installed yet: the
/// provider's Open answers ERROR_FILE_NOT_FOUND) is tried again when the registry changes, and
/// serves the app once it is installed.
#[test]
fn a_service_whose_open_failed_is_opened_once_what_it_lacked_is_installed() {
    let sandbox = empty_sandbox();
    let registry = sandbox.open();
    let mut config = prfdata_registry::ServiceConfig::new(
        prfdata_testkit::provider_library().display().to_string(),
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    config.export = vec!["AppearApp".into()];
    prfdata_registry::register_service(&registry, "Combo", &config).expect("register Combo");
    let _env = sandbox.process_env();
    let mut collector = Collector::open(sandbox.open(), common::options()).expect("collector");
    assert!(collector.open_services().is_empty(), "Open failed: skipped");

    let (_app, installed) = start_app(&sandbox, "v1", None);
    seen("collector: Combo opened again", installed, true, || {
        collector.collect("Global");
        collector.open_services().contains(&"Combo")
    });
    assert!(collector.disabled().is_empty());
}

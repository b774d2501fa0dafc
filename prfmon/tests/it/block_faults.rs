//! Blocks under fault or attack, read by the real provider (`libprfdata_provider.so`) in both
//! isolation modes, with real processes and real files: a block truncated, regrown or
//! replaced under a reader never kills the reading process; a FIFO at a block path never blocks
//! a collection; a process killed holding an app's lock leaves no reader answering "busy"; a
//! lone surrogate in an instance name never gets the provider disabled. In every case the
//! provider stays enabled and the other apps' data is there.

use crate::common;
use crate::prfdata_app;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{bounded, TEST_WAIT};
use prfdata::layout::{self, slot};
use prfdata::map::offsets;
use prfdata_app::Installed;
use prfdata_registry::FileRegistry;
use prfdata_testkit::ProcessEnv;
use prfdata_wire::snapshot::{decode, DataSnapshot};
use prfmon::collector::{Collector, CollectorOptions, Isolation};
use prfmon::names::Names;

prfdata::prfdata_map! {
    /// The app under fault: a global object and one with instances.
    pub mod bf {
        app: "BlockFaultTest",
        object TOTAL = 0 {
            name: "BF Total", help: "The whole app.",
            detail: Novice, default: DONE, instances: none, costly: false,
            counters {
                DONE = 2: RawCount { name: "BF Done", help: "d", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 4 {
            name: "BF Worker", help: "A worker.",
            detail: Novice, default: BUSY, instances: { max: 16, name_len: 16 }, costly: false,
            counters {
                BUSY = 6: RawCount { name: "BF Busy", help: "b", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// An app whose block path holds a FIFO (its own service).
    pub mod fifo_app {
        app: "BlockFaultFifo",
        object ONLY = 0 {
            name: "BF Fifo", help: "Never published.",
            detail: Novice, default: N, instances: none, costly: false,
            counters {
                N = 2: RawCount { name: "BF Fifo N", help: "n", detail: Novice, scale: 0 },
            }
        }
    }
}

/// The role a re-executed test binary plays.
const ROLE: &str = "BLOCK_FAULT_ROLE";
/// The file a child writes once it is ready (a name per role).
const READY: &str = "BLOCK_FAULT_READY";
/// The file whose appearance tells the collecting child to stop.
const STOP: &str = "BLOCK_FAULT_STOP";
/// The app's worker names.
const WORKERS: [&str; 3] = ["w0", "w1", "w2"];
/// How many truncations and replacements the attacker makes: one experiment saw 8 to 165 of
/// 300 kill the collector, so a thousand make a collector without the fix die for certain.
const ATTACKS: u32 = 1000;

/// Both maps installed in one temp registry, for this module's tests (removed when the
/// process exits).
fn setup() -> &'static Installed {
    static SETUP: OnceLock<Installed> = OnceLock::new();
    SETUP.get_or_init(|| {
        let installed = prfdata_app::install(&bf::MAP);
        prfdata_testkit::remove_at_exit(installed.dir.path());
        installed.install(&fifo_app::MAP);
        installed
    })
}

/// One test at a time (they share the apps' names and folders), with this process's
/// `PRFDATA_*` environment set to [`setup`]'s folders (the in-process provider reads them
/// there; hosts and children inherit them).
fn serial() -> ProcessEnv {
    setup().process_env()
}

/// An app's block path, from `PRFDATA_SHM_DIR` (set by [`serial`], inherited by children).
fn block_path(app: &str) -> PathBuf {
    prfdata::block_path(app).unwrap()
}

/// A child process, killed when dropped.
struct ChildProcess(Child);

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl ChildProcess {
    /// Waits (bounded) for the child to end.
    fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < TEST_WAIT, "the child did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL, and reaped.
    fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

/// Starts this test binary again as `role`, and waits (bounded) for its ready file unless
/// `wait_ready` is false.
fn spawn(role: &str, extra: &[(&str, &str)], wait_ready: bool) -> ChildProcess {
    let ready = setup().shm.join(format!("ready-{role}"));
    let _ = std::fs::remove_file(&ready);
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            &prfdata_testkit::test_path!("child_entry"),
            "--include-ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ROLE, role)
        .env(READY, &ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in extra {
        command.env(k, v);
    }
    let child = ChildProcess(command.spawn().unwrap());
    let start = Instant::now();
    while wait_ready && !ready.exists() {
        assert!(
            start.elapsed() < TEST_WAIT,
            "the {role} child did not start"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child
}

fn say_ready() {
    let ready = PathBuf::from(std::env::var_os(READY).unwrap());
    let tmp = ready.with_extension("tmp");
    std::fs::write(&tmp, b"").unwrap();
    std::fs::rename(&tmp, &ready).unwrap();
}

/// The entry point of every child role.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    match role.as_str() {
        "app" => app(),
        "attach-lock" => attach_and_hold(false),
        "attach-half-add" => attach_and_hold(true),
        "attacker" => attacker(),
        "collector" => collector_loop(),
        other => panic!("unknown role {other}"),
    }
}

/// The owner: publishes its workers, then waits to be killed.
fn app() {
    // The app of an earlier test was killed and left its block: `activate` would adopt it, and
    // its instances would come back in other slots than the ones `worker_slot` names. A fresh
    // block for each test.
    let _ = std::fs::remove_file(block_path(bf::MAP.app));
    let prf = bf::PrfData::activate().expect("activate the app");
    prf.get_ctr32(bf::DONE, ()).store(42, Relaxed);
    for name in WORKERS {
        prf.add_instance(bf::WORKER, name).unwrap();
    }
    say_ready();
    std::thread::sleep(Duration::from_secs(120));
}

/// A second process of the app: attaches, takes `lock_ctrs` and, if `half_add`, leaves a
/// half-made instance behind (a slot marked live but not listed, as `add_instance` leaves one
/// when it dies between its two steps), then waits to be killed holding the lock.
fn attach_and_hold(half_add: bool) {
    let prf = bf::PrfData::attach().expect("attach to the app's block");
    let guard = prf.lock_ctrs();
    if half_add {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(prf.path())
            .unwrap();
        let name: Vec<u8> = "half".encode_utf16().flat_map(u16::to_ne_bytes).collect();
        let slot = WORKERS.len() as u32;
        file.write_all_at(&name, worker_slot(slot, layout::SLOT_HEADER_SIZE))
            .unwrap();
        for (field, value) in [
            (slot::NAME_LEN, 4),
            (slot::GENERATION, 1),
            (slot::STATE, layout::SLOT_LIVE),
        ] {
            file.write_all_at(&value.to_ne_bytes(), worker_slot(slot, field))
                .unwrap();
        }
        // `pop_free` had taken the next never-used slot.
        let record = layout::HEADER_SIZE + layout::OBJECT_RECORD_SIZE;
        file.write_all_at(
            &(slot + 1).to_ne_bytes(),
            (record + layout::HIGH_WATER_OFFSET) as u64,
        )
        .unwrap();
    }
    say_ready();
    std::thread::sleep(Duration::from_secs(120));
    drop(guard);
}

/// Offset of field `field` of the worker object's slot `s`.
fn worker_slot(s: u32, field: usize) -> u64 {
    let map = &bf::MAP;
    let obj = &map.objects[1];
    (offsets::object_base(map, 1)
        + offsets::object_regions(obj).slots
        + s as usize * offsets::slot_size(obj)
        + field) as u64
}

/// Truncates, regrows and replaces the app's block [`ATTACKS`] times, restoring it after
/// each attack so that readers keep mapping it.
fn attacker() {
    let path = block_path(bf::MAP.app);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let image = std::fs::read(&path).unwrap();
    let len = image.len() as u64;
    let saved = path.with_extension("saved");
    let copy = path.with_extension("copy");
    let _ = std::fs::remove_file(&saved);
    let _ = std::fs::remove_file(&copy);
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut pause = |max: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_micros(rng % max));
    };
    say_ready();
    for i in 0..ATTACKS {
        if i % 8 == 7 {
            // Replaced: another file renamed over the path, then the original put back.
            std::fs::hard_link(&path, &saved).unwrap();
            let mut other = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&copy)
                .unwrap();
            std::io::Write::write_all(&mut other, &image[..image.len() / 2]).unwrap();
            std::fs::rename(&copy, &path).unwrap();
            pause(300);
            std::fs::rename(&saved, &path).unwrap();
        } else {
            // Truncated (to nothing, into the header, into the records or the data), then
            // regrown and rewritten.
            let cut = [0, 100, len / 3, len / 2, len - 8][i as usize % 5];
            file.set_len(cut).unwrap();
            pause(300);
            file.set_len(len).unwrap();
            file.write_all_at(&image, 0).unwrap();
        }
        pause(200);
    }
}

/// An in-process collector collecting in a loop until the stop file appears (bounded), then
/// once more, printing what that last collection held.
fn collector_loop() {
    let stop = PathBuf::from(std::env::var_os(STOP).unwrap());
    let registry = FileRegistry::open(registry_path()).unwrap();
    let options = CollectorOptions {
        isolation: Isolation::InProcess,
        ..Default::default()
    };
    let mut collector = Collector::open(registry, options).unwrap();
    say_ready();
    let start = Instant::now();
    let mut collections = 0u64;
    while !stop.exists() && start.elapsed() < TEST_WAIT {
        collector.collect("Global");
        collections += 1;
    }
    let last = decode(&collector.collect("Global")).unwrap();
    println!(
        "collections {collections} workers {} disabled {}",
        workers(&last).len(),
        collector.disabled().len()
    );
}

/// The registry, from `PRFDATA_REGISTRY` (set by [`serial`], inherited by children).
fn registry_path() -> PathBuf {
    PathBuf::from(std::env::var_os("PRFDATA_REGISTRY").unwrap())
}

fn options(isolation: Isolation) -> CollectorOptions {
    CollectorOptions {
        isolation,
        host_exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_prfmon"))),
        ..Default::default()
    }
}

fn names() -> Names {
    Names::load(&FileRegistry::open(registry_path()).unwrap(), "009").unwrap()
}

/// The worker instance names in a collection, sorted (empty if the app's worker object is not
/// there; a repair after a writer died may change the order of the live list).
fn workers(snap: &DataSnapshot) -> Vec<String> {
    let index = names().index_of("BF Worker").expect("BF Worker is named");
    let mut names: Vec<String> = snap
        .objects
        .iter()
        .find(|o| o.name_index == index)
        .map(|o| o.instances().map(|i| i.name()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Whether the registry says the service is disabled.
fn disabled_in_registry(service: &str) -> bool {
    let registry = FileRegistry::open(&setup().registry).unwrap();
    let hive = prfdata_registry::Registry::snapshot(&registry).unwrap();
    prfdata_registry::service::services_in(&hive)
        .unwrap()
        .iter()
        .any(|s| s.name == service && s.disabled)
}

/// Undoes what a failed run may have written.
fn enable_all() {
    let registry = FileRegistry::open(&setup().registry).unwrap();
    for service in [bf::MAP.app, fifo_app::MAP.app] {
        prfdata_registry::update(&registry, |hive| {
            hive.delete_value(
                &prfdata_registry::paths::performance(service),
                prfdata_registry::service::DISABLE,
            )
        })
        .ok();
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(libc::SIGBUS) => "killed by SIGBUS".to_owned(),
        Some(sig) => format!("killed by signal {sig}"),
        None => format!("exit code {:?}", status.code()),
    }
}

#[test]
fn truncating_or_replacing_a_block_never_kills_an_in_process_collector() {
    let _s = serial();
    enable_all();
    let _app = spawn("app", &[], true);
    let stop = setup().shm.join("stop-collector");
    let _ = std::fs::remove_file(&stop);
    let stop_str = stop.to_str().unwrap();
    let mut collector = spawn("collector", &[(STOP, stop_str)], true);
    let mut attacker = spawn("attacker", &[], false);
    let attacked = attacker.wait();
    std::fs::write(&stop, b"").unwrap();
    let status = collector.wait();
    assert!(
        attacked.success(),
        "the attacker ran: {}",
        describe(attacked)
    );
    assert!(
        status.success(),
        "the in-process collector survived {ATTACKS} truncations and replacements: {}",
        describe(status)
    );
    let mut out = String::new();
    std::io::Read::read_to_string(collector.0.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(
        out.contains("workers 3 disabled 0"),
        "once the block is whole again its data comes back, nothing disabled: {out}"
    );
}

#[test]
fn truncating_or_replacing_a_block_never_disables_a_provider_in_a_host() {
    let _s = serial();
    enable_all();
    let _app = spawn("app", &[], true);
    let registry = FileRegistry::open(&setup().registry).unwrap();
    let mut collector = Collector::open(registry, options(Isolation::HostProcess)).unwrap();
    let mut attacker = spawn("attacker", &[], true);
    let mut collections = 0;
    let start = Instant::now();
    while attacker.0.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < TEST_WAIT, "the attacker did not finish");
        collector.collect("Global");
        collections += 1;
    }
    assert!(attacker.wait().success());
    assert_eq!(
        collector.disabled(),
        [],
        "no provider disabled after {collections} collections under attack"
    );
    let last = decode(&collector.collect("Global")).unwrap();
    assert_eq!(workers(&last), WORKERS, "the app's data comes back");
    assert!(!disabled_in_registry(bf::MAP.app));
}

/// A FIFO at a path, removed when dropped (also when a test fails: later tests must not find
/// it).
struct Fifo(PathBuf);

impl Fifo {
    fn new(path: PathBuf) -> Fifo {
        let _ = std::fs::remove_file(&path);
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(rc, 0, "mkfifo {}", path.display());
        Fifo(path)
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn a_fifo_blocks_nothing(isolation: Isolation) {
    let _s = serial();
    enable_all();
    let _fifo = Fifo::new(block_path(fifo_app::MAP.app));
    let _app = spawn("app", &[], true);
    // Bounded: without the fix an in-process collection never returns, and a host one waits
    // for the service's Collect Timeout and then disables the provider.
    let (disabled, got) = bounded(Duration::from_secs(60), move || {
        let registry = FileRegistry::open(&setup().registry).unwrap();
        let mut collector = Collector::open(registry, options(isolation)).unwrap();
        let snap = decode(&collector.collect("Global")).unwrap();
        (collector.disabled().to_vec(), workers(&snap))
    });
    assert_eq!(disabled, [], "{isolation:?}: nothing disabled");
    assert_eq!(got, WORKERS, "{isolation:?}: the other app's data is there");
    assert!(!disabled_in_registry(fifo_app::MAP.app));
    assert!(!disabled_in_registry(bf::MAP.app));
}

#[test]
fn a_fifo_at_a_block_path_blocks_no_in_process_collection() {
    a_fifo_blocks_nothing(Isolation::InProcess);
}

#[test]
fn a_fifo_at_a_block_path_blocks_no_host_and_disables_nothing() {
    a_fifo_blocks_nothing(Isolation::HostProcess);
}

/// The owner alive, another process of the app killed holding its lock (and, with
/// `half_add`, in the middle of adding an instance): the next collection recovers the lock and
/// returns the app's data, without any writer coming along.
fn a_dead_holder_is_recovered_by_readers(isolation: Isolation, half_add: bool) {
    let _s = serial();
    enable_all();
    let _app = spawn("app", &[], true);
    let role = if half_add {
        "attach-half-add"
    } else {
        "attach-lock"
    };
    let holder = spawn(role, &[], true);
    let registry = FileRegistry::open(&setup().registry).unwrap();
    let mut collector = Collector::open(registry, options(isolation)).unwrap();
    let held = decode(&collector.collect("Global")).unwrap();
    assert_eq!(
        workers(&held),
        [""; 0],
        "busy while a live process holds the lock"
    );
    holder.kill();
    let start = Instant::now();
    let snap = decode(&collector.collect("Global")).unwrap();
    let took = start.elapsed();
    let mut expected = WORKERS.to_vec();
    if half_add {
        expected.push("half");
    }
    expected.sort();
    assert_eq!(
        workers(&snap),
        expected,
        "{isolation:?}: the first collection after the holder died has the app's data"
    );
    eprintln!("{isolation:?}, half add {half_add}: recovered in {took:?}");
    assert_eq!(collector.disabled(), []);
}

#[test]
fn a_process_killed_holding_the_lock_is_recovered_by_an_in_process_reader() {
    a_dead_holder_is_recovered_by_readers(Isolation::InProcess, false);
}

#[test]
fn a_process_killed_holding_the_lock_is_recovered_by_a_provider_host() {
    a_dead_holder_is_recovered_by_readers(Isolation::HostProcess, false);
}

#[test]
fn a_process_killed_halfway_through_an_add_is_repaired_by_readers() {
    a_dead_holder_is_recovered_by_readers(Isolation::InProcess, true);
    a_dead_holder_is_recovered_by_readers(Isolation::HostProcess, true);
}

#[test]
fn a_lone_surrogate_in_an_instance_name_disables_nothing() {
    let _s = serial();
    enable_all();
    let _app = spawn("app", &[], true);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(block_path(bf::MAP.app))
        .unwrap();
    // w1's first unit becomes a lone high surrogate, w2's last a lone low one.
    file.write_all_at(
        &0xD800u16.to_ne_bytes(),
        worker_slot(1, layout::SLOT_HEADER_SIZE),
    )
    .unwrap();
    file.write_all_at(
        &0xDC00u16.to_ne_bytes(),
        worker_slot(2, layout::SLOT_HEADER_SIZE + 2),
    )
    .unwrap();
    for isolation in [Isolation::InProcess, Isolation::HostProcess] {
        let registry = FileRegistry::open(&setup().registry).unwrap();
        let mut collector = Collector::open(registry, options(isolation)).unwrap();
        let snap = decode(&collector.collect("Global")).unwrap();
        assert_eq!(collector.disabled(), [], "{isolation:?}");
        assert_eq!(
            workers(&snap),
            ["w0", "w\u{FFFD}", "\u{FFFD}1"],
            "{isolation:?}: lone surrogates are served as U+FFFD"
        );
    }
    assert!(!disabled_in_registry(bf::MAP.app));
}

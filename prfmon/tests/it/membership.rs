//! Who is a member of a block and who is alive, proven by the locks every process of the app
//! holds on the block rather than by what the block says, with real processes, the real
//! provider and the real `prfmon`:
//!
//! - a members table zeroed under a running app (any same-user process can write the block)
//!   does not make the next member that leaves remove the block of a live master;
//! - a collector in a pid namespace of its own (a sidecar container sharing the block folder)
//!   shows every live worker's instance, hides a killed one's and keeps its count in `_Total`;
//! - a writer in a pid namespace of its own reclaims no live worker's instance of another
//!   namespace (and still reclaims a killed one's);
//! - a locker or a collector in a pid namespace of its own never takes the block's lock from
//!   a live holder of another namespace.

use crate::common::{finish, Run, PRFMON, TEST_WAIT};
use crate::prfdata_app::{self, Installed};

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use prfdata::layout::{MAX_MEMBERS, MEMBER_ENTRY_SIZE, OPTEX_OFFSET};
use prfdata_testkit::{in_new_pid_namespace, ready, self_command, wait_until, ChildGuard};

prfdata::prfdata_map! {
    /// An app of a master and worker processes, each worker owning its instance.
    pub mod mb {
        app: "MembershipTest",
        object POOL {
            name: "MB Pool", help: name,
            counters { TICKS: LargeRawCount { name: "MB Ticks", help: name } }
        }
        object WORKER {
            name: "MB Worker", help: name, instances: { max: 16, name_len: 16 }, total: true,
            counters { DONE: LargeRawCount { name: "MB Done", help: name, aggregate: sum } }
        }
    }
}

/// The role a re-executed test binary plays.
const ROLE: &str = "MEMBERSHIP_ROLE";
/// The folder for its ready and stop files.
const FILES: &str = "MEMBERSHIP_FILES";
/// A worker's instance name.
const NAME: &str = "MEMBERSHIP_NAME";
/// What each worker counts into its instance.
const DONE: i64 = 5;
/// What a locker child waits for the block's lock.
const LOCK_TRY: Duration = Duration::from_millis(300);
/// What a child prints before what it reports (libtest may print on the same line first).
const MARK: &str = "@@";

fn installed() -> Installed {
    prfdata_app::install(&mb::MAP)
}

/// The roles, chosen by [`ROLE`].
#[test]
#[ignore = "entry point for child processes"]
fn member_entry() {
    let Some(role) = std::env::var_os(ROLE) else {
        return;
    };
    let files = PathBuf::from(std::env::var_os(FILES).expect("MEMBERSHIP_FILES"));
    let name = std::env::var(NAME).unwrap_or_default();
    let say = |what: &str| {
        ready::publish(&files.join(what), std::process::id().to_string().as_bytes()).unwrap()
    };
    let until = |what: &str| ready::wait(&files.join(what), TEST_WAIT);
    match role.to_str().unwrap() {
        // Activates, then counts a tick every 5 ms until killed.
        "master" => {
            let prf = mb::PrfData::activate().expect("activate");
            prf.get_ctr64(mb::TICKS, ()).fetch_add(1, Relaxed);
            say("master.ready");
            loop {
                std::thread::sleep(Duration::from_millis(5));
                prf.get_ctr64(mb::TICKS, ()).fetch_add(1, Relaxed);
            }
        }
        // Attaches, adds its own instance and counts DONE into it; leaves (drops its handle)
        // when its stop file appears.
        "worker" => {
            let prf = attach();
            let me = prf
                .add_instance(
                    mb::WORKER,
                    prfdata::InstanceSpec::named(&name).process_owned(),
                )
                .expect("add");
            prf.get_ctr64(mb::DONE, me).fetch_add(DONE, Relaxed);
            say(&format!("{name}.ready"));
            until(&format!("{name}.stop"));
        }
        // Attaches, takes the lock and holds it (a write section open) until its stop file
        // appears.
        "holder" => {
            let prf = attach();
            let guard = prf.lock_ctrs();
            say("holder.ready");
            until("holder.stop");
            drop(guard);
        }
        // Attaches, reclaims the instances of dead owners, adds and removes instances, and
        // reports what it reclaimed and which instances it sees.
        "writer" => {
            let prf = attach();
            let reclaimed = prf.instances().reclaim_dead().expect("reclaim");
            let plain = prf.add_instance(mb::WORKER, "plain").expect("add");
            prf.remove_instance(plain).expect("remove");
            let owned = prf
                .add_instance(
                    mb::WORKER,
                    prfdata::InstanceSpec::named("owned").process_owned(),
                )
                .expect("add");
            prf.remove_instance(owned).expect("remove");
            let mut seen: Vec<String> = prf
                .instances()
                .list(mb::WORKER)
                .unwrap()
                .into_iter()
                .filter_map(|i| prf.instances().name(i))
                .collect();
            seen.sort();
            println!("{MARK}reclaimed {reclaimed} seen {}", seen.join(","));
        }
        // Attaches, says so, waits for its go file, then tries the lock for LOCK_TRY.
        "locker" => {
            let prf = match mb::PrfData::attach() {
                Ok(prf) => prf,
                Err(e @ prfdata::Error::LockStalled { .. }) => {
                    println!("{MARK}stalled {e}");
                    return;
                }
                Err(e) => panic!("attach: {e}"),
            };
            say("locker.ready");
            until("locker.go");
            match prf.lock_ctrs_for(LOCK_TRY) {
                Ok(guard) => println!("{MARK}locked owner_died={}", guard.owner_died()),
                Err(e) => println!("{MARK}timeout {e}"),
            };
        }
        other => panic!("unknown role {other}"),
    }
}

/// Attaches, waiting (bounded) for the master to publish.
fn attach() -> mb::PrfData {
    wait_until(TEST_WAIT, "the master's block", || {
        mb::PrfData::attach().ok()
    })
}

/// A child of `installed` playing `role` (with [`NAME`] `name`), its files in the sandbox.
fn role(installed: &Installed, role: &str, name: &str) -> Command {
    let mut command = self_command(&prfdata_testkit::test_path!("member_entry"));
    installed
        .apply_env(&mut command)
        .env(ROLE, role)
        .env(FILES, installed.dir.path())
        .env(NAME, name)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command
}

/// Starts `role` and waits (bounded) for its ready file; the child is stopped when the guard
/// drops.
fn start(installed: &Installed, what: &str, name: &str, ready_as: &str) -> (ChildGuard, u32) {
    let child = role(installed, what, name)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn a child");
    let guard = ChildGuard::new(child, format!("the {what} {name}"));
    let pid = ready::wait(&installed.dir.path().join(ready_as), TEST_WAIT);
    let pid = String::from_utf8(pid).unwrap().parse().unwrap();
    (guard, pid)
}

/// The workers of most tests here, and the master with them.
const THREE: [&str; 3] = ["w0", "w1", "w2"];

/// The master and `names.len()` workers, each with its instance.
fn app(installed: &Installed, names: &[&str]) -> (ChildGuard, Vec<(ChildGuard, u32)>) {
    let (master, _) = start(installed, "master", "", "master.ready");
    let workers = names
        .iter()
        .map(|n| start(installed, "worker", n, &format!("{n}.ready")))
        .collect();
    (master, workers)
}

/// Kills a child with SIGKILL and reaps it (no drop, no exit handler: as the OOM killer does).
fn kill(mut guard: ChildGuard) {
    guard.child().kill().unwrap();
    guard.child().wait().unwrap();
}

/// Runs `command` to its end (bounded) and returns what it reported after [`MARK`].
fn report(mut command: Command) -> String {
    let run = finish(command.stdout(Stdio::piped()).spawn().expect("spawn"));
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    run.stdout
        .lines()
        .find_map(|l| l.split_once(MARK).map(|(_, said)| said.to_string()))
        .unwrap_or_else(|| panic!("nothing reported: {}", run.stdout))
}

/// `prfmon query OBJECT --json` against `installed`, in this pid namespace or (`own`) one of
/// its own: each instance's name and first value (the object's single value without
/// instances, named "").
fn query(installed: &Installed, object: &str, own_namespace: bool) -> BTreeMap<String, i64> {
    let run = prfmon_query(installed, object, own_namespace);
    assert_eq!(run.code, 0, "prfmon query {object}: {}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let object = &json["objects"][0];
    match object["instances"].as_array() {
        Some(instances) => instances
            .iter()
            .map(|i| {
                let name = i["name"].as_str().unwrap().to_string();
                (name, i["values"][0].as_i64().unwrap())
            })
            .collect(),
        None => [(String::new(), object["values"][0].as_i64().unwrap())].into(),
    }
}

/// `prfmon query OBJECT --json` against `installed`, here or in a pid namespace of its own.
fn prfmon_query(installed: &Installed, object: &str, own_namespace: bool) -> Run {
    let mut command = Command::new(PRFMON);
    installed
        .apply_env(&mut command)
        .args(["query", object, "--json"]);
    if own_namespace {
        command = in_new_pid_namespace(&command);
    }
    finish(
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn prfmon"),
    )
}

/// The workers' instances and `_Total` as `query` gives them, for `names` each with [`DONE`]
/// and a `_Total` of `total`.
fn expected(names: &[&str], total: i64) -> BTreeMap<String, i64> {
    names
        .iter()
        .map(|n| (n.to_string(), DONE))
        .chain([("_Total".to_string(), total)])
        .collect()
}

/// The block's path.
fn block(installed: &Installed) -> PathBuf {
    installed.shm.join("MembershipTest.blk")
}

/// Every byte of the block's members table set to zero, through the file, as any process of
/// the app's user could.
fn zero_members_table(path: &Path) {
    let at = prfdata::map::offsets::members_offset(&mb::MAP);
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let zeros = vec![0u8; MAX_MEMBERS as usize * MEMBER_ENTRY_SIZE];
    file.write_all_at(&zeros, at as u64).unwrap();
}

/// The pid in the block's lock word (0: free), read from the file.
fn lock_holder(path: &Path) -> u32 {
    let mut word = [0u8; 4];
    std::fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut word, OPTEX_OFFSET as u64)
        .unwrap();
    u32::from_le_bytes(word) & ((1 << 30) - 1)
}

/// Waits (bounded) for a child to exit on its own, successfully.
fn exits(mut guard: ChildGuard) {
    let start = Instant::now();
    loop {
        if let Some(status) = guard.child().try_wait().unwrap() {
            assert!(status.success(), "{status}");
            return;
        }
        assert!(start.elapsed() < TEST_WAIT, "the child did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A member leaving a block whose members table was zeroed (one stray write) must not take
/// itself for the last one and remove the block of a master that still runs: the master keeps
/// publishing, the block and its watch table stay, and the collector keeps seeing the data.
#[test]
fn a_zeroed_members_table_does_not_let_a_leaving_member_remove_a_live_block() {
    let installed = installed();
    let (_master, mut workers) = app(&installed, &["w0"]);
    let path = block(&installed);
    zero_members_table(&path);
    let (worker, _) = workers.remove(0);
    std::fs::write(installed.dir.path().join("w0.stop"), b"").unwrap();
    exits(worker);
    assert!(path.exists(), "the master's block is still there");
    assert!(
        installed.shm.join("MembershipTest.watch").exists(),
        "and its watch table"
    );
    let first = query(&installed, "MB Pool", false)[""];
    std::thread::sleep(Duration::from_millis(100));
    let later = query(&installed, "MB Pool", false)[""];
    assert!(
        later > first,
        "the collector sees the master publishing: {first} then {later}"
    );
}

/// A collector in a pid namespace of its own (a sidecar container) shows every live worker of
/// the app; a worker killed with SIGKILL is hidden there as here, and its count stays in
/// `_Total`.
#[test]
fn a_collector_in_its_own_pid_namespace_shows_every_live_worker() {
    let installed = installed();
    let (_master, mut workers) = app(&installed, &THREE);
    assert_eq!(
        query(&installed, "MB Worker", true),
        expected(&THREE, 3 * DONE),
        "the collector in its own pid namespace shows the live workers"
    );
    let (w1, _) = workers.remove(1);
    kill(w1);
    for own_namespace in [false, true] {
        assert_eq!(
            query(&installed, "MB Worker", own_namespace),
            expected(&["w0", "w2"], 3 * DONE),
            "the killed worker is hidden, its count kept (own namespace: {own_namespace})"
        );
    }
}

/// A writer in a pid namespace of its own (it attaches, reclaims, adds and removes instances)
/// reclaims no instance of a live worker of another namespace, and still reclaims a killed
/// worker's, folding its count into `_Total`.
#[test]
fn a_writer_in_its_own_pid_namespace_reclaims_only_dead_workers() {
    let installed = installed();
    let (_master, mut workers) = app(&installed, &THREE);
    let writer = || in_new_pid_namespace(&role(&installed, "writer", ""));
    assert_eq!(report(writer()), "reclaimed 0 seen w0,w1,w2");
    assert_eq!(
        query(&installed, "MB Worker", false),
        expected(&THREE, 3 * DONE)
    );
    let (w2, _) = workers.remove(2);
    kill(w2);
    assert_eq!(report(writer()), "reclaimed 1 seen w0,w1");
    assert_eq!(
        query(&installed, "MB Worker", false),
        expected(&["w0", "w1"], 3 * DONE)
    );
}

/// A process in a pid namespace of its own never takes the block's lock from a live holder of
/// another namespace: not when it attaches (it gives up, naming the holder), not with
/// `lock_ctrs_for`, and not as a collector that finds the block stuck mid-update; once the
/// holder lets go, the lock is its to take.
#[test]
fn a_process_in_its_own_pid_namespace_never_takes_a_live_holders_lock() {
    let installed = installed();
    let (_master, _workers) = app(&installed, &[]);
    let path = block(&installed);
    let files = installed.dir.path();

    // Attached before the lock is taken: `lock_ctrs_for` times out.
    let locker = start_locker(&installed);
    let (holder, holder_pid) = start(&installed, "holder", "", "holder.ready");
    std::fs::write(files.join("locker.go"), b"").unwrap();
    let said = output(locker);
    assert!(said.starts_with("timeout"), "the locker: {said}");
    assert_eq!(lock_holder(&path), holder_pid, "the holder still holds it");

    // Attaching meanwhile: gives up, naming the holder's pid as this namespace numbers it.
    let said = report(in_new_pid_namespace(&role(&installed, "locker", "")));
    assert!(said.starts_with("stalled"), "attach: {said}");
    assert_eq!(lock_holder(&path), holder_pid, "the holder still holds it");

    // A collector that finds the block mid-update (the holder's write section is open): no
    // data from the app (busy), and the lock left to its holder.
    let run = prfmon_query(&installed, "MB Pool", true);
    assert!(run.stderr.contains("busy"), "{}", run.stderr);
    assert_eq!(
        lock_holder(&path),
        holder_pid,
        "the collector in its own namespace did not take the lock over"
    );

    std::fs::write(files.join("holder.stop"), b"").unwrap();
    exits(holder);
    let locker = start_locker(&installed);
    std::fs::write(files.join("locker.go"), b"").unwrap();
    assert_eq!(output(locker), "locked owner_died=false");
}

/// A locker child in a pid namespace of its own, attached (its ready file seen), waiting for
/// its go file.
fn start_locker(installed: &Installed) -> ChildGuard {
    let files = installed.dir.path();
    for old in ["locker.ready", "locker.go"] {
        let _ = std::fs::remove_file(files.join(old));
    }
    let child = in_new_pid_namespace(&role(installed, "locker", ""))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the locker");
    let locker = ChildGuard::new(child, "the locker");
    ready::wait(&files.join("locker.ready"), TEST_WAIT);
    locker
}

/// What a child started with a piped stdout reported after [`MARK`], once it exited
/// (bounded).
fn output(mut guard: ChildGuard) -> String {
    let mut stdout = guard.child().stdout.take().expect("a piped stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    exits(guard);
    let text = reader.join().unwrap();
    text.lines()
        .find_map(|l| l.split_once(MARK).map(|(_, said)| said.to_string()))
        .unwrap_or_else(|| panic!("nothing reported: {text}"))
}

//! The owner is not special: every process of the app is a member of its block, the
//! block outlives the process that activated it, the last member out removes it and its
//! companions, a restarted master joins or adopts it and the counters continue, and a process
//! killed while holding the block's lock never blocks the others. Real processes throughout.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc;
use std::time::Duration;

use prfdata::dynamic::{CounterSpec, ObjectSpec};
use prfdata::reader::BlockReader;
use prfdata::{Error, ProcessId};
use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;

use super::common;
use super::owned::owned_map;
use common::testmap::{self, PrfData};

const BLOCK: &str = "PrfDataTest.blk";
const WATCH: &str = "PrfDataTest.watch";
const DYN: &str = "PrfDataTest.dyn.blk";
/// What a child prints when it reaches a step; the parent looks for it (libtest may print on
/// the same line first).
const MARK: &str = "@@";

/// Child roles, chosen by `PRFDATA_TEST_ROLE`.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    let Some(role) = common::role() else { return };
    let dir = common::child_dir();
    match role.as_str() {
        // Activates, counts 10, and exits normally (no drop) once stdin closes.
        "activate-then-exit" => {
            let prf = PrfData::activate_in(&dir).expect("activate");
            prf.get_ctr64(testmap::HITS, ()).fetch_add(10, Relaxed);
            say("ready".into());
            wait_stdin();
            std::mem::forget(prf);
            std::process::exit(0);
        }
        // Activates, counts 10 and adds an instance, then waits to be killed.
        "activate-then-hang" => {
            let prf = PrfData::activate_in(&dir).expect("activate");
            prf.get_ctr64(testmap::HITS, ()).fetch_add(10, Relaxed);
            prf.add_instance(testmap::ITEMS, "left behind")
                .expect("add");
            say("ready".into());
            std::thread::sleep(Duration::from_secs(60));
            panic!("the parent should have killed this child");
        }
        // Attaches, counts 5, and drops its handle once stdin closes.
        "attach" => {
            let prf = PrfData::attach_in(&dir).expect("attach");
            prf.get_ctr64(testmap::HITS, ()).fetch_add(5, Relaxed);
            say("ready".into());
            wait_stdin();
        }
        // Activates the owned map, adds a process-owned worker (7 done) and an instance no
        // process owns (5), then waits to be killed.
        "owned-master" => {
            let prf = owned_map::PrfData::activate_in(&dir).expect("activate");
            let me = prf
                .add_instance(
                    owned_map::WORKERS,
                    prfdata::InstanceSpec::named("master").process_owned(),
                )
                .expect("add");
            prf.get_ctr32(owned_map::DONE, me).fetch_add(7, Relaxed);
            let pool = prf.add_instance(owned_map::PLAIN, "pool").expect("add");
            prf.get_ctr32(owned_map::N, pool).fetch_add(5, Relaxed);
            say("ready".into());
            std::thread::sleep(Duration::from_secs(60));
            panic!("the parent should have killed this child");
        }
        // Adds and removes instances in a loop, counting each turn, `TURNS` times.
        "churn" => {
            let turns: u64 = std::env::var("TURNS").unwrap().parse().unwrap();
            let prf = PrfData::attach_in(&dir).expect("attach");
            let name = format!("churn {}", std::process::id());
            for _ in 0..turns {
                let item = prf.add_instance(testmap::ITEMS, &name).expect("add");
                prf.get_ctr64(testmap::ITEM_HITS, item)
                    .fetch_add(1, Relaxed);
                prf.get_ctr64(testmap::HITS, ()).fetch_add(1, Relaxed);
                prf.remove_instance(item).expect("remove");
            }
            say(format!("done {turns}"));
        }
        // Churns `TURNS` times, then takes the lock, adds an instance inside its write section
        // and says so, holding it until killed.
        "victim" => {
            let turns: u64 = std::env::var("TURNS").unwrap().parse().unwrap();
            let prf = PrfData::attach_in(&dir).expect("attach");
            let name = format!("victim {}", std::process::id());
            for _ in 0..turns {
                let item = prf.add_instance(testmap::ITEMS, &name).expect("add");
                prf.get_ctr64(testmap::HITS, ()).fetch_add(1, Relaxed);
                prf.remove_instance(item).expect("remove");
            }
            let guard = prf.lock_ctrs();
            prf.add_instance(testmap::ITEMS, &name).expect("add inside");
            say(format!("holding {turns}"));
            std::thread::sleep(Duration::from_secs(60));
            drop(guard);
            panic!("the parent should have killed this child");
        }
        "join-leave" => join_leave(&dir),
        "hold-until-told" => hold_until_told(&dir),
        other => panic!("unknown role {other}"),
    }
}

/// In a child: tells the parent it reached a step.
fn say(what: String) {
    println!("{MARK}{what}");
    std::io::stdout().flush().unwrap();
}

/// In a child: waits for a line on stdin (or its end).
fn wait_stdin() {
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

/// Role: attaches and leaves (drops its handle) `TURNS` times, then says so.
fn join_leave(dir: &Path) {
    let turns: u64 = std::env::var("TURNS").unwrap().parse().unwrap();
    for _ in 0..turns {
        let prf = PrfData::attach_in(dir).expect("attach");
        prf.get_ctr64(testmap::HITS, ()).fetch_add(1, Relaxed);
        drop(prf);
    }
    say(format!("done {turns}"));
}

/// Role: attaches, takes the lock (`lock_ctrs`) and says so; releases it when a line comes on
/// stdin and says so; exits when stdin closes.
fn hold_until_told(dir: &Path) {
    let prf = PrfData::attach_in(dir).expect("attach");
    let guard = prf.lock_ctrs();
    say("holding".into());
    wait_stdin();
    drop(guard);
    say("released".into());
    wait_stdin();
}

/// A child with a pipe to its stdin and its marked lines, in order; killed when dropped (a
/// test that fails leaves no child behind).
struct Proc {
    child: common::ChildProcess,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(role: &str, dir: &Path, env: &[(&str, String)]) -> Proc {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "lifecycle::child_entry",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(common::ROLE, role)
        .env("PRFDATA_SHM_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn a child");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some((_, said)) = line.split_once(MARK) {
                    if tx.send(said.to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        Proc {
            child: common::ChildProcess::new(child),
            stdin,
            lines,
        }
    }

    /// The next marked line, within 60 s.
    fn expect_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the child reports within 60 s")
    }

    /// Closes its stdin and waits (at most 60 s) for a successful exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        common::wait_ok(self.child, Duration::from_secs(60));
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// The pids the block's members table names, sorted.
fn members(path: &Path) -> Vec<u32> {
    let reader = BlockReader::open_path("PrfDataTest", path).expect("the block is readable");
    let mut pids: Vec<u32> = reader.members().unwrap().iter().map(|p| p.pid).collect();
    pids.sort_unstable();
    pids
}

fn sorted(mut pids: Vec<u32>) -> Vec<u32> {
    pids.sort_unstable();
    pids
}

#[test]
fn the_block_outlives_the_process_that_activated_it() {
    let dir = tempfile::tempdir().unwrap();
    let master = Proc::spawn("activate-then-exit", dir.path(), &[]);
    assert_eq!(master.expect_line(), "ready");
    let master_pid = master.child.id();
    let worker = PrfData::attach_in(dir.path()).unwrap();
    worker.get_ctr64(testmap::HITS, ()).fetch_add(1, Relaxed);
    assert_eq!(
        members(worker.path()),
        sorted(vec![master_pid, std::process::id()])
    );
    master.finish(); // a normal exit, without dropping its handle

    let path = dir.path().join(BLOCK);
    assert!(path.exists(), "the block stays while a member lives");
    assert!(dir.path().join(WATCH).exists(), "and its watch table");
    assert_eq!(members(&path), [std::process::id()], "the master left");
    let reader = BlockReader::open_path("PrfDataTest", &path).unwrap();
    let hits = reader
        .read_with(Duration::from_secs(5), |view| view.global_value(0, 0))
        .expect("readers still see it");
    assert_eq!(hits, 11);
    worker.get_ctr64(testmap::HITS, ()).fetch_add(1, Relaxed);
    assert_eq!(worker.get_ctr64(testmap::HITS, ()).load(Relaxed), 12);

    drop(worker);
    assert!(!path.exists(), "the last member out removes the block");
    assert!(!dir.path().join(WATCH).exists(), "and its watch table");
}

#[test]
fn the_last_member_out_removes_the_block_and_its_companions() {
    let dir = tempfile::tempdir().unwrap();
    let master = PrfData::activate_in(dir.path()).unwrap();
    let plugin = master
        .dynamic()
        .add_object(&ObjectSpec::new("Plugin", "p"))
        .unwrap();
    let ctr = master
        .dynamic()
        .add_counter(
            plugin,
            &CounterSpec::new("Loaded", "l", PERF_COUNTER_RAWCOUNT),
        )
        .unwrap();
    ctr.store(4).unwrap();
    let worker = Proc::spawn("attach", dir.path(), &[]);
    assert_eq!(worker.expect_line(), "ready");
    for name in [BLOCK, WATCH, DYN] {
        assert!(dir.path().join(name).exists(), "{name} is there");
    }
    drop(master);
    for name in [BLOCK, WATCH, DYN] {
        assert!(
            dir.path().join(name).exists(),
            "{name} stays while the worker is attached"
        );
    }
    worker.finish();
    for name in [BLOCK, WATCH, DYN] {
        assert!(
            !dir.path().join(name).exists(),
            "{name} went with the last member"
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing left behind: {left:?}");
}

#[test]
fn a_restarted_master_joins_the_live_block_and_counters_continue() {
    let dir = tempfile::tempdir().unwrap();
    let master = PrfData::activate_in(dir.path()).unwrap();
    master.get_ctr64(testmap::HITS, ()).fetch_add(3, Relaxed);
    let worker = Proc::spawn("attach", dir.path(), &[]);
    assert_eq!(worker.expect_line(), "ready");
    drop(master);
    let master = PrfData::activate_in(dir.path()).expect("joins the worker's block");
    assert_eq!(master.get_ctr64(testmap::HITS, ()).load(Relaxed), 8);
    assert_eq!(
        members(master.path()),
        sorted(vec![worker.child.id(), std::process::id()])
    );
    worker.finish();
    assert!(master.path().exists(), "the master is a member again");
    drop(master);
    assert!(!dir.path().join(BLOCK).exists());
}

#[test]
fn a_killed_last_member_is_adopted_and_totals_continue() {
    use owned_map::*;
    let dir = tempfile::tempdir().unwrap();
    let master = Proc::spawn("owned-master", dir.path(), &[]);
    assert_eq!(master.expect_line(), "ready");
    master.kill(); // SIGKILL: no drop, no atexit: the block is left with a dead member
    let path = dir.path().join("PrfDataOwned.blk");
    assert!(path.exists());

    let prf = PrfData::activate_in(dir.path()).expect("adopts the orphaned block");
    // The dead master's instances, owned or not, were folded into the retired share.
    assert!(prf.instances().list(WORKERS).unwrap().is_empty());
    assert!(prf.instances().list(PLAIN).unwrap().is_empty());
    let me = prf
        .add_instance(
            WORKERS,
            prfdata::InstanceSpec::named("master 2").process_owned(),
        )
        .unwrap();
    prf.get_ctr32(DONE, me).fetch_add(3, Relaxed);

    let reader = BlockReader::open_path("PrfDataOwned", &path).unwrap();
    let total = reader
        .read_with(Duration::from_secs(5), |view| {
            let table = view.instances(0)?;
            let last = table.get(table.len() - 1)?;
            let mut name = Vec::new();
            table.name_units(&last, &mut name)?;
            Ok((String::from_utf16_lossy(&name), table.value(&last, 0)?))
        })
        .unwrap();
    assert_eq!(total, ("_Total".to_string(), 10), "7 retired + 3 live");
    let members: Vec<u32> = reader.members().unwrap().iter().map(|p| p.pid).collect();
    assert_eq!(members, [std::process::id()]);
}

#[test]
fn a_full_members_table_refuses_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    // Fill the other 255 entries with a live process (this one), through the file.
    let me = ProcessId::current();
    let at = prfdata::map::offsets::members_offset(&testmap::MAP);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    for i in 1..prfdata::layout::MAX_MEMBERS as usize {
        let mut entry = [0u8; 16];
        entry[0..4].copy_from_slice(&me.pid.to_le_bytes());
        entry[8..16].copy_from_slice(&me.start_time.to_le_bytes());
        std::os::unix::fs::FileExt::write_all_at(&file, &entry, (at + i * 16) as u64).unwrap();
    }
    match PrfData::attach_in(dir.path()).unwrap_err() {
        Error::TooManyProcesses { max, .. } => assert_eq!(max, 256),
        other => panic!("expected TooManyProcesses, got {other}"),
    }
    match PrfData::activate_in(dir.path()).unwrap_err() {
        Error::TooManyProcesses { .. } => {}
        other => panic!("expected TooManyProcesses, got {other}"),
    }
}

/// A crash of any one process never blocks the others, tested with 8 processes.
/// Eight processes add and remove instances under the block's lock; four of them, one at a
/// time, are killed while holding it inside a write section; the other four finish, and the
/// block is consistent afterwards.
#[test]
fn eight_processes_survive_members_killed_while_holding_the_lock() {
    const CHURN_TURNS: u64 = 400;
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let churners: Vec<Proc> = (0..4)
        .map(|_| Proc::spawn("churn", dir.path(), &[("TURNS", CHURN_TURNS.to_string())]))
        .collect();
    let mut victims_turns = 0;
    let mut victims = Vec::new();
    for v in 0..4u64 {
        let victim = Proc::spawn("victim", dir.path(), &[("TURNS", (50 * v).to_string())]);
        let said = victim.expect_line();
        let turns: u64 = said
            .strip_prefix("holding ")
            .expect("holding <turns>")
            .parse()
            .unwrap();
        victims_turns += turns;
        victims.push(victim.child.id());
        victim.kill(); // holding the optex, inside its write section
    }
    for c in churners {
        assert_eq!(c.expect_line(), format!("done {CHURN_TURNS}"));
        c.finish();
    }
    assert_eq!(
        prf.get_ctr64(testmap::HITS, ()).load(Relaxed),
        (4 * CHURN_TURNS + victims_turns) as i64,
        "every completed turn counted once"
    );
    // The victims' last instances were added inside their sections: the repair keeps them
    // (their slots are live), and nothing else is left.
    let mut names: Vec<String> = prf
        .instances()
        .list(testmap::ITEMS)
        .unwrap()
        .into_iter()
        .map(|i| prf.instances().name(i).unwrap())
        .collect();
    names.sort();
    let mut expected: Vec<String> = victims.iter().map(|p| format!("victim {p}")).collect();
    expected.sort();
    assert_eq!(names, expected);
    let reader = BlockReader::open_path("PrfDataTest", prf.path()).unwrap();
    let mut snapshot = common::snapshot::Snapshot::default();
    common::snapshot::ReadAll::read(&reader, &mut snapshot).expect("a consistent read");
    assert_eq!(snapshot.objects[1].instances.len(), 4, "{snapshot:?}");
    // The lock is free and the block usable.
    let item = prf.add_instance(testmap::ITEMS, "after").unwrap();
    prf.remove_instance(item).unwrap();
    drop(
        prf.lock_ctrs_for(Duration::from_secs(5))
            .expect("the lock is free"),
    );
    // The dead members are pruned by the next join or leave.
    let late = PrfData::attach_in(dir.path()).unwrap();
    drop(late);
    assert_eq!(members(prf.path()), [std::process::id()]);
}

#[test]
fn an_adopted_block_keeps_its_global_counters_and_sheds_its_instances() {
    let dir = tempfile::tempdir().unwrap();
    let master = Proc::spawn("activate-then-hang", dir.path(), &[]);
    assert_eq!(master.expect_line(), "ready");
    master.kill();
    let prf = PrfData::activate_in(dir.path()).expect("adopts the orphaned block");
    assert_eq!(
        prf.get_ctr64(testmap::HITS, ()).load(Relaxed),
        10,
        "the count continues"
    );
    assert!(
        prf.instances().list(testmap::ITEMS).unwrap().is_empty(),
        "the dead master's instances are not this process's"
    );
    // Its instances can be added again by name, as a restarted app does.
    prf.add_instance(testmap::ITEMS, "left behind").unwrap();
}

/// Regression (found by the provider's random block mutations): a nonzero `closed` word made
/// the last member keep the block and every later activation retry until it gave up.
#[test]
fn a_scribbled_closed_word_neither_keeps_a_block_nor_blocks_activation() {
    use std::os::unix::fs::FileExt;
    let closed_at = std::mem::offset_of!(prfdata::layout::BlockHeader, closed) as u64;
    let scribble = |path: &Path| {
        let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.write_all_at(&7u32.to_le_bytes(), closed_at).unwrap();
    };
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    scribble(prf.path());
    drop(prf);
    assert!(
        !dir.path().join(BLOCK).exists(),
        "the last member removed it"
    );

    let master = Proc::spawn("activate-then-hang", dir.path(), &[]);
    assert_eq!(master.expect_line(), "ready");
    master.kill();
    scribble(&dir.path().join(BLOCK));
    let prf = PrfData::activate_in(dir.path()).expect("a closed block is not waited on");
    assert_eq!(members(prf.path()), [std::process::id()]);
}

/// One stray write to the `closed` word of a live block (any process of the user can write
/// it) neither makes the next `activate` replace the block under its live member (which would
/// go on writing into an unlinked file no collector sees) nor makes readers drop it: the word
/// counts only when no other member holds the block's file lock.
#[test]
fn a_stray_closed_word_neither_replaces_a_live_block_nor_ends_its_reads() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let dir = tempfile::tempdir().unwrap();
    let master = Proc::spawn("activate-then-hang", dir.path(), &[]);
    assert_eq!(master.expect_line(), "ready");
    let path = dir.path().join(BLOCK);
    let inode = std::fs::metadata(&path).unwrap().ino();
    let reader = BlockReader::open_path("PrfDataTest", &path).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&7u32.to_le_bytes(), prfdata::layout::CLOSED_OFFSET as u64)
        .unwrap();
    assert!(!reader.has_ended(), "a live member holds the block");
    let mut snapshot = common::snapshot::Snapshot::default();
    common::snapshot::ReadAll::read(&reader, &mut snapshot).expect("the live block reads");

    let prf = PrfData::activate_in(dir.path()).expect("joins the live block");
    assert_eq!(
        std::fs::metadata(&path).unwrap().ino(),
        inode,
        "the same block, not a new one"
    );
    assert_eq!(
        members(&path),
        sorted(vec![master.child.id(), std::process::id()])
    );
    assert_eq!(
        prf.get_ctr64(testmap::HITS, ()).load(Relaxed),
        10,
        "the live member's count"
    );
    master.kill();
    drop(prf);
    assert!(!path.exists(), "the last member out removed it");
}

/// A reader that trusts a liveness finding for a while (`with_liveness_interval`, as the
/// provider's does) serves a killed app's frozen values only until the interval passes, while a
/// reader that asks at every read sees the kill at once; and the last member's normal exit
/// (its block marked closed) ends every reader's reads at once, whatever its interval.
#[test]
fn a_trusted_liveness_finding_lasts_its_interval_and_a_closed_block_ends_reads_at_once() {
    use prfdata::reader::ReadError;
    let dir = tempfile::tempdir().unwrap();
    let interval = Duration::from_millis(300);
    let hits = |r: &BlockReader| r.read_with(Duration::from_secs(5), |v| v.global_value(0, 0));

    let master = Proc::spawn("activate-then-hang", dir.path(), &[]);
    assert_eq!(master.expect_line(), "ready");
    let path = dir.path().join(BLOCK);
    let exact = BlockReader::open_path("PrfDataTest", &path).unwrap();
    let trusting = BlockReader::open_path("PrfDataTest", &path)
        .unwrap()
        .with_liveness_interval(interval);
    assert_eq!(hits(&exact).unwrap(), 10);
    let found_alive = std::time::Instant::now();
    assert_eq!(hits(&trusting).unwrap(), 10);
    master.kill();
    assert!(
        matches!(hits(&exact), Err(ReadError::OwnerGone)),
        "asked at every read: the kill is seen at once"
    );
    if found_alive.elapsed() < interval {
        assert_eq!(
            hits(&trusting).unwrap(),
            10,
            "within the interval the last finding stands"
        );
    }
    std::thread::sleep(interval.saturating_sub(found_alive.elapsed()));
    assert!(
        matches!(hits(&trusting), Err(ReadError::OwnerGone)),
        "past the interval the kernel is asked again"
    );

    // A clean exit: the last member out marks the block closed before it removes it.
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path("PrfDataTest", &path)
        .unwrap()
        .with_liveness_interval(Duration::from_secs(3600));
    assert!(hits(&reader).is_ok());
    drop(prf);
    assert!(
        matches!(hits(&reader), Err(ReadError::Replaced)),
        "a closed block ends the reads at once"
    );
}

/// A process that leaves a block (its handle dropped) while another live process holds the
/// block's lock and does not let go (here: a worker that took `lock_ctrs` and hangs) gives up
/// after a bound instead of hanging with it; it stays listed as a member, as a killed one would,
/// until the next process that joins or leaves prunes it. Found by the hostile-block proptest,
/// whose random writes can name a live process in the optex word.
#[test]
fn leaving_does_not_wait_forever_for_a_lock_another_live_process_holds() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let victim = Proc::spawn("victim", dir.path(), &[("TURNS", "0".into())]);
    assert_eq!(victim.expect_line(), "holding 0");
    let start = std::time::Instant::now();
    drop(prf);
    let took = start.elapsed();
    victim.kill();
    assert!(
        took < Duration::from_secs(20),
        "the drop waited {took:?} for a lock a live process holds for 60 s"
    );
}

/// Sends `signal` to a child.
fn signal(pid: u32, signal: i32) {
    // SAFETY: `kill` has no memory-safety preconditions; the pid is our own unreaped child.
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0, "kill {pid}");
}

/// `activate` and `attach` give up, with an error naming the holder, when a live process holds
/// the block's lock and does not progress (here: stopped with `SIGSTOP` inside `lock_ctrs`),
/// after their documented bound of one second (plus scheduling slack); once the holder runs on
/// and lets go, both work.
#[test]
fn activate_and_attach_give_up_on_a_stopped_lock_holder_and_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let master = PrfData::activate_in(dir.path()).unwrap();
    let mut holder = Proc::spawn("hold-until-told", dir.path(), &[]);
    assert_eq!(holder.expect_line(), "holding");
    let pid = holder.child.id();
    signal(pid, libc::SIGSTOP);
    // Resumes the holder however the test ends (it exits when its stdin closes).
    struct Resume(u32);
    impl Drop for Resume {
        fn drop(&mut self) {
            signal(self.0, libc::SIGCONT);
        }
    }
    let resume = Resume(pid);
    let bound = Duration::from_secs(1); // `activate`'s and `attach`'s documented bound
    let slack = Duration::from_secs(10);
    for (what, join) in [
        (
            "attach",
            PrfData::attach_in as fn(&Path) -> Result<PrfData, Error>,
        ),
        ("activate", PrfData::activate_in),
    ] {
        let path = dir.path().to_path_buf();
        let started = std::time::Instant::now();
        let outcome = common::bounded(bound + slack, what, move || {
            join(&path).map(drop).map_err(|e| e.to_string())
        });
        let took = started.elapsed();
        let Err(message) = outcome else {
            panic!("{what} succeeded while process {pid} holds the lock, stopped");
        };
        assert!(
            message.contains(&pid.to_string()) && message.contains("stopped"),
            "{what}: {message}"
        );
        assert!(
            took >= bound,
            "{what} gave up after {took:?}, before its bound {bound:?}"
        );
        match join(dir.path()) {
            Err(Error::LockStalled { pid: named, .. }) => assert_eq!(named, pid),
            other => panic!("{what}: expected Error::LockStalled, got {other:?}"),
        }
    }
    drop(resume);
    writeln!(holder.stdin.as_mut().unwrap()).unwrap();
    assert_eq!(holder.expect_line(), "released");
    let worker = PrfData::attach_in(dir.path()).expect("attach once the holder let go");
    let again = PrfData::activate_in(dir.path()).expect("activate once the holder let go");
    drop((worker, again));
    holder.finish();
    drop(master);
    assert!(!dir.path().join(BLOCK).exists());
}

/// Members joining and leaving at once, over a members table zeroed first: none takes itself
/// for the last one while the master holds the block (it is the same file all along), every
/// join is counted, and the master, the last member out, removes it.
#[test]
fn members_joining_and_leaving_at_once_never_remove_a_held_block() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    const TURNS: u64 = 150;
    let dir = tempfile::tempdir().unwrap();
    let master = PrfData::activate_in(dir.path()).unwrap();
    let path = master.path().to_path_buf();
    let inode = std::fs::metadata(&path).unwrap().ino();
    let at = prfdata::map::offsets::members_offset(&testmap::MAP);
    let table =
        vec![0u8; prfdata::layout::MAX_MEMBERS as usize * prfdata::layout::MEMBER_ENTRY_SIZE];
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&table, at as u64).unwrap();
    let churners: Vec<Proc> = (0..4)
        .map(|_| Proc::spawn("join-leave", dir.path(), &[("TURNS", TURNS.to_string())]))
        .collect();
    let (tx, done) = mpsc::channel();
    let watched = path.clone();
    let watcher = std::thread::spawn(move || {
        let mut looks = 0u64;
        while done.try_recv().is_err() {
            let same = std::fs::metadata(&watched).is_ok_and(|m| m.ino() == inode);
            assert!(
                same,
                "the block was removed or replaced while the master held it"
            );
            looks += 1;
            std::thread::sleep(Duration::from_micros(200));
        }
        looks
    });
    for c in churners {
        assert_eq!(c.expect_line(), format!("done {TURNS}"));
        c.finish();
    }
    tx.send(()).unwrap();
    assert!(watcher.join().expect("the block stayed") > 0);
    assert_eq!(
        master.get_ctr64(testmap::HITS, ()).load(Relaxed),
        4 * TURNS as i64
    );
    // The churners left the table (the master's own entry went with the zeroing: the table
    // is a list, not a proof).
    assert_eq!(members(&path), Vec::<u32>::new());
    drop(master);
    assert!(!path.exists(), "the last member out removed it");
}

/// The last two members leave at the same moment: one of them removes the block (flock(2)
/// serialises their tries: the second to try finds the first's lock gone), never neither.
#[test]
fn the_last_two_members_leaving_at_once_remove_the_block() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let master = PrfData::activate_in(dir.path()).unwrap();
        let path = master.path().to_path_buf();
        let a = Proc::spawn("attach", dir.path(), &[]);
        let b = Proc::spawn("attach", dir.path(), &[]);
        assert_eq!(
            (a.expect_line(), b.expect_line()),
            ("ready".into(), "ready".into())
        );
        drop(master);
        let (a_done, b_done) = (
            std::thread::spawn(move || a.finish()),
            std::thread::spawn(move || b.finish()),
        );
        a_done.join().unwrap();
        b_done.join().unwrap();
        assert!(!path.exists(), "one of the last two removed the block");
        assert!(!dir.path().join(WATCH).exists(), "and its watch table");
    }
}

/// `close` says what leaving did: the block left to another live process (here a worker in a
/// child process), removed by its last member, or abandoned when another process holds its
/// lock past the leaving bound (a child stopped inside `lock_ctrs`).
#[test]
fn close_reports_whether_this_process_removed_the_block() {
    use prfdata::Departure;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(BLOCK);
    let master = PrfData::activate_in(dir.path()).unwrap();
    let worker = Proc::spawn("attach", dir.path(), &[]);
    assert_eq!(worker.expect_line(), "ready");
    assert_eq!(master.close(), Departure::StillHeld { members: 1 });
    assert!(path.exists(), "the worker keeps the block published");
    assert_eq!(members(&path), [worker.child.id()], "the master left");
    worker.finish();
    assert!(!path.exists(), "the worker, last out, removed it");

    let master = PrfData::activate_in(dir.path()).unwrap();
    assert!(path.exists());
    assert_eq!(master.close(), Departure::Removed);
    assert!(!path.exists() && !dir.path().join(WATCH).exists());

    let master = PrfData::activate_in(dir.path()).unwrap();
    let victim = Proc::spawn("victim", dir.path(), &[("TURNS", "0".into())]);
    assert_eq!(victim.expect_line(), "holding 0");
    let departure = master.close();
    victim.kill();
    match departure {
        Departure::Abandoned { reason } => {
            assert!(reason.contains("held the block's lock"), "{reason}")
        }
        other => panic!("expected Abandoned, got {other:?}"),
    }
}

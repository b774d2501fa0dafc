//! Parents and children: removing a parent that still has children is refused naming a child,
//! a whole subtree goes in one write section, readers in another process never see a
//! half-removed tree, and a writer killed inside a write section leaves the children counts
//! right once the block is recovered.

use crate::common;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Child;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::common::snapshot::{counter_value, InstanceSnapshot, ReadAll, Snapshot};
use prfdata::layout::{slot, SEQ_OFFSET};
use prfdata::map::offsets;
use prfdata::map::PerfDataMap;
use prfdata::reader::{BlockReader, ReadError};
use prfdata::{Error, InstanceSpec};

prfdata::prfdata_map! {
    /// Hosts run jobs, jobs run tasks: three levels of parents.
    pub mod tree {
        app: "PrfDataParents",
        object HOSTS = 0 {
            name: "Parents Hosts", help: "Hosts.",
            detail: Novice, default: BUILT, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                BUILT = 2: RawCount { name: "Built", help: "1 once the host's tree is whole.", detail: Novice, scale: 0 },
            }
        }
        object JOBS = 4 {
            name: "Parents Jobs", help: "Jobs of a host.",
            detail: Novice, default: none, instances: { max: 32, name_len: 16 }, costly: false,
            counters {
                JOB_DONE = 6: RawCount { name: "Done", help: "d", detail: Novice, scale: 0 },
            }
        }
        object TASKS = 8 {
            name: "Parents Tasks", help: "Tasks of a job.",
            detail: Novice, default: none, instances: { max: 64, name_len: 16 }, costly: true,
            counters {
                STEPS = 10: RawCount { name: "Steps", help: "s", detail: Novice, scale: 0 },
            }
        }
    }
}

use tree::{PrfData, HOSTS, JOBS, TASKS};

/// Jobs per host and tasks per job in the trees the children build.
const JOBS_PER_HOST: usize = 3;
const TASKS_PER_JOB: usize = 2;

/// Builds host `name` with its jobs and their tasks, top down, and marks it built last.
fn build(prf: &PrfData, name: &str) -> Result<prfdata::InstanceId<HOSTS>, Error> {
    let host = prf.add_instance(HOSTS, name)?;
    for j in 0..JOBS_PER_HOST {
        let job = prf.add_instance(JOBS, InstanceSpec::named(&format!("j{j}")).parent(host))?;
        for t in 0..TASKS_PER_JOB {
            prf.add_instance(TASKS, InstanceSpec::named(&format!("t{t}")).parent(job))?;
        }
    }
    // Inside a write section: a reader that sees the mark saw the state after the last add.
    let _whole = prf.lock_ctrs();
    prf.get_ctr32(tree::BUILT, host).store(1, Relaxed);
    Ok(host)
}

/// Child roles: `trees` builds and removes whole trees until told to stop; `churn` adds and
/// removes hosts, jobs and tasks one by one and removes trees, until killed; `die-counting`
/// opens a write section, scrambles the children counts as a writer killed half-way through an
/// update would leave them, and waits to be killed.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    match common::role().as_deref() {
        Some("trees") => trees(),
        Some("churn") => churn(),
        Some("die-counting") => die_counting(),
        _ => {}
    }
}

fn trees() {
    let prf = PrfData::attach_in(&common::child_dir()).expect("attach");
    let stop = common::child_dir().join("stop");
    let start = Instant::now();
    while !stop.exists() && start.elapsed() < Duration::from_secs(30) {
        let a = build(&prf, "a").expect("build a");
        let b = build(&prf, "b").expect("build b");
        assert_eq!(prf.instances().remove_tree(a).expect("remove a"), 10);
        assert_eq!(prf.instances().remove_tree(b).expect("remove b"), 10);
    }
}

fn churn() {
    let prf = PrfData::attach_in(&common::child_dir()).expect("attach");
    let mut k = 0u32;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        k = k.wrapping_add(1);
        let host = match prf.add_instance(HOSTS, &format!("h{k}")) {
            Ok(h) => h,
            Err(Error::ObjectFull { .. }) => {
                let hosts = prf.instances().list(HOSTS).unwrap();
                prf.instances()
                    .remove_tree(hosts[k as usize % hosts.len()])
                    .expect("remove a tree");
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let job = prf
            .add_instance(JOBS, InstanceSpec::named("j").parent(host))
            .ok();
        if let Some(job) = job {
            let _ = prf.add_instance(TASKS, InstanceSpec::named("t").parent(job));
            if k.is_multiple_of(3) {
                for t in prf.instances().list(TASKS).unwrap() {
                    let _ = prf.remove_instance(t);
                }
                let _ = prf.remove_instance(job);
            }
        }
    }
}

fn die_counting() {
    let dir = common::child_dir();
    let prf = PrfData::attach_in(&dir).expect("attach");
    let _section = prf.lock_ctrs();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .expect("open the block");
    // Half an update: every count wrong, the host's too high, the jobs' zero.
    for (object, max) in [(0usize, 8u32), (1, 32), (2, 64)] {
        for s in 0..max {
            let value: u32 = if object == 0 { 7 } else { 0 };
            file.write_all_at(&value.to_ne_bytes(), children_offset(object, s))
                .expect("write a count");
        }
    }
    std::fs::write(dir.join("ready"), b"").expect("ready");
    std::thread::sleep(Duration::from_secs(60));
}

/// Offset of the children count of slot `s` of object `object` in the block.
fn children_offset(object: usize, s: u32) -> u64 {
    let map = tree::Map::DEF;
    let obj = &map.objects[object];
    let at = offsets::object_base(map, object)
        + offsets::object_regions(obj).slots
        + s as usize * offsets::slot_size(obj)
        + slot::CHILDREN;
    at as u64
}

/// Reads a consistent snapshot, retrying while the block is busy (bounded).
fn snapshot(reader: &BlockReader) -> Snapshot {
    let mut snap = Snapshot::default();
    let start = Instant::now();
    loop {
        match reader.read(&mut snap) {
            Ok(()) => return snap,
            Err(ReadError::Busy(_)) if start.elapsed() < Duration::from_secs(10) => {}
            Err(e) => panic!("read failed: {e}"),
        }
    }
}

/// Checks every link and count of a snapshot: each child's parent is live with the generation
/// it recorded, and each instance's children count is the number of live instances naming it.
fn assert_tree_consistent(snap: &Snapshot) {
    let mut live: HashMap<(u32, u32, u32), u32> = HashMap::new();
    for (o, obj) in snap.objects.iter().enumerate() {
        for inst in &obj.instances {
            live.insert((o as u32, inst.slot, inst.generation), 0);
        }
    }
    for obj in &snap.objects {
        for inst in &obj.instances {
            if let Some(p) = inst.parent {
                let count = live
                    .get_mut(&(p.object, p.slot, p.generation))
                    .unwrap_or_else(|| panic!("the parent {p:?} of slot {} is live", inst.slot));
                *count += 1;
            }
        }
    }
    for (o, obj) in snap.objects.iter().enumerate() {
        for inst in &obj.instances {
            assert_eq!(
                inst.children,
                live[&(o as u32, inst.slot, inst.generation)],
                "children count of object {o} slot {}",
                inst.slot
            );
        }
    }
}

fn names(prf: &PrfData) -> Vec<String> {
    let mut out: Vec<String> = prf
        .instances()
        .list(HOSTS)
        .unwrap()
        .into_iter()
        .filter_map(|i| prf.instances().name(i))
        .collect();
    out.extend(
        prf.instances()
            .list(JOBS)
            .unwrap()
            .into_iter()
            .filter_map(|i| prf.instances().name(i)),
    );
    out.extend(
        prf.instances()
            .list(TASKS)
            .unwrap()
            .into_iter()
            .filter_map(|i| prf.instances().name(i)),
    );
    out
}

#[test]
fn removing_a_parent_that_has_children_is_refused_naming_a_child() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let host = prf.add_instance(HOSTS, "h1").unwrap();
    let job = prf
        .add_instance(JOBS, InstanceSpec::named("nightly").parent(host))
        .unwrap();
    let task = prf
        .add_instance(TASKS, InstanceSpec::named("step 1").parent(job))
        .unwrap();
    let before = names(&prf);

    match prf.remove_instance(host) {
        Err(Error::HasChildren {
            object,
            instance,
            children,
            child_object,
            child,
        }) => {
            assert_eq!((object, instance.as_str()), ("HOSTS", "h1"));
            assert_eq!(children, 1);
            assert_eq!((child_object, child.as_str()), ("JOBS", "nightly"));
        }
        other => panic!("removing a host with a job: {other:?}"),
    }
    let err = prf.remove_instance(job).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("\"nightly\"")
            && text.contains("TASKS")
            && text.contains("\"step 1\"")
            && text.contains("instances().remove_tree"),
        "{text}"
    );
    assert_eq!(names(&prf), before, "nothing was removed or unlinked");
    let reader = BlockReader::open_path("PrfDataParents", prf.path()).unwrap();
    let snap = snapshot(&reader);
    assert_tree_consistent(&snap);
    assert_eq!(snap.objects[2].instances[0].parent.unwrap().object, 1);

    // Leaves first, then each parent has no children left.
    prf.remove_instance(task).unwrap();
    prf.remove_instance(job).unwrap();
    prf.remove_instance(host).unwrap();
    assert!(names(&prf).is_empty());
}

#[test]
fn a_parent_counts_its_children_as_they_come_and_go() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path("PrfDataParents", prf.path()).unwrap();
    let host = prf.add_instance(HOSTS, "h").unwrap();
    let jobs: Vec<_> = (0..5)
        .map(|j| {
            prf.add_instance(JOBS, InstanceSpec::named(&format!("j{j}")).parent(host))
                .unwrap()
        })
        .collect();
    let children = |snap: &Snapshot| snap.objects[0].instances[0].children;
    assert_eq!(children(&snapshot(&reader)), 5);
    for (k, job) in jobs.iter().enumerate() {
        assert!(
            prf.remove_instance(host).is_err(),
            "{} children left",
            5 - k
        );
        prf.remove_instance(*job).unwrap();
        let snap = snapshot(&reader);
        assert_eq!(children(&snap), 4 - k as u32);
        assert_tree_consistent(&snap);
    }
    prf.remove_instance(host).unwrap();
}

#[test]
fn remove_instance_tree_removes_the_subtree_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = build(&prf, "a").unwrap();
    let b = build(&prf, "b").unwrap();
    let a_job = prf
        .instances()
        .list(JOBS)
        .unwrap()
        .into_iter()
        .find(|&j| prf.instances().name(j).as_deref() == Some("j0"))
        .unwrap();
    let lone = prf.add_instance(JOBS, "lone").unwrap();

    assert_eq!(prf.instances().remove_tree(a).unwrap(), 1 + 3 + 3 * 2);
    assert_eq!(prf.instances().list(HOSTS).unwrap(), [b]);
    assert_eq!(
        prf.instances().list(JOBS).unwrap().len(),
        3 + 1,
        "b's jobs and the lone one"
    );
    assert_eq!(
        prf.instances().list(TASKS).unwrap().len(),
        3 * 2,
        "b's tasks"
    );
    assert!(matches!(
        prf.remove_instance(a_job),
        Err(Error::UnknownInstance { object: "JOBS" })
    ));
    assert!(matches!(
        prf.instances().remove_tree(a),
        Err(Error::UnknownInstance { object: "HOSTS" })
    ));
    assert_eq!(
        prf.instances().remove_tree(lone).unwrap(),
        1,
        "a leaf is a tree of one"
    );
    let reader = BlockReader::open_path("PrfDataParents", prf.path()).unwrap();
    assert_tree_consistent(&snapshot(&reader));

    // The freed slots serve new trees, whose children resolve to the new parents only.
    let c = build(&prf, "c").unwrap();
    let snap = snapshot(&reader);
    assert_tree_consistent(&snap);
    assert_eq!(snap.objects[0].instances.len(), 2);
    assert_eq!(prf.instances().remove_tree(c).unwrap(), 10);
    assert_eq!(prf.instances().remove_tree(b).unwrap(), 10);
    assert!(names(&prf).is_empty());
}

/// A host is marked built after its last task: a reader that sees the mark must see the whole
/// tree, so a tree removed in steps would be caught between them.
#[test]
fn readers_in_another_process_never_see_a_half_removed_tree() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let child = common::spawn_child("parents::child_entry", "trees", dir.path(), &[]);
    let reader = BlockReader::open_path("PrfDataParents", prf.path()).unwrap();
    let mut snap = Snapshot::default();
    let (mut whole_trees, mut good) = (0, 0);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        match reader.read(&mut snap) {
            Ok(()) => good += 1,
            Err(ReadError::Busy(_)) => continue,
            Err(e) => panic!("read failed: {e}"),
        }
        assert_tree_consistent(&snap);
        let (hosts, jobs, tasks) = (
            &snap.objects[0].instances,
            &snap.objects[1].instances,
            &snap.objects[2].instances,
        );
        for host in hosts {
            let built = counter_value(snap.instance_block(host), 8, 4);
            if built != Some(1) {
                continue;
            }
            whole_trees += 1;
            let under = |p: prfdata::reader::ParentLink, o: u32, i: &InstanceSnapshot| {
                (p.object, p.slot, p.generation) == (o, i.slot, i.generation)
            };
            let my_jobs: Vec<_> = jobs
                .iter()
                .filter(|j| j.parent.is_some_and(|p| under(p, 0, host)))
                .collect();
            assert_eq!(
                my_jobs.len(),
                JOBS_PER_HOST,
                "a built host has all its jobs"
            );
            for job in my_jobs {
                let my_tasks = tasks
                    .iter()
                    .filter(|t| t.parent.is_some_and(|p| under(p, 1, job)))
                    .count();
                assert_eq!(
                    my_tasks, TASKS_PER_JOB,
                    "a built host's job has all its tasks"
                );
            }
        }
    }
    std::fs::write(dir.path().join("stop"), b"").unwrap();
    common::wait_ok(child, Duration::from_secs(60));
    assert!(good > 100, "only {good} consistent reads");
    assert!(whole_trees > 10, "built trees were seen ({whole_trees})");
}

/// Regression: recovery rebuilt the live and free lists but not the children counts, so a
/// writer killed half-way through an update left a parent removable while its children lived
/// (and another one unremovable for good).
#[test]
fn a_writer_killed_inside_a_write_section_leaves_the_children_counts_right() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let host = build(&prf, "h").unwrap();
    let bare = prf.add_instance(HOSTS, "bare").unwrap();
    let job = prf.instances().list(JOBS).unwrap()[0];
    let mut child = common::spawn_child("parents::child_entry", "die-counting", dir.path(), &[]);
    assert!(
        common::wait_until(Duration::from_secs(20), || dir
            .path()
            .join("ready")
            .exists()),
        "the child scrambled the counts inside its write section"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    // The next writer recovers the block (its owner died with the sequence odd).
    match prf.remove_instance(job) {
        Err(Error::HasChildren { child_object, .. }) => assert_eq!(child_object, "TASKS"),
        other => panic!("a job with tasks must not be removable: {other:?}"),
    }
    let reader = BlockReader::open_path("PrfDataParents", prf.path()).unwrap();
    let snap = snapshot(&reader);
    assert_tree_consistent(&snap);
    prf.remove_instance(bare)
        .expect("a host without children is removable");
    assert_eq!(prf.instances().remove_tree(host).unwrap(), 10);
}

/// The sequence word of the block, read through the file.
fn seq(file: &File) -> u64 {
    let mut word = [0u8; 8];
    file.read_exact_at(&mut word, SEQ_OFFSET as u64)
        .expect("read the sequence");
    u64::from_ne_bytes(word)
}

/// Whether process `pid` is stopped (state `T` in `/proc/<pid>/stat`).
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('T')
    })
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: `kill` has no memory-safety preconditions; the pid is our unreaped child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Stops `child` while the block's sequence is odd (inside one of its write sections) and kills
/// it there. Returns whether that happened within the time allowed.
fn kill_inside_a_write_section(child: &mut Child, block: &Path) -> bool {
    let file = File::open(block).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if seq(&file) & 1 == 0 {
            std::hint::spin_loop();
            continue;
        }
        signal(child, libc::SIGSTOP);
        let start = Instant::now();
        while !stopped(child.id()) && start.elapsed() < Duration::from_secs(5) {
            std::thread::yield_now();
        }
        if seq(&file) & 1 == 1 {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        signal(child, libc::SIGCONT);
    }
    false
}

/// Writers killed at whatever point of their write sections they were: after recovery every
/// link resolves and every count is right, each time.
#[test]
fn writers_killed_mid_change_always_leave_a_consistent_tree() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path("PrfDataParents", prf.path()).unwrap();
    let mut kills = 0;
    for _ in 0..6 {
        let mut child = common::spawn_child("parents::child_entry", "churn", dir.path(), &[]);
        if !kill_inside_a_write_section(&mut child, prf.path()) {
            let _ = child.kill();
            let _ = child.wait();
            continue;
        }
        kills += 1;
        // Any layout change recovers the block first.
        let probe = prf.add_instance(JOBS, "probe").unwrap();
        prf.remove_instance(probe).unwrap();
        let snap = snapshot(&reader);
        assert_tree_consistent(&snap);
        // Every parent with children is refused, every other instance removable.
        for h in prf.instances().list(HOSTS).unwrap() {
            let has_jobs = snap.objects[0]
                .instances
                .iter()
                .any(|i| i.slot == h.slot() && i.children > 0);
            assert_eq!(prf.remove_instance(h).is_err(), has_jobs);
        }
    }
    assert!(
        kills >= 3,
        "only {kills} writers were killed inside a write section"
    );
}

/// The reader treats the count as untrusted input: one larger than the block's instances is an
/// error naming its offset, in both read paths.
#[test]
fn a_children_count_larger_than_the_block_is_refused_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let host = build(&prf, "h").unwrap();
    let reader = BlockReader::open_path("PrfDataParents", prf.path()).unwrap();
    let read_children = |reader: &BlockReader| {
        reader.read_with(Duration::from_millis(100), |view| {
            view.instances(0)?.children(0)
        })
    };
    assert_eq!(read_children(&reader).unwrap(), JOBS_PER_HOST as u32);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    let at = children_offset(0, host.slot());
    // 8 + 32 + 64 instances in all: 104 children are possible (if absurd), 105 are not.
    file.write_all_at(&104u32.to_ne_bytes(), at).unwrap();
    assert_eq!(read_children(&reader).unwrap(), 104);
    file.write_all_at(&105u32.to_ne_bytes(), at).unwrap();
    for err in [
        read_children(&reader).unwrap_err(),
        reader.read(&mut Snapshot::default()).unwrap_err(),
    ] {
        match err {
            ReadError::Field {
                offset,
                what,
                value,
            } => assert_eq!((offset, what, value), (at, "children count", 105)),
            other => panic!("{other}"),
        }
    }
}

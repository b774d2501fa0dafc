//! Process-owned instances, aggregation rules and the synthesised `_Total`, with
//! real worker processes killed by `SIGKILL` and a real block file.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use prfdata::map::offsets;
use prfdata::reader::BlockReader;

use super::common;

prfdata::prfdata_map! {
    /// Workers that are processes, and a pool of instances no process owns.
    pub mod owned_map {
        app: "PrfDataOwned",
        object WORKERS {
            name: "Workers", help: "One per worker process.",
            instances: { max: 16, name_len: 16 }, total: true,
            counters {
                DONE: CounterCounter { name: "Done", help: name },
                BYTES: BulkCount { name: "Bytes", help: name },
                QUEUE: RawCount { name: "Queue", help: name },
                PEAK: RawCount { name: "Peak", help: name, aggregate: max },
                LOW: LargeRawCount { name: "Low", help: name, aggregate: min },
                LATENCY: AverageTimer { name: "Latency", help: name },
                LATENCY_BASE: AverageBase,
                NAME: Text16 { name: "Label", help: name },
            }
        }
        object PLAIN {
            name: "Plain", help: "Instances without a total.",
            instances: { max: 4, name_len: 8 },
            counters { N: CounterCounter { name: "N", help: name } }
        }
    }
}
use owned_map::*;

const APP: &str = "PrfDataOwned";
/// Counter positions among WORKERS' counters.
const C_DONE: usize = 0;
const C_BYTES: usize = 1;
const C_QUEUE: usize = 2;
const C_PEAK: usize = 3;
const C_LOW: usize = 4;
const C_LATENCY: usize = 5;
const C_LATENCY_BASE: usize = 6;

/// One instance as a read shows it: name and every numeric counter of WORKERS.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    name: String,
    values: Vec<i64>,
}

/// The WORKERS rows of one consistent read, `_Total` (if shown) last.
fn rows(reader: &BlockReader) -> Vec<Row> {
    reader
        .read_with(Duration::from_secs(5), |view| {
            let table = view.instances(0)?;
            let mut out = Vec::new();
            for pos in 0..table.len() {
                let inst = table.get(pos)?;
                let mut name = Vec::new();
                table.name_units(&inst, &mut name)?;
                let mut values = Vec::new();
                for c in [
                    C_DONE,
                    C_BYTES,
                    C_QUEUE,
                    C_PEAK,
                    C_LOW,
                    C_LATENCY,
                    C_LATENCY_BASE,
                ] {
                    values.push(table.value(&inst, c)?);
                }
                out.push(Row {
                    name: String::from_utf16_lossy(&name),
                    values,
                });
            }
            Ok(out)
        })
        .expect("a consistent read")
}

/// The `_Total` row, which must be last and the only one so named.
fn total(rows: &[Row]) -> &Row {
    let last = rows.last().expect("_Total is always shown");
    assert_eq!(last.name, "_Total", "_Total is last: {rows:?}");
    assert_eq!(
        rows.iter().filter(|r| r.name == "_Total").count(),
        1,
        "{rows:?}"
    );
    last
}

/// Makes the owner of WORKERS' slot `slot` look like another process that had the same pid (a
/// reused pid): its start time is moved by one tick, through the block file.
fn forge_reused_pid(path: &Path, slot: u32) {
    let obj = &MAP.objects[0];
    let at = offsets::object_base(&MAP, 0)
        + offsets::object_regions(obj).slots
        + slot as usize * offsets::slot_size(obj)
        + prfdata::layout::slot::OWNER_START;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open the block file");
    let mut start = [0u8; 8];
    file.read_exact_at(&mut start, at as u64).expect("read");
    let forged = u64::from_ne_bytes(start).wrapping_add(1);
    file.write_all_at(&forged.to_ne_bytes(), at as u64)
        .expect("write");
}

/// The slot of an instance the writer handed out, from its counter block offset.
fn slot_of(id: prfdata::InstanceId<WORKERS>) -> u32 {
    id.slot()
}

#[test]
fn total_follows_each_counters_rule_and_keeps_departed_counts() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    assert_eq!(
        rows(&reader),
        vec![Row {
            name: "_Total".into(),
            values: vec![0; 7]
        }]
    );

    let a = prf.add_instance(WORKERS, "a").unwrap();
    let b = prf
        .add_instance(WORKERS, prfdata::InstanceSpec::named("b").process_owned())
        .unwrap();
    for (inst, done, bytes, queue, peak, low, lat) in
        [(a, 10, 1000, 3, 7, 40, 5), (b, 20, 2000, 4, 9, 30, 6)]
    {
        prf.get_ctr32(DONE, inst).fetch_add(done, Relaxed);
        prf.get_ctr64(BYTES, inst).fetch_add(bytes, Relaxed);
        prf.get_ctr32(QUEUE, inst).store(queue, Relaxed);
        prf.get_ctr32(PEAK, inst).store(peak, Relaxed);
        prf.get_ctr64(LOW, inst).store(low, Relaxed);
        prf.get_ctr32(LATENCY, inst).fetch_add(lat, Relaxed);
        prf.get_ctr32(LATENCY_BASE, inst).fetch_add(1, Relaxed);
    }
    let r = rows(&reader);
    assert_eq!(r.len(), 3);
    // sum, sum, live, max, min, sum (the base paired with it: sum).
    assert_eq!(total(&r).values, vec![30, 3000, 7, 9, 30, 11, 2]);

    prf.remove_instance(a).unwrap();
    let r = rows(&reader);
    assert_eq!(r.len(), 2);
    // Counts and timers keep a's share (retired accumulator); the gauges describe b alone.
    assert_eq!(total(&r).values, vec![30, 3000, 4, 9, 30, 11, 2]);

    // An object without `total: true` shows no _Total.
    prf.add_instance(PLAIN, "p").unwrap();
    let plain = reader
        .read_with(Duration::from_secs(5), |view| Ok(view.instances(1)?.len()))
        .unwrap();
    assert_eq!(plain, 1);
}

#[test]
fn a_reused_pid_does_not_keep_a_dead_owners_instance() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let mine = prf
        .add_instance(
            WORKERS,
            prfdata::InstanceSpec::named("alive").process_owned(),
        )
        .unwrap();
    let gone = prf
        .add_instance(
            WORKERS,
            prfdata::InstanceSpec::named("reused").process_owned(),
        )
        .unwrap();
    prf.get_ctr32(DONE, mine).fetch_add(5, Relaxed);
    prf.get_ctr32(DONE, gone).fetch_add(70, Relaxed);
    prf.get_ctr32(QUEUE, gone).store(9, Relaxed);

    // Same pid, another start time: another process. Readers hide it at once and count its
    // DONE in the retired share; its gauge is dropped.
    forge_reused_pid(prf.path(), slot_of(gone));
    let r = rows(&reader);
    let names: Vec<_> = r.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["alive", "_Total"]);
    assert_eq!(total(&r).values[C_DONE], 75);
    assert_eq!(total(&r).values[C_QUEUE], 0);

    // The next writer reclaims it (folding its DONE); the live owner's instance stays.
    let other = prf.add_instance(WORKERS, "other").unwrap();
    assert_eq!(prf.instances().list(WORKERS).unwrap(), vec![mine, other]);
    assert!(prf.remove_instance(gone).is_err(), "reclaimed already");
    assert_eq!(
        prf.instances().reclaim_dead().unwrap(),
        0,
        "a live owner is never reclaimed"
    );
    let r = rows(&reader);
    assert_eq!(r.len(), 3);
    assert_eq!(total(&r).values[C_DONE], 75);
}

#[test]
fn ten_thousand_deaths_leave_the_block_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let size = std::fs::metadata(prf.path()).unwrap().len();
    let time_reads = || {
        let start = Instant::now();
        for _ in 0..200 {
            assert_eq!(rows(&reader).len(), 9);
        }
        start.elapsed() / 200
    };
    let plain: Vec<_> = (0..8)
        .map(|i| prf.add_instance(WORKERS, &format!("plain{i}")).unwrap())
        .collect();
    let unowned = time_reads();
    for p in plain {
        prf.remove_instance(p).unwrap();
    }
    let live: Vec<_> = (0..8)
        .map(|i| {
            prf.add_instance(
                WORKERS,
                prfdata::InstanceSpec::named(&format!("live{i}")).process_owned(),
            )
            .unwrap()
        })
        .collect();
    let before = time_reads();
    for k in 0..10_000u32 {
        // Each add reclaims the previous dead worker: one slot serves them all.
        let w = prf
            .add_instance(
                WORKERS,
                prfdata::InstanceSpec::named(&format!("w{k}")).process_owned(),
            )
            .unwrap();
        assert!(slot_of(w) < 9 + 1, "slot {} reused", slot_of(w));
        prf.get_ctr32(DONE, w).fetch_add(1, Relaxed);
        forge_reused_pid(prf.path(), slot_of(w));
    }
    assert_eq!(prf.instances().reclaim_dead().unwrap(), 1);
    let after = time_reads();
    eprintln!(
        "read of 8 instances + _Total: {unowned:?} unowned; owned: {before:?} before, {after:?} \
         after 10,000 deaths"
    );
    assert_eq!(std::fs::metadata(prf.path()).unwrap().len(), size);
    let r = rows(&reader);
    assert_eq!(r.len(), 9, "the live workers and _Total");
    assert_eq!(total(&r).values[C_DONE], 10_000);
    assert_eq!(prf.instances().list(WORKERS).unwrap(), live);
}

/// A worker: attaches, adds its own instance, then repeatedly performs a batch of increments,
/// reports the total it performed on stdout (`done N`) and waits for a line on stdin: `go`
/// for another batch, end of input to exit. The test kills it only while it waits, so every
/// increment it performed was reported.
#[test]
#[ignore = "entry point for worker processes"]
fn worker_entry() {
    if common::role().as_deref() != Some("worker") {
        return;
    }
    let name = std::env::var("WORKER_NAME").expect("WORKER_NAME");
    let batch: i32 = std::env::var("WORKER_BATCH")
        .expect("WORKER_BATCH")
        .parse()
        .unwrap();
    let prf = PrfData::attach_in(&common::child_dir()).expect("attach");
    let me = prf
        .add_instance(WORKERS, prfdata::InstanceSpec::named(&name).process_owned())
        .expect("add");
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut done = 0i64;
    loop {
        for _ in 0..batch {
            prf.get_ctr32(DONE, me).fetch_add(1, Relaxed);
            prf.get_ctr64(BYTES, me).fetch_add(3, Relaxed);
        }
        done += i64::from(batch);
        println!("done {done}");
        std::io::stdout().flush().unwrap();
        match lines.next() {
            Some(Ok(line)) if line == "go" => continue,
            _ => break,
        }
    }
    prf.remove_instance(me).expect("remove");
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    name: String,
    /// Increments it reported.
    done: i64,
}

fn spawn_worker(
    dir: &Path,
    name: String,
    batch: i32,
    slot: usize,
    events: mpsc::Sender<(usize, i64)>,
) -> Worker {
    let env = [
        ("WORKER_NAME", name.clone()),
        ("WORKER_BATCH", batch.to_string()),
    ];
    let (child, stdin) =
        common::spawn_reporting("owned::worker_entry", "worker", dir, &env, (slot, events));
    Worker {
        child,
        stdin,
        name,
        done: 0,
    }
}

/// 8 worker processes × 100,000 increments, each worker SIGKILLed now and then between batches
/// and restarted as a new process: at every sample `_Total` equals the shown instances plus
/// the departed workers' share exactly, never decreases, and ends at 800,000.
#[test]
fn eight_workers_with_sigkills_keep_an_exact_monotonic_total() {
    const WORKERS_N: usize = 8;
    const PER_WORKER: i64 = 100_000;
    const BATCH: i32 = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        | 1;
    eprintln!("seed {seed:#x}");
    // Deterministic from the printed seed, so that a failure can be replayed.
    let mut rng = prfdata_testkit::values::Mix(seed);
    let (tx, rx) = mpsc::channel();
    let mut generation = 0;
    let spawn = |slot: usize, rng_gen: &mut u32| {
        *rng_gen += 1;
        spawn_worker(
            dir.path(),
            format!("w{slot}-{rng_gen}"),
            BATCH,
            slot,
            tx.clone(),
        )
    };
    let mut workers: Vec<Option<Worker>> = (0..WORKERS_N)
        .map(|s| Some(spawn(s, &mut generation)))
        .collect();
    // Per slot: increments performed by its dead workers; per dead worker name: its count.
    let mut slot_dead = [0i64; WORKERS_N];
    let mut departed: HashMap<String, i64> = HashMap::new();
    let (mut kills, mut last_total, mut samples) = (0, 0i64, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    // Checks a sample: `_Total` never lower than before, and never lower than the shown
    // instances (read before it in the same window) plus the departed workers' share; equal
    // to it when every worker is waiting (`quiet`).
    let mut check = |r: &[Row], departed: &HashMap<String, i64>, quiet: bool| {
        let t = total(r).values[C_DONE];
        let shown: HashMap<&str, i64> = r[..r.len() - 1]
            .iter()
            .map(|r| (r.name.as_str(), r.values[C_DONE]))
            .collect();
        let retired: i64 = departed
            .iter()
            .filter(|(n, _)| !shown.contains_key(n.as_str()))
            .map(|(_, d)| d)
            .sum();
        let parts = shown.values().sum::<i64>() + retired;
        if quiet {
            assert_eq!(t, parts, "sample {samples}: {r:?}");
        } else {
            assert!(
                t >= parts,
                "sample {samples}: _Total {t} below its parts {parts}: {r:?}"
            );
        }
        assert!(
            t >= last_total,
            "sample {samples}: _Total went from {last_total} to {t}"
        );
        (last_total, samples) = (t, samples + 1);
    };
    let mut active: Vec<usize> = (0..WORKERS_N).collect();
    while !active.is_empty() {
        // Each step: every active worker performs a batch and reports; sampled meanwhile.
        let mut waiting = active.clone();
        while !waiting.is_empty() {
            match rx.recv_timeout(Duration::from_millis(2)) {
                Ok((slot, done)) => {
                    let w = workers[slot].as_mut().expect("a running worker");
                    w.done = done;
                    waiting.retain(|&s| s != slot);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    assert!(
                        Instant::now() < deadline,
                        "workers {waiting:?} did not report in time"
                    );
                }
                Err(e) => panic!("{e}"),
            }
            check(&rows(&reader), &departed, false);
        }
        // Every worker waits: the total is exact.
        check(&rows(&reader), &departed, true);
        for slot in std::mem::take(&mut active) {
            let mut w = workers[slot].take().unwrap();
            if slot_dead[slot] + w.done >= PER_WORKER {
                departed.insert(w.name.clone(), w.done);
                drop(w.stdin); // end of input: it removes its instance and exits
                common::wait_ok(w.child, Duration::from_secs(30));
                continue;
            }
            if rng.next_u64().is_multiple_of(8) {
                w.child.kill().unwrap(); // SIGKILL, while it waits for `go`
                w.child.wait().unwrap();
                kills += 1;
                departed.insert(w.name.clone(), w.done);
                slot_dead[slot] += w.done;
                w = spawn(slot, &mut generation);
            } else {
                writeln!(w.stdin, "go").unwrap();
            }
            workers[slot] = Some(w);
            active.push(slot);
        }
        check(&rows(&reader), &departed, false);
    }
    let r = rows(&reader);
    assert_eq!(r.len(), 1, "every worker gone: only _Total is shown: {r:?}");
    assert_eq!(total(&r).values[C_DONE], WORKERS_N as i64 * PER_WORKER);
    assert_eq!(total(&r).values[C_BYTES], 3 * WORKERS_N as i64 * PER_WORKER);
    prf.instances().reclaim_dead().unwrap();
    assert!(prf.instances().list(WORKERS).unwrap().is_empty());
    assert_eq!(
        rows(&reader)[0].values[C_DONE],
        WORKERS_N as i64 * PER_WORKER
    );
    eprintln!("{kills} workers SIGKILLed, {samples} samples");
    assert!(kills > 0, "the seed killed nobody: {seed:#x}");
}

/// A dead owner's instance is hidden, so the positions after it move: a child's parent link
/// resolves to the parent's shown position, and a child of the hidden instance to none; the
/// writer's reclamation removes the dead instance with the instances below it.
#[test]
fn parent_links_follow_hidden_instances() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let dead = prf
        .add_instance(
            WORKERS,
            prfdata::InstanceSpec::named("dead").process_owned(),
        )
        .unwrap();
    let live = prf.add_instance(WORKERS, "live").unwrap();
    prf.add_instance(PLAIN, prfdata::InstanceSpec::named("kid").parent(live))
        .unwrap();
    prf.add_instance(PLAIN, prfdata::InstanceSpec::named("orphan").parent(dead))
        .unwrap();
    forge_reused_pid(prf.path(), slot_of(dead));
    let links = |reader: &BlockReader| {
        reader
            .read_with(Duration::from_secs(5), |view| {
                let table = view.instances(1)?;
                let mut out = Vec::new();
                for pos in 0..table.len() {
                    let inst = table.get(pos)?;
                    let mut name = Vec::new();
                    table.name_units(&inst, &mut name)?;
                    let parent = inst.parent.and_then(|p| view.parent_position(p));
                    out.push((String::from_utf16_lossy(&name), parent));
                }
                Ok(out)
            })
            .unwrap()
    };
    let names: Vec<_> = rows(&reader).into_iter().map(|r| r.name).collect();
    assert_eq!(names, ["live", "_Total"]);
    assert_eq!(
        links(&reader),
        [("kid".to_string(), Some(0)), ("orphan".to_string(), None)],
        "kid's parent is shown first now; orphan's is hidden"
    );
    assert_eq!(
        prf.instances().reclaim_dead().unwrap(),
        2,
        "the dead instance and its child"
    );
    assert_eq!(links(&reader), [("kid".to_string(), Some(0))]);
}

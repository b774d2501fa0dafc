//! 8 worker processes record into their own instances' histograms, some SIGKILLed between
//! batches: `_Total`'s buckets, count and sum never decrease, and whenever every worker waits
//! they equal the histogram of every value any worker (dead or alive) reported recording, and
//! its percentiles are within half the stated error of those values' exact ones.

use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use prfdata::reader::BlockReader;
use prfdata_rules::histogram::Geometry;
use prfdata_testkit::values::{values, Mix};

use super::super::common;
use super::hist_map::*;
use super::{expected, seen, Seen, APP};

/// Values per batch.
const BATCH: usize = 400;
/// Batches each of the 8 workers' slots records in all.
const BATCHES: u64 = 12;
/// The sums of WORKERS' two histograms among its counters.
const SUMS: [usize; 2] = [0, 3];

/// The distributions the workers draw from, one per worker process in turn.
const KINDS: [&str; 4] = ["uniform", "log-normal 0.5", "log-normal 1.5", "bimodal"];

/// The values of batch `b` of the worker whose values start from `start` (its distribution is
/// `KINDS[start % 4]`).
fn batch(start: u64, b: u64) -> Vec<u64> {
    values(
        KINDS[(start % 4) as usize],
        BATCH,
        (1.0, 1e7),
        &mut Mix(start ^ b.wrapping_mul(0x9e37_79b9)),
    )
}

/// A worker: attaches, adds its own instance, then records batch after batch into both of its
/// histograms, reporting each on stdout (`done B`), and waits for a line on stdin before the
/// next: `go` for another, end of input to exit. The test kills it only while it waits.
#[test]
#[ignore = "entry point for worker processes"]
fn worker_entry() {
    if common::role().as_deref() != Some("hist-worker") {
        return;
    }
    let name = std::env::var("WORKER_NAME").expect("WORKER_NAME");
    let start: u64 = std::env::var("WORKER_START").unwrap().parse().unwrap();
    let prf = PrfData::attach_in(&common::child_dir()).expect("attach");
    let me = prf
        .add_instance(WORKERS, prfdata::InstanceSpec::named(&name).process_owned())
        .expect("add");
    let (job, sharded) = (prf.histogram(JOB, me), prf.histogram(JOB_SHARDED, me));
    let mut lines = std::io::stdin().lock().lines();
    for b in 0.. {
        for v in batch(start, b) {
            job.record(v);
            sharded.record(v);
        }
        println!("done {}", b + 1);
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
    start: u64,
    /// Batches it reported.
    done: i64,
}

fn spawn_worker(
    dir: &std::path::Path,
    slot: usize,
    start: u64,
    events: mpsc::Sender<(usize, i64)>,
) -> Worker {
    let env = [
        ("WORKER_NAME", format!("w{:x}", start & 0xffff_ffff)),
        ("WORKER_START", start.to_string()),
    ];
    let (child, stdin) = common::spawn_reporting(
        "histogram::kill::worker_entry",
        "hist-worker",
        dir,
        &env,
        (slot, events),
    );
    Worker {
        child,
        stdin,
        start,
        done: 0,
    }
}

/// What `_Total` must hold: each histogram's buckets and sum over every reported batch.
struct Expected {
    geometries: [Geometry; 2],
    buckets: [Vec<u64>; 2],
    sum: u64,
    count: u64,
    /// Every value reported, for the exact percentiles.
    values: Vec<u64>,
}

impl Expected {
    fn add(&mut self, values: &[u64]) {
        self.values.extend_from_slice(values);
        for (k, g) in self.geometries.iter().enumerate() {
            let (b, s) = expected(g, values);
            self.buckets[k].iter_mut().zip(b).for_each(|(e, n)| *e += n);
            if k == 0 {
                self.sum = self.sum.wrapping_add(s);
                self.count += values.len() as u64;
            }
        }
    }
}

/// `_Total`'s two histograms, from one consistent read.
fn totals(reader: &BlockReader) -> [Seen; 2] {
    let o = &reader.objects()[1];
    let mut block = vec![0u8; o.counter_block_size as usize];
    reader
        .read_with(Duration::from_secs(5), |view| {
            let table = view.instances(1)?;
            let last = table.len() - 1;
            assert!(table.is_total(last));
            table.copy_counter_block(&table.get(last)?, &mut block)
        })
        .expect("a consistent read");
    o.fixups().apply(&mut block);
    SUMS.map(|s| seen(reader, 1, s, &block))
}

/// Checks a read of `_Total` against the last one (nothing decreases) and, when every worker
/// waits (`exact`), against what the workers reported.
fn check(now: &[Seen; 2], last: &mut Option<[Seen; 2]>, want: &Expected, exact: bool) {
    for (k, h) in now.iter().enumerate() {
        assert_eq!(
            h.geometry.as_ref(),
            Some(&want.geometries[k]),
            "histogram {k}"
        );
        if let Some(before) = last.as_ref().map(|l| &l[k]) {
            let fell = h
                .buckets
                .iter()
                .zip(&before.buckets)
                .position(|(a, b)| a < b);
            assert_eq!(fell, None, "histogram {k}: a bucket decreased");
            assert!(
                h.sum >= before.sum && h.count >= before.count,
                "histogram {k} decreased"
            );
        }
        if exact {
            assert_eq!(h.buckets, want.buckets[k], "histogram {k}");
            assert_eq!(
                (h.count as u64, h.sum),
                (want.count, want.sum),
                "histogram {k}"
            );
            within_error(&want.geometries[k], &h.buckets, &want.values, k);
        }
    }
    *last = Some(now.clone());
}

/// The percentiles of `buckets` (each its bucket's midpoint) are within half the stated error
/// of the exact nearest-rank percentiles of `values`.
fn within_error(g: &Geometry, buckets: &[u64], values: &[u64], k: usize) {
    if values.is_empty() {
        return;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let half = g.relative_error().expect("log-linear") / 2.0;
    for q in [0.5, 0.9, 0.99, 0.999] {
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        let exact = sorted[rank - 1] as f64;
        let got = super::bucket_percentile(g, buckets, q);
        assert!(
            (got - exact).abs() <= half * exact,
            "histogram {k}, q {q}: {got} vs {exact} over {} values",
            sorted.len()
        );
    }
}

/// 8 worker processes × 12 batches of 400 values (uniform, log-normal or bimodal, by process)
/// into two histograms of their own instances (one with sharded buckets), each worker SIGKILLed now and then while it waits
/// and replaced by a new process: `_Total`'s buckets, count and sum never decrease, equal
/// every reported value's whenever every worker waits, and at the end (every worker gone,
/// the dead ones reclaimed) equal every value recorded.
#[test]
fn eight_workers_with_sigkills_keep_every_bucket_monotonic() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let geometries = [*prf_geometry(&prf, 0), *prf_geometry(&prf, 1)];
    let n = geometries.map(|g| vec![0; g.buckets()]);
    let mut want = Expected {
        geometries,
        buckets: n,
        sum: 0,
        count: 0,
        values: Vec::new(),
    };
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("run {run:#x}");
    let mut rng = Mix(run);
    let (tx, rx) = mpsc::channel();
    let mut next_start = run;
    let mut spawn = |slot: usize| {
        next_start = next_start.wrapping_add(1);
        spawn_worker(dir.path(), slot, next_start, tx.clone())
    };
    let mut workers: Vec<Option<Worker>> = (0..8).map(|s| Some(spawn(s))).collect();
    let mut slot_batches = [0u64; 8];
    let (mut last, mut kills) = (None, 0);
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut active: Vec<usize> = (0..8).collect();
    while !active.is_empty() {
        let mut waiting = active.clone();
        while !waiting.is_empty() {
            match rx.recv_timeout(Duration::from_millis(2)) {
                Ok((slot, done)) => {
                    let w = workers[slot].as_mut().expect("a running worker");
                    want.add(&batch(w.start, done as u64 - 1));
                    w.done = done;
                    slot_batches[slot] += 1;
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
            check(&totals(&reader), &mut last, &want, false);
        }
        check(&totals(&reader), &mut last, &want, true);
        for slot in std::mem::take(&mut active) {
            let mut w = workers[slot].take().unwrap();
            if slot_batches[slot] >= BATCHES {
                drop(w.stdin); // end of input: it removes its instance and exits
                common::wait_ok(w.child, Duration::from_secs(30));
                continue;
            }
            if rng.next_u64().is_multiple_of(5) {
                w.child.kill().unwrap(); // SIGKILL, while it waits for `go`
                w.child.wait().unwrap();
                kills += 1;
                w = spawn(slot);
            } else {
                writeln!(w.stdin, "go").unwrap();
            }
            workers[slot] = Some(w);
            active.push(slot);
        }
    }
    check(&totals(&reader), &mut last, &want, true);
    prf.instances().reclaim_dead().unwrap();
    check(&totals(&reader), &mut last, &want, true);
    eprintln!("{kills} workers SIGKILLed");
    assert!(kills > 0, "the run killed nobody: {run:#x}");
}

/// The geometry of WORKERS' histogram `k` (JOB, then JOB_SHARDED), from a handle.
fn prf_geometry(prf: &PrfData, k: usize) -> &'static Geometry {
    let w = prf.add_instance(WORKERS, "probe").unwrap();
    let g = if k == 0 {
        prf.histogram(JOB, w).geometry()
    } else {
        prf.histogram(JOB_SHARDED, w).geometry()
    };
    prf.remove_instance(w).unwrap();
    g
}

//! The worker-churn scenario of process-owned instances, prfdata's side (the Python side is
//! `benches/scripts/multiprocess_compare.py`; `benches/scripts/multiprocess_compare.sh` runs
//! both).
//!
//! A pool of `--pool` worker processes; each attaches to the block, adds its own instance
//! (`InstanceSpec::process_owned`), performs `--k` increments of the object's `Jobs` counter,
//! reports what it completed through its stdout pipe (`done K`) and waits. The parent then ends it:
//! every `--kill-every`-th with `SIGKILL`, the others by closing its stdin, on which it exits
//! at once. No worker removes its instance: every departure is a death that the block must
//! notice. The parent starts a replacement, until `--deaths` workers have died.
//!
//! The parent activates the block, reads it through `prfdata::reader`, and prints one
//! `key value` line per figure:
//! - `collect_us_{start,end}`: the median time of one read of the object (every instance's
//!   name and counter, `_Total` included) with the pool's workers live and idle, before the
//!   first death and after the last;
//! - `files_{start,end}`, `bytes_{start,end}`, `allocated_{start,end}`: what the block
//!   directory holds then (apparent size, and blocks allocated);
//! - `samples`, `decreases`: a thread reads `_Total` every `--sample-us` during the whole
//!   churn, through the same reader as the timed reads (as a provider or `prfmon` that samples
//!   while workers come and go), and counts the samples that were below the one before;
//!   `scrape_errors`: the reads that failed (an error, or no `_Total`);
//! - `reported`, `total_end`: the increments the workers reported, and the final `_Total`;
//! - `files_after_exit`: what the directory holds once every process is gone.
//!
//! ```sh
//! cargo run --release -p prfdata-benches --bin churn -- --deaths 1000
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use prfdata::reader::{BlockReader, ReadError};

prfdata::prfdata_map! {
    /// One object, an instance per worker process, with a synthesised `_Total`.
    pub mod churn_map {
        app: "PrfDataChurn",
        object WORKERS {
            name: "Workers", help: "One instance per worker process.",
            instances: { max: 16, name_len: 16 }, total: true,
            counters {
                JOBS: BulkCount { name: "Jobs", help: "Increments performed." },
            }
        }
    }
}
use churn_map::*;

/// The scenario's parameters.
#[derive(Debug)]
struct Options {
    deaths: u64,
    pool: usize,
    k: u64,
    kill_every: u64,
    reads: usize,
    sample_us: u64,
    dir: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: churn [--deaths N] [--pool P] [--k K] [--kill-every M] [--reads R] [--sample-us U] \
         [--dir DIR]\n\
         defaults: 1000 deaths, a pool of 8, 10000 increments per worker, every 3rd worker \
         SIGKILLed, 2000 timed reads, a sample every 5000 us, a new directory under the \
         temporary directory"
    );
    std::process::exit(2)
}

fn parse(mut args: impl Iterator<Item = String>) -> Options {
    let mut o = Options {
        deaths: 1000,
        pool: 8,
        k: 10_000,
        kill_every: 3,
        reads: 2000,
        sample_us: 5000,
        dir: None,
    };
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        let num = || value.parse::<u64>().unwrap_or_else(|_| usage());
        match flag.as_str() {
            "--deaths" => o.deaths = num(),
            "--pool" => o.pool = num() as usize,
            "--k" => o.k = num(),
            "--kill-every" => o.kill_every = num().max(1),
            "--reads" => o.reads = num().max(1) as usize,
            "--sample-us" => o.sample_us = num(),
            "--dir" => o.dir = Some(PathBuf::from(&value)),
            _ => usage(),
        }
    }
    if o.pool == 0 || o.pool > 15 {
        eprintln!("--pool must be 1 to 15 (the object has 16 slots)");
        std::process::exit(2);
    }
    o
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("worker") {
        args.next();
        let dir = args.next().unwrap_or_else(|| usage());
        let name = args.next().unwrap_or_else(|| usage());
        let k = args
            .next()
            .and_then(|k| k.parse().ok())
            .unwrap_or_else(|| usage());
        worker(Path::new(&dir), &name, k);
        return;
    }
    let o = parse(args);
    if let Err(e) = run(&o) {
        eprintln!("churn: {e}");
        std::process::exit(1);
    }
}

/// A worker process: attach, add its instance, `k` increments, report, wait for the end of
/// its stdin, exit (without removing its instance).
fn worker(dir: &Path, name: &str, k: u64) {
    let prf = PrfData::attach_in(dir).expect("attach to the parent's block");
    let me = prf
        .add_instance(WORKERS, prfdata::InstanceSpec::named(name).process_owned())
        .expect("add this worker's instance");
    let jobs = prf.get_ctr64(JOBS, me);
    for _ in 0..k {
        jobs.fetch_add(1, Ordering::Relaxed);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "done {k}").and_then(|()| out.flush()).ok();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok();
    std::process::exit(0);
}

/// A worker the parent started.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
}

fn spawn(dir: &Path, no: u64, k: u64, reports: &mpsc::Sender<(usize, u64)>, slot: usize) -> Worker {
    let exe = std::env::current_exe().expect("the churn executable");
    let mut child = Command::new(exe)
        .arg("worker")
        .arg(dir)
        .arg(format!("w{no}"))
        .arg(k.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start a worker");
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped");
    let reports = reports.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(n) = line.strip_prefix("done ").and_then(|n| n.parse().ok()) {
                let _ = reports.send((slot, n));
            }
        }
    });
    Worker { child, stdin }
}

/// `_Total`'s `Jobs`, and the number of rows read, from one consistent read of every
/// instance's name and counter: what a Collect of the object does.
/// (`None` for `_Total` if the read did not show one: the scenario then fails.)
fn collect(reader: &BlockReader, names: &mut Vec<u16>) -> Result<(Option<i64>, u32), ReadError> {
    reader.read_with(Duration::from_secs(5), |view| {
        let table = view.instances(0)?;
        let mut total = None;
        for pos in 0..table.len() {
            let inst = table.get(pos)?;
            names.clear();
            table.name_units(&inst, names)?;
            let v = table.value(&inst, 0)?;
            if table.is_total(pos) {
                total = Some(v);
            }
        }
        Ok((total, table.len()))
    })
}

/// Median time of `reads` collections, in microseconds.
fn time_collect(reader: &BlockReader, reads: usize) -> Result<f64, ReadError> {
    let mut names = Vec::new();
    let mut times = Vec::with_capacity(reads);
    for _ in 0..reads {
        let start = Instant::now();
        std::hint::black_box(collect(reader, &mut names)?);
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2].as_secs_f64() * 1e6)
}

/// Files in `dir`, their apparent bytes, and the bytes allocated to them.
fn dir_usage(dir: &Path) -> (u64, u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut usage = (0, 0, 0);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Ok(m) = entry.metadata() {
            usage.0 += 1;
            usage.1 += m.len();
            usage.2 += m.blocks() * 512;
        }
    }
    usage
}

fn run(o: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let (dir, made) = match &o.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("prfdata-churn-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir)?;
    let prf = PrfData::activate_in(&dir)?;
    let reader = Arc::new(BlockReader::open_path("PrfDataChurn", prf.path())?);
    let (tx, rx) = mpsc::channel();
    let mut started = 0u64;
    let mut reported = 0u64;
    let mut pool: Vec<Worker> = (0..o.pool)
        .map(|slot| {
            started += 1;
            spawn(&dir, started, o.k, &tx, slot)
        })
        .collect();
    for _ in 0..o.pool {
        reported += rx.recv()?.1;
    }
    let print = |key: &str, value: String| println!("{key} {value}");
    let rows_start = collect(&reader, &mut Vec::new())?.1;
    print("rows_start", rows_start.to_string());
    print(
        "collect_us_start",
        format!("{:.2}", time_collect(&reader, o.reads)?),
    );
    let start_usage = dir_usage(&dir);
    print("files_start", start_usage.0.to_string());
    print("bytes_start", start_usage.1.to_string());
    print("allocated_start", start_usage.2.to_string());
    let block_size = std::fs::metadata(prf.path())?.len();

    // The sampler: `_Total` read over and over during the churn.
    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(AtomicU64::new(0));
    let decreases = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, samples, decreases) = (stop.clone(), samples.clone(), decreases.clone());
        let errors = errors.clone();
        let reader = reader.clone();
        let every = Duration::from_micros(o.sample_us);
        std::thread::spawn(move || {
            let mut names = Vec::new();
            let mut last = i64::MIN;
            while !stop.load(Ordering::Relaxed) {
                let total = match collect(&reader, &mut names) {
                    Ok((Some(total), _)) => total,
                    failed => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        eprintln!("a sample failed: {failed:?}");
                        continue;
                    }
                };
                if total < last {
                    decreases.fetch_add(1, Ordering::Relaxed);
                    eprintln!("_Total went from {last} to {total}");
                }
                last = total;
                samples.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(every);
            }
        })
    };

    let churn_start = Instant::now();
    let mut deaths = 0u64;
    let mut pending = 0usize; // replacements started that have not reported yet
    let mut ready: Vec<usize> = (0..o.pool).collect();
    let mut max_size = block_size;
    while deaths < o.deaths {
        let slot = match ready.pop() {
            Some(s) => s,
            None => {
                let (slot, n) = rx.recv()?;
                reported += n;
                pending -= 1;
                slot
            }
        };
        let w = &mut pool[slot];
        deaths += 1;
        if deaths.is_multiple_of(o.kill_every) {
            w.child.kill()?;
        } else {
            drop(w.stdin.take()); // end of input: the worker exits
        }
        w.child.wait()?;
        max_size = max_size.max(std::fs::metadata(prf.path())?.len());
        started += 1;
        pool[slot] = spawn(&dir, started, o.k, &tx, slot);
        pending += 1;
    }
    for _ in 0..pending {
        reported += rx.recv()?.1;
    }
    let churn = churn_start.elapsed();
    stop.store(true, Ordering::Relaxed);
    sampler.join().expect("the sampler thread");

    let (total_end, rows_end) = collect(&reader, &mut Vec::new())?;
    let total_end = total_end.ok_or("the last read showed no _Total")?;
    print("deaths", deaths.to_string());
    print("churn_s", format!("{:.2}", churn.as_secs_f64()));
    print("rows_end", rows_end.to_string());
    print(
        "collect_us_end",
        format!("{:.2}", time_collect(&reader, o.reads)?),
    );
    let end_usage = dir_usage(&dir);
    print("files_end", end_usage.0.to_string());
    print("bytes_end", end_usage.1.to_string());
    print("allocated_end", end_usage.2.to_string());
    print("block_bytes_start", block_size.to_string());
    print("block_bytes_max", max_size.to_string());
    print("samples", samples.load(Ordering::Relaxed).to_string());
    print("decreases", decreases.load(Ordering::Relaxed).to_string());
    print("scrape_errors", errors.load(Ordering::Relaxed).to_string());
    print("reported", reported.to_string());
    print("total_end", total_end.to_string());

    for mut w in pool {
        drop(w.stdin.take());
        w.child.wait()?;
    }
    drop(reader);
    drop(prf);
    print("files_after_exit", dir_usage(&dir).0.to_string());
    if made {
        std::fs::remove_dir(&dir).ok();
    }
    Ok(())
}

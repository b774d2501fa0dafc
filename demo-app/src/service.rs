//! The demo workload: a producer submits jobs to a queue, pools of workers process them, and a
//! manager retires and hires workers so instances come and go. Every step updates counters.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use prfdata::clock;
use prfdata::{InstanceId, InstanceSpec};

use crate::counters::demo::{self, PrfData};
use crate::notes::note;

/// The most jobs waiting; the producer slows down beyond it.
const QUEUE_LIMIT: usize = 500;
/// Simulated I/O per job, which keeps the workers below 100 % busy.
const JOB_IO: Duration = Duration::from_millis(2);
/// How often the producer submits a burst.
const PRODUCE_EVERY: Duration = Duration::from_millis(20);
/// The producer's cycle: the backlog it keeps in the queue rises and falls over it like a tide,
/// between 0 and [`TIDE`] jobs, so `Queue length` and the job latency move as a person watches,
/// whatever the workers' speed.
const RUSH_CYCLE: Duration = Duration::from_secs(20);
/// The highest backlog the producer aims for (at the top of [`RUSH_CYCLE`]).
const TIDE: f64 = 300.0;
/// How often the manager retires one worker and hires another.
const CHURN_EVERY: Duration = Duration::from_secs(2);
/// The pools, each a POOL instance and the parent of its workers.
const POOLS: [&str; 2] = ["fast", "bulk"];

/// One job: when it was submitted, its payload, and the cache key it looks up.
struct Job {
    submitted: i64,
    payload: Vec<u8>,
    key: u64,
}

/// The job queue shared by the producer and the workers.
#[derive(Default)]
struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

/// What the threads share.
struct Shared {
    prf: PrfData,
    queue: Queue,
    stop: AtomicBool,
    cache: Mutex<HashMap<u64, u64>>,
}

impl Shared {
    fn lock_jobs(&self) -> std::sync::MutexGuard<'_, VecDeque<Job>> {
        self.queue
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running worker: its thread and the flag that retires it.
struct Worker {
    retire: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// Runs the service until `duration` passes or `stop` is set (Ctrl-C). Returns the jobs done
/// and the handle on the block, still a member: the caller closes it once the processes it
/// started have left, and says what closing did.
///
/// # Errors
///
/// If the block cannot be activated or an instance cannot be added.
pub fn run(
    workers: usize,
    duration: Option<Duration>,
    stop: Arc<AtomicBool>,
) -> Result<(u64, PrfData), prfdata::Error> {
    let shared = open()?;
    let done = {
        // Guards: a run that joined another's block takes its pools with it when it stops.
        let pools = POOLS
            .iter()
            .map(|name| {
                let pool = shared.prf.add_instance(demo::POOL, name)?;
                Ok(shared.prf.instances().guard(pool))
            })
            .collect::<Result<Vec<_>, prfdata::Error>>()?;
        let ids: Vec<InstanceId<demo::POOL>> = pools.iter().map(|p| p.id()).collect();
        serve(&shared, &ids, workers, duration, &stop)?
    };
    let shared = Arc::into_inner(shared).expect("every thread of the service has ended");
    Ok((done, shared.prf))
}

/// The service's loop: the producer and `workers` workers in `pools` (the manager retiring
/// and hiring them) until `duration` passes or `stop` is set; then every thread is joined.
fn serve(
    shared: &Arc<Shared>,
    pools: &[InstanceId<demo::POOL>],
    workers: usize,
    duration: Option<Duration>,
    stop: &AtomicBool,
) -> Result<u64, prfdata::Error> {
    let producer = {
        let shared = Arc::clone(shared);
        std::thread::spawn(move || produce(&shared))
    };
    let hired = AtomicU32::new(0);
    let hire = |pool: usize| hire(shared, pools[pool], pool, hired.fetch_add(1, Relaxed) + 1);
    let mut staff: Vec<(usize, Worker)> = Vec::new();
    for i in 0..workers.max(1) {
        let pool = i % POOLS.len();
        staff.push((pool, hire(pool)?));
    }
    let start = Instant::now();
    let mut last_churn = Instant::now();
    let mut turn = 0usize;
    while !stop.load(Relaxed) && duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        if last_churn.elapsed() >= CHURN_EVERY && !staff.is_empty() {
            // Retire the longest-serving worker of one pool and hire a new one into it.
            last_churn = Instant::now();
            turn += 1;
            let pool = turn % POOLS.len();
            if let Some(pos) = staff.iter().position(|(p, _)| *p == pool) {
                // Hire first, then retire: the pool is never short of a worker.
                staff.push((pool, hire(pool)?));
                let (_, old) = staff.remove(pos);
                old.retire.store(true, Relaxed);
                shared.queue.ready.notify_all();
                let _ = old.thread.join();
            }
        }
    }

    shared.stop.store(true, Relaxed);
    shared.queue.ready.notify_all();
    let _ = producer.join();
    for (_, w) in staff {
        w.retire.store(true, Relaxed);
        shared.queue.ready.notify_all();
        let _ = w.thread.join();
    }
    let done = shared.prf.get_ctr32(demo::JOBS_PER_SEC, ()).load(Relaxed) as u32;
    Ok(u64::from(done))
}

/// Activates the block (saying so when it joined another process's), sets the uptime, and
/// registers the on-demand and watched counters.
fn open() -> Result<Arc<Shared>, prfdata::Error> {
    let prf = PrfData::activate()?;
    if let Some(pid) = another_member(&prf) {
        note!(
            "joined the block another process of PrfDataDemo publishes (pid {pid}): \
             counters add up; set PRFDATA_SHM_DIR to run apart"
        );
    }
    // PERF_ELAPSED_TIME holds the start time as a FILETIME; monitors show the seconds since.
    prf.set_elapsed_start(demo::UPTIME, (), SystemTime::now());
    // Computed only when a monitor asks (the Windows 95 stat servers' PSTF_FUNCPTR).
    prf.on_demand().serve(demo::OPEN_FILES, || {
        std::fs::read_dir("/proc/self/fd").map_or(-1, |fds| fds.count() as i32)
    })?;
    // The Windows 95 stat-server interface: a stat that is expensive to maintain is kept only while
    // someone watches it.
    prf.watch().on_change(|event| {
        if event.is_for(demo::CACHE_SCANNED) {
            if event.is_start() {
                note!("a monitor watches \"Cache entries scanned\": scanning the cache");
            } else {
                note!("nobody watches \"Cache entries scanned\": cache scans stopped");
            }
        }
    });
    let shared = Arc::new(Shared {
        prf,
        queue: Queue::default(),
        stop: AtomicBool::new(false),
        cache: Mutex::new(HashMap::new()),
    });
    Ok(shared)
}

/// Another live process on the block `prf` just activated, if it joined one: the process that
/// published it when it is still there, else any other member.
fn another_member(prf: &PrfData) -> Option<u32> {
    let reader = prfdata::reader::BlockReader::open_path("PrfDataDemo", prf.path()).ok()?;
    let me = std::process::id();
    let others: Vec<u32> = reader
        .members()
        .ok()?
        .into_iter()
        .filter(|p| p.pid != me && p.is_alive())
        .map(|p| p.pid)
        .collect();
    let publisher = reader.owner_pid();
    if others.contains(&publisher) {
        Some(publisher)
    } else {
        others.first().copied()
    }
}

/// Adds worker `n` of pool `pool_index` (instance `pool`) and starts its thread.
fn hire(
    shared: &Arc<Shared>,
    pool: InstanceId<demo::POOL>,
    pool_index: usize,
    n: u32,
) -> Result<Worker, prfdata::Error> {
    let name = format!("{}-{n}", POOLS[pool_index]);
    let inst = shared
        .prf
        .add_instance(demo::WORKER, InstanceSpec::named(&name).parent(pool))?;
    shared
        .prf
        .get_ctr32(demo::POOL_WORKERS, pool)
        .fetch_add(1, Relaxed);
    let retire = Arc::new(AtomicBool::new(false));
    let thread = {
        let (shared, retire) = (Arc::clone(shared), Arc::clone(&retire));
        std::thread::spawn(move || {
            work(&shared, inst, &retire, pool_index);
            shared
                .prf
                .get_ctr32(demo::POOL_WORKERS, pool)
                .fetch_sub(1, Relaxed);
            let _ = shared.prf.remove_instance(inst);
        })
    };
    Ok(Worker { retire, thread })
}

/// The producer: every [`PRODUCE_EVERY`] it tops the queue up to a backlog that rises and falls
/// over [`RUSH_CYCLE`] (half of [`TIDE`] at the start, then up to all of it and down to none), so
/// the queue length, the latency and the rates move while the workers drain it.
fn produce(shared: &Shared) {
    let start = Instant::now();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    while !shared.stop.load(Relaxed) {
        let turn = start.elapsed().as_secs_f64() / RUSH_CYCLE.as_secs_f64();
        let target = (TIDE / 2.0 * (1.0 + (turn * std::f64::consts::TAU).sin())) as usize;
        {
            let mut jobs = shared.lock_jobs();
            while jobs.len() < target.min(QUEUE_LIMIT) {
                rng = xorshift(rng);
                let len = 256 + (rng % 4096) as usize;
                jobs.push_back(Job {
                    submitted: clock::perf_counter(),
                    payload: vec![(rng & 0xff) as u8; len],
                    key: rng % 512,
                });
                shared
                    .prf
                    .get_ctr64(demo::QUEUED_KIB, ())
                    .fetch_add(len as i64, Relaxed);
            }
            shared
                .prf
                .get_ctr32(demo::QUEUE_LENGTH, ())
                .store(jobs.len() as i32, Relaxed);
        }
        shared.queue.ready.notify_all();
        if shared.prf.watch().is_watched(demo::CACHE_SCANNED) {
            scan_cache(shared);
        } else {
            shared
                .prf
                .get_ctr32(demo::CACHE_SCANNED, ())
                .store(0, Relaxed);
        }
        std::thread::sleep(PRODUCE_EVERY);
    }
}

/// The costly statistic: walks every cache entry (under the cache's lock) and publishes how
/// many it visited. Run only while a monitor watches `Cache entries scanned`.
fn scan_cache(shared: &Shared) {
    let visited = shared
        .cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter(|(_, v)| std::hint::black_box(v) == v)
        .count();
    shared
        .prf
        .get_ctr32(demo::CACHE_SCANNED, ())
        .store(i32::try_from(visited).unwrap_or(i32::MAX), Relaxed);
}

/// A worker: takes jobs until retired, and accounts for each.
fn work(shared: &Shared, me: InstanceId<demo::WORKER>, retire: &AtomicBool, pool: usize) {
    let prf = &shared.prf;
    // Histogram handles belong to their thread: taken once, outside the job loop.
    let latency = prf.histogram(demo::JOB_LATENCY, ());
    let my_latency = prf.histogram(demo::WORKER_LATENCY, me);
    while !retire.load(Relaxed) {
        let job = {
            let mut jobs = shared.lock_jobs();
            loop {
                if retire.load(Relaxed) {
                    return;
                }
                if let Some(job) = jobs.pop_front() {
                    prf.get_ctr32(demo::QUEUE_LENGTH, ())
                        .store(jobs.len() as i32, Relaxed);
                    prf.get_ctr64(demo::QUEUED_KIB, ())
                        .fetch_sub(job.payload.len() as i64, Relaxed);
                    break job;
                }
                jobs = shared
                    .queue
                    .ready
                    .wait_timeout(jobs, Duration::from_millis(50))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        };
        let began = clock::perf_counter();
        let hit = {
            let mut cache = shared.cache.lock().unwrap_or_else(PoisonError::into_inner);
            let hit = cache.contains_key(&job.key);
            if !hit {
                if cache.len() > 256 {
                    cache.clear();
                }
                cache.insert(job.key, job.key.wrapping_mul(31));
            }
            hit
        };
        // The work: hash the payload; bulk jobs hash it more times.
        let passes = if pool == 0 { 4 } else { 16 };
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for _ in 0..passes {
            for b in &job.payload {
                h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
            }
        }
        std::hint::black_box(h);
        let ended = clock::perf_counter();
        account(prf, me, hit, job.payload.len(), ended - began);
        {
            // Latency and its base change together, as collectors must see them.
            let _whole = prf.lock_ctrs();
            let latency = (ended - job.submitted).clamp(0, i64::from(i32::MAX)) as i32;
            prf.get_ctr32(demo::AVG_LATENCY, ())
                .fetch_add(latency, Relaxed);
            prf.get_ctr32(demo::AVG_LATENCY_BASE, ())
                .fetch_add(1, Relaxed);
        }
        let waited = ticks_to_duration(ended - job.submitted);
        latency.record_duration(waited);
        my_latency.record_duration(waited);
        // Simulated I/O between jobs.
        std::thread::sleep(JOB_IO);
    }
}

/// A job's counts: the service's rates and cache lookups, and the worker's busy time and jobs.
fn account(prf: &PrfData, me: InstanceId<demo::WORKER>, hit: bool, len: usize, busy: i64) {
    prf.get_ctr32(demo::JOBS_PER_SEC, ()).fetch_add(1, Relaxed);
    prf.get_ctr64(demo::BYTES_PER_SEC, ())
        .fetch_add(len as i64, Relaxed);
    prf.get_ctr32(demo::CACHE_LOOKUPS, ()).fetch_add(1, Relaxed);
    if hit {
        prf.get_ctr32(demo::CACHE_HIT_RATIO, ())
            .fetch_add(1, Relaxed);
        prf.get_ctr32(demo::CACHE_HITS, ()).fetch_add(1, Relaxed);
    } else {
        prf.get_ctr32(demo::CACHE_MISSES, ()).fetch_add(1, Relaxed);
    }
    prf.get_ctr64(demo::BUSY, me).fetch_add(busy, Relaxed);
    prf.get_ctr64(demo::JOBS_DONE, me).fetch_add(1, Relaxed);
    prf.get_ctr32(demo::WORKER_JOBS_PER_SEC, me)
        .fetch_add(1, Relaxed);
}

/// A span of [`clock::perf_counter`] ticks as a duration (a negative span as zero).
fn ticks_to_duration(ticks: i64) -> Duration {
    let nanos_per_tick = 1_000_000_000 / clock::PERF_FREQUENCY as u64;
    Duration::from_nanos(
        u64::try_from(ticks)
            .unwrap_or(0)
            .saturating_mul(nanos_per_tick),
    )
}

pub(crate) fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

//! `demo-app run --processes N`: worker *processes* beside the service's threads. The
//! main process activates the block; each worker process (this executable, hidden subcommand
//! `worker`) attaches, adds its own process-owned instance of "PrfData Demo Process" and counts
//! jobs. Workers are recycled every few seconds (they exit on their own) and one is killed with
//! `SIGKILL` now and then; the supervisor starts a new one in its place. The object's `_Total`
//! keeps what departed workers completed, so totals and rates stay steady while they churn.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::counters::demo::{self, PrfData};
use crate::notes::note;

/// How often the supervisor kills a worker process with `SIGKILL`.
const KILL_EVERY: Duration = Duration::from_secs(5);
/// How long a worker process lives before it exits on its own: this plus up to as much again.
const LIFETIME: Duration = Duration::from_secs(2);
/// How long a worker waits for the main process's block at start.
const ATTACH_WAIT: Duration = Duration::from_secs(10);

/// The worker process: attaches, works for `lifetime` (or until its stdin closes: the supervisor
/// is gone or stopping), removes its instance and exits.
pub fn worker(lifetime: Duration) -> Result<(), String> {
    let start = Instant::now();
    let prf = loop {
        match PrfData::attach() {
            Ok(prf) => break prf,
            Err(prfdata::Error::NotActive { .. }) if start.elapsed() < ATTACH_WAIT => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let name = format!("pid-{}", std::process::id());
    let me = prf
        .add_instance(
            demo::PROCESS,
            prfdata::InstanceSpec::named(&name).process_owned(),
        )
        .map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            // EOF (or an error) on stdin: the supervisor closed it or died.
            let mut sink = [0u8; 64];
            while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
            stop.store(true, Relaxed);
        });
    }
    let mut x = u64::from(std::process::id()) | 1;
    while !stop.load(Relaxed) && start.elapsed() < lifetime {
        x = crate::service::xorshift(x);
        std::thread::sleep(Duration::from_millis(5 + x % 20)); // a job
        prf.get_ctr64(demo::PROC_JOBS_DONE, me)
            .fetch_add(1, Relaxed);
        prf.get_ctr32(demo::PROC_JOBS_PER_SEC, me)
            .fetch_add(1, Relaxed);
    }
    // Its count moves to the object's retired share; a killed worker's is moved by the next
    // process that adds or removes an instance.
    prf.remove_instance(me).map_err(|e| e.to_string())
}

/// Keeps `n` worker processes running until `stop` is set, then closes their stdin and waits for
/// them (killing any that does not exit within a few seconds).
pub fn supervise(n: usize, stop: &AtomicBool) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let mut rng = Instant::now().elapsed().subsec_nanos() as u64 | 1;
    let mut workers: Vec<Option<Child>> = (0..n).map(|_| None).collect();
    let mut last_kill = Instant::now();
    while !stop.load(Relaxed) {
        for slot in workers.iter_mut() {
            let exited = match slot {
                Some(child) => child.try_wait().map_or(true, |s| s.is_some()),
                None => true,
            };
            if exited {
                rng = crate::service::xorshift(rng);
                let lifetime = LIFETIME + Duration::from_millis(rng % LIFETIME.as_millis() as u64);
                let child = Command::new(&exe)
                    .arg("worker")
                    .arg("--lifetime-ms")
                    .arg(lifetime.as_millis().to_string())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("cannot start a worker process: {e}"))?;
                *slot = Some(child);
            }
        }
        if last_kill.elapsed() >= KILL_EVERY {
            last_kill = Instant::now();
            rng = crate::service::xorshift(rng);
            if let Some(child) = workers[rng as usize % n].as_mut() {
                note!("killing worker process {} (SIGKILL)", child.id());
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for child in workers.iter_mut().flatten() {
        drop(child.stdin.take());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for mut child in workers.into_iter().flatten() {
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(())
}

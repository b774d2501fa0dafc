//! A service that installs its own counters, publishes them until Ctrl-C and removes its
//! instances on the way out. From the clone:
//! `cargo run -p prfdata --example my_service --features install`.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

prfdata::prfdata_map! {
    mod jobs_map {
        app: "MyService",
        object JOBS {
            name: "My Service Jobs", help: "Jobs processed by my service.",
            counters {
                DONE: CounterCounter { name: "Jobs/sec", help: "Jobs done per second." },
                LATENCY: AverageTimer { name: "Avg. job time", help: "Seconds per job." },
                LATENCY_BASE: AverageBase,
            }
        }
        object WORKER {
            name: "My Service Worker", help: "One worker thread.",
            detail: Advanced, default: BUSY, instances: { max: 64, name_len: 32 },
            counters {
                BUSY: Timer100Ns { name: "% Busy", help: "Time the worker was busy.", detail: Novice },
            }
        }
    }
}

use jobs_map::{BUSY, DONE, LATENCY, LATENCY_BASE, WORKER};

/// Runs the service; an error ends it with one sentence on stderr.
pub fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("my_service: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    // Once, at setup: the names into the registry, with the provider library collectors load
    // ($PRFDATA_PROVIDER, else the libprfdata_provider.so `cargo build --workspace` put
    // beside this program or in the folder above it).
    jobs_map::PrfData::install(&prfdata::install::InstallOptions {
        library: prfdata::install::provider_library()?,
        ini_dir: prfdata::install::ini_dir()?, // <app>.ini and .h, beside the registry
        replace: true,
    })?;
    // At run time: the shared block, instances and counters.
    let prf = jobs_map::PrfData::activate()?;
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = Arc::clone(&stop);
    ctrlc::set_handler(move || on_signal.store(true, Relaxed))?;
    // The instance is removed when `worker` is dropped, on an error path too.
    let worker = prf.instances().guard(prf.add_instance(WORKER, "worker 1")?);
    println!("MyService publishes its counters; Ctrl-C stops it");
    while !stop.load(Relaxed) {
        let started = Instant::now();
        std::thread::sleep(Duration::from_millis(100)); // a job's work
        let ticks = started.elapsed().as_nanos() as i64 / 100; // in 100 ns
        prf.get_ctr32(DONE, ()).fetch_add(1, Relaxed); // &AtomicI32: the type's width
        prf.get_ctr32(LATENCY, ()).fetch_add(ticks as i32, Relaxed);
        prf.get_ctr32(LATENCY_BASE, ()).fetch_add(1, Relaxed);
        prf.get_ctr64(BUSY, *worker).fetch_add(ticks, Relaxed); // &AtomicI64
    }
    Ok(())
}

//! `demo-app`: a small job-processing service instrumented with prfdata, as HWInputMon was with
//! CPrfData (Richter, MSJ, August 1998), under the driver name `PrfDataDemo`.
//!
//! - `demo-app install` puts the map's names and help into the registry and records the provider
//!   library (`$PRFDATA_PROVIDER`, else `libprfdata_provider.so` next to this executable or a
//!   folder up); the `.ini` and `.h` it writes go to `ini` under the registry's root
//!   (`PRFDATA_REGISTRY`), not beside the library.
//! - `demo-app run [--duration S] [--workers N] [--processes P]` publishes counters while it
//!   works; Ctrl-C stops it cleanly and removes its block (or leaves it to the other processes
//!   still publishing it, and says so). With `--processes P`, P worker
//!   processes attach to the block too, each with its own instance of "PrfData Demo Process",
//!   recycled every few seconds and now and then killed (`processes`).
//! - `demo-app uninstall` removes it from the registry.
//! - `demo-app live [--duration S] [--workers N]` is the whole tour in one command: install, run,
//!   and watch the counters live through the collector (`prfmon watch` in a terminal,
//!   `prfmon typeperf` otherwise, whose CSV is then all of stdout: the notes go to stderr),
//!   which loads the provider library as perflib would. While `watch` owns the terminal, the
//!   service's notes (a collector starts or stops watching a counter, the block was joined)
//!   are held and written to stderr, in order, once it exits (`notes`).
//! - Two runs of the app by one user share its block (one block folder, `PRFDATA_SHM_DIR`): the
//!   second says it joined, the counters add up, and the first to stop leaves the block to the
//!   other.

mod counters;
mod notes;
mod processes;
mod service;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use prfdata::install::InstallOptions;
use prfdata::Departure;

use counters::demo::PrfData;
use notes::note;

/// A job-processing service that publishes prfdata counters (driver name PrfDataDemo).
#[derive(Parser, Debug)]
#[command(name = "demo-app", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Install the counter names and register the provider library ($PRFDATA_PROVIDER, else the
    /// one next to this executable or a folder up).
    Install {
        /// The provider library to register instead of the one found.
        #[arg(long)]
        library: Option<PathBuf>,
        /// Where to write PrfDataDemo.ini and PrfDataDemo.h (default: `ini` under the
        /// registry's root, PRFDATA_REGISTRY or ~/.local/state/prfdata).
        #[arg(long)]
        ini_dir: Option<PathBuf>,
    },
    /// Remove the counter names and the provider registration.
    Uninstall,
    /// Install, run the service, and watch its counters live through prfmon (q or Ctrl-C quits).
    Live {
        /// Seconds to run (default: until you quit).
        #[arg(long)]
        duration: Option<f64>,
        /// Worker threads.
        #[arg(long, default_value_t = 4)]
        workers: usize,
    },
    /// Run the service, publishing counters, until the duration passes or Ctrl-C.
    Run {
        /// Seconds to run (default: until Ctrl-C).
        #[arg(long)]
        duration: Option<f64>,
        /// Worker threads.
        #[arg(long, default_value_t = 4)]
        workers: usize,
        /// Worker processes besides the threads (recycled every few seconds, one killed now
        /// and then): see "PrfData Demo Process" and its _Total.
        #[arg(long, default_value_t = 0)]
        processes: usize,
    },
    /// A worker process of `run --processes` (started by it).
    #[command(hide = true)]
    Worker {
        /// Milliseconds to work before exiting.
        #[arg(long)]
        lifetime_ms: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    notes::log_to_notes();
    let result = match cli.command {
        Command::Install { library, ini_dir } => {
            install(library, ini_dir).map(|note| println!("{note}"))
        }
        Command::Uninstall => PrfData::uninstall()
            .map(|r| {
                println!(
                    "uninstalled PrfDataDemo (indexes {}..={})",
                    r.first_counter, r.last_help
                )
            })
            .map_err(|e| e.to_string()),
        Command::Run {
            duration,
            workers,
            processes,
        } => run(duration, workers, processes),
        Command::Worker { lifetime_ms } => {
            // Ctrl-C reaches the whole process group: a worker stops when the supervisor
            // closes its stdin instead.
            let _ = ctrlc::set_handler(|| {});
            processes::worker(Duration::from_millis(lifetime_ms))
        }
        Command::Live { duration, workers } => live(duration, workers),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo-app: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Installs the demo: its names, and the provider `library` (default: the one
/// `prfdata::install::provider_library` finds); the .ini and .h go to `ini_dir` (default: `ini`
/// under the registry's root, so a sandboxed run writes nothing beside the programs). Returns
/// the note to print.
fn install(library: Option<PathBuf>, ini_dir: Option<PathBuf>) -> Result<String, String> {
    // The lookup every app that installs itself uses: `PRFDATA_PROVIDER`, else beside this
    // executable or one folder up; an explicit library must be an existing regular file.
    let library = match library {
        Some(l) => {
            prfdata::install::check_library(&l).map_err(|e| e.to_string())?;
            l.canonicalize()
                .map_err(|e| format!("{}: {e}", l.display()))?
        }
        None => prfdata::install::provider_library().map_err(|e| e.to_string())?,
    };
    let ini_dir = match ini_dir {
        Some(dir) => dir,
        None => prfdata::install::ini_dir().map_err(|e| e.to_string())?,
    };
    let range = PrfData::install(&InstallOptions {
        library: library.clone(),
        ini_dir,
        replace: true,
    })
    .map_err(|e| e.to_string())?;
    Ok(format!(
        "installed PrfDataDemo: names {}..={}, help {}..={}, provider {}",
        range.first_counter,
        range.last_counter,
        range.first_help,
        range.last_help,
        library.display()
    ))
}

/// The counters `live` shows: the service's, then the workers'.
const LIVE_PATHS: [&str; 5] = [
    r"\PrfData Demo Service\Jobs/sec",
    r"\PrfData Demo Service\Bytes/sec",
    r"\PrfData Demo Service\Queue length",
    r"\PrfData Demo Service\Avg. job latency",
    r"\PrfData Demo Service\Cache hit ratio",
];
/// The workers on the terminal's chart: each, as they come and go.
const LIVE_WORKERS_CHART: &str = r"\PrfData Demo Worker(*)\% Busy";
/// The workers in CSV: their `_Total`, since a CSV's columns are fixed at its first sample
/// (a wildcard's would go blank as the workers it matched retire).
const LIVE_WORKERS_CSV: &str = r"\PrfData Demo Worker(_Total)\% Busy";

fn live(duration: Option<f64>, workers: usize) -> Result<(), String> {
    use std::io::IsTerminal;
    let prfmon = std::env::current_exe()
        .map_err(|e| format!("cannot find myself: {e}"))?
        .with_file_name("prfmon");
    if !prfmon.exists() {
        return Err(format!(
            "{} does not exist; build everything with `cargo build --workspace`",
            prfmon.display()
        ));
    }
    // On stderr: without a terminal, stdout is prfmon's CSV alone.
    note!("{}", install(None, None)?);
    let duration = parse_duration(duration)?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .map_err(|e| format!("cannot handle Ctrl-C: {e}"))?;
    }
    let service = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || service::run(workers, duration, stop))
    };
    // Wait until the block is there, so the first collection already sees the app.
    let block = prfdata::block_path("PrfDataDemo").map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    while !block.exists() && start.elapsed() < Duration::from_secs(10) && !service.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let samples = duration.map(|d| d.as_secs().max(1));
    let mut cmd = std::process::Command::new(&prfmon);
    let on_terminal = std::io::stdout().is_terminal();
    if on_terminal {
        cmd.arg("watch")
            .args(LIVE_PATHS)
            .arg(LIVE_WORKERS_CHART)
            .args(["--interval", "1"]);
        if let Some(n) = samples {
            cmd.args(["--frames", &n.to_string()]);
        }
    } else {
        cmd.arg("typeperf")
            .args(LIVE_PATHS)
            .arg(LIVE_WORKERS_CSV)
            .args(["-si", "1"]);
        if let Some(n) = samples {
            cmd.args(["-sc", &n.to_string()]);
        }
    }
    let watched = {
        // `watch` owns the terminal until it exits: the service's notes wait for it.
        let _held = on_terminal.then(notes::hold);
        cmd.status()
            .map_err(|e| format!("cannot run {}: {e}", prfmon.display()))
    };
    stop.store(true, Ordering::Relaxed);
    let (done, prf) = service
        .join()
        .map_err(|_| "the service thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    note!("{}", stopped(done, prf.close()));
    match watched? {
        status if status.success() => Ok(()),
        status => Err(format!("prfmon ended with {status}")),
    }
}

fn parse_duration(duration: Option<f64>) -> Result<Option<Duration>, String> {
    match duration {
        Some(s) if s.is_finite() && s >= 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(format!("--duration {s} is not a number of seconds")),
        None => Ok(None),
    }
}

fn run(duration: Option<f64>, workers: usize, processes: usize) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .map_err(|e| format!("cannot handle Ctrl-C: {e}"))?;
    }
    let duration = parse_duration(duration)?;
    note!("running with {workers} workers and {processes} worker processes; Ctrl-C to stop");
    let service_done = Arc::new(AtomicBool::new(false));
    let supervisor = (processes > 0).then(|| {
        let done = Arc::clone(&service_done);
        std::thread::spawn(move || processes::supervise(processes, &done))
    });
    let result = service::run(workers, duration, stop);
    // The worker processes leave first: this process, still a member, then knows whether it
    // is the last one out.
    service_done.store(true, Ordering::Relaxed);
    if let Some(s) = supervisor {
        s.join()
            .map_err(|_| "the supervisor thread panicked".to_string())??;
    }
    let (done, prf) = result.map_err(|e| e.to_string())?;
    note!("{}", stopped(done, prf.close()));
    Ok(())
}

/// The last line of a run: the jobs done, and what leaving the block did.
fn stopped(done: u64, departure: Departure) -> String {
    let left = match departure {
        Departure::Removed => "block removed".to_string(),
        Departure::StillHeld { members } => format!(
            "left the block to {members} other process{} of PrfDataDemo (it stays published)",
            if members == 1 { "" } else { "es" }
        ),
        Departure::Abandoned { reason } => format!("could not leave the block cleanly: {reason}"),
    };
    format!("stopped after {done} jobs; {left}")
}

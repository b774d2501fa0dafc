//! `demo-app`: a small job-processing service instrumented with prfdata, as HWInputMon was with
//! CPrfData (seed 002), under the driver name `PrfDataDemo`.
//!
//! - `demo-app install` puts the map's names and help into the registry and records the provider
//!   library found next to this executable (`libprfdata_provider.so`).
//! - `demo-app run [--duration S] [--workers N]` publishes counters while it works; Ctrl-C stops
//!   it cleanly and removes its block.
//! - `demo-app uninstall` removes it from the registry.

mod counters;
mod service;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use prfdata::install::InstallOptions;

use counters::demo::PrfData;

/// A job-processing service that publishes prfdata counters (driver name PrfDataDemo).
#[derive(Parser, Debug)]
#[command(name = "demo-app", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Install the counter names and register the provider library (next to this executable).
    Install {
        /// The provider library to register instead of the one next to this executable.
        #[arg(long)]
        library: Option<PathBuf>,
        /// Where to write PrfDataDemo.ini and PrfDataDemo.h (default: beside the library).
        #[arg(long)]
        ini_dir: Option<PathBuf>,
    },
    /// Remove the counter names and the provider registration.
    Uninstall,
    /// Run the service, publishing counters, until the duration passes or Ctrl-C.
    Run {
        /// Seconds to run (default: until Ctrl-C).
        #[arg(long)]
        duration: Option<f64>,
        /// Worker threads.
        #[arg(long, default_value_t = 4)]
        workers: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Install { library, ini_dir } => install(library, ini_dir),
        Command::Uninstall => PrfData::uninstall()
            .map(|r| {
                println!(
                    "uninstalled PrfDataDemo (indexes {}..={})",
                    r.first_counter, r.last_help
                )
            })
            .map_err(|e| e.to_string()),
        Command::Run { duration, workers } => run(duration, workers),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo-app: {e}");
            ExitCode::FAILURE
        }
    }
}

fn install(library: Option<PathBuf>, ini_dir: Option<PathBuf>) -> Result<(), String> {
    let library = match library {
        Some(l) => l,
        None => {
            let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
            exe.with_file_name("libprfdata_provider.so")
        }
    };
    if !library.exists() {
        return Err(format!(
            "the provider library {} does not exist; build it with `cargo build -p prfdata-provider` \
             or pass --library",
            library.display()
        ));
    }
    let library = library
        .canonicalize()
        .map_err(|e| format!("{}: {e}", library.display()))?;
    let ini_dir =
        ini_dir.unwrap_or_else(|| library.parent().map(PathBuf::from).unwrap_or_default());
    let range = PrfData::install(&InstallOptions {
        library: library.clone(),
        ini_dir,
        replace: true,
    })
    .map_err(|e| e.to_string())?;
    println!(
        "installed PrfDataDemo: names {}..={}, help {}..={}, provider {}",
        range.first_counter,
        range.last_counter,
        range.first_help,
        range.last_help,
        library.display()
    );
    Ok(())
}

fn run(duration: Option<f64>, workers: usize) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .map_err(|e| format!("cannot handle Ctrl-C: {e}"))?;
    }
    let duration = match duration {
        Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => return Err(format!("--duration {s} is not a number of seconds")),
        None => None,
    };
    eprintln!("demo-app: running with {workers} workers; Ctrl-C to stop");
    let done = service::run(workers, duration, stop).map_err(|e| e.to_string())?;
    eprintln!("demo-app: stopped after {done} jobs; block removed");
    Ok(())
}

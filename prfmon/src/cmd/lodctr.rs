//! `prfmon lodctr` and `prfmon unlodctr`: the LodCtr / UnLodCtr utilities of seed 001 over the
//! library's typed lodctr, unlodctr, save and restore.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args};
use prfdata::registry::{
    lodctr, restore_settings, save_settings, unlodctr, FileRegistry, LodctrError, LodctrOptions,
};

/// `prfmon lodctr FILE.ini [--replace] | /S:FILE | /R:FILE`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("what").required(true).args(["ini", "save", "restore"])))]
pub struct LodctrArgs {
    /// The driver's counter .INI file.
    ini: Option<PathBuf>,
    /// Reload a driver whose counters are already loaded.
    #[arg(long, requires = "ini")]
    replace: bool,
    /// Save the Perflib names and the services' performance values to FILE (`/S:FILE`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ini", "restore"])]
    save: Option<PathBuf>,
    /// Restore what `/S:` saved from FILE (`/R:FILE`).
    #[arg(long, value_name = "FILE", conflicts_with = "ini")]
    restore: Option<PathBuf>,
}

/// `prfmon unlodctr DRIVERNAME`.
#[derive(Args, Debug)]
pub struct UnlodctrArgs {
    /// The driver: its key name under `HKLM\SYSTEM\CurrentControlSet\Services`.
    driver: String,
}

fn finish(result: Result<String, LodctrError>, tool: &str) -> ExitCode {
    match result {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{tool}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `prfmon lodctr`.
pub fn run_lodctr(args: LodctrArgs) -> ExitCode {
    let result = FileRegistry::open_default()
        .map_err(LodctrError::from)
        .and_then(|registry| {
            if let Some(file) = args.save {
                save_settings(&registry, &file)?;
                Ok(format!(
                    "Saved the performance settings to {}",
                    file.display()
                ))
            } else if let Some(file) = args.restore {
                restore_settings(&registry, &file)?;
                Ok(format!(
                    "Restored the performance settings from {}",
                    file.display()
                ))
            } else if let Some(ini) = args.ini {
                let options = LodctrOptions {
                    replace: args.replace,
                    service: None,
                };
                let range = lodctr(&registry, &ini, &options)?;
                Ok(format!("Loaded counters for {range}"))
            } else {
                Err(LodctrError::Usage(
                    "lodctr FILE.ini | lodctr /S:FILE | lodctr /R:FILE".into(),
                ))
            }
        });
    finish(result, "lodctr")
}

/// Runs `prfmon unlodctr`.
pub fn run_unlodctr(args: UnlodctrArgs) -> ExitCode {
    let result = FileRegistry::open_default()
        .map_err(LodctrError::from)
        .and_then(|registry| unlodctr(&registry, &args.driver))
        .map(|range| format!("Removed counters for {range}"));
    finish(result, "unlodctr")
}

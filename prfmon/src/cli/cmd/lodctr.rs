//! `prfmon lodctr` and `prfmon unlodctr`: the LodCtr / UnLodCtr utilities of the lodctr design
//! specification over the library's typed lodctr, unlodctr, save and restore, and later lodctr's
//! `/E:` and `/D:` (enable or disable a service's provider).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args};
use prfdata_registry::{
    enabled_message, lodctr, performance_services, restore_settings, save_settings,
    set_service_enabled, unlodctr, FileRegistry, LodctrError, LodctrOptions,
};

use crate::cli::error::CliError;
use crate::cli::stdout::outln;

/// `prfmon lodctr FILE.ini [--replace] | /S:FILE | /R:FILE | /E:SERVICE | /D:SERVICE`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("what").required(true).multiple(false)
    .args(["ini", "save", "restore", "enable", "disable"])))]
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
    /// Enable SERVICE's provider: delete its `Disable Performance Counters` (`/E:SERVICE`).
    #[arg(long, value_name = "SERVICE")]
    enable: Option<String>,
    /// Disable SERVICE's provider: `Disable Performance Counters` = 1 (`/D:SERVICE`).
    #[arg(long, value_name = "SERVICE")]
    disable: Option<String>,
}

/// `prfmon unlodctr DRIVERNAME`.
#[derive(Args, Debug)]
pub struct UnlodctrArgs {
    /// The driver: its key name under `HKLM\SYSTEM\CurrentControlSet\Services`.
    driver: String,
}

/// Prints what `result` says was done; an error is `tool`'s (`main` says it).
fn finish(result: Result<String, LodctrError>) -> Result<ExitCode, CliError> {
    outln!("{}", result.map_err(|e| e.to_string())?);
    Ok(ExitCode::SUCCESS)
}

/// Runs `prfmon lodctr`.
pub fn run_lodctr(args: LodctrArgs) -> Result<ExitCode, CliError> {
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
            } else if let Some((service, enabled)) = args
                .enable
                .map(|s| (s, true))
                .or(args.disable.map(|s| (s, false)))
            {
                set_service_enabled(&registry, &service, enabled)?;
                Ok(enabled_message(&service, enabled))
            } else if let Some(ini) = args.ini {
                let options = LodctrOptions {
                    replace: args.replace,
                    service: None,
                };
                let range = lodctr(&registry, &ini, &options)?;
                Ok(format!("Loaded counters for {range}"))
            } else {
                Err(LodctrError::Usage(
                    "lodctr FILE.ini | /S:FILE | /R:FILE | /E:SERVICE | /D:SERVICE".into(),
                ))
            }
        });
    finish(result)
}

/// Runs `prfmon unlodctr`.
pub fn run_unlodctr(args: UnlodctrArgs) -> Result<ExitCode, CliError> {
    let registry = FileRegistry::open_default().map_err(|e| e.to_string())?;
    match unlodctr(&registry, &args.driver) {
        Ok(range) => finish(Ok(format!("Removed counters for {range}"))),
        Err(e @ LodctrError::NotLoaded { .. }) => Err(with_near_driver(&registry, &args.driver, e)),
        Err(e) => finish(Err(e)),
    }
}

/// `e`, followed by `; did you mean NAME?` when a driver with counters loaded has a name near
/// `driver` (a misspelling).
fn with_near_driver(registry: &FileRegistry, driver: &str, e: LodctrError) -> CliError {
    let loaded: Vec<String> = performance_services(registry)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.first_counter.is_some())
        .map(|s| s.name)
        .collect();
    let near = prfmon::names::near(driver, loaded.iter().map(String::as_str));
    match near.first() {
        Some(name) => format!("{e}; did you mean {name}?").into(),
        None => e.to_string().into(),
    }
}

//! `prfmon decode FILE [--json] [--lang 009]`: reads a PERF_DATA_BLOCK (as `query --raw`
//! writes it) and prints it as `query` does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use prfdata::registry::FileRegistry;
use prfmon::decode::DataSnapshot;
use prfmon::names::Names;

/// `prfmon decode ...`.
#[derive(Args, Debug)]
pub struct DecodeArgs {
    /// The file holding PERF_DATA_BLOCK bytes.
    file: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// The language of names and explain texts (a Perflib subkey).
    #[arg(long, default_value = "009")]
    lang: String,
}

/// Prints a snapshot as a table or as JSON (shared with `query`); `services[i]` is the
/// service that returned object `i` (empty when not known, as for a file).
pub fn print(snapshot: &DataSnapshot, names: &Names, services: &[String], json: bool) {
    if json {
        let value = prfmon::report::json_with_services(snapshot, names, services);
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    } else {
        print!(
            "{}",
            prfmon::report::table_with_services(snapshot, names, services)
        );
    }
}

/// Runs `prfmon decode`.
pub fn run(args: DecodeArgs) -> ExitCode {
    let bytes = match std::fs::read(&args.file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("prfmon decode: cannot read {}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    let snapshot = match prfmon::decode::decode(&bytes) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("prfmon decode: {}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    let names = match FileRegistry::open_default() {
        Ok(registry) => super::load_names(&registry, &args.lang),
        Err(_) => Names::default(),
    };
    print(&snapshot, &names, &[], args.json);
    ExitCode::SUCCESS
}

//! `prfmon query [Global|Costly|"i1 i2 ..."] [--raw FILE] [--json] [--lang 009]`: one
//! collection, printed as a table or JSON with the service that returned each object; `--raw`
//! also writes the exact PERF_DATA_BLOCK (which has no room for the services).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use prfmon::collector::Collector;

/// `prfmon query ...`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// What to collect: `Global` (the default), `Costly`, or object name indexes (or names),
    /// e.g. `"1848 1860"`.
    query: Vec<String>,
    /// Also write the PERF_DATA_BLOCK bytes, exactly as collected, to FILE.
    #[arg(long, value_name = "FILE")]
    raw: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// The language of names and explain texts (a Perflib subkey).
    #[arg(long, default_value = "009")]
    lang: String,
    #[command(flatten)]
    collector: super::CollectorArgs,
}

/// Runs `prfmon query`.
pub fn run(args: QueryArgs) -> ExitCode {
    let registry = match args.collector.open_registry() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("prfmon query: {e}");
            return ExitCode::FAILURE;
        }
    };
    let names = super::load_names(&registry, &args.lang);
    let value = match super::query_value(&args.query, &names) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("prfmon query: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = match args.collector.options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("prfmon query: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut collector = match Collector::open(registry, options) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("prfmon query: {e}");
            return ExitCode::FAILURE;
        }
    };
    let collection = collector.collect_with_services(&value);
    collector.close();
    let bytes = collection.bytes;
    if let Some(file) = &args.raw {
        if let Err(e) = std::fs::write(file, &bytes) {
            eprintln!("prfmon query: cannot write {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    match prfmon::decode::decode(&bytes) {
        Ok(snapshot) => {
            super::decode::print(&snapshot, &names, &collection.services, args.json);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("prfmon query: the collection does not decode: {e}");
            ExitCode::FAILURE
        }
    }
}

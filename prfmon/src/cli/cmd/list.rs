//! `prfmon list [OBJECT] [--detail novice|advanced|expert|wizard] [--lang 009] [--verbose] [--json]
//! [--in-process]`: the objects and counters the providers offer (one Global and one Costly
//! collection), with the service that offers each object and KB Q174631's Name, Description and
//! Differentiate, filtered by detail level; `--verbose` adds each counter's type code, default
//! scale and unit (JSON always has them), how many collectors watch each object and counter
//! now (their live leases; not known for `--computer`), and each histogram's buckets (scheme,
//! range and stated error, or bounds; read from its object's first counter block) with the
//! percentile paths that read it. An installed service that published
//! nothing is said on stderr, with why ([`prfmon::absence`]).

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use prfdata_wire::snapshot::DataSnapshot;
use prfdata_wire::winperf::{
    PERF_DETAIL_ADVANCED, PERF_DETAIL_EXPERT, PERF_DETAIL_NOVICE, PERF_DETAIL_WIZARD,
};
use prfmon::absence;
use prfmon::catalog::catalog_with_services;
use prfmon::names::objects::{not_an_object, not_collected};
use prfmon::report::plural;
use prfmon::session::Machine;

use crate::cli::error::CliError;
use crate::cli::stdout::{errln, field, outln};

/// A detail level (winperf.h `PERF_DETAIL_*`).
#[derive(ValueEnum, Clone, Copy, Debug)]
enum Detail {
    Novice,
    Advanced,
    Expert,
    Wizard,
}

impl Detail {
    fn level(self) -> u32 {
        match self {
            Self::Novice => PERF_DETAIL_NOVICE,
            Self::Advanced => PERF_DETAIL_ADVANCED,
            Self::Expert => PERF_DETAIL_EXPERT,
            Self::Wizard => PERF_DETAIL_WIZARD,
        }
    }
}

/// `prfmon list ...`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only this object (its name or name index).
    object: Option<String>,
    /// Show objects and counters up to this detail level.
    #[arg(long, value_enum, default_value = "wizard")]
    detail: Detail,
    /// The language of names and explain texts (a Perflib subkey).
    #[arg(long, default_value = "009")]
    lang: String,
    /// Also print each counter's type code, default scale and unit, how many collectors
    /// watch each object and counter now (JSON: `watchers`), and each histogram's buckets.
    #[arg(short, long)]
    verbose: bool,
    /// Print JSON instead of text (every field, as with --verbose).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    collector: super::CollectorArgs,
    #[command(flatten)]
    remote: super::RemoteArgs,
}

/// Runs `prfmon list`.
pub fn run(args: ListArgs) -> Result<ExitCode, CliError> {
    let mut session = super::open_session("list", &args.lang, &args.collector, &args.remote, &[])?;
    let mut snapshots = Vec::new();
    let mut services = Vec::new();
    for value in ["Global", "Costly"] {
        let collection = session.collect(value)?;
        services.push(collection.services);
        // Read in place: an instance costs nothing here; a histogram's buckets are read from
        // its object's first counter block.
        let snapshot = prfdata_wire::snapshot::decode_owned(collection.bytes)
            .map_err(|e| format!("the {value} collection does not decode: {e}"))?;
        snapshots.push(snapshot);
    }
    let machine = session.close();
    let names = &machine.names;
    let mut objects = catalog_with_services(&snapshots, &services, names, args.detail.level());
    prfmon::catalog::with_factors(&mut objects, &machine.factors);
    if args.verbose {
        if let Ok(dir) = prfdata::shm_dir() {
            prfmon::catalog::with_watchers(&mut objects, &machine.apps, &dir);
        }
    }
    match &args.object {
        Some(word) => {
            let collected: Vec<&DataSnapshot> = snapshots.iter().collect();
            let computer = args.remote.machine(&[])?.map(|m| m.label);
            let why = computer.map(|c| absence::not_returned(&c, services.iter().flatten()));
            let index = wanted(word, &machine, &collected, why)?;
            objects.retain(|o| o.index == index);
            if objects.is_empty() {
                return Err(format!(
                    "object {} is above the detail level asked for: add --detail wizard",
                    field(&names.name(index))
                )
                .into());
            }
        }
        None => {
            let collected: Vec<u32> = objects.iter().map(|o| o.index).collect();
            for absence in absence::silent_services(&machine, &collected) {
                errln!("prfmon list: {absence}");
            }
        }
    }
    if args.json {
        outln!("{}", crate::cli::stdout::json(&objects));
    } else {
        objects.iter().for_each(|o| print_object(o, args.verbose));
    }
    Ok(ExitCode::SUCCESS)
}

/// The name index of the object `word` names, when the `collected` snapshots have it; else
/// the sentence that says what `word` names instead, or why its object is not collected
/// (`why`, when the caller knows it).
fn wanted(
    word: &str,
    machine: &Machine,
    collected: &[&DataSnapshot],
    why: Option<absence::Absence>,
) -> Result<u32, String> {
    let names = &machine.names;
    let Some(index) = names.index_of(word) else {
        return Err(not_an_object(word, None, machine, collected, "list"));
    };
    if collected
        .iter()
        .any(|s| s.objects.iter().any(|o| o.name_index == index))
    {
        return Ok(index);
    }
    Err(not_collected(word, index, machine, collected, "list", why))
}

/// Prints one object of the catalog, with its counters (`verbose`: with their type codes,
/// scales and units).
fn print_object(o: &prfmon::catalog::CatalogObject, verbose: bool) {
    outln!("Object: {} ({})", field(&o.name), o.index);
    outln!("  Service: {}", field(&o.services.join(", ")));
    outln!("  Description: {}", field(&o.description));
    outln!("  Detail: {}", o.detail);
    outln!("  Instances: {}", if o.instances { "yes" } else { "no" });
    if let Some(n) = o.watchers {
        outln!("  Watched by: {}", plural(n, "collector"));
    }
    for c in &o.counters {
        outln!("  Counter: {} ({})", field(&c.name), c.index);
        outln!("    Description: {}", field(&c.description));
        outln!("    Type: {}", c.type_name);
        outln!(
            "    Differentiate: {}",
            if c.differentiate { "TRUE" } else { "FALSE" }
        );
        outln!("    Detail: {}", c.detail);
        if let Some(f) = &c.factor {
            outln!("    Factor: {}", field(&f.to_string()));
        }
        if verbose {
            outln!("    Type code: 0x{:08X}", c.type_code);
            outln!("    Default scale: {}", c.default_scale);
            outln!(
                "    Unit: {}",
                if c.unit.is_empty() { "(none)" } else { c.unit }
            );
            if let Some(n) = c.watchers {
                outln!("    Watched by: {}", plural(n, "collector"));
            }
            if let Some(h) = &c.histogram {
                print_histogram(h);
            }
        }
    }
}

/// A histogram's lines under its counter (`--verbose`): its buckets, and the percentile paths
/// that read it.
fn print_histogram(h: &prfmon::catalog::CatalogHistogram) {
    match (&h.buckets, &h.unknown) {
        (Some(layout), _) => outln!("    Histogram: {layout}"),
        (None, Some(why)) => outln!("    Histogram: buckets {}", field(why)),
        (None, None) => outln!("    Histogram: buckets not known"),
    }
    let paths: Vec<String> = h
        .percentiles
        .iter()
        .map(|p| field(p).into_owned())
        .collect();
    outln!(
        "    Percentiles: {} (any :pQ, Q from 0.001 to 100)",
        paths.join(", ")
    );
}

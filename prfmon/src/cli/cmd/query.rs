//! `prfmon query [Global|Costly|"i1 i2 ..."] [--raw FILE] [--json] [--lang 009]`: one
//! collection, printed as a table or JSON with the service that returned each object; `--raw`
//! also writes the exact PERF_DATA_BLOCK (which has no room for the services).
//!
//! Objects named explicitly (by index or name) that no provider returned make the command exit
//! with status 1 after printing what was collected, with a message naming each; disabled
//! providers are named on stderr first, with the command that re-enables them.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::error::CliError;
use crate::cli::stdout::errln;
use clap::Args;
use prfdata_wire::snapshot::DataSnapshot;
use prfmon::absence;
use prfmon::names::objects::{self, query_value};
use prfmon::session::{Session, SessionError};

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
    #[command(flatten)]
    remote: super::RemoteArgs,
}

/// Runs `prfmon query`.
pub fn run(args: QueryArgs) -> Result<ExitCode, CliError> {
    let mut session = super::open_session("query", &args.lang, &args.collector, &args.remote, &[])?;
    let value = match query_value(&args.query, &session.machine().names) {
        Ok(value) => value,
        Err(word) => {
            let (global, _) = definitions(&mut session, "Global")?;
            let machine = session.machine();
            return Err(objects::not_an_object(&word, None, machine, &[&global], "query").into());
        }
    };
    let collection = session.collect(&value)?;
    if let Some(file) = &args.raw {
        std::fs::write(file, &collection.bytes)
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    }
    // The snapshot keeps the bytes (no copy) and reads them in place.
    let snapshot =
        prfdata_wire::snapshot::decode_owned(collection.bytes).map_err(SessionError::from)?;
    let missing: Vec<u32> = named_indexes(&value)
        .into_iter()
        .filter(|i| !snapshot.objects.iter().any(|o| o.name_index == *i))
        .collect();
    // Said after what was collected: a counter asked for as an object, or why it is absent.
    let global = if missing.is_empty() {
        None
    } else {
        Some(definitions(&mut session, "Global")?)
    };
    let machine = session.close();
    super::decode::print(&snapshot, &machine, &collection.services, args.json);
    let computer = args.remote.machine(&[])?.map(|m| m.label);
    for index in &missing {
        let name = machine.names.name(*index);
        let collected: Vec<&DataSnapshot> = global.iter().map(|(g, _)| g).collect();
        let answered = global.iter().flat_map(|(_, services)| services);
        let why = computer
            .as_deref()
            .map(|c| absence::not_returned(c, answered));
        let said = objects::not_collected(&name, *index, &machine, &collected, "query", why);
        errln!("prfmon query: {said}");
    }
    Ok(if missing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The object and counter definitions of one collection of `value` by `session`, with the
/// service of each object.
fn definitions(
    session: &mut Session,
    value: &str,
) -> Result<(DataSnapshot, Vec<String>), CliError> {
    let collection = session.collect(value)?;
    let view = prfdata_wire::view::DataView::parse(&collection.bytes)
        .map_err(|e| format!("the {value} collection does not decode: {e}"))?;
    Ok((view.to_definitions(), collection.services))
}

/// The object indexes a query value names explicitly: none for `Global`, `Costly` and
/// `Foreign...`, every number of an index list.
fn named_indexes(value: &str) -> Vec<u32> {
    let first = value.split_whitespace().next().unwrap_or("");
    if ["global", "costly"].contains(&first.to_ascii_lowercase().as_str())
        || first.starts_with("Foreign")
    {
        return Vec::new();
    }
    let mut out: Vec<u32> = Vec::new();
    for i in value.split_whitespace().filter_map(|w| w.parse().ok()) {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_index_lists_name_objects() {
        assert!(named_indexes("Global").is_empty());
        assert!(named_indexes("Costly").is_empty());
        assert!(named_indexes("Foreign box").is_empty());
        assert_eq!(named_indexes("1848 1860 1848"), [1848, 1860]);
    }
}

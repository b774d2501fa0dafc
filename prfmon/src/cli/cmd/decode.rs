//! `prfmon decode FILE [--json] [--lang 009]`: reads a PERF_DATA_BLOCK (as `query --raw`
//! writes it) and prints it as `query` does.
//!
//! FILE is the one the user named (a symbolic link is followed), read only if it is a regular
//! file of at most [`MAX_DECODE_INPUT`] bytes, opened without blocking
//! ([`prfdata_untrusted::file`]): `/dev/zero` or a FIFO is refused at once.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use prfdata_registry::FileRegistry;
use prfdata_untrusted::{Symlinks, UntrustedFile};
use prfdata_wire::snapshot::DataSnapshot;
use prfmon::session::Machine;

use crate::cli::error::CliError;
use crate::cli::stdout;
use prfdata_untrusted::text::Style;
use prfmon::report::JsonReport;

/// The largest file `decode` reads: the largest PERF_DATA_BLOCK
/// ([`MAX_PERF_DATA_BLOCK`](prfmon::datablock::MAX_PERF_DATA_BLOCK), 4 GiB: its
/// `TotalByteLength` is a DWORD), so that whatever `query --raw` writes can be read back. The
/// file is read whole and decoded in place (the snapshot keeps the bytes read); the bound keeps a wrong file (a disk image, a
/// device) from being read without end.
pub const MAX_DECODE_INPUT: u64 = prfmon::datablock::MAX_PERF_DATA_BLOCK;

/// How `decode` reads its input.
const INPUT_RULE: UntrustedFile = UntrustedFile {
    what: "PERF_DATA_BLOCK file",
    max_size: MAX_DECODE_INPUT,
    limit_name:
        "prfmon decode's MAX_DECODE_INPUT, 4 GiB (a PERF_DATA_BLOCK's TotalByteLength is a DWORD)",
    symlinks: Symlinks::Follow,
};

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

/// Prints a snapshot as a table or as JSON (shared with `query`), written as it is made
/// (nothing of the output is held whole); `services[i]` is the service that returned object
/// `i` (empty when not known, as for a file); the names and factors are `machine`'s.
pub fn print(snapshot: &DataSnapshot, machine: &Machine, services: &[String], json: bool) {
    let names = &machine.names;
    if json {
        let report = JsonReport::new(snapshot, names)
            .services(services)
            .factors(&machine.factors);
        // Pretty JSON with JSON's own escapes for control characters, then a newline.
        stdout::write_with(Style::Json, |out| {
            report.write_to(out)?;
            out.write_all(b"\n")
        });
    } else {
        stdout::write_with(Style::Terminal, |out| {
            prfmon::report::write_table(out, snapshot, names, services)
        });
    }
}

/// Runs `prfmon decode`.
pub fn run(args: DecodeArgs) -> Result<ExitCode, CliError> {
    let bytes = INPUT_RULE.read(&args.file).map_err(|e| e.to_string())?;
    // The snapshot keeps the bytes (no copy) and reads them in place.
    let snapshot = prfdata_wire::snapshot::decode_owned(bytes)
        .map_err(|e| format!("{}: {e}", args.file.display()))?;
    let machine = FileRegistry::open_default()
        .and_then(|registry| Machine::load(&registry, &args.lang))
        .unwrap_or_default();
    print(&snapshot, &machine, &[], args.json);
    Ok(ExitCode::SUCCESS)
}

//! `prfmon`: the collector and consumer command line for prfdata counters.
//!
//! `main` only parses the command line and dispatches; each subcommand lives in `cmd/`.

mod cmd;
mod winargs;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Collect and read prfdata performance counters.
#[derive(Parser, Debug)]
#[command(name = "prfmon", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
enum Command {
    /// Look inside and change the counter-name registry, like Windows' reg.exe.
    Reg(cmd::reg::RegArgs),
    /// Load a driver's counter names and help texts from its .INI file (or /S: save, /R: restore).
    Lodctr(cmd::lodctr::LodctrArgs),
    /// Remove a driver's counter names and help texts.
    Unlodctr(cmd::lodctr::UnlodctrArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(winargs::to_dashed(std::env::args_os()));
    match cli.command {
        Command::Reg(args) => cmd::reg::run(args),
        Command::Lodctr(args) => cmd::lodctr::run_lodctr(args),
        Command::Unlodctr(args) => cmd::lodctr::run_unlodctr(args),
    }
}

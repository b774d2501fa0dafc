//! `prfmon`: the collector and consumer command line for prfdata counters.
//!
//! `main` installs the logger, parses the command line and dispatches; each subcommand lives
//! in [`cli::cmd`], what else only the command needs in [`cli`], and the collector, decoder,
//! PDH formulas and output formats in the `prfmon` library.

mod cli;

use cli::{cmd, winargs};

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Collect and read prfdata performance counters.
#[derive(Parser, Debug)]
#[command(
    name = "prfmon",
    version,
    about,
    after_help = "Messages (a provider disabled, a service skipped) are written once per condition, to \
                  stderr, or to the system log for `serve` (--log-to chooses); \
                  PRFMON_LOG=off|error|warn|info|debug|trace sets how many (info)."
)]
struct Cli {
    /// Where messages go: stderr, or syslog (/dev/log: journald, rsyslog). Default: syslog
    /// for `serve`, stderr for the other commands.
    #[arg(long, value_enum, global = true, value_name = "stderr|syslog")]
    log_to: Option<cli::logger::LogTo>,
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
    /// Make one collection (RegQueryValueEx on HKEY_PERFORMANCE_DATA) and print it.
    Query(cmd::query::QueryArgs),
    /// Read a PERF_DATA_BLOCK written by `query --raw` and print it.
    Decode(cmd::decode::DecodeArgs),
    /// List the objects and counters the providers offer, with their explain texts.
    List(cmd::list::ListArgs),
    /// Log counter values in typeperf's CSV/TSV format (`-si`, `-sc`, `-o`, `-f`), or list the
    /// available counters (`-q`, `-qx`).
    Typeperf(cmd::typeperf::TypeperfArgs),
    /// Chart counters live in the terminal, with a legend of last, average, minimum, maximum
    /// (keys: `+` / `-` sample less / more often, `q` quits).
    Watch(cmd::watch::WatchArgs),
    /// Serve the raw counter values at /metrics for Prometheus (OpenMetrics text format), and
    /// raw collections, names and registry keys to other machines' `--computer` (TLS, token).
    Serve(cmd::serve::ServeArgs),
    /// Run one provider library in this process for a collector (perfhost.exe's role).
    #[command(name = "__provider-host", hide = true)]
    ProviderHost {
        /// The provider library.
        library: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    // First, so that the provider host's messages reach the collector's stderr too.
    cli::logger::init();
    // The provider host is started by the collector with a library path that must reach it
    // untouched by the Windows-switch mapping, and as fast as possible.
    let mut args = std::env::args_os();
    if args
        .nth(1)
        .is_some_and(|a| a == prfmon::collector::perfhost::HOST_SUBCOMMAND)
    {
        return prfmon::collector::perfhost::run_host_args(args);
    }
    let cli = Cli::parse_from(winargs::to_dashed(std::env::args_os()));
    cli::logger::route(cli.log_to, matches!(cli.command, Command::Serve(_)));
    let (who, result) = match cli.command {
        Command::Reg(args) => ("prfmon reg", cmd::reg::run(args)),
        Command::Lodctr(args) => ("prfmon lodctr", cmd::lodctr::run_lodctr(args)),
        Command::Unlodctr(args) => ("prfmon unlodctr", cmd::lodctr::run_unlodctr(args)),
        Command::Query(args) => ("prfmon query", cmd::query::run(args)),
        Command::Decode(args) => ("prfmon decode", cmd::decode::run(args)),
        Command::List(args) => ("prfmon list", cmd::list::run(args)),
        Command::Typeperf(args) => ("prfmon typeperf", cmd::typeperf::run(args)),
        Command::Watch(args) => ("prfmon watch", cmd::watch::run(args)),
        Command::Serve(args) => ("prfmon serve", cmd::serve::run(args)),
        Command::ProviderHost { library } => {
            return prfmon::collector::perfhost::run_host(&library)
        }
    };
    // The one place a subcommand's error is said.
    result.unwrap_or_else(|e| {
        e.print(who);
        ExitCode::FAILURE
    })
}

//! `prfmon`: the collector and consumer command line for prfdata counters.

use clap::Parser;

/// Collect and read prfdata performance counters.
#[derive(Parser, Debug)]
#[command(name = "prfmon", version, about)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
    eprintln!("prfmon: no subcommands are available yet");
    std::process::exit(2);
}

//! `prfmon serve [--listen 127.0.0.1:9358] [--lang 009] [--in-process]`: `/metrics` for
//! Prometheus, collected on each scrape (see the library's `serve` module).

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Args;
use prfmon::collector::Collector;
use prfmon::serve::server::{MetricsServer, ServeOptions, DEFAULT_LISTEN, WORKERS};

/// `prfmon serve ...`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free port. Loopback by default: give
    /// `0.0.0.0:9358` to let other machines scrape.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// The language of names and explain texts (a Perflib subkey).
    #[arg(long, default_value = "009")]
    lang: String,
    #[command(flatten)]
    collector: super::CollectorArgs,
}

/// Runs `prfmon serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> ExitCode {
    let registry = match args.collector.open_registry() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("prfmon serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = match args.collector.options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("prfmon serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let collector = match Collector::open(registry, options) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("prfmon serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let serve_options = ServeOptions {
        listen: args.listen,
        lang: args.lang,
        workers: WORKERS,
    };
    let server = match MetricsServer::bind(collector, serve_options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("prfmon serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stopper = server.stopper();
    if let Err(e) = ctrlc::set_handler(move || stopper.stop()) {
        eprintln!("prfmon serve: cannot handle SIGINT/SIGTERM: {e}");
    }
    // Tests and scripts read the address from this line (port 0 picks one).
    eprintln!(
        "prfmon serve: listening on http://{}/metrics",
        server.local_addr()
    );
    server.run();
    ExitCode::SUCCESS
}

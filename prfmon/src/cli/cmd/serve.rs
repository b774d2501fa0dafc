//! `prfmon serve [--listen 127.0.0.1:9358] [--token-file FILE] [--tls-cert FILE --tls-key FILE]
//! [--max-connections N] [--allow-remote-watch] [--histogram-bucket-limit N] [--lang 009]
//! [--in-process]`: `/metrics` for Prometheus, collected on each scrape, and the
//! raw collections, names and registry keys other machines' `prfmon --computer` read (see
//! [`crate::cli::server`], [`prfmon::openmetrics`] and [`prfmon::remote`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::error::CliError;
use crate::cli::server::{
    raise_open_files_limit, MetricsServer, ServeOptions, TlsFiles, DEFAULT_LISTEN,
};
use crate::cli::stdout::errln;
use crate::cli::token::BearerToken;
use clap::Args;
use prfdata::watch::Lease;
use prfdata_registry::{FileRegistry, Registry, StoreStamp};
use prfmon::lease::{AppRanges, Leases};
use prfmon::openmetrics::BucketLimit;
use prfmon::session::Session;

/// `prfmon serve ...`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free port. Loopback by default: give
    /// `0.0.0.0:9358` to let other machines scrape.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Require `Authorization: Bearer <token>` on every request, the token read from FILE
    /// (owner root or this user, mode 600, whitespace trimmed). Without it, listening beyond
    /// loopback prints a warning.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Serve over TLS with this certificate chain (PEM, the server's certificate first);
    /// needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM, PKCS#8 or RSA; keep it mode 600).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The most connections open at once [default: 512, at most half the open-files limit].
    /// At the cap the oldest idle connection is closed to admit a new one, else the one whose
    /// unfinished request head began first.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: Option<u32>,
    /// Let peers without a token start and stop watches (`POST` of `/reg` StartStat /
    /// StopStat). Without a token and without this flag the server is read-only.
    #[arg(long)]
    allow_remote_watch: bool,
    /// Show each histogram in /metrics with at most N buckets (+Inf included) [default: every
    /// bucket]: adjacent buckets are merged in groups of 2, 4, 8 ... until they fit, each at its
    /// last bucket's `le`, which multiplies a percentile's error by the group size.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    histogram_bucket_limit: Option<u32>,
    /// The language of names and explain texts (a Perflib subkey).
    #[arg(long, default_value = "009")]
    lang: String,
    #[command(flatten)]
    collector: super::CollectorArgs,
}

/// Runs `prfmon serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<ExitCode, CliError> {
    let token = match &args.token_file {
        Some(file) => Some(BearerToken::read(file).map_err(|e| e.to_string())?),
        None => None,
    };
    let registry = args.collector.open_registry()?;
    // The stamp before the session's one read of the registry: the lease holder reads again
    // only when it moves.
    let stamp = registry.stamp();
    let options = args.collector.options()?;
    let session =
        Session::local(registry.clone(), options, &args.lang).map_err(|e| e.to_string())?;
    super::report_disabled("serve", &session.machine().disabled);
    let leases = hold_leases_on_everything(&registry, stamp, session.machine().apps.clone());
    // Before the collector starts its provider hosts: they inherit the limit.
    raise_open_files_limit();
    let serve_options = ServeOptions {
        listen: args.listen,
        lang: args.lang,
        token,
        max_connections: args.max_connections.map(|n| n as usize),
        allow_remote_watch: args.allow_remote_watch,
        bucket_limit: args
            .histogram_bucket_limit
            .and_then(|n| BucketLimit::at_most(n as usize))
            .unwrap_or_default(),
        tls: match (args.tls_cert, args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            _ => None,
        },
        ..ServeOptions::default()
    };
    let scheme = if serve_options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let server =
        MetricsServer::bind(session, registry, serve_options).map_err(|e| e.to_string())?;
    if open_to_the_network(&server.local_addr(), args.token_file.is_none()) {
        errln!(
            "prfmon serve: warning: listening on {} without --token-file: anyone who can reach \
             this address reads every counter; listen on 127.0.0.1, or require a bearer token \
             with --token-file FILE",
            server.local_addr()
        );
    }
    let stopper = server.stopper();
    if let Err(e) = ctrlc::set_handler(move || {
        prfmon::collector::host::note_stop_signal();
        stopper.stop();
    }) {
        errln!("prfmon serve: cannot handle SIGINT/SIGTERM: {e}");
    }
    // Tests and scripts read the address from this line (port 0 picks one).
    errln!(
        "prfmon serve: listening on {scheme}://{}/metrics",
        server.local_addr()
    );
    errln!(
        "prfmon serve: at most {} connections at once (--max-connections)",
        server.max_connections()
    );
    server.run();
    leases.stop();
    Ok(ExitCode::SUCCESS)
}

/// The thread that holds watch leases on every object and counter of every app while `serve`
/// runs (it exports them all), renewed every [`Lease::RENEW_INTERVAL`]; the apps' ranges are
/// read again when the registry's stamp moves, so apps installed later are leased too.
struct LeaseHolder {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl LeaseHolder {
    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// `ranges` were read at `stamp`.
fn hold_leases_on_everything(
    registry: &FileRegistry,
    mut stamp: Option<StoreStamp>,
    ranges: AppRanges,
) -> LeaseHolder {
    let registry = registry.clone();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut titles = ranges.all_titles();
        let mut leases = Leases::new(ranges, Lease::RENEW_INTERVAL);
        loop {
            let now = registry.stamp();
            if now.is_none() || now != stamp {
                stamp = now;
                let ranges = AppRanges::load(&registry).unwrap_or_default();
                titles = ranges.all_titles();
                leases.set_ranges(ranges);
            }
            leases.hold(&titles);
            match stopped.recv_timeout(Lease::RENEW_INTERVAL) {
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                _ => break,
            }
        }
        leases.release();
    });
    LeaseHolder { stop, thread }
}

/// Whether to warn: a non-loopback address and no token.
fn open_to_the_network(addr: &SocketAddr, no_token: bool) -> bool {
    no_token && !addr.ip().is_loopback()
}

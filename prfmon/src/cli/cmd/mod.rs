//! One module per subcommand, and what the collecting subcommands share ([`CollectorArgs`]).

pub mod decode;
pub mod list;
pub mod lodctr;
pub mod query;
pub mod reg;
pub mod serve;
pub mod typeperf;
pub mod watch;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use prfdata_registry::{paths, FileRegistry, PerformanceService};
use prfmon::absence::Absence;
use prfmon::collector::host_user::HostUser;
use prfmon::collector::{CollectorOptions, Isolation};
use prfmon::remote::{parse_address, Remote, RemoteOptions};
use prfmon::sampler::is_local_machine;
use prfmon::session::Session;
use prfmon::trust::TrustPolicy;

use crate::cli::stdout::errln;
use crate::cli::token::BearerToken;

/// The options of every collecting subcommand (`query`, `list`, `typeperf`, `watch`,
/// `serve`): where providers run, which paths are trusted whoever owns them, which user
/// provider hosts run as.
#[derive(Args, Debug, Clone, Default)]
pub struct CollectorArgs {
    /// Load providers into this process instead of provider host processes (no timeouts, no
    /// crash protection).
    #[arg(long)]
    pub in_process: bool,
    /// Trust provider libraries and the registry at or under PATH whoever owns them and the
    /// folders above them (repeatable). Without it, a library or registry that a user other
    /// than root or this collector's user could change is refused.
    #[arg(long = "trust-path", value_name = "PATH")]
    pub trust_path: Vec<PathBuf>,
    /// Run the provider host processes as USER (a name or a uid), with its groups: root
    /// only. The hosts then read only what USER may read (the library, the blocks).
    #[arg(long, value_name = "USER", conflicts_with = "in_process")]
    pub host_user: Option<String>,
}

impl CollectorArgs {
    /// The collector options these arguments ask for; an error for a `--host-user` that
    /// cannot be used (not root, no such user).
    pub fn options(&self) -> Result<CollectorOptions, String> {
        let isolation = if self.in_process {
            Isolation::InProcess
        } else {
            Isolation::HostProcess
        };
        let host_user = match &self.host_user {
            Some(name) => Some(HostUser::lookup(name).map_err(|e| e.to_string())?),
            None => None,
        };
        Ok(CollectorOptions {
            isolation,
            trusted_paths: self.trust_path.clone(),
            host_user,
            ..Default::default()
        })
    }

    /// Opens the registry (`PRFDATA_REGISTRY`, else the per-user default) after checking
    /// that only root or this process's user can change it (see [`prfmon::trust`]), and
    /// checks it again once open (a folder it created is then checked too).
    pub fn open_registry(&self) -> Result<FileRegistry, String> {
        let policy = TrustPolicy::new(&self.trust_path);
        let root = paths::registry_root().map_err(|e| e.to_string())?;
        policy.check_registry(&root).map_err(|e| e.to_string())?;
        let registry = FileRegistry::open(&root).map_err(|e| e.to_string())?;
        policy
            .check_registry(registry.root())
            .map_err(|e| e.to_string())?;
        Ok(registry)
    }
}

/// The options of the subcommands that can read another machine (`query`, `list`,
/// `typeperf`, `watch`, `reg query`): which machine, and how to reach its `prfmon serve`.
#[derive(Args, Debug, Clone)]
pub struct RemoteArgs {
    /// Collect on another machine, from its `prfmon serve`: HOST (port 9358), HOST:PORT or
    /// https://HOST:PORT. A counter path `\\HOST\Object\Counter` names the machine too.
    /// typeperf: `-s`.
    #[arg(long, value_name = "HOST:PORT")]
    pub computer: Option<String>,
    /// Send the bearer token in FILE to the remote `prfmon serve` (same rules as serve's
    /// --token-file: owner root or this user, mode 600).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Reach the remote over TLS, trusting the certificate authorities in FILE (PEM) instead
    /// of Mozilla's roots (https://HOST:PORT uses those).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Seconds a remote request may take, connecting included (fractions allowed).
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// The largest answer read from the remote, in bytes (a suffix K, M or G multiplies by
    /// 1024, 1024² or 1024³); a larger one is refused. The default, 1 GiB, is the largest
    /// block an app may publish.
    #[arg(long, value_name = "BYTES", default_value_t = prfmon::remote::DEFAULT_MAX_ANSWER, value_parser = parse_bytes)]
    pub max_answer: u64,
}

/// A positive number of bytes, with an optional binary suffix `K`, `M` or `G`.
fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let (digits, unit) = match trimmed.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&trimmed[..i], 1 << 10),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&trimmed[..i], 1 << 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&trimmed[..i], 1 << 30),
        _ => (trimmed, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("bad size `{text}`: a number of bytes above 0, e.g. 1048576 or 64M"))
}

/// A positive number of seconds.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("bad timeout `{text}`: a number of seconds above 0, e.g. 5 or 0.5"))
}

/// A remote machine a subcommand reads: the name its paths and output use, and the address
/// of its `prfmon serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteMachine {
    /// The name as the user wrote it (`\\db1\...` gives `db1`; `--computer db1:9000` gives
    /// `db1:9000` unless a path names `db1`).
    pub label: String,
    /// `HOST`, `HOST:PORT` or `https://HOST:PORT`.
    pub address: String,
}

impl RemoteArgs {
    /// The machine to read, from `--computer` and the machines the paths name (`machines`):
    /// `None` for this one. One machine per command: paths naming two machines, or another
    /// machine than `--computer`, are refused with a message naming both.
    pub fn machine(&self, machines: &[&str]) -> Result<Option<RemoteMachine>, String> {
        let local = prfmon::datablock::host_name();
        let mut named: Option<&str> = None;
        for m in machines {
            match named {
                Some(n) if !n.eq_ignore_ascii_case(m) => {
                    return Err(format!(
                        "the paths name two machines, {n} and {m}: give the paths of one \
                         machine per command"
                    ))
                }
                _ => named = Some(m),
            }
        }
        let Some(computer) = &self.computer else {
            return Ok(match named {
                Some(m) if !is_local_machine(m, &local) => Some(RemoteMachine {
                    label: m.to_owned(),
                    address: m.to_owned(),
                }),
                _ => None,
            });
        };
        let (_, host, port) = parse_address(computer).map_err(|e| e.to_string())?;
        let written = computer
            .split_once("://")
            .map_or(computer.as_str(), |(_, rest)| rest)
            .trim_end_matches('/');
        let label = match named {
            None => written.to_owned(),
            Some(m)
                if m.eq_ignore_ascii_case(written)
                    || m.eq_ignore_ascii_case(&host)
                    || m.eq_ignore_ascii_case(&format!("{host}:{port}")) =>
            {
                m.to_owned()
            }
            Some(m) => {
                return Err(format!(
                    "a path names machine {m} but --computer is {computer}: name one machine"
                ))
            }
        };
        Ok(Some(RemoteMachine {
            label,
            address: computer.clone(),
        }))
    }

    /// A client of `address`'s `prfmon serve` with these options (the token file read and
    /// checked now).
    pub fn connect(&self, address: &str) -> Result<Remote, String> {
        let token = match &self.token_file {
            Some(file) => Some(BearerToken::read(file).map_err(|e| e.to_string())?.secret()),
            None => None,
        };
        let options = RemoteOptions {
            token,
            tls_ca: self.tls_ca.clone(),
            timeout: self.timeout,
            max_answer: self.max_answer,
        };
        Remote::new(address, &options).map_err(|e| e.to_string())
    }
}

/// Opens the session of `command` (named in messages): the remote machine if
/// [`RemoteArgs::machine`] gives one (its names read from it), else the local registry,
/// checked, and a collector; the providers disabled in the registry are said once, on stderr,
/// with the command that re-enables each (a provider the collector disables during the run is
/// reported by the collector, with the same command).
pub fn open_session(
    command: &str,
    lang: &str,
    collector: &CollectorArgs,
    remote: &RemoteArgs,
    machines: &[&str],
) -> Result<Session, String> {
    if let Some(machine) = remote.machine(machines)? {
        let client = remote.connect(&machine.address)?;
        return Session::remote(client, machine.label, lang).map_err(|e| e.to_string());
    }
    let registry = collector.open_registry()?;
    let session =
        Session::local(registry, collector.options()?, lang).map_err(|e| e.to_string())?;
    report_disabled(command, &session.machine().disabled);
    Ok(session)
}

/// Says once, on stderr, which of `services` are disabled (`Disable Performance Counters`
/// nonzero, so the collector skips them) and the command that re-enables each.
pub fn report_disabled(command: &str, services: &[PerformanceService]) {
    for s in services.iter().filter(|s| s.disabled) {
        let service = s.name.clone();
        errln!("prfmon {command}: {}", Absence::Disabled { service });
    }
}

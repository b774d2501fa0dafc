//! One module per subcommand, and what the collecting subcommands share ([`CollectorArgs`]).

pub mod decode;
pub mod list;
pub mod lodctr;
pub mod perfstats;
pub mod query;
pub mod reg;
pub mod serve;
pub mod typeperf;
pub mod watch;

use std::path::PathBuf;

use clap::Args;
use prfdata_registry::{paths, performance_services, FileRegistry};
use prfmon::collector::host_user::HostUser;
use prfmon::collector::{reenable_command, CollectorOptions, Isolation};
use prfmon::names::Names;
use prfmon::trust::TrustPolicy;

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

/// Says once, on stderr, which providers are disabled in the registry (`Disable Performance
/// Counters` nonzero, so the collector skips them) and the command that re-enables each. A
/// provider the collector disables during the run is reported by the collector, with the same
/// command.
pub fn report_disabled(command: &str, registry: &FileRegistry) {
    let Ok(services) = performance_services(registry) else {
        return; // The collector reports a registry it cannot read.
    };
    for s in services.iter().filter(|s| s.disabled) {
        eprintln!(
            "prfmon {command}: the provider of service {} is disabled (Disable Performance \
             Counters under {}) and is not collected; re-enable it with: {}",
            s.name,
            paths::performance(&s.name),
            reenable_command(&s.name)
        );
    }
}

/// The names of `lang` from `registry`; a language that cannot be read gives numbers only,
/// with a warning.
pub fn load_names(registry: &FileRegistry, lang: &str) -> Names {
    Names::load(registry, lang).unwrap_or_else(|e| {
        eprintln!("prfmon: no names for language {lang}: {e}");
        Names::default()
    })
}

/// Turns the words of a query into the value Collect gets: `Global` and `Costly` (any case)
/// as themselves, numbers as they are, object names looked up in `names`: the whole text as one
/// name first (`"PrfData Demo Worker"`), else word by word.
pub fn query_value(words: &[String], names: &Names) -> Result<String, String> {
    let joined = words.join(" ");
    let trimmed = joined.trim();
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("global") {
        return Ok("Global".into());
    }
    if trimmed.eq_ignore_ascii_case("costly") {
        return Ok("Costly".into());
    }
    if trimmed.starts_with("Foreign") {
        return Ok(trimmed.to_owned());
    }
    if let Some(i) = names.index_of(trimmed) {
        return Ok(i.to_string());
    }
    let mut indexes = Vec::new();
    for word in trimmed.split_whitespace() {
        match names.index_of(word) {
            Some(i) => indexes.push(i.to_string()),
            None => return Err(format!("no object named `{word}`")),
        }
    }
    Ok(indexes.join(" "))
}

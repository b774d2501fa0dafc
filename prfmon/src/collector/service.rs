//! One service the collector serves: its configuration from the registry, its copy of the
//! provider library (a host process or an in-process copy) and where it stands; and how the set
//! of services follows the registry while the collector runs.
//!
//! # Following the registry
//!
//! perflib reads `Services\*\Performance` when `HKEY_PERFORMANCE_DATA` is opened; a monitor that
//! runs for days (`prfmon serve`, `watch`, a long `typeperf`) would never see an app installed
//! after it started. So at most every [`REGISTRY_CHECK`] a collection asks the registry for its
//! stamp ([`Registry::stamp`](prfdata_registry::Registry::stamp): one `stat` of the store file), and only when the stamp moved does
//! it read the registry again and compare each service's configuration with what it runs:
//!
//! | in the registry now                                   | what the collector does            |
//! |-------------------------------------------------------|------------------------------------|
//! | a service it does not run (installed, or re-enabled)  | opened at this collection          |
//! | a service it runs, gone or disabled (uninstalled)     | Close, then its copy released      |
//! | a service it runs whose provider configuration changed: `Library`, `Open` / `Collect` / `Close`, `Linkage\Export`, `First Counter`, `First Help` (the values Open is given or reads, per "How a performance DLL interfaces with a monitor") | Close on the old copy, Open on a new one |
//! | a service it runs, otherwise changed (timeouts, Last Counter, fingerprints) | kept open, new values used |
//! | a service whose Open failed or could not load its library (skipped)   | tried again                        |
//!
//! A service the collector disabled stays disabled until the registry says so too (then it is
//! dropped) and is enabled again (then it is a new service): a failed write of `Disable
//! Performance Counters` does not bring the provider back. A provider that misbehaves in the
//! Close of a copy being replaced or removed is logged, not disabled: the configuration that
//! replaces it gets its own chance, and a removed service's key must not be written again.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use prfdata_registry::service::{services_in, DEFAULT_OPEN_TIMEOUT_MS, LIBRARY};
use prfdata_registry::{paths, Hive, PerformanceService, RegistryError, StoreStamp, Value};
use prfdata_wire::winperf::ERROR_SUCCESS;

use super::copies;
use super::host::HostProcess;
use super::library::{EntryNames, EntryPoints};
use super::protocol::{Request, Response};
use super::validate::{Call, ProviderFault};
use super::{expand_environment, host_fault, ms, protocol_fault, CollectorOptions, Isolation};

/// How often at most a collection asks the registry whether it changed (one `stat`): a change
/// is followed within this much of the first collection after it, far inside the 2 s a monitor
/// may take to show a newly installed app, and a tight loop of collections pays one `stat` per
/// interval.
pub const REGISTRY_CHECK: Duration = Duration::from_millis(100);

/// Where a service stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    /// Not opened yet, or its host died because of another service: Open on next use.
    Pending,
    /// Opened; Collect is called.
    Open,
    /// Open failed (or the library / an export is missing): skipped, not disabled.
    Failed,
    /// Disabled for misbehaving.
    Disabled,
}

/// One service and its copy of its provider library.
pub(super) struct Service {
    pub(super) config: PerformanceService,
    pub(super) names: EntryNames,
    /// `Library`, environment references expanded.
    pub(super) library: PathBuf,
    /// The service's slot in its host (the protocol allows several; a host serves one).
    pub(super) slot: u32,
    pub(super) state: State,
    /// The Collect buffer size to ask for next ([`super::buffer_after`]).
    pub(super) buffer: u32,
    /// Collect's buffer in process, kept from one collection to the next.
    pub(super) scratch: Vec<u64>,
    /// The bytes of the service's last output: room to reserve in the next PERF_DATA_BLOCK.
    pub(super) last_len: usize,
    pub(super) backend: Backend,
}

/// Where one service's copy of its library lives.
pub(super) enum Backend {
    /// Its own provider host process, while it runs.
    Host(Option<HostProcess>),
    /// Its own copy of the library in this process ([`copies`]), with its trio resolved,
    /// while open.
    InProcess(Option<(EntryPoints, copies::Lease)>),
}

/// The enabled services of `hive` that name a `Library` and a `Collect`, in key order, each
/// with its slot from `next_slot`.
pub(super) fn services_from(
    hive: &Hive,
    options: &CollectorOptions,
    next_slot: &mut u32,
) -> Result<Vec<Service>, RegistryError> {
    let mut services = Vec::new();
    for config in services_in(hive)? {
        if config.disabled {
            continue;
        }
        let (Some(library), Some(collect)) = (&config.library, &config.collect) else {
            continue;
        };
        // Perflib expands a REG_EXPAND_SZ Library (`%ProgramFiles%\...`).
        let expandable = matches!(
            hive.value(&paths::performance(&config.name), LIBRARY),
            Ok(Some(Value::ExpandSz(_)))
        );
        let library = PathBuf::from(if expandable {
            expand_environment(library)
        } else {
            library.to_owned()
        });
        let slot = *next_slot;
        *next_slot = next_slot.wrapping_add(1);
        services.push(Service {
            names: EntryNames::new(config.open.as_deref(), collect, config.close.as_deref()),
            config,
            library,
            slot,
            state: State::Pending,
            buffer: options.initial_buffer.max(8),
            scratch: Vec::new(),
            last_len: 0,
            backend: match options.isolation {
                Isolation::HostProcess => Backend::Host(None),
                Isolation::InProcess => Backend::InProcess(None),
            },
        });
    }
    Ok(services)
}

impl Service {
    /// Whether `fresh`, this service as the registry describes it now, is served by the copy
    /// this one runs: the same library and exports, and the same values Open is given or reads
    /// (see the [module docs](self)).
    fn same_provider(&self, fresh: &Service) -> bool {
        let (a, b) = (&self.config, &fresh.config);
        self.library == fresh.library
            && self.names == fresh.names
            && a.export == b.export
            && a.first_counter == b.first_counter
            && a.first_help == b.first_help
    }

    /// Calls the service's Close if it is open (bounded by its `Open Timeout` in a host);
    /// afterwards it is Pending (or as it was, if it was not open). Returns Close's status.
    pub(super) fn close(&mut self) -> Result<u32, ProviderFault> {
        if self.state != State::Open {
            return Ok(ERROR_SUCCESS);
        }
        self.state = State::Pending;
        let timeout = ms(self.config.open_timeout_ms, DEFAULT_OPEN_TIMEOUT_MS);
        let slot = self.slot;
        match &mut self.backend {
            Backend::InProcess(entry) => Ok(entry
                .as_ref()
                .map_or(ERROR_SUCCESS, |(entry, _)| entry.close())),
            Backend::Host(Some(host)) => match host.call(&Request::Close { slot }, timeout) {
                Ok(Response::Closed { status, .. }) => Ok(status),
                Ok(other) => Err(protocol_fault(Call::Close, &other)),
                Err(e) => Err(host_fault(Call::Close, timeout, e)),
            },
            Backend::Host(None) => Ok(ERROR_SUCCESS),
        }
    }

    /// Stops the service's host, or releases its copy of the library (free for another
    /// service once no collector in this process holds it). Close must have been called, or
    /// must not be.
    pub(super) fn release(&mut self) {
        match &mut self.backend {
            Backend::Host(host) => {
                if let Some(h) = host.take() {
                    h.shutdown();
                }
            }
            Backend::InProcess(entry) => *entry = None,
        }
    }

    /// Closes and releases a copy the registry no longer asks for (see the
    /// [module docs](self)): a fault is logged, not held against the service.
    fn retire(mut self, why: &str) {
        let name = self.config.name.clone();
        match self.close() {
            Ok(ERROR_SUCCESS) => {}
            Ok(code) => log::warn!("service {name}: Close returned {code}"),
            Err(fault) => log::warn!("service {name}: {fault} (closing it: {why})"),
        }
        self.release();
        log::debug!("service {name}: {why}: closed");
    }
}

/// When the collector last asked the registry for its stamp, and the stamp its services were
/// read at (also what [`crate::session::Facts`] reads the facts again by).
#[derive(Debug)]
pub(crate) struct RegistryWatch {
    stamp: Option<StoreStamp>,
    checked: Instant,
}

impl RegistryWatch {
    /// A watch for services just read at `stamp` (taken before the read).
    pub(crate) fn new(stamp: Option<StoreStamp>) -> Self {
        Self {
            stamp,
            checked: Instant::now(),
        }
    }

    /// Whether [`REGISTRY_CHECK`] passed since the last check (then this is one).
    pub(crate) fn due(&mut self) -> bool {
        let now = Instant::now();
        if now.saturating_duration_since(self.checked) < REGISTRY_CHECK {
            return false;
        }
        self.checked = now;
        true
    }

    /// Whether `stamp` is another than the services were read at.
    pub(crate) fn moved(&self, stamp: Option<StoreStamp>) -> bool {
        stamp != self.stamp
    }

    /// The services were read again at `stamp`.
    pub(crate) fn read_at(&mut self, stamp: Option<StoreStamp>) {
        self.stamp = stamp;
    }
}

/// The services to run after the registry was read again: each of `fresh` (the registry's
/// services now, in its order) that `current` runs with the same provider configuration is
/// kept as it is (open, with its buffer, its new values taken); the others of `current` are
/// closed and released ([`Service::retire`]), and the rest of `fresh` start Pending.
pub(super) fn follow(current: Vec<Service>, fresh: Vec<Service>) -> Vec<Service> {
    let mut current = current;
    let mut next = Vec::with_capacity(fresh.len());
    for service in fresh {
        match current
            .iter()
            .position(|s| s.config.name == service.config.name)
        {
            Some(i) if current[i].same_provider(&service) => {
                let mut kept = current.remove(i);
                kept.config = service.config;
                if kept.state == State::Failed {
                    // What its Open lacked (an app's names, say) may be there now.
                    kept.state = State::Pending;
                }
                next.push(kept);
            }
            Some(i) => {
                current
                    .remove(i)
                    .retire("its provider configuration changed, to be opened again");
                log::debug!(
                    "service {}: opening its new configuration",
                    service.config.name
                );
                next.push(service);
            }
            None => {
                log::debug!("service {}: found in the registry", service.config.name);
                next.push(service);
            }
        }
    }
    for gone in current {
        gone.retire("removed or disabled in the registry");
    }
    next
}

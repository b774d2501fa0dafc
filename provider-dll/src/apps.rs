//! The apps one loaded library serves: their title indexes and their blocks.
//!
//! Open may be called once per app (once per service whose `Library` is this file), with the
//! app names from that service's `Linkage\Export`; Close as many times. The set of apps lives
//! until the last Close, which drops every mapping.
//!
//! Each app is served from two blocks: `<app>` (its installed map) and `<app>.dyn`, the objects
//! it added at run time (`prfdata::dynamic`), which it lays out again on every change. Both
//! share the app's names ([`Names`]): read at Open, and read again before a block is labelled
//! whenever the registry's store file changed since (every update renames a new file into
//! place, so one `stat` tells): an app that registers run-time names may move its whole range,
//! and a lodctr may change it, while the library stays open.
//!
//! Those checks cost system calls (a `stat` of the store file; an `lstat` and an `fstat` to tell
//! whether a block was replaced; an `open` of a block not there yet; a `flock` probe telling
//! whether a process of the app still holds its block), about a third of a Collect of a thousand
//! instances. So they stand for [`FRESHNESS`]: a Collect takes a number ([`next_collect`]), new
//! only when the last new one is that old, and an app remembers under that number what it found.
//! A monitor sampling every second pays them at every Collect; a tight loop of Collects pays them
//! once per [`FRESHNESS`]. What an app's own processes do is seen at once all the same: the last
//! one out marks its block closed, a run-time block replaced by a newer layout is marked
//! superseded, and a read that finds its block so marked, replaced or gone checks again at once,
//! whatever the number says; and an app whose block is not there is looked for again at every
//! Collect, so that it is served as soon as it starts. Only what nobody announces (an app
//! killed, a lodctr, a block removed by hand, run-time objects an app adds for the first time)
//! waits up to [`FRESHNESS`] to be seen.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use prfdata::reader::{BlockReader, BlockView, ReadError, Refresh};
use prfdata::Error as PrfError;
use prfdata_registry::{
    check_names_fit, first_counter_help, service, stats, FileRegistry, Registry,
};
use prfdata_registry::{NamesMismatch, PerformanceService, RegistryError, StoreStamp};

use crate::serialize::TitleBase;

/// An app's names: First Counter / First Help and everything its Performance key says (the
/// installed range and the map fingerprints every block is checked against before its counters
/// are labelled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// First Counter / First Help.
    pub titles: TitleBase,
    /// The app's Performance values.
    pub installed: PerformanceService,
    /// How long a Collect waits for the app's on-demand values: its `OnDemand Timeout` (20 ms by
    /// default), at most half its `Collect Timeout` ([`stats::on_demand_bound`]).
    pub on_demand_bound: Duration,
    /// The most a Collect of a service serving the app may wait for on-demand values: half the
    /// smallest `Collect Timeout` of the app's service and of every service that exports it
    /// ([`stats::collect_share`]).
    pub collect_share: Duration,
}

/// The default registry's stamp now (its store file and journal); `None` if it cannot be found
/// or `stat`ed.
fn stamp_now() -> Option<StoreStamp> {
    StoreStamp::of_registry(&prfdata_registry::paths::registry_root().ok()?)
}

/// How long what a Collect found of the registry and the apps' blocks stands for the Collects
/// after it (see the module docs): far below any sampling interval a monitor uses (perfmon's
/// shortest is a second), far above the Collect of a thousand instances (about ten
/// microseconds).
pub const FRESHNESS: Duration = Duration::from_millis(10);

/// The number of the checks now (0 is none) and when it was taken.
static CHECKS: Mutex<(u64, Option<Instant>)> = Mutex::new((0, None));

/// A Collect's number: a new one when the last new one is [`FRESHNESS`] old. What
/// [`App::read`] and [`App::block`] check, they check once per number. Returns
/// the number and the instant it was asked at (the Collect's one read of the clock, when
/// nothing makes it wait).
pub fn next_collect() -> (u64, Instant) {
    let mut checks = CHECKS.lock().unwrap_or_else(PoisonError::into_inner);
    let now = Instant::now();
    if checks
        .1
        .is_none_or(|taken| now.saturating_duration_since(taken) >= FRESHNESS)
    {
        *checks = (checks.0.wrapping_add(1).max(1), Some(now));
    }
    (checks.0, now)
}

/// The store file's stamp and the Collect that took it: every app of a Collect compares its
/// names with one `stat`.
static STAMP: Mutex<(u64, Option<StoreStamp>)> = Mutex::new((0, None));

/// The store file's stamp, taken once per Collect `collect`.
fn store_stamp(collect: u64) -> Option<StoreStamp> {
    let mut stamp = STAMP.lock().unwrap_or_else(PoisonError::into_inner);
    if stamp.0 != collect || collect == 0 {
        *stamp = (collect, stamp_now());
    }
    stamp.1
}

/// An app's block as the last check found it, and the Collect that checked.
#[derive(Debug, Default)]
struct Current {
    /// The block, open; `None` when the app was not running at the last check.
    reader: Option<Arc<BlockReader>>,
    /// The Collect whose check this is (0: none, check at the next use).
    checked_in: u64,
}

/// An app's names and the store file they were read from.
#[derive(Debug)]
struct Known {
    names: Names,
    stamp: Option<StoreStamp>,
}

impl Names {
    /// Reads `app`'s names from the registry.
    fn read(registry: &FileRegistry, app: &str) -> Result<Names, RegistryError> {
        let (first_counter, first_help) = first_counter_help(registry, app)?;
        let hive = registry.snapshot()?;
        Ok(Names {
            titles: TitleBase {
                first_counter,
                first_help,
            },
            installed: service::read_service(&hive, app)?.unwrap_or_default(),
            on_demand_bound: stats::on_demand_bound(&hive, app),
            collect_share: stats::collect_share(&hive, app),
        })
    }
}

/// One block served: the installed or the run-time part of an app.
#[derive(Debug)]
pub struct App {
    /// The app (driver) name.
    pub name: String,
    /// Whether this is the app's run-time block (`<app>.dyn`).
    dynamic: bool,
    /// The app's names, shared by its two parts.
    names: Arc<RwLock<Known>>,
    reader: Mutex<Current>,
    logged: Mutex<HashSet<&'static str>>,
    /// What the last Collect serialised of this block, reused while it still holds
    /// ([`crate::serialize::Prepared`]).
    pub(crate) prepared: Mutex<Option<crate::serialize::Prepared>>,
}

impl App {
    fn new(name: String, dynamic: bool, names: Arc<RwLock<Known>>) -> App {
        App {
            name,
            dynamic,
            names,
            reader: Mutex::new(Current::default()),
            logged: Mutex::new(HashSet::new()),
            prepared: Mutex::new(None),
        }
    }

    /// First Counter / First Help, as last read.
    pub fn titles(&self) -> TitleBase {
        self.names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .names
            .titles
    }

    /// How long a Collect waits for the app's on-demand values, and the most a Collect may wait
    /// for all of its service's apps together, as last read.
    pub fn on_demand_bounds(&self) -> (Duration, Duration) {
        let known = self.names.read().unwrap_or_else(PoisonError::into_inner);
        (known.names.on_demand_bound, known.names.collect_share)
    }

    /// The block's app name.
    fn block_name(&self) -> String {
        if self.dynamic {
            format!("{}.dyn", self.name)
        } else {
            self.name.clone()
        }
    }

    /// Reads the app's names again if the registry changed since they were read (the store
    /// file's stamp taken once in Collect `collect`). On failure (the app uninstalled, the store
    /// unreadable) the old ones stay, and blocks are checked against them.
    fn refresh_names(&self, collect: u64) {
        let stamp = store_stamp(collect);
        if self
            .names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .stamp
            == stamp
        {
            return;
        }
        let read = FileRegistry::open_default().and_then(|reg| Names::read(&reg, &self.name));
        let mut known = self.names.write().unwrap_or_else(PoisonError::into_inner);
        known.stamp = stamp;
        match read {
            Ok(names) => known.names = names,
            Err(e) => log::debug!("app {}: cannot read its names again: {e}", self.name),
        }
    }

    /// Runs `f` on a consistent window of the app's block ([`BlockReader::read_with`]), opening
    /// the block if the app started since, and reopening it if it was replaced (checked once in
    /// Collect `collect`, and again at once if the read finds it replaced). `None` when there
    /// is no data: the app is not running, its block is invalid or busy (the reason is logged
    /// once), or `wanted` says none of its objects is asked for (then the block is not read at
    /// all). `deadline` is asked only when the block is read.
    pub fn read<T>(
        &self,
        collect: u64,
        deadline: impl FnOnce() -> Duration,
        wanted: impl Fn(&BlockReader) -> bool,
        mut f: impl FnMut(&BlockView<'_>) -> Result<T, ReadError>,
    ) -> Option<(Arc<BlockReader>, T)> {
        self.refresh_names(collect);
        let mut deadline = Some(deadline);
        let mut budget = Duration::ZERO;
        for _ in 0..2 {
            let reader = self.block(collect)?;
            if let Err(e) = self.names_fit(&reader) {
                self.log_mismatch_once(&e);
                return None;
            }
            if !wanted(&reader) {
                return None;
            }
            if let Some(ask) = deadline.take() {
                budget = ask();
            }
            match reader.read_with(budget, &mut f) {
                Ok(t) => return Some((reader, t)),
                Err(ReadError::Replaced) => self.forget(&reader),
                Err(e) => {
                    if reader.is_replaced() {
                        self.forget(&reader);
                        continue;
                    }
                    self.log_once(&e);
                    return None;
                }
            }
        }
        None
    }

    /// Takes what a refresh of the app's on-demand values came to (see
    /// [`crate::collect`]): a timeout is logged at debug level, a failure once. Returns whether
    /// the refresh may have waited.
    pub fn on_demand_refreshed(&self, refreshed: Result<Refresh, ReadError>) -> bool {
        match refreshed {
            Ok(Refresh::TimedOut) => {
                log::debug!(
                    "app {}: on-demand values not served in time: the last ones are served, \
                     and the app is not waited for again until it serves",
                    self.name
                );
                true
            }
            Ok(Refresh::Served) => true,
            Ok(_) => false,
            Err(e) => {
                self.log_once(&e);
                true
            }
        }
    }

    /// The app's block in Collect `collect`: checked (opened, or found not replaced) once per
    /// Collect. `None` when the app is not running, or its block cannot be opened (the reason
    /// is logged once).
    pub fn block(&self, collect: u64) -> Option<Arc<BlockReader>> {
        match self.current_reader(collect) {
            Ok(r) => r,
            Err(e) => {
                self.log_once(&e);
                None
            }
        }
    }

    /// The block, checked once in Collect `collect`; `Ok(None)` when the app is not running.
    fn current_reader(&self, collect: u64) -> Result<Option<Arc<BlockReader>>, ReadError> {
        let mut slot = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        // A block that says it ended (closed by its last process or by the activation that
        // replaced it, a run-time block superseded) is opened again at once: two loads, no
        // system call.
        let ended = slot.reader.as_ref().is_some_and(|r| r.has_ended());
        if slot.checked_in == collect && collect != 0 && !ended {
            return Ok(slot.reader.clone());
        }
        if let Some(r) = slot.reader.clone() {
            if !ended && !r.is_replaced() {
                slot.checked_in = collect;
                return Ok(Some(r));
            }
        }
        *slot = Current::default();
        let reader = match BlockReader::open(&self.block_name()) {
            Ok(r) => Arc::new(r.with_liveness_interval(FRESHNESS)),
            Err(ReadError::Open(PrfError::NotActive { .. })) => {
                // An app that starts is seen at the next Collect: its block's absence is
                // asked again each time (one failed `open`, paid only while it is not
                // running). The run-time block, absent in most apps that run, is asked
                // once per number.
                slot.checked_in = if self.dynamic { collect } else { 0 };
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        *slot = Current {
            reader: Some(Arc::clone(&reader)),
            checked_in: collect,
        };
        Ok(Some(reader))
    }

    /// Drops `reader` if it is the current block: the next use opens the block again.
    fn forget(&self, reader: &Arc<BlockReader>) {
        let mut slot = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.reader.as_ref().is_some_and(|r| Arc::ptr_eq(r, reader)) {
            *slot = Current::default();
        }
    }

    /// Whether the installed names are this block's: its highest symbolic offset inside the
    /// installed range and its map fingerprint the one install recorded. A block laid out from
    /// another map (the app rebuilt and not reinstalled, or reinstalled from an older build)
    /// would have its counters shown under other counters' names, or another app's.
    /// The run-time block is checked against the run-time names' fingerprint
    /// ([`service::DYNAMIC_FINGERPRINT`]) and the same range.
    fn names_fit(&self, reader: &BlockReader) -> Result<(), NamesMismatch> {
        let known = self.names.read().unwrap_or_else(PoisonError::into_inner);
        let names = &known.names;
        if self.dynamic {
            let installed = PerformanceService {
                map_fingerprint: names.installed.dynamic_fingerprint,
                ..names.installed.clone()
            };
            check_names_fit(
                &installed,
                reader.highest_name_offset(),
                reader.map_fingerprint(),
            )
        } else {
            check_names_fit(
                &names.installed,
                reader.highest_name_offset(),
                reader.map_fingerprint(),
            )
        }
    }

    /// Logs, once while the app is served, that its block does not fit its installed names.
    fn log_mismatch_once(&self, e: &NamesMismatch) {
        let mut logged = self.logged.lock().unwrap_or_else(PoisonError::into_inner);
        if logged.insert("names mismatch") {
            log::warn!(
                "app {}: no data, its block does not fit its installed names: {e}",
                self.name
            );
        }
    }

    /// Logs, once while the app is served, that it was left out of a Collect whose answer it
    /// would have taken past `cap` bytes (see [`crate::collect`]).
    pub fn log_left_out(&self, bytes: usize, cap: usize) {
        let mut logged = self.logged.lock().unwrap_or_else(PoisonError::into_inner);
        if logged.insert("left out") {
            log::warn!(
                "app {}: no data: its {bytes} bytes would take its service's Collect answer past \
                 {cap} bytes, the most a Collect answers; export it from a service of its own",
                self.name
            );
        }
    }

    /// Logs a reason for no data once per kind of reason while the app is served ("How a
    /// performance DLL interfaces with a monitor": "do not flood the event log with errors on every
    /// data collection operation").
    fn log_once(&self, reason: &ReadError) {
        let mut logged = self.logged.lock().unwrap_or_else(PoisonError::into_inner);
        if logged.insert(reason.kind()) {
            log::warn!("app {}: no data: {reason}", self.name);
        }
    }
}

#[derive(Debug, Default)]
struct Served {
    apps: Vec<Arc<App>>,
    opens: usize,
}

static SERVED: RwLock<Served> = RwLock::new(Served {
    apps: Vec::new(),
    opens: 0,
});

/// Win32 `ERROR_FILE_NOT_FOUND`: an app named in Export was never installed.
pub const ERROR_FILE_NOT_FOUND: u32 = 2;
/// Win32 `ERROR_BAD_CONFIGURATION`: the registry could not be read.
pub const ERROR_BAD_CONFIGURATION: u32 = 1610;

/// What to say when the registry is in a format newer than this library reads (`error`, a
/// [`RegistryError::NewerFormat`]): the library is older than the prfdata that wrote the
/// registry, so name the library, both formats and how to rebuild and reinstall it. Any other
/// error is said as it is.
fn stale_library(error: &RegistryError) -> String {
    let RegistryError::NewerFormat {
        path,
        format,
        reads,
    } = error
    else {
        return error.to_string();
    };
    let library = crate::library_path()
        .map_or_else(|| "this library".to_owned(), |p| p.display().to_string());
    format!(
        "the provider library {library} reads registry format {reads} at most, but the \
         registry {} has format {format}: the library is older than the prfdata that wrote the \
         registry; rebuild it (cargo build -p prfdata-provider) and install the app again with \
         the new library (for the demo: demo-app install)",
        path.display()
    )
}

/// Open: serve `names` (from `Linkage\Export`), reading each one's First Counter / First Help.
/// Returns a Win32 error code; nothing is added unless every name is installed.
pub fn open(names: Vec<String>) -> u32 {
    let registry = match FileRegistry::open_default() {
        Ok(r) => r,
        Err(e @ RegistryError::NewerFormat { .. }) => {
            log::error!("Open: {}", stale_library(&e));
            return ERROR_BAD_CONFIGURATION;
        }
        Err(e) => {
            log::error!("Open: cannot read the registry: {e}");
            return ERROR_BAD_CONFIGURATION;
        }
    };
    let mut new = Vec::new();
    for name in names {
        let stamp = stamp_now();
        match Names::read(&registry, &name) {
            Ok(names) => new.push((name, names, stamp)),
            Err(e @ RegistryError::NewerFormat { .. }) => {
                log::error!("Open: {}", stale_library(&e));
                return ERROR_BAD_CONFIGURATION;
            }
            Err(e) => {
                log::error!("Open: app {name} is not installed: {e}");
                return ERROR_FILE_NOT_FOUND;
            }
        }
    }
    let mut served = SERVED.write().unwrap_or_else(PoisonError::into_inner);
    for (name, names, stamp) in new {
        let known = served.apps.iter().position(|a| a.name == name);
        // Reopened with new indexes or another map (lodctr ran again): the latest wins.
        if let Some(i) = known {
            let current = served.apps[i]
                .names
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .names
                .clone();
            if current == names {
                continue;
            }
            served.apps.retain(|a| a.name != name);
        }
        let names = Arc::new(RwLock::new(Known { names, stamp }));
        served
            .apps
            .push(Arc::new(App::new(name.clone(), true, Arc::clone(&names))));
        served.apps.push(Arc::new(App::new(name, false, names)));
    }
    served.opens += 1;
    0
}

/// Close: after the last one, forget every app and unmap every block.
pub fn close() -> u32 {
    let mut served = SERVED.write().unwrap_or_else(PoisonError::into_inner);
    served.opens = served.opens.saturating_sub(1);
    if served.opens == 0 {
        served.apps.clear();
    }
    0
}

/// The apps served now.
pub fn apps() -> Vec<Arc<App>> {
    SERVED
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .apps
        .clone()
}

//! The apps one loaded library serves: their title indexes and their blocks.
//!
//! Open may be called once per app (once per service whose `Library` is this file), with the
//! app names from that service's `Linkage\Export`; Close as many times. The set of apps lives
//! until the last Close, which drops every mapping.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use prfdata::reader::{BlockReader, BlockView, ObjectInfo, ReadError, Refresh};
use prfdata::Error as PrfError;
use prfdata_registry::{first_counter_help, stats, FileRegistry, Registry};

use crate::serialize::TitleBase;

/// One app served: where its names start, and its block when it runs.
#[derive(Debug)]
pub struct App {
    /// The app (driver) name.
    pub name: String,
    /// First Counter / First Help from its Performance key.
    pub titles: TitleBase,
    /// How long a Collect waits for the app's on-demand values: `OnDemand Timeout` from its
    /// Performance key (20 ms by default, [`prfdata_registry::stats`]).
    pub on_demand_bound: Duration,
    reader: Mutex<Option<Arc<BlockReader>>>,
    logged: Mutex<HashSet<&'static str>>,
}

impl App {
    fn new(name: String, titles: TitleBase, on_demand_bound: Duration) -> App {
        App {
            name,
            titles,
            on_demand_bound,
            reader: Mutex::new(None),
            logged: Mutex::new(HashSet::new()),
        }
    }

    /// Runs `f` on a consistent window of the app's block ([`BlockReader::read_with`]), opening
    /// the block if the app started since, and reopening it if it was replaced. `None` when there
    /// is no data: the app is not running, its block is invalid or busy (the reason is logged
    /// once), or `wanted` says none of its objects is asked for (then the block is not read at
    /// all).
    pub fn read<T>(
        &self,
        deadline: Duration,
        wanted: impl Fn(&BlockReader) -> bool,
        mut f: impl FnMut(&BlockView<'_>) -> Result<T, ReadError>,
    ) -> Option<(Arc<BlockReader>, T)> {
        for _ in 0..2 {
            let reader = match self.current_reader() {
                Ok(r) => r,
                Err(ReadError::Open(PrfError::NotActive { .. })) => return None,
                Err(e) => {
                    self.log_once(&e);
                    return None;
                }
            };
            if !wanted(&reader) {
                return None;
            }
            match reader.read_with(deadline, &mut f) {
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

    /// Asks the app for fresh on-demand values (seed 000's `PSTF_FUNCPTR`) of the objects
    /// `wanted` says the query asks for, waiting at most
    /// [`on_demand_bound`](App::on_demand_bound); the last values are served otherwise. Nothing
    /// when the app is not running or none of those objects has on-demand counters; a failure
    /// is logged once.
    pub fn refresh_on_demand(&self, wanted: impl Fn(&ObjectInfo) -> bool) {
        let Ok(reader) = self.current_reader() else {
            return; // `read` reports why, once
        };
        let objects = reader.objects();
        let wanted = |i: usize| objects.get(i).is_some_and(&wanted);
        match reader.refresh_on_demand_of(wanted, self.on_demand_bound) {
            Ok(Refresh::TimedOut) => log::debug!(
                "app {}: on-demand values not served within {:?}: the last ones are served",
                self.name,
                self.on_demand_bound
            ),
            Ok(_) => {}
            Err(e) => self.log_once(&e),
        }
    }

    fn current_reader(&self) -> Result<Arc<BlockReader>, ReadError> {
        let mut slot = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = slot.as_ref() {
            if !r.is_replaced() {
                return Ok(Arc::clone(r));
            }
        }
        *slot = None;
        let reader = Arc::new(BlockReader::open(&self.name)?);
        *slot = Some(Arc::clone(&reader));
        Ok(reader)
    }

    fn forget(&self, reader: &Arc<BlockReader>) {
        let mut slot = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().is_some_and(|r| Arc::ptr_eq(r, reader)) {
            *slot = None;
        }
    }

    /// Logs a reason for no data once per kind of reason while the app is served (seed 004:
    /// "do not flood the event log with errors on every data collection operation").
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

/// Open: serve `names` (from `Linkage\Export`), reading each one's First Counter / First Help.
/// Returns a Win32 error code; nothing is added unless every name is installed.
pub fn open(names: Vec<String>) -> u32 {
    let registry = match FileRegistry::open_default() {
        Ok(r) => r,
        Err(e) => {
            log::error!("Open: cannot read the registry: {e}");
            return ERROR_BAD_CONFIGURATION;
        }
    };
    let mut new = Vec::new();
    let hive = registry.snapshot().ok();
    for name in names {
        let bound = hive.as_ref().map_or(
            Duration::from_millis(u64::from(stats::DEFAULT_ON_DEMAND_TIMEOUT_MS)),
            |h| stats::on_demand_timeout(h, &name),
        );
        match first_counter_help(&registry, &name) {
            Ok((first_counter, first_help)) => new.push(App::new(
                name,
                TitleBase {
                    first_counter,
                    first_help,
                },
                bound,
            )),
            Err(e) => {
                log::error!("Open: app {name} is not installed: {e}");
                return ERROR_FILE_NOT_FOUND;
            }
        }
    }
    let mut served = SERVED.write().unwrap_or_else(PoisonError::into_inner);
    for app in new {
        match served.apps.iter().position(|a| a.name == app.name) {
            // Reopened with new indexes (lodctr ran again): the latest wins.
            Some(i)
                if served.apps[i].titles != app.titles
                    || served.apps[i].on_demand_bound != app.on_demand_bound =>
            {
                served.apps[i] = Arc::new(app)
            }
            Some(_) => {}
            None => served.apps.push(Arc::new(app)),
        }
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

//! The apps one loaded library serves: their title indexes and their blocks.
//!
//! Open may be called once per app (once per service whose `Library` is this file), with the
//! app names from that service's `Linkage\Export`; Close as many times. The set of apps lives
//! until the last Close, which drops every mapping.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use prfdata::reader::{BlockReader, BlockView, ReadError};
use prfdata::Error as PrfError;
use prfdata_registry::{check_names_fit, first_counter_help, service, FileRegistry, Registry};
use prfdata_registry::{NamesMismatch, PerformanceService};

use crate::serialize::TitleBase;

/// One app served: where its names start, and its block when it runs.
#[derive(Debug)]
pub struct App {
    /// The app (driver) name.
    pub name: String,
    /// First Counter / First Help from its Performance key.
    pub titles: TitleBase,
    /// Everything its Performance key says, read at Open: the installed name range and map
    /// fingerprint that every block is checked against before its counters are labelled.
    installed: PerformanceService,
    reader: Mutex<Option<Arc<BlockReader>>>,
    logged: Mutex<HashSet<&'static str>>,
}

impl App {
    fn new(name: String, titles: TitleBase, installed: PerformanceService) -> App {
        App {
            name,
            titles,
            installed,
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
            if let Err(e) = self.names_fit(&reader) {
                self.log_mismatch_once(&e);
                return None;
            }
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

    /// Whether the installed names are this block's: its highest symbolic offset inside the
    /// installed range and its map fingerprint the one install recorded. A block laid out from
    /// another map (the app rebuilt and not reinstalled, or reinstalled from an older build)
    /// would have its counters shown under other counters' names, or another app's.
    fn names_fit(&self, reader: &BlockReader) -> Result<(), NamesMismatch> {
        check_names_fit(
            &self.installed,
            reader.highest_name_offset(),
            reader.map_fingerprint(),
        )
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
    for name in names {
        let installed = first_counter_help(&registry, &name).and_then(|titles| {
            let hive = registry.snapshot()?;
            Ok((
                titles,
                service::read_service(&hive, &name)?.unwrap_or_default(),
            ))
        });
        match installed {
            Ok(((first_counter, first_help), installed)) => new.push(App::new(
                name,
                TitleBase {
                    first_counter,
                    first_help,
                },
                installed,
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
            // Reopened with new indexes or another map (lodctr ran again): the latest wins.
            Some(i)
                if served.apps[i].titles != app.titles
                    || served.apps[i].installed != app.installed =>
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

//! Watch leases held by a collector on what it shows (the Windows 95 stat servers'
//! `PMSG_START_STAT` / `PMSG_STOP_STAT`): counter name indexes mapped to the app whose name range
//! holds them ([`AppRanges`]), and one [`prfdata::watch::Lease`] per app, renewed at every sample
//! ([`Leases`]).
//!
//! An app's name range is `First Counter ..= Last Counter` of its `Services\<app>\Performance`
//! key; a name index `t` in it is the object or counter at name offset `t - First Counter` of
//! the app's map, which is what the app's watch table counts
//! ([`prfdata::watch::WatchSet`]). Failures (an app without a table, a full table) are logged
//! once per app and condition and never stop the collector.
//!
//! # Examples
//!
//! ```
//! use prfmon::lease::{AppRanges, Leases};
//! let ranges = AppRanges::from_ranges(vec![("MyApp".into(), 1848, 1860)]);
//! assert_eq!(ranges.locate(1852), Some(("MyApp", 4)));
//! assert_eq!(ranges.locate(1900), None);
//! // No table for MyApp here: nothing is held, and that is not an error.
//! let mut leases = Leases::new(ranges, std::time::Duration::from_secs(1));
//! leases.hold(&[1848, 1850]);
//! assert_eq!(leases.held(), 0);
//! ```

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use prfdata::watch::{Lease, WatchError, WatchSet, WatchTable};
use prfdata_registry::{performance_services, PerformanceService, Registry, RegistryError};

/// The apps' name ranges, from the registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppRanges {
    apps: Vec<(String, u32, u32)>,
}

impl AppRanges {
    /// Every service's `First Counter ..= Last Counter` (services without both are left out).
    ///
    /// # Errors
    ///
    /// The registry cannot be read.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// assert_eq!(prfmon::lease::AppRanges::load(&reg)?.locate(2), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load<R: Registry + ?Sized>(registry: &R) -> Result<Self, RegistryError> {
        Ok(Self::from_services(&performance_services(registry)?))
    }

    /// The ranges of `services`, as the registry lists them
    /// ([`prfdata_registry::service::services_in`]).
    pub fn from_services(services: &[PerformanceService]) -> Self {
        let apps = services
            .iter()
            .filter_map(|s| match (s.first_counter, s.last_counter) {
                (Some(first), Some(last)) if first <= last => Some((s.name.clone(), first, last)),
                _ => None,
            })
            .collect();
        AppRanges { apps }
    }

    /// Ranges given directly: `(app, first counter, last counter)`.
    pub fn from_ranges(apps: Vec<(String, u32, u32)>) -> Self {
        AppRanges { apps }
    }

    /// The app whose range holds name index `title`, and the name offset in it.
    pub fn locate(&self, title: u32) -> Option<(&str, u32)> {
        self.apps
            .iter()
            .find(|(_, first, last)| (*first..=*last).contains(&title))
            .map(|(app, first, _)| (app.as_str(), title - first))
    }

    /// Every object and counter name index of every app (the even indexes of each range).
    ///
    /// # Examples
    ///
    /// ```
    /// let r = prfmon::lease::AppRanges::from_ranges(vec![("A".into(), 10, 15)]);
    /// assert_eq!(r.all_titles(), [10, 12, 14]);
    /// ```
    pub fn all_titles(&self) -> Vec<u32> {
        self.apps
            .iter()
            .flat_map(|(_, first, last)| (*first..=*last).step_by(2))
            .collect()
    }

    /// The name indexes grouped by app, as watch sets.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = prfmon::lease::AppRanges::from_ranges(vec![("A".into(), 10, 20), ("B".into(), 30, 40)]);
    /// let sets = r.sets(&[10, 12, 34, 99]);
    /// assert_eq!(sets.len(), 2);
    /// assert!(sets["A"].contains(2) && sets["B"].contains(4));
    /// ```
    pub fn sets(&self, titles: &[u32]) -> BTreeMap<String, WatchSet> {
        let mut out: BTreeMap<String, WatchSet> = BTreeMap::new();
        for &t in titles {
            if let Some((app, offset)) = self.locate(t) {
                out.entry(app.to_string()).or_default().insert(offset);
            }
        }
        out
    }
}

/// The lease time for a collector that samples every `interval`: [`Lease::TTL`], or three
/// intervals when that is longer, so that a slow sampler's leases do not lapse between samples.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(prfmon::lease::ttl_for(Duration::from_secs(1)), prfdata::watch::Lease::TTL);
/// assert_eq!(prfmon::lease::ttl_for(Duration::from_secs(10)), Duration::from_secs(30));
/// ```
pub fn ttl_for(interval: Duration) -> Duration {
    Lease::TTL.max(interval.saturating_mul(3))
}

/// The leases a collector holds, one per app it shows something of.
#[derive(Debug)]
pub struct Leases {
    ranges: AppRanges,
    ttl: Duration,
    held: BTreeMap<String, Lease>,
    logged: HashSet<(String, &'static str)>,
}

impl Leases {
    /// No leases yet; `interval` is the sampling interval ([`ttl_for`]).
    pub fn new(ranges: AppRanges, interval: Duration) -> Self {
        Leases {
            ranges,
            ttl: ttl_for(interval),
            held: BTreeMap::new(),
            logged: HashSet::new(),
        }
    }

    /// Replaces the apps' name ranges (the registry was read again).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut l = prfmon::lease::Leases::new(Default::default(), std::time::Duration::from_secs(1));
    /// l.set_ranges(prfmon::lease::AppRanges::from_ranges(vec![("A".into(), 10, 20)]));
    /// ```
    pub fn set_ranges(&mut self, ranges: AppRanges) {
        self.ranges = ranges;
    }

    /// Sets the sampling interval (the lease time follows at the next [`Leases::hold`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut l = prfmon::lease::Leases::new(Default::default(), std::time::Duration::from_secs(1));
    /// l.set_interval(std::time::Duration::from_secs(60));
    /// ```
    pub fn set_interval(&mut self, interval: Duration) {
        self.ttl = ttl_for(interval);
    }

    /// Holds leases on exactly `titles` (object and counter name indexes shown now): takes,
    /// renews or changes one lease per app and ends those of apps no longer shown. Call it at
    /// every sample. An app that restarted gets a lease in its new table.
    pub fn hold(&mut self, titles: &[u32]) {
        let sets = self.ranges.sets(titles);
        self.held
            .retain(|app, lease| sets.contains_key(app) && lease.table().is_current());
        for (app, set) in sets {
            let result = match self.held.get_mut(&app) {
                Some(lease) => lease.renew(&set, self.ttl),
                None => WatchTable::open(&app)
                    .and_then(|t| t.lease(&set, self.ttl))
                    .map(|lease| {
                        self.held.insert(app.clone(), lease);
                    }),
            };
            if let Err(e) = result {
                if matches!(e, WatchError::Full { .. } | WatchError::NotATable { .. }) {
                    self.held.remove(&app);
                }
                let kind = match e {
                    WatchError::NotActive { .. } => "absent",
                    WatchError::Full { .. } => "full",
                    _ => "unusable",
                };
                if self.logged.insert((app.clone(), kind)) {
                    // An app that is not running is the common case: not worth a warning.
                    if kind == "absent" {
                        log::debug!("no watch lease on {app}: {e}");
                    } else {
                        log::warn!("no watch lease on {app}: {e}");
                    }
                }
            }
        }
    }

    /// How many apps a lease is held on.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Ends every lease now (also done on drop).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut l = prfmon::lease::Leases::new(Default::default(), std::time::Duration::from_secs(1));
    /// l.release();
    /// assert_eq!(l.held(), 0);
    /// ```
    pub fn release(&mut self) {
        self.held.clear();
    }
}

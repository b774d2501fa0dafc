//! The Windows 95 System Monitor's view of the counters (KB Q174631): the registry keys a
//! PerfStats client enumerates and queries, computed from a collection and the counter names
//! (a virtual view: always what the apps publish now, never a stale key).
//!
//! ```text
//! HKLM\System\CurrentControlSet\Control\PerfStats\Enum\<object>            Name
//! HKLM\System\CurrentControlSet\Control\PerfStats\Enum\<object>\<counter>  Name, Description,
//!                                                                           Differentiate
//! HKEY_DYN_DATA\PerfStats\StartStat   value <object>\<counter>: starts a watch (a lease)
//! HKEY_DYN_DATA\PerfStats\StatData    value <object>\<counter>: the value, a 4-byte REG_BINARY
//! HKEY_DYN_DATA\PerfStats\StopStat    value <object>\<counter>: ends the watch
//! ```
//!
//! **Key names.** The Windows 95 stat-server interface gives every stat a short registry node name
//! (`VFAT`, `KERNEL`, `CPUUsage`) apart from its display name; prfdata's registry holds display
//! names only, so the node name is made from the display name by one stable rule ([`key_name`]):
//! its ASCII letters, digits and underscores, in order (`"PrfData Demo Jobs"` → `PrfDataDemoJobs`,
//! `"% Busy"` → `Busy`). A name with none of those, or one that another object (or another counter
//! of the same object) with a lower name index already took, is `STAT<index>` (the Windows 95 stat
//! servers' `PERF_STAT_PREFIX` and the name index).
//!
//! **Values.** KB Q174631: "If Differentiate is set to FALSE then the data retrieved is used in
//! its raw form. If Differentiate is TRUE the data retrieved for this counter must be
//! differentiated over time". So `StatData` returns, for a counter whose displayed value needs
//! two samples (`Differentiate` TRUE), its raw value (low 32 bits; the client differentiates);
//! for the others the value a monitor displays from one sample (a fraction's percentage, an
//! elapsed time's seconds; a raw count is itself), rounded and clamped to a DWORD. A counter of an
//! object with instances is the sum over the instances. A counter's scale factor
//! (`PSTF_FACTOR_*`, [`crate::factor`]) is applied to the value, as a Windows 95 stat
//! server applies it ([`PerfStats::with_factors`]).
//!
//! **Watches.** A `StartStat` read takes a *detached* lease ([`prfdata::watch::WatchTable::start_detached`]):
//! every `reg query` is its own process, so the lease cannot be bound to the reader; it lives
//! until a `StopStat` read of the same stat ends it (one per `StartStat`, as Windows 95 stat
//! servers count) or until it is not renewed for [`PERFSTATS_TTL`] (each `StatData` read renews
//! it).
//!
//! # Examples
//!
//! ```
//! use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
//! use prfmon::perfstats::PerfStats;
//!
//! let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
//! let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
//! let mut names = prfmon::names::Names::default();
//! names.counter.insert(1848, "Sample Object".into());
//! names.counter.insert(1850, "Items".into());
//! let view = PerfStats::new(&snap, &names, Default::default());
//! let hive = view.enum_hive();
//! let key = r"HKLM\System\CurrentControlSet\Control\PerfStats\Enum\SampleObject\Items";
//! assert_eq!(hive.value(key, "Differentiate")?.and_then(|v| v.as_str()), Some("FALSE"));
//! assert!(view.stat_data(r"SampleObject\Items").is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod keys;

use std::time::Duration;

use prfdata::watch::{WatchError, WatchSet, WatchTable};
use prfdata_registry::{Hive, Value};

use crate::factor::Factors;
use crate::lease::AppRanges;
use crate::names::Names;
use crate::pdh::{self, FormatOptions};
use prfdata::map::Factor;
use prfdata_wire::snapshot::DataSnapshot;
use prfdata_wire::winperf::PERF_PRFDATA_HISTOGRAM;

/// The key a PerfStats client enumerates (the Windows 95 stat servers' `PERF_REG_KEY` under HKLM),
/// as prfmon's registry spells HKLM.
pub const ENUM_KEY: &str = r"HKLM\System\CurrentControlSet\Control\PerfStats\Enum";

/// How long a `StartStat` watch lives without a `StatData` read (or until `StopStat`): a
/// client that died without `StopStat` stops counting after this. A minute: KB Q174631's clients
/// poll far more often.
pub const PERFSTATS_TTL: Duration = Duration::from_secs(60);

/// What went wrong with a PerfStats value.
///
/// # Examples
///
/// ```
/// let view = prfmon::perfstats::PerfStats::new(&Default::default(), &Default::default(), Default::default());
/// let err = view.stat_data(r"KERNEL\CPUUsage").unwrap_err();
/// assert!(matches!(err, prfmon::perfstats::PerfStatsError::NoSuchStat { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerfStatsError {
    /// The value name is not `Object\Counter` of a stat on offer.
    #[error(
        "no stat {name}: name it as Object\\Counter with the key names under \
         HKLM\\System\\CurrentControlSet\\Control\\PerfStats\\Enum"
    )]
    NoSuchStat {
        /// The value name asked for.
        name: String,
    },
    /// The stat's value cannot be read now.
    #[error("stat {name} has no value now: {reason}")]
    NoValue {
        /// The stat.
        name: String,
        /// Why.
        reason: String,
    },
    /// The stat is not a prfdata app's (no name range holds it), so it cannot be watched.
    #[error("stat {name} belongs to no installed prfdata app: it cannot be watched")]
    NotWatchable {
        /// The stat.
        name: String,
    },
    /// The app's watch table refused.
    #[error("cannot watch {name}: {source}")]
    Watch {
        /// The stat.
        name: String,
        /// Why.
        source: WatchError,
    },
}

/// One object of the view.
#[derive(Debug, Clone, PartialEq)]
pub struct StatObject {
    /// Its key name under `Enum`.
    pub key: String,
    /// Its name index.
    pub index: u32,
    /// `Name`.
    pub name: String,
    /// Its counters.
    pub counters: Vec<StatCounter>,
}

/// One counter of the view.
#[derive(Debug, Clone, PartialEq)]
pub struct StatCounter {
    /// Its key name under the object's key.
    pub key: String,
    /// Its name index.
    pub index: u32,
    /// `Name`.
    pub name: String,
    /// `Description`.
    pub description: String,
    /// `Differentiate`: the client differentiates the value over time.
    pub differentiate: bool,
    /// The `StatData` value, or why there is none.
    pub value: Result<u32, String>,
}

/// The PerfStats view of one collection.
#[derive(Debug, Clone, Default)]
pub struct PerfStats {
    objects: Vec<StatObject>,
    apps: AppRanges,
}

/// The registry node name made from a display name: its ASCII letters, digits and underscores
/// (see the [module docs](self)); `None` if it has none.
///
/// # Examples
///
/// ```
/// use prfmon::perfstats::key_name;
/// assert_eq!(key_name("PrfData Demo Jobs").as_deref(), Some("PrfDataDemoJobs"));
/// assert_eq!(key_name("% Busy").as_deref(), Some("Busy"));
/// assert_eq!(key_name("%"), None);
/// ```
pub fn key_name(display: &str) -> Option<String> {
    let key: String = display
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!key.is_empty()).then_some(key)
}

/// A unique key among `taken` (case-insensitively, as registry keys compare).
fn unique_key(display: &str, index: u32, taken: &mut Vec<String>) -> String {
    let key = key_name(display)
        .filter(|k| !taken.iter().any(|t| t.eq_ignore_ascii_case(k)))
        .unwrap_or_else(|| format!("STAT{index}"));
    taken.push(key.clone());
    key
}

impl PerfStats {
    /// The view of `snapshot` (objects in collection order, each name index once; base counters
    /// and histograms' bucket counters left out), with the apps' name ranges for watches.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// let object = prfdata_testkit::sample::histogram_object(3000, &[("a", &[0; 15], &[0; 3])]);
    /// let out = ProviderOutput { bytes: object, num_objects: 1 };
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
    /// let view = prfmon::perfstats::PerfStats::new(&snap, &Default::default(), Default::default());
    /// // The plain counter and the two histograms' sums: no base, no bucket counter.
    /// let mut indexes: Vec<u32> = view.objects()[0].counters.iter().map(|c| c.index).collect();
    /// indexes.sort();
    /// assert_eq!(indexes, [3002, 3004, 3006]);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn new(snapshot: &DataSnapshot, names: &Names, apps: AppRanges) -> Self {
        Self::with_factors(snapshot, names, apps, &Factors::default())
    }

    /// [`PerfStats::new`], each counter's value with its scale factor applied (the Windows 95 stat
    /// servers' `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`, as install recorded them in the
    /// registry).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::factor::Factors;
    /// let view = prfmon::perfstats::PerfStats::with_factors(
    ///     &Default::default(), &Default::default(), Default::default(), &Factors::default());
    /// assert!(view.objects().is_empty());
    /// ```
    pub fn with_factors(
        snapshot: &DataSnapshot,
        names: &Names,
        apps: AppRanges,
        factors: &Factors,
    ) -> Self {
        let mut order: Vec<usize> = (0..snapshot.objects.len()).collect();
        order.sort_by_key(|&o| snapshot.objects[o].name_index);
        order.dedup_by_key(|o| snapshot.objects[*o].name_index);
        let mut object_keys = Vec::new();
        let mut objects = Vec::new();
        for o in order {
            let obj = &snapshot.objects[o];
            let name = names.name(obj.name_index);
            let key = unique_key(&name, obj.name_index, &mut object_keys);
            let mut counter_keys = Vec::new();
            // Bases serve the counter before them; a histogram's bucket counter has no name and
            // no number (its sum stands for it, an average).
            let shown = |c: &usize| {
                let def = &obj.counters[*c];
                !def.is_base && def.counter_type != PERF_PRFDATA_HISTOGRAM
            };
            let mut by_index: Vec<usize> = (0..obj.counters.len()).filter(shown).collect();
            by_index.sort_by_key(|&c| obj.counters[c].name_index);
            let mut counters: Vec<(usize, StatCounter)> = by_index
                .into_iter()
                .map(|c| {
                    let def = &obj.counters[c];
                    let cname = names.name(def.name_index);
                    let differentiate = prfdata_wire::winperf::is_differentiated(def.counter_type);
                    (
                        c,
                        StatCounter {
                            key: unique_key(&cname, def.name_index, &mut counter_keys),
                            index: def.name_index,
                            name: cname,
                            description: names.help(def.help_index),
                            differentiate,
                            value: value_of(
                                snapshot,
                                o,
                                c,
                                differentiate,
                                factors.of(def.name_index),
                            ),
                        },
                    )
                })
                .collect();
            // Listed in definition order, keyed in name-index order.
            counters.sort_by_key(|(c, _)| *c);
            objects.push(StatObject {
                key,
                index: obj.name_index,
                name,
                counters: counters.into_iter().map(|(_, c)| c).collect(),
            });
        }
        PerfStats { objects, apps }
    }

    /// The objects of the view.
    pub fn objects(&self) -> &[StatObject] {
        &self.objects
    }

    /// The `Enum` keys as a registry tree (to query like any key): `ENUM_KEY\<object>` with
    /// `Name`, and `\<counter>` below it with `Name`, `Description`, `Differentiate`.
    pub fn enum_hive(&self) -> Hive {
        let mut hive = Hive::new();
        let _ = hive.create_key(ENUM_KEY);
        for o in &self.objects {
            let okey = format!(r"{ENUM_KEY}\{}", o.key);
            let _ = hive.set_value(&okey, "Name", Value::Sz(o.name.clone()));
            for c in &o.counters {
                let ckey = format!(r"{okey}\{}", c.key);
                let diff = if c.differentiate { "TRUE" } else { "FALSE" };
                let _ = hive.set_value(&ckey, "Name", Value::Sz(c.name.clone()));
                let _ = hive.set_value(&ckey, "Description", Value::Sz(c.description.clone()));
                let _ = hive.set_value(&ckey, "Differentiate", Value::Sz(diff.into()));
            }
        }
        hive
    }

    /// The object and counter a value name `Object\Counter` names (key names, case-insensitive).
    ///
    /// # Errors
    ///
    /// [`PerfStatsError::NoSuchStat`].
    pub fn find(&self, stat: &str) -> Result<(&StatObject, &StatCounter), PerfStatsError> {
        let missing = || PerfStatsError::NoSuchStat {
            name: stat.to_string(),
        };
        let (o, c) = stat.split_once('\\').ok_or_else(missing)?;
        let object = self
            .objects
            .iter()
            .find(|x| x.key.eq_ignore_ascii_case(o))
            .ok_or_else(missing)?;
        let counter = object
            .counters
            .iter()
            .find(|x| x.key.eq_ignore_ascii_case(c))
            .ok_or_else(missing)?;
        Ok((object, counter))
    }

    /// `StatData\<stat>`: the value (see the [module docs](self)); renews the stat's
    /// `StartStat` watches.
    ///
    /// # Errors
    ///
    /// [`PerfStatsError::NoSuchStat`], [`PerfStatsError::NoValue`].
    pub fn stat_data(&self, stat: &str) -> Result<u32, PerfStatsError> {
        let (_, counter) = self.find(stat)?;
        if let Ok((table, set)) = self.table_of(stat, counter) {
            table.renew_detached(&set, PERFSTATS_TTL);
        }
        counter
            .value
            .clone()
            .map_err(|reason| PerfStatsError::NoValue {
                name: stat.to_string(),
                reason,
            })
    }

    /// `StartStat\<stat>`: starts a watch on the stat (the app is told: the Windows 95 stat
    /// servers' `PMSG_START_STAT`); returns the value as [`PerfStats::stat_data`] does (0 if none).
    ///
    /// # Errors
    ///
    /// [`PerfStatsError::NoSuchStat`], [`PerfStatsError::NotWatchable`], or
    /// [`PerfStatsError::Watch`] (the app is not running, its table is full).
    ///
    /// # Examples
    ///
    /// ```
    /// let view = prfmon::perfstats::PerfStats::new(&Default::default(), &Default::default(), Default::default());
    /// assert!(view.start_stat(r"A\B").is_err());
    /// ```
    pub fn start_stat(&self, stat: &str) -> Result<u32, PerfStatsError> {
        let (_, counter) = self.find(stat)?;
        let (table, set) = self.table_of(stat, counter)?;
        table
            .start_detached(&set, PERFSTATS_TTL)
            .map_err(|source| PerfStatsError::Watch {
                name: stat.to_string(),
                source,
            })?;
        Ok(counter.value.clone().unwrap_or(0))
    }

    /// `StopStat\<stat>`: ends one `StartStat` watch of the stat (the Windows 95 stat servers'
    /// `PMSG_STOP_STAT`); stopping a stat nobody started is not an error (Windows 95 ignores it
    /// too).
    ///
    /// # Errors
    ///
    /// As [`PerfStats::start_stat`].
    ///
    /// # Examples
    ///
    /// ```
    /// let view = prfmon::perfstats::PerfStats::new(&Default::default(), &Default::default(), Default::default());
    /// assert!(view.stop_stat(r"A\B").is_err());
    /// ```
    pub fn stop_stat(&self, stat: &str) -> Result<u32, PerfStatsError> {
        let (_, counter) = self.find(stat)?;
        let (table, set) = self.table_of(stat, counter)?;
        table.stop_detached(&set);
        Ok(counter.value.clone().unwrap_or(0))
    }

    /// What a watch on `stat` leases: its app, the watch set of its name offset, and its
    /// value now (0 if none), for a server that holds the lease itself.
    ///
    /// # Errors
    ///
    /// [`PerfStatsError::NoSuchStat`], [`PerfStatsError::NotWatchable`].
    ///
    /// # Examples
    ///
    /// ```
    /// let view = prfmon::perfstats::PerfStats::new(&Default::default(), &Default::default(), Default::default());
    /// assert!(view.watch_target(r"A\B").is_err());
    /// ```
    pub fn watch_target(&self, stat: &str) -> Result<WatchTarget, PerfStatsError> {
        let (_, counter) = self.find(stat)?;
        let not_watchable = || PerfStatsError::NotWatchable {
            name: stat.to_string(),
        };
        let (app, offset) = self.apps.locate(counter.index).ok_or_else(not_watchable)?;
        let mut set = WatchSet::new();
        if !set.insert(offset) {
            return Err(not_watchable());
        }
        Ok(WatchTarget {
            app: app.to_string(),
            set,
            value: counter.value.clone().unwrap_or(0),
        })
    }

    fn table_of(
        &self,
        stat: &str,
        _counter: &StatCounter,
    ) -> Result<(WatchTable, WatchSet), PerfStatsError> {
        let target = self.watch_target(stat)?;
        let table = WatchTable::open(&target.app).map_err(|source| PerfStatsError::Watch {
            name: stat.to_string(),
            source,
        })?;
        Ok((table, target.set))
    }
}

/// What a watch on one stat leases ([`PerfStats::watch_target`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchTarget {
    /// The app whose watch table takes the lease.
    pub app: String,
    /// The stat's name offset in the app's range.
    pub set: WatchSet,
    /// The stat's `StatData` value now (0 if none).
    pub value: u32,
}

/// The two writes under `HKEY_DYN_DATA\PerfStats`: reading a value of `StartStat` starts a
/// watch, of `StopStat` ends one. Over HTTP they are POST requests ([`stat_write`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatWrite {
    /// `StartStat\<stat>`.
    Start,
    /// `StopStat\<stat>`.
    Stop,
}

/// For a key under `HKEY_DYN_DATA` (or `HKDD`), the path below the root (`""` for the root).
///
/// # Examples
///
/// ```
/// use prfmon::perfstats::dyn_data_path;
/// assert_eq!(dyn_data_path(r"HKDD\PerfStats").as_deref(), Some("PerfStats"));
/// assert_eq!(dyn_data_path(r"HKLM\PerfStats"), None);
/// ```
pub fn dyn_data_path(key: &str) -> Option<String> {
    let trimmed = key.trim().trim_end_matches('\\');
    let (root, rest) = trimmed.split_once('\\').unwrap_or((trimmed, ""));
    (root.eq_ignore_ascii_case("HKEY_DYN_DATA") || root.eq_ignore_ascii_case("HKDD"))
        .then(|| rest.to_string())
}

/// Whether reading `value` of `key` starts or ends a watch: a named value of
/// `HKEY_DYN_DATA\PerfStats\StartStat` or `StopStat`. Listing those keys, and every other key,
/// only reads.
///
/// # Examples
///
/// ```
/// use prfmon::perfstats::{stat_write, StatWrite};
/// let key = r"HKEY_DYN_DATA\PerfStats\StartStat";
/// assert_eq!(stat_write(key, Some(r"A\B")), Some(StatWrite::Start));
/// assert_eq!(stat_write(key, None), None);
/// assert_eq!(stat_write(r"hkdd\perfstats\stopstat", Some("x")), Some(StatWrite::Stop));
/// assert_eq!(stat_write(r"HKDD\PerfStats\StatData", Some("x")), None);
/// ```
pub fn stat_write(key: &str, value: Option<&str>) -> Option<StatWrite> {
    let rest = dyn_data_path(key)?;
    let (base, op) = rest.split_once('\\')?;
    if value.is_none_or(str::is_empty) || !base.eq_ignore_ascii_case("PerfStats") {
        return None;
    }
    if op.eq_ignore_ascii_case("StartStat") {
        Some(StatWrite::Start)
    } else if op.eq_ignore_ascii_case("StopStat") {
        Some(StatWrite::Stop)
    } else {
        None
    }
}

/// The `StatData` value of counter `c` of object `o`: summed over instances if it has some.
fn value_of(
    snapshot: &DataSnapshot,
    o: usize,
    c: usize,
    differentiate: bool,
    factor: Option<Factor>,
) -> Result<u32, String> {
    let obj = &snapshot.objects[o];
    let instances: Box<dyn Iterator<Item = Option<usize>>> = if obj.has_instances() {
        Box::new((0..obj.instance_count()).map(Some))
    } else {
        Box::new(std::iter::once(None))
    };
    let mut total = 0f64;
    for i in instances {
        let raw = match crate::sampler::raw_sample_at(snapshot, o, c, i) {
            Some(Ok(raw)) => raw,
            Some(Err(e)) => return Err(e.to_string()),
            None => return Err("not in the collection".into()),
        };
        total += if differentiate {
            // The raw DWORD (a LARGE counter's low 32 bits): the client differentiates.
            f64::from(raw.value as u32)
        } else {
            let options = FormatOptions {
                cap_percent: false,
                scale: None,
            };
            pdh::format(None, &raw, options).map_err(|e| e.to_string())?
        };
    }
    if let Some(f) = factor {
        total = f.apply(total);
    }
    Ok(if differentiate {
        // Wraps as the DWORD does.
        (total as u64) as u32
    } else {
        total.round().clamp(0.0, f64::from(u32::MAX)) as u32
    })
}

//! What the providers offer: objects and counters with name, explain text, type, detail level
//! and whether the value is differentiated over time — KB Q174631's Name / Description /
//! Differentiate, for `prfmon list` (and, later, `typeperf -q`).
//!
//! KB Q174631: "If "Differentiate" is set to "FALSE" then the data retrieved is used in its raw
//! form. If "Differentiate" is "TRUE" the data retrieved for this counter must be
//! differentiated over time". Here that is every counter type whose displayed value needs two
//! samples ([`prfdata_wire::winperf::is_differentiated`]): the `PERF_DELTA_COUNTER` types and the two
//! averages. Base counters are not listed: they only serve the counter before them (and carry
//! `PERF_DISPLAY_NOSHOW`). Nor is a histogram's bucket counter (no name, no number): its sum
//! stands for the histogram, an average with the buckets' layout beside it
//! ([`CatalogCounter::histogram`]).
//!
//! # Examples
//!
//! ```
//! use prfmon::catalog::{catalog, catalog_with_services};
//! use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
//! use prfmon::names::Names;
//!
//! let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
//! let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
//! let all = catalog_with_services(&[snap.clone()], &[vec!["MyApp".into()]], &Names::default(), 400);
//! assert_eq!(all[0].counters.len(), 2); // the base is not listed
//! assert_eq!(all[0].services, ["MyApp"]);
//! let novice = catalog(&[snap], &Names::default(), 100);
//! assert_eq!(novice[0].counters.len(), 1);
//! assert!(novice[0].services.is_empty()); // services not known
//! # Ok::<(), prfdata_wire::error::DecodeError>(())
//! ```

use serde::Serialize;

use std::collections::BTreeMap;
use std::path::Path;

use prfdata::watch::WatchTable;

use crate::factor::Factors;
use crate::histogram::{find, read, BucketLayout, HistogramDef};
use crate::lease::AppRanges;
use crate::names::Names;
use crate::report::detail_name;
use prfdata_wire::snapshot::{DataSnapshot, ObjectData};
use prfdata_wire::winperf::PERF_PRFDATA_HISTOGRAM;

/// One object on offer.
///
/// # Examples
///
/// See the module docs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogObject {
    /// The services that returned it, in collection order (empty when not known). More than
    /// one means several services claim the same object index.
    pub services: Vec<String>,
    /// Name index.
    pub index: u32,
    /// Name.
    pub name: String,
    /// Explain text.
    pub description: String,
    /// Detail level name (`novice` ...).
    pub detail: String,
    /// Whether it has instances.
    pub instances: bool,
    /// Its counters at or below the detail level.
    pub counters: Vec<CatalogCounter>,
    /// How many collectors watch it now (their live leases), when asked for and known
    /// ([`with_watchers`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watchers: Option<usize>,
}

/// One counter on offer.
///
/// # Examples
///
/// See the module docs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogCounter {
    /// Name index.
    pub index: u32,
    /// Name.
    pub name: String,
    /// Explain text.
    pub description: String,
    /// winperf.h type name.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Detail level name.
    pub detail: String,
    /// Whether a monitor differentiates the value over time.
    pub differentiate: bool,
    /// The winperf.h type as a number (`CounterType`).
    pub type_code: u32,
    /// `DefaultScale`: the power of ten a monitor multiplies the displayed value by.
    pub default_scale: i32,
    /// The displayed value's unit (`/sec`, `%`, `s`, or empty), from the type's display field;
    /// for a histogram's sum (its mean), the unit its values are recorded in (`us`, `bytes`...).
    pub unit: &'static str,
    /// The Windows 95 stat servers' scale factor (`*N` or `/N`) a monitor applies to the displayed
    /// value, when the counter has one ([`crate::factor`]; filled by [`with_factors`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factor: Option<String>,
    /// How many collectors watch it now (their live leases), when asked for and known
    /// ([`with_watchers`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watchers: Option<usize>,
    /// For a histogram (this counter is its sum, shown as an average): its buckets, read from
    /// the object's first counter block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<CatalogHistogram>,
}

/// A histogram's buckets in the catalog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogHistogram {
    /// The layout, when a counter block says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<BucketLayout>,
    /// Why the layout is not shown: no counter block yet (an object whose instances are all
    /// gone), or its descriptor does not decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// The percentile paths' counter names, for a start (`Name:p50`, `Name:p90`, `Name:p99`):
    /// any Q from p0.001 to p100 reads.
    pub percentiles: Vec<String>,
}

impl CatalogHistogram {
    /// The histogram `def` of `object`, as its first counter block (the object's own, or its
    /// first instance's) lays it out; `name` is the histogram's name.
    fn of(object: &ObjectData, def: &HistogramDef, name: &str) -> CatalogHistogram {
        let block = object
            .values()
            .or_else(|| object.instance(0).map(|i| i.values()));
        let (buckets, unknown) = match block.map(|values| read(def, &values)) {
            Some(Ok(view)) => (Some(BucketLayout::of(&view.geometry)), None),
            Some(Err(e)) => (None, Some(format!("no data: {e}"))),
            None => (None, Some("shown once an instance exists".to_owned())),
        };
        CatalogHistogram {
            buckets,
            unknown,
            percentiles: ["p50", "p90", "p99"]
                .map(|q| format!("{name}:{q}"))
                .to_vec(),
        }
    }
}

/// Fills each object's and counter's `watchers` with the live leases on it in its app's watch
/// table (`<shm_dir>/<app>.watch`, the Windows 95 stat servers' start/stop count): the app is
/// the one whose name range in `apps` holds the index, and the watched offset the index's
/// offset in that range. Left `None` where no range holds the index (a remote machine) or the
/// table cannot be opened; `Some(0)` when the app runs and nobody watches.
pub fn with_watchers(objects: &mut [CatalogObject], apps: &AppRanges, shm_dir: &Path) {
    let mut tables: BTreeMap<String, Option<WatchTable>> = BTreeMap::new();
    let mut count = |index: u32| {
        let (app, offset) = apps.locate(index)?;
        let table = tables
            .entry(app.to_owned())
            .or_insert_with(|| WatchTable::open_in(shm_dir, app).ok());
        Some(table.as_ref()?.watchers(offset))
    };
    for o in objects.iter_mut() {
        o.watchers = count(o.index);
        for c in &mut o.counters {
            c.watchers = count(c.index);
        }
    }
}

/// Fills each counter's [`CatalogCounter::factor`] from `factors`.
///
/// # Examples
///
/// ```
/// use prfmon::catalog::{catalog, with_factors};
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let mut objects = catalog(&[snap], &prfmon::names::Names::default(), 400);
/// let index = objects[0].counters[0].index;
/// let mut hive = prfdata_registry::perflib::new_hive();
/// prfdata_registry::stats::write_factors(&mut hive, "App", &[(index, "*8".into())])?;
/// with_factors(&mut objects, &prfmon::factor::Factors::from_hive(&hive)?);
/// assert_eq!(objects[0].counters[0].factor.as_deref(), Some("*8"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn with_factors(objects: &mut [CatalogObject], factors: &Factors) {
    for c in objects.iter_mut().flat_map(|o| o.counters.iter_mut()) {
        c.factor = factors.of(c.index).map(|f| f.to_string());
    }
}

/// The objects and counters in `snapshots` (first occurrence of each object wins) whose
/// detail level is at most `max_detail` (`PERF_DETAIL_*`: 100 novice ... 400 wizard), without
/// the services that offer them: [`catalog_with_services`] with none known.
///
/// # Examples
///
/// See the module docs.
pub fn catalog(snapshots: &[DataSnapshot], names: &Names, max_detail: u32) -> Vec<CatalogObject> {
    catalog_with_services(snapshots, &[], names, max_detail)
}

/// The objects and counters in `snapshots` whose detail level is at most `max_detail`
/// (`PERF_DETAIL_*`: 100 novice ... 400 wizard). `services[k][i]` is the service that
/// returned object `i` of `snapshots[k]` ([`Collection::services`]; missing entries are
/// unknown). An object index found several times (in the Global and the Costly collection, or
/// from several services) is listed once, with the counters of its first occurrence and
/// every service that returned it.
///
/// # Examples
///
/// See the module docs.
///
/// [`Collection::services`]: crate::collector::Collection::services
pub fn catalog_with_services(
    snapshots: &[DataSnapshot],
    services: &[Vec<String>],
    names: &Names,
    max_detail: u32,
) -> Vec<CatalogObject> {
    let mut out: Vec<CatalogObject> = Vec::new();
    let labelled = snapshots.iter().enumerate().flat_map(|(k, s)| {
        s.objects.iter().enumerate().map(move |(i, obj)| {
            let service = services.get(k).and_then(|list| list.get(i));
            (obj, service)
        })
    });
    for (obj, service) in labelled {
        if obj.detail_level > max_detail {
            continue;
        }
        if let Some(known) = out.iter_mut().find(|o| o.index == obj.name_index) {
            if let Some(service) = service {
                if !known.services.contains(service) {
                    known.services.push(service.clone());
                }
            }
            continue;
        }
        let histograms: Vec<HistogramDef> = find(obj).collect();
        let counters = obj
            .counters
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                // A histogram's buckets have no name and no number: its sum stands for it.
                !c.is_base
                    && c.counter_type != PERF_PRFDATA_HISTOGRAM
                    && c.detail_level <= max_detail
            })
            .map(|(position, c)| {
                let histogram = histograms
                    .iter()
                    .find(|h| h.sum == position)
                    .map(|h| CatalogHistogram::of(obj, h, &names.name(c.name_index)));
                // A histogram's sum reads as the mean of its values, in their unit.
                let recorded = histogram
                    .as_ref()
                    .and_then(|h| h.buckets.as_ref())
                    .map(|b| b.unit);
                CatalogCounter {
                    index: c.name_index,
                    name: names.name(c.name_index),
                    description: names.help(c.help_index),
                    type_name: c.type_name(),
                    detail: detail_name(c.detail_level),
                    differentiate: prfdata_wire::winperf::is_differentiated(c.counter_type),
                    type_code: c.counter_type,
                    default_scale: c.default_scale,
                    unit: recorded.unwrap_or_else(|| crate::pdh::unit(c.counter_type)),
                    factor: None,
                    watchers: None,
                    histogram,
                }
            })
            .collect();
        out.push(CatalogObject {
            services: service.cloned().into_iter().collect(),
            index: obj.name_index,
            name: names.name(obj.name_index),
            description: names.help(obj.help_index),
            detail: detail_name(obj.detail_level),
            instances: obj.has_instances(),
            counters,
            watchers: None,
        });
    }
    out
}

//! Sampling counter paths over time: what a PDH query does between `PdhAddCounter` and
//! `PdhGetFormattedCounterValue`, for `typeperf`, `watch` and anything else that logs or charts.
//!
//! A [`Sampler`] holds the counter paths it was asked for (PDH syntax, wildcards allowed). Each
//! call to [`Sampler::sample`] takes one collection ([`DataSnapshot`]) and:
//!
//! 1. matches every requested path against what the collection offers ([`offers`]): every
//!    counter of every object, per instance, named as PDH names it (object and counter names
//!    from [`Names`], instance names `parent/name#index` as [`pdh_instance_names`](crate::pdh::pdh_instance_names) gives
//!    them); base counters are not offered, they serve the counter before them, nor is a
//!    histogram's bucket counter: a path `Name:pQ` that names no counter exactly reads
//!    percentile Q of the histogram `Name` ([`CounterPath::percentile`]). The list is
//!    never built: each path is matched object by object, instance by instance, in place
//!    (an object's instances cost one number each, their `#n`), **now** (as [`expand`](crate::pdh::expand) would
//!    over the list): an instance that has gone yields no reading, a wildcard picks up
//!    instances that appeared since the last sample, and a path that matches nothing is
//!    reported in [`Sample::unmatched`] with its near matches. A path that names no object or
//!    counter on offer (its app not installed yet) is not matched again, nor its near matches
//!    looked for, until what is on offer changes: objects, counters, or the names they have;
//! 2. builds each matched counter's [`RawSample`] exactly as the formulas expect it: the value
//!    from the counter block, the base from the definition that follows (the decoder's
//!    [`CounterDef::base`] link), `PerfTime` / `PerfFreq` / `PerfTime100nSec` from the
//!    PERF_DATA_BLOCK and the object's own `PerfTime` / `PerfFreq`;
//! 3. formats it with [`pdh::format`] from the previous sample of the same counter (same full
//!    path) and the current one (a percentile: [`pdh::percentile`] of the histogram's bucket
//!    counts in the previous collection and this one, kept once per histogram). Only the previous *collection* is remembered, and of it only
//!    the counters whose formula needs it, a few words each: a counter that was missing from it
//!    (an instance that went and came back) starts again with [`NoValue::FirstSample`], as a
//!    counter newly added to a PDH query does.
//!
//! [`Sampler::sample_with`] hands the readings over one at a time instead of in a list, and
//! [`Columns`] samples the fixed columns of a log (`typeperf`), one value each.
//!
//! # Examples
//!
//! ```
//! use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
//! use prfmon::names::Names;
//! use prfmon::pdh::{self, FormatOptions};
//! use prfmon::sampler::Sampler;
//!
//! // The sample object: RAWCOUNT "#1850" with instances "alpha" (7) and "beta".
//! let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
//! let snapshot = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
//!
//! let mut sampler = Sampler::new(vec![pdh::parse(r"\#1848(*)\#1850")?], FormatOptions::default());
//! let sample = sampler.sample(&snapshot, &Names::default());
//! assert_eq!(sample.readings.len(), 2);
//! assert_eq!(sample.readings[0].path.to_string(), r"\#1848(alpha)\#1850");
//! assert_eq!(sample.readings[0].value, Ok(7.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod columns;
#[cfg(test)]
mod histogram_tests;
mod offered;
mod previous;
mod unresolved;

use std::collections::{BTreeSet, HashSet};

pub use columns::Columns;

use crate::names::Names;
use crate::pdh::{self, Available, CounterPath, FormatOptions, NoValue, PathError, RawSample};
use offered::{Hit, Offered};
use previous::Previous;
use prfdata_wire::snapshot::{CounterDef, DataSnapshot, ObjectData};
use prfdata_wire::winperf::PERF_PRFDATA_HISTOGRAM;
use unresolved::Unresolved;

/// One counter a collection offers, with where its data is.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let offers = prfmon::sampler::offers(&snap, &prfmon::names::Names::default());
/// // Two counters (the base is not offered) × two instances.
/// assert_eq!(offers.len(), 4);
/// assert_eq!(offers[0].available.path().to_string(), r"\#1848(alpha)\#1850");
/// assert_eq!((offers[0].object, offers[0].counter, offers[0].instance), (0, 0, Some(0)));
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// Object, counter and instance as PDH names it.
    pub available: Available,
    /// The object's position in [`DataSnapshot::objects`].
    pub object: usize,
    /// The counter's position in [`ObjectData::counters`].
    pub counter: usize,
    /// The instance's position among the object's instances, for objects with instances.
    pub instance: Option<usize>,
}

/// Everything `snapshot` offers, object by object in collection order, and within an object
/// counter by counter (in definition order), each counter for every instance in instance order.
/// Base counters and histograms' bucket counters are left out. An object index that appears twice (two services claiming one
/// index: a conflict in the registry, which the collector logs) is offered once, as collected
/// first, since a counter path names an object only by its name, as PDH's does.
///
/// This is the whole list, for a listing or a test; sampling never builds it.
pub fn offers(snapshot: &DataSnapshot, names: &Names) -> Vec<Offer> {
    let mut out = Vec::new();
    each_offer(snapshot, names, |offer| out.push(offer));
    out
}

/// [`offers`], each handed to `visit` as it is found rather than listed.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let mut count = 0;
/// prfmon::sampler::each_offer(&snap, &prfmon::names::Names::default(), |_| count += 1);
/// assert_eq!(count, 4);
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn each_offer(snapshot: &DataSnapshot, names: &Names, mut visit: impl FnMut(Offer)) {
    for (hit, available) in Offered::new(snapshot, names).availables() {
        visit(Offer {
            available,
            object: hit.object,
            counter: hit.counter,
            instance: hit.instance,
        });
    }
}

/// The full paths (no wildcards) that `requests` name in `snapshot`, in request order, each
/// path's matches in [`offers`] order, without duplicates. A request without a machine gets
/// the collection's `SystemName`, so the paths print as `\\HOST\Object(inst)\Counter`.
///
/// One path per counter matched: for a log's columns see [`Columns`], which keeps a word or
/// two per column instead.
///
/// # Errors
///
/// The [`PathError::NoMatch`] of the first request that names nothing, with its near matches.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfmon::pdh::parse;
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
/// let names = prfmon::names::Names::default();
/// let paths = prfmon::sampler::resolve(&[parse(r"\#1848(*)\*")?], &snap, &names)?;
/// assert_eq!(paths.len(), 4);
/// assert_eq!(paths[0].to_string(), r"\\box\#1848(alpha)\#1850");
/// assert!(prfmon::sampler::resolve(&[parse(r"\#1848(gamma)\#1850")?], &snap, &names).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve(
    requests: &[CounterPath],
    snapshot: &DataSnapshot,
    names: &Names,
) -> Result<Vec<CounterPath>, PathError> {
    let offered = Offered::new(snapshot, names);
    let mut out: Vec<CounterPath> = Vec::new();
    let mut seen: HashSet<CounterPath> = HashSet::new();
    for request in requests {
        check_machine(request, &snapshot.system_name)?;
        let machine = machine_of(request, snapshot);
        let found = offered.each_match(request, |hit| {
            if let Some(path) = offered.path(hit, machine) {
                if seen.insert(path.clone()) {
                    out.push(path);
                }
            }
        });
        if found == 0 {
            return Err(offered.no_match(request));
        }
    }
    Ok(out)
}

/// What [`resolve`] checks, without listing the paths: each request names a counter of this
/// collection, on this machine.
///
/// # Errors
///
/// [`PathError::RemoteMachine`] for the first request that names another machine, else the
/// [`PathError::NoMatch`] of the first request that names nothing ([`unmatched`]).
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfmon::pdh::parse;
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
/// let names = prfmon::names::Names::default();
/// assert!(prfmon::sampler::check(&[parse(r"\#1848(*)\*")?], &snap, &names).is_ok());
/// assert!(prfmon::sampler::check(&[parse(r"\\db1\#1848(*)\*")?], &snap, &names).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check(
    requests: &[CounterPath],
    snapshot: &DataSnapshot,
    names: &Names,
) -> Result<(), PathError> {
    match unmatched(requests, snapshot, names)?.into_iter().next() {
        Some(first) => Err(first.error),
        None => Ok(()),
    }
}

/// The requests that name no counter of this collection now, in request order, each with its
/// [`PathError::NoMatch`] and near matches: what a long-running sampler waits for (see
/// [`Columns`] and [`Sampler`], which match them again at every sample).
///
/// # Errors
///
/// [`PathError::RemoteMachine`] for the first request that names another machine: that is
/// never waited for.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfmon::pdh::parse;
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
/// let names = prfmon::names::Names::default();
/// let requests = [parse(r"\#1848(*)\#1850")?, parse(r"\#1848(*)\#1851")?];
/// let waiting = prfmon::sampler::unmatched(&requests, &snap, &names)?;
/// assert_eq!(waiting.len(), 1);
/// assert_eq!(waiting[0].request, 1);
/// assert!(waiting[0].error.to_string().contains(r"near matches: \#1848(*)\#1850"));
/// assert!(prfmon::sampler::unmatched(&[parse(r"\\db1\#1848(*)\*")?], &snap, &names).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn unmatched(
    requests: &[CounterPath],
    snapshot: &DataSnapshot,
    names: &Names,
) -> Result<Vec<Unmatched>, PathError> {
    let offered = Offered::new(snapshot, names);
    let mut out = Vec::new();
    for (request, path) in requests.iter().enumerate() {
        check_machine(path, &snapshot.system_name)?;
        if offered.each_match(path, |_| {}) == 0 {
            out.push(Unmatched {
                request,
                error: offered.no_match(path),
            });
        }
    }
    Ok(out)
}

/// The machine a resolved path of `request` names: the request's, or the collection's
/// `SystemName` (none if it is empty).
fn machine_of<'a>(request: &'a CounterPath, snapshot: &'a DataSnapshot) -> Option<&'a str> {
    request
        .machine
        .as_deref()
        .or((!snapshot.system_name.is_empty()).then_some(snapshot.system_name.as_str()))
}

/// Whether `machine` (from a path's `\\machine` prefix) names the machine `system_name`
/// collected from: the same name, ignoring ASCII case as Windows does, or `localhost`.
///
/// # Examples
///
/// ```
/// assert!(prfmon::sampler::is_local_machine("BOX", "box"));
/// assert!(prfmon::sampler::is_local_machine("localhost", "box"));
/// assert!(!prfmon::sampler::is_local_machine("db1", "box"));
/// ```
pub fn is_local_machine(machine: &str, system_name: &str) -> bool {
    machine.eq_ignore_ascii_case(system_name) || machine.eq_ignore_ascii_case("localhost")
}

/// Refuses a request that names a machine other than the one `system_name` names: its counters
/// would otherwise be answered with this machine's data under the other machine's name.
fn check_machine(request: &CounterPath, system_name: &str) -> Result<(), PathError> {
    match &request.machine {
        Some(machine) if !is_local_machine(machine, system_name) => Err(PathError::RemoteMachine {
            path: request.to_string(),
            machine: machine.clone(),
            local: system_name.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Why a reading has no value.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::NoValue;
/// use prfmon::sampler::ValueError;
/// let e = ValueError::from(NoValue::FirstSample { counter_type: prfdata_wire::winperf::PERF_COUNTER_COUNTER });
/// assert!(e.to_string().contains("needs two samples"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The formula has no value for these samples (first sample, clock stood still, ...).
    #[error(transparent)]
    NoValue(#[from] NoValue),
    /// A histogram's bucket counts cannot be read in this collection (see
    /// [`crate::histogram::NoData`]).
    #[error(transparent)]
    NoHistogram(#[from] crate::histogram::NoData),
    /// The counter's raw data is not an integer (an unusual `CounterSize`).
    #[error("the raw value is not an integer (CounterSize {size})")]
    NotANumber {
        /// The definition's `CounterSize`.
        size: u32,
    },
}

/// One matched counter's value in one sample.
///
/// # Examples
///
/// See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Which requested path matched it (index into [`Sampler::requests`]).
    pub request: usize,
    /// Its full path, without wildcards, with the request's machine if it had one.
    pub path: CounterPath,
    /// The counter type (`PERF_PRFDATA_HISTOGRAM` for a histogram's percentile).
    pub counter_type: u32,
    /// The counter's name index (`CounterNameTitleIndex`): the key of its scale factor
    /// ([`crate::factor`]).
    pub name_index: u32,
    /// The definition's `DefaultScale` (the chart shows value × 10^scale).
    pub default_scale: i32,
    /// The raw sample the value was computed from.
    pub raw: RawSample,
    /// The formatted value, or why there is none.
    pub value: Result<f64, ValueError>,
}

/// A requested path that matches nothing in this sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmatched {
    /// The request's index in [`Sampler::requests`].
    pub request: usize,
    /// The [`PathError::NoMatch`] with near matches.
    pub error: PathError,
}

/// One sample: when it was collected, the readings of everything the requests matched, and
/// the requests that matched nothing.
///
/// # Examples
///
/// See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `PERF_DATA_BLOCK.PerfTime100nSec`: the collection's wall-clock time, 100 ns units since
    /// 1601-01-01 UTC (FILETIME).
    pub perf_time_100nsec: i64,
    /// `PERF_DATA_BLOCK.SystemName`.
    pub system_name: String,
    /// The readings, request by request, each request's matches in [`offers`] order.
    pub readings: Vec<Reading>,
    /// The requests that matched nothing now.
    pub unmatched: Vec<Unmatched>,
}

impl Sample {
    /// The collection time as a [`std::time::SystemTime`], if `PerfTime100nSec` is after 1970.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = prfmon::sampler::Sample {
    ///     perf_time_100nsec: prfmon::datablock::FILETIME_UNIX_EPOCH + 10_000_000,
    ///     system_name: String::new(), readings: vec![], unmatched: vec![],
    /// };
    /// let t = s.wall_time().unwrap();
    /// assert_eq!(t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(), 1);
    /// ```
    pub fn wall_time(&self) -> Option<std::time::SystemTime> {
        let since = self
            .perf_time_100nsec
            .checked_sub(crate::datablock::FILETIME_UNIX_EPOCH)?;
        let since = u64::try_from(since).ok()?;
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_nanos(since.checked_mul(100)?))
    }
}

/// Samples a list of counter paths, collection after collection (see the [module docs](self)).
///
/// # Examples
///
/// See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Sampler {
    requests: Vec<CounterPath>,
    options: FormatOptions,
    /// The raw samples of the previous collection that a formula needs.
    previous: Previous,
    /// The requests known to match nothing while the collection offers the same objects.
    unresolved: Unresolved,
}

impl Sampler {
    /// A sampler for `requests`, formatting with `options` (see [`FormatOptions`]: a log wants
    /// no cap and no scale, a chart the defaults).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = prfmon::sampler::Sampler::new(vec![], prfmon::pdh::FormatOptions::default());
    /// assert!(s.requests().is_empty());
    /// ```
    pub fn new(requests: Vec<CounterPath>, options: FormatOptions) -> Self {
        Sampler {
            requests,
            options,
            previous: Previous::default(),
            unresolved: Unresolved::default(),
        }
    }

    /// The requested paths, as given.
    pub fn requests(&self) -> &[CounterPath] {
        &self.requests
    }

    /// Takes one sample from `snapshot` (see the [module docs](self) for the steps).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// use prfmon::pdh::{parse, FormatOptions};
    /// use prfmon::sampler::Sampler;
    ///
    /// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
    /// let mut sampler = Sampler::new(
    ///     vec![parse(r"\#1848(beta)\#1850")?, parse(r"\#1848(gone)\#1850")?],
    ///     FormatOptions::default(),
    /// );
    /// let sample = sampler.sample(&snap, &prfmon::names::Names::default());
    /// assert_eq!(sample.readings[0].value, Ok(4_294_967_295.0));
    /// assert_eq!(sample.unmatched[0].request, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sample(&mut self, snapshot: &DataSnapshot, names: &Names) -> Sample {
        let mut readings = Vec::new();
        let sample = self.sample_with(snapshot, names, |r| readings.push(r));
        Sample { readings, ..sample }
    }

    /// [`Sampler::sample`], each reading handed to `visit` as it is made (in the same order)
    /// rather than listed: the returned [`Sample`]'s `readings` is empty. A wildcard over a
    /// million instances then costs a reading at a time.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// use prfmon::pdh::{parse, FormatOptions};
    /// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
    /// let mut sampler = prfmon::sampler::Sampler::new(vec![parse(r"\#1848(*)\#1850")?], FormatOptions::default());
    /// let mut values = Vec::new();
    /// let sample = sampler.sample_with(&snap, &prfmon::names::Names::default(), |r| values.push(r.value));
    /// assert_eq!(values, [Ok(7.0), Ok(4_294_967_295.0)]);
    /// assert!(sample.readings.is_empty() && sample.unmatched.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sample_with(
        &mut self,
        snapshot: &DataSnapshot,
        names: &Names,
        mut visit: impl FnMut(Reading),
    ) -> Sample {
        let offered = Offered::new(snapshot, names);
        let mut current = self.previous.next(snapshot);
        let (previous, options) = (&self.previous, self.options);
        let mut unmatched = Vec::new();
        let mut key = String::new();
        self.unresolved.begin(&offered, self.requests.len());
        for (request, path) in self.requests.iter().enumerate() {
            if self.unresolved.is_absent(request) {
                unmatched.push(Unmatched {
                    request,
                    error: self.unresolved.error(request, path, &offered),
                });
                continue;
            }
            let found = offered.each_match(path, |hit| {
                key.clear();
                if !offered.push_path(hit, &mut key) {
                    return;
                }
                let key = key.to_lowercase();
                let Some((raw, value, def)) =
                    reading(&offered, hit, (previous, &mut current), &key, options)
                else {
                    return;
                };
                let Some(path) = offered.path(hit, path.machine.as_deref()) else {
                    return;
                };
                visit(Reading {
                    request,
                    path,
                    counter_type: raw.counter_type,
                    name_index: def.name_index,
                    default_scale: def.default_scale,
                    raw,
                    value,
                });
            });
            if found == 0 {
                unmatched.push(Unmatched {
                    request,
                    error: self.unresolved.error(request, path, &offered),
                });
            }
        }
        self.previous = current;
        Sample {
            perf_time_100nsec: snapshot.perf_time_100nsec,
            system_name: snapshot.system_name.clone(),
            readings: Vec::new(),
            unmatched,
        }
    }
}

/// The raw sample of `hit` and its value, formatted from the sample `previous` keeps of it
/// (under `key`, its path in lower case), kept in `current` for the next, with the counter's
/// definition; `None` if `hit` is not in the snapshot. A histogram's percentile reads its
/// bucket counts ([`percentile_reading`]).
fn reading<'s>(
    offered: &Offered<'s>,
    hit: Hit,
    (previous, current): (&Previous, &mut Previous),
    key: &str,
    options: FormatOptions,
) -> Option<(RawSample, Result<f64, ValueError>, &'s CounterDef)> {
    let snapshot = offered.snapshot();
    let object = snapshot.objects.get(hit.object)?;
    if let Some(q) = hit.percentile {
        return percentile_reading(object, hit, q, (previous, current), key);
    }
    let def = object.counters.get(hit.counter)?;
    Some(
        match raw_sample_of(snapshot, object, def, hit.counter, hit.instance) {
            Ok(raw) => {
                let value = previous.format(current, key, hit.object, &raw, options);
                (raw, value.map_err(ValueError::from), def)
            }
            Err(e) => (RawSample::new(def.counter_type, 0), Err(e), def),
        },
    )
}

/// [`reading`] of percentile `q` of the histogram whose bucket counter `hit` names: the raw
/// sample is the histogram's count (type `PERF_PRFDATA_HISTOGRAM`), the definition its sum's
/// (its name, scale and help); the bucket counts are kept under `key` without its `:pQ`.
fn percentile_reading<'s>(
    object: &'s ObjectData,
    hit: Hit,
    q: pdh::Percentile,
    (previous, current): (&Previous, &mut Previous),
    key: &str,
) -> Option<(RawSample, Result<f64, ValueError>, &'s CounterDef)> {
    let def = crate::histogram::find(object).find(|h| h.buckets == hit.counter)?;
    let sum = object.counters.get(def.sum)?;
    let values = match hit.instance {
        Some(i) => object.instance(i)?.values(),
        None => object.values()?,
    };
    let key = key.rsplit_once(':').map_or(key, |(histogram, _)| histogram);
    Some(match crate::histogram::read(&def, &values) {
        Ok(view) => {
            let raw = RawSample::new(PERF_PRFDATA_HISTOGRAM, view.count() as i64);
            let value = previous.percentile(current, key, &view, q);
            (raw, value.map_err(ValueError::from), sum)
        }
        Err(e) => (
            RawSample::new(PERF_PRFDATA_HISTOGRAM, 0),
            Err(e.into()),
            sum,
        ),
    })
}

impl Sampler {
    /// The name (title) indexes of the objects and counters the requests match in `snapshot`,
    /// each once, ascending: what a collector holds watch leases on ([`crate::lease`]). A
    /// request known to name nothing on offer is not matched again while the collection
    /// offers the same objects under the same names.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// use prfmon::pdh::{parse, FormatOptions};
    /// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
    /// let mut sampler = prfmon::sampler::Sampler::new(vec![parse(r"\#1848(*)\#1850")?], FormatOptions::default());
    /// assert_eq!(sampler.titles(&snap, &prfmon::names::Names::default()), [1848, 1850]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn titles(&mut self, snapshot: &DataSnapshot, names: &Names) -> Vec<u32> {
        let offered = Offered::new(snapshot, names);
        let mut out = BTreeSet::new();
        self.unresolved.begin(&offered, self.requests.len());
        for (request, path) in self.requests.iter().enumerate() {
            if self.unresolved.is_absent(request) {
                continue;
            }
            let found = offered.each_match(path, |hit| {
                if let Some(object) = snapshot.objects.get(hit.object) {
                    out.insert(object.name_index);
                    // A percentile's counter is its histogram's sum, which has the name.
                    let counter = match hit.percentile {
                        Some(_) => crate::histogram::find(object)
                            .find(|h| h.buckets == hit.counter)
                            .map_or(hit.counter, |h| h.sum),
                        None => hit.counter,
                    };
                    if let Some(def) = object.counters.get(counter) {
                        out.insert(def.name_index);
                    }
                }
            });
            if found == 0 {
                self.unresolved.unmatched(request, path, &offered);
            }
        }
        out.into_iter().collect()
    }
}

/// The raw sample of counter `counter` (position in [`ObjectData::counters`]) of object
/// `object` (position in [`DataSnapshot::objects`]), for instance `instance` (position among
/// the object's instances) or the object's own counter block: `None` if a position is out of
/// range, else the sample or why there is none. What the PerfStats view reads one value with.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// assert!(prfmon::sampler::raw_sample_at(&snap, 0, 0, Some(0)).unwrap().is_ok());
/// assert!(prfmon::sampler::raw_sample_at(&snap, 5, 0, None).is_none());
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn raw_sample_at(
    snapshot: &DataSnapshot,
    object: usize,
    counter: usize,
    instance: Option<usize>,
) -> Option<Result<RawSample, ValueError>> {
    let obj = snapshot.objects.get(object)?;
    let def = obj.counters.get(counter)?;
    if let Some(i) = instance {
        obj.instance(i)?;
    }
    Some(raw_sample_of(snapshot, obj, def, counter, instance))
}

fn raw_sample_of(
    snapshot: &DataSnapshot,
    object: &ObjectData,
    def: &CounterDef,
    counter: usize,
    instance: Option<usize>,
) -> Result<RawSample, ValueError> {
    let values = match instance {
        Some(i) => object.instance(i).map(|inst| inst.values()),
        None => object.values(),
    };
    let Some(value) = values.and_then(|v| v.int(counter)) else {
        // Types with nothing to format (text, NODATA) say so; others are unreadable.
        return match pdh::format(
            None,
            &RawSample::new(def.counter_type, 0),
            FormatOptions::default(),
        ) {
            Err(e @ NoValue::NoData { .. }) => Err(e.into()),
            _ => Err(ValueError::NotANumber { size: def.size }),
        };
    };
    let mut raw = RawSample::new(def.counter_type, value)
        .with_time(snapshot.perf_time, snapshot.perf_freq)
        .with_time_100ns(snapshot.perf_time_100nsec)
        .with_object_time(object.perf_time, object.perf_freq);
    if let Some(base) = def.base.and_then(|b| values?.int(b)) {
        raw = raw.with_base(base);
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    use prfdata_wire::build::ObjectBuilder;
    use prfdata_wire::snapshot::{InstanceData, RawValue};
    use prfdata_wire::winperf::{
        PERF_100NSEC_TIMER, PERF_AVERAGE_BASE, PERF_AVERAGE_TIMER, PERF_COUNTER_COUNTER,
        PERF_COUNTER_RAWCOUNT, PERF_ELAPSED_TIME, PERF_NO_UNIQUE_ID,
    };

    const F: i64 = 10_000_000;
    /// The object's own timer runs at 1 kHz, unlike the data block's 10 MHz, so a formula that
    /// took the wrong clock would show.
    const OBJECT_FREQ: i64 = 1_000;

    /// Counters of the synthetic object: (name index, type, size, offset), the offsets where
    /// [`ObjectBuilder`] puts them.
    const DEFS: [(u32, u32, u32, u32); 6] = [
        (2, PERF_COUNTER_RAWCOUNT, 4, 8),
        (4, PERF_COUNTER_COUNTER, 4, 12),
        (6, PERF_AVERAGE_TIMER, 4, 16),
        (0, PERF_AVERAGE_BASE, 4, 20),
        (8, PERF_ELAPSED_TIME, 8, 24),
        (10, PERF_100NSEC_TIMER, 8, 32),
    ];

    /// One object (index 100) whose instances carry `values` for the counters in [`DEFS`],
    /// with the object's clock at `object_time` ticks of [`OBJECT_FREQ`].
    fn object(instances: &[(&str, [i64; 6])], object_time: i64) -> Vec<u8> {
        let mut object = ObjectBuilder::new(100)
            .clock(object_time, OBJECT_FREQ)
            .with_instances();
        for (index, counter_type, size, _) in DEFS {
            object = object
                .counter(100 + index, counter_type, size)
                .scale(if index == 4 { -1 } else { 0 });
        }
        for (name, values) in instances {
            object = object.instance(InstanceData {
                name: (*name).to_owned(),
                unique_id: PERF_NO_UNIQUE_ID,
                values: values.iter().map(|&v| RawValue::Int(v)).collect(),
                ..InstanceData::default()
            });
        }
        object.build()
    }

    fn snapshot(seconds: i64, instances: &[(&str, [i64; 6])]) -> DataSnapshot {
        collection_of(seconds, object(instances, seconds * OBJECT_FREQ))
    }

    /// A collection of machine "box" taken `seconds` in (the 10 MHz clock), of one object.
    pub(super) fn collection_of(seconds: i64, object: Vec<u8>) -> DataSnapshot {
        let times = CollectionTimes {
            perf_time: seconds * F,
            perf_freq: F,
            perf_time_100nsec: crate::datablock::FILETIME_UNIX_EPOCH + seconds * F,
            ..CollectionTimes::now()
        };
        let out = ProviderOutput {
            bytes: object,
            num_objects: 1,
        };
        prfdata_wire::snapshot::decode(&build_data_block("box", &times, &[out])).unwrap()
    }

    fn names() -> Names {
        let mut n = Names::default();
        for (i, s) in [
            (100, "Jobs"),
            (102, "Queue"),
            (104, "Done/sec"),
            (106, "Avg. latency"),
            (108, "Uptime"),
            (110, "% Busy"),
        ] {
            n.counter.insert(i, s.into());
        }
        n
    }

    pub(super) fn values(sample: &Sample) -> Vec<(String, Result<f64, ValueError>)> {
        sample
            .readings
            .iter()
            .map(|r| (r.path.to_string(), r.value))
            .collect()
    }

    #[test]
    fn rates_averages_timers_and_elapsed_time_come_from_two_collections() {
        let names = names();
        let mut s = Sampler::new(
            vec![pdh::parse(r"\Jobs(w1)\*").unwrap()],
            FormatOptions::default(),
        );
        let first = s.sample(
            &snapshot(10, &[("w1", [5, 100, 0, 0, 4 * OBJECT_FREQ, 0])]),
            &names,
        );
        let v = values(&first);
        assert_eq!(v.len(), 5, "{v:?}");
        assert_eq!(v[0], (r"\Jobs(w1)\Queue".into(), Ok(5.0)));
        assert!(matches!(
            v[1].1,
            Err(ValueError::NoValue(NoValue::FirstSample { .. }))
        ));
        // Elapsed time needs one sample and the object's clock: (10 000 − 4 000) / 1 000 Hz.
        assert_eq!(v[3], (r"\Jobs(w1)\Uptime".into(), Ok(6.0)));
        // Two seconds later: 300 more done → 150/s; 0.5 s over 4 operations → 0.125 s;
        // busy 1 s of 2 s (100 ns units) → 50 %.
        let second = s.sample(
            &snapshot(12, &[("w1", [7, 400, F / 2, 4, 4 * OBJECT_FREQ, F])]),
            &names,
        );
        let v = values(&second);
        assert_eq!(v[0].1, Ok(7.0));
        assert_eq!(v[1].1, Ok(150.0));
        assert_eq!(v[2].1, Ok(0.125));
        assert_eq!(v[3].1, Ok(8.0));
        assert_eq!(v[4].1, Ok(50.0));
        assert_eq!(second.readings[1].default_scale, -1);
        assert_eq!(second.readings[2].raw.base, Some(4));
    }

    #[test]
    fn instances_that_come_and_go_are_followed_by_wildcards() {
        let names = names();
        let mut s = Sampler::new(
            vec![
                pdh::parse(r"\Jobs(*)\Done/sec").unwrap(),
                pdh::parse(r"\Jobs(w2)\Queue").unwrap(),
            ],
            FormatOptions::default(),
        );
        let a = s.sample(&snapshot(1, &[("w1", [0, 10, 0, 0, 0, 0])]), &names);
        assert_eq!(a.readings.len(), 1);
        assert_eq!(a.unmatched.len(), 1);
        assert_eq!(a.unmatched[0].request, 1);
        assert!(a.unmatched[0].error.to_string().contains("near matches"));

        // w2 appears: the wildcard picks it up (first sample for it), the exact path matches.
        let b = s.sample(
            &snapshot(
                2,
                &[("w1", [0, 20, 0, 0, 0, 0]), ("w2", [3, 50, 0, 0, 0, 0])],
            ),
            &names,
        );
        let v = values(&b);
        assert_eq!(v[0], (r"\Jobs(w1)\Done/sec".into(), Ok(10.0)));
        assert_eq!(v[1].0, r"\Jobs(w2)\Done/sec");
        assert!(v[1].1.is_err());
        assert_eq!(v[2], (r"\Jobs(w2)\Queue".into(), Ok(3.0)));
        assert!(b.unmatched.is_empty());

        // w1 goes: no reading for it; w2 goes on.
        let c = s.sample(&snapshot(3, &[("w2", [3, 90, 0, 0, 0, 0])]), &names);
        let v = values(&c);
        assert_eq!(v[0], (r"\Jobs(w2)\Done/sec".into(), Ok(40.0)));
        assert_eq!(v.len(), 2);

        // w1 comes back: it starts again rather than differencing across the gap.
        let d = s.sample(
            &snapshot(
                4,
                &[("w1", [0, 5, 0, 0, 0, 0]), ("w2", [3, 95, 0, 0, 0, 0])],
            ),
            &names,
        );
        assert!(matches!(
            d.readings[0].value,
            Err(ValueError::NoValue(NoValue::FirstSample { .. }))
        ));
        assert_eq!(d.readings[1].value, Ok(5.0));
    }

    #[test]
    fn resolve_fixes_full_paths_with_the_machine_and_without_duplicates() {
        let names = names();
        let snap = snapshot(1, &[("w1", [0; 6]), ("w1", [0; 6])]);
        let paths = resolve(
            &[
                pdh::parse(r"\Jobs(*)\Queue").unwrap(),
                pdh::parse(r"\jobs(w1#1)\queue").unwrap(),
            ],
            &snap,
            &names,
        )
        .unwrap();
        let printed: Vec<String> = paths.iter().map(ToString::to_string).collect();
        assert_eq!(
            printed,
            [r"\\box\Jobs(w1)\Queue", r"\\box\Jobs(w1#1)\Queue"]
        );
        let err = resolve(&[pdh::parse(r"\Jobz(*)\Queue").unwrap()], &snap, &names).unwrap_err();
        assert!(
            matches!(&err, PathError::NoMatch { near, .. } if near[0] == r"\Jobs(*)\Queue"),
            "{err}"
        );
    }

    #[test]
    fn a_path_waiting_for_its_object_is_matched_again_only_when_the_offer_changes() {
        let mut s = Sampler::new(
            vec![
                pdh::parse(r"\Later(w1)\Queue").unwrap(),
                pdh::parse(r"\Jobs(w9)\Queue").unwrap(),
            ],
            FormatOptions::default(),
        );
        let mut names = names();
        let snap = snapshot(1, &[("w1", [5, 0, 0, 0, 0, 0])]);
        let first = s.sample(&snap, &names);
        assert_eq!(first.unmatched.len(), 2);
        // No object named Later: not matched again under this offer. Jobs is there, only not
        // its instance w9, which may come at any sample: matched again.
        assert!(s.unresolved.is_absent(0));
        assert!(!s.unresolved.is_absent(1));
        let again = s.sample(&snapshot(2, &[("w1", [6, 0, 0, 0, 0, 0])]), &names);
        assert_eq!(again.unmatched, first.unmatched, "the near matches kept");
        assert!(s.titles(&snap, &names).is_empty());
        let w9 = s.sample(&snapshot(3, &[("w9", [7, 0, 0, 0, 0, 0])]), &names);
        assert_eq!(values(&w9), [(r"\Jobs(w9)\Queue".to_owned(), Ok(7.0))]);

        // The names read again name the object Later: the offer changed, the path matches.
        names.counter.insert(100, "Later".into());
        let renamed = s.sample(&snapshot(4, &[("w1", [8, 0, 0, 0, 0, 0])]), &names);
        assert_eq!(
            values(&renamed),
            [(r"\Later(w1)\Queue".to_owned(), Ok(8.0))]
        );
        assert_eq!(renamed.unmatched.len(), 1);
        assert_eq!(renamed.unmatched[0].request, 1);
        assert!(!s.unresolved.is_absent(0));
        assert_eq!(s.titles(&snap, &names), [100, 102]);
    }

    #[test]
    fn columns_wait_for_exact_paths_and_fix_wildcards_at_the_first_sample() {
        let names = names();
        let requests = [
            pdh::parse(r"\Jobs(w2)\Queue").unwrap(),
            pdh::parse(r"\jobs(W2)\queue").unwrap(),
            pdh::parse(r"\Jobs(*)\Queue").unwrap(),
            pdh::parse(r"\Other(*)\Queue").unwrap(),
        ];
        let first = snapshot(1, &[("w1", [1, 0, 0, 0, 0, 0])]);
        let mut header = Vec::new();
        let mut columns = Columns::new(&requests, &first, &names, FormatOptions::default(), |p| {
            header.push(p.to_string());
            Ok::<(), ()>(())
        })
        .unwrap();
        // One waiting column for w2 (the second spelling is the same path), w1 from the
        // wildcard, nothing for the wildcard that matches nothing.
        assert_eq!(header, [r"\\box\Jobs(w2)\Queue", r"\\box\Jobs(w1)\Queue"]);
        assert_eq!(
            columns.sample(&first, &names, &Default::default()),
            [None, Some(1.0)]
        );
        assert_eq!(columns.never_matched().collect::<Vec<_>>(), [0]);
        // w2 appears: its column has its value; w3 gets no column.
        let later = snapshot(
            2,
            &[
                ("w1", [1, 0, 0, 0, 0, 0]),
                ("w2", [2, 0, 0, 0, 0, 0]),
                ("w3", [3, 0, 0, 0, 0, 0]),
            ],
        );
        assert_eq!(
            columns.sample(&later, &names, &Default::default()),
            [Some(2.0), Some(1.0)]
        );
        assert_eq!(columns.never_matched().count(), 0);
        // Gone again: empty again.
        assert_eq!(
            columns.sample(&first, &names, &Default::default()),
            [None, Some(1.0)]
        );
    }

    #[test]
    fn the_sample_carries_the_collection_time() {
        let s = Sampler::new(vec![], FormatOptions::default()).sample(&snapshot(5, &[]), &names());
        let t = s.wall_time().unwrap();
        assert_eq!(
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
            5
        );
        assert_eq!(s.system_name, "box");
    }
}

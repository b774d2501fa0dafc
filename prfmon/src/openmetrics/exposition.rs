//! One collection as metric families, and those families in the OpenMetrics text format
//! (encoded by the `prometheus-client` crate).
//!
//! An [`Exposition`] is a plan, not a copy: each family's name, help and type, and which
//! counters of which objects its series come from. The series themselves are read from the
//! collection (which the exposition keeps, sharing its bytes) as they are encoded, an
//! instance at a time, and written to the caller's writer ([`Exposition::encode_to`]):
//! exporting a million instances costs a number per instance (its PDH `#n`), never a series
//! or a label per instance held in memory.
//!
//! # Examples
//!
//! ```
//! use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
//! use prfmon::names::Names;
//! use prfmon::openmetrics::exposition::Exposition;
//!
//! // The sample object (see `prfdata_testkit::sample`, a test fixture): RAWCOUNT, AVERAGE_BULK and its base.
//! let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
//! let snapshot = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
//! let mut names = Names::default();
//! names.counter.extend([(1848, "Jobs".to_owned()), (1850, "Queued".to_owned()), (1852, "Avg size".to_owned())]);
//! names.help.insert(1851, "Jobs waiting.".to_owned());
//!
//! let exposition = Exposition::new(&snapshot, &["JobSvc".to_owned()], &names);
//! let text = exposition.encode();
//! assert!(text.contains("# HELP prfdata_jobs_queued Jobs waiting."));
//! assert!(text.contains("# TYPE prfdata_jobs_queued gauge\n"));
//! assert!(text.contains("prfdata_jobs_queued{perf_instance=\"alpha\",app=\"JobSvc\"} 7\n"));
//! assert!(text.contains("prfdata_jobs_avg_size_total{perf_instance=\"alpha\",app=\"JobSvc\"} 100\n"));
//! assert!(text.contains("prfdata_jobs_avg_size_base_total{perf_instance=\"beta\",app=\"JobSvc\"} 1\n"));
//! assert!(text.ends_with("# EOF\n"));
//! # Ok::<(), prfdata_wire::error::DecodeError>(())
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use prometheus_client::collector::Collector as PromCollector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelValue, EncodeMetric, LabelValueEncoder, MetricEncoder,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::histogram::{self as hist, Role};
use super::kind::{metric_kind, unit_of, Clock, MetricKind, MetricUnit};
use super::naming::{declared_stem, object_stem, word_or_index, NameTable};
use crate::names::{InstanceNames, Names};
use crate::namesakes::NameIndex;
use crate::units::Units;
use prfdata_wire::snapshot::{CounterDef, DataSnapshot, ObjectData, Values};
use prfdata_wire::winperf::{PERF_TYPE_MASK, PERF_TYPE_TEXT};

/// The label naming a series' instance: not `instance`, which Prometheus attaches to every
/// series itself (the scrape target) and which would turn the exporter's into
/// `exported_instance` in a real scrape.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::openmetrics::exposition::INSTANCE_LABEL, "perf_instance");
/// ```
pub const INSTANCE_LABEL: &str = "perf_instance";

/// The `Content-Type` of [`Exposition::encode`]'s output.
///
/// # Examples
///
/// ```
/// assert!(prfmon::openmetrics::exposition::CONTENT_TYPE.starts_with("application/openmetrics-text"));
/// ```
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `Content-Type` of [`Exposition::encode_text`]'s output.
///
/// # Examples
///
/// ```
/// assert!(prfmon::openmetrics::exposition::TEXT_CONTENT_TYPE.contains("version=0.0.4"));
/// ```
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Where one family's series come from, in naming order: a counter of an object, a series
/// per instance (or one for an object without).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Source {
    object: usize,
    counter: usize,
}

impl Source {
    fn object(self) -> usize {
        self.object
    }
}

/// One metric family: a name, its explain text, its type and where its series come from.
#[derive(Debug, Clone)]
struct Family {
    /// The family name (a counter's samples add `_total`).
    name: String,
    /// `HELP`: the explain text, then the counter path and type in brackets.
    help: String,
    /// `TYPE`.
    kind: MetricKind,
    /// The unit its values are exported in (the name ends with its word).
    unit: MetricUnit,
    /// The objects' counters whose values are its series: objects in naming order (see
    /// [`super::naming`]), counters in order.
    sources: Vec<Source>,
}

/// A collection as metric families, sorted by name (see the [module docs](self)).
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// The collection (a clone: its bytes are shared, not copied).
    snapshot: DataSnapshot,
    /// The service of each object, by position (empty: not known).
    apps: Vec<String>,
    /// Sorted by name; a family whose sources give no series is left out when encoded.
    families: Vec<Family>,
    /// The most buckets a histogram series shows.
    bucket_limit: hist::BucketLimit,
}

/// One series' labels. Empty labels are left out of the output (Prometheus treats an empty
/// label as an absent one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Labels<'a> {
    /// The instance, as PDH names it without its parent (`name`, or `name#1` for the second
    /// instance of that name under the same parent); `None` for an object without instances.
    instance: Option<&'a str>,
    /// The parent instance's name, when the instance names a parent object that is in the
    /// same collection.
    parent: Option<&'a str>,
    /// The service that produced the object.
    app: &'a str,
    /// The object the value comes from (its clock converts a time), by position.
    object: usize,
    /// The instance the value comes from, by position; `None` for the object's own values.
    row: Option<usize>,
}

impl Labels<'_> {
    /// Whether no label is written.
    fn is_empty(&self) -> bool {
        self.instance.is_none() && self.parent.is_none() && self.app.is_empty()
    }
}

impl Exposition {
    /// The families of `snapshot`, whose object `i` came from service `services[i]`
    /// (a missing entry gives an empty `app`), named with `names`.
    ///
    /// Duplicate series (same family, same labels: an object present twice) keep the first
    /// in naming order (see [`super::naming`]). Text, zero-size and non-integer values are left
    /// out.
    pub fn new(snapshot: &DataSnapshot, services: &[String], names: &Names) -> Self {
        Self::with_units(snapshot, services, names, &Units::default())
    }

    /// [`Exposition::new`] with the units counters declare for their raw values (`units`, by
    /// counter name index): such a count's family is named for its unit (see the
    /// [module docs](super)).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::ObjectBuilder;
    /// use prfdata_wire::snapshot::RawValue;
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// use prfmon::openmetrics::exposition::Exposition;
    /// use prfmon::units::Units;
    /// let object = ObjectBuilder::new(10)
    ///     .counter(12, prfdata_wire::winperf::PERF_COUNTER_LARGE_RAWCOUNT, 8)
    ///     .values(vec![RawValue::Int(2048)]);
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[ProviderOutput::from(&object)]))?;
    /// let mut names = prfmon::names::Names::default();
    /// names.counter.extend([(10, "Pool".to_owned()), (12, "Payload KiB".to_owned())]);
    /// let mut hive = prfdata_registry::perflib::new_hive();
    /// prfdata_registry::stats::write_units(&mut hive, "App", &[(12, "bytes".into())])?;
    /// let units = Units::from_hive(&hive)?;
    /// let text = Exposition::with_units(&snap, &[], &names, &units).encode();
    /// assert!(text.contains("# UNIT prfdata_pool_payload_bytes bytes\n"), "{text}");
    /// assert!(text.contains("\nprfdata_pool_payload_bytes 2048\n"), "{text}");
    /// // Without the declared unit: raw, named as the counter is.
    /// let text = Exposition::new(&snap, &[], &names).encode();
    /// assert!(text.contains("\nprfdata_pool_payload_kib 2048\n"), "{text}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_units(
        snapshot: &DataSnapshot,
        services: &[String],
        names: &Names,
        units: &Units,
    ) -> Self {
        let app = |position: usize| services.get(position).map_or("", String::as_str);
        // Naming order (naming rule 5): object index, service, position.
        let mut order: Vec<usize> = (0..snapshot.objects.len()).collect();
        order.sort_by_key(|&o| (snapshot.objects[o].name_index, app(o), o));
        let mut table = NameTable::default();
        let mut families: BTreeMap<String, Family> = BTreeMap::new();
        // All names are decided first, then the sources added, both in naming order.
        let mut plans: Vec<Vec<Option<String>>> = vec![Vec::new(); snapshot.objects.len()];
        for &o in &order {
            let object = &snapshot.objects[o];
            plans[o] = plan_object(object, (names, units), &mut table, &mut families);
        }
        let mut add = |name: &str, source: Source| {
            if let Some(family) = families.get_mut(name) {
                family.sources.push(source);
            }
        };
        for &object in &order {
            for (counter, family) in plans[object].iter().enumerate() {
                if let Some(name) = family {
                    add(name, Source { object, counter });
                }
            }
        }
        Self {
            snapshot: snapshot.clone(),
            apps: (0..snapshot.objects.len())
                .map(|o| app(o).to_owned())
                .collect(),
            families: families.into_values().collect(),
            bucket_limit: hist::BucketLimit::ALL,
        }
    }

    /// This exposition with each histogram series showing at most `limit` buckets (`+Inf`
    /// included): adjacent buckets merged in groups of 2, 4, 8 ... until they fit, each group
    /// exposed at its last bucket's `le` with the cumulative count there (so the counts at the
    /// `le` values kept are the same as with every bucket shown). A group of 2^m buckets
    /// multiplies a percentile's error bound by 2^m; the number of series per histogram falls
    /// by about as much.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// use prfmon::openmetrics::{exposition::Exposition, BucketLimit};
    /// // A "Latency" histogram of 15 buckets in microseconds (one instance, "a", 6 values).
    /// let mut counts = [0u64; 15];
    /// (counts[0], counts[4], counts[14]) = (1, 3, 2);
    /// let object = prfdata_testkit::sample::histogram_object(3000, &[("a", &counts, &[4, 0, 1])]);
    /// let out = ProviderOutput { bytes: object, num_objects: 1 };
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
    /// let mut names = prfmon::names::Names::default();
    /// names.counter.extend([(3000, "Pool".to_owned()), (3002, "Latency".to_owned())]);
    /// let buckets = |text: &str| text.lines().filter(|l| l.contains("_latency_seconds_bucket")).count();
    /// let all = Exposition::new(&snap, &[], &names).encode();
    /// assert_eq!(buckets(&all), 15);
    /// let limit = BucketLimit::at_most(4).expect("not 0");
    /// let coarse = Exposition::new(&snap, &[], &names).with_bucket_limit(limit).encode();
    /// assert_eq!(buckets(&coarse), 4, "{coarse}"); // groups of 4 buckets
    /// assert!(coarse.contains("_bucket{le=\"+Inf\",perf_instance=\"a\"} 6"), "{coarse}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_bucket_limit(mut self, limit: hist::BucketLimit) -> Self {
        self.bucket_limit = limit;
        self
    }

    /// The names of the families, sorted, with at least one series each.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
    /// let snapshot = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
    /// let e = prfmon::openmetrics::exposition::Exposition::new(&snapshot, &[], &Default::default());
    /// assert_eq!(e.family_names(), ["prfdata_n1848_n1850", "prfdata_n1848_n1852", "prfdata_n1848_n1852_base"]);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn family_names(&self) -> Vec<&str> {
        let mut labels = ObjectLabels::new(&self.snapshot);
        self.families
            .iter()
            .filter(|f| self.series(f, &mut labels, |_, _| Ok(())).unwrap_or(0) > 0)
            .map(|f| f.name.as_str())
            .collect()
    }

    /// The families in the OpenMetrics text format, ending with `# EOF`, encoded by
    /// `prometheus-client` (served as [`CONTENT_TYPE`]): [`Exposition::encode_to`] into a
    /// string.
    ///
    /// # Examples
    ///
    /// ```
    /// let text = prfmon::openmetrics::exposition::Exposition::default().encode();
    /// assert_eq!(text, "# EOF\n");
    /// ```
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Err(e) = self.encode_to(&mut out) {
            // Writing to a String cannot fail; keep the output well formed if it ever does.
            out.clear();
            let _ = writeln!(out, "# encoding failed: {e}\n# EOF");
        }
        out
    }

    /// The families in the OpenMetrics text format, ending with `# EOF`, written to `out` as
    /// they are encoded, series by series.
    ///
    /// # Errors
    ///
    /// The first error of `out`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut text = String::new();
    /// prfmon::openmetrics::exposition::Exposition::default().encode_to(&mut text)?;
    /// assert_eq!(text, "# EOF\n");
    /// # Ok::<(), std::fmt::Error>(())
    /// ```
    pub fn encode_to(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        prometheus_client::encoding::text::encode(out, &registry)
    }
}

impl Exposition {
    /// The families in Prometheus' classic text format (version 0.0.4), for clients that do
    /// not ask for OpenMetrics (`curl`, `promtool check metrics`): [`Exposition::encode_text_to`]
    /// into a string.
    ///
    /// # Examples
    ///
    /// ```
    /// let text = prfmon::openmetrics::exposition::Exposition::default().encode_text();
    /// assert_eq!(text, "");
    /// ```
    pub fn encode_text(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.encode_text_to(&mut out);
        out
    }

    /// The families in Prometheus' classic text format (version 0.0.4), written to `out` line
    /// by line as they are encoded: the OpenMetrics text of [`encode_to`](Self::encode_to)
    /// with the three differences of the older format applied, and nothing else touched:
    ///
    /// - a counter's `# HELP` and `# TYPE` lines name the family with its `_total`, as its
    ///   samples do (OpenMetrics names the family without it);
    /// - `\"` in HELP becomes `"` (the older format escapes only `\\` and `\n` there);
    /// - no `# EOF` line, and no `# UNIT` lines.
    ///
    /// # Errors
    ///
    /// The first error of `out`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::ObjectBuilder;
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// use prfdata_wire::snapshot::RawValue;
    /// use prfmon::openmetrics::exposition::Exposition;
    /// let object = ObjectBuilder::new(10)
    ///     .counter(12, prfdata_wire::winperf::PERF_COUNTER_BULK_COUNT, 8)
    ///     .values(vec![RawValue::Int(3)]);
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[ProviderOutput::from(&object)]))?;
    /// let mut names = prfmon::names::Names::default();
    /// names.counter.extend([(10, "A".to_owned()), (12, "B".to_owned())]);
    /// names.help.insert(13, "Say \"hi\".".to_owned());
    /// let mut text = String::new();
    /// Exposition::new(&snap, &[], &names).encode_text_to(&mut text)?;
    /// assert_eq!(
    ///     text,
    ///     "# HELP prfdata_a_b_total Say \"hi\". [A\\\\B, PERF_COUNTER_BULK_COUNT]\n# TYPE prfdata_a_b_total counter\nprfdata_a_b_total 3\n"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn encode_text_to(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        let counters: HashSet<&str> = self
            .families
            .iter()
            .filter(|f| f.kind == MetricKind::Counter)
            .map(|f| f.name.as_str())
            .collect();
        let mut classic = Classic {
            out,
            counters,
            line: String::new(),
        };
        self.encode_to(&mut classic)?;
        classic.end()
    }
}

/// OpenMetrics text turned into the classic text format line by line (see
/// [`Exposition::encode_text_to`]).
struct Classic<'a, W: std::fmt::Write> {
    out: &'a mut W,
    /// The names of the counter families.
    counters: HashSet<&'a str>,
    /// The line being received.
    line: String,
}

impl<W: std::fmt::Write> std::fmt::Write for Classic<'_, W> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let mut rest = text;
        while let Some(at) = rest.find('\n') {
            self.line.push_str(&rest[..at]);
            self.write_line()?;
            rest = &rest[at + 1..];
        }
        self.line.push_str(rest);
        Ok(())
    }
}

impl<W: std::fmt::Write> Classic<'_, W> {
    /// Writes the line received, changed for the classic format.
    fn write_line(&mut self) -> std::fmt::Result {
        let line = std::mem::take(&mut self.line);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        // The older format has no `# EOF` and no `# UNIT` (the unit is the name's last word).
        if line == "# EOF" || line.starts_with("# UNIT ") {
            return Ok(());
        }
        let descriptor = line
            .strip_prefix("# HELP ")
            .map(|rest| ("HELP", rest))
            .or_else(|| line.strip_prefix("# TYPE ").map(|rest| ("TYPE", rest)));
        match descriptor {
            Some((what, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let total = if self.counters.contains(name) {
                    "_total"
                } else {
                    ""
                };
                let tail = if what == "HELP" {
                    unescape_quotes(tail)
                } else {
                    tail.to_owned()
                };
                writeln!(self.out, "# {what} {name}{total} {tail}")
            }
            None => writeln!(self.out, "{line}"),
        }
    }

    /// Writes what is left of the last line, if it had no newline.
    fn end(&mut self) -> std::fmt::Result {
        if self.line.is_empty() {
            Ok(())
        } else {
            self.write_line()
        }
    }
}

/// The PDH labels of objects' instances, each object's found the first time a family needs
/// them: one number per instance, and an index by labels for an object a later one with the
/// same app and family must not repeat.
struct ObjectLabels<'a> {
    snapshot: &'a DataSnapshot,
    names: Vec<Option<InstanceNames<'a>>>,
    indexes: Vec<Option<NameIndex>>,
    /// Per instance, how many earlier instances of its object have the same labels (a name
    /// that itself ends in `#1` can meet the `#1` PDH gives the second of another name).
    repeats: Vec<Option<Vec<u32>>>,
}

impl<'a> ObjectLabels<'a> {
    fn new(snapshot: &'a DataSnapshot) -> Self {
        let n = snapshot.objects.len();
        ObjectLabels {
            snapshot,
            names: (0..n).map(|_| None).collect(),
            indexes: (0..n).map(|_| None).collect(),
            repeats: (0..n).map(|_| None).collect(),
        }
    }

    /// Whether an earlier instance of object `o` has the labels of instance `i`.
    fn repeats(&mut self, o: usize, i: usize) -> bool {
        if self.repeats[o].is_none() {
            let count = self.snapshot.objects[o].instance_count();
            let (mut l, mut p) = (String::new(), None);
            let numbers = crate::namesakes::numbers(count, |k, out| {
                if self.labels(o, k, &mut l, &mut p) {
                    Self::key(&l, p.as_deref(), out);
                }
            });
            self.repeats[o] = Some(numbers);
        }
        self.repeats[o]
            .as_ref()
            .and_then(|r| r.get(i))
            .is_some_and(|&n| n > 0)
    }

    /// The PDH names of object `o`'s instances.
    fn names(&mut self, o: usize) -> &InstanceNames<'a> {
        let snapshot = self.snapshot;
        self.names[o].get_or_insert_with(|| InstanceNames::new(snapshot, &snapshot.objects[o]))
    }

    /// Writes the `instance` and `parent` labels of instance `i` of object `o` into `label`
    /// and `parent`; false if there is no such instance.
    fn labels(
        &mut self,
        o: usize,
        i: usize,
        label: &mut String,
        parent: &mut Option<String>,
    ) -> bool {
        let snapshot = self.snapshot;
        let Some(inst) = snapshot.objects[o].instance(i) else {
            return false;
        };
        let number = self.names(o).number(i);
        label.clear();
        label.push_str(&inst.own_name());
        if number > 0 {
            let _ = write!(label, "#{number}");
        }
        *parent = snapshot.parent(&inst).map(|p| p.own_name());
        true
    }

    /// The key an instance's labels are compared by.
    fn key(label: &str, parent: Option<&str>, out: &mut String) {
        match parent {
            Some(p) => {
                out.push('P');
                out.push_str(p);
                out.push('\0');
            }
            None => out.push('N'),
        }
        out.push_str(label);
    }

    /// Whether object `o` has an instance with these labels.
    fn has(&mut self, o: usize, label: &str, parent: Option<&str>) -> bool {
        let count = self.snapshot.objects[o].instance_count();
        let key_of = |this: &mut Self, i: usize, out: &mut String| {
            let (mut l, mut p) = (String::new(), None);
            if this.labels(o, i, &mut l, &mut p) {
                Self::key(&l, p.as_deref(), out);
            }
        };
        if self.indexes[o].is_none() {
            let index = NameIndex::new(count, &mut |i, out| key_of(self, i, out));
            self.indexes[o] = Some(index);
        }
        let mut wanted = String::new();
        Self::key(label, parent, &mut wanted);
        let index = self.indexes[o].take();
        let found = index.as_ref().is_some_and(|index| {
            index
                .find(&wanted, &mut |i, out| key_of(self, i, out))
                .is_some()
        });
        self.indexes[o] = index;
        found
    }
}

/// Whether a counter's values are integers (a DWORD or a LARGE, not text): what becomes a
/// series.
fn gives_int(def: &CounterDef) -> bool {
    def.counter_type & PERF_TYPE_MASK != PERF_TYPE_TEXT && matches!(def.size, 4 | 8)
}

impl Exposition {
    /// Calls `emit` with every series of `family`, in order, each labels once (the first in
    /// naming order: see [`Exposition::new`]); returns how many there were, or the first
    /// error of `emit`.
    fn series(
        &self,
        family: &Family,
        cache: &mut ObjectLabels<'_>,
        mut emit: impl FnMut(Labels<'_>, i64) -> std::fmt::Result,
    ) -> Result<usize, std::fmt::Error> {
        let mut count = 0;
        let sources = &family.sources;
        let mut start = 0;
        while start < sources.len() {
            let object = sources[start].object();
            let len = sources[start..]
                .iter()
                .take_while(|s| s.object() == object)
                .count();
            let (earlier, group) = (&sources[..start], &sources[start..start + len]);
            count += self.object_series(family, (object, group), earlier, cache, &mut emit)?;
            start += len;
        }
        Ok(count)
    }

    /// The series `group` (the sources of `family` from object `object`) adds after
    /// `earlier` (the family's sources from objects before it).
    fn object_series(
        &self,
        family: &Family,
        (object, group): (usize, &[Source]),
        earlier: &[Source],
        cache: &mut ObjectLabels<'_>,
        emit: &mut impl FnMut(Labels<'_>, i64) -> std::fmt::Result,
    ) -> Result<usize, std::fmt::Error> {
        let app = self.apps[object].as_str();
        let obj = &self.snapshot.objects[object];
        // The earlier objects whose series could carry the same labels: the same app.
        let mut before: Vec<usize> = earlier
            .iter()
            .map(|s| s.object())
            .filter(|&o| self.apps[o] == app)
            .collect();
        before.dedup();
        let object_labels = Labels {
            app,
            object,
            ..Labels::default()
        };
        let mut count = 0;
        // The object's own row (its values without instances) is shown once.
        let object_row_shown = before.iter().any(|&o| self.shows_object_row(o, earlier));
        let counters: Vec<usize> = group.iter().map(|s| s.counter).collect();
        if !obj.has_instances() {
            let value = obj
                .values()
                .and_then(|v| self.value_in(family, object, &counters, &v, ""));
            if let (Some(value), false) = (value, object_row_shown) {
                emit(object_labels, value)?;
                count += 1;
            }
            return Ok(count);
        }
        if !counters
            .iter()
            .any(|&c| obj.counters.get(c).is_some_and(gives_int))
        {
            return Ok(count);
        }
        // Earlier objects with instances whose rows this family shows.
        let rivals: Vec<usize> = before
            .into_iter()
            .filter(|&o| self.shows_instance_rows(o, earlier))
            .collect();
        let rows = self.instance_series((family, object), &counters, &rivals, cache, emit)?;
        Ok(count + rows)
    }

    /// The series of object `object`'s instances for the counters `counters` (the first
    /// integer of each instance's), but those whose labels an earlier instance, or an
    /// instance of one of `rivals`, has.
    fn instance_series(
        &self,
        (family, object): (&Family, usize),
        counters: &[usize],
        rivals: &[usize],
        cache: &mut ObjectLabels<'_>,
        emit: &mut impl FnMut(Labels<'_>, i64) -> std::fmt::Result,
    ) -> Result<usize, std::fmt::Error> {
        let app = self.apps[object].as_str();
        let obj = &self.snapshot.objects[object];
        let mut count = 0;
        let (mut label, mut parent) = (String::new(), None);
        for (i, inst) in obj.instances().enumerate() {
            if !cache.labels(object, i, &mut label, &mut parent) || cache.repeats(object, i) {
                continue;
            }
            if rivals
                .iter()
                .any(|&o| cache.has(o, &label, parent.as_deref()))
            {
                continue;
            }
            let values = inst.values();
            if let Some(value) = self.value_in(family, object, counters, &values, &label) {
                let labels = Labels {
                    instance: Some(&label),
                    parent: parent.as_deref(),
                    app,
                    object,
                    row: Some(i),
                };
                emit(labels, value)?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// The value `family` shows from counter block `values` of object `object`: the first
    /// integer among its `counters`; for a histogram, its sum when the block's histogram has
    /// data in the family's unit (else none, and why is logged, naming instance `label`).
    fn value_in(
        &self,
        family: &Family,
        object: usize,
        counters: &[usize],
        values: &Values<'_>,
        label: &str,
    ) -> Option<i64> {
        if family.kind != MetricKind::Histogram {
            return counters.iter().find_map(|&c| values.int(c));
        }
        let obj = &self.snapshot.objects[object];
        counters
            .iter()
            .find_map(|&c| match hist::view(obj, c, values, family.unit) {
                Ok(view) => Some(view.sum as i64),
                Err(e) => {
                    let at = match label {
                        "" => String::new(),
                        l => format!("{{{INSTANCE_LABEL}=\"{}\"}}", escape(l, true)),
                    };
                    log::warn!("/metrics leaves out {}{at}: {e}", family.name);
                    None
                }
            })
    }

    /// Whether object `o`'s sources among `sources` show its own row: a value of an object
    /// without instances.
    fn shows_object_row(&self, o: usize, sources: &[Source]) -> bool {
        let obj = &self.snapshot.objects[o];
        !obj.has_instances()
            && sources
                .iter()
                .filter(|s| s.object() == o)
                .any(|s| obj.values().and_then(|v| v.int(s.counter)).is_some())
    }

    /// Whether object `o`'s sources among `sources` show a row per instance.
    fn shows_instance_rows(&self, o: usize, sources: &[Source]) -> bool {
        let obj = &self.snapshot.objects[o];
        obj.has_instances()
            && sources
                .iter()
                .filter(|s| s.object() == o)
                .any(|s| obj.counters.get(s.counter).is_some_and(gives_int))
    }
}

impl PromCollector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut cache = ObjectLabels::new(&self.snapshot);
        for family in &self.families {
            // The first series, and whether there is a second (then every series has labels).
            let mut first: Option<(bool, i64, (usize, Option<usize>))> = None;
            let mut more = false;
            let _ = self.series(family, &mut cache, |labels, value| {
                if first.is_none() {
                    first = Some((labels.is_empty(), value, (labels.object, labels.row)));
                    return Ok(());
                }
                more = true;
                // Stop: two series are enough to know.
                Err(std::fmt::Error)
            });
            let Some((unlabelled, value, at)) = first else {
                continue;
            };
            let help = escape(&family.help, true);
            let metric_type = match family.kind {
                MetricKind::Counter => MetricType::Counter,
                MetricKind::Gauge => MetricType::Gauge,
                MetricKind::Histogram => MetricType::Histogram,
            };
            // prometheus-client writes the unit after the name it is given (and a `# UNIT`
            // line); a name that does not end in it (a collision's index after it) gets none.
            let unit = family.unit.openmetrics_unit();
            let (name, unit) = match &unit {
                Some((unit, ending)) => match family.name.strip_suffix(ending) {
                    Some(stem) => (stem, Some(unit)),
                    None => (family.name.as_str(), None),
                },
                None => (family.name.as_str(), None),
            };
            let mut metric = encoder.encode_descriptor(name, &help, unit, metric_type)?;
            if !more && unlabelled {
                // No labels at all: `name value`, not `name{} value`.
                self.write_value(family, value, at, metric)?;
                continue;
            }
            self.series(family, &mut cache, |l, value| {
                let mut labels: Vec<(&str, Escaped<'_>)> = Vec::with_capacity(3);
                if let Some(i) = l.instance {
                    labels.push((INSTANCE_LABEL, Escaped(i)));
                }
                if let Some(p) = l.parent {
                    labels.push(("parent", Escaped(p)));
                }
                if !l.app.is_empty() {
                    labels.push(("app", Escaped(l.app)));
                }
                let at = (l.object, l.row);
                self.write_value(family, value, at, metric.encode_family(&labels)?)
            })?;
        }
        Ok(())
    }
}

/// An OpenMetrics escaped string with `\"` turned into `"` and the other escapes kept.
fn unescape_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Decides the family of each counter of `object` (`None`: not exported), and creates the
/// families that do not exist yet.
fn plan_object(
    object: &ObjectData,
    (names, units): (&Names, &Units),
    table: &mut NameTable,
    families: &mut BTreeMap<String, Family>,
) -> Vec<Option<String>> {
    let object_name = names.counter.get(object.name_index);
    let object_stem = object_stem(&word_or_index(object_name, object.name_index));
    let mut plan: Vec<Option<String>> = Vec::with_capacity(object.counters.len());
    let roles = hist::roles(object);
    for (c, &role) in roles.iter().enumerate() {
        let Some((kind, unit)) = kind_and_unit(object, c, role, units) else {
            plan.push(None);
            continue;
        };
        let (stem, key_index, help) = family_of(object, (c, kind), &plan, &object_stem, names);
        let stem = match (unit, unit.suffix()) {
            (MetricUnit::Declared(declared), _) => declared_stem(&stem, declared),
            // A counter named for its unit ("Busy seconds") does not say it twice.
            (_, Some(suffix)) => format!(
                "{}_{suffix}",
                stem.strip_suffix("_seconds").unwrap_or(&stem)
            ),
            (_, None) => stem,
        };
        let name = table.claim(&stem, kind, (object.name_index, key_index));
        families.entry(name.clone()).or_insert_with(|| Family {
            name: name.clone(),
            help,
            kind,
            unit,
            sources: Vec::new(),
        });
        plan.push(Some(name));
    }
    plan
}

/// The type and unit counter `c` of `object` is exported as (`role`: its part in a histogram),
/// `None` if it is not exported.
fn kind_and_unit(
    object: &ObjectData,
    c: usize,
    role: Role,
    units: &Units,
) -> Option<(MetricKind, MetricUnit)> {
    let def = &object.counters[c];
    let serves = def
        .base_of
        .and_then(|j| object.counters.get(j))
        .map(|s| s.counter_type);
    match role {
        Role::Hidden => None,
        Role::Histogram(unit) => Some((MetricKind::Histogram, unit)),
        Role::Plain => {
            let kind = metric_kind(def.counter_type, serves)?;
            let unit = match (unit_of(def.counter_type, serves), units.of(def.name_index)) {
                (MetricUnit::Raw, Some(declared)) if !def.is_base => MetricUnit::Declared(declared),
                (unit, _) => unit,
            };
            Some((kind, unit))
        }
    }
}

/// The family stem, key index and help text of counter `c` of `object`, exported as `kind`
/// (`plan`: the families of the counters before it).
fn family_of(
    object: &ObjectData,
    (c, kind): (usize, MetricKind),
    plan: &[Option<String>],
    object_stem: &str,
    names: &Names,
) -> (String, u32, String) {
    let object_name = names.counter.get(object.name_index);
    let def = &object.counters[c];
    let served = def.base_of.and_then(|j| object.counters.get(j));
    match (def.is_base, served) {
        (true, Some(counter)) => {
            let counter_family = def
                .base_of
                .and_then(|j| plan.get(j).cloned().flatten())
                .unwrap_or_else(|| counter_stem(object_stem, counter, names));
            // A base counts (jobs, samples): named for its counter without the unit word.
            let stem = counter_family
                .strip_suffix("_seconds")
                .unwrap_or(&counter_family);
            (
                format!("{stem}_base"),
                counter.name_index,
                format!(
                    "The base (denominator) of {}. [{}\\{} base, {}]",
                    counter_family,
                    object_name.unwrap_or("?"),
                    names.name(counter.name_index),
                    def.type_name()
                ),
            )
        }
        (true, None) => (
            format!("{object_stem}_base_{c}"),
            0,
            format!(
                "A base with no counter before it. [{}, {}]",
                object_name.unwrap_or("?"),
                def.type_name()
            ),
        ),
        (false, _) => (
            counter_stem(object_stem, def, names),
            def.name_index,
            counter_help(object_name, def, names, kind),
        ),
    }
}

fn counter_stem(object_stem: &str, def: &CounterDef, names: &Names) -> String {
    let counter = word_or_index(names.counter.get(def.name_index), def.name_index);
    format!("{object_stem}_{counter}")
}

/// `HELP`: the explain text, then `[\Object\Counter, TYPE]`; a histogram's names the bucket
/// counter's type, which its family shows, not its sum's.
fn counter_help(
    object_name: Option<&str>,
    def: &CounterDef,
    names: &Names,
    kind: MetricKind,
) -> String {
    let type_name = match kind {
        MetricKind::Histogram => "PERF_PRFDATA_HISTOGRAM".to_owned(),
        _ => def.type_name(),
    };
    let explain = names.help(def.help_index);
    let path = format!(
        "{}\\{}",
        object_name.unwrap_or("?"),
        names.name(def.name_index)
    );
    let explain = explain.trim();
    if explain.is_empty() {
        format!("[{path}, {type_name}]")
    } else {
        format!("{explain} [{path}, {type_name}]")
    }
}

/// A label value written with OpenMetrics' escapes (`\\`, `\"`, `\n`), which
/// `prometheus-client` leaves to the caller.
struct Escaped<'a>(&'a str);

impl EncodeLabelValue for Escaped<'_> {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.write_str(&escape(self.0, true))
    }
}

/// `text` with OpenMetrics' escapes; `quote` also escapes `"` (label values; HELP escapes
/// it too in OpenMetrics, so both use it). Carriage returns become spaces.
fn escape(text: &str, quote: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push(' '),
            '"' if quote => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// Seconds from 1601-01-01 (FILETIME's epoch, `PerfTime100nSec`'s) to 1970-01-01.
const FILETIME_UNIX_EPOCH_SECONDS: f64 = 11_644_473_600.0;

impl Exposition {
    /// Writes one raw `value` of `family` from counter block `at` (object, instance) through
    /// `encoder`, in the family's unit; a histogram's whole block.
    fn write_value(
        &self,
        family: &Family,
        value: i64,
        at: (usize, Option<usize>),
        encoder: MetricEncoder<'_>,
    ) -> std::fmt::Result {
        let object = at.0;
        // A LARGE counter is a ULONGLONG: the bits as unsigned; a gauge is signed.
        let raw = match family.kind {
            MetricKind::Counter => value as u64 as f64,
            MetricKind::Gauge => value as f64,
            MetricKind::Histogram => return self.write_histogram(family, at, encoder),
        };
        let obj = self.snapshot.objects.get(object);
        let seconds = match family.unit {
            MetricUnit::Raw | MetricUnit::Declared(_) => {
                return match family.kind {
                    MetricKind::Counter => ConstCounter::new(value as u64).encode(encoder),
                    _ => ConstGauge::new(value).encode(encoder),
                };
            }
            MetricUnit::Seconds(clock) => {
                let freq = match clock {
                    Clock::System => self.snapshot.perf_freq,
                    Clock::HundredNs => HUNDRED_NS_PER_SECOND,
                    Clock::Object => obj.map_or(0, |o| o.perf_freq),
                };
                per_second(raw, freq)
            }
            // Now (the collection's wall clock) less the time since the start by the object's
            // clock.
            MetricUnit::StartTime => {
                let now = self.snapshot.perf_time_100nsec as f64 / HUNDRED_NS_PER_SECOND as f64
                    - FILETIME_UNIX_EPOCH_SECONDS;
                let (time, freq) = obj.map_or((0, 0), |o| (o.perf_time, o.perf_freq));
                now - per_second(time.wrapping_sub(value) as f64, freq)
            }
        };
        match family.kind {
            MetricKind::Counter => ConstCounter::new(seconds).encode(encoder),
            _ => ConstGauge::new(seconds).encode(encoder),
        }
    }

    /// Writes the histogram of `family` in counter block `at` (object, instance) through
    /// `encoder`: nothing if it has no data (a block [`Exposition::series`] does not give).
    fn write_histogram(
        &self,
        family: &Family,
        (object, row): (usize, Option<usize>),
        encoder: MetricEncoder<'_>,
    ) -> std::fmt::Result {
        let Some(obj) = self.snapshot.objects.get(object) else {
            return Ok(());
        };
        let values = match row {
            Some(i) => obj.instance(i).map(|inst| inst.values()),
            None => obj.values(),
        };
        let view = values.and_then(|values| {
            family
                .sources
                .iter()
                .filter(|s| s.object == object)
                .find_map(|s| hist::view(obj, s.counter, &values, family.unit).ok())
        });
        match view {
            Some(view) => hist::encode(&view, encoder, self.bucket_limit),
            None => Ok(()),
        }
    }
}

/// 100-nanosecond units in a second.
const HUNDRED_NS_PER_SECOND: i64 = 10_000_000;

/// `ticks` of a clock of `freq` ticks a second, in seconds; NaN for a clock without a
/// frequency (a provider that reports none).
fn per_second(ticks: f64, freq: i64) -> f64 {
    if freq > 0 {
        ticks / freq as f64
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    use prfdata_wire::build::ObjectBuilder;
    use prfdata_wire::snapshot::{InstanceData, RawValue};
    use prfdata_wire::winperf::*;

    /// The size a counter of `counter_type` has (a LARGE for the 64-bit types).
    fn size_of(counter_type: u32) -> u32 {
        match counter_type {
            PERF_COUNTER_TEXT => 16,
            t => counter_size(t).unwrap_or(4),
        }
    }

    /// An object with the counters `(name index, type)`.
    fn object(index: u32, counters: &[(u32, u32)]) -> ObjectBuilder {
        counters
            .iter()
            .fold(ObjectBuilder::new(index), |b, &(i, t)| {
                b.counter(i, t, size_of(t))
            })
    }

    fn snapshot(objects: &[ObjectBuilder]) -> DataSnapshot {
        let outputs: Vec<_> = objects.iter().map(ProviderOutput::from).collect();
        prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &outputs))
            .unwrap()
    }

    fn names(pairs: &[(u32, &str)]) -> Names {
        let mut n = Names::default();
        for &(i, s) in pairs {
            n.counter.insert(i, s.to_owned());
            n.help.insert(i + 1, format!("Help of {s}."));
        }
        n
    }

    /// The series lines of `text`: (name with labels, value).
    fn series(text: &str) -> Vec<(&str, &str)> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' '))
            .collect()
    }

    #[test]
    fn parents_are_labels_and_instances_keep_pdh_numbering() {
        let inst = |name: &str, parent: u32, pos: u32, v: i64| InstanceData {
            name: name.into(),
            unique_id: -1,
            parent_object_title_index: parent,
            parent_object_instance: pos,
            values: vec![RawValue::Int(v)],
        };
        let pools = object(10, &[(12, PERF_COUNTER_RAWCOUNT)])
            .instance(inst("pool A", 0, 0, 1))
            .instance(inst("pool \"B\"", 0, 0, 2));
        let workers = object(14, &[(16, PERF_COUNTER_COUNTER)])
            .instance(inst("w", 10, 1, 5))
            .instance(inst("w", 10, 1, 6))
            .instance(inst("w", 10, 0, 7));
        let snap = snapshot(&[pools, workers]);
        let n = names(&[(10, "Pool"), (12, "Size"), (14, "Worker"), (16, "Done/sec")]);
        let text = Exposition::new(&snap, &["A".into(), "A".into()], &n).encode();
        assert!(
            text.contains("prfdata_pool_size{perf_instance=\"pool \\\"B\\\"\",app=\"A\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("prfdata_worker_done_per_second_total{perf_instance=\"w\",parent=\"pool \\\"B\\\"\",app=\"A\"} 5\n"));
        assert!(text.contains("prfdata_worker_done_per_second_total{perf_instance=\"w#1\",parent=\"pool \\\"B\\\"\",app=\"A\"} 6\n"));
        assert!(text.contains(
            "prfdata_worker_done_per_second_total{perf_instance=\"w\",parent=\"pool A\",app=\"A\"} 7\n"
        ));
        assert!(text.contains("# HELP prfdata_worker_done_per_second Help of Done/sec. [Worker\\\\Done/sec, PERF_COUNTER_COUNTER]\n"), "{text}");
    }

    #[test]
    fn a_declared_unit_names_a_counts_family_and_a_times_type_keeps_its_own() {
        let obj = object(
            10,
            &[
                (12, PERF_COUNTER_BULK_COUNT),
                (14, PERF_COUNTER_LARGE_RAWCOUNT),
                (16, PERF_100NSEC_TIMER),
            ],
        )
        .values(
            [4096, 120, 30_000_000]
                .map(RawValue::Int)
                .into_iter()
                .collect(),
        );
        let snap = snapshot(&[obj]);
        let n = names(&[
            (10, "Pool"),
            (12, "Sent KiB"),
            (14, "Uptime minutes"),
            (16, "Busy"),
        ]);
        let mut hive = prfdata_registry::perflib::new_hive();
        let declared = [
            (12, "bytes".into()),
            (14, "seconds".into()),
            (16, "bytes".into()),
        ];
        prfdata_registry::stats::write_units(&mut hive, "App", &declared).unwrap();
        let units = Units::from_hive(&hive).unwrap();
        let text = Exposition::with_units(&snap, &[], &n, &units).encode();
        for line in [
            "# UNIT prfdata_pool_sent_bytes bytes\n",
            "prfdata_pool_sent_bytes_total 4096\n",
            "# UNIT prfdata_pool_uptime_seconds seconds\n",
            "prfdata_pool_uptime_seconds 120\n",
            // A time is in seconds by its type, whatever the registry says.
            "prfdata_pool_busy_seconds_total 3.0\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        assert!(!text.contains("busy_bytes"), "{text}");
    }

    #[test]
    fn bases_are_families_of_their_own_named_after_their_counter() {
        let obj = object(
            10,
            &[
                (12, PERF_AVERAGE_TIMER),
                (0, PERF_AVERAGE_BASE),
                (14, PERF_RAW_FRACTION),
                (0, PERF_RAW_BASE),
                (16, PERF_COUNTER_TEXT),
            ],
        )
        .values(
            [300, 3, 1, 4]
                .map(RawValue::Int)
                .into_iter()
                .chain([RawValue::Text("x".into())])
                .collect(),
        );
        let snap = snapshot(&[obj]);
        let n = names(&[
            (10, "Svc"),
            (12, "Avg. latency"),
            (14, "Hit ratio"),
            (16, "Label"),
        ]);
        let e = Exposition::new(&snap, &["S".into()], &n);
        assert_eq!(
            e.family_names(),
            [
                "prfdata_svc_avg_latency_base",
                "prfdata_svc_avg_latency_seconds",
                "prfdata_svc_hit_ratio",
                "prfdata_svc_hit_ratio_base",
            ]
        );
        let text = e.encode();
        assert_eq!(
            series(&text),
            [
                ("prfdata_svc_avg_latency_base_total{app=\"S\"}", "3"),
                (
                    "prfdata_svc_avg_latency_seconds_total{app=\"S\"}",
                    "0.00003"
                ),
                ("prfdata_svc_hit_ratio{app=\"S\"}", "1"),
                ("prfdata_svc_hit_ratio_base{app=\"S\"}", "4"),
            ]
        );
        assert!(
            text.contains("# TYPE prfdata_svc_hit_ratio gauge\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE prfdata_svc_avg_latency_seconds counter\n"),
            "{text}"
        );
    }

    #[test]
    fn counters_are_written_unsigned_and_gauges_signed() {
        let obj = object(
            10,
            &[
                (12, PERF_COUNTER_BULK_COUNT),
                (14, PERF_COUNTER_LARGE_RAWCOUNT),
            ],
        )
        .values(vec![RawValue::Int(-1), RawValue::Int(-5)]);
        let snap = snapshot(&[obj]);
        let text = Exposition::new(&snap, &[], &names(&[(10, "O"), (12, "B"), (14, "G")])).encode();
        assert!(
            text.contains("prfdata_o_b_total 18446744073709551615\n"),
            "{text}"
        );
        assert!(text.contains("prfdata_o_g -5\n"), "{text}");
    }

    #[test]
    fn the_same_object_from_two_services_shares_families_and_exact_duplicates_are_dropped() {
        let obj =
            |v: i64| object(10, &[(12, PERF_COUNTER_RAWCOUNT)]).values(vec![RawValue::Int(v)]);
        let snap = snapshot(&[obj(1), obj(2), obj(3)]);
        let e = Exposition::new(
            &snap,
            &["B".into(), "A".into(), "B".into()],
            &names(&[(10, "O"), (12, "C")]),
        );
        assert_eq!(e.family_names(), ["prfdata_o_c"]);
        assert_eq!(
            series(&e.encode()),
            [
                ("prfdata_o_c{app=\"A\"}", "2"),
                ("prfdata_o_c{app=\"B\"}", "1")
            ]
        );
    }

    #[test]
    fn duplicate_instances_of_an_object_collected_twice_are_dropped() {
        let inst = |name: &str, v: i64| InstanceData {
            name: name.into(),
            unique_id: -1,
            values: vec![RawValue::Int(v)],
            ..InstanceData::default()
        };
        let first = object(10, &[(12, PERF_COUNTER_RAWCOUNT)])
            .instance(inst("a", 1))
            .instance(inst("b", 2));
        let second = object(10, &[(12, PERF_COUNTER_RAWCOUNT)])
            .instance(inst("b", 3))
            .instance(inst("c", 4));
        // A name that is itself `#1` meets the `#1` of the second `a`: shown once.
        let third = object(10, &[(12, PERF_COUNTER_RAWCOUNT)])
            .instance(inst("a#1", 5))
            .instance(inst("a", 6))
            .instance(inst("a", 7));
        let snap = snapshot(&[first, second, third]);
        let services = ["A".to_owned(), "A".to_owned(), "B".to_owned()];
        let text = Exposition::new(&snap, &services, &names(&[(10, "O"), (12, "C")])).encode();
        assert_eq!(
            series(&text),
            [
                ("prfdata_o_c{perf_instance=\"a\",app=\"A\"}", "1"),
                ("prfdata_o_c{perf_instance=\"b\",app=\"A\"}", "2"),
                ("prfdata_o_c{perf_instance=\"c\",app=\"A\"}", "4"),
                ("prfdata_o_c{perf_instance=\"a#1\",app=\"B\"}", "5"),
                ("prfdata_o_c{perf_instance=\"a\",app=\"B\"}", "6"),
            ]
        );
    }

    #[test]
    fn the_classic_text_format_names_counter_descriptors_with_total_and_unescapes_quotes() {
        let obj = object(
            10,
            &[(12, PERF_COUNTER_BULK_COUNT), (14, PERF_COUNTER_RAWCOUNT)],
        )
        .instance(InstanceData {
            name: "x\"y".into(),
            unique_id: -1,
            values: vec![RawValue::Int(1), RawValue::Int(2)],
            ..InstanceData::default()
        });
        let snap = snapshot(&[obj]);
        let mut n = names(&[(10, "P"), (12, "C"), (14, "G")]);
        n.help.insert(13, "a \"q\" \\ b\nc".into());
        n.help.insert(15, "g".into());
        assert_eq!(
            Exposition::new(&snap, &["A".into()], &n).encode_text(),
            "# HELP prfdata_p_c_total a \"q\" \\\\ b\\nc [P\\\\C, PERF_COUNTER_BULK_COUNT]\n\
             # TYPE prfdata_p_c_total counter\n\
             prfdata_p_c_total{perf_instance=\"x\\\"y\",app=\"A\"} 1\n\
             # HELP prfdata_p_g g [P\\\\G, PERF_COUNTER_RAWCOUNT]\n\
             # TYPE prfdata_p_g gauge\n\
             prfdata_p_g{perf_instance=\"x\\\"y\",app=\"A\"} 2\n"
        );
    }

    #[test]
    fn an_elapsed_time_is_a_unix_start_time_and_no_clock_is_exported() {
        let obj = |index: u32, counter_type: u32| {
            object(index, &[(index + 2, counter_type)])
                .clock(5_000, 10_000_000)
                .values(vec![RawValue::Int(1_000)])
        };
        let snap = snapshot(&[obj(10, PERF_ELAPSED_TIME), obj(20, PERF_COUNTER_RAWCOUNT)]);
        let n = names(&[
            (10, "PrfData Svc"),
            (12, "Uptime"),
            (20, "Other"),
            (22, "N"),
        ]);
        let e = Exposition::new(&snap, &["A".into(), "A".into()], &n);
        assert_eq!(
            e.family_names(),
            ["prfdata_other_n", "prfdata_svc_uptime_start_time_seconds"]
        );
        let text = e.encode();
        let got = series(&text);
        assert_eq!(got[0], ("prfdata_other_n{app=\"A\"}", "1000"));
        assert_eq!(got[1].0, "prfdata_svc_uptime_start_time_seconds{app=\"A\"}");
        // Started 4000 ticks of 10^7 a second before the collection.
        let now = snap.perf_time_100nsec as f64 / 1e7 - FILETIME_UNIX_EPOCH_SECONDS;
        let started: f64 = got[1].1.parse().unwrap();
        assert!((started - (now - 0.0004)).abs() < 1e-3, "{started} {now}");
        assert!(text.contains("# TYPE prfdata_svc_uptime_start_time_seconds gauge\n# UNIT prfdata_svc_uptime_start_time_seconds seconds\n"), "{text}");
    }

    #[test]
    fn every_timer_is_exported_in_seconds_by_its_own_clock() {
        // The block's clock ticks 1000 times a second, the object's 500: each type divides by
        // its own (100 ns types by 10^7).
        let types = [
            (12, PERF_COUNTER_TIMER, 3_000),
            (14, PERF_COUNTER_TIMER_INV, 3_000),
            (16, PERF_COUNTER_MULTI_TIMER, 3_000),
            (18, PERF_100NSEC_TIMER, 20_000_000),
            (20, PERF_100NSEC_TIMER_INV, 20_000_000),
            (22, PERF_100NSEC_MULTI_TIMER, 20_000_000),
            (24, PERF_OBJ_TIME_TIMER, 2_500),
            (26, PERF_AVERAGE_TIMER, 3_000),
        ];
        let counters: Vec<(u32, u32)> = types.iter().map(|&(i, t, _)| (i, t)).collect();
        let obj = object(10, &counters)
            .clock(0, 500)
            .values(types.iter().map(|&(_, _, v)| RawValue::Int(v)).collect());
        let mut snap = snapshot(&[obj]);
        snap.perf_freq = 1_000;
        let n = names(&[
            (10, "T"),
            (12, "A"),
            (14, "B"),
            (16, "C"),
            (18, "D"),
            (20, "E"),
            (22, "F"),
            (24, "G"),
            (26, "H"),
        ]);
        let text = Exposition::new(&snap, &[], &n).encode();
        let want: Vec<(String, &str)> = [
            ("a", "3.0"),
            ("b", "3.0"),
            ("c", "3.0"),
            ("d", "2.0"),
            ("e", "2.0"),
            ("f", "2.0"),
            ("g", "5.0"),
            ("h", "3.0"),
        ]
        .iter()
        .map(|&(c, v)| (format!("prfdata_t_{c}_seconds_total"), v))
        .collect();
        let got: Vec<(String, &str)> = series(&text)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(got, want, "{text}");
    }

    #[test]
    fn help_texts_with_newlines_and_backslashes_are_escaped() {
        let obj = object(10, &[(12, PERF_COUNTER_RAWCOUNT)]).values(vec![RawValue::Int(1)]);
        let snap = snapshot(&[obj]);
        let mut n = names(&[(10, "O"), (12, "C")]);
        n.help.insert(13, "two\nlines \\ and \"quotes\"".into());
        let text = Exposition::new(&snap, &[], &n).encode();
        assert!(text.contains("# HELP prfdata_o_c two\\nlines \\\\ and \\\"quotes\\\" [O\\\\C, PERF_COUNTER_RAWCOUNT]\n"), "{text}");
        assert_eq!(text.lines().count(), 4);
    }
}

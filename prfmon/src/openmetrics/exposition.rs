//! One collection as metric families, and those families in the OpenMetrics text format
//! (encoded by the `prometheus-client` crate).
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
//! let snapshot = prfmon::decode::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
//! let mut names = Names::default();
//! names.counter.extend([(1848, "Jobs".to_owned()), (1850, "Queued".to_owned()), (1852, "Avg size".to_owned())]);
//! names.help.insert(1851, "Jobs waiting.".to_owned());
//!
//! let exposition = Exposition::new(&snapshot, &["JobSvc".to_owned()], &names);
//! let text = exposition.encode();
//! assert!(text.contains("# HELP prfdata_jobs_queued Jobs waiting."));
//! assert!(text.contains("# TYPE prfdata_jobs_queued gauge\n"));
//! assert!(text.contains("prfdata_jobs_queued{instance=\"alpha\",app=\"JobSvc\"} 7\n"));
//! assert!(text.contains("prfdata_jobs_avg_size_total{instance=\"alpha\",app=\"JobSvc\"} 100\n"));
//! assert!(text.contains("prfdata_jobs_avg_size_base_total{instance=\"beta\",app=\"JobSvc\"} 1\n"));
//! assert!(text.ends_with("# EOF\n"));
//! # Ok::<(), prfmon::decode::DecodeError>(())
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use prometheus_client::collector::Collector as PromCollector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelValue, EncodeMetric, LabelValueEncoder, MetricEncoder,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::kind::{metric_kind, MetricKind};
use super::naming::{object_stem, word_or_index, NameTable};
use crate::decode::{CounterDef, DataSnapshot, InstanceData, ObjectData, RawValue};
use crate::names::{instance_names, Names};
use prfdata::winperf::{PERF_OBJECT_TIMER, PERF_TIMER_MASK};

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

/// The labels of one series. Empty labels are left out of the output (Prometheus treats an
/// empty label as an absent one).
///
/// # Examples
///
/// ```
/// let labels = prfmon::openmetrics::exposition::SeriesLabels { app: "App".into(), ..Default::default() };
/// assert!(labels.instance.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesLabels {
    /// The instance, as PDH names it without its parent (`name`, or `name#1` for the second
    /// instance of that name under the same parent); `None` for an object without instances.
    pub instance: Option<String>,
    /// The parent instance's name, when the instance names a parent object that is in the
    /// same collection.
    pub parent: Option<String>,
    /// The service that produced the object.
    pub app: String,
}

/// One series' raw value.
///
/// # Examples
///
/// ```
/// let s = prfmon::openmetrics::exposition::Sample { labels: Default::default(), value: 7 };
/// assert_eq!(s.value, 7);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The labels.
    pub labels: SeriesLabels,
    /// The raw value as decoded. A counter's value is written as unsigned 64-bit (a LARGE
    /// counter is a ULONGLONG); a gauge's as signed.
    pub value: i64,
}

/// One metric family: a name, its explain text, its type and its series.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::{exposition::MetricFamily, kind::MetricKind};
/// let f = MetricFamily { name: "prfdata_a_b".into(), help: String::new(), kind: MetricKind::Counter, samples: vec![] };
/// assert_eq!(f.sample_name(), "prfdata_a_b_total");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricFamily {
    /// The family name (a counter's samples add `_total`).
    pub name: String,
    /// `HELP`: the explain text, then the counter path and type in brackets.
    pub help: String,
    /// `TYPE`.
    pub kind: MetricKind,
    /// The series: objects in naming order (see [`super::naming`]), then each object's
    /// instances in collection order.
    pub samples: Vec<Sample>,
}

impl MetricFamily {
    /// The name the family's samples carry.
    ///
    /// # Examples
    ///
    /// See [`MetricFamily`].
    pub fn sample_name(&self) -> String {
        match self.kind {
            MetricKind::Counter => format!("{}_total", self.name),
            MetricKind::Gauge => self.name.clone(),
        }
    }
}

/// A collection as metric families, sorted by name.
///
/// # Examples
///
/// See the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exposition {
    /// The families, sorted by name; families without series are left out.
    pub families: Vec<MetricFamily>,
}

/// One counter of one object, waiting for its family.
struct Pending<'a> {
    object: &'a ObjectData,
    /// Position of the object in the snapshot.
    position: usize,
    app: &'a str,
}

impl Exposition {
    /// The families of `snapshot`, whose object `i` came from service `services[i]`
    /// (a missing entry gives an empty `app`), named with `names`.
    ///
    /// Duplicate series (same family, same labels: an object present twice) keep the first
    /// in naming order (see [`super::naming`]). Text, zero-size and non-integer values are left
    /// out.
    ///
    /// # Examples
    ///
    /// See the [module docs](self).
    pub fn new(snapshot: &DataSnapshot, services: &[String], names: &Names) -> Self {
        let mut pending: Vec<Pending<'_>> = snapshot
            .objects
            .iter()
            .enumerate()
            .map(|(position, object)| Pending {
                object,
                position,
                app: services.get(position).map_or("", String::as_str),
            })
            .collect();
        // Naming order (naming rule 5): object index, service, position.
        pending.sort_by(|a, b| {
            (a.object.name_index, a.app, a.position).cmp(&(b.object.name_index, b.app, b.position))
        });

        let mut table = NameTable::default();
        let mut families: BTreeMap<String, MetricFamily> = BTreeMap::new();
        let mut seen: HashSet<(String, SeriesLabels)> = HashSet::new();
        // All names are decided first, then the series added, both in naming order.
        let mut plans: Vec<ObjectPlan> = Vec::with_capacity(snapshot.objects.len());
        plans.resize_with(snapshot.objects.len(), ObjectPlan::default);
        for p in &pending {
            plans[p.position] = plan_object(p.object, names, &mut table, &mut families);
        }
        for p in &pending {
            let object_plan = &plans[p.position];
            if let Some((time, freq)) = &object_plan.clock {
                let labels = SeriesLabels {
                    app: p.app.to_owned(),
                    ..Default::default()
                };
                for (name, value) in [(time, p.object.perf_time), (freq, p.object.perf_freq)] {
                    if seen.insert((name.clone(), labels.clone())) {
                        if let Some(family) = families.get_mut(name) {
                            family.samples.push(Sample {
                                labels: labels.clone(),
                                value,
                            });
                        }
                    }
                }
            }
            let labels = object_labels(snapshot, p.object, p.app);
            let plan = &object_plan.counters;
            let rows: Vec<&[RawValue]> = if p.object.has_instances() {
                p.object
                    .instances
                    .iter()
                    .map(|i| i.values.as_slice())
                    .collect()
            } else {
                vec![p.object.values.as_slice()]
            };
            for (row, labels) in rows.iter().zip(&labels) {
                for (c, family_name) in plan.iter().enumerate() {
                    let (Some(name), Some(value)) =
                        (family_name, row.get(c).and_then(RawValue::as_i64))
                    else {
                        continue;
                    };
                    if !seen.insert((name.clone(), labels.clone())) {
                        continue;
                    }
                    if let Some(family) = families.get_mut(name) {
                        family.samples.push(Sample {
                            labels: labels.clone(),
                            value,
                        });
                    }
                }
            }
        }
        Self {
            families: families
                .into_values()
                .filter(|f| !f.samples.is_empty())
                .collect(),
        }
    }

    /// The families in the OpenMetrics text format, ending with `# EOF`, encoded by
    /// `prometheus-client` (served as [`CONTENT_TYPE`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let text = prfmon::openmetrics::exposition::Exposition::default().encode();
    /// assert_eq!(text, "# EOF\n");
    /// ```
    pub fn encode(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Encoded(self.families.clone())));
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            // Writing to a String cannot fail; keep the output well formed if it ever does.
            out.clear();
            let _ = writeln!(out, "# encoding failed: {e}\n# EOF");
        }
        out
    }
}

impl Exposition {
    /// The families in Prometheus' classic text format (version 0.0.4), for clients that do
    /// not ask for OpenMetrics (`curl`, `promtool check metrics`): the OpenMetrics text of
    /// [`encode`](Self::encode) with the three differences of the older format applied, and
    /// nothing else touched:
    ///
    /// - a counter's `# HELP` and `# TYPE` lines name the family with its `_total`, as its
    ///   samples do (OpenMetrics names the family without it);
    /// - `\"` in HELP becomes `"` (the older format escapes only `\\` and `\n` there);
    /// - no `# EOF` line.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::openmetrics::exposition::{Exposition, MetricFamily, Sample};
    /// use prfmon::openmetrics::kind::MetricKind;
    /// let e = Exposition { families: vec![MetricFamily {
    ///     name: "prfdata_a_b".into(), help: "Say \"hi\".".into(), kind: MetricKind::Counter,
    ///     samples: vec![Sample { labels: Default::default(), value: 3 }],
    /// }] };
    /// assert_eq!(
    ///     e.encode_text(),
    ///     "# HELP prfdata_a_b_total Say \"hi\".\n# TYPE prfdata_a_b_total counter\nprfdata_a_b_total 3\n"
    /// );
    /// ```
    pub fn encode_text(&self) -> String {
        let counters: HashSet<&str> = self
            .families
            .iter()
            .filter(|f| f.kind == MetricKind::Counter)
            .map(|f| f.name.as_str())
            .collect();
        let mut out = String::new();
        for line in self.encode().lines() {
            if line == "# EOF" {
                continue;
            }
            let descriptor = line
                .strip_prefix("# HELP ")
                .map(|rest| ("HELP", rest))
                .or_else(|| line.strip_prefix("# TYPE ").map(|rest| ("TYPE", rest)));
            match descriptor {
                Some((what, rest)) => {
                    let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                    let total = if counters.contains(name) {
                        "_total"
                    } else {
                        ""
                    };
                    let tail = if what == "HELP" {
                        unescape_quotes(tail)
                    } else {
                        tail.to_owned()
                    };
                    let _ = writeln!(out, "# {what} {name}{total} {tail}");
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        out
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

/// The families one object's values go to.
#[derive(Default)]
struct ObjectPlan {
    /// Per counter, its family (`None`: not exported).
    counters: Vec<Option<String>>,
    /// The families of the object's `PerfTime` and `PerfFreq`, when a counter is read against
    /// them.
    clock: Option<(String, String)>,
}

/// Decides the family of each counter of `object` and of its clock, and creates the
/// families that do not exist yet.
fn plan_object(
    object: &ObjectData,
    names: &Names,
    table: &mut NameTable,
    families: &mut BTreeMap<String, MetricFamily>,
) -> ObjectPlan {
    let object_name = names.counter.get(&object.name_index).map(String::as_str);
    let object_stem = object_stem(&word_or_index(object_name, object.name_index));
    let mut add = |stem: &str, kind: MetricKind, key: u32, help: String| -> String {
        let name = table.claim(stem, kind, (object.name_index, key));
        families
            .entry(name.clone())
            .or_insert_with(|| MetricFamily {
                name: name.clone(),
                help,
                kind,
                samples: Vec::new(),
            });
        name
    };
    let mut plan: Vec<Option<String>> = Vec::with_capacity(object.counters.len());
    for (c, def) in object.counters.iter().enumerate() {
        let served = def.base_of.and_then(|j| object.counters.get(j));
        let Some(kind) = metric_kind(def.counter_type, served.map(|s| s.counter_type)) else {
            plan.push(None);
            continue;
        };
        let (stem, key_index, help) = match (def.is_base, served) {
            (true, Some(counter)) => {
                let counter_family = def
                    .base_of
                    .and_then(|j| plan.get(j).cloned().flatten())
                    .unwrap_or_else(|| counter_stem(&object_stem, counter, names));
                (
                    format!("{counter_family}_base"),
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
                counter_stem(&object_stem, def, names),
                def.name_index,
                counter_help(object_name, def, names),
            ),
        };
        plan.push(Some(add(&stem, kind, key_index, help)));
    }
    // ELAPSED_TIME and the OBJ_TIME / PRECISION_OBJECT types are read against the object's
    // own clock (winperf.h: PERF_OBJECT_TIMER), which PromQL then needs too: for example
    // `(x_perf_time_total - x_uptime) / x_perf_freq` is the uptime in seconds.
    let clock = object
        .counters
        .iter()
        .any(|d| d.counter_type & PERF_TIMER_MASK == PERF_OBJECT_TIMER)
        .then(|| {
            let path = object_name.unwrap_or("?");
            (
                add(
                    &format!("{object_stem}_perf_time"),
                    MetricKind::Counter,
                    0,
                    format!("The object's clock (PERF_OBJECT_TYPE PerfTime), in ticks of its PerfFreq. [{path}]"),
                ),
                add(
                    &format!("{object_stem}_perf_freq"),
                    MetricKind::Gauge,
                    0,
                    format!("Ticks per second of the object's clock (PERF_OBJECT_TYPE PerfFreq). [{path}]"),
                ),
            )
        });
    ObjectPlan {
        counters: plan,
        clock,
    }
}

fn counter_stem(object_stem: &str, def: &CounterDef, names: &Names) -> String {
    let counter_name = names.counter.get(&def.name_index).map(String::as_str);
    format!(
        "{object_stem}_{}",
        word_or_index(counter_name, def.name_index)
    )
}

/// `HELP`: the explain text, then `[\Object\Counter, TYPE]`.
fn counter_help(object_name: Option<&str>, def: &CounterDef, names: &Names) -> String {
    let explain = names.help(def.help_index);
    let path = format!(
        "{}\\{}",
        object_name.unwrap_or("?"),
        names.name(def.name_index)
    );
    let explain = explain.trim();
    if explain.is_empty() {
        format!("[{path}, {}]", def.type_name())
    } else {
        format!("{explain} [{path}, {}]", def.type_name())
    }
}

/// The labels of each row of `object`: one per instance, or one for an object without
/// instances.
fn object_labels(snapshot: &DataSnapshot, object: &ObjectData, app: &str) -> Vec<SeriesLabels> {
    if !object.has_instances() {
        return vec![SeriesLabels {
            app: app.to_owned(),
            ..Default::default()
        }];
    }
    instance_names(snapshot, object)
        .into_iter()
        .zip(&object.instances)
        .map(|(full, inst)| {
            let parent = parent_name(snapshot, inst);
            // `instance_names` gives `parent/child#n` when the parent is found.
            let instance = match &parent {
                Some(p) => full
                    .strip_prefix(p.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .map_or(full.clone(), str::to_owned),
                None => full,
            };
            SeriesLabels {
                instance: Some(instance),
                parent,
                app: app.to_owned(),
            }
        })
        .collect()
}

/// The name of `inst`'s parent instance, as PDH finds it: the instance at
/// `ParentObjectInstance` of the object `ParentObjectTitleIndex` names, in this collection.
fn parent_name(snapshot: &DataSnapshot, inst: &InstanceData) -> Option<String> {
    if inst.parent_object_title_index == 0 {
        return None;
    }
    let parent = snapshot
        .objects
        .iter()
        .find(|o| o.name_index == inst.parent_object_title_index)?
        .instances
        .get(inst.parent_object_instance as usize)?;
    Some(if parent.name.is_empty() && parent.unique_id >= 0 {
        parent.unique_id.to_string()
    } else {
        parent.name.clone()
    })
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

/// The families as a `prometheus-client` collector: encoded on each call.
#[derive(Debug)]
struct Encoded(Vec<MetricFamily>);

impl PromCollector for Encoded {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in &self.0 {
            let help = escape(&family.help, true);
            let metric_type = match family.kind {
                MetricKind::Counter => ConstCounter::new(0u64).metric_type(),
                MetricKind::Gauge => ConstGauge::new(0i64).metric_type(),
            };
            let mut metric = encoder.encode_descriptor(&family.name, &help, None, metric_type)?;
            if let [only] = family.samples.as_slice() {
                if only.labels == SeriesLabels::default() {
                    // No labels at all: `name value`, not `name{} value`.
                    write_value(family.kind, only.value, metric)?;
                    continue;
                }
            }
            for sample in &family.samples {
                let l = &sample.labels;
                let mut labels: Vec<(&str, Escaped<'_>)> = Vec::with_capacity(3);
                if let Some(i) = &l.instance {
                    labels.push(("instance", Escaped(i)));
                }
                if let Some(p) = &l.parent {
                    labels.push(("parent", Escaped(p)));
                }
                if !l.app.is_empty() {
                    labels.push(("app", Escaped(&l.app)));
                }
                write_value(family.kind, sample.value, metric.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// Writes one value through `encoder`.
fn write_value(kind: MetricKind, value: i64, encoder: MetricEncoder<'_>) -> std::fmt::Result {
    match kind {
        // A LARGE counter is a ULONGLONG: the bits as unsigned.
        MetricKind::Counter => ConstCounter::new(value as u64).encode(encoder),
        MetricKind::Gauge => ConstGauge::new(value).encode(encoder),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata::winperf::*;

    fn def(name_index: u32, counter_type: u32) -> CounterDef {
        CounterDef {
            name_index,
            help_index: name_index + 1,
            counter_type,
            size: 4,
            is_base: counter_type & PERF_SUBTYPE_MASK == PERF_COUNTER_BASE
                && counter_type & PERF_TYPE_MASK == PERF_TYPE_COUNTER,
            ..Default::default()
        }
    }

    fn names(pairs: &[(u32, &str)]) -> Names {
        let mut n = Names::default();
        for &(i, s) in pairs {
            n.counter.insert(i, s.to_owned());
            n.help.insert(i + 1, format!("Help of {s}."));
        }
        n
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
        let pools = ObjectData {
            name_index: 10,
            num_instances: 2,
            counters: vec![def(12, PERF_COUNTER_RAWCOUNT)],
            instances: vec![inst("pool A", 0, 0, 1), inst("pool \"B\"", 0, 0, 2)],
            ..Default::default()
        };
        let workers = ObjectData {
            name_index: 14,
            num_instances: 3,
            counters: vec![def(16, PERF_COUNTER_COUNTER)],
            instances: vec![
                inst("w", 10, 1, 5),
                inst("w", 10, 1, 6),
                inst("w", 10, 0, 7),
            ],
            ..Default::default()
        };
        let snap = DataSnapshot {
            objects: vec![pools, workers],
            ..Default::default()
        };
        let n = names(&[(10, "Pool"), (12, "Size"), (14, "Worker"), (16, "Done/sec")]);
        let text = Exposition::new(&snap, &["A".into(), "A".into()], &n).encode();
        assert!(
            text.contains("prfdata_pool_size{instance=\"pool \\\"B\\\"\",app=\"A\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("prfdata_worker_done_per_second_total{instance=\"w\",parent=\"pool \\\"B\\\"\",app=\"A\"} 5\n"));
        assert!(text.contains("prfdata_worker_done_per_second_total{instance=\"w#1\",parent=\"pool \\\"B\\\"\",app=\"A\"} 6\n"));
        assert!(text.contains(
            "prfdata_worker_done_per_second_total{instance=\"w\",parent=\"pool A\",app=\"A\"} 7\n"
        ));
        assert!(text.contains("# HELP prfdata_worker_done_per_second Help of Done/sec. [Worker\\\\Done/sec, PERF_COUNTER_COUNTER]\n"), "{text}");
    }

    #[test]
    fn bases_are_families_of_their_own_named_after_their_counter() {
        let mut avg = def(12, PERF_AVERAGE_TIMER);
        avg.base = Some(1);
        let mut base = def(0, PERF_AVERAGE_BASE);
        base.base_of = Some(0);
        let mut frac = def(14, PERF_RAW_FRACTION);
        frac.base = Some(3);
        let mut raw_base = def(0, PERF_RAW_BASE);
        raw_base.base_of = Some(2);
        let obj = ObjectData {
            name_index: 10,
            num_instances: PERF_NO_INSTANCES,
            counters: vec![avg, base, frac, raw_base, def(16, PERF_COUNTER_TEXT)],
            values: [300, 3, 1, 4]
                .map(RawValue::Int)
                .into_iter()
                .chain([RawValue::Text("x".into())])
                .collect(),
            ..Default::default()
        };
        let snap = DataSnapshot {
            objects: vec![obj],
            ..Default::default()
        };
        let n = names(&[
            (10, "Svc"),
            (12, "Avg. latency"),
            (14, "Hit ratio"),
            (16, "Label"),
        ]);
        let e = Exposition::new(&snap, &["S".into()], &n);
        let got: Vec<(&str, MetricKind, i64)> = e
            .families
            .iter()
            .map(|f| (f.name.as_str(), f.kind, f.samples[0].value))
            .collect();
        assert_eq!(
            got,
            [
                ("prfdata_svc_avg_latency", MetricKind::Counter, 300),
                ("prfdata_svc_avg_latency_base", MetricKind::Counter, 3),
                ("prfdata_svc_hit_ratio", MetricKind::Gauge, 1),
                ("prfdata_svc_hit_ratio_base", MetricKind::Gauge, 4),
            ]
        );
        assert_eq!(
            e.families[0].samples[0].labels,
            SeriesLabels {
                app: "S".into(),
                ..Default::default()
            }
        );
    }

    #[test]
    fn counters_are_written_unsigned_and_gauges_signed() {
        let obj = ObjectData {
            name_index: 10,
            num_instances: PERF_NO_INSTANCES,
            counters: vec![
                def(12, PERF_COUNTER_BULK_COUNT),
                def(14, PERF_COUNTER_LARGE_RAWCOUNT),
            ],
            values: vec![RawValue::Int(-1), RawValue::Int(-5)],
            ..Default::default()
        };
        let snap = DataSnapshot {
            objects: vec![obj],
            ..Default::default()
        };
        let text = Exposition::new(&snap, &[], &names(&[(10, "O"), (12, "B"), (14, "G")])).encode();
        assert!(
            text.contains("prfdata_o_b_total 18446744073709551615\n"),
            "{text}"
        );
        assert!(text.contains("prfdata_o_g -5\n"), "{text}");
    }

    #[test]
    fn the_same_object_from_two_services_shares_families_and_exact_duplicates_are_dropped() {
        let obj = |v: i64| ObjectData {
            name_index: 10,
            num_instances: PERF_NO_INSTANCES,
            counters: vec![def(12, PERF_COUNTER_RAWCOUNT)],
            values: vec![RawValue::Int(v)],
            ..Default::default()
        };
        let snap = DataSnapshot {
            objects: vec![obj(1), obj(2), obj(3)],
            ..Default::default()
        };
        let e = Exposition::new(
            &snap,
            &["B".into(), "A".into(), "B".into()],
            &names(&[(10, "O"), (12, "C")]),
        );
        assert_eq!(e.families.len(), 1);
        let values: Vec<(&str, i64)> = e.families[0]
            .samples
            .iter()
            .map(|s| (s.labels.app.as_str(), s.value))
            .collect();
        assert_eq!(values, [("A", 2), ("B", 1)]);
    }

    #[test]
    fn the_classic_text_format_names_counter_descriptors_with_total_and_unescapes_quotes() {
        let e = Exposition {
            families: vec![
                MetricFamily {
                    name: "prfdata_c".into(),
                    help: "a \"q\" \\ b\nc".into(),
                    kind: MetricKind::Counter,
                    samples: vec![Sample {
                        labels: SeriesLabels {
                            instance: Some("x\"y".into()),
                            parent: None,
                            app: "A".into(),
                        },
                        value: 1,
                    }],
                },
                MetricFamily {
                    name: "prfdata_g".into(),
                    help: "g".into(),
                    kind: MetricKind::Gauge,
                    samples: vec![Sample {
                        labels: SeriesLabels {
                            app: "A".into(),
                            ..Default::default()
                        },
                        value: 2,
                    }],
                },
            ],
        };
        assert_eq!(
            e.encode_text(),
            "# HELP prfdata_c_total a \"q\" \\\\ b\\nc\n\
             # TYPE prfdata_c_total counter\n\
             prfdata_c_total{instance=\"x\\\"y\",app=\"A\"} 1\n\
             # HELP prfdata_g g\n\
             # TYPE prfdata_g gauge\n\
             prfdata_g{app=\"A\"} 2\n"
        );
    }

    #[test]
    fn an_object_with_an_elapsed_time_exports_its_clock() {
        let obj = |index: u32, counter_type: u32| ObjectData {
            name_index: index,
            num_instances: PERF_NO_INSTANCES,
            perf_time: 5_000,
            perf_freq: 10_000_000,
            counters: vec![def(index + 2, counter_type)],
            values: vec![RawValue::Int(1_000)],
            ..Default::default()
        };
        let snap = DataSnapshot {
            objects: vec![obj(10, PERF_ELAPSED_TIME), obj(20, PERF_COUNTER_RAWCOUNT)],
            ..Default::default()
        };
        let n = names(&[
            (10, "PrfData Svc"),
            (12, "Uptime"),
            (20, "Other"),
            (22, "N"),
        ]);
        let e = Exposition::new(&snap, &["A".into(), "A".into()], &n);
        let got: Vec<(&str, MetricKind, i64)> = e
            .families
            .iter()
            .map(|f| (f.name.as_str(), f.kind, f.samples[0].value))
            .collect();
        assert_eq!(
            got,
            [
                ("prfdata_other_n", MetricKind::Gauge, 1_000),
                ("prfdata_svc_perf_freq", MetricKind::Gauge, 10_000_000),
                ("prfdata_svc_perf_time", MetricKind::Counter, 5_000),
                ("prfdata_svc_uptime", MetricKind::Gauge, 1_000),
            ],
            "only the object with an object-timer counter has a clock"
        );
    }

    #[test]
    fn help_texts_with_newlines_and_backslashes_are_escaped() {
        let obj = ObjectData {
            name_index: 10,
            num_instances: PERF_NO_INSTANCES,
            counters: vec![def(12, PERF_COUNTER_RAWCOUNT)],
            values: vec![RawValue::Int(1)],
            ..Default::default()
        };
        let snap = DataSnapshot {
            objects: vec![obj],
            ..Default::default()
        };
        let mut n = names(&[(10, "O"), (12, "C")]);
        n.help.insert(13, "two\nlines \\ and \"quotes\"".into());
        let text = Exposition::new(&snap, &[], &n).encode();
        assert!(text.contains("# HELP prfdata_o_c two\\nlines \\\\ and \\\"quotes\\\" [O\\\\C, PERF_COUNTER_RAWCOUNT]\n"), "{text}");
        assert_eq!(text.lines().count(), 4);
    }
}

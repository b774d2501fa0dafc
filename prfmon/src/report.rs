//! A decoded collection shown to people: a table of objects, counters, instances and raw
//! values, or the same as JSON. `prfmon query` and `prfmon decode` print these. A histogram's
//! bucket counter ([`crate::histogram`]) is never shown as its raw words: its cell is the
//! histogram's count, sum and the percentiles of all it counted since it began, or why it has
//! no data.
//!
//! # Examples
//!
//! ```
//! use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
//! use prfmon::names::Names;
//!
//! let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
//! let snap = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
//! let table = prfmon::report::table_with_services(&snap, &Names::default(), &["MyApp".into()]);
//! assert!(table.contains("alpha") && table.contains("service MyApp"));
//! let json = prfmon::report::json(&snap, &Names::default());
//! assert_eq!(json["objects"][0]["instances"][1]["values"][1], -5);
//! assert!(json["objects"][0].get("service").is_none()); // not known from a file
//! # Ok::<(), prfdata_wire::error::DecodeError>(())
//! ```
//!
//! # Cost
//!
//! Both are written as they are made: [`write_table`] line by line, [`JsonReport`] through
//! `serde_json`'s serializer, instance by instance, so printing a collection costs a few
//! words per instance (its PDH name's number, [`InstanceNames`]) on top of the snapshot,
//! whatever its size. JSON objects list their keys in alphabetical order.

use std::borrow::Cow;
use std::io::Write;

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::factor::Factors;
use crate::histogram::{find, read, HistogramDef};
use crate::names::{InstanceNames, Names};
use prfdata_untrusted::text::{escape_field, Style};
use prfdata_wire::snapshot::{CounterDef, DataSnapshot, ObjectData, Values};
use prfdata_wire::winperf::PERF_PRFDATA_HISTOGRAM;

/// The name of a `PERF_DETAIL_*` level.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::report::detail_name(200), "advanced");
/// assert_eq!(prfmon::report::detail_name(7), "7");
/// ```
pub fn detail_name(level: u32) -> String {
    match level {
        100 => "novice".into(),
        200 => "advanced".into(),
        300 => "expert".into(),
        400 => "wizard".into(),
        other => other.to_string(),
    }
}

/// A counter's display name: its name, or for a base without one, `base of <counter>`.
///
/// # Examples
///
/// ```
/// use prfdata_wire::snapshot::CounterDef;
/// let names = prfmon::names::Names::default();
/// let defs = [
///     CounterDef { name_index: 1850, base: Some(1), ..Default::default() },
///     CounterDef { is_base: true, base_of: Some(0), ..Default::default() },
/// ];
/// assert_eq!(prfmon::report::counter_name(&names, &defs, 1), "base of #1850");
/// ```
pub fn counter_name(names: &Names, counters: &[CounterDef], i: usize) -> String {
    let Some(c) = counters.get(i) else {
        return String::new();
    };
    match c.base_of {
        Some(of) if c.name_index == 0 && of < i => {
            format!("base of {}", counter_name(names, counters, of))
        }
        _ if c.counter_type == PERF_PRFDATA_HISTOGRAM && c.name_index == 0 && i >= 2 => {
            format!("buckets of {}", counter_name(names, counters, i - 2))
        }
        _ => names.name(c.name_index),
    }
}

/// A collection as JSON (see [`JsonReport::new`]), serialized as it is walked: an instance at
/// a time, nothing built per instance.
///
/// The header fields, then each object with the `service` that returned it (when known, e.g.
/// not for a collection read from a file), its names, counters (with name, explain text, type,
/// whether the value is differentiated over time and its scale factor) and either its
/// `values` (no instances) or its `instances` (PDH names, raw fields, values). Keys are in
/// alphabetical order at every level.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfmon::report::JsonReport;
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let names = prfmon::names::Names::default();
/// let services = ["App".to_owned()];
/// let mut text = Vec::new();
/// serde_json::to_writer(&mut text, &JsonReport::new(&snap, &names).services(&services))?;
/// let json: serde_json::Value = serde_json::from_slice(&text)?;
/// assert_eq!(json["objects"][0]["service"], "App");
/// assert_eq!(json["objects"][0]["instances"][0]["name"], "alpha");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct JsonReport<'a> {
    snap: &'a DataSnapshot,
    names: &'a Names,
    services: &'a [String],
    factors: Option<&'a Factors>,
}

impl<'a> JsonReport<'a> {
    /// The report of `snap`, named with `names`, services unknown, no scale factors.
    pub fn new(snap: &'a DataSnapshot, names: &'a Names) -> Self {
        JsonReport {
            snap,
            names,
            services: &[],
            factors: None,
        }
    }

    /// The services that returned the objects: `services[i]` for object `i`, as
    /// [`Collection::services`] gives them.
    ///
    /// [`Collection::services`]: crate::collector::Collection::services
    pub fn services(self, services: &'a [String]) -> Self {
        JsonReport { services, ..self }
    }

    /// Each counter with its scale factor (the Windows 95 stat servers' `PSTF_FACTOR_MULTIPLY` /
    /// `DIVIDE`, from [`crate::factor`]) as `"factor": "*4096"` when it has one. The values stay
    /// raw, as everywhere in this JSON: a consumer formats them, then applies the factor to the
    /// displayed value.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
    /// let counter = snap.objects[0].counters[0].name_index;
    /// let mut hive = prfdata_registry::perflib::new_hive();
    /// prfdata_registry::stats::write_factors(&mut hive, "App", &[(counter, "/1024".into())])?;
    /// let factors = prfmon::factor::Factors::from_hive(&hive)?;
    /// let names = prfmon::names::Names::default();
    /// let report = prfmon::report::JsonReport::new(&snap, &names).factors(&factors);
    /// let json = serde_json::to_value(report)?;
    /// assert_eq!(json["objects"][0]["counters"][0]["factor"], "/1024");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn factors(self, factors: &'a Factors) -> Self {
        JsonReport {
            factors: Some(factors),
            ..self
        }
    }
}

impl JsonReport<'_> {
    /// Writes the report to `out` as pretty JSON (two-space indents, as `serde_json` prints),
    /// as it is serialized.
    ///
    /// # Errors
    ///
    /// The first error writing to `out`.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = prfdata_wire::snapshot::DataSnapshot::default();
    /// let names = prfmon::names::Names::default();
    /// let mut out = Vec::new();
    /// prfmon::report::JsonReport::new(&snap, &names).write_to(&mut out)?;
    /// assert!(String::from_utf8(out)?.starts_with("{\n  \"default_object\": 0,\n"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(out, self).map_err(std::io::Error::other)
    }
}

impl Serialize for JsonReport<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let snap = self.snap;
        let mut s = serializer.serialize_struct("Report", 8)?;
        s.serialize_field("default_object", &snap.default_object)?;
        s.serialize_field("objects", &JsonObjects(self))?;
        s.serialize_field("perf_freq", &snap.perf_freq)?;
        s.serialize_field("perf_time", &snap.perf_time)?;
        s.serialize_field("perf_time_100nsec", &snap.perf_time_100nsec)?;
        s.serialize_field("system_name", &snap.system_name)?;
        s.serialize_field("system_time", &format!("{} UTC", snap.system_time))?;
        s.serialize_field("total_byte_length", &snap.total_byte_length)?;
        s.end()
    }
}

/// The objects of a [`JsonReport`].
struct JsonObjects<'r, 'a>(&'r JsonReport<'a>);

impl Serialize for JsonObjects<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let report = self.0;
        let mut seq = serializer.serialize_seq(Some(report.snap.objects.len()))?;
        for (i, obj) in report.snap.objects.iter().enumerate() {
            let names = report.names;
            let instanced = obj.has_instances();
            let histograms: Vec<HistogramDef> = find(obj).collect();
            let histograms = histograms.as_slice();
            seq.serialize_element(&JsonObject {
                counters: (0..obj.counters.len())
                    .map(|i| json_counter(obj, i, names, report.factors))
                    .collect(),
                default_counter: obj.default_counter,
                detail: detail_name(obj.detail_level),
                help: names.help(obj.help_index),
                index: obj.name_index,
                instances: instanced.then_some(JsonInstances {
                    snap: report.snap,
                    object: obj,
                    histograms,
                }),
                name: names.name(obj.name_index),
                perf_freq: obj.perf_freq,
                perf_time: obj.perf_time,
                service: report.services.get(i).map(String::as_str),
                values: (!instanced).then(|| JsonValues(obj.values(), histograms)),
            })?;
        }
        seq.end()
    }
}

/// One object in the JSON report (its fields in the report's order).
#[derive(Serialize)]
struct JsonObject<'a> {
    counters: Vec<JsonCounter>,
    default_counter: i32,
    detail: String,
    help: String,
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    instances: Option<JsonInstances<'a>>,
    name: String,
    perf_freq: i64,
    perf_time: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    values: Option<JsonValues<'a>>,
}

/// One counter definition of a [`JsonReport`].
#[derive(Serialize)]
struct JsonCounter {
    #[serde(skip_serializing_if = "Option::is_none")]
    base: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_of: Option<usize>,
    detail: String,
    differentiate: bool,
    /// The Windows 95 stat servers' scale factor (`*N` or `/N`), for a consumer formatting the
    /// value; the values here stay raw.
    #[serde(skip_serializing_if = "Option::is_none")]
    factor: Option<String>,
    help: String,
    index: u32,
    name: String,
    offset: u32,
    scale: i32,
    size: u32,
    #[serde(rename = "type")]
    counter_type: u32,
    type_name: String,
}

fn json_counter(
    obj: &ObjectData,
    i: usize,
    names: &Names,
    factors: Option<&Factors>,
) -> JsonCounter {
    let c = &obj.counters[i];
    JsonCounter {
        base: c.base,
        base_of: c.base_of,
        detail: detail_name(c.detail_level),
        differentiate: prfdata_wire::winperf::is_differentiated(c.counter_type),
        factor: factors
            .and_then(|f| f.of(c.name_index))
            .map(|f| f.to_string()),
        help: names.help(c.help_index),
        index: c.name_index,
        name: counter_name(names, &obj.counters, i),
        offset: c.offset,
        scale: c.default_scale,
        size: c.size,
        counter_type: c.counter_type,
        type_name: c.type_name(),
    }
}

/// The instances of one object of a [`JsonReport`], each serialized as it is read.
struct JsonInstances<'a> {
    snap: &'a DataSnapshot,
    object: &'a ObjectData,
    histograms: &'a [HistogramDef],
}

impl Serialize for JsonInstances<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let names = InstanceNames::new(self.snap, self.object);
        let mut seq = serializer.serialize_seq(Some(self.object.instance_count()))?;
        for (i, inst) in self.object.instances().enumerate() {
            let mut name = String::new();
            names.push_name(i, &mut name);
            seq.serialize_element(&JsonInstance {
                name,
                raw_name: inst.name(),
                unique_id: inst.def().unique_id.get(),
                parent_object_title_index: inst.def().parent_object_title_index.get(),
                parent_object_instance: inst.parent_object_instance(),
                values: JsonValues(Some(inst.values()), self.histograms),
            })?;
        }
        seq.end()
    }
}

/// One instance in the JSON report (its fields in the report's order).
#[derive(Serialize)]
struct JsonInstance<'a> {
    name: String,
    parent_object_instance: u32,
    parent_object_title_index: u32,
    raw_name: String,
    unique_id: i32,
    values: JsonValues<'a>,
}

/// The values of one counter block (none: an empty list), read as they are serialized; a
/// histogram's bucket counter (one of the definitions given) as a [`JsonHistogram`], never as
/// its raw words.
struct JsonValues<'a>(Option<Values<'a>>, &'a [HistogramDef]);

impl Serialize for JsonValues<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.map_or(0, |v| v.len())))?;
        if let Some(values) = self.0 {
            for (i, value) in values.iter().enumerate() {
                match self.1.iter().find(|h| h.buckets == i) {
                    Some(def) => seq.serialize_element(&JsonHistogram::of(def, &values))?,
                    None => seq.serialize_element(&value)?,
                }
            }
        }
        seq.end()
    }
}

/// A histogram's value in the JSON report: its unit, count, sum, the percentiles of every value
/// it counted since it began, and its non-empty buckets as `[le, count]` (`le` the bucket's
/// highest value, `null` for the last, unbounded one); or why it has no data.
#[derive(Serialize)]
#[serde(untagged)]
enum JsonHistogram {
    /// The counts, read.
    Read {
        unit: &'static str,
        count: u64,
        sum: u64,
        p50: Option<f64>,
        p90: Option<f64>,
        p99: Option<f64>,
        buckets: Vec<(Option<u64>, u64)>,
    },
    /// Why not.
    NoData { no_data: String },
}

impl JsonHistogram {
    fn of(def: &HistogramDef, values: &Values<'_>) -> JsonHistogram {
        let view = match read(def, values) {
            Ok(view) => view,
            Err(e) => {
                return JsonHistogram::NoData {
                    no_data: e.to_string(),
                }
            }
        };
        let g = &view.geometry;
        let at = |q: &str| {
            q.parse()
                .ok()
                .and_then(|q| view.percentile_since_start(q).ok())
        };
        let last = g.buckets() - 1;
        JsonHistogram::Read {
            unit: g.unit().name(),
            count: view.count(),
            sum: view.sum,
            p50: at("p50"),
            p90: at("p90"),
            p99: at("p99"),
            buckets: (view.buckets.iter().enumerate())
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| ((i < last).then(|| g.upper(i)), *c))
                .collect(),
        }
    }
}

/// The collection as JSON, without services or factors: [`JsonReport`] made into a
/// [`serde_json::Value`], for a small collection (a large one is better written with
/// `serde_json::to_writer` straight from the [`JsonReport`]).
///
/// # Examples
///
/// See the module docs.
pub fn json(snap: &DataSnapshot, names: &Names) -> serde_json::Value {
    serde_json::to_value(JsonReport::new(snap, names)).unwrap_or(serde_json::Value::Null)
}

/// The collection as a table, without services: [`table_with_services`] with none known.
///
/// # Examples
///
/// See the module docs.
pub fn table(snap: &DataSnapshot, names: &Names) -> String {
    table_with_services(snap, names, &[])
}

/// [`write_table`] into a string, for a small collection.
///
/// # Examples
///
/// See the module docs.
pub fn table_with_services(snap: &DataSnapshot, names: &Names, services: &[String]) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail, and every line is UTF-8.
    let _ = write_table(&mut out, snap, names, services);
    String::from_utf8_lossy(&out).into_owned()
}

/// `n word`, with an `s` unless `n` is 1: `1 counter`, `2 counters`, `0 objects`.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::report::plural(1, "counter"), "1 counter");
/// assert_eq!(prfmon::report::plural(3, "instance"), "3 instances");
/// ```
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Writes the collection as a table to `out`: a header line, then per object a line (with the
/// service that returned it, `services[i]` for object `i`, when known) and one row per counter
/// and instance with the raw value, in left-aligned columns two spaces apart.
///
/// Rows are written as they are made; the instance column's width is found by a pass over the
/// names first.
///
/// # Errors
///
/// The first error writing to `out`.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
/// let mut text = Vec::new();
/// prfmon::report::write_table(&mut text, &snap, &prfmon::names::Names::default(), &[])?;
/// let text = String::from_utf8(text)?;
/// assert!(text.lines().any(|row| row.contains("PERF_COUNTER_RAWCOUNT") && row.contains("alpha") && row.ends_with(" 7")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_table(
    out: &mut dyn Write,
    snap: &DataSnapshot,
    names: &Names,
    services: &[String],
) -> std::io::Result<()> {
    writeln!(
        out,
        "System {}  {} UTC  PerfTime {}  PerfFreq {}  PerfTime100nSec {}  {}, {} bytes",
        shown(&snap.system_name),
        snap.system_time,
        snap.perf_time,
        snap.perf_freq,
        snap.perf_time_100nsec,
        plural(snap.objects.len(), "object"),
        snap.total_byte_length,
    )?;
    for (position, obj) in snap.objects.iter().enumerate() {
        let count = if obj.has_instances() {
            plural(obj.instance_count(), "instance")
        } else {
            "no instances".into()
        };
        let service = services
            .get(position)
            .map_or_else(String::new, |s| format!(" from service {}", shown(s)));
        writeln!(
            out,
            "\nObject {} ({}){service}, detail {}, {}, {count}",
            shown(&names.name(obj.name_index)),
            obj.name_index,
            detail_name(obj.detail_level),
            plural(obj.counters.len(), "counter"),
        )?;
        write_rows(out, snap, obj, names)?;
    }
    Ok(())
}

/// The header cells of [`write_table`]'s rows.
const HEADINGS: [&str; 5] = ["Counter", "Index", "Type", "Instance", "Value"];

/// One object's rows of [`write_table`]: the headings, then per counter one row per instance
/// (or one for an object without instances).
fn write_rows(
    out: &mut dyn Write,
    snap: &DataSnapshot,
    obj: &ObjectData,
    names: &Names,
) -> std::io::Result<()> {
    let heads: Vec<[String; 3]> = (0..obj.counters.len())
        .map(|i| {
            let c = &obj.counters[i];
            [
                shown(&counter_name(names, &obj.counters, i)).into_owned(),
                c.name_index.to_string(),
                c.type_name(),
            ]
        })
        .collect();
    let instance_names = obj.has_instances().then(|| InstanceNames::new(snap, obj));
    let widths = column_widths(&heads, instance_names.as_ref());
    let mut cell = String::new();
    let mut line = String::new();
    let mut row = |out: &mut dyn Write, cells: [&str; 4], value: &str| {
        line.clear();
        line.push_str("  ");
        for (text, w) in cells.iter().zip(widths) {
            line.push_str(text);
            let pad = w.saturating_sub(text.chars().count());
            line.extend(std::iter::repeat_n(' ', pad + 2));
        }
        line.push_str(value);
        let kept = line.trim_end().len();
        line.truncate(kept);
        line.push('\n');
        out.write_all(line.as_bytes())
    };
    let [a, b, c, d, e] = HEADINGS;
    row(out, [a, b, c, d], e)?;
    let histograms: Vec<HistogramDef> = find(obj).collect();
    let value =
        |i: usize, values: Option<Values<'_>>| match histograms.iter().find(|h| h.buckets == i) {
            Some(def) => values.map_or_else(|| "?".to_owned(), |v| histogram_text(def, &v)),
            None if obj.counters[i].counter_type == PERF_PRFDATA_HISTOGRAM => {
                "no data: a histogram without its sum and base before it".to_owned()
            }
            None => value_text(values.and_then(|v| v.get(i))),
        };
    for (i, [name, index, kind]) in heads.iter().enumerate() {
        match &instance_names {
            Some(list) => {
                for (k, inst) in obj.instances().enumerate() {
                    cell.clear();
                    list.push_name(k, &mut cell);
                    row(
                        out,
                        [name, index, kind, &shown(&cell)],
                        &value(i, Some(inst.values())),
                    )?;
                }
            }
            None => row(out, [name, index, kind, "-"], &value(i, obj.values()))?,
        }
    }
    Ok(())
}

/// The widths in characters of [`write_rows`]' first four columns, as the cells are (the last
/// column is not padded).
fn column_widths(heads: &[[String; 3]], instance_names: Option<&InstanceNames>) -> [usize; 4] {
    let mut widths: [usize; 4] = std::array::from_fn(|c| HEADINGS[c].chars().count());
    for head in heads {
        for (w, cell) in widths.iter_mut().zip(head) {
            *w = (*w).max(cell.chars().count());
        }
    }
    if !heads.is_empty() {
        let mut cell = String::new();
        widths[3] = widths[3].max(match instance_names {
            Some(list) => (0..list.len())
                .map(|i| {
                    cell.clear();
                    list.push_name(i, &mut cell);
                    shown(&cell).chars().count()
                })
                .max()
                .unwrap_or(0),
            None => 1,
        });
    }
    widths
}

/// A histogram's cell: its count, sum and the percentiles of every value it counted since it
/// began, in its unit (`count 100, sum 950 us; since start p50 8.5, p90 10.5, p99 10.5 us`), or
/// why it has no data.
fn histogram_text(def: &HistogramDef, values: &Values<'_>) -> String {
    let view = match read(def, values) {
        Ok(view) => view,
        Err(e) => return format!("no data: {e}"),
    };
    let unit = view.geometry.unit().name();
    let mut text = format!("count {}, sum {} {unit}", view.count(), view.sum);
    let percentiles: Vec<String> = ["p50", "p90", "p99"]
        .iter()
        .filter_map(|q| {
            let v = view.percentile_since_start(q.parse().ok()?).ok()?;
            Some(format!("{q} {v}"))
        })
        .collect();
    if !percentiles.is_empty() {
        text.push_str(&format!("; since start {} {unit}", percentiles.join(", ")));
    }
    text
}

/// A value's cell: its text (a text counter's escaped as [`shown`]), or `?` when there is none.
fn value_text(value: Option<prfdata_wire::snapshot::RawValue>) -> String {
    value.map_or_else(|| "?".to_owned(), |v| shown(&v.to_string()).into_owned())
}

/// A cell from elsewhere (a name, an instance name, a text counter) as the table shows it:
/// every control character escaped, newline and tab too, so that a name never starts a row
/// of its own ([`escape_field`]).
fn shown(text: &str) -> Cow<'_, str> {
    escape_field(text, Style::Terminal)
}

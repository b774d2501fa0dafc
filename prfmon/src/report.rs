//! A decoded collection shown to people: a table of objects, counters, instances and raw
//! values, or the same as JSON. `prfmon query` and `prfmon decode` print these.
//!
//! # Examples
//!
//! ```
//! use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
//! use prfmon::names::Names;
//!
//! let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
//! let snap = prfmon::decode::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
//! let table = prfmon::report::table_with_services(&snap, &Names::default(), &["MyApp".into()]);
//! assert!(table.contains("alpha") && table.contains("service MyApp"));
//! let json = prfmon::report::json(&snap, &Names::default());
//! assert_eq!(json["objects"][0]["instances"][1]["values"][1], -5);
//! assert!(json["objects"][0].get("service").is_none()); // not known from a file
//! # Ok::<(), prfmon::decode::DecodeError>(())
//! ```

use serde::Serialize;

use crate::decode::{CounterDef, DataSnapshot, ObjectData, RawValue};
use crate::factor::Factors;
use crate::names::{instance_names, Names};

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
/// use prfmon::decode::CounterDef;
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
        _ => names.name(c.name_index),
    }
}

#[derive(Serialize)]
struct JsonSnapshot<'a> {
    system_name: &'a str,
    system_time: String,
    perf_time: i64,
    perf_freq: i64,
    perf_time_100nsec: i64,
    default_object: i32,
    total_byte_length: u32,
    objects: Vec<JsonObject<'a>>,
}

#[derive(Serialize)]
struct JsonObject<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<&'a str>,
    index: u32,
    name: String,
    help: String,
    detail: String,
    default_counter: i32,
    perf_time: i64,
    perf_freq: i64,
    counters: Vec<JsonCounter>,
    #[serde(skip_serializing_if = "Option::is_none")]
    values: Option<&'a [RawValue]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instances: Option<Vec<JsonInstance<'a>>>,
}

#[derive(Serialize)]
struct JsonCounter {
    index: u32,
    name: String,
    help: String,
    #[serde(rename = "type")]
    counter_type: u32,
    type_name: String,
    size: u32,
    offset: u32,
    scale: i32,
    detail: String,
    differentiate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    base: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_of: Option<usize>,
    /// Seed 000's scale factor (`*N` or `/N`), for a consumer formatting the value; the values
    /// here stay raw.
    #[serde(skip_serializing_if = "Option::is_none")]
    factor: Option<String>,
}

#[derive(Serialize)]
struct JsonInstance<'a> {
    name: String,
    raw_name: &'a str,
    unique_id: i32,
    parent_object_title_index: u32,
    parent_object_instance: u32,
    values: &'a [RawValue],
}

fn json_object<'a>(
    snap: &'a DataSnapshot,
    obj: &'a ObjectData,
    service: Option<&'a str>,
    names: &Names,
    factors: &Factors,
) -> JsonObject<'a> {
    let counters = obj
        .counters
        .iter()
        .enumerate()
        .map(|(i, c)| JsonCounter {
            index: c.name_index,
            name: counter_name(names, &obj.counters, i),
            help: names.help(c.help_index),
            counter_type: c.counter_type,
            type_name: c.type_name(),
            size: c.size,
            offset: c.offset,
            scale: c.default_scale,
            detail: detail_name(c.detail_level),
            differentiate: prfdata::winperf::is_differentiated(c.counter_type),
            base: c.base,
            base_of: c.base_of,
            factor: factors.of(c.name_index).map(|f| f.to_string()),
        })
        .collect();
    let instances = obj.has_instances().then(|| {
        instance_names(snap, obj)
            .into_iter()
            .zip(&obj.instances)
            .map(|(name, inst)| JsonInstance {
                name,
                raw_name: &inst.name,
                unique_id: inst.unique_id,
                parent_object_title_index: inst.parent_object_title_index,
                parent_object_instance: inst.parent_object_instance,
                values: &inst.values,
            })
            .collect()
    });
    JsonObject {
        service,
        index: obj.name_index,
        name: names.name(obj.name_index),
        help: names.help(obj.help_index),
        detail: detail_name(obj.detail_level),
        default_counter: obj.default_counter,
        perf_time: obj.perf_time,
        perf_freq: obj.perf_freq,
        counters,
        values: (!obj.has_instances()).then_some(obj.values.as_slice()),
        instances,
    }
}

/// The collection as JSON, without services: [`json_with_services`] with none known.
///
/// # Examples
///
/// See the module docs.
pub fn json(snap: &DataSnapshot, names: &Names) -> serde_json::Value {
    json_with_services(snap, names, &[])
}

/// The collection as JSON: header fields, then each object with the `service` that returned
/// it (`services[i]` for object `i`, as [`Collection::services`] gives them; left out when
/// not known, e.g. for a collection read from a file), its names, counters (with name,
/// explain text, type, and whether the value is differentiated over time) and either its
/// `values` (no instances) or its `instances` (PDH names, raw fields, values).
///
/// # Examples
///
/// See the module docs.
///
/// [`Collection::services`]: crate::collector::Collection::services
pub fn json_with_services(
    snap: &DataSnapshot,
    names: &Names,
    services: &[String],
) -> serde_json::Value {
    json_with_factors(snap, names, services, &Factors::default())
}

/// [`json_with_services`], each counter with its scale factor (seed 000's
/// `PSTF_FACTOR_MULTIPLY` / `DIVIDE`, from [`crate::factor`]) as `"factor": "*4096"` when it
/// has one. The values stay raw, as everywhere in this JSON: a consumer formats them, then
/// applies the factor to the displayed value.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfmon::decode::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let counter = snap.objects[0].counters[0].name_index;
/// let mut hive = prfdata_registry::perflib::new_hive();
/// prfdata_registry::stats::write_factors(&mut hive, "App", &[(counter, "/1024".into())])?;
/// let factors = prfmon::factor::Factors::from_hive(&hive)?;
/// let names = prfmon::names::Names::default();
/// let json = prfmon::report::json_with_factors(&snap, &names, &[], &factors);
/// assert_eq!(json["objects"][0]["counters"][0]["factor"], "/1024");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn json_with_factors(
    snap: &DataSnapshot,
    names: &Names,
    services: &[String],
    factors: &Factors,
) -> serde_json::Value {
    let view = JsonSnapshot {
        system_name: &snap.system_name,
        system_time: format!("{} UTC", snap.system_time),
        perf_time: snap.perf_time,
        perf_freq: snap.perf_freq,
        perf_time_100nsec: snap.perf_time_100nsec,
        default_object: snap.default_object,
        total_byte_length: snap.total_byte_length,
        objects: snap
            .objects
            .iter()
            .enumerate()
            .map(|(i, o)| json_object(snap, o, services.get(i).map(String::as_str), names, factors))
            .collect(),
    };
    serde_json::to_value(view).unwrap_or(serde_json::Value::Null)
}

/// Left-aligned columns, two spaces apart.
fn columns(rows: &[Vec<String>], indent: &str) -> String {
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::from(indent);
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The collection as a table, without services: [`table_with_services`] with none known.
///
/// # Examples
///
/// See the module docs.
pub fn table(snap: &DataSnapshot, names: &Names) -> String {
    table_with_services(snap, names, &[])
}

/// The collection as a table: a header line, then per object a line (with the service that
/// returned it, `services[i]` for object `i`, when known) and one row per counter and
/// instance with the raw value.
///
/// # Examples
///
/// See the module docs.
pub fn table_with_services(snap: &DataSnapshot, names: &Names, services: &[String]) -> String {
    let mut out = format!(
        "System {}  {} UTC  PerfTime {}  PerfFreq {}  PerfTime100nSec {}  {} objects, {} bytes\n",
        snap.system_name,
        snap.system_time,
        snap.perf_time,
        snap.perf_freq,
        snap.perf_time_100nsec,
        snap.objects.len(),
        snap.total_byte_length,
    );
    for (position, obj) in snap.objects.iter().enumerate() {
        out.push('\n');
        let count = if obj.has_instances() {
            format!("{} instances", obj.instances.len())
        } else {
            "no instances".into()
        };
        let service = services
            .get(position)
            .map_or_else(String::new, |s| format!(" from service {s}"));
        out.push_str(&format!(
            "Object {} ({}){service}, detail {}, {} counters, {count}\n",
            names.name(obj.name_index),
            obj.name_index,
            detail_name(obj.detail_level),
            obj.counters.len(),
        ));
        let mut rows = vec![vec![
            "Counter".to_owned(),
            "Index".to_owned(),
            "Type".to_owned(),
            "Instance".to_owned(),
            "Value".to_owned(),
        ]];
        let inst_names = instance_names(snap, obj);
        for (i, c) in obj.counters.iter().enumerate() {
            let head = [
                counter_name(names, &obj.counters, i),
                c.name_index.to_string(),
                c.type_name(),
            ];
            let mut row = |instance: &str, value: Option<&RawValue>| {
                let mut r = head.to_vec();
                r.push(instance.to_owned());
                r.push(value.map_or_else(|| "?".to_owned(), ToString::to_string));
                rows.push(r);
            };
            if obj.has_instances() {
                for (name, inst) in inst_names.iter().zip(&obj.instances) {
                    row(name, inst.values.get(i));
                }
            } else {
                row("-", obj.values.get(i));
            }
        }
        out.push_str(&columns(&rows, "  "));
    }
    out
}

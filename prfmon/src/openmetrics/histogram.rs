//! A prfdata histogram as one OpenMetrics `histogram` family: `_bucket{le="..."}` cumulative
//! with `+Inf` last, `_sum` and `_count`, encoded by `prometheus-client`'s
//! `encode_histogram`.
//!
//! A histogram is three counter definitions ([`crate::histogram`]): the `PERF_AVERAGE_BULK`
//! sum (named), the `PERF_AVERAGE_BASE` count and the `PERF_PRFDATA_HISTOGRAM` buckets. The
//! three make one family named for the sum; the sum and base are not families of their own.
//!
//! | recorded in (the map's `unit:`) | exported in | name ends in | `le` of bucket i, `_sum` |
//! |---|---|---|---|
//! | `ns`, `us`, `ms`, `s` | seconds | `_seconds` | its inclusive upper edge ÷ 10⁹, 10⁶, 10³, 1; the sum alike |
//! | `bytes` | bytes | `_bytes` | its inclusive upper edge; the sum |
//! | `count` | as recorded | (nothing) | its inclusive upper edge; the sum |
//!
//! The values are integers, so `v ≤ upper` is `v < upper + 1`: each `le` is exact (in the
//! recorded unit), the same text every scrape, and the last bucket (the overflow, or above an
//! explicit histogram's last bound) is `+Inf`. `_count` is the sum of the bucket counts, the
//! `+Inf` bucket's value.
//!
//! A counter block whose histogram has no data (its descriptor does not decode, its size
//! disagrees, its counts pass 2^64, or its unit is not the family's) gives no series: nothing
//! is guessed from it, and the reason is logged (once per condition, by the binary's logger).
//! A histogram with no data in any counter block of the collection is no family at all.

use prfdata_rules::histogram::Unit;
use prfdata_wire::snapshot::{ObjectData, Values};
use prometheus_client::encoding::{MetricEncoder, NoLabelSet};

use super::kind::MetricUnit;
use crate::histogram::{find, read, HistogramDef, HistogramView, NoData};
use crate::units::DeclaredUnit;

/// What a counter definition of an object is in the exposition, as far as histograms go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Not part of a histogram: exported by its type.
    Plain,
    /// A histogram's sum: its family, exported in this unit.
    Histogram(MetricUnit),
    /// A histogram's base or buckets, or the sum of a histogram with no data in this
    /// collection: not exported.
    Hidden,
}

/// The role of each of `object`'s counter definitions. A histogram's family unit is the one
/// of the first counter block (the object's own, or its instances' in order) whose histogram
/// has data.
pub(super) fn roles(object: &ObjectData) -> Vec<Role> {
    let mut roles = vec![Role::Plain; object.counters.len()];
    for def in find(object) {
        roles[def.base] = Role::Hidden;
        roles[def.buckets] = Role::Hidden;
        let first = blocks(object).find_map(|values| read(&def, &values).ok());
        roles[def.sum] = match first {
            Some(view) => Role::Histogram(unit_of(view.geometry.unit())),
            None => Role::Hidden,
        };
    }
    roles
}

/// Every counter block of `object`: its own (an object without instances) or its instances'.
fn blocks(object: &ObjectData) -> impl Iterator<Item = Values<'_>> {
    let own = (!object.has_instances()).then(|| object.values()).flatten();
    own.into_iter()
        .chain(object.instances().map(|inst| inst.values()))
}

/// The exported unit of values recorded in `unit`.
fn unit_of(unit: Unit) -> MetricUnit {
    match unit {
        Unit::Count => MetricUnit::Raw,
        Unit::Bytes => MetricUnit::Declared(DeclaredUnit::Bytes),
        Unit::Nanoseconds | Unit::Microseconds | Unit::Milliseconds | Unit::Seconds => {
            MetricUnit::Declared(DeclaredUnit::Seconds)
        }
    }
}

/// Why a counter block gives no series for a histogram family.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Skip {
    /// The copy has no data.
    #[error("{0}")]
    NoData(NoData),
    /// The copy's unit is not the one the family is exported in.
    #[error("its values are in {found}, the family's in another unit ({family})")]
    Unit {
        /// The copy's unit, as a map names it.
        found: &'static str,
        /// The family's name ending, or "no unit".
        family: &'static str,
    },
    /// The counter is not a histogram's sum in this object.
    #[error("the counter is not a histogram's sum")]
    NotHistogram,
}

/// The histogram whose sum is counter `sum` of `object`, in counter block `values`, if it has
/// data in `unit` (its family's).
pub(super) fn view<'a>(
    object: &ObjectData,
    sum: usize,
    values: &Values<'a>,
    unit: MetricUnit,
) -> Result<HistogramView<'a>, Skip> {
    let def: HistogramDef = find(object)
        .find(|d| d.sum == sum)
        .ok_or(Skip::NotHistogram)?;
    let view = read(&def, values).map_err(Skip::NoData)?;
    let found = view.geometry.unit();
    if unit_of(found) != unit {
        let family = unit
            .openmetrics_unit()
            .map_or("no unit", |(_, ending)| ending);
        return Err(Skip::Unit {
            found: found.name(),
            family,
        });
    }
    Ok(view)
}

/// What one recorded unit is in the exported unit: 10⁹ nanoseconds a second, and so on; 1 for
/// seconds, bytes and counts. A division by a power of ten is correctly rounded, where a
/// multiplication by 10⁻⁶ is not.
fn per_exported(unit: Unit) -> f64 {
    match unit.nanos() {
        Some(nanos) => 1e9 / nanos as f64,
        None => 1.0,
    }
}

/// The `le` of bucket `i` of `view`: its inclusive upper edge in the exported unit; the last
/// bucket's is `+Inf` (prometheus-client writes `f64::MAX` so).
fn le(view: &HistogramView<'_>, i: usize) -> f64 {
    let g = &view.geometry;
    if i + 1 >= g.buckets() {
        f64::MAX
    } else {
        g.upper(i) as f64 / per_exported(g.unit())
    }
}

/// Writes `view` through `encoder`: `_sum`, `_count`, then its buckets, cumulative, at most
/// `limit` of them (see [`group_size`]).
pub(super) fn encode(
    view: &HistogramView<'_>,
    encoder: MetricEncoder<'_>,
    limit: BucketLimit,
) -> std::fmt::Result {
    let n = view.buckets.len();
    let group = group_size(n, limit);
    // Each group's `le` is its last bucket's: the cumulative count there is the same as
    // with every bucket shown.
    let buckets: Vec<(f64, u64)> = view
        .buckets
        .chunks(group)
        .enumerate()
        .map(|(g, counts)| {
            let last = g * group + counts.len() - 1;
            (
                le(view, last),
                counts.iter().fold(0u64, |t, &c| t.wrapping_add(c)),
            )
        })
        .collect();
    let sum = view.sum as f64 / per_exported(view.geometry.unit());
    let mut encoder = encoder;
    encoder.encode_histogram::<NoLabelSet>(sum, view.count(), &buckets, None)
}

/// The most buckets one histogram series shows (`prfmon serve --histogram-bucket-limit`):
/// every bucket by default.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::BucketLimit;
/// assert_eq!(BucketLimit::default(), BucketLimit::ALL);
/// assert_eq!(BucketLimit::at_most(40).map(|l| l.get()), Some(40));
/// assert_eq!(BucketLimit::at_most(0), None, "at least the +Inf bucket");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketLimit(std::num::NonZeroUsize);

impl BucketLimit {
    /// No limit: every bucket is a series.
    pub const ALL: BucketLimit = BucketLimit(std::num::NonZeroUsize::MAX);

    /// At most `n` buckets (`+Inf` included); `None` for 0.
    pub fn at_most(n: usize) -> Option<BucketLimit> {
        std::num::NonZeroUsize::new(n).map(BucketLimit)
    }

    /// The limit as a number.
    pub fn get(self) -> usize {
        self.0.get()
    }
}

impl Default for BucketLimit {
    fn default() -> Self {
        BucketLimit::ALL
    }
}

/// How many adjacent buckets of a histogram of `n` make one exposed bucket under `limit`: the
/// smallest power of two that leaves at most `limit` groups (1 when the buckets fit). Groups
/// start at the first bucket; the last one may be short and always ends with `+Inf`. A group of
/// 2^m log-linear buckets spans up to 2^m times one bucket's relative width, so a percentile
/// read from the exposition (`histogram_quantile`) is within 2^m times the map's `error`.
pub(super) fn group_size(n: usize, limit: BucketLimit) -> usize {
    let mut group = 1usize;
    while n.div_ceil(group) > limit.get() {
        group *= 2;
    }
    group
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    use crate::names::Names;
    use crate::openmetrics::exposition::Exposition;
    use prfdata_rules::histogram::Descriptor;
    use prfdata_testkit::sample::{histogram_geometries, histogram_object};
    use prfdata_wire::build::ObjectBuilder;
    use prfdata_wire::snapshot::{DataSnapshot, InstanceData, RawValue};
    use prfdata_wire::winperf::*;

    fn snapshot(objects: Vec<Vec<u8>>) -> DataSnapshot {
        let outputs: Vec<ProviderOutput> = objects
            .into_iter()
            .map(|bytes| ProviderOutput {
                bytes,
                num_objects: 1,
            })
            .collect();
        prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &outputs))
            .unwrap()
    }

    /// The names of `histogram_object(3000, ..)`: object "Pool", "Latency" and "Sizes"
    /// histograms, "Position" count.
    fn names() -> Names {
        let mut n = Names::default();
        for (i, s) in [
            (3000, "Pool"),
            (3002, "Latency"),
            (3004, "Sizes"),
            (3006, "Position"),
        ] {
            n.counter.insert(i, s.to_owned());
            n.help.insert(i + 1, format!("Help of {s}."));
        }
        n
    }

    /// The lines of `text` whose sample name is `name` and whose labels contain `labels`:
    /// (the `le` label if any, the value).
    fn samples<'t>(text: &'t str, name: &str, labels: &str) -> Vec<(Option<&'t str>, &'t str)> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
            .filter(|l| l.contains(labels))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                let le = series
                    .split_once("le=\"")
                    .and_then(|(_, rest)| rest.split_once('"'))
                    .map(|(le, _)| le);
                Some((le, value))
            })
            .collect()
    }

    #[test]
    fn group_sizes_are_the_smallest_powers_of_two_that_fit() {
        let at_most = |n| BucketLimit::at_most(n).unwrap();
        assert_eq!(group_size(1166, BucketLimit::ALL), 1);
        assert_eq!(group_size(1166, at_most(1166)), 1);
        assert_eq!(group_size(1166, at_most(1165)), 2);
        assert_eq!(group_size(1166, at_most(40)), 32);
        assert_eq!(group_size(1166, at_most(1)), 2048);
        assert_eq!(group_size(15, at_most(4)), 4);
        assert_eq!(group_size(15, at_most(3)), 8);
    }

    #[test]
    fn a_bucket_limit_keeps_the_cumulative_counts_at_the_le_values_it_shows() {
        let counts: Vec<u64> = (1..=15).map(|i| i * i).collect();
        let snap = snapshot(vec![histogram_object(3000, &[("a", &counts, &[4, 0, 1])])]);
        let name = "prfdata_pool_latency_seconds_bucket";
        let fine = Exposition::new(&snap, &[], &names()).encode();
        let fine = samples(&fine, name, "");
        assert_eq!(fine.len(), 15);
        for n in 1..=16 {
            let limit = BucketLimit::at_most(n).unwrap();
            let text = Exposition::new(&snap, &[], &names())
                .with_bucket_limit(limit)
                .encode();
            let coarse = samples(&text, name, "");
            assert_eq!(
                coarse.len(),
                15usize.div_ceil(group_size(15, limit)),
                "{text}"
            );
            assert!(coarse.len() <= n, "limit {n}: {text}");
            assert_eq!(coarse.last(), fine.last(), "+Inf last, the count: {text}");
            for line in &coarse {
                assert!(
                    fine.contains(line),
                    "limit {n}: {line:?} is not a fine line"
                );
            }
        }
    }

    #[test]
    fn a_histogram_is_one_family_with_cumulative_buckets_in_seconds_and_inf_last() {
        let [latency, sizes] = histogram_geometries();
        let mut a = [0u64; 15];
        a[0] = 1; // 0..=4 us
        a[4] = 3; // 8..=9 us
        a[14] = 2; // 48 us and above
        let snap = snapshot(vec![histogram_object(
            3000,
            &[("a", &a, &[4, 0, 1]), ("b", &[0; 15], &[0; 3])],
        )]);
        let e = Exposition::new(&snap, &["S".into()], &names());
        assert_eq!(
            e.family_names(),
            [
                "prfdata_pool_latency_seconds",
                "prfdata_pool_position",
                "prfdata_pool_sizes_bytes"
            ]
        );
        let text = e.encode();
        assert!(
            text.contains("# TYPE prfdata_pool_latency_seconds histogram\n# UNIT prfdata_pool_latency_seconds seconds\n"),
            "{text}"
        );
        assert!(!text.contains("_base"), "{text}");
        assert!(!text.contains("_total"), "{text}");
        let name = "prfdata_pool_latency_seconds";
        let got: Vec<(f64, u64)> = samples(&text, &format!("{name}_bucket"), "perf_instance=\"a\"")
            .iter()
            .map(|(le, v)| {
                let le = le.expect("an le label");
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                (le, v.parse().unwrap())
            })
            .collect();
        // Each le is the bucket's inclusive upper edge in seconds, +Inf last; counts cumulative.
        let mut want = Vec::new();
        let mut total = 0;
        for (i, count) in a.iter().enumerate() {
            total += count;
            let le = match i {
                14 => f64::INFINITY,
                i => latency.upper(i) as f64 / 1e6,
            };
            want.push((le, total));
        }
        assert_eq!(got, want, "{text}");
        let sum = (0..15).map(|i| a[i] * latency.lower(i)).sum::<u64>() as f64 / 1e6;
        let one = |n: &str| samples(&text, n, "perf_instance=\"a\"")[0].1.to_owned();
        assert_eq!(one(&format!("{name}_count")), "6");
        assert_eq!(one(&format!("{name}_sum")).parse::<f64>().unwrap(), sum);
        // Bytes: le is the bound itself, and the last bucket +Inf.
        let got = samples(
            &text,
            "prfdata_pool_sizes_bytes_bucket",
            "perf_instance=\"a\"",
        );
        assert_eq!(
            got,
            [
                (Some("10.0"), "4"),
                (Some("20.0"), "4"),
                (Some("+Inf"), "5")
            ]
        );
        assert_eq!(sizes.upper(1), 20);
    }

    #[test]
    fn each_le_parses_to_the_buckets_inclusive_upper_edge_and_increases() {
        let g =
            prfdata_rules::histogram::LogLinear::new(Unit::Nanoseconds, 1000, 60_000_000_000, 6)
                .unwrap();
        let g = prfdata_rules::histogram::Geometry::LogLinear(g);
        let view = HistogramView {
            geometry: g,
            buckets: vec![0; g.buckets()].into(),
            sum: 0,
        };
        let les: Vec<f64> = (0..g.buckets()).map(|i| le(&view, i)).collect();
        assert!(les.windows(2).all(|w| w[0] < w[1]), "le increases");
        assert_eq!(les[g.buckets() - 1], f64::MAX);
        for (i, le) in les.iter().enumerate().take(g.buckets() - 1) {
            // Back in nanoseconds, the edge is exact (within one ulp of the division).
            let ns = le * 1e9;
            assert!(
                (ns - g.upper(i) as f64).abs() <= g.upper(i) as f64 * 1e-15,
                "{i}"
            );
        }
    }

    /// An object with one histogram (sum, base, buckets) of `sizes`' geometry whose instances'
    /// histogram values are `values`.
    fn one_histogram(values: &[(&str, RawValue)]) -> Vec<u8> {
        let [_, sizes] = histogram_geometries();
        let size = prfdata_testkit::sample::histogram_size(&sizes);
        let mut object = ObjectBuilder::new(3000)
            .counter(3004, PERF_AVERAGE_BULK, 8)
            .counter(0, PERF_AVERAGE_BASE, 4)
            .counter(0, PERF_PRFDATA_HISTOGRAM, size);
        for (name, value) in values {
            object = object.instance(InstanceData {
                name: (*name).into(),
                unique_id: PERF_NO_UNIQUE_ID,
                values: vec![RawValue::Int(30), RawValue::Int(1), value.clone()],
                ..Default::default()
            });
        }
        object.build()
    }

    /// A value of `sizes`' geometry whose descriptor's magic is 0 (no data).
    fn no_data() -> RawValue {
        let [_, sizes] = histogram_geometries();
        let mut words = Descriptor::of(&sizes).words().to_vec();
        words[0] &= !0xFFFF;
        words.extend([0, 1, 0]);
        RawValue::Bytes(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }

    #[test]
    fn a_histogram_with_no_data_gives_no_series_and_no_family_when_none_has_data() {
        let [_, sizes] = histogram_geometries();
        let good = prfdata_testkit::sample::histogram_value(&sizes, &[0, 1, 0]);
        let snap = snapshot(vec![one_histogram(&[("bad", no_data()), ("good", good)])]);
        let text = Exposition::new(&snap, &[], &names()).encode();
        let name = "prfdata_pool_sizes_bytes_count";
        assert_eq!(samples(&text, name, ""), [(None, "1")], "{text}");
        assert!(!text.contains("perf_instance=\"bad\""), "{text}");
        // The copy with data names the family; the one without, first, gives nothing.
        let snap = snapshot(vec![one_histogram(&[("bad", no_data())])]);
        let e = Exposition::new(&snap, &[], &names());
        assert_eq!(e.family_names(), Vec::<&str>::new());
        assert_eq!(e.encode(), "# EOF\n");
        assert_eq!(roles(&snap.objects[0]), [Role::Hidden; 3]);
    }

    #[test]
    fn a_copy_in_another_unit_than_the_familys_gives_no_series() {
        let [_, sizes] = histogram_geometries();
        let bytes = prfdata_testkit::sample::histogram_value(&sizes, &[0, 1, 0]);
        // The same bounds in microseconds: the same size, another unit.
        let us = prfdata_rules::histogram::Explicit::new(Unit::Microseconds, &[10, 20]).unwrap();
        let us = prfdata_rules::histogram::Geometry::Explicit(us);
        let time = prfdata_testkit::sample::histogram_value(&us, &[0, 1, 0]);
        let snap = snapshot(vec![one_histogram(&[("b", bytes), ("t", time)])]);
        let object = &snap.objects[0];
        let bytes_unit = MetricUnit::Declared(DeclaredUnit::Bytes);
        assert_eq!(roles(object)[0], Role::Histogram(bytes_unit));
        let t = object.instance(1).unwrap().values();
        assert_eq!(
            view(object, 0, &t, bytes_unit).map(|_| ()),
            Err(Skip::Unit {
                found: "us",
                family: "_bytes"
            })
        );
        let text = Exposition::new(&snap, &[], &names()).encode();
        assert!(!text.contains("perf_instance=\"t\""), "{text}");
        assert!(text.contains("perf_instance=\"b\""), "{text}");
    }

    #[test]
    #[cfg_attr(
        not(prfmon_tests_prometheus),
        ignore = "needs promtool (apt-get install prometheus)"
    )]
    fn promtool_accepts_histogram_families() {
        let mut a = [1u64; 15];
        a[14] = 0;
        let snap = snapshot(vec![histogram_object(
            3000,
            &[("a", &a, &[4, 0, 1]), ("b", &[0; 15], &[0; 3])],
        )]);
        let text = Exposition::new(&snap, &["S".into()], &names()).encode_text();
        let mut child = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("promtool is on PATH (the build saw it)");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("feed promtool");
        let run = prfdata_testkit::finish(child, prfdata_testkit::WAIT);
        assert_eq!(run.code, 0, "{}{}\n{text}", run.stdout, run.stderr);
    }
}

//! The histograms of a decoded object: where they are among its counter definitions, and each
//! counter block's geometry, bucket counts and sum, read as a [`HistogramView`].
//!
//! A prfdata histogram is three consecutive counter definitions of one object (the provider
//! publishes them as the app's block lays them out):
//!
//! ```text
//! i − 2   PERF_AVERAGE_BULK        8 bytes       named: the histogram's name; the sum of its values
//! i − 1   PERF_AVERAGE_BASE        4 bytes       no name: the count, mod 2^32
//! i       PERF_PRFDATA_HISTOGRAM   8 × (D + n)   no name: D descriptor words, then n bucket counts
//! ```
//!
//! NT tools show the first two as an average, by winperf.h's formula; the third has no name, so
//! no counter path reaches it as a number: prfmon reads it here. Its descriptor
//! ([`Descriptor::decode`]) says the geometry; a value whose descriptor does not decode, or
//! whose size is not the descriptor's and one word per bucket, has **no data** ([`NoData`]):
//! nothing is guessed from it.
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::build::DataBlockWriter;
//! use prfmon::histogram::histograms;
//!
//! let mut latency = [0; 15];
//! latency[4] = 3; // three values of 8..=9 us
//! let object = prfdata_testkit::sample::histogram_object(3000, &[("w1", &latency, &[0, 2, 0])]);
//! let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&object, 1).finish())?;
//! let object = &snap.objects[0];
//! let found: Vec<_> = histograms(object, object.instance(0).unwrap().values()).collect();
//! let (def, view) = &found[0];
//! assert_eq!((def.name_index(object), def.sum, def.buckets), (3002, 1, 3));
//! let view = view.as_ref().unwrap();
//! assert_eq!((view.count(), view.sum, view.buckets[4]), (3, 24, 3));
//! assert_eq!(found[1].1.as_ref().unwrap().count(), 2);
//! # Ok::<(), prfdata_wire::error::DecodeError>(())
//! ```

use crate::pdh::{percentile, NoValue, Percentile};
use prfdata_rules::histogram::{Descriptor, DescriptorError, Geometry};
use prfdata_wire::snapshot::{ObjectData, RawValue, Values};
use prfdata_wire::winperf::{PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_PRFDATA_HISTOGRAM};
use std::borrow::Cow;

/// Where one histogram's three definitions are among its object's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HistogramDef {
    /// The `PERF_AVERAGE_BULK` sum: the histogram's name and help.
    pub sum: usize,
    /// The `PERF_AVERAGE_BASE` count (mod 2^32), right after the sum.
    pub base: usize,
    /// The `PERF_PRFDATA_HISTOGRAM` descriptor and bucket counts, right after the base.
    pub buckets: usize,
    /// The histogram counter's `CounterSize`: 8 × (descriptor words + buckets) when it is sound.
    pub size: u32,
}

impl HistogramDef {
    /// The histogram's name index: its sum's `CounterNameTitleIndex` (0 if `object` is not the
    /// object this definition was found in and has no such counter).
    pub fn name_index(&self, object: &ObjectData) -> u32 {
        object.counters.get(self.sum).map_or(0, |c| c.name_index)
    }
}

/// One counter block's copy of a histogram: its geometry, its bucket counts and the sum of the
/// values it counted (in the geometry's unit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistogramView<'a> {
    /// The buckets' layout, from the descriptor.
    pub geometry: Geometry,
    /// One count per bucket, `geometry.buckets()` of them.
    pub buckets: Cow<'a, [u64]>,
    /// The sum of the values counted, from the `PERF_AVERAGE_BULK` definition.
    pub sum: u64,
}

impl HistogramView<'_> {
    /// How many values the histogram counted: the sum of its bucket counts (which
    /// [`histograms`] checked fits a `u64`; saturating for a view built otherwise).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::histogram::HistogramView;
    /// let [_, sizes] = prfdata_testkit::sample::histogram_geometries();
    /// let view = HistogramView { geometry: sizes, buckets: vec![1, 2, 3].into(), sum: 80 };
    /// assert_eq!(view.count(), 6);
    /// ```
    pub fn count(&self) -> u64 {
        self.buckets.iter().fold(0u64, |n, c| n.saturating_add(*c))
    }
}

impl HistogramView<'_> {
    /// Percentile `q` of every value the histogram counted since it began (the interval from
    /// all-zero counts): what a single collection can say ([`crate::pdh::percentile`]).
    ///
    /// # Errors
    ///
    /// [`NoValue::BaseNotAdvanced`] when it counted nothing; [`NoValue::BadHistogram`] when
    /// the counts do not fit the geometry.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::histogram::HistogramView;
    /// let [_, sizes] = prfdata_testkit::sample::histogram_geometries();
    /// let view = HistogramView { geometry: sizes, buckets: vec![90, 10, 0].into(), sum: 0 };
    /// assert_eq!(view.percentile_since_start("p50".parse()?), Ok(5.0));
    /// assert_eq!(view.percentile_since_start("p99".parse()?), Ok(15.5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn percentile_since_start(&self, q: Percentile) -> Result<f64, NoValue> {
        let zero = vec![0; self.buckets.len()];
        percentile(Some(&zero), &self.buckets, &self.geometry, q)
    }
}

/// How a histogram's buckets are laid out, as `list --verbose` and `query --json` show it.
///
/// # Examples
///
/// ```
/// use prfmon::histogram::BucketLayout;
/// let [latency, sizes] = prfdata_testkit::sample::histogram_geometries();
/// assert_eq!(BucketLayout::of(&latency).to_string(),
///            "log-linear, 5 .. 47 us within 25 % (p = 2), 15 buckets (with underflow and overflow)");
/// assert_eq!(BucketLayout::of(&sizes).to_string(), "explicit bounds 10, 20 bytes, 3 buckets (the last above 20)");
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BucketLayout {
    /// `log-linear` or `explicit`.
    pub scheme: &'static str,
    /// The unit of the values: `count`, `ns`, `us`, `ms`, `s` or `bytes`.
    pub unit: &'static str,
    /// The number of buckets, underflow and overflow included.
    pub buckets: usize,
    /// Log-linear: the lowest value of the buckets that state the error (bucket 1's lower edge;
    /// below it is the underflow bucket).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lowest: Option<u64>,
    /// Log-linear: the highest value of those buckets (the overflow bucket holds the rest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highest: Option<u64>,
    /// Log-linear: the stated relative error, 2^-p (a bucket is at most this part of its lower
    /// edge wide).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<f64>,
    /// Log-linear: p, the sub-bucket bits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_bits: Option<u8>,
    /// Explicit: the bounds (bucket i holds the values above bound i − 1 up to bound i).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<u64>,
}

impl BucketLayout {
    /// The layout of `g`.
    pub fn of(g: &Geometry) -> BucketLayout {
        let n = g.buckets();
        let (lowest, highest, sub_bits, bounds) = match g {
            Geometry::LogLinear(ll) => (
                Some(g.lower(1)),
                Some(g.upper(n - 2)),
                Some(ll.sub_bits()),
                Vec::new(),
            ),
            Geometry::Explicit(e) => (None, None, None, e.bounds().to_vec()),
        };
        BucketLayout {
            scheme: match g {
                Geometry::LogLinear(_) => "log-linear",
                Geometry::Explicit(_) => "explicit",
            },
            unit: g.unit().name(),
            buckets: n,
            lowest,
            highest,
            error: g.relative_error(),
            sub_bits,
            bounds,
        }
    }
}

impl core::fmt::Display for BucketLayout {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (unit, n) = (self.unit, self.buckets);
        match (self.lowest, self.highest, self.error, self.sub_bits) {
            (Some(lo), Some(hi), Some(e), Some(p)) => write!(
                f,
                "log-linear, {lo} .. {hi} {unit} within {} % (p = {p}), {n} buckets (with underflow and overflow)",
                e * 100.0
            ),
            _ => {
                let bounds: Vec<String> = self.bounds.iter().map(u64::to_string).collect();
                let last = bounds.last().map_or("", String::as_str);
                write!(f, "explicit bounds {} {unit}, {n} buckets (the last above {last})", bounds.join(", "))
            }
        }
    }
}

/// Why a histogram of a counter block has no data: nothing about its values is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoData {
    /// The histogram counter's value is not whole 64-bit words.
    #[error("the histogram's value is {size} bytes, not a whole number of 64-bit words")]
    Size {
        /// Its `CounterSize`.
        size: u32,
    },
    /// The descriptor does not decode, or the value is not the descriptor and one word per
    /// bucket.
    #[error("{0}")]
    Descriptor(DescriptorError),
    /// The bucket counts add up past 2^64 − 1 (a reader marks such a copy with a zero
    /// descriptor; this catches one that did not).
    #[error("the histogram's bucket counts add up past 2^64 - 1")]
    Count,
    /// The sum definition's value is not a 64-bit integer.
    #[error("the histogram's sum is not a 64-bit integer")]
    Sum,
}

/// The histograms of `object`'s definitions: each `PERF_PRFDATA_HISTOGRAM` counter that
/// follows a `PERF_AVERAGE_BULK` and a `PERF_AVERAGE_BASE`, in definition order. One that does
/// not has no name to reach it by and is left out.
///
/// # Examples
///
/// ```
/// # use prfdata_wire::build::DataBlockWriter;
/// let object = prfdata_testkit::sample::histogram_object(3000, &[]);
/// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&object, 1).finish())?;
/// let defs: Vec<_> = prfmon::histogram::find(&snap.objects[0]).map(|d| d.buckets).collect();
/// assert_eq!(defs, [3, 6]);
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn find(object: &ObjectData) -> impl Iterator<Item = HistogramDef> + '_ {
    const TRIPLE: [u32; 3] = [PERF_AVERAGE_BULK, PERF_AVERAGE_BASE, PERF_PRFDATA_HISTOGRAM];
    object
        .counters
        .windows(3)
        .enumerate()
        .filter_map(|(sum, defs)| {
            let types = [0, 1, 2].map(|k| defs[k].counter_type);
            (types == TRIPLE).then_some(HistogramDef {
                sum,
                base: sum + 1,
                buckets: sum + 2,
                size: defs[2].size,
            })
        })
}

/// The histogram `def` of one counter block's `values` (an instance's, or the object's own).
///
/// # Errors
///
/// A [`NoData`] saying why the copy cannot be read: nothing is guessed from it.
///
/// # Examples
///
/// ```
/// # use prfdata_wire::build::DataBlockWriter;
/// use prfmon::histogram::{find, read};
/// let object = prfdata_testkit::sample::histogram_object(3000, &[("w1", &[0; 15], &[5, 0, 1])]);
/// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&object, 1).finish())?;
/// let object = &snap.objects[0];
/// let sizes = find(object).nth(1).unwrap();
/// let view = read(&sizes, &object.instance(0).unwrap().values()).unwrap();
/// assert_eq!((&view.buckets[..], view.sum), (&[5, 0, 1][..], 21));
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn read<'a>(def: &HistogramDef, values: &Values<'a>) -> Result<HistogramView<'a>, NoData> {
    let size = Err(NoData::Size { size: def.size });
    let bytes = match values.get(def.buckets) {
        _ if !def.size.is_multiple_of(8) => return size,
        Some(RawValue::Bytes(bytes)) => bytes,
        Some(RawValue::Int(word)) => word.to_le_bytes().to_vec(),
        _ => return size,
    };
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .filter_map(|w| w.try_into().ok().map(u64::from_le_bytes))
        .collect();
    let (geometry, d) = Descriptor::decode(&words).map_err(NoData::Descriptor)?;
    let buckets = words[d..].to_vec();
    buckets
        .iter()
        .try_fold(0u64, |n, c| n.checked_add(*c))
        .ok_or(NoData::Count)?;
    let sum = match values.get(def.sum) {
        Some(RawValue::Int(sum)) => sum as u64,
        _ => return Err(NoData::Sum),
    };
    Ok(HistogramView {
        geometry,
        buckets: Cow::Owned(buckets),
        sum,
    })
}

/// Every histogram of `object` in one counter block's `values`, each with its definitions and
/// its view or why it has none: [`find`] then [`read`].
pub fn histograms<'a>(
    object: &'a ObjectData,
    values: Values<'a>,
) -> impl Iterator<Item = (HistogramDef, Result<HistogramView<'a>, NoData>)> + 'a {
    find(object).map(move |def| (def, read(&def, &values)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_testkit::sample::{histogram_geometries, histogram_object, histogram_value};
    use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
    use prfdata_wire::snapshot::{decode, DataSnapshot};
    use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;

    fn snapshot(object: &[u8]) -> DataSnapshot {
        decode(&DataBlockWriter::new("h", 0).objects(object, 1).finish()).unwrap()
    }

    /// An object without instances whose counters are `defs` (type, size) and values `values`.
    fn global(defs: &[(u32, u32)], values: Vec<RawValue>) -> DataSnapshot {
        let mut b = ObjectBuilder::new(10);
        for (i, &(counter_type, size)) in defs.iter().enumerate() {
            b = b.counter(if i == 0 { 12 } else { 0 }, counter_type, size);
        }
        snapshot(&b.values(values).build())
    }

    fn triple(size: u32) -> [(u32, u32); 3] {
        [
            (PERF_AVERAGE_BULK, 8),
            (PERF_AVERAGE_BASE, 4),
            (PERF_PRFDATA_HISTOGRAM, size),
        ]
    }

    #[test]
    fn every_instance_reads_its_own_buckets_and_sum() {
        let [latency, sizes] = histogram_geometries();
        let mut a = vec![0; 15];
        a[0] = 1; // one value of 0..=4 us
        a[14] = 2; // two of 48 us or more
        let object = histogram_object(3000, &[("a", &a, &[0, 0, 4]), ("b", &[9; 15], &[1, 1, 1])]);
        let snap = snapshot(&object);
        let object = &snap.objects[0];
        let defs: Vec<HistogramDef> = find(object).collect();
        let sum_names: Vec<u32> = defs.iter().map(|d| d.name_index(object)).collect();
        assert_eq!(sum_names, [3002, 3004]);
        let read_all = |i: usize| -> Vec<HistogramView<'_>> {
            let values = object.instance(i).unwrap().values();
            histograms(object, values)
                .map(|(_, v)| v.unwrap())
                .collect()
        };
        let [la, sa] = <[_; 2]>::try_from(read_all(0)).unwrap();
        assert_eq!(
            (la.geometry, &la.buckets[..], la.sum),
            (latency, &a[..], 96)
        );
        assert_eq!(
            (sa.geometry, &sa.buckets[..], sa.sum),
            (sizes, &[0, 0, 4][..], 84)
        );
        assert_eq!((la.count(), sa.count()), (3, 4));
        let [lb, sb] = <[_; 2]>::try_from(read_all(1)).unwrap();
        assert_eq!(
            (lb.count(), &sb.buckets[..], sb.sum),
            (135, &[1, 1, 1][..], 32)
        );
    }

    #[test]
    fn a_histogram_counter_without_its_sum_and_base_before_it_is_not_found() {
        let [_, sizes] = histogram_geometries();
        let size = prfdata_testkit::sample::histogram_size(&sizes);
        let value = || histogram_value(&sizes, &[1, 2, 3]);
        let [bulk, base, hist] = triple(size);
        let ints = |n: usize| vec![RawValue::Int(0); n];
        let cases = [
            (vec![hist], vec![value()]),
            (vec![base, hist], [ints(1), vec![value()]].concat()),
            (
                vec![bulk, (PERF_COUNTER_RAWCOUNT, 4), hist],
                [ints(2), vec![value()]].concat(),
            ),
            (vec![base, bulk, hist], [ints(2), vec![value()]].concat()),
        ];
        for (defs, values) in cases {
            let snap = global(&defs, values);
            assert_eq!(find(&snap.objects[0]).count(), 0, "{defs:x?}");
        }
        let snap = global(&[bulk, base, hist], [ints(2), vec![value()]].concat());
        assert_eq!(find(&snap.objects[0]).count(), 1);
    }

    /// The global copy of a histogram of `sizes` whose value is `words`, read.
    fn read_words(words: &[u64]) -> Result<(Geometry, Vec<u64>), NoData> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let size = bytes.len() as u32;
        let values = vec![RawValue::Int(7), RawValue::Int(1), RawValue::Bytes(bytes)];
        let snap = global(&triple(size), values);
        let object = &snap.objects[0];
        let def = find(object).next().expect("a histogram");
        let view = read(&def, &object.values().unwrap())?;
        Ok((view.geometry, view.buckets.into_owned()))
    }

    #[test]
    fn a_descriptor_that_does_not_decode_is_no_data() {
        let [_, sizes] = histogram_geometries();
        let mut words = Descriptor::of(&sizes).words().to_vec();
        words.extend([1, 2, 3]);
        assert_eq!(read_words(&words), Ok((sizes, vec![1, 2, 3])));
        let mut bad = words.clone();
        bad[0] &= !0xFFFF; // magic 0: how a reader marks a copy with no data
        assert_eq!(
            read_words(&bad),
            Err(NoData::Descriptor(DescriptorError::Magic(0)))
        );
        let mut bad = words.clone();
        bad[0] ^= 0x7 << 24; // another scheme
        assert!(matches!(
            read_words(&bad),
            Err(NoData::Descriptor(DescriptorError::Scheme(_)))
        ));
    }

    #[test]
    fn a_size_that_disagrees_with_the_descriptor_is_no_data() {
        let [_, sizes] = histogram_geometries();
        let mut words = Descriptor::of(&sizes).words().to_vec();
        words.extend([1, 2, 3, 4]); // one word too many
        let found = words.len();
        let size = NoData::Descriptor(DescriptorError::Size {
            expected: found as u32 - 1,
            found: found as u32,
        });
        assert_eq!(read_words(&words), Err(size));
        words.truncate(found - 2); // one word too few
        assert!(matches!(
            read_words(&words),
            Err(NoData::Descriptor(DescriptorError::Size { .. }))
        ));
        assert!(matches!(
            read_words(&words[..1]),
            Err(NoData::Descriptor(DescriptorError::Short { .. }))
        ));
        // Not whole words: 8 × 5 + 4 bytes.
        let values = vec![
            RawValue::Int(0),
            RawValue::Int(0),
            RawValue::Bytes(vec![0; 44]),
        ];
        let snap = global(&triple(44), values);
        let object = &snap.objects[0];
        let def = find(object).next().unwrap();
        let got = read(&def, &object.values().unwrap());
        assert_eq!(got, Err(NoData::Size { size: 44 }));
        assert_eq!(
            got.unwrap_err().to_string(),
            "the histogram's value is 44 bytes, not a whole number of 64-bit words"
        );
    }

    #[test]
    fn bucket_counts_past_2_pow_64_are_no_data() {
        let [_, sizes] = histogram_geometries();
        let mut words = Descriptor::of(&sizes).words().to_vec();
        words.extend([u64::MAX, 1, 0]);
        assert_eq!(read_words(&words), Err(NoData::Count));
        let at_max = words.len() - 2;
        words[at_max] = 0;
        assert_eq!(read_words(&words).map(|(_, b)| b), Ok(vec![u64::MAX, 0, 0]));
    }

    #[test]
    fn a_sum_that_is_not_a_64_bit_integer_is_no_data() {
        let [_, sizes] = histogram_geometries();
        let size = prfdata_testkit::sample::histogram_size(&sizes);
        let defs = [
            (PERF_AVERAGE_BULK, 12),
            (PERF_AVERAGE_BASE, 4),
            (PERF_PRFDATA_HISTOGRAM, size),
        ];
        let values = vec![
            RawValue::Bytes(vec![0; 12]),
            RawValue::Int(0),
            histogram_value(&sizes, &[0, 0, 0]),
        ];
        let snap = global(&defs, values);
        let object = &snap.objects[0];
        let def = find(object).next().unwrap();
        assert_eq!(read(&def, &object.values().unwrap()), Err(NoData::Sum));
    }
}

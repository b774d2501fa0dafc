//! A small, valid PERF_OBJECT_TYPE for examples, tests and benchmarks of the consumer side
//! (what a provider's Collect returns, without a provider).
//!
//! ```text
//! object  name index N, help N+1, 3 counters, 2 instances
//!   N+2   PERF_COUNTER_RAWCOUNT   4 bytes at 4
//!   N+4   PERF_AVERAGE_BULK       8 bytes at 8, its base right after it
//!   0     PERF_AVERAGE_BASE       4 bytes at 16
//!   "alpha"  7, 100, 4
//!   "beta"   0xFFFF_FFFF, -5, 1
//! ```
//!
//! # Examples
//!
//! ```
//! let object = prfdata_testkit::sample::sample_object(1848);
//! assert_eq!(object.len() % 8, 0);
//! ```

use prfdata_rules::histogram::{Descriptor, Explicit, Geometry, LogLinear, Unit};
use prfdata_wire::build::ObjectBuilder;
use prfdata_wire::snapshot::{InstanceData, RawValue};
use prfdata_wire::winperf::{
    PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_COUNTER_RAWCOUNT, PERF_DETAIL_ADVANCED,
    PERF_NO_UNIQUE_ID, PERF_PRFDATA_HISTOGRAM,
};

/// The sample object described in the module docs, with name index `name_index`.
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PerfObjectType;
/// use zerocopy::FromBytes;
/// let object = prfdata_testkit::sample::sample_object(2000);
/// let (header, _) = PerfObjectType::read_from_prefix(&object).expect("a header");
/// assert_eq!(header.total_byte_length.get() as usize, object.len());
/// let (name, counters) = (header.object_name_title_index.get(), header.num_counters.get());
/// assert_eq!((name, counters, header.num_instances.get()), (2000, 3, 2));
/// ```
pub fn sample_object(name_index: u32) -> Vec<u8> {
    let instance = |name: &str, a: u32, b: i64, c: u32| InstanceData {
        name: name.into(),
        unique_id: PERF_NO_UNIQUE_ID,
        values: vec![
            RawValue::Int(a.into()),
            RawValue::Int(b),
            RawValue::Int(c.into()),
        ],
        ..Default::default()
    };
    ObjectBuilder::new(name_index)
        .counter(name_index + 2, PERF_COUNTER_RAWCOUNT, 4)
        .offset(4)
        .counter(name_index + 4, PERF_AVERAGE_BULK, 8)
        .detail(PERF_DETAIL_ADVANCED)
        .counter(0, PERF_AVERAGE_BASE, 4)
        .detail(PERF_DETAIL_ADVANCED)
        .clock(
            prfdata::clock::perf_counter(),
            prfdata::clock::PERF_FREQUENCY,
        )
        .instance(instance("alpha", 7, 100, 4))
        .instance(instance("beta", 0xFFFF_FFFF, -5, 1))
        .build()
}

/// The geometries of [`histogram_object`]'s two histograms: `Latency`, log-linear 5 us ..
/// 40 us at p = 2 (15 buckets: 0..=4, 5, 6, 7, 8..=9, .., 40..=47, 48 and above), and `Sizes`,
/// explicit bounds 10 and 20 bytes (3 buckets: ..=10, 11..=20, 21 and above).
///
/// # Examples
///
/// ```
/// let [latency, sizes] = prfdata_testkit::sample::histogram_geometries();
/// assert_eq!((latency.buckets(), sizes.buckets()), (15, 3));
/// ```
pub fn histogram_geometries() -> [Geometry; 2] {
    [Geometry::LogLinear(LATENCY), Geometry::Explicit(SIZES)]
}

/// [`histogram_geometries`]' first, checked at compile time.
const LATENCY: LogLinear = match LogLinear::new(Unit::Microseconds, 5, 40, 2) {
    Ok(g) => g,
    Err(_) => panic!("5..40 us at p = 2 follows the rules"),
};

/// [`histogram_geometries`]' second, checked at compile time.
const SIZES: Explicit = match Explicit::new(Unit::Bytes, &[10, 20]) {
    Ok(g) => g,
    Err(_) => panic!("bounds 10, 20 follow the rules"),
};

/// The value of a histogram counter (`PERF_PRFDATA_HISTOGRAM`) of geometry `g` holding
/// `counts`: the descriptor words, then one count per bucket, little-endian u64s.
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::Descriptor;
/// use prfdata_wire::snapshot::RawValue;
/// let [_, sizes] = prfdata_testkit::sample::histogram_geometries();
/// let RawValue::Bytes(bytes) = prfdata_testkit::sample::histogram_value(&sizes, &[1, 2, 3]) else {
///     panic!("a histogram's value is bytes");
/// };
/// assert_eq!(bytes.len(), 8 * (Descriptor::of(&sizes).words().len() + 3));
/// ```
pub fn histogram_value(g: &Geometry, counts: &[u64]) -> RawValue {
    let descriptor = Descriptor::of(g);
    let words = descriptor.words().iter().chain(counts);
    RawValue::Bytes(words.flat_map(|w| w.to_le_bytes()).collect())
}

/// The `CounterSize` of a histogram counter of geometry `g`: 8 × (descriptor words + buckets).
pub fn histogram_size(g: &Geometry) -> u32 {
    let words = Descriptor::of(g).words().len() + g.buckets();
    u32::try_from(8 * words).unwrap_or(u32::MAX)
}

/// An object with two histograms, laid out as a prfdata block publishes one (a sum, its base,
/// then the histogram counter), and one plain counter before them:
///
/// ```text
/// object  name index N, help N+1, 7 counters, one instance per entry of `instances`
///   N+6   PERF_COUNTER_RAWCOUNT    4 bytes   the instance's position
///   N+2   PERF_AVERAGE_BULK        8 bytes   Latency: the sum of its values
///   0     PERF_AVERAGE_BASE        4 bytes   its count, mod 2^32
///   0     PERF_PRFDATA_HISTOGRAM   8 × (D + 15) bytes: descriptor, bucket counts
///   N+4   PERF_AVERAGE_BULK        8 bytes   Sizes: the sum
///   0     PERF_AVERAGE_BASE        4 bytes
///   0     PERF_PRFDATA_HISTOGRAM   8 × (D + 3) bytes
/// ```
///
/// Each instance gives its name and the bucket counts of both histograms (geometries from
/// [`histogram_geometries`]); its sums are Σ count × the bucket's lower edge.
///
/// # Examples
///
/// ```
/// # use prfdata_wire::build::DataBlockWriter;
/// let mut latency = [0; 15];
/// latency[4] = 2; // two values of 8..=9 us
/// let out = prfdata_testkit::sample::histogram_object(3000, &[("w1", &latency, &[1, 0, 0])]);
/// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
/// let values = snap.objects[0].instance(0).unwrap().values();
/// assert_eq!((values.int(1), values.int(2)), (Some(16), Some(2)));
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn histogram_object(name_index: u32, instances: &[(&str, &[u64], &[u64])]) -> Vec<u8> {
    let [latency, sizes] = histogram_geometries();
    let mut object =
        ObjectBuilder::new(name_index).counter(name_index + 6, PERF_COUNTER_RAWCOUNT, 4);
    for (name, g) in [(name_index + 2, &latency), (name_index + 4, &sizes)] {
        object = object
            .counter(name, PERF_AVERAGE_BULK, 8)
            .counter(0, PERF_AVERAGE_BASE, 4)
            .counter(0, PERF_PRFDATA_HISTOGRAM, histogram_size(g));
    }
    for (position, (name, a, b)) in instances.iter().enumerate() {
        let mut values = vec![RawValue::Int(position as i64)];
        for (g, counts) in [(&latency, a), (&sizes, b)] {
            let count: u64 = counts.iter().sum();
            let sum: u64 = counts.iter().enumerate().map(|(i, c)| c * g.lower(i)).sum();
            values.push(RawValue::Int(sum as i64));
            values.push(RawValue::Int(i64::from(count as u32)));
            values.push(histogram_value(g, counts));
        }
        object = object.instance(InstanceData {
            name: (*name).into(),
            unique_id: PERF_NO_UNIQUE_ID,
            values,
            ..Default::default()
        });
    }
    object
        .clock(
            prfdata::clock::perf_counter(),
            prfdata::clock::PERF_FREQUENCY,
        )
        .build()
}

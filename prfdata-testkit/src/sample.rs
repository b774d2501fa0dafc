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

use prfdata_wire::build::ObjectBuilder;
use prfdata_wire::snapshot::{InstanceData, RawValue};
use prfdata_wire::winperf::{
    PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_COUNTER_RAWCOUNT, PERF_DETAIL_ADVANCED,
    PERF_NO_UNIQUE_ID,
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

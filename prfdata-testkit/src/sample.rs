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

use prfdata_wire::winperf::{
    PerfCounterBlock, PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType, I32, I64,
    PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_COUNTER_RAWCOUNT, PERF_DETAIL_ADVANCED,
    PERF_DETAIL_NOVICE, PERF_NO_UNIQUE_ID, U32,
};
use zerocopy::IntoBytes;

/// Bytes of the sample object's counter blocks.
const BLOCK: u32 = 24;

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
    let defs = [
        (
            name_index + 2,
            PERF_COUNTER_RAWCOUNT,
            4,
            4,
            PERF_DETAIL_NOVICE,
        ),
        (
            name_index + 4,
            PERF_AVERAGE_BULK,
            8,
            8,
            PERF_DETAIL_ADVANCED,
        ),
        (0, PERF_AVERAGE_BASE, 4, 16, PERF_DETAIL_ADVANCED),
    ];
    let instances: [(&str, u32, i64, u32); 2] =
        [("alpha", 7, 100, 4), ("beta", 0xFFFF_FFFF, -5, 1)];
    let mut body = Vec::new();
    for (name, a, b, c) in instances {
        let units: Vec<u16> = name.encode_utf16().chain([0]).collect();
        let len = (24 + units.len() * 2).next_multiple_of(8);
        let def = PerfInstanceDefinition {
            byte_length: U32::new(len as u32),
            parent_object_title_index: U32::new(0),
            parent_object_instance: U32::new(0),
            unique_id: I32::new(PERF_NO_UNIQUE_ID),
            name_offset: U32::new(24),
            name_length: U32::new((units.len() * 2) as u32),
        };
        body.extend_from_slice(def.as_bytes());
        body.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        body.resize(body.len().next_multiple_of(8), 0);
        body.extend_from_slice(
            PerfCounterBlock {
                byte_length: U32::new(BLOCK),
            }
            .as_bytes(),
        );
        body.extend_from_slice(&a.to_le_bytes());
        body.extend_from_slice(&b.to_le_bytes());
        body.extend_from_slice(&c.to_le_bytes());
        body.extend_from_slice(&[0; 4]);
    }
    let definition_length = 64 + 40 * defs.len();
    let header = PerfObjectType {
        total_byte_length: U32::new((definition_length + body.len()) as u32),
        definition_length: U32::new(definition_length as u32),
        header_length: U32::new(64),
        object_name_title_index: U32::new(name_index),
        object_help_title_index: U32::new(name_index + 1),
        detail_level: U32::new(PERF_DETAIL_NOVICE),
        num_counters: U32::new(defs.len() as u32),
        default_counter: I32::new(0),
        num_instances: I32::new(instances.len() as i32),
        perf_time: I64::new(prfdata::clock::perf_counter()),
        perf_freq: I64::new(prfdata::clock::PERF_FREQUENCY),
        ..Default::default()
    };
    let mut out = header.as_bytes().to_vec();
    for (index, counter_type, size, offset, detail) in defs {
        let def = PerfCounterDefinition {
            byte_length: U32::new(40),
            counter_name_title_index: U32::new(index),
            counter_help_title_index: U32::new(if index == 0 { 0 } else { index + 1 }),
            detail_level: U32::new(detail),
            counter_type: U32::new(counter_type),
            counter_size: U32::new(size),
            counter_offset: U32::new(offset),
            ..Default::default()
        };
        out.extend_from_slice(def.as_bytes());
    }
    out.extend_from_slice(&body);
    out
}

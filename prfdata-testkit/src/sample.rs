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

use prfdata::winperf::{
    PerfCounterBlock, PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType,
    PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_COUNTER_RAWCOUNT, PERF_DETAIL_ADVANCED,
    PERF_DETAIL_NOVICE, PERF_NO_UNIQUE_ID,
};
use zerocopy::IntoBytes;

/// Bytes of the sample object's counter blocks.
const BLOCK: u32 = 24;

/// The sample object described in the module docs, with name index `name_index`.
///
/// # Examples
///
/// ```
/// use prfdata::winperf::PerfObjectType;
/// use zerocopy::FromBytes;
/// let object = prfdata_testkit::sample::sample_object(2000);
/// let (header, _) = PerfObjectType::read_from_prefix(&object).expect("a header");
/// assert_eq!(header.total_byte_length as usize, object.len());
/// assert_eq!((header.object_name_title_index, header.num_counters, header.num_instances), (2000, 3, 2));
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
            byte_length: len as u32,
            parent_object_title_index: 0,
            parent_object_instance: 0,
            unique_id: PERF_NO_UNIQUE_ID,
            name_offset: 24,
            name_length: (units.len() * 2) as u32,
        };
        body.extend_from_slice(def.as_bytes());
        body.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        body.resize(body.len().next_multiple_of(8), 0);
        body.extend_from_slice(PerfCounterBlock { byte_length: BLOCK }.as_bytes());
        body.extend_from_slice(&a.to_le_bytes());
        body.extend_from_slice(&b.to_le_bytes());
        body.extend_from_slice(&c.to_le_bytes());
        body.extend_from_slice(&[0; 4]);
    }
    let definition_length = 64 + 40 * defs.len();
    let header = PerfObjectType {
        total_byte_length: (definition_length + body.len()) as u32,
        definition_length: definition_length as u32,
        header_length: 64,
        object_name_title_index: name_index,
        object_help_title_index: name_index + 1,
        detail_level: PERF_DETAIL_NOVICE,
        num_counters: defs.len() as u32,
        default_counter: 0,
        num_instances: instances.len() as i32,
        perf_time: prfdata::clock::perf_counter(),
        perf_freq: prfdata::clock::PERF_FREQUENCY,
        ..Default::default()
    };
    let mut out = header.as_bytes().to_vec();
    for (index, counter_type, size, offset, detail) in defs {
        let def = PerfCounterDefinition {
            byte_length: 40,
            counter_name_title_index: index,
            counter_help_title_index: if index == 0 { 0 } else { index + 1 },
            detail_level: detail,
            counter_type,
            counter_size: size,
            counter_offset: offset,
            ..Default::default()
        };
        out.extend_from_slice(def.as_bytes());
    }
    out.extend_from_slice(&body);
    out
}

//! How large a block's Collect answer can be: **the objects of a block of `S` bytes take at most
//! `S` bytes in a Collect answer**, and a block is at most [`MAX_BLOCK_SIZE`]. This is the one
//! rule the provider's answer, the collector's largest Collect buffer, its host protocol's
//! largest frame and `prfmon decode`'s largest input all come from
//! (`BlockReader::MAX_COLLECT_ANSWER`): whatever `activate` accepts, Collect can return.
//!
//! Each object of a block, serialised as "How a performance DLL interfaces with a monitor"
//! asks (winperf.h's PERF_OBJECT_TYPE and its descendants), against what the block itself
//! spends on that object (`layout.rs`; the reader checks each of these sizes at open):
//!
//! ```text
//! in the answer, at most                              in the block, at least
//! PERF_OBJECT_TYPE                          64        ObjectRecord                       128
//! PERF_COUNTER_DEFINITION × n               40 n      CounterRecord × n                   64 n
//! per instance, max_instances of them:                per instance:
//!   PERF_INSTANCE_DEFINITION 24 + (name               live entry 4 + slot 64 + 2 name
//!   + NUL) × 2, to 8: ≤ 32 + 2 name                   + its counter block's stride ≥ block
//!   + counter block                     block
//! `_Total` (total: true): 24 + 7 × 2,                 the retired accumulator: a stride
//!   to 8: 40, + counter block           40 + block    ≥ block, and the 64 the object record
//!                                                     has to spare
//! without instances: counter block      block         one stride ≥ block
//! ```
//!
//! Line by line the answer is smaller, so an object answers at most what it spends, and objects
//! whose regions do not overlap answer at most the block's size. A block whose objects claim
//! more than that (regions laid over one another: not a block prfdata wrote) is refused at open
//! ([`ReadError::Overlapping`]), so the rule holds for every block a reader accepts, not only
//! for honest ones. The test at the end of this file checks the table against the writer's own
//! geometry (`map::offsets`) for random objects.
//!
//! An app is served from two blocks (its installed map's and its run-time objects'), so one
//! Collect of one app answers at most twice [`MAX_BLOCK_SIZE`]: 2 GiB, which a DWORD byte count
//! (`*lpcbTotalBytes`) holds.
//!
//! [`MAX_BLOCK_SIZE`]: crate::layout::MAX_BLOCK_SIZE

use crate::reader::error::ReadError;

/// PERF_OBJECT_TYPE's size (winperf.h).
const OBJECT_TYPE: u64 = core::mem::size_of::<crate::winperf::PerfObjectType>() as u64;
/// PERF_COUNTER_DEFINITION's size.
const COUNTER_DEFINITION: u64 =
    core::mem::size_of::<crate::winperf::PerfCounterDefinition>() as u64;
/// PERF_INSTANCE_DEFINITION's size.
const INSTANCE_DEFINITION: u64 =
    core::mem::size_of::<crate::winperf::PerfInstanceDefinition>() as u64;
/// The name of the synthesised `_Total` instance, in UTF-16 units.
const TOTAL_NAME_UNITS: u64 = "_Total".len() as u64;

/// The blocks one app is served from: its installed map's and its run-time objects'.
pub(crate) const BLOCKS_PER_APP: u64 = 2;

/// What the answer bound of one object depends on: its declared geometry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub(crate) counters: u64,
    /// Bytes of one counter block.
    pub(crate) block: u64,
    /// Its instance limit, its name limit (UTF-16 units) and whether it shows `_Total`; `None`
    /// without instances.
    pub(crate) instances: Option<(u64, u64, bool)>,
}

impl Geometry {
    /// The most bytes the object takes in a Collect answer: the left column of the table in
    /// the module docs.
    fn answer_bound(self) -> u64 {
        let head = OBJECT_TYPE + COUNTER_DEFINITION * self.counters;
        let Some((max, name_len, total)) = self.instances else {
            return head + self.block;
        };
        let instance = |name_units: u64| {
            (INSTANCE_DEFINITION + (name_units + 1) * 2).next_multiple_of(8) + self.block
        };
        let total = if total { instance(TOTAL_NAME_UNITS) } else { 0 };
        head + max * instance(name_len) + total
    }
}

/// The most bytes objects of these geometries take in a Collect answer (every value bounded by
/// the reader's limits: no overflow below 2^64).
pub(crate) fn answer_bound(objects: impl IntoIterator<Item = Geometry>) -> u64 {
    objects.into_iter().map(Geometry::answer_bound).sum()
}

/// Refuses objects whose answer could be larger than the block (`file_size` bytes): their
/// regions overlap (see the module docs).
pub(crate) fn check(
    objects: impl IntoIterator<Item = Geometry>,
    file_size: u64,
) -> Result<(), ReadError> {
    let need = answer_bound(objects);
    if need > file_size {
        return Err(ReadError::Overlapping {
            need,
            size: file_size,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{COUNTER_RECORD_SIZE, OBJECT_RECORD_SIZE};
    use crate::map::{offsets, CounterDef, DetailLevel, Instances, ObjectDef};
    use crate::winperf::*;
    use proptest::prelude::*;

    /// A counter of `ty`, sharded or not, text of `text_len` units for a text type.
    fn counter(ty: u32, sharded: bool, text_len: u32) -> CounterDef {
        let c = if sharded {
            offsets::tests::sharded(ty)
        } else {
            offsets::tests::ctr(ty)
        };
        CounterDef { text_len, ..c }
    }

    /// The answer bound of an object, from the geometry the writer gives it (the reader reads
    /// the same numbers back from the object's record).
    fn bound(obj: &ObjectDef) -> u64 {
        Geometry {
            counters: obj.counters.len() as u64,
            block: offsets::counter_block_size(obj) as u64,
            instances: match obj.instances {
                Instances::None => None,
                Instances::Max { max, max_name_len } => {
                    Some((u64::from(max), u64::from(max_name_len), obj.total))
                }
            },
        }
        .answer_bound()
    }

    fn any_counter() -> impl Strategy<Value = CounterDef> {
        prop_oneof![
            (any::<bool>()).prop_map(|_| counter(PERF_COUNTER_RAWCOUNT, false, 0)),
            (any::<bool>()).prop_map(|s| counter(PERF_COUNTER_BULK_COUNT, s, 0)),
            (1u32..=128).prop_map(|n| counter(PERF_COUNTER_TEXT, false, n)),
        ]
    }

    proptest! {
        /// The table of the module docs against the writer's layout: for any object, what its
        /// answer takes is at most what the block spends on it (its records and its regions).
        #[test]
        fn an_object_answers_at_most_what_the_block_spends_on_it(
            counters in proptest::collection::vec(any_counter(), 1..12),
            // Small and large limits alike: few instances with long names leave the least room.
            instances in proptest::option::of((
                prop_oneof![1u32..=4, 1u32..=2000],
                prop_oneof![1u32..=8, 1000u32..=1024, 1u32..=1024],
            )),
            total in any::<bool>(),
            packed in any::<bool>(),
        ) {
            let counters: &'static [CounterDef] = Box::leak(counters.into_boxed_slice());
            let obj = ObjectDef {
                symbol: "O",
                offset: 0,
                texts: &[],
                detail: DetailLevel::Novice,
                default_counter: None,
                instances: instances.map_or(Instances::None, |(max, max_name_len)| {
                    Instances::Max { max, max_name_len }
                }),
                costly: false,
                total: total && instances.is_some(),
                packed,
                counters,
            };
            let spent = (OBJECT_RECORD_SIZE
                + COUNTER_RECORD_SIZE * counters.len()
                + offsets::object_regions(&obj).size) as u64;
            prop_assert!(bound(&obj) <= spent, "answer {} > block {}", bound(&obj), spent);
        }
    }

    #[test]
    fn the_largest_answer_fits_a_dword_byte_count() {
        assert_eq!(
            u64::from(crate::reader::BlockReader::MAX_COLLECT_ANSWER),
            2 << 30
        );
    }
}

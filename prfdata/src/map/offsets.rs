//! Where a map's objects and counters lie in its block: the arithmetic of the block layout
//! ([`crate::layout`]: records, sizes, alignments) applied to a map's definitions, in
//! `const` so that typed ids carry their offsets as constants.
//!
//! The writer builds a block from these offsets; the reader never uses them (it reads the
//! offsets the block's records state, and checks them).

use crate::layout::{
    align_up, CACHE_LINE, COUNTER_BLOCK_HEADER, COUNTER_RECORD_SIZE, HEADER_SIZE, MAX_MEMBERS,
    MEMBER_ENTRY_SIZE, OBJECT_RECORD_SIZE, REGION_ALIGN, SHARD_SLOTS, SLOT_HEADER_SIZE,
};
use crate::map::{CounterDef, Instances, MapDef, ObjectDef, Source};
use crate::winperf;
use prfdata_rules::histogram::Descriptor;

/// Bytes of a counter's value (0 for a size the map validation refuses).
const fn value_size(ctr: &CounterDef) -> usize {
    match ctr.value_size() {
        Some(n) => n as usize,
        None => 0,
    }
}

/// Alignment of a counter's value: its size for numbers (4 or 8), 8 for text, so that every
/// value starts on a boundary its readers can load whole.
const fn value_align(ctr: &CounterDef) -> usize {
    match winperf::counter_size(ctr.counter_type) {
        Some(0) => 1,
        Some(n) => n as usize,
        None => 8,
    }
}

/// The offset of counter `index` inside its object's counter block: after the 8-byte header,
/// each value aligned to its own size.
pub const fn counter_offset(obj: &ObjectDef, index: usize) -> usize {
    let mut off = COUNTER_BLOCK_HEADER;
    let mut i = 0;
    while i <= index && i < obj.counters.len() {
        let size = value_size(&obj.counters[i]);
        if size > 0 {
            off = align_up(off, value_align(&obj.counters[i]));
        }
        if i == index {
            return off;
        }
        off += size;
        i += 1;
    }
    off
}

/// Every counter's [`counter_offset`], in declaration order, in one pass: for code that lays
/// out all of an object's counters at run time (`counter_offset` alone walks the counters
/// before the one asked for).
pub(crate) fn counter_offsets(obj: &ObjectDef) -> impl Iterator<Item = usize> + '_ {
    let mut off = COUNTER_BLOCK_HEADER;
    obj.counters.iter().map(move |ctr| {
        let size = value_size(ctr);
        if size > 0 {
            off = align_up(off, value_align(ctr));
        }
        let at = off;
        off += size;
        at
    })
}

/// Bytes of one counter block of the object: header and values, rounded up to 8.
pub const fn counter_block_size(obj: &ObjectDef) -> usize {
    let n = obj.counters.len();
    if n == 0 {
        return COUNTER_BLOCK_HEADER;
    }
    let last = counter_offset(obj, n - 1) + value_size(&obj.counters[n - 1]);
    align_up(last, 8)
}

/// The u64 words counter `ctr` takes in each shard line: 1 for a sharded counter
/// ([`Source::Sharded`]), one per bucket for a `sharded: true` histogram
/// ([`Source::Histogram`]; its descriptor words are not sharded), 0 for any other.
pub const fn shard_words(ctr: &CounterDef) -> usize {
    match ctr.source {
        Source::Sharded => 1,
        Source::Histogram {
            geometry,
            sharded: true,
        } => geometry.buckets(),
        _ => 0,
    }
}

/// Number of sharded counters of the object: those with [`shard_words`].
pub const fn sharded_count(obj: &ObjectDef) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < obj.counters.len() {
        if shard_words(&obj.counters[i]) > 0 {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The u64 words of one shard line the object's counters take: their [`shard_words`].
pub const fn shard_line_words(obj: &ObjectDef) -> usize {
    shard_words_before(obj, obj.counters.len())
}

/// The shard words of the object's counters before counter `index`.
const fn shard_words_before(obj: &ObjectDef, index: usize) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < index && i < obj.counters.len() {
        n += shard_words(&obj.counters[i]);
        i += 1;
    }
    n
}

/// The index of counter `index`'s first u64 in a shard line, if it is sharded (it takes
/// [`shard_words`] from there).
pub const fn shard_index(obj: &ObjectDef, index: usize) -> Option<usize> {
    if shard_words(&obj.counters[index]) == 0 {
        return None;
    }
    Some(shard_words_before(obj, index))
}

/// Shard slots of the object: [`SHARD_SLOTS`] with sharded counters, else 0.
pub const fn shard_slots(obj: &ObjectDef) -> usize {
    if sharded_count(obj) == 0 {
        0
    } else {
        SHARD_SLOTS as usize
    }
}

/// Bytes of one shard line: its [`shard_line_words`], rounded up to a cache line (0 without).
pub const fn shard_line(obj: &ObjectDef) -> usize {
    align_up(shard_line_words(obj) * 8, CACHE_LINE)
}

/// Offset of shard line 0 inside a stride: the counter block rounded up to a cache line (0
/// without sharded counters).
pub const fn shard_start(obj: &ObjectDef) -> usize {
    if sharded_count(obj) == 0 {
        0
    } else {
        align_up(counter_block_size(obj), CACHE_LINE)
    }
}

/// Whether the object's counter blocks start on their own cache lines: an instanced object
/// the map does not pack, or any object with sharded counters.
pub const fn padded(obj: &ObjectDef) -> bool {
    (obj.has_instances() && !obj.packed) || sharded_count(obj) > 0
}

/// Bytes from one counter block to the next ([`LAYOUT_VERSION`](crate::layout::LAYOUT_VERSION)
/// 8): the block, its shard lines, rounded up to [`CACHE_LINE`] when [`padded`]; the block
/// alone (a multiple of 8) for a packed or global object.
pub const fn block_stride(obj: &ObjectDef) -> usize {
    let end = shard_start(obj) + shard_slots(obj) * shard_line(obj);
    let end = if end == 0 {
        counter_block_size(obj)
    } else {
        end
    };
    if padded(obj) {
        align_up(end, CACHE_LINE)
    } else {
        end
    }
}

/// Bytes of one instance slot: header and name, rounded up to 8.
pub const fn slot_size(obj: &ObjectDef) -> usize {
    match obj.instances {
        Instances::None => 0,
        Instances::Max { max_name_len, .. } => {
            SLOT_HEADER_SIZE + align_up(max_name_len as usize * 2, 8)
        }
    }
}

/// Number of counter blocks of the object: its instance limit and the retired accumulator
/// after them (block number `max`, [`LAYOUT_VERSION`](crate::layout::LAYOUT_VERSION) 6), or 1
/// without instances.
pub const fn block_count(obj: &ObjectDef) -> usize {
    match obj.instances {
        Instances::None => 1,
        Instances::Max { max, .. } => max as usize + 1,
    }
}

/// The most instances the object can hold (0 without instances).
pub const fn max_instances(obj: &ObjectDef) -> usize {
    match obj.instances {
        Instances::None => 0,
        Instances::Max { max, .. } => max as usize,
    }
}

/// The regions of one object, as offsets relative to the object's base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectRegions {
    /// Offset of the live list.
    pub live: usize,
    /// Offset of the slots.
    pub slots: usize,
    /// Offset of the shard owner words ([`shard_slots`] u64s; empty without sharded counters).
    pub owners: usize,
    /// Offset of the counter data.
    pub data: usize,
    /// Bytes of all three regions.
    pub size: usize,
}

/// The regions of an object relative to its base.
pub const fn object_regions(obj: &ObjectDef) -> ObjectRegions {
    let n = max_instances(obj);
    let live = 0;
    let slots = align_up(live + n * 4, REGION_ALIGN);
    let owners = align_up(slots + n * slot_size(obj), REGION_ALIGN);
    let data_align = if padded(obj) {
        CACHE_LINE
    } else {
        REGION_ALIGN
    };
    let data = align_up(owners + shard_slots(obj) * 8, data_align);
    // Every object's base is a multiple of CACHE_LINE, so `data` is one in the block too.
    let size = align_up(data + block_count(obj) * block_stride(obj), CACHE_LINE);
    ObjectRegions {
        live,
        slots,
        owners,
        data,
        size,
    }
}

/// Total counters of a map.
pub const fn total_counters(map: &MapDef) -> usize {
    let mut n = 0;
    let mut o = 0;
    while o < map.objects.len() {
        n += map.objects[o].counters.len();
        o += 1;
    }
    n
}

/// Offset of the first counter record.
pub const fn counters_offset(map: &MapDef) -> usize {
    HEADER_SIZE + map.objects.len() * OBJECT_RECORD_SIZE
}

/// The descriptor words of counter `ctr`: those of its geometry for a histogram's buckets
/// ([`Source::Histogram`]), 0 for any other counter.
pub const fn descriptor_words(ctr: &CounterDef) -> usize {
    match ctr.source {
        Source::Histogram { geometry, .. } => Descriptor::of(geometry).words().len(),
        _ => 0,
    }
}

/// Offset of the descriptor region: right after the counter records (a multiple of 8).
pub const fn descriptors_offset(map: &MapDef) -> usize {
    counters_offset(map) + total_counters(map) * COUNTER_RECORD_SIZE
}

/// Offset of the descriptor of counter `counter` of object `object`
/// ([`CounterRecord::histogram`](crate::layout::CounterRecord::histogram)): the histograms'
/// descriptors lie in counter order in the descriptor region, each [`descriptor_words`] long.
/// `None` for a counter that is not a histogram's buckets.
pub const fn descriptor_offset(map: &MapDef, object: usize, counter: usize) -> Option<usize> {
    if descriptor_words(&map.objects[object].counters[counter]) == 0 {
        return None;
    }
    let mut words = 0;
    let mut o = 0;
    while o < object {
        words += object_descriptor_words(&map.objects[o], map.objects[o].counters.len());
        o += 1;
    }
    words += object_descriptor_words(&map.objects[object], counter);
    Some(descriptors_offset(map) + words * 8)
}

/// The descriptor words of the object's counters before counter `end`.
const fn object_descriptor_words(obj: &ObjectDef, end: usize) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < end && i < obj.counters.len() {
        n += descriptor_words(&obj.counters[i]);
        i += 1;
    }
    n
}

/// Offset of the members table: after the counter records and the descriptor region,
/// 64-aligned.
pub const fn members_offset(map: &MapDef) -> usize {
    align_up(
        descriptors_offset(map) + descriptor_region_words(map) * 8,
        REGION_ALIGN,
    )
}

/// The words of the descriptor region: every histogram's [`descriptor_words`].
pub const fn descriptor_region_words(map: &MapDef) -> usize {
    let mut words = 0;
    let mut o = 0;
    while o < map.objects.len() {
        words += object_descriptor_words(&map.objects[o], map.objects[o].counters.len());
        o += 1;
    }
    words
}

/// Offset where the per-object regions start: after the members table, on a cache line (the
/// counter blocks of padded objects are [`CACHE_LINE`]-aligned).
pub const fn regions_offset(map: &MapDef) -> usize {
    align_up(
        members_offset(map) + MAX_MEMBERS as usize * MEMBER_ENTRY_SIZE,
        CACHE_LINE,
    )
}

/// Offset of object `index`'s regions.
pub const fn object_base(map: &MapDef, index: usize) -> usize {
    let mut off = regions_offset(map);
    let mut o = 0;
    while o < index && o < map.objects.len() {
        off += object_regions(&map.objects[o]).size;
        o += 1;
    }
    off
}

/// Offset of object `index`'s counter data: its first counter block.
pub const fn data_offset(map: &MapDef, index: usize) -> usize {
    object_base(map, index) + object_regions(&map.objects[index]).data
}

/// Bytes of the whole block.
pub const fn total_size(map: &MapDef) -> usize {
    object_base(map, map.objects.len())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::map::DetailLevel;
    use crate::winperf::*;
    use prfdata_rules::histogram::{Explicit, Geometry, LogLinear, Unit};

    /// A stored counter of type `ty`, for tests that lay objects out.
    pub(crate) const fn ctr(ty: u32) -> CounterDef {
        CounterDef {
            symbol: "C",
            offset: Some(2),
            texts: &[],
            detail: DetailLevel::Novice,
            default_scale: 0,
            counter_type: ty,
            text_len: 0,
            factor: None,
            unit: None,
            source: crate::map::Source::Stored,
            aggregate: None,
        }
    }

    /// A sharded counter of type `ty`.
    pub(crate) const fn sharded(ty: u32) -> CounterDef {
        CounterDef {
            source: Source::Sharded,
            ..ctr(ty)
        }
    }

    const fn obj(counters: &'static [CounterDef], instances: Instances) -> ObjectDef {
        ObjectDef {
            symbol: "O",
            offset: 0,
            texts: &[],
            detail: DetailLevel::Novice,
            default_counter: None,
            instances,
            costly: false,
            total: false,
            packed: false,
            counters,
        }
    }

    #[test]
    fn large_values_are_8_aligned_and_blocks_padded_to_8() {
        static C: [CounterDef; 4] = [
            ctr(PERF_COUNTER_RAWCOUNT),
            ctr(PERF_COUNTER_BULK_COUNT),
            ctr(PERF_AVERAGE_TIMER),
            ctr(PERF_AVERAGE_BASE),
        ];
        let o = obj(&C, Instances::None);
        let offsets: Vec<usize> = (0..4).map(|i| counter_offset(&o, i)).collect();
        assert_eq!(counter_offsets(&o).collect::<Vec<_>>(), offsets);
        assert_eq!(offsets, [8, 16, 24, 28]);
        assert_eq!(counter_block_size(&o), 32);
        static D: [CounterDef; 1] = [ctr(PERF_COUNTER_RAWCOUNT)];
        assert_eq!(counter_block_size(&obj(&D, Instances::None)), 16);
    }

    #[test]
    fn regions_are_cache_line_aligned_and_sized_from_the_limits() {
        static C: [CounterDef; 1] = [ctr(PERF_COUNTER_LARGE_RAWCOUNT)];
        let o = obj(
            &C,
            Instances::Max {
                max: 3,
                max_name_len: 5,
            },
        );
        assert_eq!(slot_size(&o), 64 + 16);
        let r = object_regions(&o);
        // 3 slots of 80 bytes from 64 end at 304, so the data starts on the next cache line,
        // 384; 4 blocks (3 and the retired one) of 16 bytes padded to 128.
        assert_eq!(
            r,
            ObjectRegions {
                live: 0,
                slots: 64,
                owners: 320,
                data: 384,
                size: 384 + 4 * 128
            }
        );
        assert_eq!(block_stride(&o), 128);
        let packed = ObjectDef { packed: true, ..o };
        assert_eq!(block_stride(&packed), 16, "packed: the dense stride");
        assert_eq!(object_regions(&packed).data, 320);
        assert_eq!(
            block_stride(&obj(&C, Instances::None)),
            16,
            "a global object"
        );
    }

    #[test]
    fn sharded_counters_get_a_cache_line_per_slot_after_the_block() {
        static C: [CounterDef; 3] = [
            ctr(PERF_COUNTER_RAWCOUNT),
            sharded(PERF_COUNTER_BULK_COUNT),
            sharded(PERF_100NSEC_TIMER),
        ];
        let o = obj(&C, Instances::None);
        assert_eq!(counter_block_size(&o), 32);
        assert_eq!((shard_index(&o, 0), shard_index(&o, 2)), (None, Some(1)));
        assert_eq!((shard_start(&o), shard_line(&o)), (128, 128));
        assert_eq!(block_stride(&o), 128 + SHARD_SLOTS as usize * 128);
        let r = object_regions(&o);
        assert_eq!((r.owners, r.data), (0, 128));
    }

    /// 1 µs to 1 ms within 25 % (p = 2): 37 buckets.
    static GEOMETRY: Geometry = match LogLinear::new(Unit::Microseconds, 1, 1000, 2) {
        Ok(g) => Geometry::LogLinear(g),
        Err(_) => panic!("a valid geometry"),
    };

    /// A histogram's three counters: its sum, its count and its buckets.
    pub(crate) const fn histogram(geometry: &'static Geometry, sharded: bool) -> [CounterDef; 3] {
        [
            CounterDef {
                source: Source::Sharded,
                ..ctr(PERF_AVERAGE_BULK)
            },
            CounterDef {
                offset: None,
                source: Source::HistogramCount,
                ..ctr(PERF_AVERAGE_BASE)
            },
            CounterDef {
                offset: None,
                source: Source::Histogram { geometry, sharded },
                ..ctr(PERF_PRFDATA_HISTOGRAM)
            },
        ]
    }

    #[test]
    fn a_histogram_value_is_its_descriptor_and_buckets_and_its_shard_words_follow_the_sum() {
        let n = GEOMETRY.buckets();
        assert_eq!(n, 37);
        let [sum, base, buckets] = histogram(&GEOMETRY, true);
        static C: [CounterDef; 5] = {
            let [sum, base, buckets] = histogram(&GEOMETRY, true);
            [
                ctr(PERF_COUNTER_RAWCOUNT),
                sum,
                base,
                buckets,
                sharded(PERF_COUNTER_BULK_COUNT),
            ]
        };
        assert_eq!(buckets.value_size(), Some(8 * (2 + 37)));
        assert_eq!(
            (shard_words(&sum), shard_words(&base), shard_words(&buckets)),
            (1, 0, n)
        );
        let o = obj(&C, Instances::None);
        // 8 header, raw 8, sum 16, base 24, buckets 8-aligned at 32 (2 + 37 words), bulk after.
        let offsets: Vec<usize> = counter_offsets(&o).collect();
        assert_eq!(offsets, [8, 16, 24, 32, 32 + 8 * 39]);
        assert_eq!(counter_block_size(&o), 32 + 8 * 40);
        let first = |i| shard_index(&o, i);
        assert_eq!(
            (first(0), first(1), first(2), first(3), first(4)),
            (None, Some(0), None, Some(1), Some(1 + n))
        );
        assert_eq!(shard_line_words(&o), 2 + n);
        assert_eq!(
            shard_line(&o),
            384,
            "39 words round up to three 128-byte lines"
        );
        let unsharded: [CounterDef; 3] = histogram(&GEOMETRY, false);
        assert_eq!(shard_words(&unsharded[2]), 0);
    }

    #[test]
    fn descriptors_lie_after_the_counter_records_in_counter_order_before_the_members() {
        static EXPLICIT: Geometry = match Explicit::new(Unit::Bytes, &[10, 100, 1000]) {
            Ok(g) => Geometry::Explicit(g),
            Err(_) => panic!("valid bounds"),
        };
        static A: [CounterDef; 4] = {
            let [sum, base, buckets] = histogram(&GEOMETRY, false);
            [ctr(PERF_COUNTER_RAWCOUNT), sum, base, buckets]
        };
        static B: [CounterDef; 3] = histogram(&EXPLICIT, true);
        static O: [ObjectDef; 2] = [
            ObjectDef {
                symbol: "A",
                ..obj(&A, Instances::None)
            },
            ObjectDef {
                symbol: "B",
                offset: 10,
                ..obj(&B, Instances::None)
            },
        ];
        let map = MapDef {
            app: "H",
            objects: &O,
        };
        let records = counters_offset(&map) + 7 * COUNTER_RECORD_SIZE;
        assert_eq!(descriptors_offset(&map), records);
        assert_eq!(
            descriptor_offset(&map, 0, 2),
            None,
            "the base has no descriptor"
        );
        assert_eq!(descriptor_offset(&map, 0, 3), Some(records));
        // The log-linear descriptor is 2 words; the explicit one 2 + 3 bounds.
        assert_eq!(descriptor_offset(&map, 1, 2), Some(records + 16));
        assert_eq!(
            members_offset(&map),
            align_up(records + 16 + 40, REGION_ALIGN)
        );
        assert!(members_offset(&map) > records + 56 - 1);
    }
}

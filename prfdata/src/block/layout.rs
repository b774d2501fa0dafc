//! The raw layout of a shared counter block: records, offsets, and their computation from a map.
//!
//! A block describes itself, so one generic provider library serves every application (CPrfData
//! compiled the map into each application's DLL instead):
//!
//! ```text
//! offset 0    BlockHeader (256 bytes)    magic, layout version, sizes, owner pid + start time,
//!                                        generation, the consistency sequence, the Optex
//!        256  ObjectRecord × objects     128 bytes each: definitions + instance bookkeeping
//!             CounterRecord × counters   32 bytes each, in object order
//!             (padding to 64)
//!             per object, each region 64-aligned:
//!               live list   u32 × max     slot numbers of live instances, dense
//!               slots       SlotHeader (64 bytes) + UTF-16 name, × max
//!               data        counter block × max (or × 1 without instances)
//! ```
//!
//! A counter block is laid out as perflib's `PERF_COUNTER_BLOCK`: a `u32` ByteLength (padded to
//! 8 bytes), then each counter at its `CounterOffset`, aligned to its size, so that 64-bit values
//! are 8-aligned, one instance's counters are contiguous, and a provider copies blocks as they are.
//!
//! Every field that changes after creation is reached as an atomic through its offset (the
//! `*_OFFSET` constants below); the rest is written once, before the block is published.
//! Everything here is also read by other processes, which treat it as untrusted input.

use core::mem::{offset_of, size_of};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::map::{Instances, MapDef, ObjectDef};
use crate::winperf;

/// The block's magic: the first eight bytes of every block.
pub const MAGIC: [u8; 8] = *b"PRFDATA\0";
/// The layout version this crate writes and reads; a block of another version is refused.
///
/// - 1: the first layout.
/// - 2: the [`Optex`](crate::Optex)'s 64 bytes changed meaning (its state became one 64-bit
///   word holding the owner's pid, the WAITERS bit and the owner's start tag, and its
///   `recoveries` count moved to offset 8). A version-1 process and a version-2 process would
///   not exclude each other through the same bytes.
/// - 3: the [`SlotHeader`] grew from 32 to 64 bytes: it keeps the count of the instance's live
///   children (so that removing a parent that still has children is refused in O(1)) and the
///   generation of its parent (so that a child never names another instance that reused its
///   parent's slot), then reserved zeroed room. The object timer ([`BlockHeader::timer_freq`])
///   became the wall clock in FILETIME units (see [`crate::clock`]), where it was
///   `CLOCK_MONOTONIC` in the same 100 ns units.
pub const LAYOUT_VERSION: u32 = 3;
/// Size of [`BlockHeader`].
pub const HEADER_SIZE: usize = 256;
/// Size of [`ObjectRecord`].
pub const OBJECT_RECORD_SIZE: usize = 128;
/// Size of [`CounterRecord`].
pub const COUNTER_RECORD_SIZE: usize = 32;
/// Size of [`SlotHeader`], before the instance name.
pub const SLOT_HEADER_SIZE: usize = 64;
/// Bytes before the first counter of a counter block: ByteLength and padding to 8.
pub const COUNTER_BLOCK_HEADER: usize = 8;
/// Alignment of every region: a cache line, so the regions of different objects never share one.
pub const REGION_ALIGN: usize = 64;
/// The largest block prfdata creates or opens: 1 GiB.
///
/// A map whose block would be larger does not compile
/// ([`MapError::BlockTooLarge`](crate::map::MapError::BlockTooLarge)); a file larger than this
/// at a block's path is not a block ([`Error::TooLarge`](crate::Error::TooLarge)) and is never
/// mapped. Activation reserves every page of a block in its tmpfs (so that a full `/dev/shm`
/// fails the activation rather than the app later), so a block costs its whole size in memory
/// from the start: a counter block of 64 bytes for each of 1024 instances with 64-unit names
/// takes about 260 KiB, and this cap is far above what counters need.
pub const MAX_BLOCK_SIZE: u64 = 1 << 30;

/// `CounterRecord::name_offset` of a base counter, which has no name of its own.
pub const NO_NAME: u32 = u32::MAX;

/// `ObjectRecord::flags`: the object has instances.
pub const OBJECT_INSTANCED: u32 = 1;
/// `ObjectRecord::flags`: the object is only collected by a "Costly" query.
pub const OBJECT_COSTLY: u32 = 2;

/// `SlotHeader::state` of a free slot.
pub const SLOT_FREE: u32 = 0;
/// `SlotHeader::state` of a live instance: written last when adding, first when removing.
pub const SLOT_LIVE: u32 = 1;

/// The block header (256 bytes at offset 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct BlockHeader {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`LAYOUT_VERSION`].
    pub layout_version: u32,
    /// [`HEADER_SIZE`].
    pub header_size: u32,
    /// Bytes of the whole block; the file is exactly this long.
    pub total_size: u64,
    /// Pid of the process that activated the block.
    pub owner_pid: u32,
    /// Number of object records.
    pub num_objects: u32,
    /// Start time of the owner process (clock ticks since boot), to tell a reused pid.
    pub owner_start_time: u64,
    /// Number of counter records.
    pub num_counters: u32,
    /// Offset of the first object record.
    pub objects_offset: u32,
    /// Offset of the first counter record.
    pub counters_offset: u32,
    /// Explicit padding.
    pub _pad0: u32,
    /// Ticks per second of the object timer (`PERF_OBJECT_TIMER` counters, each object's
    /// PerfTime): [`clock::OBJECT_FREQUENCY`](crate::clock::OBJECT_FREQUENCY), the wall clock in
    /// FILETIME units, as NT's Process object. Readers refuse any other value.
    pub timer_freq: u64,
    /// The consistency sequence (atomic): odd while a writer holding the optex changes the
    /// instance tables or holds `lock_ctrs`; readers retry when it is odd or has moved.
    pub seq: u64,
    /// A number unique to this activation: a reader that sees it change knows the block was
    /// replaced under it.
    pub generation: u64,
    /// The app name, UTF-8, NUL-padded.
    pub app_name: [u8; 64],
    /// Reserved, zero.
    pub _reserved: [u8; 48],
    /// The [`Optex`](crate::Optex) guarding layout changes (atomic, 64 bytes).
    pub optex: [u8; 64],
}

/// Offset of [`BlockHeader::seq`].
pub const SEQ_OFFSET: usize = offset_of!(BlockHeader, seq);
/// Offset of [`BlockHeader::optex`].
pub const OPTEX_OFFSET: usize = offset_of!(BlockHeader, optex);

/// One object's record (128 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ObjectRecord {
    /// Symbolic offset: name index = First Counter + this, help index = First Help + this.
    pub name_offset: u32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
    /// Index of the default counter, or -1.
    pub default_counter: i32,
    /// Number of counters (their records are consecutive).
    pub num_counters: u32,
    /// Index of the object's first counter record.
    pub first_counter: u32,
    /// [`OBJECT_INSTANCED`] | [`OBJECT_COSTLY`].
    pub flags: u32,
    /// Most live instances (0 without instances).
    pub max_instances: u32,
    /// Longest instance name in UTF-16 units (0 without instances).
    pub max_name_len: u32,
    /// Bytes of one counter block (a multiple of 8).
    pub counter_block_size: u32,
    /// Bytes of one slot (a multiple of 8).
    pub slot_size: u32,
    /// Offset of the live list.
    pub live_offset: u64,
    /// Offset of the slots.
    pub slots_offset: u64,
    /// Offset of the counter data.
    pub data_offset: u64,
    /// Live instances (atomic): the length of the live list.
    pub live_count: u32,
    /// Head of the free list (atomic): slot number + 1, 0 when empty.
    pub free_head: u32,
    /// Slots ever used (atomic): slots at or above it are free and untouched.
    pub high_water: u32,
    /// Explicit padding.
    pub _pad: u32,
    /// Reserved, zero.
    pub _reserved: [u8; 48],
}

/// Offset of [`ObjectRecord::live_count`] inside the record.
pub const LIVE_COUNT_OFFSET: usize = offset_of!(ObjectRecord, live_count);
/// Offset of [`ObjectRecord::free_head`] inside the record.
pub const FREE_HEAD_OFFSET: usize = offset_of!(ObjectRecord, free_head);
/// Offset of [`ObjectRecord::high_water`] inside the record.
pub const HIGH_WATER_OFFSET: usize = offset_of!(ObjectRecord, high_water);

/// One counter's record (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CounterRecord {
    /// Symbolic offset, or [`NO_NAME`] for a base.
    pub name_offset: u32,
    /// The winperf.h counter type.
    pub counter_type: u32,
    /// Bytes of the value.
    pub size: u32,
    /// Offset of the value inside the counter block (`CounterOffset`).
    pub block_offset: u32,
    /// `DefaultScale`.
    pub default_scale: i32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
    /// Reserved, zero.
    pub _reserved: [u32; 2],
}

/// The fixed part of an instance slot (64 bytes); the UTF-16 name follows, padded to 8.
/// Every field is reached atomically.
///
/// ```text
///  0 state              4 live_pos           8 next_free         12 unique_id
/// 16 parent_object     20 parent_slot       24 name_len          28 generation
/// 32 parent_generation 36 children          40 reserved, zero (24 bytes)
/// ```
///
/// A child names its parent by object, slot *and* generation: a slot reused by another instance
/// has another generation, so a stale link never resolves to the wrong parent. `children` counts
/// the live instances whose parent link names this slot and generation; the writer keeps it
/// (adding and removing children, inside the write section) and recomputes it when it recovers
/// the block from a writer that died ([`LAYOUT_VERSION`] 3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SlotHeader {
    /// [`SLOT_FREE`] or [`SLOT_LIVE`].
    pub state: u32,
    /// Position in the live list while live.
    pub live_pos: u32,
    /// Next free slot + 1 while free (0: end of list).
    pub next_free: u32,
    /// Unique id, or `PERF_NO_UNIQUE_ID` (-1).
    pub unique_id: i32,
    /// Parent object index + 1, or 0 without a parent.
    pub parent_object: u32,
    /// Parent slot number.
    pub parent_slot: u32,
    /// Name length in UTF-16 units, NUL not counted.
    pub name_len: u32,
    /// Incremented each time the slot is given to a new instance.
    pub generation: u32,
    /// The parent's [`generation`](SlotHeader::generation) when this instance was added (0
    /// without a parent).
    pub parent_generation: u32,
    /// Live instances whose parent is this one.
    pub children: u32,
    /// Reserved, zero.
    pub _reserved: [u32; 6],
}

/// Offsets of the [`SlotHeader`] fields.
pub mod slot {
    use super::*;
    /// [`SlotHeader::state`].
    pub const STATE: usize = offset_of!(SlotHeader, state);
    /// [`SlotHeader::live_pos`].
    pub const LIVE_POS: usize = offset_of!(SlotHeader, live_pos);
    /// [`SlotHeader::next_free`].
    pub const NEXT_FREE: usize = offset_of!(SlotHeader, next_free);
    /// [`SlotHeader::unique_id`].
    pub const UNIQUE_ID: usize = offset_of!(SlotHeader, unique_id);
    /// [`SlotHeader::parent_object`].
    pub const PARENT_OBJECT: usize = offset_of!(SlotHeader, parent_object);
    /// [`SlotHeader::parent_slot`].
    pub const PARENT_SLOT: usize = offset_of!(SlotHeader, parent_slot);
    /// [`SlotHeader::name_len`].
    pub const NAME_LEN: usize = offset_of!(SlotHeader, name_len);
    /// [`SlotHeader::generation`].
    pub const GENERATION: usize = offset_of!(SlotHeader, generation);
    /// [`SlotHeader::parent_generation`].
    pub const PARENT_GENERATION: usize = offset_of!(SlotHeader, parent_generation);
    /// [`SlotHeader::children`].
    pub const CHILDREN: usize = offset_of!(SlotHeader, children);
}

const _: () = {
    assert!(size_of::<BlockHeader>() == HEADER_SIZE);
    assert!(OPTEX_OFFSET.is_multiple_of(64));
    assert!(SEQ_OFFSET.is_multiple_of(8));
    assert!(size_of::<ObjectRecord>() == OBJECT_RECORD_SIZE);
    assert!(LIVE_COUNT_OFFSET == 64);
    assert!(size_of::<CounterRecord>() == COUNTER_RECORD_SIZE);
    assert!(size_of::<SlotHeader>() == SLOT_HEADER_SIZE);
    assert!(slot::GENERATION == 28 && slot::PARENT_GENERATION == 32 && slot::CHILDREN == 36);
    assert!(SLOT_HEADER_SIZE.is_multiple_of(8));
};

// ---------------------------------------------------------------------------------------------
// Computing the layout from a map (const, so typed ids carry their offsets as constants).
// ---------------------------------------------------------------------------------------------

/// Rounds `n` up to a multiple of `align` (a power of two).
pub const fn align_up(n: usize, align: usize) -> usize {
    (n + align - 1) & !(align - 1)
}

/// Bytes of a counter's value (0 for a size the map validation refuses).
const fn value_size(ctr: &crate::map::CounterDef) -> usize {
    match ctr.value_size() {
        Some(n) => n as usize,
        None => 0,
    }
}

/// Alignment of a counter's value: its size for numbers (4 or 8), 8 for text, so that every
/// value starts on a boundary its readers can load whole.
const fn value_align(ctr: &crate::map::CounterDef) -> usize {
    match winperf::counter_size(ctr.counter_type) {
        Some(0) => 1,
        Some(n) => n as usize,
        None => 8,
    }
}

/// The offset of counter `index` inside its object's counter block: after the 8-byte header,
/// each value aligned to its own size.
///
/// # Examples
///
/// ```
/// use prfdata::block::layout::counter_offset;
/// use prfdata::map::{CounterDef, DetailLevel, Instances, ObjectDef};
/// use prfdata::winperf::{PERF_COUNTER_RAWCOUNT, PERF_COUNTER_BULK_COUNT};
/// const fn ctr(ty: u32) -> CounterDef {
///     CounterDef { symbol: "C", offset: Some(2), texts: &[], detail: DetailLevel::Novice,
///                  default_scale: 0, counter_type: ty, text_len: 0 }
/// }
/// const OBJ: ObjectDef = ObjectDef { symbol: "O", offset: 0, texts: &[],
///     detail: DetailLevel::Novice, default_counter: None, instances: Instances::None,
///     costly: false, counters: &[ctr(PERF_COUNTER_RAWCOUNT), ctr(PERF_COUNTER_BULK_COUNT)] };
/// assert_eq!(counter_offset(&OBJ, 0), 8);
/// assert_eq!(counter_offset(&OBJ, 1), 16); // 8-aligned after the 4-byte value at 8
/// ```
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

/// Bytes of one counter block of the object: header and values, rounded up to 8.
pub const fn counter_block_size(obj: &ObjectDef) -> usize {
    let n = obj.counters.len();
    if n == 0 {
        return COUNTER_BLOCK_HEADER;
    }
    let last = counter_offset(obj, n - 1) + value_size(&obj.counters[n - 1]);
    align_up(last, 8)
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

/// Number of counter blocks of the object: its instance limit, or 1 without instances.
pub const fn block_count(obj: &ObjectDef) -> usize {
    match obj.instances {
        Instances::None => 1,
        Instances::Max { max, .. } => max as usize,
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
    let data = align_up(slots + n * slot_size(obj), REGION_ALIGN);
    let size = align_up(
        data + block_count(obj) * counter_block_size(obj),
        REGION_ALIGN,
    );
    ObjectRegions {
        live,
        slots,
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

/// Offset where the per-object regions start.
pub const fn regions_offset(map: &MapDef) -> usize {
    align_up(
        counters_offset(map) + total_counters(map) * COUNTER_RECORD_SIZE,
        REGION_ALIGN,
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
///
/// # Examples
///
/// ```
/// use prfdata::block::layout::{total_size, HEADER_SIZE};
/// use prfdata::map::{CounterDef, DetailLevel, Instances, MapDef, ObjectDef};
/// const CTR: CounterDef = CounterDef { symbol: "C", offset: Some(2), texts: &[],
///     detail: DetailLevel::Novice, default_scale: 0,
///     counter_type: prfdata::winperf::PERF_COUNTER_RAWCOUNT, text_len: 0 };
/// const MAP: MapDef = MapDef { app: "A", objects: &[ObjectDef { symbol: "O", offset: 0,
///     texts: &[], detail: DetailLevel::Novice, default_counter: None,
///     instances: Instances::None, costly: false, counters: &[CTR] }] };
/// // header, one object record, one counter record, one 64-byte data region
/// assert_eq!(total_size(&MAP), HEADER_SIZE + 128 + 64 + 64);
/// ```
pub const fn total_size(map: &MapDef) -> usize {
    object_base(map, map.objects.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{CounterDef, DetailLevel};
    use crate::winperf::*;

    const fn ctr(ty: u32) -> CounterDef {
        CounterDef {
            symbol: "C",
            offset: Some(2),
            texts: &[],
            detail: DetailLevel::Novice,
            default_scale: 0,
            counter_type: ty,
            text_len: 0,
        }
    }

    fn obj(counters: &'static [CounterDef], instances: Instances) -> ObjectDef {
        ObjectDef {
            symbol: "O",
            offset: 0,
            texts: &[],
            detail: DetailLevel::Novice,
            default_counter: None,
            instances,
            costly: false,
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
        // 3 slots of 80 bytes from 64 end at 304, so the data starts at 320; 3 blocks of 16.
        assert_eq!(
            r,
            ObjectRegions {
                live: 0,
                slots: 64,
                data: 320,
                size: 384
            }
        );
    }
}

//! Structure-aware block inputs: a real block ([`crate::env::templates`]) with typed edits of
//! its fields, made with the `arbitrary` crate from the fuzzer's bytes.
//!
//! Raw byte mutation rarely gets past a block's header checks (magic, version, total size equal
//! to the file's, offsets that agree); these edits name the fields a hostile or broken writer
//! would change (header counts and offsets, object records, counter records, slot headers,
//! live-list entries, name units, counter words) and the values that probe their checks (0, 1,
//! all ones, all ones less a little, the value ± a little, one bit flipped, any value, the file's length ± a little),
//! so the fuzzer spends its time inside otherwise valid blocks. Offsets are computed from the
//! template's own records, before any edit.

use arbitrary::Arbitrary;
use core::mem::offset_of;
use zerocopy::FromBytes;

use prfdata::layout::{
    BlockHeader, CounterRecord, ObjectRecord, SlotHeader, COUNTER_RECORD_SIZE, OBJECT_RECORD_SIZE,
    SLOT_HEADER_SIZE,
};

/// One structure-aware input: a template, edits, and a change of length.
#[derive(Arbitrary, Debug, Clone)]
pub struct BlockInput {
    /// Which template (modulo their number).
    pub template: u8,
    /// The edits, in order.
    pub edits: Vec<Edit>,
    /// The file's length afterwards.
    pub length: Length,
}

/// The file's length after the edits.
#[derive(Arbitrary, Debug, Clone)]
pub enum Length {
    /// As the template.
    Keep,
    /// Cut to `to` (modulo the length); with `fix`, the header's total size says so too, so the
    /// block still opens and its regions must be checked against the shorter file.
    Cut {
        /// The new length, modulo the old.
        to: u32,
        /// Whether the header's total size follows.
        fix: bool,
    },
    /// Grown by `by` zero bytes; with `fix`, the header's total size follows.
    Grow {
        /// Bytes added.
        by: u16,
        /// Whether the header's total size follows.
        fix: bool,
    },
}

/// A new value for a field, from its current value.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Value {
    /// 0.
    Zero,
    /// 1.
    One,
    /// All bits set.
    AllOnes,
    /// All bits set, less this much (the largest values a sum can overflow from).
    Top(u8),
    /// The current value plus this much (wrapping).
    Plus(u8),
    /// The current value minus this much (wrapping).
    Minus(u8),
    /// The current value with this bit (modulo the width) flipped.
    Flip(u8),
    /// The file's length plus this much (for offsets and sizes).
    FileLen(i16),
    /// Any value (truncated to the width).
    Set(u64),
}

/// A header field.
#[derive(Arbitrary, Debug, Clone, Copy)]
#[allow(missing_docs)]
pub enum HeaderField {
    LayoutVersion,
    HeaderSize,
    TotalSize,
    OwnerPid,
    NumObjects,
    OwnerStartTime,
    NumCounters,
    ObjectsOffset,
    CountersOffset,
    TimerFreq,
    Seq,
    Generation,
    /// A word of the optex (modulo its 8 words).
    Optex(u8),
    /// The on-demand request generation (layout 4).
    OdRequest,
    /// The on-demand served generation (layout 4).
    OdServed,
    /// The objects of the on-demand request (layout 4).
    OdObjects,
    /// The members table's offset (layout 7).
    MembersOffset,
    /// The members table's length (layout 7).
    MaxMembers,
    /// The word the last member sets before it removes the block (layout 7).
    Closed,
}

/// An object record field.
#[derive(Arbitrary, Debug, Clone, Copy)]
#[allow(missing_docs)]
pub enum ObjectField {
    NameOffset,
    DetailLevel,
    DefaultCounter,
    NumCounters,
    FirstCounter,
    Flags,
    MaxInstances,
    MaxNameLen,
    CounterBlockSize,
    SlotSize,
    LiveOffset,
    SlotsOffset,
    DataOffset,
    LiveCount,
    FreeHead,
    HighWater,
    /// The distance between counter blocks (layout 8).
    BlockStride,
    /// The shard geometry (layout 8).
    ShardStart,
    ShardLine,
    ShardSlots,
}

/// A counter record field.
#[derive(Arbitrary, Debug, Clone, Copy)]
#[allow(missing_docs)]
pub enum CounterField {
    NameOffset,
    CounterType,
    Size,
    BlockOffset,
    DefaultScale,
    DetailLevel,
    /// The Windows 95 stat servers' `PSTF_*` flags (layout 4).
    StatFlags,
    /// The scale factor (layout 4).
    Factor,
    /// Two of a sum's parts (`u16` indexes, modulo its 4 pairs; layout 4).
    Parts(u8),
    /// How many parts a sum has (layout 4).
    PartCount,
    /// A sharded counter's word in the shard lines (layout 8).
    Shard,
}

/// A slot header field.
#[derive(Arbitrary, Debug, Clone, Copy)]
#[allow(missing_docs)]
pub enum SlotField {
    State,
    LivePos,
    NextFree,
    UniqueId,
    ParentObject,
    ParentSlot,
    NameLen,
    Generation,
    ParentGeneration,
    Children,
}

/// A UTF-16 unit of an instance name.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum NameUnit {
    /// A high surrogate with no low one after it.
    LoneHigh,
    /// A low surrogate alone.
    LoneLow,
    /// NUL inside the name.
    Nul,
    /// `\`, `(`, `)`, `/`, `#`, `*`: the characters of PDH paths.
    PathChar(u8),
    /// Any unit.
    Any(u16),
}

/// One edit. Object, counter, slot, position and word numbers are taken modulo what the
/// template has.
#[derive(Arbitrary, Debug, Clone)]
pub enum Edit {
    /// A header field.
    Header(HeaderField, Value),
    /// A field of an object record.
    Object(u8, ObjectField, Value),
    /// A field of a counter record.
    Counter(u8, CounterField, Value),
    /// A field of an instance slot of an instanced object.
    Slot(u8, u16, SlotField, Value),
    /// An entry of an object's live list.
    Live(u8, u16, Value),
    /// A unit of an instance name.
    Name(u8, u16, u8, NameUnit),
    /// A word of a counter block (an instance's, or the global one).
    Data(u8, u16, u8, Value),
    /// Raw bytes anywhere (offset modulo the length).
    Bytes(u32, Vec<u8>),
}

/// The template's layout, read from its own records.
struct Layout {
    objects: Vec<ObjectRecord>,
    objects_offset: usize,
    counters: usize,
    counters_offset: usize,
}

impl Layout {
    fn of(block: &[u8]) -> Layout {
        let header = BlockHeader::read_from_prefix(block)
            .map(|(h, _)| h)
            .expect("a template has a header");
        let objects_offset = header.objects_offset as usize;
        let objects = (0..header.num_objects as usize)
            .map(|k| {
                let at = objects_offset + k * OBJECT_RECORD_SIZE;
                ObjectRecord::read_from_prefix(&block[at..])
                    .map(|(r, _)| r)
                    .expect("a template's object record")
            })
            .collect();
        Layout {
            objects,
            objects_offset,
            counters: header.num_counters as usize,
            counters_offset: header.counters_offset as usize,
        }
    }
}

/// Builds the block bytes `input` describes.
///
/// # Examples
///
/// ```
/// use prfdata_fuzz::mutation::{apply, BlockInput, Edit, HeaderField, Length, Value};
/// let input = BlockInput {
///     template: 1,
///     edits: vec![Edit::Header(HeaderField::NumObjects, Value::Zero)],
///     length: Length::Keep,
/// };
/// let block = apply(&input);
/// assert_eq!(&block[28..32], &[0, 0, 0, 0]);
/// ```
pub fn apply(input: &BlockInput) -> Vec<u8> {
    let templates = crate::env::templates();
    let template = &templates[input.template as usize % templates.len()];
    let mut block = template.bytes.clone();
    let layout = Layout::of(&block);
    for edit in &input.edits {
        if let Some((at, width, value)) = target(&layout, &block, edit) {
            set(&mut block, at, width, value);
        } else if let Edit::Bytes(offset, bytes) = edit {
            let at = *offset as usize % block.len();
            let n = bytes.len().min(block.len() - at);
            block[at..at + n].copy_from_slice(&bytes[..n]);
        } else if let Edit::Name(o, s, u, unit) = edit {
            name_unit(&layout, &mut block, (*o, *s, *u), *unit);
        }
    }
    let total = offset_of!(BlockHeader, total_size);
    match input.length {
        Length::Keep => {}
        Length::Cut { to, fix } => {
            let len = to as usize % block.len();
            block.truncate(len);
            if fix {
                set(&mut block, total, 8, Value::Set(len as u64));
            }
        }
        Length::Grow { by, fix } => {
            block.resize(block.len() + usize::from(by), 0);
            if fix {
                let len = block.len() as u64;
                set(&mut block, total, 8, Value::Set(len));
            }
        }
    }
    block
}

/// Where a field edit writes: offset, width, value.
fn target(layout: &Layout, block: &[u8], edit: &Edit) -> Option<(usize, usize, Value)> {
    let pick = |n: u8, count: usize| (count > 0).then(|| n as usize % count);
    let object = |n: u8| pick(n, layout.objects.len()).map(|k| (k, &layout.objects[k]));
    Some(match *edit {
        Edit::Header(field, value) => {
            let (at, width) = header_field(field);
            (at, width, value)
        }
        Edit::Object(n, field, value) => {
            let (k, _) = object(n)?;
            let (at, width) = object_field(field);
            (
                layout.objects_offset + k * OBJECT_RECORD_SIZE + at,
                width,
                value,
            )
        }
        Edit::Counter(n, field, value) => {
            let i = pick(n, layout.counters)?;
            let (at, width) = counter_field(field);
            (
                layout.counters_offset + i * COUNTER_RECORD_SIZE + at,
                width,
                value,
            )
        }
        Edit::Slot(n, s, field, value) => {
            let (_, rec) = object(n)?;
            let slot = slot_at(rec, s)?;
            let (at, width) = slot_field(field);
            (slot + at, width, value)
        }
        Edit::Live(n, pos, value) => {
            let (_, rec) = object(n)?;
            let pos = pick_u16(pos, rec.max_instances)?;
            (rec.live_offset as usize + 4 * pos, 4, value)
        }
        Edit::Data(n, s, word, value) => {
            let (_, rec) = object(n)?;
            // The whole stride: the counter block, padding and shard lines (layout 8).
            let stride = rec.block_stride as usize;
            let blocks = if rec.max_instances == 0 {
                1
            } else {
                rec.max_instances
            };
            let slot = pick_u16(s, blocks)?;
            let word = pick(word, stride / 8)?;
            (
                rec.data_offset as usize + slot * stride + 8 * word,
                8,
                value,
            )
        }
        Edit::Name(..) | Edit::Bytes(..) => return None,
    })
    .filter(|&(at, width, _)| at + width <= block.len())
}

fn pick_u16(n: u16, count: u32) -> Option<usize> {
    (count > 0).then(|| n as usize % count as usize)
}

fn slot_at(rec: &ObjectRecord, s: u16) -> Option<usize> {
    let slot = pick_u16(s, rec.max_instances)?;
    Some(rec.slots_offset as usize + slot * rec.slot_size as usize)
}

fn name_unit(layout: &Layout, block: &mut [u8], (n, s, u): (u8, u16, u8), unit: NameUnit) {
    let Some(rec) =
        (!layout.objects.is_empty()).then(|| &layout.objects[n as usize % layout.objects.len()])
    else {
        return;
    };
    let (Some(slot), true) = (slot_at(rec, s), rec.max_name_len > 0) else {
        return;
    };
    let at = slot + SLOT_HEADER_SIZE + 2 * (u as usize % rec.max_name_len as usize);
    let value: u16 = match unit {
        NameUnit::LoneHigh => 0xD800,
        NameUnit::LoneLow => 0xDC00,
        NameUnit::Nul => 0,
        NameUnit::PathChar(c) => [b'\\', b'(', b')', b'/', b'#', b'*'][c as usize % 6].into(),
        NameUnit::Any(v) => v,
    };
    if let Some(dst) = block.get_mut(at..at + 2) {
        dst.copy_from_slice(&value.to_le_bytes());
    }
}

fn set(block: &mut [u8], at: usize, width: usize, value: Value) {
    let len = block.len() as u64;
    let Some(bytes) = block.get_mut(at..at + width) else {
        return;
    };
    let mut word = [0u8; 8];
    word[..width].copy_from_slice(bytes);
    let current = u64::from_le_bytes(word);
    let bits = 8 * width as u32;
    let new = match value {
        Value::Zero => 0,
        Value::One => 1,
        Value::AllOnes => u64::MAX,
        Value::Top(k) => (u64::MAX >> (64 - bits)) - u64::from(k),
        Value::Plus(k) => current.wrapping_add(k.into()),
        Value::Minus(k) => current.wrapping_sub(k.into()),
        Value::Flip(bit) => current ^ (1 << (u32::from(bit) % bits)),
        Value::FileLen(d) => len.wrapping_add_signed(d.into()),
        Value::Set(v) => v,
    };
    bytes.copy_from_slice(&new.to_le_bytes()[..width]);
}

fn header_field(field: HeaderField) -> (usize, usize) {
    use HeaderField::*;
    let of = |at: usize, width: usize| (at, width);
    match field {
        LayoutVersion => of(offset_of!(BlockHeader, layout_version), 4),
        HeaderSize => of(offset_of!(BlockHeader, header_size), 4),
        TotalSize => of(offset_of!(BlockHeader, total_size), 8),
        OwnerPid => of(offset_of!(BlockHeader, owner_pid), 4),
        NumObjects => of(offset_of!(BlockHeader, num_objects), 4),
        OwnerStartTime => of(offset_of!(BlockHeader, owner_start_time), 8),
        NumCounters => of(offset_of!(BlockHeader, num_counters), 4),
        ObjectsOffset => of(offset_of!(BlockHeader, objects_offset), 4),
        CountersOffset => of(offset_of!(BlockHeader, counters_offset), 4),
        TimerFreq => of(offset_of!(BlockHeader, timer_freq), 8),
        Seq => of(offset_of!(BlockHeader, seq), 8),
        Generation => of(offset_of!(BlockHeader, generation), 8),
        Optex(w) => of(offset_of!(BlockHeader, optex) + 8 * (w as usize % 8), 8),
        OdRequest => of(offset_of!(BlockHeader, od_request), 4),
        OdServed => of(offset_of!(BlockHeader, od_served), 4),
        OdObjects => of(offset_of!(BlockHeader, od_objects), 8),
        MembersOffset => of(offset_of!(BlockHeader, members_offset), 4),
        MaxMembers => of(offset_of!(BlockHeader, max_members), 4),
        Closed => of(offset_of!(BlockHeader, closed), 4),
    }
}

fn object_field(field: ObjectField) -> (usize, usize) {
    use ObjectField::*;
    match field {
        NameOffset => (offset_of!(ObjectRecord, name_offset), 4),
        DetailLevel => (offset_of!(ObjectRecord, detail_level), 4),
        DefaultCounter => (offset_of!(ObjectRecord, default_counter), 4),
        NumCounters => (offset_of!(ObjectRecord, num_counters), 4),
        FirstCounter => (offset_of!(ObjectRecord, first_counter), 4),
        Flags => (offset_of!(ObjectRecord, flags), 4),
        MaxInstances => (offset_of!(ObjectRecord, max_instances), 4),
        MaxNameLen => (offset_of!(ObjectRecord, max_name_len), 4),
        CounterBlockSize => (offset_of!(ObjectRecord, counter_block_size), 4),
        SlotSize => (offset_of!(ObjectRecord, slot_size), 4),
        LiveOffset => (offset_of!(ObjectRecord, live_offset), 8),
        SlotsOffset => (offset_of!(ObjectRecord, slots_offset), 8),
        DataOffset => (offset_of!(ObjectRecord, data_offset), 8),
        LiveCount => (offset_of!(ObjectRecord, live_count), 4),
        FreeHead => (offset_of!(ObjectRecord, free_head), 4),
        HighWater => (offset_of!(ObjectRecord, high_water), 4),
        BlockStride => (offset_of!(ObjectRecord, block_stride), 4),
        ShardStart => (offset_of!(ObjectRecord, shard_start), 4),
        ShardLine => (offset_of!(ObjectRecord, shard_line), 4),
        ShardSlots => (offset_of!(ObjectRecord, shard_slots), 4),
    }
}

fn counter_field(field: CounterField) -> (usize, usize) {
    use CounterField::*;
    match field {
        NameOffset => (offset_of!(CounterRecord, name_offset), 4),
        CounterType => (offset_of!(CounterRecord, counter_type), 4),
        Size => (offset_of!(CounterRecord, size), 4),
        BlockOffset => (offset_of!(CounterRecord, block_offset), 4),
        DefaultScale => (offset_of!(CounterRecord, default_scale), 4),
        DetailLevel => (offset_of!(CounterRecord, detail_level), 4),
        StatFlags => (offset_of!(CounterRecord, stat_flags), 4),
        Factor => (offset_of!(CounterRecord, factor), 4),
        Parts(p) => (offset_of!(CounterRecord, parts) + 4 * (p as usize % 4), 4),
        PartCount => (offset_of!(CounterRecord, part_count), 4),
        Shard => (offset_of!(CounterRecord, shard), 4),
    }
}

fn slot_field(field: SlotField) -> (usize, usize) {
    use SlotField::*;
    match field {
        State => (offset_of!(SlotHeader, state), 4),
        LivePos => (offset_of!(SlotHeader, live_pos), 4),
        NextFree => (offset_of!(SlotHeader, next_free), 4),
        UniqueId => (offset_of!(SlotHeader, unique_id), 4),
        ParentObject => (offset_of!(SlotHeader, parent_object), 4),
        ParentSlot => (offset_of!(SlotHeader, parent_slot), 4),
        NameLen => (offset_of!(SlotHeader, name_len), 4),
        Generation => (offset_of!(SlotHeader, generation), 4),
        ParentGeneration => (offset_of!(SlotHeader, parent_generation), 4),
        Children => (offset_of!(SlotHeader, children), 4),
    }
}

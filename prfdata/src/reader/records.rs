//! The static part of a block (header, object and counter records), copied out of the mapping
//! once when the block is opened and validated field by field.
//!
//! Every number here comes from a file another process wrote: each is checked against its
//! limit before it is used in any arithmetic, and the arithmetic is done in `u64` on values
//! whose bounds are stated beside it (or with `checked_*`), so no value can overflow, in debug
//! builds (a panic) or release builds (a wrap that would pass a check). Every refusal is a
//! [`ReadError`] naming the field's offset in the block.

use std::mem::offset_of;
use std::ops::Range;

use zerocopy::FromBytes;

use super::error::{field, ReadError};
use crate::block::raw::RawBlock;
use crate::instances::TableLayout;
use crate::layout::*;
use crate::map::{Aggregate, Factor};
use crate::winperf;

/// A validated object record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Symbolic offset (name index = First Counter + this).
    pub name_offset: u32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
    /// The default counter's index among the object's counters, if it has one (the record and
    /// perflib's `DefaultCounter` say -1 for none).
    pub default_counter: Option<u32>,
    /// Indexes of the object's counters in [`BlockReader::counters`](super::BlockReader::counters).
    pub counters: Range<usize>,
    /// Whether it has instances.
    pub instanced: bool,
    /// Whether only "Costly" queries collect it.
    pub costly: bool,
    /// Instance limit (0 without instances).
    pub max_instances: u32,
    /// Longest instance name, UTF-16 units.
    pub max_name_len: u32,
    /// Bytes of one counter block.
    pub counter_block_size: u32,
    /// Bytes from one counter block to the next in the block (at least `counter_block_size`,
    /// a multiple of 8, at most `MAX_BLOCK_STRIDE`; [`LAYOUT_VERSION`] 8).
    pub(crate) block_stride: u64,
    /// The shard lines of the sharded counters, if the object has any.
    pub(super) shards: Option<Shards>,
    /// The sharded counters: place in the counter block and word in the shard lines.
    pub(super) sharded: Vec<(u32, u32)>,
    /// Offset of the record in the block (at most `HEADER_SIZE + MAX_OBJECTS * 128`).
    pub(super) record_offset: u64,
    /// Bytes of one slot (at most `SLOT_HEADER_SIZE + 2 * MAX_INSTANCE_NAME + 64`).
    pub(super) slot_size: u64,
    /// The three regions, each checked to lie inside the file, aligned, at open: the live list
    /// (`4 * max_instances` bytes), the slots (`max_instances * slot_size`), the counter blocks
    /// (`max(max_instances, 1) * counter_block_size`).
    pub(super) live_offset: u64,
    pub(super) slots_offset: u64,
    pub(crate) data_offset: u64,
    /// The text counters (`PERF_COUNTER_TEXT`) of the object's counter block: offset and bytes,
    /// each range inside the block. Their UTF-16 is made well-formed when copied.
    pub(super) text: Vec<(u32, u32)>,
    /// The sums (the Windows 95 stat servers' `PSTF_COMPLEX`) the reader fills in each copied
    /// counter block.
    pub(super) sums: Vec<SumPlan>,
    /// Whether readers show a synthesised `_Total` instance (`total: true` in the map).
    pub total: bool,
    /// How `_Total` and departed instances aggregate each stored numeric counter (sums are
    /// computed again from their aggregated parts; text stays empty).
    pub(super) aggregates: Vec<AggPlan>,
    /// No sharded, text or sum counter: a copied counter block needs no fix-up but its
    /// ByteLength word (computed once here, tested once per instance copied).
    pub(super) plain: bool,
}

/// One counter's aggregation, checked at open: its place and size in the counter block and its
/// `AGG_*` rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AggPlan {
    pub(super) offset: u32,
    pub(super) size: u32,
    pub(super) rule: u32,
    /// Its word in the shard lines, for a sharded counter.
    pub(super) shard: Option<u32>,
}

/// Where an object's shard lines lie in each stride, checked at open: `slots` lines of `line`
/// bytes from `start`, inside the stride, after the counter block, 8-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shards {
    pub(super) start: u64,
    pub(super) line: u64,
    pub(super) slots: u64,
}

impl Shards {
    /// The sum of word `k` of every shard line of the counter block at `block` (wrapping, as
    /// the counter does); `None` if a word is outside the mapping.
    pub(super) fn total(&self, raw: &RawBlock, block: u64, k: u32) -> Option<u64> {
        let mut sum = 0u64;
        for s in 0..self.slots {
            // block < 2^30, start + slots * line <= stride <= MAX_BLOCK_STRIDE: no overflow.
            let at = block + self.start + s * self.line + 8 * u64::from(k);
            sum = sum.wrapping_add(raw.load_u64(usize::try_from(at).ok()?)?);
        }
        Some(sum)
    }
}

impl ObjectInfo {
    /// Where the object's instance table lies, for the reader's recovery from a dead lock
    /// holder; `None` without instances.
    pub(crate) fn table_layout(&self) -> Option<TableLayout> {
        // Every value is bounded by the file size, which `MAX_BLOCK_SIZE` caps, so each fits a
        // `usize` on the 64-bit targets this crate builds for; `try_from` says so anyway.
        let us = |v: u64| usize::try_from(v).ok();
        self.instanced.then_some(())?;
        Some(TableLayout {
            symbol: "an object of the block (from its records)",
            record: us(self.record_offset)?,
            live: us(self.live_offset)?,
            slots: us(self.slots_offset)?,
            data: us(self.data_offset)?,
            slot_size: us(self.slot_size)?,
            stride: usize::try_from(self.block_stride).ok()?,
            block_size: self.counter_block_size as usize,
            max: self.max_instances,
            max_name_len: self.max_name_len,
        })
    }
}

/// A validated counter record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    /// Symbolic offset, or `None` for a base.
    pub name_offset: Option<u32>,
    /// The winperf.h type.
    pub counter_type: u32,
    /// Bytes of the value.
    pub size: u32,
    /// Offset inside the counter block.
    pub block_offset: u32,
    /// `DefaultScale`.
    pub default_scale: i32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
    /// The scale factor monitors apply to displayed values (the Windows 95 stat servers'
    /// `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`), if any.
    pub factor: Option<Factor>,
    /// Whether the app computes the value on request (the Windows 95 stat servers' `PSTF_FUNCPTR`).
    pub on_demand: bool,
    /// With `PSTF_COMPLEX`: the summed counters (indexes among the object's counters, checked
    /// at open to be other numeric, non-sum counters of the object with the sum's size).
    parts: [u16; MAX_SUM_PARTS],
    /// How many of `parts` are used; 0 for a counter that is not a sum.
    part_count: u8,
    /// How departed instances and `_Total` aggregate it (as the block says: the map's rule or
    /// its type's default, resolved by the writer); `None` for text.
    pub aggregate: Option<Aggregate>,
    /// For a sharded counter: its word in the object's shard lines.
    pub(super) shard: Option<u32>,
}

impl CounterInfo {
    /// The counters this one sums (the Windows 95 stat servers' `PSTF_COMPLEX`), as indexes among
    /// its object's counters; `None` for a counter that is not a sum. The reader fills a sum's
    /// value in every read ([`BlockView::global_value`](super::BlockView::global_value), the copied
    /// counter blocks): 64-bit sums wrap at 2^64, 32-bit sums at 2^32, as a counter of that
    /// width would.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// for c in reader.counters() {
    ///     if let Some(parts) = c.sum_parts() {
    ///         println!("counter {:?} sums {parts:?}", c.name_offset);
    ///     }
    /// }
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn sum_parts(&self) -> Option<&[u16]> {
        (self.part_count > 0).then(|| &self.parts[..usize::from(self.part_count)])
    }
}

/// A sum the reader fills in a counter block: the sum's place and size, and its parts'
/// places, each checked inside the block at open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SumPlan {
    /// The sum's index among the object's counters.
    pub(super) counter: usize,
    pub(super) offset: u32,
    pub(super) size: u32,
    pub(super) parts: Vec<u32>,
}

impl SumPlan {
    /// The sum of the parts in `block` (a copied counter block), wrapped to the sum's width.
    pub(super) fn sum_in(&self, block: &[u8]) -> u64 {
        let mut sum = 0u64;
        for &p in &self.parts {
            sum = sum.wrapping_add(load(block, p, self.size));
        }
        sum
    }

    /// Writes `sum` at the sum's place in `block`.
    pub(super) fn store(&self, block: &mut [u8], sum: u64) {
        let at = self.offset as usize;
        match self.size {
            DWORD_SIZE => {
                if let Some(b) = block.get_mut(at..at + 4) {
                    b.copy_from_slice(&(sum as u32).to_ne_bytes());
                }
            }
            _ => {
                if let Some(b) = block.get_mut(at..at + 8) {
                    b.copy_from_slice(&sum.to_ne_bytes());
                }
            }
        }
    }
}

/// The DWORD or LARGE value at `at` in a copied counter block (0 outside it: checked at open).
fn load(block: &[u8], at: u32, size: u32) -> u64 {
    let at = at as usize;
    match size {
        DWORD_SIZE => block
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, |b| u64::from(u32::from_ne_bytes(b))),
        _ => block
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_ne_bytes),
    }
}

/// The most padding a slot may have after its header and longest name: the writer pads the name
/// to a [`WORD`] (at most 6 bytes); a reader accepts up to this much, no more, so that a slot
/// size read from the block cannot place the slots anywhere it likes.
const MAX_SLOT_PADDING: u64 = 64;

/// What [`parse`] returns: the header as read, the objects and the counters, validated.
#[derive(Debug)]
pub(crate) struct Records {
    /// The header as it was when the block was opened.
    pub(crate) header: BlockHeader,
    pub(crate) objects: Vec<ObjectInfo>,
    pub(crate) counters: Vec<CounterInfo>,
    /// The most instances the block can hold (all objects' limits together): no instance can
    /// have more children. At most `MAX_OBJECTS × MAX_INSTANCES` = 2^32.
    pub(super) capacity: u64,
}

/// Offset of a header field.
macro_rules! header_at {
    ($field:ident) => {
        offset_of!(BlockHeader, $field) as u64
    };
}

/// Offset of a field of the object record at `rec`.
macro_rules! object_at {
    ($rec:expr, $field:ident) => {
        $rec + offset_of!(ObjectRecord, $field) as u64
    };
}

/// Copies the header and records out of `raw` (the whole file, `file_size` bytes, at most
/// [`MAX_BLOCK_SIZE`]) and validates every field.
pub(crate) fn parse(raw: &RawBlock, file_size: u64) -> Result<Records, ReadError> {
    let truncated = |expected: u64| ReadError::Truncated {
        actual: file_size,
        expected,
    };
    let head = raw
        .snapshot_bytes(0, HEADER_SIZE)
        .ok_or(truncated(HEADER_SIZE as u64))?;
    let header = BlockHeader::read_from_bytes(&head).map_err(|_| ReadError::BadMagic)?;
    if header.magic != MAGIC {
        return Err(ReadError::BadMagic);
    }
    if header.layout_version != LAYOUT_VERSION {
        return Err(ReadError::Version {
            found: header.layout_version,
        });
    }
    if header.header_size != HEADER_SIZE as u32 {
        return Err(field(
            header_at!(header_size),
            "header size",
            header.header_size,
        ));
    }
    if header.total_size != file_size {
        return Err(truncated(header.total_size));
    }
    if header.num_objects == 0 || header.num_objects > MAX_OBJECTS {
        return Err(field(
            header_at!(num_objects),
            "object count",
            header.num_objects,
        ));
    }
    if header.num_counters > MAX_COUNTERS {
        return Err(field(
            header_at!(num_counters),
            "counter count",
            header.num_counters,
        ));
    }
    if header.timer_freq != crate::clock::OBJECT_FREQUENCY as u64 {
        return Err(field(
            header_at!(timer_freq),
            "object timer frequency",
            header.timer_freq,
        ));
    }
    if header.objects_offset != HEADER_SIZE as u32 {
        return Err(field(
            header_at!(objects_offset),
            "objects offset",
            header.objects_offset,
        ));
    }
    // Both counts were bounded above: these are below 2^32.
    let counters_at =
        HEADER_SIZE as u64 + u64::from(header.num_objects) * OBJECT_RECORD_SIZE as u64;
    if u64::from(header.counters_offset) != counters_at {
        return Err(field(
            header_at!(counters_offset),
            "counters offset",
            header.counters_offset,
        ));
    }
    let records_end = counters_at + u64::from(header.num_counters) * COUNTER_RECORD_SIZE as u64;
    if records_end > file_size {
        return Err(truncated(records_end));
    }
    // The members table (LAYOUT_VERSION 7): right after the records, inside the file. Readers
    // only list it (`BlockReader::members`), but a block that misplaces it was not laid out by
    // prfdata.
    let members_end =
        u64::from(header.members_offset) + u64::from(header.max_members) * MEMBER_ENTRY_SIZE as u64;
    if u64::from(header.members_offset) != records_end.next_multiple_of(REGION_ALIGN as u64)
        || header.max_members != MAX_MEMBERS
    {
        return Err(field(
            header_at!(members_offset),
            "members table",
            header.members_offset,
        ));
    }
    if members_end > file_size {
        return Err(truncated(members_end));
    }
    // Below the file size, which was mapped: fits a usize.
    let records_len = usize::try_from(records_end.next_multiple_of(8) - HEADER_SIZE as u64)
        .map_err(|_| truncated(records_end))?;
    let recs = raw
        .snapshot_bytes(HEADER_SIZE, records_len)
        .ok_or(truncated(records_end))?;

    let mut counters = Vec::with_capacity(header.num_counters as usize);
    let first_counter = (counters_at - HEADER_SIZE as u64) as usize;
    for (i, rec) in recs[first_counter..]
        .chunks_exact(COUNTER_RECORD_SIZE)
        .take(header.num_counters as usize)
        .enumerate()
    {
        let at = counters_at + (i * COUNTER_RECORD_SIZE) as u64;
        let rec = CounterRecord::read_from_bytes(rec).map_err(|_| truncated(records_end))?;
        counters.push(check_counter(&rec, at)?);
    }

    let mut objects = Vec::with_capacity(header.num_objects as usize);
    for (i, rec) in recs
        .chunks_exact(OBJECT_RECORD_SIZE)
        .take(header.num_objects as usize)
        .enumerate()
    {
        let at = (HEADER_SIZE + i * OBJECT_RECORD_SIZE) as u64;
        let rec = ObjectRecord::read_from_bytes(rec).map_err(|_| truncated(records_end))?;
        objects.push(check_object(&rec, at, &counters, counters_at, file_size)?);
    }
    super::answer::check(&objects, file_size)?;
    let capacity = objects.iter().map(|o| u64::from(o.max_instances)).sum();
    Ok(Records {
        header,
        objects,
        counters,
        capacity,
    })
}

/// Checks the counter record at offset `at`.
fn check_counter(rec: &CounterRecord, at: u64) -> Result<CounterInfo, ReadError> {
    let field_at = |offset: usize| at + offset as u64;
    // Numbers have the size their type says; text (PERF_COUNTER_TEXT) an even size up to
    // MAX_INSTANCE_NAME units, 8-aligned as the writer places it.
    let is_text = rec.counter_type == winperf::PERF_COUNTER_TEXT;
    let size_ok = match winperf::counter_size(rec.counter_type) {
        Some(n) => n == rec.size,
        None => {
            is_text
                && rec.size > 0
                && rec.size.is_multiple_of(NAME_UNIT_SIZE as u32)
                && rec.size <= NAME_UNIT_SIZE as u32 * MAX_INSTANCE_NAME
        }
    };
    if !size_ok || rec.counter_type & winperf::PERF_COUNTER_HISTOGRAM_TYPE != 0 {
        return Err(field(
            field_at(offset_of!(CounterRecord, counter_type)),
            "counter type / size",
            rec.counter_type,
        ));
    }
    let align = if is_text { WORD as u32 } else { rec.size };
    if rec.size > 0
        && (rec.block_offset < COUNTER_BLOCK_HEADER as u32
            || !rec.block_offset.is_multiple_of(align))
    {
        return Err(field(
            field_at(offset_of!(CounterRecord, block_offset)),
            "counter offset",
            rec.block_offset,
        ));
    }
    let is_base = winperf::is_base(rec.counter_type);
    let name_offset = (rec.name_offset != NO_NAME).then_some(rec.name_offset);
    if is_base == name_offset.is_some() || name_offset.is_some_and(|n| n % 2 != 0) {
        return Err(field(at, "counter name offset", rec.name_offset));
    }
    if rec.stat_flags & !STAT_FLAGS != 0 {
        return Err(field(
            field_at(offset_of!(CounterRecord, stat_flags)),
            "counter stat flags",
            rec.stat_flags,
        ));
    }
    let factor = Factor::from_flags(rec.stat_flags, rec.factor);
    let has_factor =
        rec.stat_flags & (winperf::PSTF_FACTOR_MULTIPLY | winperf::PSTF_FACTOR_DIVIDE) != 0;
    if has_factor != factor.is_some() {
        return Err(field(
            field_at(offset_of!(CounterRecord, factor)),
            "counter scale factor",
            rec.factor,
        ));
    }
    let complex = rec.stat_flags & winperf::PSTF_COMPLEX != 0;
    let part_count = if complex { rec.part_count } else { 0 };
    let numeric = !is_base && !is_text;
    let bad_parts = complex && (part_count == 0 || part_count as usize > MAX_SUM_PARTS || !numeric);
    if bad_parts || (!complex && rec.part_count != 0) {
        return Err(field(
            field_at(offset_of!(CounterRecord, part_count)),
            "counter sum parts",
            rec.part_count,
        ));
    }
    if rec.aggregate > AGG_LAST || (is_text && rec.aggregate != AGG_NONE) {
        return Err(field(
            field_at(offset_of!(CounterRecord, aggregate)),
            "counter aggregation rule",
            rec.aggregate,
        ));
    }
    let on_demand = rec.stat_flags & winperf::PSTF_FUNCPTR != 0;
    if on_demand && (complex || !numeric) {
        return Err(field(
            field_at(offset_of!(CounterRecord, stat_flags)),
            "counter stat flags",
            rec.stat_flags,
        ));
    }
    let shard = rec.shard.checked_sub(1);
    if shard.is_some_and(|k| {
        k >= MAX_SHARDED || !numeric || complex || on_demand || rec.size != LARGE_SIZE
    }) {
        return Err(field(
            field_at(offset_of!(CounterRecord, shard)),
            "counter shard word",
            rec.shard,
        ));
    }
    Ok(CounterInfo {
        name_offset,
        counter_type: rec.counter_type,
        size: rec.size,
        block_offset: rec.block_offset,
        default_scale: rec.default_scale,
        detail_level: rec.detail_level,
        factor,
        on_demand,
        parts: rec.parts,
        // At most MAX_SUM_PARTS (8), checked above.
        part_count: part_count as u8,
        aggregate: Aggregate::from_code(rec.aggregate),
        shard,
    })
}

/// Checks the object record at offset `off` against the counters (whose records start at
/// `counters_at`) and the file size.
fn check_object(
    rec: &ObjectRecord,
    off: u64,
    counters: &[CounterInfo],
    counters_at: u64,
    file_size: u64,
) -> Result<ObjectInfo, ReadError> {
    let first = rec.first_counter as usize;
    if first >= counters.len() {
        return Err(field(
            object_at!(off, first_counter),
            "object's first counter",
            rec.first_counter,
        ));
    }
    let end = first
        .checked_add(rec.num_counters as usize)
        .filter(|&e| e <= counters.len());
    let Some(end) = end.filter(|&e| e > first) else {
        return Err(field(
            object_at!(off, num_counters),
            "object's counter count",
            rec.num_counters,
        ));
    };
    if !rec.name_offset.is_multiple_of(2) {
        return Err(field(off, "object name offset", rec.name_offset));
    }
    if rec.flags & !(OBJECT_INSTANCED | OBJECT_COSTLY | OBJECT_TOTAL) != 0
        || (rec.flags & OBJECT_TOTAL != 0 && rec.flags & OBJECT_INSTANCED == 0)
    {
        return Err(field(object_at!(off, flags), "object flags", rec.flags));
    }
    // `num_counters` is at most MAX_COUNTERS now (the range above is inside `counters`).
    if rec.default_counter < -1 || i64::from(rec.default_counter) >= i64::from(rec.num_counters) {
        return Err(field(
            object_at!(off, default_counter),
            "default counter",
            rec.default_counter as u32,
        ));
    }
    let stride = rec.counter_block_size;
    if stride < COUNTER_BLOCK_HEADER as u32
        || !stride.is_multiple_of(WORD as u32)
        || stride > MAX_COUNTER_BLOCK
    {
        return Err(field(
            object_at!(off, counter_block_size),
            "counter block size",
            stride,
        ));
    }
    let block_stride = u64::from(rec.block_stride);
    if block_stride < u64::from(stride)
        || !block_stride.is_multiple_of(WORD as u64)
        || rec.block_stride > MAX_BLOCK_STRIDE
    {
        return Err(field(
            object_at!(off, block_stride),
            "counter block stride",
            rec.block_stride,
        ));
    }
    let sharded: Vec<(u32, u32)> = counters[first..end]
        .iter()
        .filter_map(|c| Some((c.block_offset, c.shard?)))
        .collect();
    let shards = if sharded.is_empty() {
        if rec.shard_slots != 0 {
            return Err(field(
                object_at!(off, shard_slots),
                "shard slots",
                rec.shard_slots,
            ));
        }
        None
    } else {
        // Each check bounds its value, so the products below stay under 2^32.
        let words = sharded.iter().map(|&(_, k)| k + 1).max().unwrap_or(0);
        let shards = Shards {
            start: u64::from(rec.shard_start),
            line: u64::from(rec.shard_line),
            slots: u64::from(rec.shard_slots),
        };
        let bad = |at: u64, what: &'static str, v: u32| Err(field(at, what, v));
        if rec.shard_slots == 0 || rec.shard_slots > SHARD_SLOTS {
            return bad(object_at!(off, shard_slots), "shard slots", rec.shard_slots);
        }
        if rec.shard_line < 8 * words
            || rec.shard_line > MAX_SHARD_LINE
            || !shards.line.is_multiple_of(WORD as u64)
        {
            return bad(object_at!(off, shard_line), "shard line", rec.shard_line);
        }
        if shards.start < u64::from(stride)
            || !shards.start.is_multiple_of(WORD as u64)
            || shards.start + shards.slots * shards.line > block_stride
        {
            return bad(object_at!(off, shard_start), "shard start", rec.shard_start);
        }
        Some(shards)
    };
    let mut text = Vec::new();
    for (i, c) in counters[first..end].iter().enumerate() {
        // In u64: a block offset near 2^32 must not wrap past the check.
        if u64::from(c.block_offset) + u64::from(c.size) > u64::from(stride) {
            let at = counters_at + ((first + i) * COUNTER_RECORD_SIZE) as u64;
            return Err(field(
                at + offset_of!(CounterRecord, block_offset) as u64,
                "counter beyond its block",
                c.block_offset,
            ));
        }
        if c.counter_type == winperf::PERF_COUNTER_TEXT {
            text.push((c.block_offset, c.size));
        }
    }
    let aggregates = counters[first..end]
        .iter()
        .filter(|c| c.sum_parts().is_none() && matches!(c.size, DWORD_SIZE | LARGE_SIZE))
        .filter_map(|c| {
            Some(AggPlan {
                offset: c.block_offset,
                size: c.size,
                rule: c.aggregate?.code(),
                shard: c.shard,
            })
        })
        .collect();
    let mut sums = Vec::new();
    for (i, c) in counters[first..end].iter().enumerate() {
        let Some(parts) = c.sum_parts() else { continue };
        let at = counters_at + ((first + i) * COUNTER_RECORD_SIZE) as u64;
        let bad = || {
            field(
                at + offset_of!(CounterRecord, parts) as u64,
                "counter sum part",
                i as u64,
            )
        };
        let mut offsets = Vec::with_capacity(parts.len());
        for &p in parts {
            let p = usize::from(p);
            let part = counters[first..end].get(p).ok_or_else(bad)?;
            if p == i
                || part.size != c.size
                || part.sum_parts().is_some()
                || winperf::is_base(part.counter_type)
            {
                return Err(bad());
            }
            offsets.push(part.block_offset);
        }
        sums.push(SumPlan {
            counter: i,
            offset: c.block_offset,
            size: c.size,
            parts: offsets,
        });
    }
    let instanced = rec.flags & OBJECT_INSTANCED != 0;
    let (max, name_len, slot_size) = if instanced {
        if rec.max_instances == 0 || rec.max_instances > MAX_INSTANCES {
            return Err(field(
                object_at!(off, max_instances),
                "instance limit",
                rec.max_instances,
            ));
        }
        if rec.max_name_len == 0 || rec.max_name_len > MAX_INSTANCE_NAME {
            return Err(field(
                object_at!(off, max_name_len),
                "instance name limit",
                rec.max_name_len,
            ));
        }
        // max_name_len <= MAX_INSTANCE_NAME: no overflow.
        let min_slot =
            u64::from(SLOT_HEADER_SIZE as u32 + NAME_UNIT_SIZE as u32 * rec.max_name_len);
        let slot_size = u64::from(rec.slot_size);
        if slot_size < min_slot
            || !slot_size.is_multiple_of(WORD as u64)
            || slot_size > min_slot + MAX_SLOT_PADDING
        {
            return Err(field(
                object_at!(off, slot_size),
                "slot size",
                rec.slot_size,
            ));
        }
        (u64::from(rec.max_instances), rec.max_name_len, slot_size)
    } else {
        (0, 0, 0)
    };
    // max <= 2^20, slot_size < 2^12, stride <= 2^20: every product is below 2^41.
    // An instanced object's data region ends with its retired accumulator (LAYOUT_VERSION 6).
    let blocks = if instanced { max + 1 } else { 1 };
    let region_ok = |start: u64, len: u64| {
        start.is_multiple_of(WORD as u64) && start.checked_add(len).is_some_and(|e| e <= file_size)
    };
    if !region_ok(rec.live_offset, max * LIVE_ENTRY_SIZE as u64) {
        return Err(field(
            object_at!(off, live_offset),
            "live list offset",
            rec.live_offset,
        ));
    }
    if !region_ok(rec.slots_offset, max * slot_size) {
        return Err(field(
            object_at!(off, slots_offset),
            "slots offset",
            rec.slots_offset,
        ));
    }
    if !region_ok(rec.data_offset, blocks * block_stride) {
        return Err(field(
            object_at!(off, data_offset),
            "data offset",
            rec.data_offset,
        ));
    }
    let plain = sharded.is_empty() && text.is_empty() && sums.is_empty();
    Ok(ObjectInfo {
        name_offset: rec.name_offset,
        detail_level: rec.detail_level,
        default_counter: u32::try_from(rec.default_counter).ok(),
        counters: first..end,
        instanced,
        costly: rec.flags & OBJECT_COSTLY != 0,
        max_instances: max as u32,
        max_name_len: name_len,
        counter_block_size: stride,
        block_stride,
        shards,
        sharded,
        record_offset: off,
        slot_size,
        live_offset: rec.live_offset,
        slots_offset: rec.slots_offset,
        data_offset: rec.data_offset,
        text,
        sums,
        total: rec.flags & OBJECT_TOTAL != 0,
        aggregates,
        plain,
    })
}

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

use super::answer::Geometry;
use super::raw::RawBlock;
use crate::layout::*;
use crate::map::{Aggregate, Factor};
use crate::reader::error::{field, ReadError};
use crate::winperf;
use prfdata_rules::counter;
use prfdata_rules::histogram::MAX_DESCRIPTOR_WORDS;
use prfdata_rules::limits::MAX_SHARDED;
use prfdata_rules::map as map_rules;
use prfdata_wire::build::CounterBlockFixups;

mod histograms;

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
    /// Indexes of the object's counters in [`BlockReader::counters`](crate::reader::BlockReader::counters).
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
    pub(crate) shards: Option<Shards>,
    /// The sharded counters, each a run of words: a counter or a histogram's buckets.
    pub(crate) sharded: Vec<ShardRun>,
    /// Offset of the record in the block (at most `HEADER_SIZE + MAX_OBJECTS * 128`).
    pub(crate) record_offset: u64,
    /// Bytes of one slot (at most `SLOT_HEADER_SIZE + 2 * MAX_INSTANCE_NAME + 64`).
    pub(crate) slot_size: u64,
    /// The three regions, each checked to lie inside the file, aligned, at open: the live list
    /// (`4 * max_instances` bytes), the slots (`max_instances * slot_size`), the counter blocks
    /// (`max(max_instances, 1) * counter_block_size`).
    pub(crate) live_offset: u64,
    pub(crate) slots_offset: u64,
    pub(crate) data_offset: u64,
    /// What a counter block copied out of the block needs to be wire format: its ByteLength,
    /// its text counters (`PERF_COUNTER_TEXT`) made well-formed, its sums computed (each place
    /// checked inside the block).
    pub(crate) fixups: CounterBlockFixups,
    /// Whether readers show a synthesised `_Total` instance (`total: true` in the map).
    pub total: bool,
    /// How `_Total` and departed instances aggregate each stored numeric counter (sums are
    /// computed again from their aggregated parts; text stays empty).
    pub(crate) aggregates: Vec<AggPlan>,
    /// No sharded, text, sum or histogram counter: a copied counter block needs no fix-up but
    /// its ByteLength word (computed once here, tested once per instance copied).
    pub(crate) plain: bool,
    /// Whether it has histograms (whose base a copy computes: see `histograms`).
    pub(crate) histograms: bool,
}

/// One counter's aggregation, checked at open: its place and size in the counter block and its
/// `AGG_*` rule; a histogram's buckets are one plan of `words` 8-byte values, each summed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AggPlan {
    pub(crate) offset: u32,
    pub(crate) size: u32,
    pub(crate) rule: u32,
    /// Values of `size` bytes from `offset`, each aggregated on its own: 1, or a histogram's
    /// buckets (8-byte sums, inside the block: checked at open).
    pub(crate) words: u32,
}

/// A sharded counter's words, checked at open: `words` 8-byte values at `offset` in the counter
/// block, whose shares are the words from `word` in each shard line (1 for a count, a
/// histogram's buckets for a sharded histogram).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ShardRun {
    pub(crate) offset: u32,
    pub(crate) word: u32,
    pub(crate) words: u32,
}

/// Where an object's shard lines lie in each stride, checked at open: `slots` lines of `line`
/// bytes from `start`, inside the stride, after the counter block, 8-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shards {
    pub(crate) start: u64,
    pub(crate) line: u64,
    pub(crate) slots: u64,
}

/// Where one object's table lies in a block, as offsets: what [`ObjectTable`] is made of, from a
/// trusted map ([`ObjectTable::new`]) or from records a reader validated against its mapping
/// (the reader's recovery from a dead lock holder, `crate::reader::recover`).
///
/// Whoever makes one vouches that, in the mapping it is used with: the record (128 bytes at
/// `record`) is inside; the live list (`max` u32s at the 4-aligned `live`), the `max` slots of
/// `slot_size` bytes (a multiple of 8, at least the slot header and `max_name_len` UTF-16
/// units) at the 8-aligned `slots`, and the `max` counter blocks `stride` bytes apart (a
/// multiple of 8, at least `block_size`, itself a multiple of 8) at the 8-aligned `data` are
/// inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableLayout {
    /// How errors name the object: its symbol in the map, or a description.
    pub symbol: &'static str,
    pub record: usize,
    pub live: usize,
    pub slots: usize,
    pub data: usize,
    pub slot_size: usize,
    /// Bytes from one counter block to the next (shard lines and padding included).
    pub stride: usize,
    /// Bytes of one counter block (its ByteLength).
    pub block_size: usize,
    pub max: u32,
    pub max_name_len: u32,
}

impl ObjectInfo {
    /// What each counter block copied out of the block ([`InstanceTable::copy_counter_block`],
    /// [`BlockView::copy_global_block`], [`InstanceTable::copy_blocks_after`],
    /// [`InstanceTable::total_block`]) needs before it is wire format: apply it to each.
    ///
    /// [`InstanceTable::copy_counter_block`]: crate::reader::InstanceTable::copy_counter_block
    /// [`BlockView::copy_global_block`]: crate::reader::BlockView::copy_global_block
    /// [`InstanceTable::copy_blocks_after`]: crate::reader::InstanceTable::copy_blocks_after
    /// [`InstanceTable::total_block`]: crate::reader::InstanceTable::total_block
    pub fn fixups(&self) -> &CounterBlockFixups {
        &self.fixups
    }

    /// What the object's bound in a Collect answer depends on (`block/answer.rs`).
    pub(crate) fn geometry(&self) -> Geometry {
        Geometry {
            counters: self.counters.len() as u64,
            block: u64::from(self.counter_block_size),
            instances: self.instanced.then_some((
                u64::from(self.max_instances),
                u64::from(self.max_name_len),
                self.total,
            )),
        }
    }

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
    /// For a sharded counter: its (first) word in the object's shard lines.
    pub(crate) shard: Option<u32>,
    /// For a histogram (`PERF_PRFDATA_HISTOGRAM`): the offset of its descriptor in the block,
    /// checked with its object (`histograms`); 0 for every other counter.
    pub(crate) histogram: u32,
}

impl CounterInfo {
    /// The counters this one sums (the Windows 95 stat servers' `PSTF_COMPLEX`), as indexes among
    /// its object's counters; `None` for a counter that is not a sum. The reader fills a sum's
    /// value in every read ([`BlockView::global_value`](crate::reader::BlockView::global_value), the copied
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

#[cfg(test)]
impl CounterInfo {
    /// A counter as the checks made it from a record: `counter_type` of `size` bytes at
    /// `block_offset`, summed, with `shard` and the descriptor offset `histogram`.
    pub(crate) fn checked(
        counter_type: u32,
        (size, block_offset): (u32, u32),
        shard: Option<u32>,
        histogram: u32,
    ) -> CounterInfo {
        CounterInfo {
            name_offset: None,
            counter_type,
            size,
            block_offset,
            default_scale: 0,
            detail_level: 0,
            factor: None,
            on_demand: false,
            parts: [0; MAX_SUM_PARTS],
            part_count: 0,
            aggregate: Some(Aggregate::Sum),
            shard,
            histogram,
        }
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
    pub(crate) capacity: u64,
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

/// `Ok` if `ok`, else the refusal of the field at `at` holding `value`.
fn ensure(ok: bool, at: u64, what: &'static str, value: impl Into<u64>) -> Result<(), ReadError> {
    if ok {
        Ok(())
    } else {
        Err(field(at, what, value))
    }
}

/// A file of `actual` bytes that should have `expected`.
fn truncated(actual: u64, expected: u64) -> ReadError {
    ReadError::Truncated { actual, expected }
}

/// Copies the header and records out of `raw` (the whole file, `file_size` bytes, at most
/// [`MAX_BLOCK_SIZE`]) and validates every field.
pub(crate) fn parse(raw: &RawBlock, file_size: u64) -> Result<Records, ReadError> {
    let head = raw
        .snapshot_bytes(0, HEADER_SIZE)
        .ok_or(truncated(file_size, HEADER_SIZE as u64))?;
    let header = BlockHeader::read_from_bytes(&head).map_err(|_| ReadError::BadMagic)?;
    let (counters_at, records_end) = check_header(&header, file_size)?;
    // Below the file size, which was mapped: fits a usize.
    let records_len = usize::try_from(records_end.next_multiple_of(8) - HEADER_SIZE as u64)
        .map_err(|_| truncated(file_size, records_end))?;
    let recs = raw
        .snapshot_bytes(HEADER_SIZE, records_len)
        .ok_or(truncated(file_size, records_end))?;
    let region = descriptor_region(raw, &header, records_end, file_size)?;
    let first_counter = (counters_at - HEADER_SIZE as u64) as usize;
    let counter_recs = recs[first_counter..].chunks_exact(COUNTER_RECORD_SIZE);
    let mut counters = Vec::with_capacity(header.num_counters as usize);
    for (i, rec) in counter_recs.take(header.num_counters as usize).enumerate() {
        let at = counters_at + (i * COUNTER_RECORD_SIZE) as u64;
        let rec =
            CounterRecord::read_from_bytes(rec).map_err(|_| truncated(file_size, records_end))?;
        counters.push(check_counter(&rec, at)?);
    }
    let object_recs = recs.chunks_exact(OBJECT_RECORD_SIZE);
    let mut objects = Vec::with_capacity(header.num_objects as usize);
    for (i, rec) in object_recs.take(header.num_objects as usize).enumerate() {
        let at = (HEADER_SIZE + i * OBJECT_RECORD_SIZE) as u64;
        let rec =
            ObjectRecord::read_from_bytes(rec).map_err(|_| truncated(file_size, records_end))?;
        let places = (counters_at, file_size);
        objects.push(check_object(&rec, at, &counters, places, &region)?);
    }
    // Without histograms, no descriptor region: the members table right after the records.
    let histograms =
        counters.iter().any(|c| c.histogram != 0) || objects.iter().any(|o| o.histograms);
    let members_at = u64::from(header.members_offset);
    let tight = members_at == records_end.next_multiple_of(REGION_ALIGN as u64);
    ensure(
        histograms || tight,
        header_at!(members_offset),
        "members table",
        header.members_offset,
    )?;
    super::answer::check(objects.iter().map(ObjectInfo::geometry), file_size)?;
    let capacity = objects.iter().map(|o| u64::from(o.max_instances)).sum();
    Ok(Records {
        header,
        objects,
        counters,
        capacity,
    })
}

/// Checks the header of a file of `file_size` bytes; returns where the counter records start
/// and where the records end.
fn check_header(h: &BlockHeader, file_size: u64) -> Result<(u64, u64), ReadError> {
    if h.magic != MAGIC {
        return Err(ReadError::BadMagic);
    }
    if h.layout_version != LAYOUT_VERSION {
        return Err(ReadError::Version {
            found: h.layout_version,
        });
    }
    let size = h.header_size;
    ensure(
        size == HEADER_SIZE as u32,
        header_at!(header_size),
        "header size",
        size,
    )?;
    if h.total_size != file_size {
        return Err(truncated(file_size, h.total_size));
    }
    let objects = h.num_objects;
    let objects_ok = (1..=MAX_OBJECTS).contains(&objects);
    ensure(objects_ok, header_at!(num_objects), "object count", objects)?;
    let counters = h.num_counters;
    ensure(
        counters <= MAX_COUNTERS,
        header_at!(num_counters),
        "counter count",
        counters,
    )?;
    let freq_ok = h.timer_freq == prfdata_wire::filetime::OBJECT_FREQUENCY as u64;
    ensure(
        freq_ok,
        header_at!(timer_freq),
        "object timer frequency",
        h.timer_freq,
    )?;
    let objects_at = h.objects_offset;
    let objects_at_ok = objects_at == HEADER_SIZE as u32;
    ensure(
        objects_at_ok,
        header_at!(objects_offset),
        "objects offset",
        objects_at,
    )?;
    // Both counts were bounded above: these are below 2^32.
    let counters_at = HEADER_SIZE as u64 + u64::from(objects) * OBJECT_RECORD_SIZE as u64;
    let at_ok = u64::from(h.counters_offset) == counters_at;
    ensure(
        at_ok,
        header_at!(counters_offset),
        "counters offset",
        h.counters_offset,
    )?;
    let records_end = counters_at + u64::from(counters) * COUNTER_RECORD_SIZE as u64;
    if records_end > file_size {
        return Err(truncated(file_size, records_end));
    }
    check_members(h, records_end, file_size)?;
    Ok((counters_at, records_end))
}

/// The members table ([`LAYOUT_VERSION`] 7) of a block whose records end at `records_end`:
/// after them, 64-aligned, inside the file. Readers only list it (`BlockReader::members`), but
/// a block that misplaces it was not laid out by prfdata. Between them lies the histograms'
/// descriptor region ([`LAYOUT_VERSION`] 11): at most the most words a descriptor takes for
/// each histogram the counters can hold (three counters each).
fn check_members(h: &BlockHeader, records_end: u64, file_size: u64) -> Result<(), ReadError> {
    let members_at = u64::from(h.members_offset);
    let members_end = members_at + u64::from(h.max_members) * MEMBER_ENTRY_SIZE as u64;
    let align = REGION_ALIGN as u64;
    let descriptors = u64::from(h.num_counters / 3) * (WORD * MAX_DESCRIPTOR_WORDS) as u64;
    let most = (records_end.next_multiple_of(WORD as u64) + descriptors).next_multiple_of(align);
    let members_ok = members_at.is_multiple_of(align)
        && members_at >= records_end.next_multiple_of(align)
        && members_at <= most
        && h.max_members == MAX_MEMBERS;
    ensure(
        members_ok,
        header_at!(members_offset),
        "members table",
        h.members_offset,
    )?;
    if members_end > file_size {
        return Err(truncated(file_size, members_end));
    }
    Ok(())
}

/// The histograms' descriptor region of a block whose records end at `records_end`: from
/// there, 8-aligned, to the members table (checked inside the file by `check_header`), its
/// words read once.
fn descriptor_region(
    raw: &RawBlock,
    header: &BlockHeader,
    records_end: u64,
    file_size: u64,
) -> Result<histograms::Region, ReadError> {
    let start = records_end.next_multiple_of(WORD as u64);
    let end = u64::from(header.members_offset);
    // Both below the file size (checked), 8-aligned: a whole number of words, in a usize.
    let bytes = usize::try_from(end - start)
        .ok()
        .zip(usize::try_from(start).ok())
        .and_then(|(len, at)| raw.snapshot_bytes(at, len))
        .ok_or(truncated(file_size, end))?;
    let words = bytes
        .chunks_exact(WORD)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
        .collect();
    Ok(histograms::Region { start, words })
}

/// Checks the counter record at offset `at`.
fn check_counter(rec: &CounterRecord, at: u64) -> Result<CounterInfo, ReadError> {
    let field_at = |offset: usize| at + offset as u64;
    // Numbers have the size their type says; text (PERF_COUNTER_TEXT) an even size up to
    // MAX_INSTANCE_NAME units, 8-aligned as the writer places it.
    // A histogram: whole words, its descriptor then its buckets (checked with its object).
    let is_text = rec.counter_type == winperf::PERF_COUNTER_TEXT;
    let is_histogram = rec.counter_type == winperf::PERF_PRFDATA_HISTOGRAM;
    let size_ok = match winperf::counter_size(rec.counter_type) {
        Some(n) => n == rec.size,
        None if is_histogram => {
            rec.size > 0 && rec.size.is_multiple_of(WORD as u32) && rec.size <= MAX_COUNTER_BLOCK
        }
        None => {
            is_text
                && rec.size > 0
                && rec.size.is_multiple_of(NAME_UNIT_SIZE as u32)
                && rec.size <= NAME_UNIT_SIZE as u32 * MAX_INSTANCE_NAME
        }
    };
    let type_ok =
        size_ok && (is_histogram || rec.counter_type & winperf::PERF_COUNTER_HISTOGRAM_TYPE == 0);
    let type_at = field_at(offset_of!(CounterRecord, counter_type));
    ensure(type_ok, type_at, "counter type / size", rec.counter_type)?;
    let align = if is_text || is_histogram {
        WORD as u32
    } else {
        rec.size
    };
    let place_ok = rec.size == 0
        || (rec.block_offset >= COUNTER_BLOCK_HEADER as u32
            && rec.block_offset.is_multiple_of(align));
    let place_at = field_at(offset_of!(CounterRecord, block_offset));
    ensure(place_ok, place_at, "counter offset", rec.block_offset)?;
    // A base, and a histogram's buckets, have no name of their own (the histogram's is its
    // sum's); every other counter has an even name offset.
    let is_base = winperf::is_base(rec.counter_type) || is_histogram;
    let name_offset = (rec.name_offset != NO_NAME).then_some(rec.name_offset);
    let name_ok = match name_offset {
        Some(n) => !is_base && map_rules::offset(n).is_ok(),
        None => is_base,
    };
    ensure(name_ok, at, "counter name offset", rec.name_offset)?;
    let source = check_source(rec, at, !is_base && !is_text, is_text)?;
    Ok(CounterInfo {
        name_offset,
        counter_type: rec.counter_type,
        size: rec.size,
        block_offset: rec.block_offset,
        default_scale: rec.default_scale,
        detail_level: rec.detail_level,
        factor: source.factor,
        on_demand: source.on_demand,
        parts: rec.parts,
        part_count: source.part_count,
        aggregate: Aggregate::from_code(rec.aggregate),
        shard: source.shard,
        histogram: rec.histogram,
    })
}

/// What [`check_source`] reads from a counter record.
struct SourceFields {
    factor: Option<Factor>,
    on_demand: bool,
    /// At most MAX_SUM_PARTS (8).
    part_count: u8,
    shard: Option<u32>,
}

/// A counter record's stat flags, scale factor, sum parts, aggregation rule and shard word,
/// checked with the map's counter rules (`numeric`: neither a base nor text).
fn check_source(
    rec: &CounterRecord,
    at: u64,
    numeric: bool,
    is_text: bool,
) -> Result<SourceFields, ReadError> {
    let field_at = |offset: usize| at + offset as u64;
    let flags_at = field_at(offset_of!(CounterRecord, stat_flags));
    let flags = rec.stat_flags;
    ensure(
        flags & !STAT_FLAGS == 0,
        flags_at,
        "counter stat flags",
        flags,
    )?;
    let factor = Factor::from_flags(flags, rec.factor);
    let has_factor = flags & (winperf::PSTF_FACTOR_MULTIPLY | winperf::PSTF_FACTOR_DIVIDE) != 0;
    let factor_at = field_at(offset_of!(CounterRecord, factor));
    ensure(
        has_factor == factor.is_some(),
        factor_at,
        "counter scale factor",
        rec.factor,
    )?;
    let complex = flags & winperf::PSTF_COMPLEX != 0;
    let parts_ok = if complex {
        numeric && counter::sum_len(rec.part_count as usize).is_ok()
    } else {
        rec.part_count == 0
    };
    let parts_at = field_at(offset_of!(CounterRecord, part_count));
    ensure(parts_ok, parts_at, "counter sum parts", rec.part_count)?;
    // AGG_SUM (1) to AGG_LAST (5) are the rules of `counter::AGGREGATES`, in its order.
    let rule = (rec.aggregate as usize).checked_sub(1);
    let rule_ok =
        rec.aggregate <= AGG_LAST && counter::aggregate(rule, is_text, false, false).is_ok();
    let rule_at = field_at(offset_of!(CounterRecord, aggregate));
    ensure(rule_ok, rule_at, "counter aggregation rule", rec.aggregate)?;
    let on_demand = flags & winperf::PSTF_FUNCPTR != 0;
    let asked_ok = !on_demand || counter::on_demand(false, complex, numeric).is_ok();
    ensure(asked_ok, flags_at, "counter stat flags", flags)?;
    let shard = rec.shard.checked_sub(1);
    let wide_count = numeric && rec.size == LARGE_SIZE;
    // The word is checked against the object's shard line, and the count of sharded counters
    // against its limit, with the object (a histogram's buckets take several words).
    let histogram = rec.counter_type == winperf::PERF_PRFDATA_HISTOGRAM;
    let shard_ok = shard
        .is_none_or(|_| histogram || counter::sharded(complex || on_demand, wide_count, 0).is_ok());
    let shard_at = field_at(offset_of!(CounterRecord, shard));
    ensure(shard_ok, shard_at, "counter shard word", rec.shard)?;
    Ok(SourceFields {
        factor,
        on_demand,
        // At most MAX_SUM_PARTS (8), checked above.
        part_count: if complex { rec.part_count as u8 } else { 0 },
        shard,
    })
}

/// Checks the object record at offset `off` against the counters (whose records start at
/// `counters_at`) and the file size.
fn check_object(
    rec: &ObjectRecord,
    off: u64,
    counters: &[CounterInfo],
    (counters_at, file_size): (u64, u64),
    region: &histograms::Region,
) -> Result<ObjectInfo, ReadError> {
    let range = check_object_head(rec, off, counters.len())?;
    let (stride, block_stride) = check_strides(rec, off)?;
    let own = &counters[range.clone()];
    // Where the object's counter records start.
    let records_at = counters_at + (range.start * COUNTER_RECORD_SIZE) as u64;
    // The shard line's words: checked against MAX_SHARD_LINE by `check_shards`, which sees
    // every histogram's words among the sharded ones.
    let line_words = u64::from(rec.shard_line) / WORD as u64;
    let plans = histograms::check(own, records_at, region, line_words)?;
    // At most MAX_SHARDED counters with shard words, whatever words they take.
    let mut with_words = own.iter().enumerate().filter(|(_, c)| c.shard.is_some());
    if let Some((i, c)) = with_words.nth(MAX_SHARDED as usize) {
        let at = records_at + (i * COUNTER_RECORD_SIZE + offset_of!(CounterRecord, shard)) as u64;
        return Err(field(at, "counter shard word", c.shard.unwrap_or(0) + 1));
    }
    let (sharded, mut aggregates) = word_plans(own, &plans);
    let shards = check_shards(rec, off, &sharded, stride, block_stride)?;
    let mut fixups = check_places(own, records_at, stride)?;
    sum_plans(own, records_at, &mut fixups)?;
    for p in &plans {
        p.add_to(&mut fixups);
        // Each bucket a sum of its own (the descriptor is written by the fix-up).
        aggregates.push(AggPlan {
            offset: p.bucket(0),
            size: LARGE_SIZE,
            rule: AGG_SUM,
            words: p.buckets,
        });
    }
    let instanced = rec.flags & OBJECT_INSTANCED != 0;
    let (max, name_len, slot_size) = check_instances(rec, off, instanced)?;
    check_regions(rec, off, (max, slot_size), block_stride, file_size)?;
    let plain = sharded.is_empty() && fixups.is_plain();
    let histograms = !plans.is_empty();
    Ok(ObjectInfo {
        name_offset: rec.name_offset,
        detail_level: rec.detail_level,
        default_counter: u32::try_from(rec.default_counter).ok(),
        counters: range,
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
        fixups,
        total: rec.flags & OBJECT_TOTAL != 0,
        aggregates,
        plain,
        histograms,
    })
}

/// The sharded words of an object's counters (`own`, with its histograms' `plans`: a sharded
/// histogram's buckets one run), each with its place in the counter block, and the aggregation
/// of each stored numeric counter but the histograms' buckets.
fn word_plans(own: &[CounterInfo], plans: &[histograms::Plan]) -> (Vec<ShardRun>, Vec<AggPlan>) {
    let single = |c: &&CounterInfo| c.counter_type != winperf::PERF_PRFDATA_HISTOGRAM;
    let mut sharded: Vec<ShardRun> = own
        .iter()
        .filter(single)
        .filter_map(|c| {
            Some(ShardRun {
                offset: c.block_offset,
                word: c.shard?,
                words: 1,
            })
        })
        .collect();
    sharded.extend(plans.iter().filter_map(|p| {
        Some(ShardRun {
            offset: p.bucket(0),
            word: p.shard?,
            words: p.buckets,
        })
    }));
    let aggregates = own
        .iter()
        .filter(|c| c.sum_parts().is_none() && matches!(c.size, DWORD_SIZE | LARGE_SIZE))
        .filter_map(|c| {
            Some(AggPlan {
                offset: c.block_offset,
                size: c.size,
                rule: c.aggregate?.code(),
                words: 1,
            })
        })
        .collect();
    (sharded, aggregates)
}

/// The object record's counters (a range of the block's `count` counters), name offset, flags
/// and default counter.
fn check_object_head(
    rec: &ObjectRecord,
    off: u64,
    count: usize,
) -> Result<Range<usize>, ReadError> {
    let first = rec.first_counter as usize;
    let first_at = object_at!(off, first_counter);
    ensure(
        first < count,
        first_at,
        "object's first counter",
        rec.first_counter,
    )?;
    let end = first
        .checked_add(rec.num_counters as usize)
        .filter(|&e| e <= count && e > first);
    let Some(end) = end else {
        let at = object_at!(off, num_counters);
        return Err(field(at, "object's counter count", rec.num_counters));
    };
    let name_ok = map_rules::offset(rec.name_offset).is_ok();
    ensure(name_ok, off, "object name offset", rec.name_offset)?;
    let flags_ok = rec.flags & !(OBJECT_INSTANCED | OBJECT_COSTLY | OBJECT_TOTAL) == 0
        && (rec.flags & OBJECT_TOTAL == 0 || rec.flags & OBJECT_INSTANCED != 0);
    ensure(flags_ok, object_at!(off, flags), "object flags", rec.flags)?;
    // `num_counters` is at most MAX_COUNTERS now (the range above is inside `counters`).
    let default = i64::from(rec.default_counter);
    let default_ok = default >= -1 && default < i64::from(rec.num_counters);
    let at = object_at!(off, default_counter);
    ensure(
        default_ok,
        at,
        "default counter",
        rec.default_counter as u32,
    )?;
    Ok(first..end)
}

/// The object's counter block size and the stride between its counter blocks.
fn check_strides(rec: &ObjectRecord, off: u64) -> Result<(u32, u64), ReadError> {
    let stride = rec.counter_block_size;
    let stride_ok = stride >= COUNTER_BLOCK_HEADER as u32
        && stride.is_multiple_of(WORD as u32)
        && stride <= MAX_COUNTER_BLOCK;
    let at = object_at!(off, counter_block_size);
    ensure(stride_ok, at, "counter block size", stride)?;
    let block_stride = u64::from(rec.block_stride);
    let block_stride_ok = block_stride >= u64::from(stride)
        && block_stride.is_multiple_of(WORD as u64)
        && rec.block_stride <= MAX_BLOCK_STRIDE;
    let at = object_at!(off, block_stride);
    ensure(
        block_stride_ok,
        at,
        "counter block stride",
        rec.block_stride,
    )?;
    Ok((stride, block_stride))
}

/// The object's shard lines, if it has `sharded` counters: inside each stride, after the
/// counter block of `stride` bytes, 8-aligned.
fn check_shards(
    rec: &ObjectRecord,
    off: u64,
    sharded: &[ShardRun],
    stride: u32,
    block_stride: u64,
) -> Result<Option<Shards>, ReadError> {
    let slots_at = object_at!(off, shard_slots);
    if sharded.is_empty() {
        ensure(
            rec.shard_slots == 0,
            slots_at,
            "shard slots",
            rec.shard_slots,
        )?;
        return Ok(None);
    }
    // In u64: a word is any u32 from the file, a run at most MAX_HISTOGRAM_BUCKETS long; each
    // check bounds its value, so the products below stay under 2^40.
    let words = sharded
        .iter()
        .map(|r| u64::from(r.word) + u64::from(r.words))
        .max()
        .unwrap_or(0);
    let shards = Shards {
        start: u64::from(rec.shard_start),
        line: u64::from(rec.shard_line),
        slots: u64::from(rec.shard_slots),
    };
    let slots_ok = rec.shard_slots != 0 && rec.shard_slots <= SHARD_SLOTS;
    ensure(slots_ok, slots_at, "shard slots", rec.shard_slots)?;
    let line_ok = shards.line >= 8 * words
        && rec.shard_line <= MAX_SHARD_LINE
        && shards.line.is_multiple_of(WORD as u64);
    let line_at = object_at!(off, shard_line);
    ensure(line_ok, line_at, "shard line", rec.shard_line)?;
    let start_ok = shards.start >= u64::from(stride)
        && shards.start.is_multiple_of(WORD as u64)
        && shards.start + shards.slots * shards.line <= block_stride;
    let start_at = object_at!(off, shard_start);
    ensure(start_ok, start_at, "shard start", rec.shard_start)?;
    Ok(Some(shards))
}

/// Each of an object's counters (`own`, their records at `records_at`) inside its counter
/// block of `stride` bytes; returns the block's fix-ups with its text counters.
fn check_places(
    own: &[CounterInfo],
    records_at: u64,
    stride: u32,
) -> Result<CounterBlockFixups, ReadError> {
    let mut fixups = CounterBlockFixups::new(stride);
    for (i, c) in own.iter().enumerate() {
        // In u64: a block offset near 2^32 must not wrap past the check.
        let inside = u64::from(c.block_offset) + u64::from(c.size) <= u64::from(stride);
        let at =
            records_at + (i * COUNTER_RECORD_SIZE + offset_of!(CounterRecord, block_offset)) as u64;
        ensure(inside, at, "counter beyond its block", c.block_offset)?;
        if c.counter_type == winperf::PERF_COUNTER_TEXT {
            fixups.text(c.block_offset, c.size);
        }
    }
    Ok(fixups)
}

/// The sums among an object's counters (`own`, their records at `records_at`), each part
/// checked with the map's sum rules, added to `fixups`.
fn sum_plans(
    own: &[CounterInfo],
    records_at: u64,
    fixups: &mut CounterBlockFixups,
) -> Result<(), ReadError> {
    for (i, c) in own.iter().enumerate() {
        let Some(parts) = c.sum_parts() else { continue };
        let at = records_at + (i * COUNTER_RECORD_SIZE + offset_of!(CounterRecord, parts)) as u64;
        let bad = || field(at, "counter sum part", i as u64);
        let mut offsets = Vec::with_capacity(parts.len());
        for &p in parts {
            let p = usize::from(p);
            let part = own.get(p).ok_or_else(bad)?;
            let rule = counter::sum_part(counter::Part {
                itself: p == i,
                base: winperf::is_base(part.counter_type),
                sum: part.sum_parts().is_some(),
                other_width: part.size != c.size,
            });
            rule.map_err(|_| bad())?;
            offsets.push(part.block_offset);
        }
        fixups.sum(c.block_offset, c.size, offsets);
    }
    Ok(())
}

/// The object's live list, slots and counter blocks (`max` instances of slots of `slot_size`
/// bytes, counter blocks `block_stride` apart), each 8-aligned and inside the file.
fn check_regions(
    rec: &ObjectRecord,
    off: u64,
    (max, slot_size): (u64, u64),
    block_stride: u64,
    file_size: u64,
) -> Result<(), ReadError> {
    // max <= 2^20, slot_size < 2^12, stride <= 2^20: every product is below 2^41.
    // An instanced object's data region ends with its retired accumulator (LAYOUT_VERSION 6).
    let blocks = if rec.flags & OBJECT_INSTANCED != 0 {
        max + 1
    } else {
        1
    };
    let region_ok = |start: u64, len: u64| {
        start.is_multiple_of(WORD as u64) && start.checked_add(len).is_some_and(|e| e <= file_size)
    };
    let live = rec.live_offset;
    let live_ok = region_ok(live, max * LIVE_ENTRY_SIZE as u64);
    ensure(
        live_ok,
        object_at!(off, live_offset),
        "live list offset",
        live,
    )?;
    let slots = rec.slots_offset;
    let slots_ok = region_ok(slots, max * slot_size);
    ensure(
        slots_ok,
        object_at!(off, slots_offset),
        "slots offset",
        slots,
    )?;
    let data = rec.data_offset;
    let data_ok = region_ok(data, blocks * block_stride);
    ensure(data_ok, object_at!(off, data_offset), "data offset", data)
}

/// An instanced object's instance limit, name limit and slot size (zeros without instances).
fn check_instances(
    rec: &ObjectRecord,
    off: u64,
    instanced: bool,
) -> Result<(u64, u32, u64), ReadError> {
    if !instanced {
        return Ok((0, 0, 0));
    }
    let max_ok = map_rules::instance_max(u64::from(rec.max_instances)).is_ok();
    let at = object_at!(off, max_instances);
    ensure(max_ok, at, "instance limit", rec.max_instances)?;
    let name_ok = map_rules::instance_name_len(u64::from(rec.max_name_len)).is_ok();
    let at = object_at!(off, max_name_len);
    ensure(name_ok, at, "instance name limit", rec.max_name_len)?;
    // max_name_len <= MAX_INSTANCE_NAME: no overflow.
    let min_slot = u64::from(SLOT_HEADER_SIZE as u32 + NAME_UNIT_SIZE as u32 * rec.max_name_len);
    let slot_size = u64::from(rec.slot_size);
    let slot_ok = slot_size >= min_slot
        && slot_size.is_multiple_of(WORD as u64)
        && slot_size <= min_slot + MAX_SLOT_PADDING;
    ensure(
        slot_ok,
        object_at!(off, slot_size),
        "slot size",
        rec.slot_size,
    )?;
    Ok((u64::from(rec.max_instances), rec.max_name_len, slot_size))
}

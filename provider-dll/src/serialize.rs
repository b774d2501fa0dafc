//! A live block as perflib data: PERF_OBJECT_TYPE, PERF_COUNTER_DEFINITION,
//! PERF_INSTANCE_DEFINITION and PERF_COUNTER_BLOCK, per winperf.h.
//!
//! ```text
//! PERF_OBJECT_TYPE            64   TotalByteLength covers everything below
//! PERF_COUNTER_DEFINITION×n   40n  each base right after its counter, name/help index 0
//! then either
//!   PERF_COUNTER_BLOCK        the object's one counter block (NumInstances = -1)
//! or per instance
//!   PERF_INSTANCE_DEFINITION  24   ByteLength = 24 + name bytes (NUL included) padded to 8
//!   UTF-16 name, NUL, padding
//!   PERF_COUNTER_BLOCK        ByteLength a multiple of 8
//! ```
//!
//! Serialised in one pass straight from the mapped block ([`BlockView`]): headers are built
//! locally, names and counter blocks are copied from the mapping into the output with relaxed
//! atomic loads. [`objects_size`] sizes the output first (live counts and name lengths only) so
//! that Collect can answer ERROR_MORE_DATA without writing a byte; [`write_objects`] then writes
//! exactly that many bytes in the same kind of window, and refuses to write a byte past the slice
//! it is given whatever the block says.
//!
//! # What a Collect reuses ([`Prepared`])
//!
//! Most of the output does not change between two Collects; only the counter values do. A
//! [`Prepared`] keeps, per app block:
//!
//! - each object's PERF_OBJECT_TYPE and PERF_COUNTER_DEFINITIONs, title indexes filled in: made
//!   once per block and First Counter / First Help, copied into each Collect's output, the
//!   header patched with the lengths, the instance count and the time;
//! - the PERF_INSTANCE_DEFINITIONs with their names, and the slot of each instance, as the last
//!   kept window wrote them. A window whose sequence value is the one they were recorded in
//!   (the writer moves it for every change of an instance table: names, parents and unique ids
//!   are written only when an instance is added), for the same objects, with the same count of
//!   instances shown in each (instances hidden because their owner died change that count, and
//!   a dead owner stays dead), writes them again as they were. Recorded only in a window that was
//!   then kept, and reused only once two kept windows recorded the same bytes: a window can pass
//!   the sequence check over a block truncated, regrown and written back under it with the same
//!   sequence value, and what it read must not outlive that one Collect. A table whose count
//!   does not match the recording is written from the window.
//!
//! A Collect then writes all the instances of an object in one call
//! ([`InstanceTable::copy_blocks_after`]): per instance its definition and name (its own memory),
//! then its counter block out of the mapping in one bulk copy (every word read whole, wide loads
//! where the processor guarantees that, shard lines added, `_Total` aggregated), with the sizes
//! checked once for all. The serializer then makes the counters a plain copy cannot give wire
//! format (text, sums: the object's [`ObjectInfo::fixups`]). A
//! block that lies about its sequence can make the names served stale, never out of bounds: every
//! slot is checked again when its counter block is copied.
//!
//! Every object's PerfTime is the object timer at collection, the wall clock as a FILETIME, and
//! its PerfFreq [`OBJECT_FREQUENCY`] (see [`prfdata_wire::filetime`]), as NT's Process object has them.
//! An instance's `ParentObjectTitleIndex` / `ParentObjectInstance` are written only when its
//! parent is live in the window and its object is among those written
//! ([`Selection`] makes sure it is); otherwise both are 0.

use std::sync::Arc;

use prfdata::reader::{BlockReader, BlockView, InstanceTable, ObjectInfo, ReadError};
use prfdata_wire::filetime::OBJECT_FREQUENCY;
use prfdata_wire::winperf::INSTANCE_DEFINITION as INSTANCE_DEF;
use prfdata_wire::winperf::{instance_size, COUNTER_DEFINITION as COUNTER_DEF, OBJECT_HEADER};
use prfdata_wire::winperf::{
    PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType, I32, I64, PERF_NO_INSTANCES,
    PERF_NO_UNIQUE_ID, U32,
};
use zerocopy::IntoBytes;

use crate::select::Selection;

pub use crate::select::TitleBase;

/// Bytes [`write_objects`] will write for `objects` in the same state of the block.
///
/// Sums saturate: the sizes come from a block another process wrote, and a size that does not
/// fit a `usize` is simply more than any buffer (ERROR_MORE_DATA), never an overflow.
///
/// # Errors
///
/// What the view returns for an invalid live value.
pub fn objects_size(view: &BlockView<'_>, objects: &[usize]) -> Result<usize, ReadError> {
    let mut total = 0usize;
    for &k in objects {
        let info = &view.reader().objects()[k];
        total = total.saturating_add(OBJECT_HEADER + COUNTER_DEF * info.counters.len());
        let block = info.counter_block_size as usize;
        if !info.instanced {
            total = total.saturating_add(block);
            continue;
        }
        let table = view.instances(k)?;
        for pos in 0..table.len() {
            let one = instance_size(table.name_len(pos)? as usize) + block;
            total = total.saturating_add(one);
        }
    }
    Ok(total)
}

/// At least [`objects_size`], from the live counts alone (every name taken as long as the
/// object allows): when the buffer holds this much, Collect need not size exactly.
///
/// # Errors
///
/// What the view returns for an invalid live count.
pub fn objects_size_bound(view: &BlockView<'_>, objects: &[usize]) -> Result<usize, ReadError> {
    let mut total = 0usize;
    for &k in objects {
        let info = &view.reader().objects()[k];
        total = total.saturating_add(OBJECT_HEADER + COUNTER_DEF * info.counters.len());
        let block = info.counter_block_size as usize;
        total = total.saturating_add(if info.instanced {
            // The synthesised `_Total` (its name is shorter than any limit) is one more.
            let one = instance_size(info.max_name_len.max(6) as usize) + block;
            (view.live_count(k)? as usize + usize::from(info.total)).saturating_mul(one)
        } else {
            block
        });
    }
    Ok(total)
}

/// Writes the objects of `selection` one after the other at the start of `out`; returns the
/// bytes and the objects written. With `out` at least [`objects_size`] bytes for the same window,
/// the bytes are exactly that size.
///
/// `perf_time` is the object timer at collection ([`prfdata_wire::filetime::now`]), every
/// object's PerfTime. Nothing is reused from an earlier Collect: see [`write_prepared`].
///
/// # Errors
///
/// What the view returns for an invalid live value, and [`ReadError::Inconsistent`] if the
/// objects do not fit in `out` (the block changed without its sequence moving): nothing is ever
/// written past `out`.
pub fn write_objects(
    view: &BlockView<'_>,
    selection: &Selection,
    titles: TitleBase,
    perf_time: i64,
    out: &mut [u8],
) -> Result<(usize, u32), ReadError> {
    let parts = object_parts(view.reader(), titles);
    let mut at = 0;
    for &k in selection.objects() {
        at += write_object(
            view,
            k,
            selection,
            &parts[k],
            titles,
            perf_time,
            None,
            &mut out[at..],
        )?;
    }
    Ok((at, selection.objects().len() as u32))
}

/// [`write_objects`] with what `prepared` keeps of earlier Collects of the same block (see the
/// [module docs](self)); what this window writes is recorded in `prepared`, to be reused once
/// [`Prepared::keep`] says the window was kept.
///
/// # Errors
///
/// As [`write_objects`].
///
/// # Panics
///
/// If `prepared` was made for another block or names ([`Prepared::is_for`] says).
pub fn write_prepared(
    view: &BlockView<'_>,
    selection: &Selection,
    prepared: &mut Prepared,
    perf_time: i64,
    out: &mut [u8],
) -> Result<(usize, u32), ReadError> {
    assert!(
        prepared.is_for(view.reader(), prepared.titles),
        "parts prepared for this block"
    );
    // The count shown of each selected object with instances: part of the key.
    let mut lens = std::mem::take(&mut prepared.lens);
    lens.clear();
    for &k in selection.objects() {
        lens.push(if view.reader().objects()[k].instanced {
            view.instances(k)?.len()
        } else {
            0
        });
    }
    let hit = prepared.kept.as_ref().is_some_and(|kept| {
        kept.seq == view.seq() && kept.objects == selection.objects() && kept.lens == lens
    });
    let mut record = if hit {
        None
    } else {
        // Reuse the buffers of the last recording.
        let mut r = prepared.pending.take().unwrap_or_default();
        r.seq = view.seq();
        r.objects.clear();
        r.objects.extend_from_slice(selection.objects());
        r.lens.clear();
        r.lens.extend_from_slice(&lens);
        r.per_object
            .resize_with(selection.objects().len(), Recorded::default);
        r.per_object.truncate(selection.objects().len());
        for o in &mut r.per_object {
            o.bytes.clear();
            o.entries.clear();
        }
        Some(r)
    };
    let titles = prepared.titles;
    let mut at = 0;
    for (j, &k) in selection.objects().iter().enumerate() {
        let source = match (&mut record, &prepared.kept) {
            (Some(r), _) => Some(Instances::Record(&mut r.per_object[j])),
            (None, Some(kept)) => Some(Instances::Reuse(&kept.per_object[j])),
            (None, None) => None,
        };
        at += write_object(
            view,
            k,
            selection,
            &prepared.objects[k],
            titles,
            perf_time,
            source,
            &mut out[at..],
        )?;
    }
    if let Some(r) = record.as_mut() {
        // The key is what was written: the counts of the tables the instances came from.
        r.lens.clear();
        r.lens
            .extend(r.per_object.iter().map(|o| o.entries.len() as u32));
    }
    prepared.pending = record;
    prepared.lens = lens;
    Ok((at, selection.objects().len() as u32))
}

/// What an app's block needs serialised again and again: see the [module docs](self).
#[derive(Debug)]
pub struct Prepared {
    /// The block these parts are for (held, so that no other block can take its address).
    reader: Arc<BlockReader>,
    titles: TitleBase,
    /// Per object of the block.
    objects: Vec<ObjectParts>,
    /// The instance parts reused: recorded by two kept windows alike.
    kept: Option<InstanceParts>,
    /// Recorded by the last kept window, reused once another window records the same.
    candidate: Option<InstanceParts>,
    /// Recorded by the last [`write_prepared`], not known to be kept yet.
    pending: Option<InstanceParts>,
    /// Scratch for the key of each write.
    lens: Vec<u32>,
}

impl Prepared {
    /// The constant parts of `reader`'s objects under `titles`.
    pub fn new(reader: Arc<BlockReader>, titles: TitleBase) -> Prepared {
        Prepared {
            objects: object_parts(&reader, titles),
            reader,
            titles,
            kept: None,
            candidate: None,
            pending: None,
            lens: Vec::new(),
        }
    }

    /// Whether these are the parts of `reader` (the same open block) under `titles`.
    pub fn is_for(&self, reader: &BlockReader, titles: TitleBase) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.reader), reader) && self.titles == titles
    }

    /// The last [`write_prepared`] wrote in a window that was kept: its instance parts are
    /// reused once a second kept window has recorded the same. A window can pass the sequence
    /// check and still have read a block rewritten under it (truncated, regrown and written
    /// back with the same sequence value); a recording is trusted only when two agree.
    pub fn keep(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if self.candidate.as_ref() == Some(&p) {
            self.candidate = None;
            // The old kept buffers become the next recording's.
            self.pending = self.kept.replace(p);
        } else {
            self.pending = self.candidate.replace(p);
        }
    }
}

/// One object's PERF_OBJECT_TYPE (its per-Collect fields zero) and PERF_COUNTER_DEFINITIONs.
#[derive(Debug)]
struct ObjectParts {
    head: PerfObjectType,
    /// [`OBJECT_HEADER`] bytes of room, then the counter definitions.
    defs: Vec<u8>,
}

/// The instance definitions and names of the objects of one kept window, and their key.
#[derive(Debug, Default, PartialEq, Eq)]
struct InstanceParts {
    seq: u64,
    objects: Vec<usize>,
    lens: Vec<u32>,
    /// Per selected object, in selection order.
    per_object: Vec<Recorded>,
}

/// One object's instances as written: definitions and names one after the other, and each
/// instance's slot (the reader's `_Total` number for `_Total`) and definition size.
#[derive(Debug, Default, PartialEq, Eq)]
struct Recorded {
    bytes: Vec<u8>,
    entries: Vec<(u32, u32)>,
}

/// Where [`write_object`] takes or puts its instance definitions.
enum Instances<'r> {
    /// Write them from the window, recording them here.
    Record(&'r mut Recorded),
    /// Write these again.
    Reuse(&'r Recorded),
}

/// Every object's constant parts.
fn object_parts(reader: &BlockReader, titles: TitleBase) -> Vec<ObjectParts> {
    reader
        .objects()
        .iter()
        .map(|info| {
            let counters = &reader.counters()[info.counters.clone()];
            let mut defs = vec![0u8; OBJECT_HEADER];
            defs.reserve(COUNTER_DEF * counters.len());
            for c in counters {
                let (name, help) = c
                    .name_offset
                    .map_or((0, 0), |o| (titles.name(o), titles.help(o)));
                let def = PerfCounterDefinition {
                    default_scale: I32::new(c.default_scale),
                    detail_level: U32::new(c.detail_level),
                    ..PerfCounterDefinition::new(name, help, c.counter_type, c.size, c.block_offset)
                };
                defs.extend_from_slice(def.as_bytes());
            }
            let (name, help) = (titles.name(info.name_offset), titles.help(info.name_offset));
            let default_counter = info.default_counter.and_then(|c| i32::try_from(c).ok());
            let head = PerfObjectType {
                detail_level: U32::new(info.detail_level),
                default_counter: I32::new(default_counter.unwrap_or(-1)),
                num_instances: I32::new(0),
                perf_freq: I64::new(OBJECT_FREQUENCY),
                ..PerfObjectType::new(name, help, counters.len())
            };
            ObjectParts { head, defs }
        })
        .collect()
}

/// Writes object `index` at the start of `out` from its constant `parts`; returns its bytes.
/// Its instances come from the window, or from `source`.
#[allow(clippy::too_many_arguments)]
fn write_object(
    view: &BlockView<'_>,
    index: usize,
    selection: &Selection,
    parts: &ObjectParts,
    titles: TitleBase,
    perf_time: i64,
    source: Option<Instances<'_>>,
    out: &mut [u8],
) -> Result<usize, ReadError> {
    let reader = view.reader();
    let info = &reader.objects()[index];
    let defs = parts.defs.len();
    let block = info.counter_block_size as usize;
    let len = out.len();
    let fits = |end: usize| {
        if end <= len {
            Ok(end)
        } else {
            Err(ReadError::Inconsistent)
        }
    };
    let mut pos = fits(defs)?;
    // The header is written last, when its lengths are known.
    out[OBJECT_HEADER..defs].copy_from_slice(&parts.defs[OBJECT_HEADER..]);
    let num_instances = if info.instanced {
        let table = view.instances(index)?;
        match source {
            // A table that does not hold as many instances as recorded (a block that changed
            // without moving its sequence) is written from the window: the output always
            // agrees with its own header.
            Some(Instances::Reuse(rec)) if rec.entries.len() == table.len() as usize => {
                let end =
                    pos + table.copy_blocks_after(&rec.entries, &rec.bytes, &mut out[pos..])?;
                if !info.fixups().is_plain() {
                    fix_blocks(info, &rec.entries, &mut out[pos..end]);
                }
                pos = end;
            }
            Some(Instances::Record(rec)) => {
                rec.bytes.clear();
                rec.entries.clear();
                pos = write_instances(view, &table, selection, titles, pos, info, out, Some(rec))?;
            }
            Some(Instances::Reuse(_)) | None => {
                pos = write_instances(view, &table, selection, titles, pos, info, out, None)?;
            }
        }
        table.len() as i32
    } else {
        let end = fits(pos + block)?;
        view.copy_global_block(index, &mut out[pos..end])?;
        info.fixups().apply(&mut out[pos..end]);
        pos = end;
        PERF_NO_INSTANCES
    };
    let header = PerfObjectType {
        total_byte_length: U32::new(pos as u32),
        num_instances: I32::new(num_instances),
        perf_time: I64::new(perf_time),
        ..parts.head
    };
    out[..OBJECT_HEADER].copy_from_slice(header.as_bytes());
    Ok(pos)
}

/// Writes the instances of `table` (of object `info`) from the window at `out[pos..]`, each
/// counter block fixed up, recording their definitions in `record`; returns the end.
#[allow(clippy::too_many_arguments)]
fn write_instances(
    view: &BlockView<'_>,
    table: &InstanceTable<'_>,
    selection: &Selection,
    titles: TitleBase,
    mut pos: usize,
    info: &ObjectInfo,
    out: &mut [u8],
    mut record: Option<&mut Recorded>,
) -> Result<usize, ReadError> {
    let reader = view.reader();
    let (block, fixups) = (info.counter_block_size as usize, info.fixups());
    let len = out.len();
    for p in 0..table.len() {
        let inst = table.get(p)?;
        let def_size = instance_size(inst.name_len as usize);
        let end = pos + def_size + block;
        if end > len {
            return Err(ReadError::Inconsistent);
        }
        let (def, data) = out[pos..end].split_at_mut(def_size);
        let (parent_title, parent_pos) = inst
            .parent
            .filter(|parent| selection.contains(parent.object as usize))
            .and_then(|parent| {
                let pinfo = reader.objects().get(parent.object as usize)?;
                Some((
                    titles.name(pinfo.name_offset),
                    view.parent_position(parent)?,
                ))
            })
            .unwrap_or((0, 0));
        let unique_id = inst.unique_id.unwrap_or(PERF_NO_UNIQUE_ID);
        let head = PerfInstanceDefinition::named(
            inst.name_len as usize,
            unique_id,
            (parent_title, parent_pos),
        );
        def[..INSTANCE_DEF].copy_from_slice(head.as_bytes());
        // The name, then its NUL and padding as zeros.
        table.copy_name(&inst, &mut def[INSTANCE_DEF..])?;
        if let Some(rec) = record.as_deref_mut() {
            rec.bytes.extend_from_slice(def);
            rec.entries.push((inst.slot, def_size as u32));
        }
        table.copy_counter_block(&inst, data)?;
        if !fixups.is_plain() {
            fixups.apply(data);
        }
        pos = end;
    }
    Ok(pos)
}

/// Applies `info`'s fix-ups to the counter blocks [`InstanceTable::copy_blocks_after`] wrote in
/// `out`, each after its instance definition of `entries`' length.
fn fix_blocks(info: &ObjectInfo, entries: &[(u32, u32)], out: &mut [u8]) {
    let block = info.counter_block_size as usize;
    let mut at = 0;
    for &(_, prefix) in entries {
        at += prefix as usize;
        if let Some(data) = out.get_mut(at..at + block) {
            info.fixups().apply(data);
        }
        at += block;
    }
}

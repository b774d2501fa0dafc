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
//! Every object's PerfTime is the object timer at collection, the wall clock as a FILETIME, and
//! its PerfFreq [`OBJECT_FREQUENCY`] (see [`prfdata::clock`]), as NT's Process object has them.
//! An instance's `ParentObjectTitleIndex` / `ParentObjectInstance` are written only when its
//! parent is live in the window and its object is among those written
//! ([`Selection`] makes sure it is); otherwise both are 0.

use prfdata::clock::OBJECT_FREQUENCY;
use prfdata::reader::{BlockView, ReadError};
use prfdata::winperf::{
    PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType, PERF_NO_INSTANCES,
    PERF_NO_UNIQUE_ID,
};
use zerocopy::IntoBytes;

use crate::select::Selection;

/// Size of PERF_OBJECT_TYPE.
const OBJECT_HEADER: usize = 64;
/// Size of PERF_COUNTER_DEFINITION.
const COUNTER_DEF: usize = 40;
/// Size of PERF_INSTANCE_DEFINITION.
const INSTANCE_DEF: usize = 24;

pub use crate::select::TitleBase;

/// Bytes of an instance definition with its name: 24 + (len + 1) × 2, padded to 8. `name_units`
/// is a length the reader checked against the object's limit (at most 1024).
#[inline]
fn instance_def_size(name_units: usize) -> usize {
    (INSTANCE_DEF + (name_units + 1) * 2).next_multiple_of(8)
}

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
            let one = instance_def_size(table.name_len(pos)? as usize) + block;
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
            let one = instance_def_size(info.max_name_len.max(6) as usize) + block;
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
/// `perf_time` is the object timer at collection ([`prfdata::clock::filetime_now`]), every
/// object's PerfTime.
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
    let mut at = 0;
    for &k in selection.objects() {
        at += write_object(view, k, selection, titles, perf_time, &mut out[at..])?;
    }
    Ok((at, selection.objects().len() as u32))
}

/// Writes object `index` at the start of `out`; returns its bytes.
fn write_object(
    view: &BlockView<'_>,
    index: usize,
    selection: &Selection,
    titles: TitleBase,
    perf_time: i64,
    out: &mut [u8],
) -> Result<usize, ReadError> {
    let reader = view.reader();
    let info = &reader.objects()[index];
    let counters = &reader.counters()[info.counters.clone()];
    let defs = OBJECT_HEADER + COUNTER_DEF * counters.len();
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
    let mut def_at = OBJECT_HEADER;
    for c in counters {
        let def = PerfCounterDefinition {
            byte_length: COUNTER_DEF as u32,
            counter_name_title_index: c.name_offset.map_or(0, |o| titles.name(o)),
            counter_name_title: 0,
            counter_help_title_index: c.name_offset.map_or(0, |o| titles.help(o)),
            counter_help_title: 0,
            default_scale: c.default_scale,
            detail_level: c.detail_level,
            counter_type: c.counter_type,
            counter_size: c.size,
            counter_offset: c.block_offset,
        };
        out[def_at..def_at + COUNTER_DEF].copy_from_slice(def.as_bytes());
        def_at += COUNTER_DEF;
    }
    let num_instances = if info.instanced {
        let table = view.instances(index)?;
        for p in 0..table.len() {
            let inst = table.get(p)?;
            let def_size = instance_def_size(inst.name_len as usize);
            let end = fits(pos + def_size + block)?;
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
            let head = PerfInstanceDefinition {
                byte_length: def_size as u32,
                parent_object_title_index: parent_title,
                parent_object_instance: parent_pos,
                unique_id: inst.unique_id.unwrap_or(PERF_NO_UNIQUE_ID),
                name_offset: INSTANCE_DEF as u32,
                name_length: (inst.name_len + 1) * 2,
            };
            def[..INSTANCE_DEF].copy_from_slice(head.as_bytes());
            // The name, then its NUL and padding as zeros.
            table.copy_name(&inst, &mut def[INSTANCE_DEF..])?;
            table.copy_counter_block(&inst, data)?;
            pos = end;
        }
        table.len() as i32
    } else {
        let end = fits(pos + block)?;
        view.copy_global_block(index, &mut out[pos..end])?;
        pos = end;
        PERF_NO_INSTANCES
    };
    let header = PerfObjectType {
        total_byte_length: pos as u32,
        definition_length: defs as u32,
        header_length: OBJECT_HEADER as u32,
        object_name_title_index: titles.name(info.name_offset),
        object_name_title: 0,
        object_help_title_index: titles.help(info.name_offset),
        object_help_title: 0,
        detail_level: info.detail_level,
        num_counters: counters.len() as u32,
        default_counter: info
            .default_counter
            .and_then(|c| i32::try_from(c).ok())
            .unwrap_or(-1),
        num_instances,
        code_page: 0,
        perf_time,
        perf_freq: OBJECT_FREQUENCY,
    };
    out[..OBJECT_HEADER].copy_from_slice(header.as_bytes());
    Ok(pos)
}

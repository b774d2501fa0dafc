//! A block snapshot as perflib data: PERF_OBJECT_TYPE, PERF_COUNTER_DEFINITION,
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
//! Sizes are computed first ([`object_size`]) so that Collect can answer ERROR_MORE_DATA without
//! writing a byte; [`write_object`] then writes exactly that many bytes.

use prfdata::block::reader::{BlockReader, ObjectInfo, ObjectSnapshot, Snapshot};
use prfdata::winperf::{
    PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType, PERF_NO_INSTANCES,
};
use zerocopy::IntoBytes;

/// Size of PERF_OBJECT_TYPE.
const OBJECT_HEADER: usize = 64;
/// Size of PERF_COUNTER_DEFINITION.
const COUNTER_DEF: usize = 40;
/// Size of PERF_INSTANCE_DEFINITION.
const INSTANCE_DEF: usize = 24;

/// The name and help indexes an app was given by lodctr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TitleBase {
    /// `First Counter` of the app's `Performance` key.
    pub first_counter: u32,
    /// `First Help`.
    pub first_help: u32,
}

impl TitleBase {
    /// The name index of a symbolic offset.
    pub fn name(&self, offset: u32) -> u32 {
        self.first_counter.wrapping_add(offset)
    }
    /// The help index of a symbolic offset.
    pub fn help(&self, offset: u32) -> u32 {
        self.first_help.wrapping_add(offset)
    }
}

/// Bytes of an instance definition with its name: 24 + (len + 1) × 2, padded to 8.
fn instance_def_size(name_units: usize) -> usize {
    (INSTANCE_DEF + (name_units + 1) * 2).next_multiple_of(8)
}

/// Bytes `write_object` will write for object `index`.
pub fn object_size(reader: &BlockReader, snap: &Snapshot, index: usize) -> usize {
    let info = &reader.objects()[index];
    let obj = &snap.objects[index];
    let defs = OBJECT_HEADER + COUNTER_DEF * info.counters.len();
    if !info.instanced {
        return defs + snap.global_block(obj).len();
    }
    defs + obj
        .instances
        .iter()
        .map(|i| instance_def_size(snap.name(i).len()) + snap.instance_block(i).len())
        .sum::<usize>()
}

/// A cursor over the caller's buffer.
struct Out<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Out<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }
    fn zeros(&mut self, n: usize) {
        self.buf[self.pos..self.pos + n].fill(0);
        self.pos += n;
    }
}

/// Writes object `index` at the start of `buf`, which must hold at least [`object_size`] bytes;
/// returns the bytes written (exactly `object_size`).
///
/// `perf_time` is the object's timer at collection, for object-timer counters.
///
/// # Panics
///
/// If `buf` is shorter than [`object_size`] (a bug in the caller: nothing is written past it).
pub fn write_object(
    reader: &BlockReader,
    snap: &Snapshot,
    index: usize,
    titles: TitleBase,
    perf_time: i64,
    buf: &mut [u8],
) -> usize {
    let info: &ObjectInfo = &reader.objects()[index];
    let obj: &ObjectSnapshot = &snap.objects[index];
    let counters = &reader.counters()[info.counters.clone()];
    let total = object_size(reader, snap, index);
    assert!(buf.len() >= total, "Collect sized the buffer first");
    let mut out = Out {
        buf: &mut buf[..total],
        pos: 0,
    };
    let header = PerfObjectType {
        total_byte_length: total as u32,
        definition_length: (OBJECT_HEADER + COUNTER_DEF * counters.len()) as u32,
        header_length: OBJECT_HEADER as u32,
        object_name_title_index: titles.name(info.name_offset),
        object_name_title: 0,
        object_help_title_index: titles.help(info.name_offset),
        object_help_title: 0,
        detail_level: info.detail_level,
        num_counters: counters.len() as u32,
        default_counter: info.default_counter,
        num_instances: if info.instanced {
            obj.instances.len() as i32
        } else {
            PERF_NO_INSTANCES
        },
        code_page: 0,
        perf_time,
        perf_freq: reader.header().timer_freq as i64,
    };
    out.put(header.as_bytes());
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
        out.put(def.as_bytes());
    }
    if !info.instanced {
        out.put(snap.global_block(obj));
    } else {
        for inst in &obj.instances {
            let name = snap.name(inst);
            let (parent_title, parent_pos) = inst
                .parent
                .and_then(|(pobj, pslot)| {
                    let pinfo = reader.objects().get(pobj as usize)?;
                    let pos = snap
                        .objects
                        .get(pobj as usize)?
                        .instances
                        .iter()
                        .position(|p| p.slot == pslot)?;
                    Some((titles.name(pinfo.name_offset), pos as u32))
                })
                .unwrap_or((0, 0));
            let size = instance_def_size(name.len());
            let def = PerfInstanceDefinition {
                byte_length: size as u32,
                parent_object_title_index: parent_title,
                parent_object_instance: parent_pos,
                unique_id: inst.unique_id,
                name_offset: INSTANCE_DEF as u32,
                name_length: ((name.len() + 1) * 2) as u32,
            };
            out.put(def.as_bytes());
            for unit in name {
                out.put(&unit.to_le_bytes());
            }
            out.zeros(size - INSTANCE_DEF - name.len() * 2); // NUL and padding
            out.put(snap.instance_block(inst));
        }
    }
    debug_assert_eq!(out.pos, total);
    out.pos
}

//! The decoder as it was before [`crate::view`], kept for tests only: the
//! view must accept and refuse exactly what it accepted and refused, with the same errors and
//! the same decoded data.
#![allow(dead_code)]

use prfdata_wire::winperf::{
    self, PerfCounterBlock, PerfCounterDefinition, PerfDataBlock, PerfInstanceDefinition,
    PerfObjectType, PERF_NO_INSTANCES, PERF_TEXT_ASCII, PERF_TYPE_MASK, PERF_TYPE_TEXT,
};
use zerocopy::FromBytes;

use crate::decode::{
    CounterDef, DataSnapshot, DecodeError, InstanceData, ObjectData, RawValue, SystemTimeFields,
    SIGNATURE,
};

/// A collection as the old decoder held it: every instance's name and values copied.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Snapshot {
    pub(crate) version: u32,
    pub(crate) revision: u32,
    pub(crate) total_byte_length: u32,
    pub(crate) header_length: u32,
    pub(crate) default_object: i32,
    pub(crate) system_time: SystemTimeFields,
    pub(crate) perf_time: i64,
    pub(crate) perf_freq: i64,
    pub(crate) perf_time_100nsec: i64,
    pub(crate) system_name: String,
    pub(crate) objects: Vec<Object>,
}

/// An object as the old decoder held it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Object {
    pub(crate) offset: usize,
    pub(crate) name_index: u32,
    pub(crate) help_index: u32,
    pub(crate) detail_level: u32,
    pub(crate) default_counter: i32,
    pub(crate) num_instances: i32,
    pub(crate) code_page: u32,
    pub(crate) perf_time: i64,
    pub(crate) perf_freq: i64,
    pub(crate) counters: Vec<CounterDef>,
    pub(crate) values: Vec<RawValue>,
    pub(crate) instances: Vec<InstanceData>,
}

/// What a snapshot holds, copied out as the old decoder held it.
pub(crate) fn plain(snap: &DataSnapshot) -> Snapshot {
    Snapshot {
        version: snap.version,
        revision: snap.revision,
        total_byte_length: snap.total_byte_length,
        header_length: snap.header_length,
        default_object: snap.default_object,
        system_time: snap.system_time,
        perf_time: snap.perf_time,
        perf_freq: snap.perf_freq,
        perf_time_100nsec: snap.perf_time_100nsec,
        system_name: snap.system_name.clone(),
        objects: snap.objects.iter().map(plain_object).collect(),
    }
}

/// What an object holds, copied out as the old decoder held it.
pub(crate) fn plain_object(o: &ObjectData) -> Object {
    Object {
        offset: o.offset,
        name_index: o.name_index,
        help_index: o.help_index,
        detail_level: o.detail_level,
        default_counter: o.default_counter,
        num_instances: o.num_instances,
        code_page: o.code_page,
        perf_time: o.perf_time,
        perf_freq: o.perf_freq,
        counters: o.counters.clone(),
        values: o.values().map(|v| v.to_vec()).unwrap_or_default(),
        instances: o.instance_data(),
    }
}

fn read<T: FromBytes>(
    bytes: &[u8],
    offset: usize,
    limit: usize,
    what: &'static str,
) -> Result<T, DecodeError> {
    let need = core::mem::size_of::<T>();
    let available = limit.saturating_sub(offset);
    if available < need {
        return Err(DecodeError::Truncated {
            offset,
            what,
            need: need as u64,
            available: available as u64,
        });
    }
    // In bounds: offset + need <= limit <= bytes.len().
    T::read_from_bytes(&bytes[offset..offset + need]).map_err(|_| DecodeError::Truncated {
        offset,
        what,
        need: need as u64,
        available: available as u64,
    })
}

fn span(
    start: usize,
    len: u64,
    limit: usize,
    at: usize,
    what: &'static str,
) -> Result<usize, DecodeError> {
    let available = limit.saturating_sub(start) as u64;
    if len > available {
        return Err(DecodeError::Truncated {
            offset: at,
            what,
            need: len,
            available,
        });
    }
    Ok(start + len as usize)
}

fn field(offset: usize, what: &'static str, value: i64, expected: &'static str) -> DecodeError {
    DecodeError::Field {
        offset,
        what,
        value,
        expected,
    }
}

fn check_utf16(
    bytes: &[u8],
    start: usize,
    end: usize,
    what: &'static str,
) -> Result<(), DecodeError> {
    let units = bytes[start..end]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0);
    if char::decode_utf16(units).all(|c| c.is_ok()) {
        Ok(())
    } else {
        Err(DecodeError::Utf16 {
            offset: start,
            what,
        })
    }
}

fn utf16(
    bytes: &[u8],
    start: usize,
    end: usize,
    what: &'static str,
) -> Result<String, DecodeError> {
    let units = bytes[start..end]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0);
    let mut out = String::with_capacity((end - start) / 2);
    for c in char::decode_utf16(units) {
        out.push(c.map_err(|_| DecodeError::Utf16 {
            offset: start,
            what,
        })?);
    }
    Ok(out)
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
    const WHAT: &str = "PERF_DATA_BLOCK";
    let header: PerfDataBlock = read(bytes, 0, bytes.len(), WHAT)?;
    if header.signature.map(|u| u.get()) != SIGNATURE {
        return Err(DecodeError::Signature { offset: 0 });
    }
    if header.little_endian.get() != 1 {
        return Err(field(
            8,
            "PERF_DATA_BLOCK.LittleEndian",
            header.little_endian.get().into(),
            "must be 1",
        ));
    }
    let total = span(
        0,
        header.total_byte_length.get().into(),
        bytes.len(),
        20,
        "PERF_DATA_BLOCK (TotalByteLength)",
    )?;
    let header_len = header.header_length.get() as usize;
    if header_len < core::mem::size_of::<PerfDataBlock>() || header_len > total {
        return Err(field(
            24,
            "PERF_DATA_BLOCK.HeaderLength",
            header.header_length.get().into(),
            "must be at least 88 and at most TotalByteLength",
        ));
    }
    let name_start = header.system_name_offset.get() as usize;
    if name_start > header_len {
        return Err(field(
            84,
            "PERF_DATA_BLOCK.SystemNameOffset",
            header.system_name_offset.get().into(),
            "must lie inside the header (HeaderLength)",
        ));
    }
    let name_end = span(
        name_start,
        header.system_name_length.get().into(),
        header_len,
        80,
        "system name (SystemNameLength)",
    )?;
    let system_name = utf16(bytes, name_start, name_end, "system name")?;

    let mut objects = Vec::new();
    let mut offset = header_len;
    for _ in 0..header.num_object_types.get() {
        let (object, next) = decode_object(bytes, offset, total)?;
        objects.push(object);
        offset = next;
    }
    Ok(Snapshot {
        version: header.version.get(),
        revision: header.revision.get(),
        total_byte_length: header.total_byte_length.get(),
        header_length: header.header_length.get(),
        default_object: header.default_object.get(),
        system_time: header.system_time.into(),
        perf_time: header.perf_time.get(),
        perf_freq: header.perf_freq.get(),
        perf_time_100nsec: header.perf_time_100nsec.get(),
        system_name,
        objects,
    })
}

pub(crate) fn decode_object(
    bytes: &[u8],
    offset: usize,
    limit: usize,
) -> Result<(Object, usize), DecodeError> {
    walk_object(bytes, offset, limit, true)
}

pub(crate) fn check_object(
    bytes: &[u8],
    offset: usize,
    limit: usize,
) -> Result<usize, DecodeError> {
    walk_object(bytes, offset, limit, false).map(|(_, next)| next)
}

fn walk_object(
    bytes: &[u8],
    offset: usize,
    limit: usize,
    keep: bool,
) -> Result<(Object, usize), DecodeError> {
    let limit = limit.min(bytes.len());
    const HEADER: usize = core::mem::size_of::<PerfObjectType>();
    let obj: PerfObjectType = read(bytes, offset, limit, "PERF_OBJECT_TYPE")?;
    let total = obj.total_byte_length.get() as usize;
    let def_len = obj.definition_length.get() as usize;
    let hdr_len = obj.header_length.get() as usize;
    if total < HEADER {
        return Err(field(
            offset,
            "PERF_OBJECT_TYPE.TotalByteLength",
            total as i64,
            "must be at least 64",
        ));
    }
    let end = span(
        offset,
        total as u64,
        limit,
        offset,
        "PERF_OBJECT_TYPE (TotalByteLength)",
    )?;
    if hdr_len < HEADER || hdr_len > def_len {
        return Err(field(
            offset + 8,
            "PERF_OBJECT_TYPE.HeaderLength",
            hdr_len as i64,
            "must be at least 64 and at most DefinitionLength",
        ));
    }
    if def_len > total {
        return Err(field(
            offset + 4,
            "PERF_OBJECT_TYPE.DefinitionLength",
            def_len as i64,
            "must be at most TotalByteLength",
        ));
    }
    let defs_end = offset + def_len;

    // Counter definitions, each ByteLength long.
    let mut counters = Vec::new();
    let mut at = offset + hdr_len;
    for _ in 0..obj.num_counters.get() {
        let def: PerfCounterDefinition = read(bytes, at, defs_end, "PERF_COUNTER_DEFINITION")?;
        if (def.byte_length.get() as usize) < core::mem::size_of::<PerfCounterDefinition>() {
            return Err(field(
                at,
                "PERF_COUNTER_DEFINITION.ByteLength",
                def.byte_length.get().into(),
                "must be at least 40",
            ));
        }
        let next = span(
            at,
            def.byte_length.get().into(),
            defs_end,
            at,
            "PERF_COUNTER_DEFINITION (ByteLength)",
        )?;
        counters.push(CounterDef {
            name_index: def.counter_name_title_index.get(),
            help_index: def.counter_help_title_index.get(),
            default_scale: def.default_scale.get(),
            detail_level: def.detail_level.get(),
            counter_type: def.counter_type.get(),
            size: def.counter_size.get(),
            offset: def.counter_offset.get(),
            is_base: winperf::is_base(def.counter_type.get()),
            base: None,
            base_of: None,
        });
        at = next;
    }
    for i in 0..counters.len() {
        if winperf::required_base(counters[i].counter_type).is_some()
            && counters.get(i + 1).is_some_and(|next| next.is_base)
        {
            counters[i].base = Some(i + 1);
            counters[i + 1].base_of = Some(i);
        }
    }

    let mut object = Object {
        offset,
        name_index: obj.object_name_title_index.get(),
        help_index: obj.object_help_title_index.get(),
        detail_level: obj.detail_level.get(),
        default_counter: obj.default_counter.get(),
        num_instances: obj.num_instances.get(),
        code_page: obj.code_page.get(),
        perf_time: obj.perf_time.get(),
        perf_freq: obj.perf_freq.get(),
        counters,
        values: Vec::new(),
        instances: Vec::new(),
    };
    let mut at = defs_end;
    if obj.num_instances.get() == PERF_NO_INSTANCES {
        let (values, _) = decode_block(bytes, at, end, &object.counters, keep)?;
        object.values = values;
    } else if obj.num_instances.get() < 0 {
        return Err(field(
            offset + 40,
            "PERF_OBJECT_TYPE.NumInstances",
            obj.num_instances.get().into(),
            "must be -1 (PERF_NO_INSTANCES) or a count",
        ));
    } else {
        if keep {
            // Each instance takes at least 28 bytes (definition and block), which bounds
            // what an untrusted NumInstances can make us reserve.
            let most = (end - at) / 28;
            object
                .instances
                .reserve((obj.num_instances.get() as usize).min(most));
        }
        for _ in 0..obj.num_instances.get() {
            let (instance, next) =
                decode_instance(bytes, at, end, obj.code_page.get(), &object.counters, keep)?;
            object.instances.push(instance);
            at = next;
        }
    }
    Ok((object, end))
}

fn decode_instance(
    bytes: &[u8],
    at: usize,
    limit: usize,
    code_page: u32,
    counters: &[CounterDef],
    keep: bool,
) -> Result<(InstanceData, usize), DecodeError> {
    const SIZE: usize = core::mem::size_of::<PerfInstanceDefinition>();
    let inst: PerfInstanceDefinition = read(bytes, at, limit, "PERF_INSTANCE_DEFINITION")?;
    if (inst.byte_length.get() as usize) < SIZE {
        return Err(field(
            at,
            "PERF_INSTANCE_DEFINITION.ByteLength",
            inst.byte_length.get().into(),
            "must be at least 24",
        ));
    }
    let def_end = span(
        at,
        inst.byte_length.get().into(),
        limit,
        at,
        "PERF_INSTANCE_DEFINITION (ByteLength)",
    )?;
    let name = if inst.name_length.get() == 0 {
        String::new()
    } else {
        let name_start = span(
            at,
            inst.name_offset.get().into(),
            def_end,
            at + 16,
            "instance name (NameOffset)",
        )?;
        let name_end = span(
            name_start,
            inst.name_length.get().into(),
            def_end,
            at + 20,
            "instance name (NameLength)",
        )?;
        if !keep {
            if code_page == 0 {
                check_utf16(bytes, name_start, name_end, "instance name")?;
            }
            String::new()
        } else if code_page == 0 {
            utf16(bytes, name_start, name_end, "instance name")?
        } else {
            let raw = &bytes[name_start..name_end];
            let raw = raw.split(|&b| b == 0).next().unwrap_or(raw);
            String::from_utf8_lossy(raw).into_owned()
        }
    };
    let (values, next) = decode_block(bytes, def_end, limit, counters, keep)?;
    Ok((
        InstanceData {
            name,
            unique_id: inst.unique_id.get(),
            parent_object_title_index: inst.parent_object_title_index.get(),
            parent_object_instance: inst.parent_object_instance.get(),
            values,
        },
        next,
    ))
}

fn decode_block(
    bytes: &[u8],
    at: usize,
    limit: usize,
    counters: &[CounterDef],
    keep: bool,
) -> Result<(Vec<RawValue>, usize), DecodeError> {
    let block: PerfCounterBlock = read(bytes, at, limit, "PERF_COUNTER_BLOCK")?;
    if (block.byte_length.get() as usize) < core::mem::size_of::<PerfCounterBlock>() {
        return Err(field(
            at,
            "PERF_COUNTER_BLOCK.ByteLength",
            block.byte_length.get().into(),
            "must be at least 4",
        ));
    }
    let end = span(
        at,
        block.byte_length.get().into(),
        limit,
        at,
        "PERF_COUNTER_BLOCK (ByteLength)",
    )?;
    let mut values = Vec::with_capacity(if keep { counters.len() } else { 0 });
    for c in counters {
        let start = span(
            at,
            c.offset.into(),
            end,
            at,
            "counter value (CounterOffset)",
        )?;
        let stop = span(
            start,
            c.size.into(),
            end,
            start,
            "counter value (CounterSize)",
        )?;
        let raw = &bytes[start..stop];
        let is_text = c.counter_type & PERF_TYPE_MASK == PERF_TYPE_TEXT;
        let ascii = c.counter_type & PERF_TEXT_ASCII != 0;
        // UTF-16 text: whole units only.
        let text_end = stop - (stop - start) % 2;
        if !keep {
            if is_text && !ascii {
                check_utf16(bytes, start, text_end, "text counter")?;
            }
            continue;
        }
        values.push(if is_text {
            if ascii {
                let text = raw.split(|&b| b == 0).next().unwrap_or(raw);
                RawValue::Text(String::from_utf8_lossy(text).into_owned())
            } else {
                RawValue::Text(utf16(bytes, start, text_end, "text counter")?)
            }
        } else {
            match *raw {
                [] => RawValue::Empty,
                [a, b, c, d] => RawValue::Int(u32::from_le_bytes([a, b, c, d]).into()),
                [a, b, c, d, e, f, g, h] => {
                    RawValue::Int(i64::from_le_bytes([a, b, c, d, e, f, g, h]))
                }
                _ => RawValue::Bytes(raw.to_vec()),
            }
        });
    }
    Ok((values, end))
}

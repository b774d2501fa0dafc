//! The header and the object and counter records of a map's block, as the writer lays them out
//! (and compares an existing block's with).

use zerocopy::IntoBytes;

use crate::layout::*;
use crate::map::offsets::*;
use crate::map::{Instances, MapDef, Source};
use crate::process::ProcessId;
use crate::winperf;
use prfdata_rules::histogram::Descriptor;

/// The header and records of a map's block: the first [`regions_offset`] bytes. `fingerprint`
/// is the map's ([`MapDef::fingerprint`], which a caller that has it already passes on).
pub(crate) fn records_image(
    map: &MapDef,
    fingerprint: u64,
    owner: ProcessId,
    generation: u64,
) -> Vec<u8> {
    let mut image = Vec::with_capacity(regions_offset(map));
    image.extend_from_slice(header(map, fingerprint, owner, generation).as_bytes());
    let mut first_counter = 0u32;
    for i in 0..map.objects.len() {
        image.extend_from_slice(object_record(map, i, first_counter).as_bytes());
        first_counter += map.objects[i].counters.len() as u32;
    }
    for (o, obj) in map.objects.iter().enumerate() {
        for ((c, ctr), at) in obj.counters.iter().enumerate().zip(counter_offsets(obj)) {
            let record = CounterRecord {
                name_offset: ctr.offset.unwrap_or(NO_NAME),
                counter_type: ctr.counter_type,
                size: ctr.value_size().unwrap_or(0),
                block_offset: at as u32,
                default_scale: ctr.default_scale,
                detail_level: ctr.detail.to_winperf(),
                aggregate: crate::map::rule_code(obj, c),
                shard: shard_index(obj, c).map_or(0, |k| k as u32 + 1),
                histogram: descriptor_offset(map, o, c).map_or(0, |at| at as u32),
                ..stat_fields(ctr)
            };
            image.extend_from_slice(record.as_bytes());
        }
    }
    write_descriptors(map, &mut image);
    image.resize(regions_offset(map), 0);
    image
}

/// The descriptor region, after the counter records: each histogram's descriptor words
/// (prfdata-rules' `Descriptor::of` its geometry), little-endian, in counter order, where its
/// record's `histogram` field points.
fn write_descriptors(map: &MapDef, image: &mut Vec<u8>) {
    debug_assert_eq!(image.len(), descriptors_offset(map));
    for ctr in map.objects.iter().flat_map(|obj| obj.counters) {
        if let Source::Histogram { geometry, .. } = ctr.source {
            for word in Descriptor::of(geometry).words() {
                image.extend_from_slice(&word.to_le_bytes());
            }
        }
    }
    debug_assert_eq!(
        image.len(),
        descriptors_offset(map) + 8 * descriptor_region_words(map)
    );
}

/// The block's header as the writer creates it: no instance yet, sequence 0, not closed.
fn header(map: &MapDef, fingerprint: u64, owner: ProcessId, generation: u64) -> BlockHeader {
    let mut app_name = [0u8; 64];
    let n = map.app.len().min(app_name.len());
    app_name[..n].copy_from_slice(&map.app.as_bytes()[..n]);
    BlockHeader {
        magic: MAGIC,
        layout_version: LAYOUT_VERSION,
        header_size: HEADER_SIZE as u32,
        total_size: total_size(map) as u64,
        owner_pid: owner.pid,
        num_objects: map.objects.len() as u32,
        owner_start_time: owner.start_time,
        num_counters: total_counters(map) as u32,
        objects_offset: HEADER_SIZE as u32,
        counters_offset: counters_offset(map) as u32,
        _pad0: 0,
        timer_freq: prfdata_wire::filetime::OBJECT_FREQUENCY as u64,
        seq: 0,
        generation,
        app_name,
        map_fingerprint: fingerprint,
        superseded: 0,
        _pad1: 0,
        od_request: 0,
        od_served: 0,
        od_objects: 0,
        members_offset: members_offset(map) as u32,
        max_members: MAX_MEMBERS,
        closed: 0,
        _reserved: 0,
        optex: [0; 64],
    }
}

/// The record of object `i` of `map`, whose counters start at `first_counter`.
fn object_record(map: &MapDef, i: usize, first_counter: u32) -> ObjectRecord {
    let obj = &map.objects[i];
    let base = object_base(map, i) as u64;
    let regions = object_regions(obj);
    let (max, max_name_len) = match obj.instances {
        Instances::None => (0, 0),
        Instances::Max { max, max_name_len } => (max, max_name_len),
    };
    let instanced = obj.has_instances();
    let mut flags = if instanced { OBJECT_INSTANCED } else { 0 };
    if obj.costly {
        flags |= OBJECT_COSTLY;
    }
    if obj.total && instanced {
        flags |= OBJECT_TOTAL;
    }
    ObjectRecord {
        name_offset: obj.offset,
        detail_level: obj.detail.to_winperf(),
        default_counter: obj.default_counter.map_or(-1, |d| d as i32),
        num_counters: obj.counters.len() as u32,
        first_counter,
        flags,
        max_instances: max,
        max_name_len,
        counter_block_size: counter_block_size(obj) as u32,
        slot_size: slot_size(obj) as u32,
        live_offset: base + regions.live as u64,
        slots_offset: base + regions.slots as u64,
        data_offset: base + regions.data as u64,
        live_count: 0,
        free_head: 0,
        high_water: 0,
        _pad: 0,
        owned_count: 0,
        _pad2: 0,
        block_stride: block_stride(obj) as u32,
        shard_start: shard_start(obj) as u32,
        shard_line: shard_line(obj) as u32,
        shard_slots: shard_slots(obj) as u32,
        shard_owners: if shard_slots(obj) > 0 {
            base + regions.owners as u64
        } else {
            0
        },
        _reserved: [0; 16],
    }
}

/// A counter record's Windows 95 stat-server fields (stat flags, factor, parts), the rest zero.
fn stat_fields(ctr: &crate::map::CounterDef) -> CounterRecord {
    let (mut flags, factor) = ctr.factor.map_or((0, 0), |f| f.to_flags());
    let mut parts = [0u16; MAX_SUM_PARTS];
    let mut part_count = 0;
    match ctr.source {
        Source::Stored | Source::Sharded | Source::Histogram { .. } | Source::HistogramCount => {}
        Source::OnDemand => flags |= winperf::PSTF_FUNCPTR,
        Source::SumOf(list) => {
            flags |= winperf::PSTF_COMPLEX;
            // The map's validation: 1 to MAX_SUM_PARTS parts, each an index among the object's
            // counters (fewer than MAX_COUNTERS, so it fits a u16).
            for (slot, &p) in parts.iter_mut().zip(list) {
                *slot = p as u16;
            }
            part_count = list.len().min(MAX_SUM_PARTS) as u32;
        }
    }
    CounterRecord {
        stat_flags: flags,
        factor,
        parts,
        part_count,
        ..CounterRecord::default()
    }
}

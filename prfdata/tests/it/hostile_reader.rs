//! The block reader on hostile blocks: a real block, then its fields rewritten byte
//! by byte to values that overflow, exceed their limits or break UTF-16. In a debug build (where
//! an overflow panics) every one of them is a typed error naming the offset, or is read as
//! written with lone surrogates served as U+FFFD: never a panic. A proptest does the same with
//! random mutations of a real block.

use std::mem::offset_of;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::common::snapshot::{ReadAll, Snapshot};
use prfdata::layout::MAX_BLOCK_SIZE;
use prfdata::layout::{self, BlockHeader, CounterRecord, ObjectRecord};
use prfdata::map::offsets;
use prfdata::reader::{BlockReader, ReadError};
use proptest::prelude::*;

prfdata::prfdata_map! {
    /// A global object with a text counter, and an object with instances.
    pub mod hm {
        app: "HostileReaderTest",
        object TOTAL = 0 {
            name: "HR Total", help: "t",
            detail: Novice, default: DONE, instances: none, costly: false,
            counters {
                DONE = 2: LargeRawCount { name: "HR Done", help: "d", detail: Novice, scale: 0 },
                NOTE = 4: Text16 { name: "HR Note", help: "n", detail: Novice, scale: 0 },
            }
        }
        object ITEM = 6 {
            name: "HR Item", help: "i",
            detail: Novice, default: HITS, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                HITS = 8: RawCount { name: "HR Hits", help: "h", detail: Novice, scale: 0 },
            }
        }
    }
}

const APP: &str = "HostileReaderTest";

/// A published block in `dir` with two items and a note.
fn published(dir: &Path) -> hm::PrfData {
    let prf = hm::PrfData::activate_in(dir).unwrap();
    prf.add_instance(hm::ITEM, "first").unwrap();
    prf.add_instance(hm::ITEM, "second").unwrap();
    prf.text().set(hm::NOTE, (), "note");
    prf
}

fn open(prf: &hm::PrfData) -> Result<BlockReader, ReadError> {
    BlockReader::open_path(APP, prf.path())
}

fn write(prf: &hm::PrfData, at: u64, bytes: &[u8]) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    file.write_all_at(bytes, at).unwrap();
}

/// Offset of field `field` of object record `object`.
fn object_field(object: usize, field: usize) -> u64 {
    (layout::HEADER_SIZE + object * layout::OBJECT_RECORD_SIZE + field) as u64
}

/// Offset of field `field` of counter record `counter` (counters of all objects, in order).
fn counter_field(counter: usize, field: usize) -> u64 {
    (offsets::counters_offset(&hm::MAP) + counter * layout::COUNTER_RECORD_SIZE + field) as u64
}

/// Offset of field `field` of item slot `s`.
fn item_slot(s: usize, field: usize) -> u64 {
    let map = &hm::MAP;
    let obj = &map.objects[1];
    (offsets::object_base(map, 1)
        + offsets::object_regions(obj).slots
        + s * offsets::slot_size(obj)
        + field) as u64
}

/// Reads the whole block, returning the error if any.
fn read_all(prf: &hm::PrfData) -> Result<Snapshot, ReadError> {
    let reader = open(prf)?;
    let mut snap = Snapshot::default();
    reader.read(&mut snap)?;
    Ok(snap)
}

/// A ByteLength word forged in an instance's counter block (an object with no counter to fix
/// up: the copy's inline path) is copied as the validated size; the counters around it as
/// written.
#[test]
fn a_forged_counter_block_byte_length_is_replaced_by_the_checked_size() {
    let dir = tempfile::tempdir().unwrap();
    let prf = published(dir.path());
    let third = prf.add_instance(hm::ITEM, "third").unwrap();
    prf.get_ctr32(hm::HITS, third)
        .store(77, std::sync::atomic::Ordering::Relaxed);
    let map = &hm::MAP;
    let obj = &map.objects[1];
    let size = offsets::counter_block_size(obj);
    // Every listed slot's block: ByteLength forged.
    for s in 0..3 {
        let at = offsets::data_offset(map, 1) + s * offsets::block_stride(obj);
        write(&prf, at as u64, &0xdead_beef_u32.to_le_bytes());
    }
    let reader = open(&prf).unwrap();
    let blocks = reader
        .read_with(std::time::Duration::from_secs(1), |view| {
            let table = view.instances(1)?;
            let mut blocks = Vec::new();
            for pos in 0..table.len() {
                let mut block = vec![0u8; size];
                table.copy_counter_block(&table.get(pos)?, &mut block)?;
                blocks.push(block);
            }
            Ok(blocks)
        })
        .unwrap();
    assert_eq!(blocks.len(), 3);
    for block in &blocks {
        assert_eq!(
            &block[..4],
            &(size as u32).to_le_bytes(),
            "the checked size"
        );
    }
    let hits = offsets::counter_offset(obj, 0);
    assert_eq!(&blocks[2][hits..hits + 4], &77u32.to_le_bytes());
}

/// Each hostile record field, written alone into a fresh block: the open fails with a field
/// error naming exactly that offset. (Formerly the counter offset near 2^32 panicked
/// in debug builds: `block_offset + size` overflowed a u32.)
#[test]
fn overflowing_and_out_of_limit_record_fields_are_errors_naming_their_offset() {
    let u32s = |v: u32| v.to_ne_bytes().to_vec();
    let u64s = |v: u64| v.to_ne_bytes().to_vec();
    let cases: Vec<(&str, u64, Vec<u8>)> = vec![
        (
            "counter offset near 2^32",
            counter_field(0, offset_of!(CounterRecord, block_offset)),
            u32s(u32::MAX - 7),
        ),
        (
            "text counter offset near 2^32",
            counter_field(1, offset_of!(CounterRecord, block_offset)),
            u32s(u32::MAX - 7),
        ),
        (
            "object count",
            offset_of!(BlockHeader, num_objects) as u64,
            u32s(u32::MAX),
        ),
        (
            "counter count",
            offset_of!(BlockHeader, num_counters) as u64,
            u32s(u32::MAX),
        ),
        (
            "first counter near 2^32",
            object_field(1, offset_of!(ObjectRecord, first_counter)),
            u32s(u32::MAX),
        ),
        (
            "counter count of an object",
            object_field(1, offset_of!(ObjectRecord, num_counters)),
            u32s(u32::MAX),
        ),
        (
            "default counter",
            object_field(0, offset_of!(ObjectRecord, default_counter)),
            u32s(i32::MAX as u32),
        ),
        (
            "instance limit",
            object_field(1, offset_of!(ObjectRecord, max_instances)),
            u32s(u32::MAX),
        ),
        (
            "instance name limit",
            object_field(1, offset_of!(ObjectRecord, max_name_len)),
            u32s(u32::MAX),
        ),
        (
            "slot size",
            object_field(1, offset_of!(ObjectRecord, slot_size)),
            u32s(u32::MAX),
        ),
        (
            "counter block size",
            object_field(1, offset_of!(ObjectRecord, counter_block_size)),
            u32s(u32::MAX - 7),
        ),
        (
            "live list offset",
            object_field(1, offset_of!(ObjectRecord, live_offset)),
            u64s(u64::MAX - 7),
        ),
        (
            "slots offset",
            object_field(1, offset_of!(ObjectRecord, slots_offset)),
            u64s(u64::MAX - 7),
        ),
        (
            "data offset",
            object_field(0, offset_of!(ObjectRecord, data_offset)),
            u64s(u64::MAX - 7),
        ),
    ];
    for (name, at, bytes) in cases {
        let dir = tempfile::tempdir().unwrap();
        let prf = published(dir.path());
        write(&prf, at, &bytes);
        match open(&prf) {
            Err(ReadError::Field { offset, .. }) => assert_eq!(offset, at, "{name}"),
            other => panic!("{name}: expected a field error at {at}, got {other:?}"),
        }
        drop(prf);
    }
}

/// Live values out of their limits: a live count past the instance limit, a listed slot past
/// it, a name length past its limit, a children count past the block's capacity. Each is an
/// error of that read, naming its offset.
#[test]
fn out_of_limit_live_values_are_errors_naming_their_offset() {
    let live_count = object_field(1, layout::LIVE_COUNT_OFFSET);
    let live_list = (offsets::object_base(&hm::MAP, 1)
        + offsets::object_regions(&hm::MAP.objects[1]).live) as u64;
    let cases = [
        ("live count", live_count, u32::MAX),
        ("live list entry", live_list, u32::MAX),
        (
            "name length",
            item_slot(0, layout::slot::NAME_LEN),
            u32::MAX,
        ),
        (
            "children count",
            item_slot(1, layout::slot::CHILDREN),
            u32::MAX,
        ),
    ];
    for (what, at, value) in cases {
        let dir = tempfile::tempdir().unwrap();
        let prf = published(dir.path());
        write(&prf, at, &value.to_ne_bytes());
        match read_all(&prf) {
            Err(ReadError::Field {
                offset, what: got, ..
            }) => {
                assert_eq!((offset, got), (at, what));
            }
            other => panic!("{what}: expected a field error at {at}, got {other:?}"),
        }
    }
}

/// Lone surrogates in an instance name and in a text counter are read as U+FFFD; a valid
/// pair stays.
#[test]
fn lone_surrogates_are_read_as_replacement_characters() {
    let dir = tempfile::tempdir().unwrap();
    let prf = published(dir.path());
    let name = layout::SLOT_HEADER_SIZE;
    write(&prf, item_slot(0, name), &0xDC00u16.to_ne_bytes());
    // "second" -> "s" + pair + lone high + "ond"
    let units: Vec<u8> = [0x73u16, 0xD83D, 0xDE00, 0xD800, 0x6F, 0x6E]
        .iter()
        .flat_map(|u| u.to_ne_bytes())
        .collect();
    write(&prf, item_slot(1, name), &units);
    let note = offsets::object_base(&hm::MAP, 0)
        + offsets::object_regions(&hm::MAP.objects[0]).data
        + offsets::counter_offset(&hm::MAP.objects[0], 1);
    write(&prf, note as u64 + 2, &0xDBFFu16.to_ne_bytes());
    let snap = read_all(&prf).unwrap();
    let names: Vec<String> = snap.objects[1]
        .instances
        .iter()
        .map(|i| String::from_utf16(snap.name(i)).expect("well-formed"))
        .collect();
    assert_eq!(names, ["\u{FFFD}irst", "s\u{1F600}\u{FFFD}on"]);
    let block = snap.global_block(&snap.objects[0]);
    let text_at = offsets::counter_offset(&hm::MAP.objects[0], 1);
    let text: Vec<u16> = block[text_at..text_at + 32]
        .chunks_exact(2)
        .map(|c| u16::from_ne_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    assert_eq!(String::from_utf16(&text).unwrap(), "n\u{FFFD}te");
}

/// A file past the size cap is refused before it is mapped.
#[test]
fn a_block_past_the_size_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let prf = published(dir.path());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    file.set_len(MAX_BLOCK_SIZE + 1).unwrap(); // sparse: nothing is written
    match open(&prf) {
        Err(ReadError::Open(prfdata::Error::TooLarge { size, max, .. })) => {
            assert_eq!((size, max), (MAX_BLOCK_SIZE + 1, MAX_BLOCK_SIZE))
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    file.set_len(0).unwrap();
    std::mem::forget(prf); // its mapping now extends past the file: do not touch it again
}

prfdata::prfdata_map! {
    /// Two objects with instances, for laying one over the other.
    pub mod overlaid {
        app: "OverlaidObjectsTest",
        object X = 0 { name: "OV X", help: "x", instances: { max: 64, name_len: 64 }, counters {
            XC = 2: RawCount { name: "OV XC", help: "c" },
        } }
        object Y = 4 { name: "OV Y", help: "y", instances: { max: 64, name_len: 64 }, counters {
            YC = 6: RawCount { name: "OV YC", help: "c" },
        } }
    }
}

/// Objects whose regions each lie inside the block but over one another (a block prfdata never
/// writes) could answer a Collect with more bytes than the block holds: the one rule that keeps
/// a block's answer within the block's size, and so within the collector's buffer, refuses them.
#[test]
fn objects_laid_over_one_another_are_refused_so_an_answer_never_outgrows_its_block() {
    let dir = tempfile::tempdir().unwrap();
    let prf = overlaid::PrfData::activate_in(dir.path()).unwrap();
    let size = std::fs::metadata(prf.path()).unwrap().len();
    let reader = BlockReader::open_path("OverlaidObjectsTest", prf.path()).unwrap();
    assert!(
        reader.answer_bound() <= size,
        "a real block answers within its size"
    );
    drop(reader);
    // Both objects' regions at the start of the regions area, each as long as the block allows.
    let map = &overlaid::MAP;
    let start = offsets::regions_offset(map) as u64;
    let slot = offsets::slot_size(&map.objects[0]) as u64;
    let stride = offsets::block_stride(&map.objects[0]) as u64;
    let max = ((size - start) / slot).min((size - start) / stride - 1) as u32;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    for object in 0..2 {
        let at = |field| (layout::HEADER_SIZE + object * layout::OBJECT_RECORD_SIZE + field) as u64;
        file.write_all_at(
            &max.to_ne_bytes(),
            at(offset_of!(ObjectRecord, max_instances)),
        )
        .unwrap();
        for field in [
            offset_of!(ObjectRecord, live_offset),
            offset_of!(ObjectRecord, slots_offset),
            offset_of!(ObjectRecord, data_offset),
        ] {
            file.write_all_at(&start.to_ne_bytes(), at(field)).unwrap();
        }
    }
    match BlockReader::open_path("OverlaidObjectsTest", prf.path()) {
        Err(e @ ReadError::Overlapping { need, size: s }) => {
            assert!(need > s && s == size, "{e}");
            assert!(e.to_string().contains("overlap"), "{e}");
        }
        other => panic!("expected the overlapping objects refused, got {other:?}"),
    }
}

/// Where random writes go: anywhere in the header and records (where a wrong value changes
/// how everything else is read), or anywhere at all.
fn mutation() -> impl Strategy<Value = (u64, Vec<u8>)> {
    let records = offsets::regions_offset(&hm::MAP) as u64;
    let total = offsets::total_size(&hm::MAP) as u64;
    let value = prop_oneof![
        any::<u32>().prop_map(|v| v.to_ne_bytes().to_vec()),
        prop_oneof![
            Just(0u32),
            Just(u32::MAX),
            Just(u32::MAX - 7),
            Just(1 << 31)
        ]
        .prop_map(|v| v.to_ne_bytes().to_vec()),
        any::<u64>().prop_map(|v| v.to_ne_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 1..16),
    ];
    (
        prop_oneof![
            // A whole field of a record.
            3 => (0..records / 4).prop_map(|i| 4 * i),
            2 => 0..records,
            1 => 0..total,
        ],
        value,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random mutations of a real block: opening and reading it never panics (this is a debug
    /// build: an overflow would), and whatever is read has well-formed names.
    #[test]
    fn random_mutations_of_a_real_block_never_panic(
        writes in proptest::collection::vec(mutation(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let prf = published(dir.path());
        let total = offsets::total_size(&hm::MAP) as u64;
        for (at, bytes) in &writes {
            let n = bytes.len().min((total - at) as usize);
            write(&prf, *at, &bytes[..n]);
        }
        if let Ok(snap) = read_all(&prf) {
            for obj in &snap.objects {
                for inst in &obj.instances {
                    prop_assert!(String::from_utf16(snap.name(inst)).is_ok());
                }
            }
        }
        drop(prf);
    }
}

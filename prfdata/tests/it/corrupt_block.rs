//! Indexes in the block are untrusted in the writer too: another process of the same user that
//! attaches and scribbles on the instance tables (through the file, with `pwrite`) makes the
//! owner's `add_instance`, `remove_instance`, `instances().remove_tree` and `instances().list`
//! return `Error::Corrupt` naming the object and the field, never write outside the block or panic
//! (in release builds too: `cargo test --release -p prfdata --test corrupt_block`).
//!
//! Regression: a live count beyond the object's limit made `add_instance` panic on a debug
//! assertion in debug builds and write past the live list (SIGSEGV) in release builds.

use crate::common;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use common::testmap::{PrfData, ITEMS, PARTS};
use prfdata::layout::{self, slot};
use prfdata::map::offsets;
use prfdata::map::PerfDataMap;
use prfdata::{Error, InstanceSpec};

/// The child's writes: `offset=value,offset=value` (u32 values, little-endian).
const WRITES_ENV: &str = "PRFDATA_TEST_WRITES";

/// Child role `scribble`: attach to the block (a real attached process of the app), then write
/// the given words into the block's file, outside the protocol, and exit.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if common::role().as_deref() != Some("scribble") {
        return;
    }
    let prf = PrfData::attach_in(&common::child_dir()).expect("the scribbler attaches");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(prf.path())
        .expect("open the block file");
    let writes = std::env::var(WRITES_ENV).expect("writes given");
    for pair in writes.split(',') {
        let (offset, value) = pair.split_once('=').expect("offset=value");
        let (offset, value): (u64, u32) = (offset.parse().unwrap(), value.parse().unwrap());
        file.write_all_at(&value.to_le_bytes(), offset)
            .expect("pwrite");
    }
}

/// Runs a scribbler child on the block in `dir`; returns once it has written and exited.
fn scribble(dir: &Path, writes: &[(u64, u32)]) {
    let list: Vec<String> = writes.iter().map(|(o, v)| format!("{o}={v}")).collect();
    let child = common::spawn_child(
        "corrupt_block::child_entry",
        "scribble",
        dir,
        &[(WRITES_ENV, list.join(","))],
    );
    common::wait_ok(child, Duration::from_secs(30));
}

/// Offset of a field of object `object`'s record.
fn record(object: usize, field: usize) -> u64 {
    (layout::HEADER_SIZE + object * layout::OBJECT_RECORD_SIZE + field) as u64
}

/// Offset of a field of slot `s` of object `object`.
fn slot_field(object: usize, s: u32, field: usize) -> u64 {
    let map = common::testmap::Map::DEF;
    let obj = &map.objects[object];
    (offsets::object_base(map, object)
        + offsets::object_regions(obj).slots
        + s as usize * offsets::slot_size(obj)
        + field) as u64
}

/// Offset of entry `pos` of object `object`'s live list.
fn live_entry(object: usize, pos: u32) -> u64 {
    let map = common::testmap::Map::DEF;
    (offsets::object_base(map, object)
        + offsets::object_regions(&map.objects[object]).live
        + pos as usize * 4) as u64
}

const ITEMS_INDEX: usize = 1;
const PARTS_INDEX: usize = 2;

/// Asserts `result` is `Error::Corrupt` about `object`'s `field`, and that its message names
/// both and the block.
#[track_caller]
fn assert_corrupt<T: std::fmt::Debug>(
    result: Result<T, Error>,
    object: &str,
    field: &str,
    prf: &PrfData,
) {
    match result {
        Err(e @ Error::Corrupt { .. }) => {
            let Error::Corrupt {
                object: o,
                field: f,
                ref path,
                ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!((o, f), (object, field), "{e}");
            assert_eq!(path, prf.path());
            let msg = e.to_string();
            assert!(msg.contains(object) && msg.contains(field), "{msg}");
        }
        other => panic!("expected Error::Corrupt about {object}'s {field}, got {other:?}"),
    }
}

#[test]
fn a_live_count_beyond_the_limit_is_corrupt_not_a_write_past_the_live_list() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = prf.add_instance(ITEMS, "a").unwrap();
    scribble(
        dir.path(),
        &[(record(ITEMS_INDEX, layout::LIVE_COUNT_OFFSET), 0x0FFF_FFF0)],
    );
    assert_corrupt(prf.add_instance(ITEMS, "b"), "ITEMS", "live_count", &prf);
    assert_corrupt(prf.remove_instance(a), "ITEMS", "live_count", &prf);
    assert_corrupt(prf.instances().list(ITEMS), "ITEMS", "live_count", &prf);
    assert_corrupt(prf.instances().remove_tree(a), "ITEMS", "live_count", &prf);
    // Another object's table is untouched and still works.
    let p = prf.add_instance(PARTS, "p").unwrap();
    prf.remove_instance(p).unwrap();
}

#[test]
fn a_free_list_head_naming_a_live_slot_or_no_slot_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = prf.add_instance(ITEMS, "a").unwrap();
    let b = prf.add_instance(ITEMS, "b").unwrap();
    prf.remove_instance(b).unwrap();
    // The head (slot + 1) made to name a's slot: the next add would overwrite a.
    scribble(
        dir.path(),
        &[(record(ITEMS_INDEX, layout::FREE_HEAD_OFFSET), a.slot() + 1)],
    );
    assert_corrupt(prf.add_instance(ITEMS, "c"), "ITEMS", "free_head", &prf);
    assert_eq!(
        prf.instances().name(a).as_deref(),
        Some("a"),
        "nothing was changed"
    );
    scribble(
        dir.path(),
        &[(record(ITEMS_INDEX, layout::FREE_HEAD_OFFSET), 100_000)],
    );
    assert_corrupt(prf.add_instance(ITEMS, "c"), "ITEMS", "free_head", &prf);
}

#[test]
fn a_free_list_link_naming_no_slot_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let _a = prf.add_instance(ITEMS, "a").unwrap();
    let b = prf.add_instance(ITEMS, "b").unwrap();
    prf.remove_instance(b).unwrap();
    scribble(
        dir.path(),
        &[(slot_field(ITEMS_INDEX, b.slot(), slot::NEXT_FREE), u32::MAX)],
    );
    assert_corrupt(prf.add_instance(ITEMS, "c"), "ITEMS", "next_free", &prf);
}

#[test]
fn a_high_water_mark_below_a_live_slot_or_above_the_limit_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = prf.add_instance(ITEMS, "a").unwrap();
    assert_eq!(a.slot(), 0);
    scribble(
        dir.path(),
        &[(record(ITEMS_INDEX, layout::HIGH_WATER_OFFSET), 0)],
    );
    assert_corrupt(prf.add_instance(ITEMS, "b"), "ITEMS", "high_water", &prf);
    assert_eq!(prf.instances().name(a).as_deref(), Some("a"));
    scribble(
        dir.path(),
        &[(record(ITEMS_INDEX, layout::HIGH_WATER_OFFSET), 65)],
    );
    assert_corrupt(prf.add_instance(ITEMS, "b"), "ITEMS", "high_water", &prf);
}

#[test]
fn a_live_list_entry_naming_no_slot_or_a_free_one_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = prf.add_instance(ITEMS, "a").unwrap();
    let b = prf.add_instance(ITEMS, "b").unwrap();
    scribble(dir.path(), &[(live_entry(ITEMS_INDEX, 1), 0xDEAD_BEEF)]);
    assert_corrupt(
        prf.instances().list(ITEMS),
        "ITEMS",
        "live list entry",
        &prf,
    );
    assert_corrupt(prf.remove_instance(a), "ITEMS", "live list entry", &prf);
    // A slot that is free (never used): listing it would hand out a dead instance.
    scribble(dir.path(), &[(live_entry(ITEMS_INDEX, 1), 9)]);
    assert_corrupt(
        prf.instances().list(ITEMS),
        "ITEMS",
        "live list entry",
        &prf,
    );
    // Put back, everything works again.
    scribble(dir.path(), &[(live_entry(ITEMS_INDEX, 1), b.slot())]);
    assert_eq!(prf.instances().list(ITEMS).unwrap(), [a, b]);
    prf.remove_instance(a).unwrap();
    prf.remove_instance(b).unwrap();
}

#[test]
fn a_live_position_that_does_not_point_back_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = prf.add_instance(ITEMS, "a").unwrap();
    let _b = prf.add_instance(ITEMS, "b").unwrap();
    scribble(
        dir.path(),
        &[(slot_field(ITEMS_INDEX, a.slot(), slot::LIVE_POS), 40)],
    );
    assert_corrupt(prf.remove_instance(a), "ITEMS", "live_pos", &prf);
    scribble(
        dir.path(),
        &[(slot_field(ITEMS_INDEX, a.slot(), slot::LIVE_POS), 1)],
    );
    assert_corrupt(prf.remove_instance(a), "ITEMS", "live_pos", &prf);
    assert_corrupt(prf.instances().list(ITEMS), "ITEMS", "live_pos", &prf);
}

#[test]
fn parent_links_and_children_counts_that_cannot_be_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let item = prf.add_instance(ITEMS, "item").unwrap();
    let part = prf
        .add_instance(PARTS, InstanceSpec::named("part").parent(item))
        .unwrap();
    let object_field = slot_field(PARTS_INDEX, part.slot(), slot::PARENT_OBJECT);
    let slot_field_at = slot_field(PARTS_INDEX, part.slot(), slot::PARENT_SLOT);
    let children_at = slot_field(ITEMS_INDEX, item.slot(), slot::CHILDREN);

    // An object index (+ 1) that is no object of the map.
    scribble(dir.path(), &[(object_field, 100)]);
    assert_corrupt(prf.remove_instance(part), "PARTS", "parent_object", &prf);
    // An object without instances (TOTALS, index 0, + 1).
    scribble(dir.path(), &[(object_field, 1)]);
    assert_corrupt(prf.remove_instance(part), "PARTS", "parent_object", &prf);
    // A slot beyond ITEMS' limit.
    scribble(
        dir.path(),
        &[
            (object_field, ITEMS_INDEX as u32 + 1),
            (slot_field_at, 5000),
        ],
    );
    assert_corrupt(prf.remove_instance(part), "PARTS", "parent_slot", &prf);
    // The link restored, the parent's count zeroed: the child cannot be taken off it.
    scribble(
        dir.path(),
        &[(slot_field_at, item.slot()), (children_at, 0)],
    );
    assert_corrupt(prf.remove_instance(part), "PARTS", "children", &prf);
    // A count with no child behind it: the parent's removal names no child.
    scribble(dir.path(), &[(children_at, 1)]);
    prf.remove_instance(part).unwrap();
    scribble(dir.path(), &[(children_at, 3)]);
    assert_corrupt(prf.remove_instance(item), "ITEMS", "children", &prf);
}

#[test]
fn a_cycle_of_parent_links_ends_a_tree_removal() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let item = prf.add_instance(ITEMS, "item").unwrap();
    let p1 = prf
        .add_instance(PARTS, InstanceSpec::named("p1").parent(item))
        .unwrap();
    let p2 = prf
        .add_instance(PARTS, InstanceSpec::named("p2").parent(item))
        .unwrap();
    // p1 names p2 as its parent and p2 names p1: a cycle the writer never makes.
    let link = |of: u32, to: u32| {
        [
            (
                slot_field(PARTS_INDEX, of, slot::PARENT_OBJECT),
                PARTS_INDEX as u32 + 1,
            ),
            (slot_field(PARTS_INDEX, of, slot::PARENT_SLOT), to),
            (slot_field(PARTS_INDEX, of, slot::PARENT_GENERATION), 1),
        ]
    };
    let mut writes = link(p1.slot(), p2.slot()).to_vec();
    writes.extend(link(p2.slot(), p1.slot()));
    writes.push((slot_field(PARTS_INDEX, p1.slot(), slot::CHILDREN), 1));
    writes.push((slot_field(PARTS_INDEX, p2.slot(), slot::CHILDREN), 1));
    scribble(dir.path(), &writes);
    // Terminates, whatever it removes, and leaves a table the writer can go on with.
    let _ = prf.instances().remove_tree(p1);
    let _ = prf.instances().remove_tree(item);
    let _ = prf.instances().list(PARTS);
}

/// Records what prfdata logs, for the test below (other tests of this binary log into it too:
/// the test keeps the messages about its own block).
struct Capture(std::sync::Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        if let Ok(mut logged) = self.0.lock() {
            logged.push((record.level(), record.args().to_string()));
        }
    }
    fn flush(&self) {}
}

static LOGGED: Capture = Capture(std::sync::Mutex::new(Vec::new()));

#[test]
fn a_guard_whose_removal_finds_the_block_corrupt_warns_and_leaves_the_instance() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&LOGGED).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Debug);
    });
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let guard = prf.instances().guard(prf.add_instance(ITEMS, "a").unwrap());
    let a = *guard;
    let count = record(ITEMS_INDEX, layout::LIVE_COUNT_OFFSET);
    scribble(dir.path(), &[(count, 0x0FFF_FFF0)]);
    drop(guard); // must not panic
    let block = prf.path().display().to_string();
    let warnings: Vec<String> = LOGGED
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, msg)| *level == log::Level::Warn && msg.contains(&block))
        .map(|(_, msg)| msg.clone())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("ITEMS") && warnings[0].contains("live_count"),
        "{warnings:?}"
    );
    // The instance stays: with the count repaired, it is still live.
    scribble(dir.path(), &[(count, 1)]);
    assert_eq!(prf.instances().list(ITEMS).unwrap(), [a]);
}

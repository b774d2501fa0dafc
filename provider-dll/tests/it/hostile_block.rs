//! A block is untrusted input: random bytes, truncation and replacement never crash Collect,
//! never make it read out of bounds, never make it write a malformed buffer (names and text
//! are well-formed UTF-16 whatever the block holds), and never panic, even in the provider's
//! own code where no `catch_unwind` would hide it.

use crate::common;
use std::os::unix::fs::FileExt;

use common::{app_a, app_c, env, parse, populate_c, resolved, serial, Provider, ERROR_SUCCESS};
use prfdata::layout::{self, slot};
use prfdata::map::offsets;
use prfdata::map::PerfDataMap;
use prfdata::InstanceSpec;
use proptest::prelude::*;

fn populated() -> app_a::PrfData {
    let prf = app_a::PrfData::activate().unwrap();
    let pool = prf.add_instance(app_a::POOL, "pool").unwrap();
    for i in 0..5 {
        prf.add_instance(
            app_a::WORKER,
            InstanceSpec::named(&format!("w{i}")).parent(pool),
        )
        .unwrap();
    }
    prf
}

/// Collect must succeed (perhaps with no data) and whatever it returns must parse.
fn collect_is_sane(p: &Provider) {
    for q in ["Global", "Costly"] {
        let (out, data) = p.collect(q);
        assert_eq!(out.status, ERROR_SUCCESS);
        parse(&data, out.objects);
    }
}

/// Collects `query` with the provider's own code, linked as a Rust library: a panic there fails
/// the test (the cdylib's `catch_unwind` would turn it into "no data").
fn collect_without_catch_unwind(query: &str) -> (Vec<u8>, u32) {
    use prfdata_provider::collect::{collect, Collected};
    use prfdata_provider::query::Query;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match collect(&Query::parse(query), &mut buf) {
            Collected::Data { bytes, objects } => {
                buf.truncate(bytes);
                return (buf, objects);
            }
            Collected::MoreData => {
                assert!(buf.len() < 1 << 26, "the need stays bounded");
                buf.resize(buf.len() * 2, 0);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random mutations of a real block, read by the provider's code without `catch_unwind`:
    /// never a panic (this is a debug build: an overflow would panic), and what it returns
    /// parses.
    #[test]
    fn random_mutations_never_panic_the_provider(
        writes in proptest::collection::vec((0usize..2048, proptest::collection::vec(any::<u8>(), 1..9)), 1..8),
    ) {
        let _s = serial();
        let prf = populated();
        prop_assert_eq!(prfdata_provider::apps::open(vec!["ProvTestA".into()]), ERROR_SUCCESS);
        let file = std::fs::OpenOptions::new().write(true).open(prf.path()).unwrap();
        let len = file.metadata().unwrap().len() as usize;
        for (offset, bytes) in &writes {
            let at = offset % len;
            let n = bytes.len().min(len - at);
            file.write_all_at(&bytes[..n], at as u64).unwrap();
        }
        for q in ["Global", "Costly"] {
            let (data, objects) = collect_without_catch_unwind(q);
            parse(&data, objects);
        }
        prop_assert_eq!(prfdata_provider::apps::close(), ERROR_SUCCESS);
        drop(prf);
    }

    #[test]
    fn random_bytes_anywhere_in_the_block_never_crash_collect(
        writes in proptest::collection::vec((0usize..8192, proptest::collection::vec(any::<u8>(), 1..64)), 1..8),
    ) {
        let _s = serial();
        let prf = populated();
        let p = Provider::load();
        prop_assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
        let file = std::fs::OpenOptions::new().write(true).open(prf.path()).unwrap();
        let len = file.metadata().unwrap().len() as usize;
        for (offset, bytes) in &writes {
            let at = offset % len;
            let n = bytes.len().min(len - at);
            file.write_all_at(&bytes[..n], at as u64).unwrap();
        }
        collect_is_sane(&p);
        prop_assert_eq!(p.close(), ERROR_SUCCESS);
        // The owner's own structures may be garbage now: forget the handle without touching it
        // beyond removing its file.
        drop(prf);
    }
}

#[test]
fn a_truncated_or_grown_block_yields_no_data_and_no_sigbus() {
    let _s = serial();
    let prf = populated();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    assert_eq!(p.collect("Global").0.objects, 3, "mapped and served");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    let len = file.metadata().unwrap().len();
    for new_len in [len / 2, 100, 0, len + 4096] {
        file.set_len(new_len).unwrap();
        let (out, _) = p.collect("Global");
        assert_eq!(out.objects, 0, "length {new_len}");
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
    std::mem::forget(prf); // its mapping now extends past the file: do not touch it again
}

#[test]
fn a_block_replaced_under_the_reader_is_reopened() {
    let _s = serial();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let first = populated();
    assert_eq!(p.collect("Global").0.objects, 3);
    drop(first);
    let second = app_a::PrfData::activate().unwrap();
    second
        .get_ctr32(app_a::REQUESTS, ())
        .store(1234, std::sync::atomic::Ordering::Relaxed);
    let (out, data) = p.collect("Global");
    let objs = parse(&data, out.objects);
    assert_eq!(objs[0].value(0, 0), 1234, "the new block is read");
    assert_eq!(objs[2].header.num_instances, 0);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

/// Offset of header field `field` of slot `s` of app C's object `object`.
fn slot_field(object: usize, s: u32, field: usize) -> u64 {
    let map = app_c::Map::DEF;
    let obj = &map.objects[object];
    (offsets::object_base(map, object)
        + offsets::object_regions(obj).slots
        + s as usize * offsets::slot_size(obj)
        + field) as u64
}

/// Every query form app C answers, by name: Global, Costly, each object alone, all of them.
fn c_queries() -> Vec<String> {
    let first = env().first_c.0;
    let mut out: Vec<String> = ["Global", "Costly"].map(String::from).to_vec();
    out.extend((0..5).map(|k| (first + 4 * k).to_string()));
    out.push(
        (0..5)
            .map(|k| (first + 4 * k).to_string())
            .collect::<Vec<_>>()
            .join(" "),
    );
    out
}

/// Collect must succeed for every query and every parent link it writes must resolve inside
/// the buffer (`resolved` panics on one that does not).
fn links_resolve(p: &Provider) {
    for q in c_queries() {
        let (out, data) = p.collect(&q);
        assert_eq!(out.status, ERROR_SUCCESS, "{q}");
        resolved(&parse(&data, out.objects));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Parent objects out of range or without instances, slots past the limit, stale
    /// generations, cycles, children counts of any size: never a crash, never a dangling link.
    #[test]
    fn bad_parent_and_children_fields_never_crash_collect_or_dangle(
        writes in proptest::collection::vec(
            (
                0usize..5,
                0u32..4,
                prop_oneof![
                    Just(slot::PARENT_OBJECT),
                    Just(slot::PARENT_SLOT),
                    Just(slot::PARENT_GENERATION),
                    Just(slot::GENERATION),
                    Just(slot::CHILDREN),
                ],
                prop_oneof![0u32..8, any::<u32>()],
            ),
            1..12,
        ),
    ) {
        let _s = serial();
        let prf = app_c::PrfData::activate().unwrap();
        populate_c(&prf);
        let p = Provider::load();
        prop_assert_eq!(p.open(&["ProvTestC"]), ERROR_SUCCESS);
        let file = std::fs::OpenOptions::new().write(true).open(prf.path()).unwrap();
        for (object, s, field, value) in &writes {
            file.write_all_at(&value.to_ne_bytes(), slot_field(*object, *s, *field)).unwrap();
        }
        links_resolve(&p);
        prop_assert_eq!(p.close(), ERROR_SUCCESS);
        drop(prf);
    }
}

/// A link whose generation is not its parent slot's (the slot was given to another instance)
/// names no parent, and brings no parent object either.
#[test]
fn a_link_to_a_reused_parent_slot_names_no_parent() {
    let _s = serial();
    let prf = app_c::PrfData::activate().unwrap();
    populate_c(&prf);
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestC"]), ERROR_SUCCESS);
    let (shard, entry) = (env().first_c.0, env().first_c.0 + 4);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    // e1 (slot 0 of ENTRY) recorded generation 1 of its shard; say it recorded 2.
    file.write_all_at(
        &2u32.to_ne_bytes(),
        slot_field(1, 0, slot::PARENT_GENERATION),
    )
    .unwrap();
    let (out, data) = p.collect(&entry.to_string());
    let got = resolved(&parse(&data, out.objects));
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), [shard, entry]);
    assert_eq!(got[&entry], ["e1", "s1/e2"], "e1 shows no parent");
    // And a shard slot that another instance took (its generation moved on) is no one's parent.
    file.write_all_at(&9u32.to_ne_bytes(), slot_field(0, 0, slot::GENERATION))
        .unwrap();
    let (out, data) = p.collect(&entry.to_string());
    let got = resolved(&parse(&data, out.objects));
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), [entry]);
    assert_eq!(got[&entry], ["e1", "e2"]);
    links_resolve(&p);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

/// Links that form a cycle (two jobs each other's parent, a task its own) end the closure.
#[test]
fn parent_links_in_a_cycle_end() {
    let _s = serial();
    let prf = app_c::PrfData::activate().unwrap();
    populate_c(&prf);
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestC"]), ERROR_SUCCESS);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    let link = |object: usize, s: u32, to_object: u32, to_slot: u32| {
        for (field, value) in [
            (slot::PARENT_OBJECT, to_object + 1),
            (slot::PARENT_SLOT, to_slot),
            (slot::PARENT_GENERATION, 1),
        ] {
            file.write_all_at(&value.to_ne_bytes(), slot_field(object, s, field))
                .unwrap();
        }
    };
    link(3, 0, 3, 1); // j1 under j2
    link(3, 1, 3, 0); // j2 under j1
    link(4, 0, 4, 0); // t1 under itself
    links_resolve(&p);
    assert_eq!(p.close(), ERROR_SUCCESS);
    drop(prf);
}

/// A lone surrogate in an instance name is collected as U+FFFD (one unit for one: the sizes do
/// not change), a valid pair as it is.
#[test]
fn lone_surrogates_in_names_are_collected_as_replacement_characters() {
    let _s = serial();
    let prf = populated();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let map = &app_a::MAP;
    let worker = &map.objects[2];
    let name_at = |s: usize| {
        (offsets::object_base(map, 2)
            + offsets::object_regions(worker).slots
            + s * offsets::slot_size(worker)
            + layout::SLOT_HEADER_SIZE) as u64
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    // w0 -> lone low + "0"; w1 -> a pair; w2 -> "w" + lone high.
    for (s, units) in [
        (0, [0xDC00u16, 0x30]),
        (1, [0xD83D, 0xDE00]),
        (2, [0x77, 0xD800]),
    ] {
        let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_ne_bytes()).collect();
        file.write_all_at(&bytes, name_at(s)).unwrap();
    }
    let (out, data) = p.collect("Global");
    let objs = parse(&data, out.objects);
    let names: Vec<&str> = objs[2].instances.iter().map(|i| i.1.as_str()).collect();
    assert_eq!(names, ["\u{FFFD}0", "\u{1F600}", "w\u{FFFD}", "w3", "w4"]);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

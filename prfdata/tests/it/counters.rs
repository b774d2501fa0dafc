//! Counter updates from several processes and threads at once: the totals are exact.

use crate::common;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use common::testmap::{self, PrfData};

const CHILDREN: usize = 4;
const THREADS: usize = 2;
const INCREMENTS: i64 = 1_000_000;

/// Child: attach, then 2 threads × INCREMENTS increments of the global counters and of the
/// per-instance counter of item `thread % 2`.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if common::role().as_deref() != Some("increment") {
        return;
    }
    let prf = PrfData::attach_in(&common::child_dir()).expect("attach to the parent's block");
    let items = prf
        .instances()
        .list(testmap::ITEMS)
        .expect("list the items");
    assert_eq!(items.len(), 2, "the parent added two items");
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (prf, item) = (&prf, items[t % 2]);
            s.spawn(move || {
                for _ in 0..INCREMENTS {
                    prf.get_ctr64(testmap::HITS, ()).fetch_add(1, Relaxed);
                    prf.get_ctr32(testmap::HITS32, ()).fetch_add(1, Relaxed);
                    prf.get_ctr64(testmap::ITEM_HITS, item)
                        .fetch_add(1, Relaxed);
                }
            });
        }
    });
}

#[test]
fn four_processes_two_threads_each_lose_no_increment() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = prf.add_instance(testmap::ITEMS, "a").unwrap();
    let b = prf.add_instance(testmap::ITEMS, "b").unwrap();
    let children: Vec<_> = (0..CHILDREN)
        .map(|_| common::spawn_child("counters::child_entry", "increment", dir.path(), &[]))
        .collect();
    for child in children {
        common::wait_ok(child, Duration::from_secs(120));
    }
    let total = CHILDREN as i64 * THREADS as i64 * INCREMENTS;
    assert_eq!(prf.get_ctr64(testmap::HITS, ()).load(Relaxed), total);
    assert_eq!(
        i64::from(prf.get_ctr32(testmap::HITS32, ()).load(Relaxed)),
        total
    );
    assert_eq!(
        prf.get_ctr64(testmap::ITEM_HITS, a).load(Relaxed),
        total / 2
    );
    assert_eq!(
        prf.get_ctr64(testmap::ITEM_HITS, b).load(Relaxed),
        total / 2
    );
}

#[test]
fn threads_of_one_process_share_the_counters() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..10_000 {
                    prf.get_ctr32(testmap::HITS32, ()).fetch_add(1, Relaxed);
                }
            });
        }
    });
    assert_eq!(prf.get_ctr32(testmap::HITS32, ()).load(Relaxed), 40_000);
}

#[test]
fn a_kept_reference_is_the_live_counter_in_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let hits = prf.get_ctr64(testmap::HITS, ());
    hits.fetch_add(41, Relaxed);
    hits.fetch_add(1, Relaxed);
    // A reader in this or another process sees it at the counter's offset in the block.
    let reader = prfdata::reader::BlockReader::open_path("PrfDataTest", prf.path()).unwrap();
    let mut snap = common::snapshot::Snapshot::default();
    common::snapshot::ReadAll::read(&reader, &mut snap).unwrap();
    let block = snap.global_block(&snap.objects[0]);
    let value = common::snapshot::counter_value(block, testmap::HITS.offset() as u32, 8);
    assert_eq!(value, Some(42));
}

#[test]
fn prfdata_and_its_ids_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<PrfData>();
    send_sync::<prfdata::InstanceId<testmap::ITEMS>>();
    send_sync::<prfdata::map::CtrId<prfdata::counter_type::LargeRawCount, testmap::ITEMS>>();
}

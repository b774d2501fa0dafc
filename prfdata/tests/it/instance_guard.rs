//! `Instance`: the guard that removes its instance, and everything below it, when dropped; and
//! the accessors it is used with.

use crate::common;

use std::sync::atomic::Ordering::Relaxed;

use common::testmap::{PrfData, HITS, HITS32, ITEMS, ITEM_HITS, ITEM_TAG, PARTS, PART_SIZE};
use prfdata::{Error, Instance, InstanceSpec};

#[test]
fn dropping_the_guard_removes_the_instance_and_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let slot = {
        let a = prf.instances().guard(prf.add_instance(ITEMS, "a").unwrap());
        assert_eq!(prf.instances().list(ITEMS).unwrap(), [*a]);
        assert_eq!(prf.instances().name(*a).as_deref(), Some("a"));
        a.slot()
    };
    assert!(prf.instances().list(ITEMS).unwrap().is_empty());
    let b = prf.add_instance(ITEMS, "b").unwrap();
    assert_eq!(b.slot(), slot, "the slot was freed");
}

#[test]
fn a_guard_goes_wherever_an_id_goes() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let item = prf
        .instances()
        .guard(prf.add_instance(ITEMS, "item").unwrap());
    prf.get_ctr64(ITEM_HITS, *item).fetch_add(5, Relaxed);
    prf.get_ctr32(ITEM_TAG, *item).store(7, Relaxed);
    assert_eq!(prf.get_ctr64(ITEM_HITS, *item).load(Relaxed), 5);
    assert_eq!(prf.get_ctr32(ITEM_TAG, item.id()).load(Relaxed), 7);
    let part = prf
        .add_instance(PARTS, InstanceSpec::named("p").parent(*item))
        .unwrap();
    prf.get_ctr32(PART_SIZE, part).store(3, Relaxed);
    assert_eq!(prf.get_ctr32(PART_SIZE, part).load(Relaxed), 3);
}

#[test]
fn each_place_reaches_its_own_counter() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    prf.get_ctr64(HITS, ()).fetch_add(1 << 40, Relaxed);
    prf.get_ctr32(HITS32, ()).fetch_add(-3, Relaxed);
    assert_eq!(prf.get_ctr64(HITS, ()).load(Relaxed), 1 << 40);
    assert_eq!(prf.get_ctr32(HITS32, ()).load(Relaxed), -3);
    let (a, b) = (
        prf.add_instance(ITEMS, "a").unwrap(),
        prf.add_instance(ITEMS, "b").unwrap(),
    );
    prf.get_ctr32(ITEM_TAG, a).store(1, Relaxed);
    prf.get_ctr32(ITEM_TAG, b).store(2, Relaxed);
    assert_eq!(prf.get_ctr32(ITEM_TAG, a).load(Relaxed), 1);
    assert_eq!(prf.get_ctr32(ITEM_TAG, b).load(Relaxed), 2);
    assert!(!std::ptr::eq(
        prf.get_ctr32(ITEM_TAG, a),
        prf.get_ctr32(ITEM_TAG, b)
    ));
}

#[test]
fn dropping_a_parent_guard_removes_its_children_too() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let item = prf
        .instances()
        .guard(prf.add_instance(ITEMS, "item").unwrap());
    let p1 = prf
        .add_instance(PARTS, InstanceSpec::named("p1").parent(*item))
        .unwrap();
    prf.add_instance(PARTS, InstanceSpec::named("p2").parent(*item))
        .unwrap();
    drop(item);
    assert!(prf.instances().list(ITEMS).unwrap().is_empty());
    assert!(prf.instances().list(PARTS).unwrap().is_empty());
    assert!(matches!(
        prf.remove_instance(p1),
        Err(Error::UnknownInstance { object: "PARTS" })
    ));
}

#[test]
fn a_child_guard_that_outlives_its_parent_leaves_the_new_owner_of_its_slot_alone() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let item = prf
        .instances()
        .guard(prf.add_instance(ITEMS, "item").unwrap());
    let part = prf.instances().guard(
        prf.add_instance(PARTS, InstanceSpec::named("old").parent(*item))
            .unwrap(),
    );
    drop(item); // removes "old" with it
    let new = prf.add_instance(PARTS, "new").unwrap();
    assert_eq!(new.slot(), part.slot(), "the slot was reused");
    drop(part); // finds its own instance gone: must not remove "new"
    assert_eq!(prf.instances().list(PARTS).unwrap(), [new]);
    assert_eq!(prf.instances().name(new).as_deref(), Some("new"));
}

#[test]
fn remove_reports_and_into_id_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let item = prf
        .instances()
        .guard(prf.add_instance(ITEMS, "item").unwrap());
    prf.add_instance(PARTS, InstanceSpec::named("p").parent(*item))
        .unwrap();
    assert_eq!(item.remove().unwrap(), 2);

    let kept = prf
        .instances()
        .guard(prf.add_instance(ITEMS, "kept").unwrap())
        .into_id();
    assert_eq!(prf.instances().list(ITEMS).unwrap(), [kept]);
    let again = prf.instances().guard(kept);
    prf.remove_instance(kept).unwrap();
    assert!(matches!(
        again.remove(),
        Err(Error::UnknownInstance { object: "ITEMS" })
    ));
}

#[test]
fn guards_are_send_and_sync_and_work_from_other_threads() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let prf = &prf;
            s.spawn(move || {
                let item: Instance<'_, ITEMS> = prf
                    .instances()
                    .guard(prf.add_instance(ITEMS, &format!("t{t}")).unwrap());
                send_sync(&item);
                prf.get_ctr64(ITEM_HITS, *item).fetch_add(1, Relaxed);
            });
        }
    });
    assert!(prf.instances().list(ITEMS).unwrap().is_empty());
}

#[test]
fn a_negative_unique_id_is_refused_and_none_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let err = prf
        .add_instance(ITEMS, InstanceSpec::named("x").unique_id(-1))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadUniqueId {
                object: "ITEMS",
                id: -1
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("use 0 or more"), "{err}");
    assert!(prf.instances().list(ITEMS).unwrap().is_empty());
    prf.add_instance(ITEMS, InstanceSpec::named("y").unique_id(0))
        .unwrap();
}

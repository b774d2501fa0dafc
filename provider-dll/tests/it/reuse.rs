//! What a Collect reuses from the last one (`serialize::Prepared`: object and counter
//! definitions, instance definitions and names while the block's sequence holds) never shows a
//! stale instance: every change of the instances between two Collects shows in the second.

use std::sync::atomic::Ordering::Relaxed;

use crate::common::{app_a, env, parse, serial, Obj, Provider, ERROR_SUCCESS};
use prfdata::InstanceSpec;

/// The worker object's instances: (name, parent position, Done/sec), by name.
fn workers(p: &Provider) -> Vec<(String, u32, i64)> {
    let (out, data) = p.collect("Global");
    let objs = parse(&data, out.objects);
    let worker_index = env().first_a.0 + 14;
    let w: &Obj = objs
        .iter()
        .find(|o| o.header.object_name_title_index == worker_index)
        .expect("the worker object");
    w.instances
        .iter()
        .enumerate()
        .map(|(i, (def, name, _))| {
            let parent = def.map_or(u32::MAX, |d| d.parent_object_instance.get());
            (name.clone(), parent, w.value(i, 0))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn reused_definitions_follow_every_change_of_the_instances() {
    let _s = serial();
    let prf = app_a::PrfData::activate().unwrap();
    let p0 = prf.add_instance(app_a::POOL, "p0").unwrap();
    let p1 = prf.add_instance(app_a::POOL, "p1").unwrap();
    let w0 = prf
        .add_instance(app_a::WORKER, InstanceSpec::named("w0").parent(p0))
        .unwrap();
    let w1 = prf
        .add_instance(app_a::WORKER, InstanceSpec::named("w1").parent(p1))
        .unwrap();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);

    // Values move between Collects whose instances do not: the counter blocks are read anew.
    for done in [3, 4, 5] {
        prf.get_ctr32(app_a::DONE, w1).store(done, Relaxed);
        assert_eq!(
            workers(&p),
            [("w0".into(), 0, 0), ("w1".into(), 1, i64::from(done))]
        );
    }
    // Same count, same slot, another name.
    prf.remove_instance(w0).unwrap();
    let x0 = prf
        .add_instance(app_a::WORKER, InstanceSpec::named("x0").parent(p1))
        .unwrap();
    prf.get_ctr32(app_a::DONE, x0).store(9, Relaxed);
    assert_eq!(
        workers(&p),
        [("w1".into(), 1, 5), ("x0".into(), 1, 9)],
        "a new instance in a reused slot"
    );
    assert_eq!(
        workers(&p),
        [("w1".into(), 1, 5), ("x0".into(), 1, 9)],
        "and again, reused"
    );
    // A parent's position moves: its children's definitions follow.
    prf.remove_instance(p0).unwrap();
    assert_eq!(
        workers(&p),
        [("w1".into(), 0, 5), ("x0".into(), 0, 9)],
        "parent positions follow"
    );
    prf.remove_instance(w1).unwrap();
    assert_eq!(workers(&p), [("x0".into(), 0, 9)], "a removed instance");
    assert_eq!(p.close(), ERROR_SUCCESS);
}

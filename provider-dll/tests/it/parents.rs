//! Parent links always resolve: whatever a Collect is asked for (Global, Costly, an index
//! list naming a child object alone), the objects of the returned instances' parents come with
//! them, transitively, so that every `ParentObjectTitleIndex` / `ParentObjectInstance` names an
//! instance in the same buffer, as NT's providers do for Thread and Process.

use crate::common;
use std::collections::BTreeMap;

use common::{
    app_c, env, parse, populate_c, resolved, serial, Provider, ERROR_MORE_DATA, ERROR_SUCCESS,
};
use prfdata::InstanceSpec;

/// The name index of object `offset` of app C.
fn title(offset: u32) -> u32 {
    env().first_c.0 + offset
}

fn collect(p: &Provider, query: &str) -> BTreeMap<u32, Vec<String>> {
    let (out, data) = p.collect(query);
    resolved(&parse(&data, out.objects))
}

#[test]
fn every_query_returns_the_parents_of_what_it_returns() {
    let _s = serial();
    let prf = app_c::PrfData::activate().unwrap();
    populate_c(&prf);
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestC"]), ERROR_SUCCESS);
    let (shard, entry, host, job, task) = (title(0), title(4), title(8), title(12), title(16));
    let expected: BTreeMap<u32, Vec<&str>> = BTreeMap::from([
        (shard, vec!["s1", "s2"]),
        (entry, vec!["s2/e1", "s1/e2"]),
        (host, vec!["h1", "h2"]),
        (job, vec!["h2/j1", "h1/j2", "h2/j3"]),
        (task, vec!["j3/t1", "j1/t2", "j3/t3"]),
    ]);
    for (query, objects) in [
        // The costly shard comes with its non-costly entries.
        ("Global".to_string(), vec![shard, entry, host, job]),
        // The non-costly jobs and hosts with the costly tasks (parents of parents).
        ("Costly".to_string(), vec![shard, host, job, task]),
        (entry.to_string(), vec![shard, entry]),
        (job.to_string(), vec![host, job]),
        (task.to_string(), vec![host, job, task]),
        (
            format!("{task} {entry}"),
            vec![shard, entry, host, job, task],
        ),
        (shard.to_string(), vec![shard]),
        (host.to_string(), vec![host]),
    ] {
        let got = collect(&p, &query);
        assert_eq!(
            got.keys().copied().collect::<Vec<_>>(),
            objects,
            "objects of {query}"
        );
        for (title, names) in &got {
            assert_eq!(
                names, &expected[title],
                "object {title} in {query}: every child named under its own parent"
            );
        }
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn only_parents_that_live_instances_name_are_added() {
    let _s = serial();
    let prf = app_c::PrfData::activate().unwrap();
    let h = prf.add_instance(app_c::HOST, "h").unwrap();
    let j = prf
        .add_instance(app_c::JOB, InstanceSpec::named("j").parent(h))
        .unwrap();
    let lone = prf.add_instance(app_c::TASK, "lone").unwrap();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestC"]), ERROR_SUCCESS);
    let task = title(16);
    assert_eq!(
        collect(&p, &task.to_string())
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        [task],
        "a task without a parent brings no other object"
    );
    prf.add_instance(app_c::TASK, InstanceSpec::named("t").parent(j))
        .unwrap();
    let got = collect(&p, &task.to_string());
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        [title(8), title(12), task]
    );
    assert_eq!(got[&task], ["lone", "j/t"]);
    prf.instances().remove_tree(h).unwrap();
    prf.remove_instance(lone).unwrap();
    assert_eq!(
        collect(&p, &task.to_string())
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        [task],
        "the parents went with their tree"
    );
    assert_eq!(p.close(), ERROR_SUCCESS);
}

/// The parents are part of the size: every buffer below it is ERROR_MORE_DATA with nothing
/// written, and the exact size succeeds.
#[test]
fn the_parents_are_sized_with_their_children() {
    let _s = serial();
    let prf = app_c::PrfData::activate().unwrap();
    populate_c(&prf);
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestC"]), ERROR_SUCCESS);
    let query = title(16).to_string();
    let (out, full) = p.collect(&query);
    assert_eq!(out.objects, 3);
    let need = full.len();
    for size in 0..need {
        let mut buf = vec![0xA5u8; size + 64];
        let out = p.collect_into(&query, &mut buf, size);
        assert_eq!(out.status, ERROR_MORE_DATA, "size {size}");
        assert_eq!((out.advanced, out.bytes, out.objects), (0, 0, 0));
        assert!(
            buf.iter().all(|&b| b == 0xA5),
            "size {size}: nothing written"
        );
    }
    let mut buf = vec![0xA5u8; need + 64];
    let out = p.collect_into(&query, &mut buf, need);
    assert_eq!(
        (out.status, out.bytes as usize, out.objects),
        (ERROR_SUCCESS, need, 3)
    );
    assert_eq!(p.close(), ERROR_SUCCESS);
}

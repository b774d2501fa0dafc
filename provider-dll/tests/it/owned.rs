//! Worker processes' own instances and the synthesised `_Total` through the real provider
//!: a SIGKILLed worker's instance leaves the Collect within the provider's
//! `FRESHNESS` (10 ms: how long a finding that an owner lives stands), its counts stay in
//! `_Total`, its gauge share goes.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::common::{app_o, env, parse, serial, Obj, Provider, ERROR_SUCCESS};

/// Child role `worker`: attaches to app O, adds its own instance `w1`, counts 1000 and sets
/// its queue to 7, says so, then waits to be killed.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if std::env::var("OWNED_ROLE").as_deref() != Ok("worker") {
        return;
    }
    let prf = app_o::PrfData::attach().expect("the worker attaches");
    let me = prf
        .add_instance(
            app_o::POOL,
            prfdata::InstanceSpec::named("w1").process_owned(),
        )
        .expect("its own instance");
    prf.get_ctr32(app_o::DONE, me).fetch_add(1000, Relaxed);
    prf.get_ctr32(app_o::QUEUE, me).store(7, Relaxed);
    std::fs::write(ready_file(), b"").unwrap();
    std::thread::sleep(Duration::from_secs(120));
}

fn ready_file() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").unwrap()).join("owned-ready")
}

fn spawn_worker() -> Child {
    env();
    let _ = std::fs::remove_file(ready_file());
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "owned::child_entry",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env("OWNED_ROLE", "worker")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready_file().exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the worker started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child
}

/// The pool object of a Collect of app O: (name, Done, Queue) per instance.
fn pool(p: &Provider) -> Vec<(String, i64, i64)> {
    let (out, data) = p.collect("Global");
    let objs: Vec<Obj> = parse(&data, out.objects);
    let title = env().first_o.0;
    let obj = objs
        .iter()
        .find(|o| o.header.object_name_title_index == title)
        .expect("the pool object");
    assert_eq!(obj.header.num_instances, obj.instances.len() as i32);
    (0..obj.instances.len())
        .map(|i| (obj.instances[i].1.clone(), obj.value(i, 0), obj.value(i, 1)))
        .collect()
}

#[test]
fn a_killed_workers_instance_leaves_the_collect_and_its_counts_stay_in_total() {
    let _s = serial();
    let prf = app_o::PrfData::activate().unwrap();
    let master = prf
        .add_instance(
            app_o::POOL,
            prfdata::InstanceSpec::named("master").process_owned(),
        )
        .unwrap();
    prf.get_ctr32(app_o::DONE, master).fetch_add(5, Relaxed);
    prf.get_ctr32(app_o::QUEUE, master).store(2, Relaxed);
    let mut worker = spawn_worker();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestO"]), ERROR_SUCCESS);
    let total = |name: &str, done, queue| (name.to_string(), done, queue);
    assert_eq!(
        pool(&p),
        vec![
            total("master", 5, 2),
            total("w1", 1000, 7),
            total("_Total", 1005, 9)
        ]
    );

    worker.kill().unwrap();
    worker.wait().unwrap();
    // The provider trusts that the worker lives for FRESHNESS after it last asked.
    std::thread::sleep(prfdata_provider::apps::FRESHNESS + Duration::from_millis(2));
    // Not reclaimed yet (no writer came): hidden, its count in _Total, its queue gone.
    let collected = pool(&p);
    assert_eq!(
        collected,
        vec![total("master", 5, 2), total("_Total", 1005, 2)]
    );
    // The next writer reclaims the slot: the same Collect.
    let again = prf
        .add_instance(
            app_o::POOL,
            prfdata::InstanceSpec::named("w2").process_owned(),
        )
        .unwrap();
    prf.remove_instance(again).unwrap();
    assert_eq!(pool(&p), collected);
    assert_eq!(prf.instances().list(app_o::POOL).unwrap(), vec![master]);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

/// `_Total` is one more instance than the live count: a buffer too small by a few bytes is
/// ERROR_MORE_DATA, never a Collect that drops the object (the size bound counted it).
#[test]
fn total_is_counted_when_sizing_the_buffer() {
    let _s = serial();
    let prf = app_o::PrfData::activate().unwrap();
    for name in ["sixteen-chars-aa", "sixteen-chars-bb"] {
        prf.add_instance(
            app_o::POOL,
            prfdata::InstanceSpec::named(name).process_owned(),
        )
        .unwrap();
    }
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestO"]), ERROR_SUCCESS);
    let query = env().first_o.0.to_string();
    let (full, data) = p.collect(&query);
    assert_eq!(full.objects, 1);
    let size = data.len();
    for room in [size - 8, size - 64] {
        let mut buf = vec![0u8; size + 64];
        let out = p.collect_into(&query, &mut buf, room);
        assert_eq!(
            out.status,
            crate::common::ERROR_MORE_DATA,
            "{room} bytes for {size}: {out:?}"
        );
    }
    let mut buf = vec![0u8; size + 64];
    let out = p.collect_into(&query, &mut buf, size);
    assert_eq!(
        (out.status, out.bytes as usize, out.objects),
        (ERROR_SUCCESS, size, 1)
    );
    assert_eq!(p.close(), ERROR_SUCCESS);
}

/// The size bound Collect uses to skip exact sizing counts `_Total`: never below the exact
/// size, whose instances include it.
#[test]
fn the_size_bound_counts_total() {
    let _s = serial();
    let prf = app_o::PrfData::activate().unwrap();
    for name in ["sixteen-chars-aa", "sixteen-chars-bb"] {
        prf.add_instance(
            app_o::POOL,
            prfdata::InstanceSpec::named(name).process_owned(),
        )
        .unwrap();
    }
    let reader = prfdata::reader::BlockReader::open("ProvTestO").unwrap();
    let (bound, exact) = reader
        .read_with(Duration::from_secs(5), |view| {
            Ok((
                prfdata_provider::serialize::objects_size_bound(view, &[0])?,
                prfdata_provider::serialize::objects_size(view, &[0])?,
            ))
        })
        .unwrap();
    assert!(bound >= exact, "bound {bound} below the exact size {exact}");
}

/// A sharded counter reaches perflib's buffer as one value: the provider writes the
/// sum of its per-thread slots and its own word into each `PERF_COUNTER_BLOCK`, `_Total`
/// included.
#[test]
fn a_sharded_counter_is_collected_as_the_sum_of_its_slots() {
    let _s = serial();
    let prf = app_o::PrfData::activate().unwrap();
    let a = prf.add_instance(app_o::POOL, "a").unwrap();
    let b = prf.add_instance(app_o::POOL, "b").unwrap();
    prf.sharded(app_o::BYTES, a).add(100);
    std::thread::scope(|s| {
        s.spawn(|| prf.sharded(app_o::BYTES, a).add(20));
        s.spawn(|| prf.sharded(app_o::BYTES, b).add(5));
    });
    prf.get_ctr64(app_o::BYTES, a).fetch_add(3, Relaxed);
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestO"]), ERROR_SUCCESS);
    let (out, data) = p.collect("Global");
    let objs: Vec<Obj> = parse(&data, out.objects);
    let title = env().first_o.0;
    let obj = objs
        .iter()
        .find(|o| o.header.object_name_title_index == title)
        .expect("the pool object");
    let bytes: Vec<(String, i64)> = (0..obj.instances.len())
        .map(|i| (obj.instances[i].1.clone(), obj.value(i, 2)))
        .collect();
    let row = |name: &str, v| (name.to_string(), v);
    assert_eq!(bytes, vec![row("a", 123), row("b", 5), row("_Total", 128)]);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

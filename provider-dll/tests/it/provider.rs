//! The provider cdylib, dlopen'ed and driven exactly as perflib drives it.

use crate::common;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use common::{app_a, app_b, env, parse, serial, Provider, ERROR_MORE_DATA, ERROR_SUCCESS};
use prfdata::InstanceSpec;
use prfdata_wire::winperf::*;

/// Child roles: `app` activates app A, publishes, and waits to be killed; `stop-locked` also
/// takes `lock_ctrs` and stops itself with SIGSTOP while holding it.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    let Ok(role) = std::env::var("PROV_ROLE") else {
        return;
    };
    let prf = app_a::PrfData::activate().expect("child activates app A");
    prf.get_ctr32(app_a::REQUESTS, ()).store(7, Relaxed);
    std::fs::write(env_ready(), b"").unwrap();
    if role == "stop-locked" {
        let _guard = prf.lock_ctrs();
        // SAFETY: raising a signal in our own process; SIGSTOP stops it until SIGCONT.
        unsafe { libc::raise(libc::SIGSTOP) };
    }
    std::thread::sleep(Duration::from_secs(60));
}

fn env_ready() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").unwrap()).join("ready")
}

fn spawn_app(role: &str) -> Child {
    env(); // the child inherits PRFDATA_SHM_DIR and PRFDATA_REGISTRY
    let _ = std::fs::remove_file(env_ready());
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "provider::child_entry",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env("PROV_ROLE", role)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !env_ready().exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the app child started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child
}

fn kill(mut child: Child) {
    // SAFETY: sending SIGCONT to our own child, in case it is stopped.
    unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn every_buffer_size_below_the_need_is_more_data_and_writes_nothing() {
    let _s = serial();
    let prf = app_a::PrfData::activate().unwrap();
    let pool = prf.add_instance(app_a::POOL, "pool").unwrap();
    for i in 0..3 {
        prf.add_instance(
            app_a::WORKER,
            InstanceSpec::named(&format!("w{i}")).parent(pool),
        )
        .unwrap();
    }
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let (_, full) = p.collect("Global");
    let need = full.len();
    assert!(need > 0);
    const CANARY: usize = 64;
    for size in 0..need {
        let mut buf = vec![0xA5u8; size + CANARY];
        let out = p.collect_into("Global", &mut buf, size);
        assert_eq!(out.status, ERROR_MORE_DATA, "size {size}");
        assert_eq!(
            (out.advanced, out.bytes, out.objects),
            (0, 0, 0),
            "size {size}"
        );
        assert!(
            buf.iter().all(|&b| b == 0xA5),
            "size {size}: nothing written, canary intact"
        );
    }
    let mut buf = vec![0xA5u8; need + CANARY];
    let out = p.collect_into("Global", &mut buf, need);
    assert_eq!(out.status, ERROR_SUCCESS);
    assert_eq!((out.advanced, out.bytes as usize), (need, need));
    assert_eq!(out.bytes % 8, 0);
    assert!(
        buf[need..].iter().all(|&b| b == 0xA5),
        "canary after the data intact"
    );
    assert_eq!(p.close(), ERROR_SUCCESS);
}

/// Collect sizes exactly only when the buffer may be too small (below a bound from the live
/// counts, every name as long as allowed); above it, it writes without sizing. Both ways must give
/// the same bytes, and neither may write past what it returns.
#[test]
fn sized_and_unsized_collects_write_the_same_bytes() {
    let _s = serial();
    let prf = app_a::PrfData::activate().unwrap();
    let pool = prf.add_instance(app_a::POOL, "pool").unwrap();
    for i in 0..3 {
        prf.add_instance(
            app_a::WORKER,
            InstanceSpec::named(&format!("w{i}")).parent(pool),
        )
        .unwrap();
    }
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    // Each object's PerfTime (offset 48 of PERF_OBJECT_TYPE) is the time of its Collect.
    let without_times = |mut bytes: Vec<u8>| {
        let mut at = 0;
        while at + 64 <= bytes.len() {
            let total = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            bytes[at + 48..at + 56].fill(0);
            at += total.max(64);
        }
        bytes
    };
    let (_, full) = p.collect("Global");
    let need = full.len();
    let full = without_times(full);
    // Names here are far shorter than the limit: the bound is well above the need.
    for size in need..need + 4096 {
        let mut buf = vec![0xA5u8; size + 8];
        let out = p.collect_into("Global", &mut buf, size);
        assert_eq!(out.status, ERROR_SUCCESS, "size {size}");
        assert_eq!(out.bytes as usize, need, "size {size}");
        assert_eq!(
            without_times(buf[..need].to_vec()),
            full,
            "size {size}: same bytes"
        );
        assert!(
            buf[need..].iter().all(|&b| b == 0xA5),
            "size {size}: nothing past the data"
        );
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn objects_counters_and_instances_follow_winperf() {
    let _s = serial();
    let (fc, fh) = env().first_a;
    let prf = app_a::PrfData::activate().unwrap();
    prf.get_ctr32(app_a::REQUESTS, ()).store(11, Relaxed);
    prf.get_ctr64(app_a::BYTES, ()).store(1 << 40, Relaxed);
    prf.get_ctr32(app_a::LATENCY, ()).store(300, Relaxed);
    prf.get_ctr32(app_a::LATENCY_BASE, ()).store(3, Relaxed);
    let pool_a = prf.add_instance(app_a::POOL, "pool A").unwrap();
    let pool_b = prf.add_instance(app_a::POOL, "pool B").unwrap();
    let w1 = prf
        .add_instance(app_a::WORKER, InstanceSpec::named("w1").parent(pool_b))
        .unwrap();
    let w2 = prf
        .add_instance(
            app_a::WORKER,
            InstanceSpec::named("wörker 2").unique_id(42).parent(pool_a),
        )
        .unwrap();
    prf.get_ctr32(app_a::DONE, w1).store(5, Relaxed);
    prf.get_ctr64(app_a::BUSY, w2).store(123_456, Relaxed);

    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let (out, data) = p.collect("Global");
    let objs = parse(&data, out.objects);
    assert_eq!(objs.len(), 3, "DEBUG is costly: not in Global");

    let service = &objs[0];
    assert_eq!(service.header.object_name_title_index, fc);
    assert_eq!(service.header.object_help_title_index, fh);
    assert_eq!(service.header.num_instances, PERF_NO_INSTANCES);
    assert_eq!(service.header.detail_level, PERF_DETAIL_NOVICE);
    assert_eq!(service.header.default_counter, 0);
    assert_eq!(service.header.code_page, 0);
    assert_eq!(service.header.perf_freq, prfdata::clock::PERF_FREQUENCY);
    assert!(service.header.perf_time > 0);
    let types: Vec<u32> = service
        .counters
        .iter()
        .map(|c| c.counter_type.get())
        .collect();
    assert_eq!(
        types,
        [
            PERF_COUNTER_COUNTER,
            PERF_COUNTER_BULK_COUNT,
            PERF_AVERAGE_TIMER,
            PERF_AVERAGE_BASE,
            PERF_ELAPSED_TIME
        ]
    );
    let names: Vec<u32> = service
        .counters
        .iter()
        .map(|c| c.counter_name_title_index.get())
        .collect();
    assert_eq!(
        names,
        [fc + 2, fc + 4, fc + 6, 0, fc + 8],
        "base counters have index 0"
    );
    let helps: Vec<u32> = service
        .counters
        .iter()
        .map(|c| c.counter_help_title_index.get())
        .collect();
    assert_eq!(helps, [fh + 2, fh + 4, fh + 6, 0, fh + 8]);
    assert_eq!(service.counters[1].counter_size, 8);
    assert_eq!(
        service.counters[1].counter_offset % 8,
        0,
        "64-bit values 8-aligned"
    );
    assert_eq!(service.counters[1].default_scale, -3);
    assert_eq!(service.value(0, 0), 11);
    assert_eq!(service.value(0, 1), 1 << 40);
    assert_eq!((service.value(0, 2), service.value(0, 3)), (300, 3));

    let pools = &objs[1];
    assert_eq!(pools.header.num_instances, 2);
    let workers = &objs[2];
    assert_eq!(workers.header.num_instances, 2);
    assert_eq!(workers.header.object_name_title_index, fc + 14);
    let (def1, name1, _) = &workers.instances[0];
    let def1 = def1.unwrap();
    assert_eq!(name1, "w1");
    assert_eq!(def1.unique_id, PERF_NO_UNIQUE_ID);
    assert_eq!(def1.name_length, 3 * 2);
    assert_eq!(def1.byte_length, 32);
    assert_eq!(def1.parent_object_title_index, fc + 10);
    assert_eq!(
        def1.parent_object_instance, 1,
        "w1's parent is pool B, the second pool"
    );
    assert_eq!(workers.value(0, 0), 5);
    let (def2, name2, _) = &workers.instances[1];
    assert_eq!(name2, "wörker 2");
    assert_eq!(def2.unwrap().unique_id, 42);
    assert_eq!(def2.unwrap().parent_object_instance, 0);
    assert_eq!(workers.value(1, 1), 123_456);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn an_app_started_and_stopped_between_collections() {
    let _s = serial();
    let p = Provider::load();
    assert_eq!(
        p.open(&["ProvTestA"]),
        ERROR_SUCCESS,
        "Open succeeds before the app runs"
    );
    let mut buf = vec![0u8; 1 << 16];
    let out = p.collect_into("Global", &mut buf, 1 << 16);
    assert_eq!(
        (out.status, out.bytes, out.objects),
        (ERROR_SUCCESS, 0, 0),
        "not running: no data"
    );

    let child = spawn_app("app");
    let (out, data) = p.collect("Global");
    assert_eq!(
        parse(&data, out.objects)[0].value(0, 0),
        7,
        "picked up by a later Collect"
    );
    kill(child); // SIGKILL: the block stays behind, its owner gone
                 // Nobody announces a kill: the provider finds it when it asks the kernel again, at most
                 // FRESHNESS after the last time it asked.
    std::thread::sleep(prfdata_provider::apps::FRESHNESS + Duration::from_millis(2));
    let out = p.collect_into("Global", &mut buf, 1 << 16);
    assert_eq!(
        (out.bytes, out.objects),
        (0, 0),
        "a killed app's frozen block is not served"
    );

    let child = spawn_app("app");
    let (out, data) = p.collect("Global");
    assert_eq!(
        parse(&data, out.objects).len(),
        3,
        "the restarted app is served"
    );
    kill(child);
    // Stopped cleanly (in process: activate and drop).
    let prf = app_a::PrfData::activate().unwrap();
    assert_eq!(p.collect("Global").0.objects, 3);
    drop(prf);
    let out = p.collect_into("Global", &mut buf, 1 << 16);
    assert_eq!(out.objects, 0);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn two_apps_served_by_one_library() {
    let _s = serial();
    let (fa, fb) = (env().first_a.0, env().first_b.0);
    let _a = app_a::PrfData::activate().unwrap();
    let b = app_b::PrfData::activate().unwrap();
    b.get_ctr32(app_b::ITEMS, ()).store(99, Relaxed);
    let p = Provider::load();
    // Once per service, as the collector calls it; the same app twice is served once.
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    assert_eq!(p.open(&["ProvTestB", "ProvTestA"]), ERROR_SUCCESS);
    let (out, data) = p.collect("Global");
    let objs = parse(&data, out.objects);
    let titles: Vec<u32> = objs
        .iter()
        .map(|o| o.header.object_name_title_index.get())
        .collect();
    assert_eq!(titles, [fa, fa + 10, fa + 14, fb]);
    assert_eq!(objs[3].value(0, 0), 99);
    assert_eq!(
        p.open(&["NotInstalled"]),
        2,
        "an app that was never installed fails Open"
    );
    assert_eq!(p.close(), ERROR_SUCCESS);
    assert_eq!(
        p.collect("Global").0.objects,
        4,
        "one Close of two: still serving"
    );
    assert_eq!(p.close(), ERROR_SUCCESS);
    assert_eq!(
        p.collect("Global").0.objects,
        0,
        "the last Close forgets every app"
    );
}

fn mappings_of(path: &std::path::Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter(|l| l.ends_with(&*path.to_string_lossy()))
        .count()
}

#[test]
fn open_close_open_again_and_close_unmaps() {
    let _s = serial();
    let prf = app_a::PrfData::activate().unwrap();
    let p = Provider::load();
    let before = mappings_of(prf.path());
    for _ in 0..3 {
        assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
        assert_eq!(p.collect("Global").0.objects, 3);
        assert!(mappings_of(prf.path()) > before, "Collect maps the block");
        assert_eq!(p.close(), ERROR_SUCCESS);
        assert_eq!(
            mappings_of(prf.path()),
            before,
            "Close releases the mapping"
        );
    }
}

#[test]
fn four_threads_collect_while_the_app_changes_instances() {
    let _s = serial();
    let prf = app_a::PrfData::activate().unwrap();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut live = Vec::new();
            let mut k = 0u32;
            while !stop.load(Relaxed) {
                k += 1;
                if live.len() < 40 {
                    let name = format!("worker {k}");
                    live.push(prf.add_instance(app_a::WORKER, &name).unwrap());
                } else {
                    prf.remove_instance(live.swap_remove(k as usize % 40))
                        .unwrap();
                }
            }
        });
        let collectors: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let start = Instant::now();
                    let mut n = 0;
                    while start.elapsed() < Duration::from_secs(2) {
                        let (out, data) = p.collect("Global");
                        for obj in parse(&data, out.objects) {
                            for (_, name, _) in &obj.instances {
                                assert!(name.is_empty() || name.starts_with("worker "), "{name}");
                            }
                        }
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let counts: Vec<usize> = collectors.into_iter().map(|c| c.join().unwrap()).collect();
        stop.store(true, Relaxed);
        assert!(counts.iter().all(|&n| n > 10), "{counts:?}");
    });
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn an_app_stopped_while_holding_its_lock_does_not_stall_collect() {
    let _s = serial();
    let child = spawn_app("stop-locked");
    let pid = child.id();
    let stopped = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('T')
            })
            .unwrap_or(false)
    };
    let start = Instant::now();
    while !stopped() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the child stopped itself"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..3 {
        let t = Instant::now();
        let out = p.collect_into("Global", &mut buf, 1 << 16);
        let took = t.elapsed();
        assert_eq!(out.status, ERROR_SUCCESS);
        assert_eq!(out.objects, 0, "a block held mid-update yields no data");
        assert!(took < Duration::from_millis(50), "Collect took {took:?}");
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
    kill(child);
}

//! The Windows 95 stat-server extras through the real provider: sums computed by the reader at
//! Collect, on-demand counters served by an app process within the service's bound (and a
//! stopped or silent app costing no more than the bound), scale factors in the block and the
//! registry.

use std::process::{Command, Stdio};

use prfdata_testkit::ChildGuard;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::common::{app_s, env, parse, serial, Obj, Provider, ERROR_SUCCESS};
use prfdata::map::Factor;
use prfdata::reader::{BlockReader, Refresh};
use prfdata_registry::{paths, stats, update, FileRegistry, RegistryError, Value};

/// Child roles: `serve` activates app S and registers the on-demand closure (which answers the
/// number in the file `answer`, or -1); `silent` activates it and registers nothing. Both then
/// wait to be killed.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    let Ok(role) = std::env::var("STATS_ROLE") else {
        return;
    };
    let prf = app_s::PrfData::activate().expect("child activates app S");
    if role == "serve" {
        let file = answer_file();
        prf.on_demand()
            .serve(app_s::ANSWER, move || {
                std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(-1)
            })
            .expect("register the closure");
    }
    std::fs::write(ready_file(), b"").unwrap();
    std::thread::sleep(Duration::from_secs(120));
}

fn shm() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").unwrap())
}

fn ready_file() -> std::path::PathBuf {
    shm().join("stats-ready")
}

fn answer_file() -> std::path::PathBuf {
    shm().join("stats-answer")
}

/// A child app of `role`, started and ready (stopped when dropped).
struct App(ChildGuard);

impl App {
    fn spawn(role: &str) -> App {
        env(); // the child inherits PRFDATA_SHM_DIR and PRFDATA_REGISTRY
        let _ = std::fs::remove_file(ready_file());
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "stats::child_entry",
                "--include-ignored",
                "--test-threads=1",
            ])
            .env("STATS_ROLE", role)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let app = App(ChildGuard::new(child, "app S"));
        let start = Instant::now();
        while !ready_file().exists() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the app child started"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        app
    }
}

/// Sets app S's `OnDemand Timeout` (the provider reads it at Open).
fn set_bound(ms: u32) {
    let reg = FileRegistry::open(env().root.join("registry")).unwrap();
    update(&reg, |hive| {
        hive.set_value(
            &paths::performance("ProvTestS"),
            stats::ON_DEMAND_TIMEOUT,
            Value::Dword(ms),
        )
    })
    .map_err(|e: RegistryError| e)
    .unwrap();
}

/// One Global collect of app S: its objects by name index, and how long Collect took.
fn collect(p: &Provider) -> (Vec<Obj>, Duration) {
    let start = Instant::now();
    let (out, data) = p.collect("Global");
    let took = start.elapsed();
    (parse(&data, out.objects), took)
}

fn object(objs: &[Obj], offset: u32) -> &Obj {
    let index = env().first_s.0 + offset;
    objs.iter()
        .find(|o| o.header.object_name_title_index == index)
        .unwrap_or_else(|| panic!("object +{offset} collected"))
}

/// The value of the counter at symbolic offset `offset` of instance `inst` of `obj`.
fn value(obj: &Obj, inst: usize, offset: u32) -> i64 {
    let index = env().first_s.0 + offset;
    let c = obj
        .counters
        .iter()
        .position(|c| c.counter_name_title_index == index)
        .unwrap_or_else(|| panic!("counter +{offset} defined"));
    obj.value(inst, c)
}

#[test]
fn a_sum_equals_its_parts_at_every_sample_and_wraps_at_its_width() {
    let _s = serial();
    let prf = app_s::PrfData::activate().unwrap();
    let shelf = prf.add_instance(app_s::SHELF, "s1").unwrap();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestS"]), ERROR_SUCCESS);
    let samples: [(i32, i32, i64, i64); 4] = [
        (0, 0, 0, 0),
        (3, 4, 1 << 40, 5),
        // 32-bit parts whose sum passes 2^32: the sum wraps as a 32-bit counter does.
        (-2, 5, i64::MAX, 1),
        (i32::MAX, i32::MAX, -7, 3),
    ];
    for (reads, writes, a, b) in samples {
        prf.get_ctr32(app_s::READS, ()).store(reads, Relaxed);
        prf.get_ctr32(app_s::WRITES, ()).store(writes, Relaxed);
        prf.get_ctr64(app_s::BIG_A, ()).store(a, Relaxed);
        prf.get_ctr64(app_s::BIG_B, ()).store(b, Relaxed);
        prf.get_ctr32(app_s::LEFT, shelf).store(reads, Relaxed);
        prf.get_ctr32(app_s::RIGHT, shelf)
            .store(writes.wrapping_mul(3), Relaxed);
        // The app never writes a sum: what it leaves there is not what is served.
        prf.get_ctr32(app_s::TOTAL, ()).store(12345, Relaxed);
        let (objs, _) = collect(&p);
        let stats = object(&objs, 0);
        let sum32 = |x: i32, y: i32| i64::from((x as u32).wrapping_add(y as u32));
        assert_eq!(
            value(stats, 0, 6),
            sum32(reads, writes),
            "{reads} + {writes}"
        );
        assert_eq!(value(stats, 0, 12), a.wrapping_add(b), "{a} + {b}");
        let shelf_obj = object(&objs, 18);
        assert_eq!(
            value(shelf_obj, 0, 24),
            sum32(reads, writes.wrapping_mul(3)),
            "instance sum"
        );
    }
    // The reader's own value path agrees with the copied blocks.
    let reader = BlockReader::open("ProvTestS").unwrap();
    let total = reader
        .read_with(Duration::from_secs(1), |v| v.global_value(0, 2))
        .unwrap();
    assert_eq!(total, i64::from(i32::MAX.wrapping_add(i32::MAX)));
    assert_eq!(reader.counters()[2].sum_parts(), Some(&[0u16, 1][..]));
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn factors_travel_in_the_block_and_the_registry() {
    let _s = serial();
    let _prf = app_s::PrfData::activate().unwrap();
    let reader = BlockReader::open("ProvTestS").unwrap();
    let memory = reader
        .counters()
        .iter()
        .find(|c| c.name_offset == Some(16))
        .unwrap();
    assert_eq!(memory.factor, Some(Factor::Divide(1024)));
    assert!(reader
        .counters()
        .iter()
        .filter(|c| c.name_offset != Some(16))
        .all(|c| c.factor.is_none()));
    let reg = FileRegistry::open(env().root.join("registry")).unwrap();
    let factors = stats::factors_in(&prfdata_registry::Registry::snapshot(&reg).unwrap()).unwrap();
    assert_eq!(
        factors.get(&(env().first_s.0 + 16)).map(String::as_str),
        Some("/1024")
    );
}

#[test]
fn an_on_demand_value_arrives_within_the_bound_and_is_fresh_after_a_change() {
    let _s = serial();
    // Generous: a loaded machine must not turn a served value into a stale one.
    set_bound(5_000);
    std::fs::write(answer_file(), "41").unwrap();
    let _app = App::spawn("serve");
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestS"]), ERROR_SUCCESS);
    let (objs, _) = collect(&p);
    assert_eq!(value(object(&objs, 0), 0, 14), 41, "computed on request");
    for n in [7, -3, 1_000_000] {
        std::fs::write(answer_file(), n.to_string()).unwrap();
        let (objs, _) = collect(&p);
        assert_eq!(
            value(object(&objs, 0), 0, 14),
            i64::from(n as u32),
            "fresh after a change"
        );
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn a_stopped_or_silent_app_costs_a_collect_at_most_the_bound() {
    let _s = serial();
    let bound = Duration::from_millis(100);
    set_bound(bound.as_millis() as u32);
    std::fs::write(answer_file(), "5").unwrap();
    let app = App::spawn("serve");
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestS"]), ERROR_SUCCESS);
    // Served once (retried: the first answer may take longer than 100 ms on a loaded machine).
    let start = Instant::now();
    while value(object(&collect(&p).0, 0), 0, 14) != 5 {
        assert!(start.elapsed() < Duration::from_secs(20), "served once");
    }
    // Every thread stopped for sure (state T) before the answer changes: a serve already under
    // way when the signal came cannot read the new one.
    app.0.stop(Duration::from_secs(20));
    std::fs::write(answer_file(), "6").unwrap();
    for _ in 0..3 {
        let (objs, took) = collect(&p);
        // Not a benchmark: ten times the bound is far from a Collect that waits forever.
        assert!(
            took < bound * 10,
            "Collect took {took:?} with the app stopped"
        );
        assert_eq!(value(object(&objs, 0), 0, 14), 5, "the last value served");
    }
    app.0.resume();
    let start = Instant::now();
    while value(object(&collect(&p).0, 0), 0, 14) != 6 {
        assert!(start.elapsed() < Duration::from_secs(20), "served again");
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
    drop(app);

    // An app that never registers a closure: same bound, its counter as stored (the killed
    // app's block is adopted, so its last value continues).
    let silent = App::spawn("silent");
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestS"]), ERROR_SUCCESS);
    for _ in 0..3 {
        let (objs, took) = collect(&p);
        assert!(took < bound * 10, "Collect took {took:?} with no closure");
        assert_eq!(value(object(&objs, 0), 0, 14), 6);
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
    drop(silent);
    set_bound(stats::DEFAULT_ON_DEMAND_TIMEOUT_MS);
}

/// Collectors that find a request pending share it rather than raising another, so an app that
/// does not answer sees one request, however many collectors ask; its servicing thread, once
/// started, answers that request.
#[test]
fn collectors_share_a_pending_request() {
    let _s = serial();
    let prf = app_s::PrfData::activate().unwrap();
    let request = || {
        let block = std::fs::read(prf.path()).unwrap();
        let at = prfdata::layout::OD_REQUEST_OFFSET;
        u32::from_ne_bytes(block[at..at + 4].try_into().unwrap())
    };
    // Another test's app of this map may have left its block (adopted here, request count
    // and all, perhaps with a request of its own pending, which the first reader then shares):
    // count from what is there.
    let base = request();
    let readers: Vec<_> = (0..4)
        .map(|_| BlockReader::open("ProvTestS").unwrap())
        .collect();
    for r in &readers {
        assert_eq!(
            r.refresh_on_demand(Duration::from_millis(20)).unwrap(),
            Refresh::TimedOut,
            "no closure yet"
        );
    }
    let raised = request().wrapping_sub(base);
    assert!(raised <= 1, "one request for four collectors, not {raised}");
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let counted = std::sync::Arc::clone(&runs);
    prf.on_demand()
        .serve(app_s::ANSWER, move || counted.fetch_add(1, Relaxed) + 1)
        .unwrap();
    // The pending request is served without anyone asking again.
    let start = Instant::now();
    while runs.load(Relaxed) == 0 {
        assert!(start.elapsed() < Duration::from_secs(20), "served");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        readers[0]
            .refresh_on_demand(Duration::from_secs(20))
            .unwrap(),
        Refresh::Served
    );
    assert_eq!(request(), base + raised + 1);
    assert_eq!(
        readers[0]
            .read_with(Duration::from_secs(1), |v| v.global_value(0, 6))
            .unwrap(),
        2,
        "the second run's value"
    );
}

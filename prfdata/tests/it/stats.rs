//! The Windows 95 stat-server extras in prfdata itself: the counter records of sums, factors and
//! on-demand counters read back as written and refused when hostile (each error naming the
//! field's offset), and the app side of on-demand counters (a closure that panics, a counter
//! that is not on demand, a handle dropped while its thread sleeps).

use std::mem::offset_of;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use prfdata::layout::{self, CounterRecord};
use prfdata::map::{offsets, Factor};
use prfdata::reader::{BlockReader, ReadError, Refresh};

prfdata::prfdata_map! {
    pub mod sm {
        app: "StatsRecordsTest",
        object TOTAL {
            name: "SR Total", help: "t",
            counters {
                A: RawCount { name: "SR A", help: name },
                B: RawCount { name: "SR B", help: name },
                SUM: RawCount { name: "SR Sum", help: name, sum: [A, B] },
                BIG: LargeRawCount { name: "SR Big", help: name, factor: * 4096 },
                ASKED: RawCount { name: "SR Asked", help: name, on_demand: true },
                PANICS: RawCount { name: "SR Panics", help: name, on_demand: true },
            }
        }
    }
}

prfdata::prfdata_map! {
    pub mod plain {
        app: "StatsPlainTest",
        object P { name: "SP", help: "p", counters { C: RawCount { name: "SP C", help: name } } }
    }
}

const APP: &str = "StatsRecordsTest";

fn counter_field(counter: usize, field: usize) -> u64 {
    (offsets::counters_offset(&sm::MAP) + counter * layout::COUNTER_RECORD_SIZE + field) as u64
}

#[test]
fn the_records_carry_sums_factors_and_on_demand_flags() {
    let dir = tempfile::tempdir().unwrap();
    let prf = sm::PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let c = reader.counters();
    assert_eq!(c[2].sum_parts(), Some(&[0u16, 1][..]));
    assert!(c
        .iter()
        .enumerate()
        .all(|(i, c)| (i == 2) == c.sum_parts().is_some()));
    assert_eq!(c[3].factor, Some(Factor::Multiply(4096)));
    assert_eq!(
        c.iter().map(|c| c.on_demand).collect::<Vec<_>>(),
        [false, false, false, false, true, true]
    );
}

/// Each hostile field alone, in a fresh block: the open fails naming that field's offset.
#[test]
fn hostile_stat_fields_are_errors_naming_their_offset() {
    let u32s = |v: u32| v.to_ne_bytes().to_vec();
    let parts = offset_of!(CounterRecord, parts);
    let cases: Vec<(&str, u64, Vec<u8>, &str)> = vec![
        (
            "an unknown stat flag",
            counter_field(0, offset_of!(CounterRecord, stat_flags)),
            u32s(0x8000_0000),
            "counter stat flags",
        ),
        (
            "both factor flags",
            counter_field(3, offset_of!(CounterRecord, stat_flags)),
            u32s(0xC0),
            "counter scale factor",
        ),
        (
            "a factor flag with a factor of 0",
            counter_field(3, offset_of!(CounterRecord, factor)),
            u32s(0),
            "counter scale factor",
        ),
        (
            "a sum of 9 parts",
            counter_field(2, offset_of!(CounterRecord, part_count)),
            u32s(9),
            "counter sum parts",
        ),
        (
            "parts without the complex flag",
            counter_field(0, offset_of!(CounterRecord, part_count)),
            u32s(1),
            "counter sum parts",
        ),
        (
            "a part beyond the object's counters",
            counter_field(2, parts),
            1000u16.to_ne_bytes().to_vec(),
            "counter sum part",
        ),
        (
            "a part that is the sum itself",
            counter_field(2, parts),
            2u16.to_ne_bytes().to_vec(),
            "counter sum part",
        ),
        (
            "a part of another size",
            counter_field(2, parts),
            3u16.to_ne_bytes().to_vec(),
            "counter sum part",
        ),
        (
            "on demand and complex at once",
            counter_field(2, offset_of!(CounterRecord, stat_flags)),
            u32s(0x101),
            "counter stat flags",
        ),
    ];
    for (case, at, bytes, what) in cases {
        let dir = tempfile::tempdir().unwrap();
        let prf = sm::PrfData::activate_in(dir.path()).unwrap();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(prf.path())
            .unwrap();
        file.write_all_at(&bytes, at).unwrap();
        match BlockReader::open_path(APP, prf.path()) {
            Err(ReadError::Field { what: w, .. }) => assert_eq!(w, what, "{case}"),
            other => panic!("{case}: {other:?}"),
        }
    }
}

#[test]
fn a_closure_that_panics_keeps_its_counters_last_value_and_the_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let prf = sm::PrfData::activate_in(dir.path()).unwrap();
    prf.get_ctr32(sm::PANICS, ()).store(-5, Relaxed);
    prf.on_demand()
        .serve(sm::PANICS, || panic!("a closure that panics"))
        .unwrap();
    prf.on_demand().serve(sm::ASKED, || 7).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    for _ in 0..2 {
        assert_eq!(
            reader.refresh_on_demand(Duration::from_secs(20)).unwrap(),
            Refresh::Served
        );
        let (asked, panics) = reader
            .read_with(Duration::from_secs(1), |v| {
                Ok((v.global_value(0, 4)?, v.global_value(0, 5)?))
            })
            .unwrap();
        assert_eq!((asked, panics), (7, -5));
    }
}

#[test]
fn only_on_demand_counters_take_a_closure_and_a_map_without_any_asks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prf = sm::PrfData::activate_in(dir.path()).unwrap();
    let err = prf.on_demand().serve(sm::A, || 1).unwrap_err();
    assert!(
        matches!(err, prfdata::Error::NotOnDemand { counter: "A" }),
        "{err}"
    );
    assert!(err.to_string().contains("on_demand: true"), "{err}");
    let plain = plain::PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path("StatsPlainTest", plain.path()).unwrap();
    assert_eq!(
        reader.refresh_on_demand(Duration::from_secs(5)).unwrap(),
        Refresh::NotNeeded
    );
}

/// Dropping the handle stops its sleeping thread and unmaps the block (bounded: a hang fails).
#[test]
fn dropping_the_handle_stops_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..20 {
            let prf = sm::PrfData::activate_in(&path).unwrap();
            prf.on_demand().serve(sm::ASKED, || 1).unwrap();
            drop(prf);
        }
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("every handle dropped, its thread stopped");
    assert!(!dir.path().join(format!("{APP}.blk")).exists());
}

prfdata::prfdata_map! {
    pub mod two {
        app: "StatsTwoObjectsTest",
        object FIRST { name: "S2 First", help: "f", counters {
            F: RawCount { name: "S2 F", help: name, on_demand: true },
        } }
        object SECOND { name: "S2 Second", help: "s", counters {
            S: RawCount { name: "S2 S", help: name, on_demand: true },
        } }
    }
}

/// A request names its objects: the app runs the closures of those only.
#[test]
fn a_request_runs_the_closures_of_the_requested_objects_only() {
    let dir = tempfile::tempdir().unwrap();
    let prf = two::PrfData::activate_in(dir.path()).unwrap();
    let runs = std::sync::Arc::new([
        std::sync::atomic::AtomicI32::new(0),
        std::sync::atomic::AtomicI32::new(0),
    ]);
    let r = std::sync::Arc::clone(&runs);
    prf.on_demand()
        .serve(two::F, move || r[0].fetch_add(1, Relaxed) + 1)
        .unwrap();
    let r = std::sync::Arc::clone(&runs);
    prf.on_demand()
        .serve(two::S, move || r[1].fetch_add(1, Relaxed) + 1)
        .unwrap();
    let reader = BlockReader::open_path("StatsTwoObjectsTest", prf.path()).unwrap();
    let bound = Duration::from_secs(20);
    let counts = || (runs[0].load(Relaxed), runs[1].load(Relaxed));
    assert_eq!(
        reader.refresh_on_demand_of(|o| o == 0, bound).unwrap(),
        Refresh::Served
    );
    assert_eq!(counts(), (1, 0));
    assert_eq!(
        reader.refresh_on_demand_of(|o| o == 1, bound).unwrap(),
        Refresh::Served
    );
    assert_eq!(counts(), (1, 1));
    assert_eq!(reader.refresh_on_demand(bound).unwrap(), Refresh::Served);
    assert_eq!(counts(), (2, 2));
    assert_eq!(
        reader.refresh_on_demand_of(|_| false, bound).unwrap(),
        Refresh::NotNeeded
    );
    assert_eq!(counts(), (2, 2));
}

/// A request that passes its deadline is not waited for again by the same reader until the app
/// has served it: an app that stays stopped costs a collector one wait, not one per Collect;
/// several blocks asked at once are waited for together, until each one's deadline.
#[test]
fn a_missed_request_is_not_waited_for_again_until_it_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let prf = two::PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path("StatsTwoObjectsTest", prf.path()).unwrap();
    let bound = Duration::from_millis(50);
    // No closure yet: nothing serves the request.
    assert_eq!(reader.refresh_on_demand(bound).unwrap(), Refresh::TimedOut);
    for _ in 0..3 {
        assert_eq!(
            reader.refresh_on_demand(Duration::from_secs(60)).unwrap(),
            Refresh::Missed,
            "no second wait for an app that did not serve"
        );
    }
    // A closure starts the app's servicing thread, which serves the pending request.
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let r = std::sync::Arc::clone(&runs);
    prf.on_demand()
        .serve(two::F, move || r.fetch_add(1, Relaxed) + 1)
        .unwrap();
    let start = std::time::Instant::now();
    while runs.load(Relaxed) == 0 {
        assert!(start.elapsed() < Duration::from_secs(20), "served");
        std::thread::sleep(Duration::from_millis(1));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let all = BlockReader::refresh_on_demand_all(&[(&reader, deadline)], |_, _| true);
    assert_eq!(all.len(), 1);
    assert_eq!(
        *all[0].as_ref().unwrap(),
        Refresh::Served,
        "waited for again"
    );
}

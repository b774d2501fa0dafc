//! Watch notifications with real processes: a collector's lease counted by the app, its lapse
//! after the collector is SIGKILLed, the app's callback, and a scribbled table.

use std::os::unix::fs::FileExt;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use prfdata::watch::{Lease, WatchError, WatchEvent, WatchSet, WatchTable};

use crate::common::{self, testmap, testmap::PrfData};

/// Name offset of `testmap::HITS`.
const HITS_OFFSET: u32 = 2;

fn hits() -> WatchSet {
    let mut set = WatchSet::new();
    set.insert(HITS_OFFSET);
    set
}

/// Waits (bounded) until `cond` holds.
fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The next event about HITS, within `limit`.
fn next_hits_event(events: &Receiver<WatchEvent>, limit: Duration) -> WatchEvent {
    let start = Instant::now();
    loop {
        let left = limit.saturating_sub(start.elapsed());
        let e = events
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no watch event for HITS within {limit:?}: {e}"));
        if e.is_for(testmap::HITS) {
            return e;
        }
    }
}

#[test]
#[ignore = "child process entry"]
fn child_entry() {
    if common::role().as_deref() == Some("lease-holder") {
        let dir = common::child_dir();
        let table = WatchTable::open_in(&dir, "PrfDataTest").unwrap();
        let mut lease = table.lease(&hits(), Lease::TTL).unwrap();
        loop {
            std::thread::sleep(prfdata::watch::Lease::RENEW_INTERVAL);
            lease.renew(&hits(), Lease::TTL).unwrap();
        }
    }
}

#[test]
fn a_sigkilled_collectors_lease_lapses_and_the_app_sees_start_and_stop() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let events = prf.watch().events();
    assert!(!prf.watch().is_watched(testmap::HITS));

    let mut child = common::spawn_child("watch::child_entry", "lease-holder", dir.path(), &[]);
    let start = next_hits_event(&events, Duration::from_secs(30));
    assert_eq!(
        start,
        WatchEvent::Start {
            object: 0,
            counter: Some(0)
        }
    );
    assert!(prf.watch().is_watched(testmap::HITS));
    assert!(prf.watch().is_object_watched(testmap::TOTALS));
    assert!(
        !prf.watch().is_watched(testmap::HITS32),
        "only what the lease names"
    );
    assert!(!prf.watch().is_object_watched(testmap::ITEMS));

    child.kill().unwrap(); // SIGKILL: no lease released
    child.wait().unwrap();
    // Lapses by the holder's death at the app's next look (at the latest the lease's expiry).
    let stop = next_hits_event(&events, Lease::TTL * 4);
    assert!(!stop.is_start(), "{stop:?}");
    assert!(!prf.watch().is_watched(testmap::HITS));
    assert!(!prf.watch().is_object_watched(testmap::TOTALS));
}

#[test]
fn leases_are_counted_per_holder_and_detached_ones_end_with_stop() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let table = WatchTable::open_in(dir.path(), "PrfDataTest").unwrap();
    let a = table.lease(&hits(), Lease::TTL).unwrap();
    table.start_detached(&hits(), Lease::TTL).unwrap();
    assert_eq!(table.watchers(HITS_OFFSET), 2);
    eventually("watched", Duration::from_secs(10), || {
        prf.watch().is_watched(testmap::HITS)
    });
    drop(a);
    assert!(table.stop_detached(&hits()));
    assert!(!table.stop_detached(&hits()), "one stop per start");
    eventually("unwatched", Duration::from_secs(10), || {
        !prf.watch().is_watched(testmap::HITS)
    });
}

#[test]
fn a_full_table_refuses_a_new_lease_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let _prf = PrfData::activate_in(dir.path()).unwrap();
    let table = WatchTable::open_in(dir.path(), "PrfDataTest").unwrap();
    let held: Vec<_> = (0..prfdata::watch::WatchTable::SLOTS)
        .map(|_| table.lease(&hits(), Lease::TTL).unwrap())
        .collect();
    let err = table.lease(&hits(), Lease::TTL).unwrap_err();
    assert!(matches!(err, WatchError::Full { .. }), "{err:?}");
    assert!(err.to_string().contains("full"), "{err}");
    drop(held);
    table.lease(&hits(), Lease::TTL).unwrap();
}

#[test]
fn a_scribbled_watch_table_neither_crashes_nor_wedges_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let events = prf.watch().events();
    assert!(!prf.watch().is_watched(testmap::HITS));
    let path = dir.path().join("PrfDataTest.watch");
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();

    // Every slot: our own live pid and start time, every bit set, an expiry an hour ahead (more
    // than Lease::MAX_TTL: a scribble, never counted); the header left alone.
    let me = prfdata::ProcessId::current();
    let now = prfdata::clock::perf_counter() as u64;
    let mut slot = vec![0u8; 128];
    slot[0..4].copy_from_slice(&me.pid.to_le_bytes());
    slot[8..16].copy_from_slice(&me.start_time.to_le_bytes());
    let hour = now + 3600 * prfdata::clock::PERF_FREQUENCY as u64;
    slot[16..24].copy_from_slice(&hour.to_le_bytes());
    slot[32..96].fill(0xff);
    for i in 0..prfdata::watch::WatchTable::SLOTS {
        file.write_all_at(&slot, 64 + 128 * i as u64).unwrap();
    }
    let table = WatchTable::open_in(dir.path(), "PrfDataTest").unwrap();
    assert_eq!(table.watchers(HITS_OFFSET), 0, "an expiry too far ahead");
    // A real lease still gets a slot (the scribbled ones are not live) and is counted.
    let lease = table.lease(&hits(), Lease::TTL).unwrap();
    assert!(next_hits_event(&events, Duration::from_secs(10)).is_start());
    drop(lease);
    assert!(!next_hits_event(&events, Duration::from_secs(10)).is_start());

    // Let the waiter go back to sleep on the table's futex word (no lease left: no timeout),
    // the state in which a truncation leaves no wake able to reach it.
    std::thread::sleep(Duration::from_millis(300));
    // Garbage everywhere, header too: collectors refuse the table, the app goes on.
    let garbage: Vec<u8> = (0..8256u32).map(|i| (i * 7 + 3) as u8).collect();
    file.write_all_at(&garbage, 0).unwrap();
    let err = WatchTable::open_in(dir.path(), "PrfDataTest").unwrap_err();
    assert!(matches!(err, WatchError::NotATable { .. }), "{err:?}");
    // Truncated under the waiter: still no crash.
    file.set_len(0).unwrap();
    assert!(!prf.watch().is_watched(testmap::HITS32));
    prf.get_ctr64(testmap::HITS, ())
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);

    // Dropping the app stops the waiter: bounded, in a thread we can wait for.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(prf);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the app's drop (stopping the waiter) finished");
}

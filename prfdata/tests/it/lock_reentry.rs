//! No combination of `PrfData` methods waits for itself: the thread that holds `lock_ctrs` may
//! call every method that takes the block's lock (set text, add and remove instances, list
//! them, lock again), through the same handle or another handle on the same block, and each
//! call runs inside the guard's write section.
//!
//! Regression: `set_text` inside `lock_ctrs` waited forever (the optex is not recursive).
//! Every combination here runs on a worker thread with a bounded wait, so a deadlock fails the
//! test instead of hanging it.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc;
use std::time::Duration;

use prfdata::layout::SEQ_OFFSET;
use prfdata::{Error, InstanceSpec};

prfdata::prfdata_map! {
    /// The map of these tests: text counters, and requests that are children of sessions.
    pub mod reentry {
        app: "PrfDataReentry",
        object SERVER = 0 {
            name: "Reentry Server", help: "The server.",
            detail: Novice, default: none, instances: none, costly: false,
            counters {
                STATE = 2: Text32 { name: "State", help: "What it does.", detail: Novice, scale: 0 },
                CHANGES = 4: RawCount { name: "Changes", help: "State changes.", detail: Novice, scale: 0 },
            }
        }
        object SESSION = 6 {
            name: "Reentry Session", help: "A session.",
            detail: Novice, default: none, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                USER = 8: Text16 { name: "User", help: "Who.", detail: Novice, scale: 0 },
            }
        }
        object REQUEST = 10 {
            name: "Reentry Request", help: "A request of a session.",
            detail: Novice, default: none, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                BYTES = 12: LargeRawCount { name: "Bytes", help: "b", detail: Novice, scale: 0 },
            }
        }
    }
}

use reentry::{PrfData, REQUEST, SESSION};

/// Bound on any one combination: far above what it takes, far below a hung CI job.
const LIMIT: Duration = Duration::from_secs(20);

/// Runs `f` on a new thread and waits for it at most [`LIMIT`]: a deadlock fails the test.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: deadlocked (no return in {LIMIT:?})")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

/// The block's sequence counter, read from the file: odd while a write section is open.
fn seq(path: &Path) -> u64 {
    let file = std::fs::File::open(path).unwrap();
    let mut buf = [0u8; 8];
    file.read_exact_at(&mut buf, SEQ_OFFSET as u64).unwrap();
    u64::from_le_bytes(buf)
}

/// Activates a block in a new folder (kept alive by the returned guard).
fn activate() -> (tempfile::TempDir, PrfData) {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    (dir, prf)
}

#[test]
fn set_text_inside_lock_ctrs_runs_inside_its_section() {
    bounded("set_text inside lock_ctrs", || {
        let (_dir, prf) = activate();
        let s = prf.add_instance(SESSION, "tty1").unwrap();
        {
            let _whole = prf.lock_ctrs();
            prf.text().set(reentry::USER, s, "alice");
            prf.text().set(reentry::STATE, (), "draining");
            assert_eq!(seq(prf.path()) % 2, 1, "still inside the guard's section");
        }
        assert_eq!(seq(prf.path()) % 2, 0, "the section ended with the guard");
        assert_eq!(prf.text().get(reentry::USER, s), "alice");
        assert_eq!(prf.text().get(reentry::STATE, ()), "draining");
    });
}

#[test]
fn text_set_through_the_guard() {
    bounded("CtrsGuard::set_text", || {
        let (_dir, prf) = activate();
        let s = prf.add_instance(SESSION, "tty1").unwrap();
        let whole = prf.lock_ctrs();
        whole.set_text(reentry::USER, s, "bob");
        whole.set_text(reentry::STATE, (), "serving");
        prf.get_ctr32(reentry::CHANGES, ()).fetch_add(1, Relaxed);
        drop(whole);
        assert_eq!(prf.text().get(reentry::USER, s), "bob");
        assert_eq!(prf.text().get(reentry::STATE, ()), "serving");
    });
}

#[test]
fn instances_added_listed_named_and_removed_inside_lock_ctrs() {
    bounded("instance methods inside lock_ctrs", || {
        let (_dir, prf) = activate();
        let before = seq(prf.path());
        let whole = prf.lock_ctrs();
        let s = prf.add_instance(SESSION, "s").unwrap();
        let s2 = prf
            .add_instance(SESSION, InstanceSpec::named("s2").unique_id(2))
            .unwrap();
        let r = prf
            .add_instance(REQUEST, InstanceSpec::named("r").parent(s))
            .unwrap();
        assert_eq!(prf.instances().list(SESSION).unwrap(), [s, s2]);
        assert_eq!(prf.instances().name(r).as_deref(), Some("r"));
        assert!(matches!(
            prf.remove_instance(s),
            Err(Error::HasChildren { .. })
        ));
        assert_eq!(prf.instances().remove_tree(s).unwrap(), 2);
        prf.remove_instance(s2).unwrap();
        let during = seq(prf.path());
        drop(whole);
        // One section for all of it: collectors saw none of the intermediate states.
        assert_eq!(
            during,
            before + 1,
            "the nested calls opened no section of their own"
        );
        assert_eq!(seq(prf.path()), before + 2);
        assert!(prf.instances().list(SESSION).unwrap().is_empty());
    });
}

#[test]
fn lock_ctrs_inside_lock_ctrs_is_nested_and_the_outer_guard_ends_it() {
    bounded("nested lock_ctrs", || {
        let (_dir, prf) = activate();
        let outer = prf.lock_ctrs();
        {
            let inner = prf.lock_ctrs();
            assert!(!inner.owner_died());
            let again = prf
                .lock_ctrs_for(std::time::Duration::ZERO)
                .expect("the holder gets a nested guard");
            let timed = prf.lock_ctrs_for(Duration::from_millis(1)).unwrap();
            drop((inner, again, timed));
        }
        assert_eq!(
            seq(prf.path()) % 2,
            1,
            "inner guards do not end the section"
        );
        // Another thread is still kept out until the outer guard goes.
        std::thread::scope(|scope| {
            let other = scope
                .spawn(|| prf.lock_ctrs_for(std::time::Duration::ZERO).is_err())
                .join()
                .unwrap();
            assert!(
                other,
                "another thread cannot lock while the outer guard lives"
            );
        });
        drop(outer);
        assert_eq!(seq(prf.path()) % 2, 0);
        std::thread::scope(|scope| {
            let other = scope
                .spawn(|| prf.lock_ctrs_for(std::time::Duration::ZERO).is_ok())
                .join()
                .unwrap();
            assert!(other, "free once the outer guard is dropped");
        });
    });
}

#[test]
fn a_second_handle_on_the_same_block_in_the_same_thread_reenters_too() {
    bounded("another handle inside lock_ctrs", || {
        let (dir, owner) = activate();
        let attached = PrfData::attach_in(dir.path()).unwrap();
        let whole = owner.lock_ctrs();
        let s = attached.add_instance(SESSION, "via attach").unwrap();
        attached.text().set(reentry::USER, s, "carol");
        let nested = attached.lock_ctrs();
        drop(nested);
        attached.remove_instance(s).unwrap();
        drop(whole);
        assert!(owner.instances().list(SESSION).unwrap().is_empty());
    });
}

#[test]
fn another_thread_waits_for_the_guard_and_then_proceeds() {
    bounded("another thread while a guard is held", || {
        let (_dir, prf) = activate();
        let prf = std::sync::Arc::new(prf);
        let whole = prf.lock_ctrs();
        let (tx, rx) = mpsc::channel();
        let other = {
            let prf = std::sync::Arc::clone(&prf);
            std::thread::spawn(move || {
                let s = prf.add_instance(SESSION, "later").unwrap();
                prf.text().set(reentry::USER, s, "dave");
                tx.send(()).unwrap();
            })
        };
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "another thread does not get in while the guard is held"
        );
        drop(whole);
        rx.recv_timeout(LIMIT)
            .expect("the other thread proceeds once the guard is dropped");
        other.join().unwrap();
        assert_eq!(prf.instances().list(SESSION).unwrap().len(), 1);
    });
}

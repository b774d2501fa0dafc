//! Cache-line padded instances and sharded counters, with real worker processes
//! and threads on a real block file: no increment lost, slots freed by exiting threads and
//! taken by new ones, the slots-exhausted path, and the slots of a killed process taken over.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Barrier;
use std::time::Duration;

use prfdata::layout::{CACHE_LINE, SHARD_SLOTS};
use prfdata::reader::BlockReader;

use super::common;

prfdata::prfdata_map! {
    /// A global object with a sharded counter, an instanced one with a total.
    pub mod sharded_map {
        app: "PrfDataSharded",
        object GLOBAL {
            name: "Global", help: "Hits.",
            counters {
                PLAIN: BulkCount { name: "Plain", help: name },
                HITS: BulkCount { name: "Hits", help: name, sharded: true },
                BOTH: BulkCount { name: "Both", help: name, sum: [PLAIN, HITS] },
            }
        }
        object CONN {
            name: "Conn", help: "Connections.",
            instances: { max: 16, name_len: 16 }, total: true,
            counters {
                BYTES: BulkCount { name: "Bytes", help: name, sharded: true },
                N: RawCount { name: "N", help: name },
            }
        }
    }
}
use sharded_map::*;

prfdata::prfdata_map! {
    /// The same instanced object, packed.
    pub mod packed_map {
        app: "PrfDataPacked",
        object CONN {
            name: "Conn", help: "Connections.",
            instances: { max: 4, name_len: 16 }, packed: true,
            counters { BYTES: LargeRawCount { name: "Bytes", help: name } }
        }
    }
}

const APP: &str = "PrfDataSharded";
const READ: Duration = Duration::from_secs(5);

/// HITS and BOTH as every reader sees them: `global_value` and a copied counter block.
fn global_hits(reader: &BlockReader) -> (i64, i64) {
    reader
        .read_with(READ, |view| {
            let info = &reader.objects()[0];
            let mut block = vec![0u8; info.counter_block_size as usize];
            view.copy_global_block(0, &mut block)?;
            let at = reader.counters()[info.counters.start + 1].block_offset as usize;
            let copied = i64::from_ne_bytes(block[at..at + 8].try_into().unwrap());
            assert_eq!(copied, view.global_value(0, 1)?, "both read paths agree");
            Ok((copied, view.global_value(0, 2)?))
        })
        .expect("a consistent read")
}

#[test]
fn instances_of_a_padded_object_never_share_a_cache_line() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let a = prf.add_instance(CONN, "a").unwrap();
    let b = prf.add_instance(CONN, "b").unwrap();
    let (pa, pb) = (
        prf.get_ctr32(N, a) as *const _ as usize,
        prf.get_ctr32(N, b) as *const _ as usize,
    );
    assert!(pb.abs_diff(pa) >= CACHE_LINE, "{pa:#x} {pb:#x}");
    assert_eq!(
        pa % CACHE_LINE,
        pb % CACHE_LINE,
        "each block on its own lines"
    );

    let packed = packed_map::PrfData::activate_in(dir.path()).unwrap();
    let a = packed.add_instance(packed_map::CONN, "a").unwrap();
    let b = packed.add_instance(packed_map::CONN, "b").unwrap();
    let (pa, pb) = (
        packed.get_ctr64(packed_map::BYTES, a) as *const _ as usize,
        packed.get_ctr64(packed_map::BYTES, b) as *const _ as usize,
    );
    assert_eq!(
        pb.abs_diff(pa),
        16,
        "packed: 8-byte header and one LARGE value"
    );
}

#[test]
fn readers_see_the_sum_of_the_slots_and_the_counter() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    prf.get_ctr64(PLAIN, ()).fetch_add(1000, Relaxed);
    let hits = prf.sharded(HITS, ());
    assert!(hits.slot().is_some(), "a free block has slots");
    hits.add(5);
    prf.get_ctr64(HITS, ()).fetch_add(7, Relaxed); // the counter's own word still counts
    std::thread::scope(|s| {
        s.spawn(|| prf.sharded(HITS, ()).add(30));
    });
    assert_eq!(
        global_hits(&reader),
        (42, 1042),
        "the sum of the parts is summed too"
    );

    // An instance: its value, its copied block, `_Total`, and the retired share once removed.
    let c = prf.add_instance(CONN, "c").unwrap();
    prf.sharded(BYTES, c).add(100);
    std::thread::scope(|s| {
        s.spawn(|| prf.sharded(BYTES, c).add(11));
    });
    let values = |reader: &BlockReader| {
        reader
            .read_with(READ, |view| {
                let table = view.instances(1)?;
                let mut out = Vec::new();
                for pos in 0..table.len() {
                    out.push(table.value(&table.get(pos)?, 0)?);
                }
                Ok(out)
            })
            .unwrap()
    };
    assert_eq!(values(&reader), [111, 111], "the instance, then _Total");
    prf.remove_instance(c).unwrap();
    assert_eq!(
        values(&reader),
        [111],
        "only _Total: the removed share was folded"
    );
    let d = prf.add_instance(CONN, "d").unwrap();
    assert_eq!(values(&reader), [0, 111], "a reused slot starts from zero");
    prf.sharded(BYTES, d).add(1);
    assert_eq!(values(&reader), [1, 112]);
}

#[test]
fn exited_threads_free_their_slots_and_exhausted_slots_share_the_counter() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let threads = SHARD_SLOTS as usize + 8;
    let iters = 10_000;
    // All at once: 16 own a slot, 8 find none and add to the counter with fetch_add.
    let held = Barrier::new(threads);
    let slots: Vec<Option<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let hits = prf.sharded(HITS, ());
                    held.wait(); // every thread holds its handle before any exits
                    for _ in 0..iters {
                        hits.add(1);
                    }
                    hits.slot()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut owned: Vec<u32> = slots.iter().flatten().copied().collect();
    owned.sort_unstable();
    assert_eq!(owned, (0..SHARD_SLOTS).collect::<Vec<_>>(), "{slots:?}");
    assert_eq!(slots.iter().filter(|s| s.is_none()).count(), 8);
    let total = (threads * iters) as i64;
    assert_eq!(global_hits(&reader).0, total, "no increment lost");

    // The threads exited: every slot is free again, each keeping its value for its next owner.
    let again = Barrier::new(SHARD_SLOTS as usize);
    let slots: Vec<Option<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..SHARD_SLOTS)
            .map(|_| {
                s.spawn(|| {
                    let hits = prf.sharded(HITS, ());
                    again.wait();
                    hits.add(1);
                    hits.slot()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        slots.iter().all(Option::is_some),
        "freed slots reused: {slots:?}"
    );
    assert_eq!(global_hits(&reader).0, total + i64::from(SHARD_SLOTS));
}

/// A worker process: attaches, runs `SHARD_WAVES` waves of `SHARD_THREADS` threads, each adding
/// `SHARD_ITERS` to HITS and to its own instance's BYTES; each wave's threads exit before the
/// next starts (whose threads take the freed slots). With `SHARD_HOLD` set, it then claims every
/// slot it can and dies without releasing them (`process::exit` runs no thread's destructors).
#[test]
#[ignore = "entry point for worker processes"]
fn shard_worker_entry() {
    if common::role().as_deref() != Some("shard-worker") {
        return;
    }
    let num = |k: &str| -> usize { std::env::var(k).unwrap().parse().unwrap() };
    let (waves, threads, iters) = (num("SHARD_WAVES"), num("SHARD_THREADS"), num("SHARD_ITERS"));
    let prf = PrfData::attach_in(&common::child_dir()).expect("attach");
    let me = prf
        .add_instance(
            CONN,
            prfdata::InstanceSpec::named(&format!("w{}", std::process::id())).process_owned(),
        )
        .expect("add");
    for _ in 0..waves {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    let (hits, bytes) = (prf.sharded(HITS, ()), prf.sharded(BYTES, me));
                    assert!(
                        hits.slot().is_some() && bytes.slot().is_some(),
                        "slots to spare"
                    );
                    for _ in 0..iters {
                        hits.add(1);
                        bytes.add(2);
                    }
                });
            }
        });
    }
    if std::env::var_os("SHARD_HOLD").is_some() {
        let taken = Barrier::new(SHARD_SLOTS as usize + 1);
        std::thread::scope(|s| {
            for _ in 0..SHARD_SLOTS {
                s.spawn(|| {
                    let hits = prf.sharded(HITS, ());
                    assert!(hits.slot().is_some());
                    hits.add(1);
                    taken.wait();
                    std::thread::park(); // until the process exits
                });
            }
            taken.wait();
            std::process::exit(0);
        });
    }
    prf.remove_instance(me).expect("remove");
}

fn spawn_workers(
    dir: &std::path::Path,
    n: usize,
    env: &[(&str, String)],
) -> Vec<common::ChildProcess> {
    (0..n)
        .map(|_| common::spawn_child("sharded::shard_worker_entry", "shard-worker", dir, env))
        .collect()
}

#[test]
fn processes_times_threads_lose_no_increment() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let (procs, waves, threads, iters) = (3, 3, 4, 20_000);
    let env = [
        ("SHARD_WAVES", waves.to_string()),
        ("SHARD_THREADS", threads.to_string()),
        ("SHARD_ITERS", iters.to_string()),
    ];
    for child in spawn_workers(dir.path(), procs, &env) {
        common::wait_ok(child, Duration::from_secs(120));
    }
    let expected = (procs * waves * threads * iters) as i64;
    assert_eq!(global_hits(&reader).0, expected, "no increment lost");
    // Each worker removed its instance: its BYTES (slots included) went to the retired share.
    let total = reader
        .read_with(READ, |view| {
            let table = view.instances(1)?;
            table.value(&table.get(table.len() - 1)?, 0)
        })
        .unwrap();
    assert_eq!(
        total,
        2 * expected,
        "_Total keeps the removed instances' slots"
    );
}

#[test]
fn a_killed_process_leaves_its_slots_and_values_to_the_next_owners() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let env = [
        ("SHARD_WAVES", "1".to_string()),
        ("SHARD_THREADS", "2".to_string()),
        ("SHARD_ITERS", "1000".to_string()),
        ("SHARD_HOLD", "1".to_string()),
    ];
    for child in spawn_workers(dir.path(), 1, &env) {
        common::wait_ok(child, Duration::from_secs(60));
    }
    let before = 2 * 1000 + i64::from(SHARD_SLOTS);
    assert_eq!(global_hits(&reader).0, before);
    // Every owner word still names the dead worker: new threads take its slots over.
    let all = Barrier::new(SHARD_SLOTS as usize);
    let slots: Vec<Option<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..SHARD_SLOTS)
            .map(|_| {
                s.spawn(|| {
                    let hits = prf.sharded(HITS, ());
                    all.wait();
                    hits.add(10);
                    hits.slot()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        slots.iter().all(Option::is_some),
        "dead owner's slots taken: {slots:?}"
    );
    assert_eq!(
        global_hits(&reader).0,
        before + 10 * i64::from(SHARD_SLOTS),
        "each new owner continued from the dead one's value"
    );
}

#[test]
fn a_sharded_counter_must_be_a_64_bit_count() {
    use prfdata::map::PerfDataMap;
    use prfdata::map::{CounterDef, DetailLevel, Instances, MapDef, MapError, ObjectDef};
    use prfdata::map::{Source, Text};
    const T: &[Text] = &[Text {
        lang: "009",
        name: "C",
        help: "c",
    }];
    const C: [CounterDef; 1] = [CounterDef {
        symbol: "C",
        offset: Some(2),
        texts: T,
        detail: DetailLevel::Novice,
        default_scale: 0,
        counter_type: prfdata_wire::winperf::PERF_COUNTER_COUNTER,
        text_len: 0,
        factor: None,
        unit: None,
        source: Source::Sharded,
        aggregate: None,
    }];
    const O: [ObjectDef; 1] = [ObjectDef {
        symbol: "O",
        offset: 0,
        texts: T,
        detail: DetailLevel::Novice,
        default_counter: None,
        instances: Instances::None,
        costly: false,
        total: false,
        packed: false,
        counters: &C,
    }];
    /// A map written by hand, past the macro's checks: `activate` checks it again.
    struct ShardedBad;
    // SAFETY: deliberately broken (its DEF breaks the map's rules), to show that prfdata checks.
    unsafe impl PerfDataMap for ShardedBad {
        const DEF: &'static MapDef = &MapDef {
            app: "ShardedBad",
            objects: &O,
        };
    }
    let dir = tempfile::tempdir().unwrap();
    let err = prfdata::PrfData::<ShardedBad>::activate_in(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            prfdata::Error::Map(MapError::BadSharded { counter: "C" })
        ),
        "{err:?}"
    );
}

/// A counter record whose shard word is any `u32` (here the largest) is refused at open, naming
/// the object's shard line that cannot hold it; the check's arithmetic never overflows.
#[test]
fn a_shard_word_at_the_top_of_its_range_refuses_the_block() {
    use std::mem::offset_of;
    use std::os::unix::fs::FileExt;

    use prfdata::layout::OBJECT_RECORD_SIZE;
    use prfdata::layout::{CounterRecord, ObjectRecord, COUNTER_RECORD_SIZE, HEADER_SIZE};
    use prfdata::reader::ReadError;

    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    // GLOBAL's second counter, HITS, is sharded: its record's shard field is its word + 1.
    let records = prfdata::map::offsets::counters_offset(&MAP);
    let shard = records + COUNTER_RECORD_SIZE + offset_of!(CounterRecord, shard);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    file.write_all_at(&u32::MAX.to_le_bytes(), shard as u64)
        .unwrap();
    let shard_line = HEADER_SIZE + offset_of!(ObjectRecord, shard_line);
    assert!(OBJECT_RECORD_SIZE > offset_of!(ObjectRecord, shard_line));
    match BlockReader::open_path("PrfDataSharded", prf.path()) {
        Err(ReadError::Field { offset, .. }) => assert_eq!(offset, shard_line as u64),
        other => panic!("expected a refusal naming the shard line, got {other:?}"),
    }
}

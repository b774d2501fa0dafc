//! Histograms recorded into a real block and read back through the block reader's copies (what
//! the provider serialises): the descriptor written from the checked records, the buckets, the
//! count computed from them, the sum; percentiles within the stated error; a corrupt record
//! refused and corrupt data read as no data, never a panic. The SIGKILL test is in `kill`.

use std::mem::offset_of;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use prfdata::layout::{self, CounterRecord};
use prfdata::map::offsets;
use prfdata::reader::{BlockReader, ReadError};
use prfdata_rules::histogram::{Descriptor, Geometry};
use prfdata_testkit::values::{values, Mix};

use super::common;

mod kill;

prfdata::prfdata_map! {
    /// A service with three histograms, and workers with their own.
    pub mod hist_map {
        app: "PrfDataHistogram",
        object SERVICE {
            name: "Hist Service", help: "One service.",
            counters {
                LATENCY: Histogram { name: "Latency", help: "Microseconds.", unit: us,
                    range: 1us..10s, error: 2% },
                FAST: Histogram { name: "Fast latency", help: "Microseconds.", unit: us,
                    range: 1us..10s, error: 2%, sharded: true },
                SIZE: Histogram { name: "Size", help: "Bytes.", unit: bytes,
                    buckets: [64, 1024, 65536] },
            }
        }
        object WORKERS {
            name: "Hist Workers", help: "One per worker process.",
            instances: { max: 16, name_len: 16 }, total: true,
            counters {
                JOB: Histogram { name: "Job", help: "Microseconds.", unit: us,
                    range: 1us..10s, error: 2% },
                JOB_SHARDED: Histogram { name: "Job sharded", help: "Microseconds.", unit: us,
                    range: 1us..10s, error: 5%, sharded: true },
            }
        }
    }
}
use hist_map::*;

const APP: &str = "PrfDataHistogram";
/// The histograms' sums among their object's counters (base one after, buckets two after).
const S_LATENCY: usize = 0;
const S_FAST: usize = 3;
const S_SIZE: usize = 6;

/// A histogram as one fixed-up copy of a counter block shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    /// The geometry its descriptor decodes to; `None`: no data.
    pub geometry: Option<Geometry>,
    pub buckets: Vec<u64>,
    /// The base: the count mod 2^32.
    pub count: u32,
    pub sum: u64,
}

/// The histogram whose sum is counter `sum` of object `obj`, in `block`, a copy of one of its
/// counter blocks with the object's fix-ups applied.
pub fn seen(reader: &BlockReader, obj: usize, sum: usize, block: &[u8]) -> Seen {
    let o = &reader.objects()[obj];
    let own = &reader.counters()[o.counters.clone()];
    let (s, b, h) = (&own[sum], &own[sum + 1], &own[sum + 2]);
    let at = |offset: u32, i: u32| (offset + 8 * i) as usize;
    let words: Vec<u64> = (0..h.size / 8)
        .map(|i| u64::from_le_bytes(block[at(h.block_offset, i)..][..8].try_into().unwrap()))
        .collect();
    let base = b.block_offset as usize;
    let count = u32::from_ne_bytes(block[base..base + 4].try_into().unwrap());
    let sum = u64::from_ne_bytes(block[at(s.block_offset, 0)..][..8].try_into().unwrap());
    match Descriptor::decode(&words) {
        Ok((g, d)) => Seen {
            geometry: Some(g),
            buckets: words[d..].to_vec(),
            count,
            sum,
        },
        Err(_) => Seen {
            geometry: None,
            buckets: Vec::new(),
            count,
            sum,
        },
    }
}

/// The global object `obj`'s counter block, copied and fixed up.
pub fn global_block(reader: &BlockReader, obj: usize) -> Vec<u8> {
    let o = &reader.objects()[obj];
    let mut block = vec![0u8; o.counter_block_size as usize];
    reader
        .read_with(Duration::from_secs(5), |view| {
            view.copy_global_block(obj, &mut block)
        })
        .expect("a consistent read");
    o.fixups().apply(&mut block);
    block
}

/// The buckets `values` fill in `g`, and their sum.
pub fn expected(g: &Geometry, values: &[u64]) -> (Vec<u64>, u64) {
    let mut buckets = vec![0u64; g.buckets()];
    values.iter().for_each(|&v| buckets[g.index(v)] += 1);
    (buckets, values.iter().fold(0u64, |s, &v| s.wrapping_add(v)))
}

/// Values recorded from three threads (into the sharded histogram through each thread's shard
/// line) are each in their bucket of the copy, whose descriptor decodes to the map's geometry,
/// whose base is their count and whose sum is theirs; the base reads as the count through
/// `global_value` too.
#[test]
fn a_copy_holds_the_descriptor_the_buckets_their_count_and_the_sum() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let all = values("bimodal", 30_000, (1.0, 1e7), &mut Mix(11));
    std::thread::scope(|s| {
        for part in all.chunks(10_000) {
            let prf = &prf;
            s.spawn(move || {
                let (latency, fast) = (prf.histogram(LATENCY, ()), prf.histogram(FAST, ()));
                assert!(fast.geometry().buckets() > 1000);
                for &v in part {
                    latency.record(v);
                    fast.record(v);
                    prf.histogram(SIZE, ()).record(v / 10);
                }
            });
        }
    });
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let block = global_block(&reader, 0);
    for (sum, ctr, values) in [
        (
            S_LATENCY,
            prf.histogram(LATENCY, ()).geometry(),
            all.clone(),
        ),
        (S_FAST, prf.histogram(FAST, ()).geometry(), all.clone()),
        (
            S_SIZE,
            prf.histogram(SIZE, ()).geometry(),
            all.iter().map(|v| v / 10).collect(),
        ),
    ] {
        let got = seen(&reader, 0, sum, &block);
        let (buckets, total) = expected(ctr, &values);
        assert_eq!(got.geometry.as_ref(), Some(ctr), "counter {sum}");
        assert_eq!(got.buckets, buckets, "counter {sum}");
        assert_eq!(
            (got.count, got.sum),
            (values.len() as u32, total),
            "counter {sum}"
        );
        let base = reader
            .read_with(Duration::from_secs(5), |v| v.global_value(0, sum + 1))
            .unwrap();
        assert_eq!(base, values.len() as i64);
    }
}

/// More threads than shard slots: the threads without a slot add to the counter block's
/// buckets and sum with atomic adds, and nothing is lost.
#[test]
fn threads_beyond_the_shard_slots_still_count_every_value() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let all = values("log-normal 1.5", 40_000, (1.0, 1e7), &mut Mix(23));
    let barrier = std::sync::Barrier::new(20);
    let slots = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for part in all.chunks(2_000) {
            let (prf, barrier, slots) = (&prf, &barrier, &slots);
            s.spawn(move || {
                let fast = prf.histogram(FAST, ());
                if fast.slot().is_some() {
                    slots.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                barrier.wait(); // every handle taken: 20 threads hold them at once
                part.iter().for_each(|&v| fast.record(v));
            });
        }
    });
    assert_eq!(
        slots.into_inner(),
        layout::SHARD_SLOTS as usize,
        "16 with a slot, 4 without"
    );
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let got = seen(&reader, 0, S_FAST, &global_block(&reader, 0));
    let (buckets, sum) = expected(prf.histogram(FAST, ()).geometry(), &all);
    assert_eq!(
        (got.buckets, got.count, got.sum),
        (buckets, all.len() as u32, sum)
    );
}

/// A child that records one distribution into the service's histograms, then exits.
#[test]
#[ignore = "entry point for child processes"]
fn recorder_entry() {
    if common::role().as_deref() != Some("recorder") {
        return;
    }
    let kind = std::env::var("HIST_KIND").expect("HIST_KIND");
    let start: u64 = std::env::var("HIST_START").unwrap().parse().unwrap();
    let prf = PrfData::attach_in(&common::child_dir()).expect("attach");
    let (latency, fast) = (prf.histogram(LATENCY, ()), prf.histogram(FAST, ()));
    for v in values(&kind, 200_000, (1.0, 1e7), &mut Mix(start)) {
        latency.record(v);
        fast.record(v);
    }
}

/// The nearest-rank percentile `q` (in (0, 1]) of the values counted in `deltas`, read as its
/// bucket's midpoint.
pub fn bucket_percentile(g: &Geometry, deltas: &[u64], q: f64) -> f64 {
    let n: u64 = deltas.iter().sum();
    let rank = ((q * n as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (i, d) in deltas.iter().enumerate() {
        seen += d;
        if seen >= rank {
            return (g.lower(i) + g.upper(i)) as f64 / 2.0;
        }
    }
    unreachable!("the rank is at most the count")
}

/// For each distribution a child process records 200,000 values; the percentiles of the
/// bucket differences between the copies before and after it (each the bucket's midpoint) are
/// within half the stated error, 2^-(p+1), of the exact nearest-rank percentiles of the values
/// it recorded, for the plain and the sharded histogram.
#[test]
fn percentiles_are_within_the_stated_error() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let kinds = ["uniform", "log-normal 0.5", "log-normal 1.5", "bimodal"];
    for (k, kind) in kinds.into_iter().enumerate() {
        let before = global_block(&reader, 0);
        let start = 0x51a7_0000 + k as u64;
        let env = [
            ("HIST_KIND", kind.to_string()),
            ("HIST_START", start.to_string()),
        ];
        let child = common::spawn_child("histogram::recorder_entry", "recorder", dir.path(), &env);
        common::wait_ok(child, Duration::from_secs(120));
        let after = global_block(&reader, 0);
        let mut sorted = values(kind, 200_000, (1.0, 1e7), &mut Mix(start));
        sorted.sort_unstable();
        for sum in [S_LATENCY, S_FAST] {
            let (old, new) = (
                seen(&reader, 0, sum, &before),
                seen(&reader, 0, sum, &after),
            );
            let g = new.geometry.expect("a descriptor");
            let deltas: Vec<u64> = new
                .buckets
                .iter()
                .zip(&old.buckets)
                .map(|(a, b)| a - b)
                .collect();
            assert_eq!(deltas.iter().sum::<u64>(), sorted.len() as u64);
            let half = g.relative_error().unwrap() / 2.0;
            for q in [0.5, 0.9, 0.99, 0.999] {
                let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
                let exact = sorted[rank - 1] as f64;
                let got = bucket_percentile(&g, &deltas, q);
                assert!(
                    (got - exact).abs() <= half * exact,
                    "{kind}, counter {sum}, q {q}: {got} vs {exact}"
                );
            }
        }
    }
}

/// Writes `bytes` at `at` into the block file.
fn scribble(prf: &PrfData, at: u64, bytes: &[u8]) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    file.write_all_at(bytes, at).unwrap();
}

/// Offset of field `field` of the record of counter `counter` of object 0.
fn record(counter: usize, field: usize) -> u64 {
    (offsets::counters_offset(&MAP) + counter * layout::COUNTER_RECORD_SIZE + field) as u64
}

/// A corrupt histogram record or descriptor refuses the block at open, naming the record's
/// field: a descriptor word, the descriptor offset, the size, the sum before it.
#[test]
fn a_corrupt_histogram_record_or_descriptor_refuses_the_block() {
    let buckets = S_LATENCY + 2;
    let descriptor = offsets::descriptor_offset(&MAP, 0, buckets).unwrap() as u64;
    let histogram_field = record(buckets, offset_of!(CounterRecord, histogram));
    let cases: [(&str, u64, Vec<u8>, u64); 5] = [
        (
            "descriptor magic",
            descriptor,
            0x1234u16.to_le_bytes().to_vec(),
            histogram_field,
        ),
        (
            "descriptor buckets",
            descriptor + 8,
            7u32.to_le_bytes().to_vec(),
            histogram_field,
        ),
        (
            "descriptor offset",
            histogram_field,
            8u32.to_le_bytes().to_vec(),
            histogram_field,
        ),
        (
            "size",
            record(buckets, offset_of!(CounterRecord, size)),
            8u32.to_le_bytes().to_vec(),
            histogram_field,
        ),
        (
            "the sum's type",
            record(S_LATENCY, offset_of!(CounterRecord, counter_type)),
            prfdata_wire::winperf::PERF_COUNTER_BULK_COUNT
                .to_le_bytes()
                .to_vec(),
            record(buckets, 0),
        ),
    ];
    for (what, at, bytes, named) in cases {
        let dir = tempfile::tempdir().unwrap();
        let prf = PrfData::activate_in(dir.path()).unwrap();
        scribble(&prf, at, &bytes);
        match BlockReader::open_path(APP, prf.path()) {
            Err(ReadError::Field { offset, .. }) => assert_eq!(offset, named, "{what}"),
            other => panic!("{what}: expected a refusal naming {named}, got {other:?}"),
        }
    }
}

/// Corrupt data in the counter block: descriptor words the app scribbled are replaced in the
/// copy by the checked ones; buckets whose count passes 2^64 make the histogram no data (its
/// descriptor's first word zero), never a panic or a wrong count.
#[test]
fn corrupt_bucket_words_are_no_data_and_scribbled_descriptors_are_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let size = prf.histogram(SIZE, ());
    size.record(10);
    let obj = &MAP.objects[0];
    let data = offsets::data_offset(&MAP, 0) as u64;
    let value = |c: usize| data + offsets::counter_offset(obj, c) as u64;
    // The SIZE histogram: 5 descriptor words, then 4 buckets.
    scribble(&prf, value(S_SIZE + 2), &[0xff; 16]);
    let reader = BlockReader::open_path(APP, prf.path()).unwrap();
    let got = seen(&reader, 0, S_SIZE, &global_block(&reader, 0));
    assert_eq!(got.geometry.as_ref(), Some(size.geometry()));
    assert_eq!((got.buckets.as_slice(), got.count), (&[1, 0, 0, 0][..], 1));
    scribble(&prf, value(S_SIZE + 2) + 8 * 6, &u64::MAX.to_ne_bytes());
    let got = seen(&reader, 0, S_SIZE, &global_block(&reader, 0));
    assert_eq!(
        (got.geometry, got.count),
        (None, 0),
        "1 + 2^64 - 1 buckets: no data"
    );
    let latency = seen(&reader, 0, S_LATENCY, &global_block(&reader, 0));
    assert!(
        latency.geometry.is_some(),
        "the other histograms keep their data"
    );
}

/// The members table follows the descriptor region: in a block without histograms, right
/// after the records; with histograms, no further than their descriptors can reach. A table
/// placed elsewhere refuses the block, naming the header's field.
#[test]
fn a_members_table_past_the_descriptor_region_refuses_the_block() {
    use prfdata::layout::BlockHeader;
    let at = offset_of!(BlockHeader, members_offset) as u64;
    let moved = |members: usize| (members as u32 + 64).to_le_bytes();
    let dir = tempfile::tempdir().unwrap();
    let plain = common::testmap::PrfData::activate_in(dir.path()).unwrap();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(plain.path())
        .unwrap();
    let members = offsets::members_offset(&common::testmap::MAP);
    file.write_all_at(&moved(members), at).unwrap();
    match BlockReader::open_path("PrfDataTest", plain.path()) {
        Err(ReadError::Field { offset, .. }) => assert_eq!(offset, at),
        other => panic!("a members table past the records: {other:?}"),
    }
    let prf = PrfData::activate_in(dir.path()).unwrap();
    let records = offsets::counters_offset(&MAP) + 15 * layout::COUNTER_RECORD_SIZE;
    // 15 counters: room for 5 descriptors of at most 66 words each, and no more.
    let far = (records + 5 * 8 * 66).next_multiple_of(64);
    scribble(&prf, at, &moved(far));
    match BlockReader::open_path(APP, prf.path()) {
        Err(ReadError::Field { offset, .. }) => assert_eq!(offset, at),
        other => panic!("members past the descriptor region: {other:?}"),
    }
}

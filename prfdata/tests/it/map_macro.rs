//! What `prfdata_map!` makes of a map written with its defaults: computed symbolic offsets,
//! default detail levels and scales, `help: name`, doc comments, limits given as constants, and
//! the same definitions as the map written out in full.

use prfdata::map::{DetailLevel, Instances, PerfDataMap};
use prfdata_wire::winperf::{PERF_AVERAGE_BASE, PERF_COUNTER_COUNTER};

/// The most workers: instance limits may name constants of the enclosing module.
const MAX_WORKERS: u32 = 32;

prfdata::prfdata_map! {
    /// Written the short way.
    pub mod short {
        app: "MapMacroShort",
        /// The service as a whole.
        object SERVICE {
            name: "Service", help: name,
            lang "00C" { name: "Service", help: name },
            detail: Advanced,
            counters {
                /// Jobs per second.
                JOBS: CounterCounter { name: "Jobs/sec", help: "Jobs done per second." },
                LATENCY: AverageTimer { name: "Latency", help: "Seconds per job.", detail: Novice },
                LATENCY_BASE: AverageBase,
                QUEUE: RawCount { name: "Queue", help: "Jobs waiting.", scale: -1 },
            }
        }
        object WORKER = 20 {
            name: "Worker", help: "One worker.", default: BUSY, costly: true,
            instances: { max: MAX_WORKERS, name_len: 2 * 8 },
            counters {
                BUSY: Timer100Ns { name: "% Busy", help: "Time spent on jobs." },
                DONE = 40: LargeRawCount { name: "Done", help: "Jobs done." },
                FAILED: LargeRawCount { name: "Failed", help: "Jobs failed." },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// The same map written out in full, as before the defaults existed.
    pub mod full {
        app: "MapMacroShort",
        object SERVICE = 0 {
            name: "Service", help: "Service",
            lang "00C" { name: "Service", help: "Service" },
            detail: Advanced, default: none, instances: none, costly: false,
            counters {
                JOBS = 2: CounterCounter { name: "Jobs/sec", help: "Jobs done per second.", detail: Advanced, scale: 0 },
                LATENCY = 4: AverageTimer { name: "Latency", help: "Seconds per job.", detail: Novice, scale: 0 },
                LATENCY_BASE: AverageBase,
                QUEUE = 6: RawCount { name: "Queue", help: "Jobs waiting.", detail: Advanced, scale: -1 },
            }
        }
        object WORKER = 20 {
            name: "Worker", help: "One worker.",
            detail: Novice, default: BUSY, instances: { max: 32, name_len: 16 }, costly: true,
            counters {
                BUSY = 22: Timer100Ns { name: "% Busy", help: "Time spent on jobs.", detail: Novice, scale: 0 },
                DONE = 40: LargeRawCount { name: "Done", help: "Jobs done.", detail: Novice, scale: 0 },
                FAILED = 42: LargeRawCount { name: "Failed", help: "Jobs failed.", detail: Novice, scale: 0 },
            }
        }
    }
}

#[test]
fn the_short_map_defines_what_the_full_one_does() {
    assert_eq!(short::MAP, full::MAP);
    assert_eq!(<short::Map as PerfDataMap>::DEF, &full::MAP);
}

#[test]
fn offsets_are_numbered_in_declaration_order_and_continue_after_an_explicit_one() {
    let offsets: Vec<(&str, Option<u32>)> = short::MAP
        .objects
        .iter()
        .flat_map(|o| {
            std::iter::once((o.symbol, Some(o.offset)))
                .chain(o.counters.iter().map(|c| (c.symbol, c.offset)))
        })
        .collect();
    assert_eq!(
        offsets,
        [
            ("SERVICE", Some(0)),
            ("JOBS", Some(2)),
            ("LATENCY", Some(4)),
            ("LATENCY_BASE", None),
            ("QUEUE", Some(6)),
            ("WORKER", Some(20)),
            ("BUSY", Some(22)),
            ("DONE", Some(40)),
            ("FAILED", Some(42)),
        ]
    );
}

#[test]
fn defaults_follow_the_object() {
    let service = &short::MAP.objects[0];
    assert_eq!(service.detail, DetailLevel::Advanced);
    assert_eq!(service.default_counter, None);
    assert_eq!(service.instances, Instances::None);
    assert!(!service.costly);
    // A counter takes its object's level unless it says otherwise; a base is Novice.
    let details: Vec<DetailLevel> = service.counters.iter().map(|c| c.detail).collect();
    use DetailLevel::*;
    assert_eq!(details, [Advanced, Novice, Novice, Advanced]);
    assert_eq!(service.counters[0].counter_type, PERF_COUNTER_COUNTER);
    assert_eq!(service.counters[2].counter_type, PERF_AVERAGE_BASE);
    assert_eq!(service.counters[3].default_scale, -1);
    let worker = &short::MAP.objects[1];
    assert_eq!(worker.detail, Novice);
    assert_eq!(worker.default_counter, Some(0));
    assert_eq!(
        worker.instances,
        Instances::Max {
            max: MAX_WORKERS,
            max_name_len: 16
        }
    );
}

#[test]
fn help_name_repeats_the_name_in_each_language() {
    let texts = short::MAP.objects[0].texts;
    assert_eq!(texts.len(), 2);
    assert!(texts.iter().all(|t| t.help == t.name));
    assert_eq!(texts[1].lang, "00C");
}

#[test]
fn ids_and_objects_are_typed_as_before() {
    assert_eq!(short::JOBS.index(), 0);
    assert_eq!(short::QUEUE.index(), 3);
    assert_eq!(format!("{:?}", short::DONE), "CtrId(WORKER::DONE)");
    assert_eq!(<short::WORKER as prfdata::map::Object>::INDEX, 1);
}

prfdata::prfdata_map! {
    pub mod hist {
        app: "MapMacroHistogram",
        object SERVICE {
            name: "Service", help: name, default: JOB_LATENCY,
            counters {
                JOBS: CounterCounter { name: "Jobs/sec", help: name },
                /// Submission to completion.
                JOB_LATENCY: Histogram {
                    name: "Job latency", help: "Submission to completion, microseconds.",
                    unit: us, range: 10us..10s, error: 2%, sharded: true, scale: -3,
                },
                QUEUE_WAIT: Histogram { name: "Queue wait", help: name, unit: ms,
                    buckets: [1ms, 5ms, 25ms, 100ms, 500ms, 2s] },
                BOTH: RawCount { name: "Both", help: name, sum: [JOBS, AFTER] },
                AFTER: RawCount { name: "After", help: name },
            }
        }
        object CONN {
            name: "Connection", help: name, instances: { max: 4, name_len: 8 }, total: true,
            counters {
                SIZES: Histogram { name: "Sizes", help: name, unit: bytes,
                    buckets: [512, 4096, 65536], sharded: true },
            }
        }
    }
}

#[test]
fn a_histogram_expands_to_its_sum_count_and_buckets_and_one_id_on_the_buckets() {
    use prfdata::map::Source;
    use prfdata_rules::histogram::{Explicit, Geometry, LogLinear, Unit};
    use prfdata_wire::winperf::{PERF_AVERAGE_BULK, PERF_PRFDATA_HISTOGRAM};

    let service = &hist::MAP.objects[0];
    let c = service.counters;
    let symbols: Vec<&str> = c.iter().map(|c| c.symbol).collect();
    let expected = [
        "JOBS",
        "JOB_LATENCY",
        "JOB_LATENCY_COUNT",
        "JOB_LATENCY_BUCKETS",
        "QUEUE_WAIT",
        "QUEUE_WAIT_COUNT",
        "QUEUE_WAIT_BUCKETS",
        "BOTH",
        "AFTER",
    ];
    assert_eq!(symbols, expected);
    let types: Vec<u32> = c.iter().map(|c| c.counter_type).collect();
    let h = [PERF_AVERAGE_BULK, PERF_AVERAGE_BASE, PERF_PRFDATA_HISTOGRAM];
    assert_eq!(types[1..4], h);
    assert_eq!(types[4..7], h);
    // The sum carries the histogram's name, offset, scale and detail; the rest are unnamed.
    let offsets: Vec<Option<u32>> = c.iter().map(|c| c.offset).collect();
    let named = [
        Some(2),
        Some(4),
        None,
        None,
        Some(6),
        None,
        None,
        Some(8),
        Some(10),
    ];
    assert_eq!(offsets, named);
    assert_eq!(
        (c[1].texts[0].name, c[1].default_scale),
        ("Job latency", -3)
    );
    assert!(c[2].texts.is_empty() && c[3].texts.is_empty());
    assert_eq!(
        service.default_counter,
        Some(1),
        "a histogram's name is its sum's"
    );
    let micros = LogLinear::new(Unit::Microseconds, 10, 10_000_000, 6).unwrap();
    let millis = Explicit::new(Unit::Milliseconds, &[1, 5, 25, 100, 500, 2000]).unwrap();
    assert_eq!(c[1].source, Source::Sharded);
    assert_eq!(c[2].source, Source::HistogramCount);
    assert_eq!(
        c[3].source,
        Source::Histogram {
            geometry: Box::leak(Box::new(Geometry::LogLinear(micros))),
            sharded: true
        }
    );
    assert_eq!(
        c[6].source,
        Source::Histogram {
            geometry: Box::leak(Box::new(Geometry::Explicit(millis))),
            sharded: false
        }
    );
    assert_eq!(
        c[4].source,
        Source::Sharded,
        "every histogram's sum is sharded"
    );
    assert_eq!(
        c[7].source,
        Source::SumOf(&[0, 8]),
        "a sum's parts after histograms"
    );
    assert_eq!(c[3].value_size(), Some(8 * (2 + micros.buckets() as u32)));
    assert_eq!(c[6].value_size(), Some(8 * (2 + 6 + 7)));
    // The ids name the buckets, typed by the unit.
    let time: prfdata::map::CtrId<prfdata::counter_type::TimeHistogram, hist::SERVICE> =
        hist::JOB_LATENCY;
    let sizes: prfdata::map::CtrId<prfdata::counter_type::Histogram, hist::CONN> = hist::SIZES;
    assert_eq!(
        (time.index(), hist::QUEUE_WAIT.index(), sizes.index()),
        (3, 6, 2)
    );
    assert_eq!(hist::BOTH.index(), 7);
    assert_eq!(
        time.offset(),
        prfdata::map::offsets::counter_offset(service, 3)
    );
    // A `bytes` histogram's sum declares the unit; a time histogram's (not in seconds) none.
    let conn = hist::MAP.objects[1].counters;
    assert_eq!((conn[0].unit, c[1].unit), (Some("bytes"), None));
}

#[test]
fn a_map_with_histograms_activates_with_its_shard_words_after_each_sum() {
    use prfdata::map::offsets;

    let conn = &hist::MAP.objects[1];
    // The sum's word, then the three bounds' four buckets.
    assert_eq!(
        (offsets::shard_index(conn, 0), offsets::shard_index(conn, 2)),
        (Some(0), Some(1))
    );
    assert_eq!(offsets::shard_line_words(conn), 5);
    let dir = tempfile::tempdir().unwrap();
    let prf = hist::PrfData::activate_in(dir.path()).unwrap();
    let w = prf.add_instance(hist::CONN, "c1").unwrap();
    prf.remove_instance(w).unwrap();
}

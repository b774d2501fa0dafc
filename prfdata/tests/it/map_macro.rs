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

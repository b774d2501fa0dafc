//! An app with two histograms, for the histogram benchmarks and `prfmon serve`'s end-to-end
//! test: one object without instances, "Histogram Test", whose histograms "Latency" and
//! "Latency sharded" (`sharded: true`) have the same geometry, [`MICROS`] (1 µs .. 10 s in
//! microseconds within 2 %, p = 6: 1166 buckets), laid out as `prfdata_map!` lays a histogram
//! out: the named sum (sharded), the count, the buckets.
//!
//! The map is written by hand, as `prfdata/tests/it/map_histogram.rs` writes its own, until
//! `prfdata_map!` expands `Histogram { .. }` counters; then it becomes
//!
//! ```text
//! object LAT = 0 { name: "Histogram Test", help: "..", counters {
//!     LATENCY = 2: Histogram { name: "Latency", help: "..", unit: us, range: 1us..10s, error: 2% },
//!     LATENCY_SHARDED = 4: Histogram { name: "Latency sharded", help: "..", unit: us,
//!         range: 1us..10s, error: 2%, sharded: true },
//! } }
//! ```
//!
//! # Examples
//!
//! ```
//! use prfdata_testkit::histogram_app::{Map, LATENCY};
//! let dir = tempfile::tempdir()?;
//! let prf = prfdata::PrfData::<Map>::activate_in(dir.path())?;
//! prf.histogram(LATENCY, ()).record(420);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
use prfdata::counter_type::TimeHistogram;
use prfdata::map::{
    CounterDef, CtrId, DetailLevel, Global, Instances, MapDef, MapError, Object, ObjectDef,
    PerfDataMap, Source, Text,
};
use prfdata_rules::histogram::{Geometry, LogLinear, Unit};
use prfdata_wire::winperf::{PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_PRFDATA_HISTOGRAM};

/// The object's name and help.
const OBJECT_TEXTS: &[Text] = &[Text {
    lang: "009",
    name: "Histogram Test",
    help: "The histogram test app.",
}];
/// The first histogram's.
const LATENCY_TEXTS: &[Text] = &[Text {
    lang: "009",
    name: "Latency",
    help: "Microseconds per request.",
}];
/// The sharded histogram's.
const SHARDED_TEXTS: &[Text] = &[Text {
    lang: "009",
    name: "Latency sharded",
    help: "Microseconds per request, recorded in the threads' shard lines.",
}];

/// 1 µs to 10 s within 2 % (p = 6).
pub static MICROS: Geometry = match LogLinear::new(Unit::Microseconds, 1, 10_000_000, 6) {
    Ok(g) => Geometry::LogLinear(g),
    Err(_) => panic!("1us..10s at 2% is a valid geometry"),
};

/// A histogram's three counters as the map macro declares them: the named sum (sharded), the
/// count, the buckets.
const fn histogram(
    symbol: [&'static str; 3],
    (offset, texts): (u32, &'static [Text]),
    sharded: bool,
) -> [CounterDef; 3] {
    let sum = CounterDef {
        symbol: symbol[0],
        offset: Some(offset),
        texts,
        detail: DetailLevel::Novice,
        default_scale: 0,
        counter_type: PERF_AVERAGE_BULK,
        text_len: 0,
        factor: None,
        unit: None,
        source: Source::Sharded,
        aggregate: None,
    };
    [
        sum,
        CounterDef {
            symbol: symbol[1],
            offset: None,
            texts: &[],
            counter_type: PERF_AVERAGE_BASE,
            source: Source::HistogramCount,
            ..sum
        },
        CounterDef {
            symbol: symbol[2],
            offset: None,
            texts: &[],
            counter_type: PERF_PRFDATA_HISTOGRAM,
            source: Source::Histogram {
                geometry: &MICROS,
                sharded,
            },
            ..sum
        },
    ]
}

const PLAIN: [CounterDef; 3] = histogram(
    ["LATENCY", "LATENCY_BASE", "LATENCY_BUCKETS"],
    (2, LATENCY_TEXTS),
    false,
);
const SHARDED: [CounterDef; 3] = histogram(
    ["SHARDED", "SHARDED_BASE", "SHARDED_BUCKETS"],
    (4, SHARDED_TEXTS),
    true,
);

/// The app's map: what [`Map`] declares, and what a test installs.
pub static MAP: MapDef = MapDef {
    app: "PrfDataHistogramTest",
    objects: &[ObjectDef {
        symbol: "LAT",
        offset: 0,
        texts: OBJECT_TEXTS,
        detail: DetailLevel::Novice,
        default_counter: None,
        instances: Instances::None,
        costly: false,
        total: false,
        packed: false,
        counters: &[
            PLAIN[0], PLAIN[1], PLAIN[2], SHARDED[0], SHARDED[1], SHARDED[2],
        ],
    }],
};
// The map's validation accepts it at compile time, as it does a map the macro made.
const _: () = MapError::assert_valid(&MAP);

/// The map.
pub struct Map;
// SAFETY: the map passes the validation (asserted above); prfdata checks it again anyway.
unsafe impl PerfDataMap for Map {
    const DEF: &'static MapDef = &MAP;
}

/// Its object.
#[derive(Clone, Copy, Debug)]
pub struct Lat;
// SAFETY: `Lat` is object 0 of `Map`, which has no instances: what `prfdata_map!` would say.
unsafe impl Object for Lat {
    type Map = Map;
    type Scope = Global;
    const INDEX: usize = 0;
}

/// The histogram whose buckets are in the counter block (one locked add per record).
// SAFETY: counter 2 of `Lat` is a histogram's buckets, as the macro would name it (the
// constructor checks index, type and width at compile time).
pub const LATENCY: CtrId<TimeHistogram, Lat> = unsafe { CtrId::__from_macro(2) };
/// The histogram whose buckets are in the threads' shard lines (no locked instruction).
// SAFETY: as for `LATENCY`, counter 5.
pub const LATENCY_SHARDED: CtrId<TimeHistogram, Lat> = unsafe { CtrId::__from_macro(5) };

//! The block the `histogram` group's prfdata ids record into: one object without instances
//! with two histograms of the same geometry (1 µs .. 10 s in microseconds within 2 %, p = 6:
//! 1166 buckets), `LATENCY` and `LATENCY_SHARDED` (`sharded: true`), as `prfdata_map!` lays a
//! histogram out: the named sum (sharded), the count, the buckets.
//!
//! The map is written by hand, as `prfdata/tests/it/map_histogram.rs` writes its own, until
//! `prfdata_map!` expands `Histogram { .. }` counters; then this file becomes
//!
//! ```text
//! object LAT = 0 { name: "Bench Latency", help: "h", counters {
//!     LATENCY = 2: Histogram { name: "Latency", help: "h", unit: us, range: 1us..10s, error: 2% },
//!     LATENCY_SHARDED = 4: Histogram { name: "Latency sharded", help: "h", unit: us,
//!         range: 1us..10s, error: 2%, sharded: true },
//! } }
//! ```
use prfdata::counter_type::TimeHistogram;
use prfdata::map::{
    CounterDef, CtrId, DetailLevel, Global, Instances, MapDef, MapError, Object, ObjectDef,
    PerfDataMap, Source, Text,
};
use prfdata_rules::histogram::{Geometry, LogLinear, Unit};
use prfdata_wire::winperf::{PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_PRFDATA_HISTOGRAM};

const EN: &[Text] = &[Text {
    lang: "009",
    name: "n",
    help: "h",
}];

/// 1 µs to 10 s within 2 % (p = 6).
static MICROS: Geometry = match LogLinear::new(Unit::Microseconds, 1, 10_000_000, 6) {
    Ok(g) => Geometry::LogLinear(g),
    Err(_) => panic!("1us..10s at 2% is a valid geometry"),
};

/// A histogram's three counters as the map macro declares them: the named sum (sharded), the
/// count, the buckets.
const fn histogram(symbol: [&'static str; 3], offset: u32, sharded: bool) -> [CounterDef; 3] {
    let sum = CounterDef {
        symbol: symbol[0],
        offset: Some(offset),
        texts: EN,
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

const PLAIN: [CounterDef; 3] = histogram(["LATENCY", "LATENCY_BASE", "LATENCY_BUCKETS"], 2, false);
const SHARDED: [CounterDef; 3] = histogram(["SHARDED", "SHARDED_BASE", "SHARDED_BUCKETS"], 4, true);

static MAP: MapDef = MapDef {
    app: "PrfDataBenchHistogram",
    objects: &[ObjectDef {
        symbol: "LAT",
        offset: 0,
        texts: EN,
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

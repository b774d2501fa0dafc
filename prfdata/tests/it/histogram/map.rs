//! The histogram tests' map, written out as `prfdata_map!` declares histograms (each the named
//! sum, its count, its buckets): a service with three histograms, and workers with their own.
#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use prfdata::counter_type::{Histogram, TimeHistogram};
use prfdata::map::{
    CounterDef, CtrId, DetailLevel, Global, Instanced, Instances, MapDef, MapError, Object,
    ObjectDef, PerfDataMap, Source, Text,
};
use prfdata_rules::histogram::{Explicit, Geometry, LogLinear, Unit};
use prfdata_wire::winperf::{PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_PRFDATA_HISTOGRAM};

/// 1 µs to 10 s within 2^-p.
const fn micros(p: u8) -> Geometry {
    match LogLinear::new(Unit::Microseconds, 1, 10_000_000, p) {
        Ok(g) => Geometry::LogLinear(g),
        Err(_) => panic!("a valid geometry"),
    }
}

static MICROS_2: Geometry = micros(6);
static MICROS_5: Geometry = micros(5);
static BYTES: Geometry = match Explicit::new(Unit::Bytes, &[64, 1024, 65536]) {
    Ok(g) => Geometry::Explicit(g),
    Err(_) => panic!("valid bounds"),
};

/// An unnamed counter `symbol` of type `ty`.
const fn unnamed(symbol: &'static str, ty: u32, source: Source) -> CounterDef {
    CounterDef {
        symbol,
        offset: None,
        texts: &[],
        detail: DetailLevel::Novice,
        default_scale: 0,
        counter_type: ty,
        text_len: 0,
        factor: None,
        unit: None,
        source,
        aggregate: None,
    }
}

/// A histogram's three counters `symbols`: the sum named by `texts` at `offset`, the count,
/// the buckets.
const fn histogram(
    symbols: [&'static str; 3],
    texts: &'static [Text],
    offset: u32,
    geometry: &'static Geometry,
    sharded: bool,
) -> [CounterDef; 3] {
    [
        CounterDef {
            offset: Some(offset),
            texts,
            ..unnamed(symbols[0], PERF_AVERAGE_BULK, Source::Sharded)
        },
        unnamed(symbols[1], PERF_AVERAGE_BASE, Source::HistogramCount),
        unnamed(
            symbols[2],
            PERF_PRFDATA_HISTOGRAM,
            Source::Histogram { geometry, sharded },
        ),
    ]
}

const fn text(name: &'static str) -> [Text; 1] {
    [Text {
        lang: "009",
        name,
        help: name,
    }]
}

static SERVICE_COUNTERS: [CounterDef; 9] = {
    let [a, b, c] = histogram(
        ["LATENCY_SUM", "LATENCY_BASE", "LATENCY"],
        &text("Latency"),
        2,
        &MICROS_2,
        false,
    );
    let [d, e, f] = histogram(
        ["FAST_SUM", "FAST_BASE", "FAST"],
        &text("Fast latency"),
        4,
        &MICROS_2,
        true,
    );
    let [g, h, i] = histogram(
        ["SIZE_SUM", "SIZE_BASE", "SIZE"],
        &text("Size"),
        6,
        &BYTES,
        false,
    );
    [a, b, c, d, e, f, g, h, i]
};
static WORKER_COUNTERS: [CounterDef; 6] = {
    let [a, b, c] = histogram(
        ["JOB_SUM", "JOB_BASE", "JOB"],
        &text("Job"),
        10,
        &MICROS_2,
        false,
    );
    let [d, e, f] = histogram(
        ["JOB_SHARDED_SUM", "JOB_SHARDED_BASE", "JOB_SHARDED"],
        &text("Job sharded"),
        12,
        &MICROS_5,
        true,
    );
    [a, b, c, d, e, f]
};

/// The map.
pub static MAP: MapDef = MapDef {
    app: "PrfDataHistogram",
    objects: &[
        ObjectDef {
            symbol: "SERVICE",
            offset: 0,
            texts: &text("Hist Service"),
            detail: DetailLevel::Novice,
            default_counter: None,
            instances: Instances::None,
            costly: false,
            total: false,
            packed: false,
            counters: &SERVICE_COUNTERS,
        },
        ObjectDef {
            symbol: "WORKERS",
            offset: 8,
            texts: &text("Hist Workers"),
            detail: DetailLevel::Novice,
            default_counter: None,
            instances: Instances::Max {
                max: 16,
                max_name_len: 16,
            },
            costly: false,
            total: true,
            packed: false,
            counters: &WORKER_COUNTERS,
        },
    ],
};
const _: () = MapError::assert_valid(&MAP);

/// The map's marker.
pub struct Map;
// SAFETY: the map passes the validation (asserted above); prfdata checks it again.
unsafe impl PerfDataMap for Map {
    const DEF: &'static MapDef = &MAP;
}

/// The handle on a block of this map.
pub type PrfData = prfdata::PrfData<Map>;

/// The service object.
#[derive(Clone, Copy, Debug)]
pub struct SERVICE;
// SAFETY: object 0 of `MAP`, which has no instances.
unsafe impl Object for SERVICE {
    type Map = Map;
    type Scope = Global;
    const INDEX: usize = 0;
}

/// The workers, one instance per worker process.
#[derive(Clone, Copy, Debug)]
pub struct WORKERS;
// SAFETY: object 1 of `MAP`, which has instances.
unsafe impl Object for WORKERS {
    type Map = Map;
    type Scope = Instanced;
    const INDEX: usize = 1;
}

// SAFETY (each id): the map and objects above are this map's, as the macro would make them;
// each index is a histogram's buckets (checked again when the constant is evaluated).
pub const LATENCY: CtrId<TimeHistogram, SERVICE> = unsafe { CtrId::__from_macro(2) };
pub const FAST: CtrId<TimeHistogram, SERVICE> = unsafe { CtrId::__from_macro(5) };
pub const SIZE: CtrId<Histogram, SERVICE> = unsafe { CtrId::__from_macro(8) };
pub const JOB: CtrId<TimeHistogram, WORKERS> = unsafe { CtrId::__from_macro(2) };
pub const JOB_SHARDED: CtrId<TimeHistogram, WORKERS> = unsafe { CtrId::__from_macro(5) };

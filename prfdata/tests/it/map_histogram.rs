//! A histogram in a map written by hand: its three counters (the sum, the count, the buckets)
//! pass the map's validation exactly as the block lays them out, and anything else is refused
//! by `activate` with `MapError::BadHistogram` naming the problem, before any file is made.

use prfdata::map::{
    Aggregate, CounterDef, DetailLevel, HistogramProblem, Instances, MapDef, MapError, ObjectDef,
    PerfDataMap, Source, Text,
};
use prfdata::Error;
use prfdata_rules::histogram::{Explicit, Geometry, LogLinear, Unit};
use prfdata_wire::winperf::{
    PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_AVERAGE_TIMER, PERF_COUNTER_LARGE_RAWCOUNT,
    PERF_COUNTER_RAWCOUNT, PERF_PRFDATA_HISTOGRAM,
};

const EN: &[Text] = &[Text {
    lang: "009",
    name: "n",
    help: "h",
}];

/// A named counter of type `ty`, at `offset`.
const fn named(symbol: &'static str, offset: u32, ty: u32) -> CounterDef {
    CounterDef {
        symbol,
        offset: Some(offset),
        texts: EN,
        detail: DetailLevel::Novice,
        default_scale: 0,
        counter_type: ty,
        text_len: 0,
        factor: None,
        unit: None,
        source: Source::Stored,
        aggregate: None,
    }
}

/// 1 µs to 1 s within 6.25 % (p = 4).
static MICROS: Geometry = match LogLinear::new(Unit::Microseconds, 1, 1_000_000, 4) {
    Ok(g) => Geometry::LogLinear(g),
    Err(_) => panic!("a valid geometry"),
};
/// Three explicit bounds in bytes.
static BYTES: Geometry = match Explicit::new(Unit::Bytes, &[512, 4096, 65536]) {
    Ok(g) => Geometry::Explicit(g),
    Err(_) => panic!("valid bounds"),
};
/// 1 µs to 60 s in nanoseconds within 1 % (p = 7): 3304 buckets.
static FINE: Geometry = match LogLinear::new(Unit::Nanoseconds, 1000, 60_000_000_000, 7) {
    Ok(g) => Geometry::LogLinear(g),
    Err(_) => panic!("a valid geometry"),
};

/// A histogram's three counters as the map macro declares them: the named sum (sharded), the
/// count, the buckets.
const fn histogram(
    symbol: [&'static str; 3],
    offset: u32,
    geometry: &'static Geometry,
    sharded: bool,
) -> [CounterDef; 3] {
    [
        CounterDef {
            source: Source::Sharded,
            ..named(symbol[0], offset, PERF_AVERAGE_BULK)
        },
        CounterDef {
            offset: None,
            texts: &[],
            source: Source::HistogramCount,
            ..named(symbol[1], 0, PERF_AVERAGE_BASE)
        },
        CounterDef {
            offset: None,
            texts: &[],
            source: Source::Histogram { geometry, sharded },
            ..named(symbol[2], 0, PERF_PRFDATA_HISTOGRAM)
        },
    ]
}

const LAT: [&str; 3] = ["LAT", "LAT_BASE", "LAT_BUCKETS"];
const LATENCY: [CounterDef; 3] = histogram(LAT, 4, &MICROS, false);
const SUM: CounterDef = LATENCY[0];
const COUNT: CounterDef = LATENCY[1];
const BUCKETS: CounterDef = LATENCY[2];
const RAW: CounterDef = named("RAW", 2, PERF_COUNTER_RAWCOUNT);

const fn object(instances: Instances, counters: &'static [CounterDef]) -> ObjectDef {
    ObjectDef {
        symbol: "O",
        offset: 0,
        texts: EN,
        detail: DetailLevel::Novice,
        default_counter: None,
        instances,
        costly: false,
        total: true,
        packed: false,
        counters,
    }
}

/// An instanced histogram in bytes, sharded, its sum declaring the unit.
static SIZES: [CounterDef; 3] = {
    let [sum, count, buckets] = histogram(["SIZE", "SIZE_BASE", "SIZE_BUCKETS"], 12, &BYTES, true);
    [
        CounterDef {
            unit: Some("bytes"),
            ..sum
        },
        count,
        buckets,
    ]
};

/// A global object and an instanced one, each with a histogram.
static GOOD: MapDef = MapDef {
    app: "HistogramHand",
    objects: &[
        object(Instances::None, &[RAW, SUM, COUNT, BUCKETS]),
        ObjectDef {
            symbol: "W",
            offset: 10,
            ..object(
                Instances::Max {
                    max: 4,
                    max_name_len: 8,
                },
                &SIZES,
            )
        },
    ],
};
// The map's validation accepts it at compile time, as it does a map the macro made.
const _: () = MapError::assert_valid(&GOOD);

struct Good;
// SAFETY: the map passes the validation (asserted above); prfdata checks it again anyway.
unsafe impl PerfDataMap for Good {
    const DEF: &'static MapDef = &GOOD;
}

#[test]
fn a_histogram_laid_out_as_three_counters_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let prf = prfdata::PrfData::<Good>::activate_in(dir.path()).expect("a valid map");
    drop(prf);
}

/// Object `O` of a map with the counters of case `CASE` of [`CASES`].
struct Bad<const CASE: usize>;
// SAFETY: deliberately broken (its DEF does not pass the validation), to show that prfdata
// checks.
unsafe impl<const CASE: usize> PerfDataMap for Bad<CASE> {
    const DEF: &'static MapDef = &MapDef {
        app: "HistogramBad",
        objects: &[object(Instances::None, CASES[CASE].0)],
    };
}

/// Each broken histogram, the counter its error names and the problem.
const CASES: &[(&[CounterDef], &str, HistogramProblem)] = &[
    // The sum is an average timer (with its base), not an AVERAGE_BULK (not sharded either: a
    // 32-bit counter cannot be).
    (
        &[
            CounterDef {
                counter_type: PERF_AVERAGE_TIMER,
                source: Source::Stored,
                ..SUM
            },
            COUNT,
            BUCKETS,
        ],
        "LAT_BUCKETS",
        HistogramProblem::Sum,
    ),
    // The sum is not sharded.
    (
        &[
            CounterDef {
                source: Source::Stored,
                ..SUM
            },
            COUNT,
            BUCKETS,
        ],
        "LAT_BUCKETS",
        HistogramProblem::Sum,
    ),
    // No sum and count before the buckets.
    (&[RAW, BUCKETS], "LAT_BUCKETS", HistogramProblem::Sum),
    (&[BUCKETS], "LAT_BUCKETS", HistogramProblem::Sum),
    // The base is an ordinary one, which the app would have to write.
    (
        &[
            SUM,
            CounterDef {
                source: Source::Stored,
                ..COUNT
            },
            BUCKETS,
        ],
        "LAT_BUCKETS",
        HistogramProblem::Count,
    ),
    // A histogram's count without buckets after it.
    (&[SUM, COUNT, RAW], "LAT_BASE", HistogramProblem::Count),
    // The histogram type without a geometry, and a geometry on another type.
    (
        &[
            SUM,
            COUNT,
            CounterDef {
                source: Source::Stored,
                ..BUCKETS
            },
        ],
        "LAT_BUCKETS",
        HistogramProblem::Type,
    ),
    (
        &[
            SUM,
            COUNT,
            CounterDef {
                counter_type: PERF_COUNTER_LARGE_RAWCOUNT,
                ..BUCKETS
            },
        ],
        "LAT_BUCKETS",
        HistogramProblem::Type,
    ),
    // Buckets with a name of their own.
    (
        &[
            SUM,
            COUNT,
            CounterDef {
                offset: Some(6),
                texts: EN,
                ..BUCKETS
            },
        ],
        "LAT_BUCKETS",
        HistogramProblem::Naming,
    ),
    // A sum that aggregates as the live instances' only: _Total would decrease.
    (
        &[
            CounterDef {
                aggregate: Some(Aggregate::Live),
                ..SUM
            },
            COUNT,
            BUCKETS,
        ],
        "LAT_BUCKETS",
        HistogramProblem::Aggregate,
    ),
    (
        &[
            SUM,
            COUNT,
            CounterDef {
                aggregate: Some(Aggregate::Max),
                ..BUCKETS
            },
        ],
        "LAT_BUCKETS",
        HistogramProblem::Aggregate,
    ),
    // A microsecond histogram's sum declared in bytes.
    (
        &[
            CounterDef {
                unit: Some("bytes"),
                ..SUM
            },
            COUNT,
            BUCKETS,
        ],
        "LAT_BUCKETS",
        HistogramProblem::Unit,
    ),
];

/// Three sharded histograms of 3304 buckets: 3 × 3305 words of each shard line, past 8192.
struct WideShards;
static WIDE: [CounterDef; 9] = {
    let [a, b, c] = histogram(["A", "A_BASE", "A_BUCKETS"], 2, &FINE, true);
    let [d, e, f] = histogram(["B", "B_BASE", "B_BUCKETS"], 4, &FINE, true);
    let [g, h, i] = histogram(["C", "C_BASE", "C_BUCKETS"], 6, &FINE, true);
    [a, b, c, d, e, f, g, h, i]
};
// SAFETY: deliberately broken, as `Bad`.
unsafe impl PerfDataMap for WideShards {
    const DEF: &'static MapDef = &MapDef {
        app: "HistogramWide",
        objects: &[object(Instances::None, &WIDE)],
    };
}

/// The error `activate_in` gives map `M`, with the folder left empty.
fn refusal<M: PerfDataMap>() -> Error {
    let dir = tempfile::tempdir().unwrap();
    let err = prfdata::PrfData::<M>::activate_in(dir.path()).expect_err("an invalid map");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    err
}

#[test]
fn a_histogram_not_laid_out_as_its_three_counters_is_refused_with_its_problem() {
    let errors = [
        refusal::<Bad<0>>(),
        refusal::<Bad<1>>(),
        refusal::<Bad<2>>(),
        refusal::<Bad<3>>(),
        refusal::<Bad<4>>(),
        refusal::<Bad<5>>(),
        refusal::<Bad<6>>(),
        refusal::<Bad<7>>(),
        refusal::<Bad<8>>(),
        refusal::<Bad<9>>(),
        refusal::<Bad<10>>(),
        refusal::<Bad<11>>(),
    ];
    assert_eq!(errors.len(), CASES.len());
    for (i, (err, (_, symbol, problem))) in errors.iter().zip(CASES).enumerate() {
        match err {
            Error::Map(MapError::BadHistogram {
                counter,
                problem: found,
            }) => assert_eq!((*counter, *found), (*symbol, *problem), "case {i}: {err}"),
            other => panic!("case {i}: expected BadHistogram, got {other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.contains(symbol) && text.contains("histogram"),
            "{text}"
        );
    }
}

#[test]
fn sharded_buckets_past_the_shard_line_are_refused() {
    let err = refusal::<WideShards>();
    assert!(
        matches!(
            err,
            Error::Map(MapError::BadHistogram {
                counter: "A_BUCKETS",
                problem: HistogramProblem::ShardLine { words: 9915 }
            })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("8192"), "{err}");
}

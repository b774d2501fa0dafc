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

/// The little-endian `u32` at `at`.
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// The little-endian `u64` at `at`.
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn a_histograms_records_point_at_its_descriptor_after_the_counter_records() {
    use core::mem::offset_of;
    use prfdata::layout::{BlockHeader, CounterRecord, COUNTER_RECORD_SIZE};
    use prfdata_rules::histogram::Descriptor;

    let dir = tempfile::tempdir().unwrap();
    let prf = prfdata::PrfData::<Good>::activate_in(dir.path()).expect("a valid map");
    let block = std::fs::read(dir.path().join("HistogramHand.blk")).unwrap();
    let counters = u32_at(&block, offset_of!(BlockHeader, counters_offset)) as usize;
    let record =
        |i: usize, field: usize| u32_at(&block, counters + i * COUNTER_RECORD_SIZE + field);
    let histogram = offset_of!(CounterRecord, histogram);
    let descriptors = counters + 7 * COUNTER_RECORD_SIZE;
    // Global object: RAW, LAT, LAT_BASE, LAT_BUCKETS; instanced: SIZE, SIZE_BASE, SIZE_BUCKETS.
    let pointers: Vec<u32> = (0..7).map(|i| record(i, histogram)).collect();
    let (micros, bytes) = (Descriptor::of(&MICROS), Descriptor::of(&BYTES));
    let second = descriptors + 8 * micros.words().len();
    assert_eq!(pointers, [0, 0, 0, descriptors as u32, 0, 0, second as u32]);
    for (at, d, g) in [(descriptors, micros, &MICROS), (second, bytes, &BYTES)] {
        let words: Vec<u64> = (0..d.words().len())
            .map(|k| u64_at(&block, at + 8 * k))
            .collect();
        assert_eq!(words, d.words());
        let mut value = words.clone();
        value.resize(words.len() + g.buckets(), 0);
        assert_eq!(Descriptor::decode(&value), Ok((*g, words.len())));
    }
    let size = offset_of!(CounterRecord, size);
    let expected = 8 * (bytes.words().len() + BYTES.buckets()) as u32;
    assert_eq!(record(6, size), expected, "descriptor and buckets");
    // The sharded sum takes word 0 of the instanced object's lines, its buckets the next ones;
    // the global histogram's buckets are not sharded.
    let shard = offset_of!(CounterRecord, shard);
    assert_eq!((record(1, shard), record(3, shard)), (1, 0));
    assert_eq!((record(4, shard), record(6, shard)), (1, 2));
    let members = u32_at(&block, offset_of!(BlockHeader, members_offset)) as usize;
    let end = second + 8 * bytes.words().len();
    assert_eq!(
        members,
        end.next_multiple_of(64),
        "the members table follows"
    );
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

/// The instanced object `W` of [`GOOD`].
#[derive(Clone, Copy, Debug)]
struct W;
// SAFETY: `W` is object 1 of `Good`'s map, which has instances.
unsafe impl prfdata::map::Object for W {
    type Map = Good;
    type Scope = prfdata::map::Instanced;
    const INDEX: usize = 1;
}

#[test]
fn a_removed_instances_buckets_and_their_shard_words_fold_into_the_retired_accumulator() {
    use prfdata::map::offsets;
    use std::os::unix::fs::FileExt;

    let dir = tempfile::tempdir().unwrap();
    let prf = prfdata::PrfData::<Good>::activate_in(dir.path()).expect("a valid map");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join("HistogramHand.blk"))
        .unwrap();
    let write = |at: usize, v: u64| file.write_all_at(&v.to_le_bytes(), at as u64).unwrap();
    let read = |at: usize| {
        let mut b = [0; 8];
        file.read_exact_at(&mut b, at as u64).unwrap();
        u64::from_le_bytes(b)
    };
    let def = &GOOD.objects[1];
    let (data, stride) = (offsets::data_offset(&GOOD, 1), offsets::block_stride(def));
    let (start, line) = (offsets::shard_start(def), offsets::shard_line(def));
    let (sum_at, buckets_at) = (
        offsets::counter_offset(def, 0),
        offsets::counter_offset(def, 2) + 8 * offsets::descriptor_words(&def.counters[2]),
    );
    let n = BYTES.buckets();
    let retired = data + 4 * stride;
    for removals in 1..=2u64 {
        let w = prf.add_instance(W, "w").unwrap();
        let block = data + w.slot() as usize * stride;
        let lines = (0..16).map(|s| block + start + s * line);
        for j in 0..n {
            assert_eq!(
                read(block + buckets_at + 8 * j),
                0,
                "a new instance starts at 0"
            );
        }
        // What the app's records left: in the counter block and in every shard line (word 0
        // is the sum's, words 1..=n the buckets').
        write(block + sum_at, 7);
        for j in 0..n {
            write(block + buckets_at + 8 * j, 10 + j as u64);
        }
        for (s, at) in lines.enumerate() {
            write(at, 1);
            for j in 0..n {
                write(at + 8 * (1 + j), 100 * s as u64 + j as u64);
            }
        }
        prf.remove_instance(w).unwrap();
        // Each bucket: its block word and its 16 shard words (100 × (0 + .. + 15) + 16 j).
        let buckets: Vec<u64> = (0..n).map(|j| read(retired + buckets_at + 8 * j)).collect();
        let expected: Vec<u64> = (0..n as u64)
            .map(|j| removals * (10 + j + 12000 + 16 * j))
            .collect();
        assert_eq!(buckets, expected, "after {removals} removals");
        assert_eq!(read(retired + sum_at), removals * (7 + 16));
        let descriptor = offsets::counter_offset(def, 2);
        assert_eq!(
            (read(retired + descriptor), read(retired + descriptor + 8)),
            (0, 0)
        );
    }
}

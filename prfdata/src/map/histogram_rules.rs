//! A histogram's counters in a map, checked: three consecutive counters of one object, as the
//! block lays them out ([`crate::layout`], "A histogram"):
//!
//! ```text
//!   c − 2  sum      named, PERF_AVERAGE_BULK, Source::Sharded, aggregate sum
//!   c − 1  count    no name, PERF_AVERAGE_BASE, Source::HistogramCount
//!   c      buckets  no name, PERF_PRFDATA_HISTOGRAM, Source::Histogram { geometry, sharded }
//! ```
//!
//! Each rule is `const` (a map fails to compile on it) and refuses with
//! [`MapError::BadHistogram`], naming the counter and the [`HistogramProblem`].

use super::validate::MapError;
use super::{offsets, CounterDef, ObjectDef, Source};
use crate::layout::AGG_SUM;
use crate::winperf;
use prfdata_rules::histogram::{self as rules, Explicit, Geometry, LogLinear, Unit};
use prfdata_rules::map::Violation;

/// What is wrong with a histogram's counters ([`MapError::BadHistogram`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistogramProblem {
    /// The counter two before the buckets is not the histogram's sum: a named
    /// `PERF_AVERAGE_BULK` with [`Source::Sharded`].
    Sum,
    /// The counter right before the buckets is not the histogram's count (a `PERF_AVERAGE_BASE`
    /// with [`Source::HistogramCount`]), or a [`Source::HistogramCount`] is not followed by the
    /// buckets.
    Count,
    /// A `PERF_PRFDATA_HISTOGRAM` counter without [`Source::Histogram`], or
    /// [`Source::Histogram`] on a counter of another type.
    Type,
    /// The buckets have a symbolic offset, text, a unit or a scale factor: they have none of
    /// their own (the sum carries the histogram's name).
    Naming,
    /// The sum or the buckets aggregate as anything but a sum: a histogram's buckets, count
    /// and sum only add up.
    Aggregate,
    /// The sum declares a unit that is not its geometry's: `bytes` for a `bytes` histogram,
    /// `seconds` for an `s` one, none for the others.
    Unit,
    /// The geometry breaks one of prfdata-rules' histogram rules.
    Geometry(Violation),
    /// The object's sharded counters and `sharded: true` histograms' buckets take more than
    /// `MAX_SHARD_LINE` (64 KiB) of a shard line.
    ShardLine {
        /// The words they take.
        words: usize,
    },
    /// A histogram added at run time (`crate::dynamic`): a histogram is declared in the map.
    RunTime,
}

impl HistogramProblem {
    /// What the rule asks, for [`MapError`]'s message.
    pub(super) const fn message(self) -> &'static str {
        match self {
            HistogramProblem::Sum => {
                "a histogram's buckets follow its sum, a named PERF_AVERAGE_BULK that is sharded, \
                 and its count"
            }
            HistogramProblem::Count => {
                "a histogram's count, a PERF_AVERAGE_BASE the readers fill, lies between its sum \
                 and its buckets"
            }
            HistogramProblem::Type => {
                "a histogram's buckets are a PERF_PRFDATA_HISTOGRAM counter with its geometry \
                 (Source::Histogram), and only they"
            }
            HistogramProblem::Naming => {
                "a histogram's buckets have no offset, text, unit or factor of their own"
            }
            HistogramProblem::Aggregate => {
                prfdata_rules::map::HistogramViolation::Aggregate.message()
            }
            HistogramProblem::Unit => {
                "a histogram's sum declares the unit `bytes` for a bytes histogram, `seconds` for \
                 an `s` one, and none otherwise"
            }
            HistogramProblem::Geometry(v) => v.message(),
            HistogramProblem::ShardLine { .. } => {
                prfdata_rules::map::HistogramViolation::ShardLine.message()
            }
            HistogramProblem::RunTime => {
                "a histogram is declared in the map; it cannot be added at run time"
            }
        }
    }
}

/// The error `problem` of the histogram counter `ctr`.
const fn bad(ctr: &CounterDef, problem: HistogramProblem) -> Result<(), MapError> {
    Err(MapError::BadHistogram {
        counter: ctr.symbol,
        problem,
    })
}

/// Counter `ctr` on its own, if it is a histogram's buckets (its type or its source says so):
/// the type and the source agree, and it has no name. `Ok` for every other counter.
pub(super) const fn check_buckets_alone(ctr: &CounterDef) -> Result<(), MapError> {
    let typed = ctr.counter_type == winperf::PERF_PRFDATA_HISTOGRAM;
    let sourced = matches!(ctr.source, Source::Histogram { .. });
    if !is_buckets(ctr) {
        return Ok(());
    }
    if typed != sourced {
        return bad(ctr, HistogramProblem::Type);
    }
    let named = ctr.offset.is_some() || !ctr.texts.is_empty();
    if sourced && (named || ctr.unit.is_some() || ctr.factor.is_some()) {
        return bad(ctr, HistogramProblem::Naming);
    }
    Ok(())
}

/// Counter `c` of `obj` where it is part of a histogram: a count is followed by buckets, and
/// buckets follow their sum and count and have a valid geometry that fits the shard line.
pub(super) const fn check(obj: &ObjectDef, c: usize) -> Result<(), MapError> {
    let ctr = &obj.counters[c];
    match ctr.source {
        Source::HistogramCount => {
            // Buckets follow (by type or source; [`check_buckets_alone`] makes them agree).
            let next = c + 1 < obj.counters.len();
            if !next || !is_buckets(&obj.counters[c + 1]) {
                return bad(ctr, HistogramProblem::Count);
            }
            Ok(())
        }
        Source::Histogram { geometry, .. } => check_triple(obj, c, geometry),
        _ => Ok(()),
    }
}

/// Whether `ctr` is meant as a histogram's buckets: its type or its source says so.
pub(super) const fn is_buckets(ctr: &CounterDef) -> bool {
    ctr.counter_type == winperf::PERF_PRFDATA_HISTOGRAM
        || matches!(ctr.source, Source::Histogram { .. })
}

/// The buckets at `c`, of `geometry`, with the sum and count before them.
const fn check_triple(obj: &ObjectDef, c: usize, geometry: &Geometry) -> Result<(), MapError> {
    let ctr = &obj.counters[c];
    if c < 2 {
        return bad(ctr, HistogramProblem::Sum);
    }
    let (sum, count) = (&obj.counters[c - 2], &obj.counters[c - 1]);
    let sum_ok = sum.counter_type == winperf::PERF_AVERAGE_BULK
        && matches!(sum.source, Source::Sharded)
        && sum.offset.is_some();
    if !sum_ok {
        return bad(ctr, HistogramProblem::Sum);
    }
    let count_ok = count.counter_type == winperf::PERF_AVERAGE_BASE
        && matches!(count.source, Source::HistogramCount);
    if !count_ok {
        return bad(ctr, HistogramProblem::Count);
    }
    let sums = super::rule_code(obj, c - 2) == AGG_SUM && super::rule_code(obj, c) == AGG_SUM;
    if !sums {
        return bad(ctr, HistogramProblem::Aggregate);
    }
    if !sum_unit_ok(sum.unit, geometry.unit()) {
        return bad(ctr, HistogramProblem::Unit);
    }
    if let Err(v) = geometry_ok(geometry) {
        return bad(ctr, HistogramProblem::Geometry(v));
    }
    let words = offsets::shard_line_words(obj);
    if rules::shard_line(words as u64).is_err() {
        return bad(ctr, HistogramProblem::ShardLine { words });
    }
    Ok(())
}

/// The sum's declared unit: none, or the one of [`counter::UNITS`](prfdata_rules::counter::UNITS)
/// the geometry's unit is.
const fn sum_unit_ok(declared: Option<&str>, unit: Unit) -> bool {
    let expected = match unit {
        Unit::Bytes => "bytes",
        Unit::Seconds => "seconds",
        _ => "",
    };
    match declared {
        None => true,
        Some(name) => !expected.is_empty() && prfdata_rules::str_eq(name, expected),
    }
}

/// The geometry built again by the rules' constructors from its parts: a geometry that did not
/// come from them (none can, its fields are private) is refused with the rule it breaks.
const fn geometry_ok(geometry: &Geometry) -> Result<(), Violation> {
    match geometry {
        Geometry::LogLinear(g) => {
            let n = g.buckets() as u32;
            match LogLinear::from_parts(g.unit(), g.sub_bits(), g.shift(), g.base(), n) {
                Ok(_) => Ok(()),
                Err(v) => Err(v),
            }
        }
        Geometry::Explicit(g) => match Explicit::new(g.unit(), g.bounds()) {
            Ok(_) => Ok(()),
            Err(v) => Err(v),
        },
    }
}

//! How a counter aggregates across instances: what the retired accumulator keeps of an instance
//! that leaves (removed, or reclaimed after its owner process died) and what the synthesised
//! `_Total` instance shows.
//! The rules and their defaults per winperf type are in [`Aggregate`]'s docs.

use crate::layout::{AGG_LAST, AGG_LIVE, AGG_MAX, AGG_MIN, AGG_NONE, AGG_SUM};
use crate::map::ObjectDef;
use crate::winperf;

/// A counter's aggregation rule (`aggregate:` in a map).
///
/// A map names the rule per counter (`aggregate: sum | live | min | max | last`) or takes the
/// default of the counter's winperf type. A base counter has no rule of its own: it follows the
/// counter it serves, so a fraction's numerator and denominator stay paired; a precision
/// timestamp (`PERF_PRECISION_TIMESTAMP`, a time, not an amount) takes the largest live value.
///
/// | winperf type | default | retired accumulator | `_Total` |
/// |---|---|---|---|
/// | `PERF_COUNTER_COUNTER`, `PERF_SAMPLE_COUNTER`, `PERF_COUNTER_BULK_COUNT`, `PERF_COUNTER_DELTA`, `PERF_COUNTER_LARGE_DELTA` | `sum` | folded | live sum + retired |
/// | `PERF_COUNTER_TIMER(_INV)`, `PERF_100NSEC_TIMER(_INV)`, `PERF_OBJ_TIME_TIMER` | `sum` | folded | live sum + retired |
/// | the four queue-length accumulators (`PERF_COUNTER_*QUEUELEN_TYPE`: sums of lengths over time) | `sum` | folded | live sum + retired |
/// | multi timers and `PERF_COUNTER_MULTI_BASE` | `sum` (the base follows) | folded | live sum + retired |
/// | `PERF_SAMPLE_FRACTION` / `PERF_SAMPLE_BASE`, `PERF_AVERAGE_TIMER`, `PERF_AVERAGE_BULK` / `PERF_AVERAGE_BASE` | `sum` (the base follows) | folded | live sum + retired |
/// | precision timers / `PERF_PRECISION_TIMESTAMP` | `sum` / `max` | numerator folded | live sum + retired / largest live timestamp |
/// | `PERF_COUNTER_RAWCOUNT(_HEX)`, `PERF_COUNTER_LARGE_RAWCOUNT(_HEX)` (gauges) | `live` | dropped | live sum |
/// | `PERF_RAW_FRACTION` / `PERF_RAW_BASE`, large raw fraction / base | `live` (the base follows) | dropped | live sums |
/// | `PERF_ELAPSED_TIME` (a start time) | `min` | dropped | earliest live start |
/// | `PERF_COUNTER_NODATA` | `live` | dropped | 0 |
/// | `PERF_COUNTER_TEXT` | none | dropped | empty |
///
/// `min`, `max` and `last` (the live instance listed last) never fold: they describe the live
/// instances only. `sum` on a gauge is allowed (a gauge that must not drop when a worker goes);
/// the macro refuses what cannot be meaningful: a rule on a base, `min`/`max`/`last` on a
/// counter read against a base (its base could not pair with it), `sum`/`live` on an elapsed
/// time, any rule on text.
///
/// # Examples
///
/// ```
/// use prfdata::map::Aggregate;
/// use prfdata_wire::winperf::{PERF_COUNTER_COUNTER, PERF_COUNTER_RAWCOUNT};
/// assert_eq!(Aggregate::default_for(PERF_COUNTER_COUNTER), Some(Aggregate::Sum));
/// assert_eq!(Aggregate::default_for(PERF_COUNTER_RAWCOUNT), Some(Aggregate::Live));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Aggregate {
    /// Departed instances are folded into the retired accumulator; `_Total` is the live sum
    /// plus the retired share: never decreases for a counter that only grows.
    Sum,
    /// Departed instances are dropped; `_Total` is the sum of the live instances.
    Live,
    /// `_Total` is the smallest live value.
    Min,
    /// `_Total` is the largest live value.
    Max,
    /// `_Total` is the value of the live instance listed last.
    Last,
}

impl Aggregate {
    /// The default rule of a counter of winperf type `counter_type`, or `None` for text. A
    /// base's default is the rule of the counter it serves (the rule the reader applies is in each counter record).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::map::Aggregate;
    /// use prfdata_wire::winperf::{PERF_COUNTER_TEXT, PERF_ELAPSED_TIME};
    /// assert_eq!(Aggregate::default_for(PERF_ELAPSED_TIME), Some(Aggregate::Min));
    /// assert_eq!(Aggregate::default_for(PERF_COUNTER_TEXT), None);
    /// ```
    pub const fn default_for(counter_type: u32) -> Option<Aggregate> {
        match counter_type {
            winperf::PERF_COUNTER_TEXT => None,
            winperf::PERF_COUNTER_RAWCOUNT
            | winperf::PERF_COUNTER_RAWCOUNT_HEX
            | winperf::PERF_COUNTER_LARGE_RAWCOUNT
            | winperf::PERF_COUNTER_LARGE_RAWCOUNT_HEX
            | winperf::PERF_RAW_FRACTION
            | winperf::PERF_LARGE_RAW_FRACTION
            | winperf::PERF_RAW_BASE
            | winperf::PERF_COUNTER_NODATA => Some(Aggregate::Live),
            winperf::PERF_ELAPSED_TIME => Some(Aggregate::Min),
            _ => Some(Aggregate::Sum),
        }
    }

    /// The rule of an `AGG_*` code ([`AGG_NONE`] and unknown codes: `None`).
    pub(crate) const fn from_code(code: u32) -> Option<Aggregate> {
        match code {
            AGG_SUM => Some(Aggregate::Sum),
            AGG_LIVE => Some(Aggregate::Live),
            AGG_MIN => Some(Aggregate::Min),
            AGG_MAX => Some(Aggregate::Max),
            AGG_LAST => Some(Aggregate::Last),
            _ => None,
        }
    }

    /// The `AGG_*` code a counter record holds.
    pub(crate) const fn code(self) -> u32 {
        match self {
            Aggregate::Sum => AGG_SUM,
            Aggregate::Live => AGG_LIVE,
            Aggregate::Min => AGG_MIN,
            Aggregate::Max => AGG_MAX,
            Aggregate::Last => AGG_LAST,
        }
    }
}

/// The `AGG_*` code of counter `index` of `obj`: its own rule or its type's default; a base
/// takes the rule of the counter before it (the one it serves), a precision timestamp
/// [`AGG_MAX`].
pub(crate) const fn rule_code(obj: &ObjectDef, index: usize) -> u32 {
    let ctr = &obj.counters[index];
    if winperf::is_base(ctr.counter_type) && index > 0 {
        let served = obj.counters[index - 1].counter_type;
        let precision = matches!(
            served,
            winperf::PERF_PRECISION_SYSTEM_TIMER
                | winperf::PERF_PRECISION_100NS_TIMER
                | winperf::PERF_PRECISION_OBJECT_TIMER
        );
        if precision {
            return AGG_MAX;
        }
        return rule_code(obj, index - 1);
    }
    match ctr.aggregate {
        Some(a) => a.code(),
        None => match Aggregate::default_for(ctr.counter_type) {
            Some(a) => a.code(),
            None => AGG_NONE,
        },
    }
}

//! Which counter types are OpenMetrics counters and which are gauges ([`metric_kind`]), and
//! the unit each is exported in ([`unit_of`]).
//!
//! A raw value is a `counter` when PDH computes the displayed value from the *difference* of
//! two samples (winperf.h sets `PERF_DELTA_COUNTER` on all those types), and when it is the
//! base of such a counter (the denominator that PDH also differences: `PERF_AVERAGE_BASE`,
//! `PERF_SAMPLE_BASE`, and `PERF_PRECISION_TIMESTAMP`, which is the same constant as
//! `PERF_LARGE_RAW_BASE` and is told apart by the counter it serves). Everything PDH shows
//! from one sample is a `gauge`. Text and zero-size counters carry no number and are not
//! exported. The full table is in the [module docs](super).
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::winperf::{PERF_COUNTER_COUNTER, PERF_COUNTER_RAWCOUNT};
//! use prfmon::openmetrics::kind::{metric_kind, MetricKind};
//! assert_eq!(metric_kind(PERF_COUNTER_COUNTER, None), Some(MetricKind::Counter));
//! assert_eq!(metric_kind(PERF_COUNTER_RAWCOUNT, None), Some(MetricKind::Gauge));
//! ```

use prfdata_wire::winperf::*;
use prometheus_client::registry::Unit;

use crate::units::DeclaredUnit;

/// The OpenMetrics type a raw value is exported as.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::openmetrics::kind::MetricKind::Counter.as_str(), "counter");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricKind {
    /// Monotonically increasing (between restarts and wraps); the sample name ends in
    /// `_total`.
    Counter,
    /// An instantaneous value.
    Gauge,
    /// A prfdata histogram: cumulative `_bucket{le}` counts, `_sum` and `_count` (never a
    /// counter type's own kind: three definitions make one, see the [module docs](super)).
    Histogram,
}

impl MetricKind {
    /// The OpenMetrics `TYPE` word.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfmon::openmetrics::kind::MetricKind::Gauge.as_str(), "gauge");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// The kind `counter_type` is exported as, or `None` if it carries no number (text,
/// `PERF_COUNTER_NODATA`). `serves` is, for a base, the type of the counter it is the base of
/// (it decides `PERF_LARGE_RAW_BASE` = `PERF_PRECISION_TIMESTAMP`).
///
/// A type winperf.h does not define is a counter if it has `PERF_DELTA_COUNTER` or
/// `PERF_DELTA_BASE` (PDH would difference it), else a gauge, unless its type field is text
/// or zero or its size is zero (no number).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// use prfmon::openmetrics::kind::{metric_kind, MetricKind};
/// // A precision timer's time stamp increases; a raw fraction's base does not.
/// assert_eq!(
///     metric_kind(PERF_PRECISION_TIMESTAMP, Some(PERF_PRECISION_100NS_TIMER)),
///     Some(MetricKind::Counter)
/// );
/// assert_eq!(
///     metric_kind(PERF_LARGE_RAW_BASE, Some(PERF_LARGE_RAW_FRACTION)),
///     Some(MetricKind::Gauge)
/// );
/// assert_eq!(metric_kind(PERF_COUNTER_TEXT, None), None);
/// ```
pub fn metric_kind(counter_type: u32, serves: Option<u32>) -> Option<MetricKind> {
    use MetricKind::{Counter, Gauge};
    Some(match counter_type {
        // Rates, timers and counts PDH differences (ΔN over ΔT or ΔB).
        PERF_COUNTER_COUNTER
        | PERF_SAMPLE_COUNTER
        | PERF_COUNTER_BULK_COUNT
        | PERF_COUNTER_TIMER
        | PERF_COUNTER_TIMER_INV
        | PERF_100NSEC_TIMER
        | PERF_100NSEC_TIMER_INV
        | PERF_OBJ_TIME_TIMER
        | PERF_COUNTER_MULTI_TIMER
        | PERF_COUNTER_MULTI_TIMER_INV
        | PERF_100NSEC_MULTI_TIMER
        | PERF_100NSEC_MULTI_TIMER_INV
        | PERF_COUNTER_QUEUELEN_TYPE
        | PERF_COUNTER_LARGE_QUEUELEN_TYPE
        | PERF_COUNTER_100NS_QUEUELEN_TYPE
        | PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE
        | PERF_AVERAGE_TIMER
        | PERF_AVERAGE_BULK
        | PERF_SAMPLE_FRACTION
        | PERF_COUNTER_DELTA
        | PERF_COUNTER_LARGE_DELTA
        | PERF_PRECISION_SYSTEM_TIMER
        | PERF_PRECISION_100NS_TIMER
        | PERF_PRECISION_OBJECT_TIMER => Counter,
        // Bases that PDH differences with their counter.
        PERF_AVERAGE_BASE | PERF_SAMPLE_BASE => Counter,
        // PERF_PRECISION_TIMESTAMP and PERF_LARGE_RAW_BASE are one constant.
        PERF_LARGE_RAW_BASE if serves.is_some_and(is_precision) => Counter,
        // One-sample values.
        PERF_COUNTER_RAWCOUNT
        | PERF_COUNTER_LARGE_RAWCOUNT
        | PERF_COUNTER_RAWCOUNT_HEX
        | PERF_COUNTER_LARGE_RAWCOUNT_HEX
        | PERF_RAW_FRACTION
        | PERF_LARGE_RAW_FRACTION
        | PERF_RAW_BASE
        | PERF_LARGE_RAW_BASE
        | PERF_ELAPSED_TIME
        | PERF_COUNTER_MULTI_BASE => Gauge,
        PERF_COUNTER_TEXT | PERF_COUNTER_NODATA => return None,
        other => return unknown_kind(other),
    })
}

/// The clock a time value counts ticks of (winperf.h's `PERF_TIMER_*` field, and the 100 ns
/// types' fixed unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The system's performance counter: ticks of the data block's `PerfFreq`
    /// (`PERF_TIMER_TICK`).
    System,
    /// 100-nanosecond units: 10⁷ a second (`PERF_TIMER_100NS`).
    HundredNs,
    /// The object's own clock: ticks of the object's `PerfFreq` (`PERF_OBJECT_TIMER`).
    Object,
}

/// The unit a raw value is exported in, so that a value means what its name says (Prometheus'
/// naming: base units, the unit as the name's last word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricUnit {
    /// As perflib returns it: a count, a rate's count, a fraction's part, a base, a queue
    /// length accumulated per tick. No unit word in the name.
    Raw,
    /// Ticks of a clock, exported in seconds; the name ends in `_seconds`.
    Seconds(Clock),
    /// `PERF_ELAPSED_TIME`: a start time in the object's clock, exported as Unix time in
    /// seconds; the name ends in `_start_time_seconds`.
    StartTime,
    /// A count whose raw value the map declares in a unit (`unit: bytes`), exported as it is;
    /// the name ends in the unit's word instead of the counter name's own unit word
    /// ([`naming::declared_stem`](super::naming::declared_stem)).
    Declared(DeclaredUnit),
}

impl MetricUnit {
    /// The words the family name ends with (after the counter's name), if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::openmetrics::kind::{Clock, MetricUnit};
    /// assert_eq!(MetricUnit::Seconds(Clock::System).suffix(), Some("seconds"));
    /// assert_eq!(MetricUnit::Raw.suffix(), None);
    /// ```
    pub fn suffix(self) -> Option<&'static str> {
        match self {
            Self::Raw => None,
            Self::Seconds(_) => Some("seconds"),
            Self::StartTime => Some("start_time_seconds"),
            Self::Declared(unit) => Some(unit.word()),
        }
    }

    /// The OpenMetrics unit a family name of this unit ends with (its `# UNIT` line), and
    /// that ending (`_seconds`, `_bytes`); `None` for a raw value.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::openmetrics::kind::MetricUnit;
    /// use prfmon::units::DeclaredUnit;
    /// assert_eq!(MetricUnit::Declared(DeclaredUnit::Bytes).openmetrics_unit().map(|u| u.1), Some("_bytes"));
    /// assert!(MetricUnit::Raw.openmetrics_unit().is_none());
    /// ```
    pub fn openmetrics_unit(self) -> Option<(Unit, &'static str)> {
        match self {
            Self::Raw => None,
            Self::Seconds(_) | Self::StartTime | Self::Declared(DeclaredUnit::Seconds) => {
                Some((Unit::Seconds, "_seconds"))
            }
            Self::Declared(DeclaredUnit::Bytes) => Some((Unit::Bytes, "_bytes")),
        }
    }
}

/// The unit `counter_type` is exported in; `serves` as for [`metric_kind`] (a precision
/// timer's time stamp counts the timer's clock).
///
/// | winperf.h type | unit |
/// |---|---|
/// | `PERF_COUNTER_TIMER(_INV)`, `PERF_COUNTER_MULTI_TIMER(_INV)`, `PERF_AVERAGE_TIMER`, `PERF_PRECISION_SYSTEM_TIMER` | seconds: ticks ÷ the block's `PerfFreq` |
/// | `PERF_100NSEC_TIMER(_INV)`, `PERF_100NSEC_MULTI_TIMER(_INV)`, `PERF_PRECISION_100NS_TIMER` | seconds: ticks ÷ 10⁷ |
/// | `PERF_OBJ_TIME_TIMER`, `PERF_PRECISION_OBJECT_TIMER` | seconds: ticks ÷ the object's `PerfFreq` |
/// | `PERF_PRECISION_TIMESTAMP` | seconds, by the clock of the timer it serves |
/// | `PERF_ELAPSED_TIME` | the start as Unix time, in seconds |
/// | every other type (counts, rates, bulk counts, fractions and bases, deltas, queue lengths) | raw |
///
/// Queue lengths (`PERF_COUNTER_*QUEUELEN_TYPE`) stay raw: their value is a length summed
/// per tick, a count rather than a time.
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// use prfmon::openmetrics::kind::{unit_of, Clock, MetricUnit};
/// assert_eq!(unit_of(PERF_AVERAGE_TIMER, None), MetricUnit::Seconds(Clock::System));
/// assert_eq!(unit_of(PERF_AVERAGE_BASE, Some(PERF_AVERAGE_TIMER)), MetricUnit::Raw);
/// assert_eq!(unit_of(PERF_ELAPSED_TIME, None), MetricUnit::StartTime);
/// ```
pub fn unit_of(counter_type: u32, serves: Option<u32>) -> MetricUnit {
    use Clock::{HundredNs, Object, System};
    use MetricUnit::{Raw, Seconds, StartTime};
    match counter_type {
        PERF_COUNTER_TIMER
        | PERF_COUNTER_TIMER_INV
        | PERF_COUNTER_MULTI_TIMER
        | PERF_COUNTER_MULTI_TIMER_INV
        | PERF_AVERAGE_TIMER
        | PERF_PRECISION_SYSTEM_TIMER => Seconds(System),
        PERF_100NSEC_TIMER
        | PERF_100NSEC_TIMER_INV
        | PERF_100NSEC_MULTI_TIMER
        | PERF_100NSEC_MULTI_TIMER_INV
        | PERF_PRECISION_100NS_TIMER => Seconds(HundredNs),
        PERF_OBJ_TIME_TIMER | PERF_PRECISION_OBJECT_TIMER => Seconds(Object),
        // PERF_PRECISION_TIMESTAMP and PERF_LARGE_RAW_BASE are one constant.
        PERF_LARGE_RAW_BASE => match serves {
            Some(timer) if is_precision(timer) => unit_of(timer, None),
            _ => Raw,
        },
        PERF_ELAPSED_TIME => StartTime,
        _ => Raw,
    }
}

/// Whether `counter_type` is one of the precision timers, whose base is a time stamp.
fn is_precision(counter_type: u32) -> bool {
    matches!(
        counter_type,
        PERF_PRECISION_SYSTEM_TIMER | PERF_PRECISION_100NS_TIMER | PERF_PRECISION_OBJECT_TIMER
    )
}

/// The rule for types winperf.h does not name: by the type field and the delta bits.
#[cold]
fn unknown_kind(counter_type: u32) -> Option<MetricKind> {
    match counter_type & PERF_TYPE_MASK {
        PERF_TYPE_TEXT | PERF_TYPE_ZERO => None,
        _ if counter_type & PERF_SIZE_MASK == PERF_SIZE_ZERO => None,
        _ if counter_type & (PERF_DELTA_COUNTER | PERF_DELTA_BASE) != 0 => {
            Some(MetricKind::Counter)
        }
        _ => Some(MetricKind::Gauge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every type winperf.h defines, with the kind the module docs' table gives it.
    const TABLE: &[(u32, Option<MetricKind>)] = {
        use MetricKind::{Counter as C, Gauge as G};
        &[
            (PERF_COUNTER_COUNTER, Some(C)),
            (PERF_COUNTER_TIMER, Some(C)),
            (PERF_COUNTER_QUEUELEN_TYPE, Some(C)),
            (PERF_COUNTER_LARGE_QUEUELEN_TYPE, Some(C)),
            (PERF_COUNTER_100NS_QUEUELEN_TYPE, Some(C)),
            (PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, Some(C)),
            (PERF_COUNTER_BULK_COUNT, Some(C)),
            (PERF_COUNTER_TEXT, None),
            (PERF_COUNTER_RAWCOUNT, Some(G)),
            (PERF_COUNTER_LARGE_RAWCOUNT, Some(G)),
            (PERF_COUNTER_RAWCOUNT_HEX, Some(G)),
            (PERF_COUNTER_LARGE_RAWCOUNT_HEX, Some(G)),
            (PERF_SAMPLE_FRACTION, Some(C)),
            (PERF_SAMPLE_COUNTER, Some(C)),
            (PERF_COUNTER_NODATA, None),
            (PERF_COUNTER_TIMER_INV, Some(C)),
            (PERF_SAMPLE_BASE, Some(C)),
            (PERF_AVERAGE_TIMER, Some(C)),
            (PERF_AVERAGE_BASE, Some(C)),
            (PERF_AVERAGE_BULK, Some(C)),
            (PERF_OBJ_TIME_TIMER, Some(C)),
            (PERF_100NSEC_TIMER, Some(C)),
            (PERF_100NSEC_TIMER_INV, Some(C)),
            (PERF_COUNTER_MULTI_TIMER, Some(C)),
            (PERF_COUNTER_MULTI_TIMER_INV, Some(C)),
            (PERF_COUNTER_MULTI_BASE, Some(G)),
            (PERF_100NSEC_MULTI_TIMER, Some(C)),
            (PERF_100NSEC_MULTI_TIMER_INV, Some(C)),
            (PERF_RAW_FRACTION, Some(G)),
            (PERF_LARGE_RAW_FRACTION, Some(G)),
            (PERF_RAW_BASE, Some(G)),
            (PERF_LARGE_RAW_BASE, Some(G)),
            (PERF_ELAPSED_TIME, Some(G)),
            (PERF_COUNTER_DELTA, Some(C)),
            (PERF_COUNTER_LARGE_DELTA, Some(C)),
            (PERF_PRECISION_SYSTEM_TIMER, Some(C)),
            (PERF_PRECISION_100NS_TIMER, Some(C)),
            (PERF_PRECISION_OBJECT_TIMER, Some(C)),
        ]
    };

    /// Every type winperf.h defines, with the unit [`unit_of`]'s table gives it.
    const UNITS: &[(u32, MetricUnit)] = {
        use Clock::{HundredNs as N, Object as O, System as S};
        use MetricUnit::{Raw as R, Seconds as T, StartTime};
        &[
            (PERF_COUNTER_COUNTER, R),
            (PERF_COUNTER_TIMER, T(S)),
            (PERF_COUNTER_QUEUELEN_TYPE, R),
            (PERF_COUNTER_LARGE_QUEUELEN_TYPE, R),
            (PERF_COUNTER_100NS_QUEUELEN_TYPE, R),
            (PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, R),
            (PERF_COUNTER_BULK_COUNT, R),
            (PERF_COUNTER_TEXT, R),
            (PERF_COUNTER_RAWCOUNT, R),
            (PERF_COUNTER_LARGE_RAWCOUNT, R),
            (PERF_COUNTER_RAWCOUNT_HEX, R),
            (PERF_COUNTER_LARGE_RAWCOUNT_HEX, R),
            (PERF_SAMPLE_FRACTION, R),
            (PERF_SAMPLE_COUNTER, R),
            (PERF_COUNTER_NODATA, R),
            (PERF_COUNTER_TIMER_INV, T(S)),
            (PERF_SAMPLE_BASE, R),
            (PERF_AVERAGE_TIMER, T(S)),
            (PERF_AVERAGE_BASE, R),
            (PERF_AVERAGE_BULK, R),
            (PERF_OBJ_TIME_TIMER, T(O)),
            (PERF_100NSEC_TIMER, T(N)),
            (PERF_100NSEC_TIMER_INV, T(N)),
            (PERF_COUNTER_MULTI_TIMER, T(S)),
            (PERF_COUNTER_MULTI_TIMER_INV, T(S)),
            (PERF_COUNTER_MULTI_BASE, R),
            (PERF_100NSEC_MULTI_TIMER, T(N)),
            (PERF_100NSEC_MULTI_TIMER_INV, T(N)),
            (PERF_RAW_FRACTION, R),
            (PERF_LARGE_RAW_FRACTION, R),
            (PERF_RAW_BASE, R),
            (PERF_LARGE_RAW_BASE, R),
            (PERF_ELAPSED_TIME, StartTime),
            (PERF_COUNTER_DELTA, R),
            (PERF_COUNTER_LARGE_DELTA, R),
            (PERF_PRECISION_SYSTEM_TIMER, T(S)),
            (PERF_PRECISION_100NS_TIMER, T(N)),
            (PERF_PRECISION_OBJECT_TIMER, T(O)),
        ]
    };

    #[test]
    fn every_winperf_type_has_one_unit() {
        assert_eq!(
            UNITS.len(),
            TABLE.len(),
            "one row per type of the kind table"
        );
        for (&(t, unit), &(k, _)) in UNITS.iter().zip(TABLE) {
            assert_eq!(t, k, "the two tables list the types in one order");
            let name = counter_type_name(t).unwrap();
            assert_eq!(unit_of(t, None), unit, "{name}");
            // A time is exported only from a type whose display is a time or a fraction of
            // one: its timer field names the clock the table divides by.
            if let MetricUnit::Seconds(clock) = unit {
                let field = match clock {
                    Clock::System => PERF_TIMER_TICK,
                    Clock::HundredNs => PERF_TIMER_100NS,
                    Clock::Object => PERF_OBJECT_TIMER,
                };
                assert_eq!(t & PERF_TIMER_MASK, field, "{name}'s clock");
            }
        }
        // A precision timer's time stamp counts its timer's clock; another large raw base is a
        // count.
        for (timer, clock) in [
            (PERF_PRECISION_SYSTEM_TIMER, Clock::System),
            (PERF_PRECISION_100NS_TIMER, Clock::HundredNs),
            (PERF_PRECISION_OBJECT_TIMER, Clock::Object),
        ] {
            assert_eq!(
                unit_of(PERF_PRECISION_TIMESTAMP, Some(timer)),
                MetricUnit::Seconds(clock)
            );
        }
        assert_eq!(
            unit_of(PERF_LARGE_RAW_BASE, Some(PERF_LARGE_RAW_FRACTION)),
            MetricUnit::Raw
        );
    }

    #[test]
    fn every_winperf_type_maps_as_the_table_says() {
        for &(t, kind) in TABLE {
            assert!(counter_type_name(t).is_some(), "{t:#x} is a winperf type");
            assert_eq!(
                metric_kind(t, None),
                kind,
                "{}",
                counter_type_name(t).unwrap()
            );
        }
    }

    #[test]
    fn the_precision_time_stamp_is_a_counter_and_the_large_raw_base_a_gauge() {
        for timer in [
            PERF_PRECISION_SYSTEM_TIMER,
            PERF_PRECISION_100NS_TIMER,
            PERF_PRECISION_OBJECT_TIMER,
        ] {
            assert_eq!(
                metric_kind(PERF_PRECISION_TIMESTAMP, Some(timer)),
                Some(MetricKind::Counter)
            );
        }
        assert_eq!(
            metric_kind(PERF_LARGE_RAW_BASE, Some(PERF_LARGE_RAW_FRACTION)),
            Some(MetricKind::Gauge)
        );
        assert_eq!(
            metric_kind(PERF_LARGE_RAW_BASE, None),
            Some(MetricKind::Gauge)
        );
    }

    #[test]
    fn the_rule_for_unknown_types_agrees_with_the_table_for_every_non_base_type() {
        // The explicit table is what counts; the fallback for unknown types must at least
        // give the same answer for every known type that is not a base, except the two
        // averages: winperf.h gives them no delta bit, yet PDH differences them (ΔN/ΔB).
        for &(t, kind) in TABLE {
            if t == PERF_AVERAGE_TIMER || t == PERF_AVERAGE_BULK {
                assert_eq!(unknown_kind(t), Some(MetricKind::Gauge));
                continue;
            }
            if t & PERF_SUBTYPE_MASK == PERF_COUNTER_BASE && t & PERF_TYPE_MASK == PERF_TYPE_COUNTER
            {
                continue;
            }
            assert_eq!(unknown_kind(t), kind, "{}", counter_type_name(t).unwrap());
        }
    }

    #[test]
    fn unknown_types_follow_the_delta_bits() {
        let odd = PERF_SIZE_DWORD | PERF_TYPE_NUMBER | 0x0000_0004;
        assert_eq!(counter_type_name(odd), None);
        assert_eq!(metric_kind(odd, None), Some(MetricKind::Gauge));
        assert_eq!(
            metric_kind(odd | PERF_TYPE_COUNTER | PERF_DELTA_COUNTER, None),
            Some(MetricKind::Counter)
        );
        assert_eq!(metric_kind(PERF_TYPE_TEXT | 0x4, None), None);
    }
}

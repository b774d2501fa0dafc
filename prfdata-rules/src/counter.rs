//! A counter's rules (its base, its source: on demand, a sum or sharded, its aggregation and its
//! unit)
//! as `const fn`s over plain values, each returning the [`Violation`] it finds. The map macro
//! calls them with the types it looked up by name, prfdata's map validation with the map's
//! counter definitions, and prfdata's reader with the records of a block.
//!
//! # Examples
//!
//! ```
//! use prfdata_rules::counter::{self, Part};
//! use prfdata_rules::map::Violation;
//!
//! assert_eq!(counter::sum_len(0), Err(Violation::SumEmpty));
//! let base = Part { base: true, ..Part::OK };
//! assert_eq!(counter::sum_part(base), Err(Violation::SumOfBase));
//! assert_eq!(counter::on_demand(true, false, true), Err(Violation::OnDemandInstanced));
//! ```

use crate::limits::{MAX_SHARDED, MAX_SUM_PARTS};
use crate::map::Violation;

/// A counter that needs a base of the winperf.h type `needed` is followed by it: `next_base`
/// is the type of the counter after it if that counter is a base, else `None`.
///
/// # Errors
///
/// [`Violation::WrongBase`] (a base of another type follows) or [`Violation::MissingBase`].
pub const fn base_follows(needed: u32, next_base: Option<u32>) -> Result<(), Violation> {
    match next_base {
        Some(b) if b == needed => Ok(()),
        Some(_) => Err(Violation::WrongBase),
        None => Err(Violation::MissingBase),
    }
}

/// A base of the winperf.h type `base` comes right after a counter that needs it:
/// `previous_needs` is the base the counter before it needs, if any.
///
/// # Errors
///
/// [`Violation::OrphanBase`].
pub const fn base_serves(base: u32, previous_needs: Option<u32>) -> Result<(), Violation> {
    match previous_needs {
        Some(b) if b == base => Ok(()),
        _ => Err(Violation::OrphanBase),
    }
}

/// A sum (the Windows 95 stat servers' `PSTF_COMPLEX`) adds 1 to [`MAX_SUM_PARTS`] counters.
///
/// # Errors
///
/// [`Violation::SumEmpty`] or [`Violation::SumTooLong`].
pub const fn sum_len(parts: usize) -> Result<(), Violation> {
    if parts == 0 {
        Err(Violation::SumEmpty)
    } else if parts > MAX_SUM_PARTS {
        Err(Violation::SumTooLong)
    } else {
        Ok(())
    }
}

/// What a sum's part is, as [`sum_part`] checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The part is the sum itself.
    pub itself: bool,
    /// The part is a base counter.
    pub base: bool,
    /// The part is itself a sum.
    pub sum: bool,
    /// The part's value has another width than the sum's (32 or 64 bits).
    pub other_width: bool,
}

impl Part {
    /// A part that breaks no rule, to start from.
    pub const OK: Part = Part {
        itself: false,
        base: false,
        sum: false,
        other_width: false,
    };
}

/// A sum's part is another stored or on-demand counter of the object, of the sum's width.
///
/// # Errors
///
/// [`Violation::SumOfItself`], [`Violation::SumOfBase`], [`Violation::SumOfSum`] or
/// [`Violation::SumWidth`], in that order.
pub const fn sum_part(part: Part) -> Result<(), Violation> {
    if part.itself {
        Err(Violation::SumOfItself)
    } else if part.base {
        Err(Violation::SumOfBase)
    } else if part.sum {
        Err(Violation::SumOfSum)
    } else if part.other_width {
        Err(Violation::SumWidth)
    } else {
        Ok(())
    }
}

/// An on-demand counter (the Windows 95 stat servers' `PSTF_FUNCPTR`) belongs to an object
/// without instances, is not a sum, and is a number (not a base or text).
///
/// # Errors
///
/// [`Violation::OnDemandInstanced`], [`Violation::OnDemandSum`] or [`Violation::NotNumeric`].
pub const fn on_demand(instanced: bool, sum: bool, numeric: bool) -> Result<(), Violation> {
    if instanced {
        Err(Violation::OnDemandInstanced)
    } else if sum {
        Err(Violation::OnDemandSum)
    } else if !numeric {
        Err(Violation::NotNumeric)
    } else {
        Ok(())
    }
}

/// A sharded counter is stored by the app's threads (not on demand or a sum), is a 64-bit
/// count or timer (`wide_count`: a number of 8 bytes that is not an elapsed time), and is one
/// of at most [`MAX_SHARDED`] of its object (`index`: its place among them, from 0).
///
/// # Errors
///
/// [`Violation::ShardedComputed`], [`Violation::ShardedType`] or [`Violation::TooManySharded`].
pub const fn sharded(computed: bool, wide_count: bool, index: u64) -> Result<(), Violation> {
    if computed {
        Err(Violation::ShardedComputed)
    } else if !wide_count {
        Err(Violation::ShardedType)
    } else if index >= MAX_SHARDED as u64 {
        Err(Violation::TooManySharded)
    } else {
        Ok(())
    }
}

/// The aggregation rules a map names (`aggregate: sum`), in prfdata's `map::Aggregate` order.
pub const AGGREGATES: [&str; 5] = ["sum", "live", "min", "max", "last"];

/// How a counter may aggregate: `rule` indexes [`AGGREGATES`] (`None`: no rule, as text has).
/// Text has no total; a counter read against a base aggregates as a sum (`sum` or `live`); an
/// elapsed time (a start time) does not add (`min`, `max` or `last`).
///
/// # Errors
///
/// [`Violation::AggregateText`], [`Violation::AggregateWithBase`] or
/// [`Violation::AggregateElapsed`].
pub const fn aggregate(
    rule: Option<usize>,
    text: bool,
    needs_base: bool,
    elapsed: bool,
) -> Result<(), Violation> {
    let adds = matches!(rule, Some(0 | 1));
    match rule {
        Some(_) if text => Err(Violation::AggregateText),
        Some(_) if needs_base && !adds => Err(Violation::AggregateWithBase),
        Some(_) if elapsed && adds => Err(Violation::AggregateElapsed),
        _ => Ok(()),
    }
}

/// The units a counter's raw value may be declared in (`unit: bytes`): Prometheus' base units,
/// which `prfmon serve` names its families for and exports the raw value in.
pub const UNITS: [&str; 2] = ["bytes", "seconds"];

/// The counter types whose values are times: their type gives their unit (seconds).
pub const TIME_TYPES: [&str; 11] = [
    "CounterTimer",
    "CounterTimerInv",
    "Timer100Ns",
    "Timer100NsInv",
    "ObjTimeTimer",
    "MultiTimer",
    "MultiTimerInv",
    "MultiTimer100Ns",
    "MultiTimer100NsInv",
    "AverageTimer",
    "ElapsedTime",
];

/// Whether the winperf.h type `counter_type` is one of [`TIME_TYPES`].
pub const fn is_time(counter_type: u32) -> bool {
    let mut i = 0;
    while i < TIME_TYPES.len() {
        if crate::counter_types::marker(TIME_TYPES[i]) == counter_type {
            return true;
        }
        i += 1;
    }
    false
}

/// A counter's declared unit (`unit: bytes`) is one of [`UNITS`], and is declared for a number
/// whose type gives no unit: not text (`text`), not a time (`time`, see [`is_time`]). Returns
/// the unit's index in [`UNITS`].
///
/// # Errors
///
/// [`Violation::UnknownUnit`] or [`Violation::UnitOfType`].
pub const fn unit(name: &str, text: bool, time: bool) -> Result<usize, Violation> {
    let mut i = 0;
    while i < UNITS.len() {
        if crate::str_eq(UNITS[i], name) {
            return if text || time {
                Err(Violation::UnitOfType)
            } else {
                Ok(i)
            };
        }
        i += 1;
    }
    Err(Violation::UnknownUnit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counter_rule_accepts_its_bounds_and_refuses_past_them() {
        assert_eq!(base_follows(7, Some(7)), Ok(()));
        assert_eq!(base_follows(7, Some(8)), Err(Violation::WrongBase));
        assert_eq!(base_follows(7, None), Err(Violation::MissingBase));
        assert_eq!(base_serves(7, Some(7)), Ok(()));
        assert_eq!(base_serves(7, None), Err(Violation::OrphanBase));
        assert_eq!(sum_len(1), Ok(()));
        assert_eq!(sum_len(MAX_SUM_PARTS), Ok(()));
        assert_eq!(sum_len(MAX_SUM_PARTS + 1), Err(Violation::SumTooLong));
        assert_eq!(sum_part(Part::OK), Ok(()));
        let all = Part {
            itself: true,
            base: true,
            sum: true,
            other_width: true,
        };
        assert_eq!(sum_part(all), Err(Violation::SumOfItself));
        let width = Part {
            other_width: true,
            ..Part::OK
        };
        assert_eq!(sum_part(width), Err(Violation::SumWidth));
        let nested = Part { sum: true, ..width };
        assert_eq!(sum_part(nested), Err(Violation::SumOfSum));
        assert_eq!(on_demand(false, false, true), Ok(()));
        assert_eq!(on_demand(false, true, true), Err(Violation::OnDemandSum));
        assert_eq!(on_demand(false, false, false), Err(Violation::NotNumeric));
        let last = u64::from(MAX_SHARDED) - 1;
        assert_eq!(sharded(false, true, last), Ok(()));
        assert_eq!(
            sharded(false, true, last + 1),
            Err(Violation::TooManySharded)
        );
        assert_eq!(sharded(false, false, 0), Err(Violation::ShardedType));
        assert_eq!(sharded(true, true, 0), Err(Violation::ShardedComputed));
        assert_eq!(aggregate(None, true, false, false), Ok(()));
        assert_eq!(
            aggregate(Some(4), true, false, false),
            Err(Violation::AggregateText)
        );
        assert_eq!(aggregate(Some(1), false, true, false), Ok(()));
        let max = aggregate(Some(3), false, true, false);
        assert_eq!(max, Err(Violation::AggregateWithBase));
        assert_eq!(
            aggregate(Some(0), false, false, true),
            Err(Violation::AggregateElapsed)
        );
        assert_eq!(aggregate(Some(2), false, false, true), Ok(()));
        assert_eq!(unit("bytes", false, false), Ok(0));
        assert_eq!(unit("seconds", false, false), Ok(1));
        assert_eq!(unit("kib", false, false), Err(Violation::UnknownUnit));
        assert_eq!(unit("bytes", true, false), Err(Violation::UnitOfType));
        assert_eq!(unit("bytes", false, true), Err(Violation::UnitOfType));
        assert!(is_time(crate::counter_types::marker("AverageTimer")));
        assert!(!is_time(crate::counter_types::marker("LargeRawCount")));
    }
}

//! A map's object rules (app name, offsets, languages, instance limits, default counter, detail
//! level) as `const fn`s over plain values, each returning the [`Violation`] it
//! finds. The map macro calls them with the values it parsed and reports the violation at the
//! token; prfdata's map validation calls them again on the map definition. Each rule has one
//! message, [`Violation::message`].
//!
//! # Examples
//!
//! ```
//! use prfdata_rules::map::{self, Violation};
//!
//! assert_eq!(map::offset(3), Err(Violation::OddOffset));
//! assert_eq!(map::language_id("00C"), Ok(()));
//! assert!(map::instance_max(0).unwrap_err().message().contains("1 to 1048576"));
//! ```

use crate::limits::{MAX_INSTANCES, MAX_INSTANCE_NAME};

/// A broken rule of a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    /// The app name breaks [`valid_app_name`](crate::valid_app_name).
    AppName,
    /// A symbolic offset is odd.
    OddOffset,
    /// A language id is not three hexadecimal digits.
    LanguageId,
    /// An object's most instances (`max`) is 0 or above [`MAX_INSTANCES`].
    InstanceMax,
    /// An object's longest instance name (`name_len`) is 0 or above [`MAX_INSTANCE_NAME`].
    InstanceNameLen,
    /// A `lang` block gives English (009), which `name` and `help` give.
    EnglishInLangBlock,
    /// A language is given twice (ids compare without case, as registry keys do).
    DuplicateLanguage,
    /// The default counter is none of the object's counters.
    DefaultNotACounter,
    /// The default counter is a base counter, which monitors do not show.
    DefaultIsBase,
    /// A detail level that is none of [`DETAIL_LEVELS`].
    DetailLevel,
    /// A counter that needs a base is followed by a base of another type.
    WrongBase,
    /// A counter that needs a base is not followed by a base.
    MissingBase,
    /// A base does not follow a counter that needs it.
    OrphanBase,
    /// A sum without parts.
    SumEmpty,
    /// A sum of more than [`MAX_SUM_PARTS`](crate::MAX_SUM_PARTS) parts.
    SumTooLong,
    /// A sum that names itself.
    SumOfItself,
    /// A sum of a base counter.
    SumOfBase,
    /// A sum of a sum.
    SumOfSum,
    /// A sum of a counter of another width.
    SumWidth,
    /// An on-demand counter of an object with instances.
    OnDemandInstanced,
    /// A counter both on demand and a sum.
    OnDemandSum,
    /// A base or text counter on demand or a sum.
    NotNumeric,
    /// A sharded counter that is on demand or a sum.
    ShardedComputed,
    /// A sharded counter that is not a 64-bit count or timer.
    ShardedType,
    /// An object's sharded counter past [`MAX_SHARDED`](crate::MAX_SHARDED).
    TooManySharded,
    /// A text counter with an aggregation rule.
    AggregateText,
    /// A counter read against a base that aggregates as neither `sum` nor `live`.
    AggregateWithBase,
    /// An elapsed time that aggregates as `sum` or `live`.
    AggregateElapsed,
    /// A unit that is none of [`UNITS`](crate::counter::UNITS).
    UnknownUnit,
    /// A unit declared for a text counter, or for a time, whose type gives its unit.
    UnitOfType,
    /// A histogram's unit, range, error or bounds break a rule.
    Histogram(HistogramViolation),
}

/// perflib's detail levels (winperf.h `PERF_DETAIL_NOVICE` 100 to `PERF_DETAIL_WIZARD` 400),
/// by the names a map gives them (prfdata's `map::DetailLevel`), lowest first.
pub const DETAIL_LEVELS: [&str; 4] = ["Novice", "Advanced", "Expert", "Wizard"];

impl Violation {
    /// What the rule asks, for a message that names the token first ("bad app name "x": ...").
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::map::Violation;
    /// assert!(Violation::OddOffset.message().starts_with("offsets are even"));
    /// ```
    pub const fn message(self) -> &'static str {
        match self {
            Violation::AppName => {
                "it names the block file and the Services key, so it is 1 to 64 characters of \
                 A-Z a-z 0-9 _ . -, not starting with `.` and without `..`"
            }
            Violation::OddOffset => {
                "offsets are even (the name gets First Counter + offset, its help the odd index \
                 after it)"
            }
            Violation::LanguageId => {
                "a perflib language id is three hexadecimal digits, such as \"009\" (English), \
                 \"00C\" (French), \"007\" (German)"
            }
            Violation::InstanceMax => "`max` must be 1 to 1048576",
            Violation::InstanceNameLen => "`name_len` must be 1 to 1024",
            Violation::EnglishInLangBlock => {
                "English (009) is given by `name` and `help`, not by a `lang` block"
            }
            Violation::DuplicateLanguage => {
                "is given twice: one `lang` block per language (ids compare without case, as \
                 registry keys do)"
            }
            Violation::DefaultNotACounter => "is not one of its counters",
            Violation::DefaultIsBase => "is a base counter: name one monitors can show, or `none`",
            Violation::DetailLevel => "the levels are `Novice`, `Advanced`, `Expert` or `Wizard`",
            Violation::WrongBase => "must be followed by its own base counter",
            Violation::MissingBase => "must be followed by its base counter",
            Violation::OrphanBase => "must come right after the counter it serves",
            Violation::SumEmpty => "sums nothing: name 1 to 8 of the object's counters",
            Violation::SumTooLong => {
                "sums more than 8 counters (Windows 95's MAXCOMPLEXSUBSTAT): split it into sums \
                 of at most 8"
            }
            Violation::SumOfItself => "cannot sum itself",
            Violation::SumOfBase => "it is a base counter; a sum adds stored or on-demand counters",
            Violation::SumOfSum => {
                "it is itself a sum (sums do not nest); a sum adds stored or on-demand counters"
            }
            Violation::SumWidth => "a sum and its parts are all 32-bit or all 64-bit",
            Violation::OnDemandInstanced => {
                "on-demand counters belong to objects without instances (`instances: none`)"
            }
            Violation::OnDemandSum => "a sum is computed by the reader from its parts",
            Violation::NotNumeric => "only a number (not a base or text) is on demand or a sum",
            Violation::ShardedComputed => {
                "a sharded counter is stored by the app's threads, one slot each"
            }
            Violation::ShardedType | Violation::TooManySharded => {
                "a sharded counter is a 64-bit count or timer (not a base, text or elapsed time; \
                 use a LARGE type such as BulkCount or Timer100Ns), at most 64 per object"
            }
            Violation::AggregateText => "a text counter has no total: leave `aggregate` out",
            Violation::AggregateWithBase => {
                "a counter read against a base aggregates with its base, as a sum: use `sum` \
                 (folds departed instances) or `live` (live instances only)"
            }
            Violation::AggregateElapsed => {
                "an elapsed time is a start time: sums of start times mean nothing; use `min`, \
                 `max` or `last`"
            }
            Violation::UnknownUnit => "a unit is `bytes` or `seconds`",
            Violation::UnitOfType => {
                "a unit is declared for a count whose raw value is in it; a time's type gives \
                 its unit (seconds) and text has none"
            }
            Violation::Histogram(h) => h.message(),
        }
    }
}

/// A broken rule of a histogram's geometry ([`crate::histogram`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistogramViolation {
    /// A histogram's unit that is none of
    /// [`UNIT_NAMES`](crate::histogram::UNIT_NAMES).
    Unit,
    /// A histogram value's suffix of the wrong kind: a time suffix on a `bytes` or `count`
    /// histogram, or none on a time.
    Suffix,
    /// A histogram value that is not a whole number of the histogram's unit (`1500ns` in `us`).
    NotWhole,
    /// A histogram's range `lo..hi` with `lo` 0 or not below `hi`.
    Range,
    /// A histogram's value past [`MAX_HISTOGRAM_VALUE`](crate::histogram::MAX_HISTOGRAM_VALUE).
    High,
    /// A histogram's error outside 0.4 % to 50 % (sub-bucket bits outside 1 to 8).
    Error,
    /// A histogram of more than [`MAX_HISTOGRAM_BUCKETS`](crate::MAX_HISTOGRAM_BUCKETS) buckets
    /// (or fewer than 3, in a descriptor).
    Buckets,
    /// A log-linear histogram whose resolution shift and first bucket leave a bucket wider than
    /// its stated error (only a descriptor can say so; a map's range cannot).
    Shift,
    /// A histogram's `buckets` without a bound.
    BoundsEmpty,
    /// A histogram's `buckets` of more than
    /// [`MAX_EXPLICIT_BOUNDS`](crate::MAX_EXPLICIT_BOUNDS) bounds.
    BoundsTooMany,
    /// A histogram's first bound is 0.
    BoundZero,
    /// A histogram's bound not above the one before it.
    BoundsOrder,
    /// A histogram without a `unit`, or without exactly one of `range` with `error` and
    /// `buckets`.
    Shape,
    /// A histogram that aggregates as anything but `sum`.
    Aggregate,
    /// A histogram declared on demand, as a sum or with a scale factor.
    Computed,
    /// A sum's part that is a histogram.
    SumPart,
    /// An object whose sharded counters and `sharded: true` histograms' buckets take more than
    /// [`MAX_SHARD_LINE`](crate::MAX_SHARD_LINE) bytes of a shard line.
    ShardLine,
}

impl HistogramViolation {
    /// What the rule asks (see [`Violation::message`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::map::HistogramViolation;
    /// assert!(HistogramViolation::Buckets.message().contains("4096"));
    /// ```
    pub const fn message(self) -> &'static str {
        match self {
            HistogramViolation::Unit => {
                "a histogram's unit is `ns`, `us`, `ms`, `s`, `bytes` or `count`"
            }
            HistogramViolation::Suffix => {
                "a time histogram's values take a suffix `ns`, `us`, `ms` or `s`; a `bytes` or \
             `count` histogram's values take none"
            }
            HistogramViolation::NotWhole => {
                "is not a whole number of the histogram's unit: give a whole value or declare a \
             finer unit"
            }
            HistogramViolation::Range => {
                "a histogram's range is LO..HI with 1 <= LO < HI (values below LO go to the \
             underflow bucket)"
            }
            HistogramViolation::High => {
                "a histogram's values are at most 2^62 (4611686018427387904) in its unit: use a \
             coarser unit"
            }
            HistogramViolation::Error => {
                "the error is 0.4% to 50% (bucket width 2^-p of its lower edge, p 1 to 8)"
            }
            HistogramViolation::Buckets => {
                "a histogram has 3 to 4096 buckets (32 KiB per copy): widen the error or narrow \
             the range"
            }
            HistogramViolation::Shift => {
                "the resolution shift leaves the first bucket wider than the stated error: the \
             histogram's descriptor is corrupt"
            }
            HistogramViolation::BoundsEmpty => "a histogram's `buckets` give 1 to 64 bounds",
            HistogramViolation::BoundsTooMany => {
                "a histogram gives at most 64 bounds: use `range` and `error` for more buckets"
            }
            HistogramViolation::BoundZero => {
                "a bound is at least 1 (the first bucket counts from 0 up to its bound)"
            }
            HistogramViolation::Shape => {
                "a histogram gives `unit` and either `range` + `error` or `buckets`"
            }
            HistogramViolation::Aggregate => {
                "a histogram's buckets, count and sum only add up: `aggregate: sum` (the default)"
            }
            HistogramViolation::Computed => {
                "a histogram is recorded by the app: no `on_demand`, `sum` or `factor`"
            }
            HistogramViolation::SumPart => "is a histogram, not a number a sum can add",
            HistogramViolation::ShardLine => {
                "an object's sharded counters and sharded histogram buckets take at most 8192 \
             words of each shard line (64 KiB): declare fewer buckets `sharded: true`"
            }
            HistogramViolation::BoundsOrder => {
                "bounds are strictly increasing, each above the one before"
            }
        }
    }
}

/// The app-name rule ([`valid_app_name`](crate::valid_app_name)).
///
/// # Errors
///
/// [`Violation::AppName`].
pub const fn app_name(app: &str) -> Result<(), Violation> {
    if crate::valid_app_name(app) {
        Ok(())
    } else {
        Err(Violation::AppName)
    }
}

/// A symbolic offset is even: the name's index is First Counter + offset, the help's the odd
/// index after it (the lodctr design specification).
///
/// # Errors
///
/// [`Violation::OddOffset`].
pub const fn offset(offset: u32) -> Result<(), Violation> {
    if offset.is_multiple_of(2) {
        Ok(())
    } else {
        Err(Violation::OddOffset)
    }
}

/// A language id is three hexadecimal digits, as the registry's `Perflib\009`.
///
/// # Errors
///
/// [`Violation::LanguageId`].
pub const fn language_id(id: &str) -> Result<(), Violation> {
    let b = id.as_bytes();
    if b.len() != 3 {
        return Err(Violation::LanguageId);
    }
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_hexdigit() {
            return Err(Violation::LanguageId);
        }
        i += 1;
    }
    Ok(())
}

/// A `lang` block's language id: three hexadecimal digits ([`language_id`]), and not English,
/// which `name` and `help` give.
///
/// # Errors
///
/// [`Violation::LanguageId`] or [`Violation::EnglishInLangBlock`].
pub const fn lang_block(id: &str) -> Result<(), Violation> {
    if let Err(v) = language_id(id) {
        return Err(v);
    }
    if same_language(id, "009") {
        return Err(Violation::EnglishInLangBlock);
    }
    Ok(())
}

/// Whether two language ids name the same language: registry keys, such as `Perflib\00C`,
/// compare without case. A language given twice is [`Violation::DuplicateLanguage`].
///
/// # Examples
///
/// ```
/// assert!(prfdata_rules::map::same_language("00C", "00c"));
/// ```
pub const fn same_language(a: &str, b: &str) -> bool {
    crate::bytes_eq(a.as_bytes(), b.as_bytes(), true)
}

/// An object's default counter: one of its counters and not a base. `is_base` is `None` when
/// the default is none of the object's counters, else whether it is a base.
///
/// # Errors
///
/// [`Violation::DefaultNotACounter`] or [`Violation::DefaultIsBase`].
pub const fn default_counter(is_base: Option<bool>) -> Result<(), Violation> {
    match is_base {
        None => Err(Violation::DefaultNotACounter),
        Some(true) => Err(Violation::DefaultIsBase),
        Some(false) => Ok(()),
    }
}

/// The detail level called `name`: its index in [`DETAIL_LEVELS`].
///
/// # Errors
///
/// [`Violation::DetailLevel`].
pub const fn detail_level(name: &str) -> Result<usize, Violation> {
    let mut i = 0;
    while i < DETAIL_LEVELS.len() {
        if crate::str_eq(DETAIL_LEVELS[i], name) {
            return Ok(i);
        }
        i += 1;
    }
    Err(Violation::DetailLevel)
}

/// An object's most instances: 1 to [`MAX_INSTANCES`].
///
/// # Errors
///
/// [`Violation::InstanceMax`].
pub const fn instance_max(max: u64) -> Result<(), Violation> {
    if max >= 1 && max <= MAX_INSTANCES as u64 {
        Ok(())
    } else {
        Err(Violation::InstanceMax)
    }
}

/// An object's longest instance name: 1 to [`MAX_INSTANCE_NAME`] UTF-16 units.
///
/// # Errors
///
/// [`Violation::InstanceNameLen`].
pub const fn instance_name_len(name_len: u64) -> Result<(), Violation> {
    if name_len >= 1 && name_len <= MAX_INSTANCE_NAME as u64 {
        Ok(())
    } else {
        Err(Violation::InstanceNameLen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_APP_NAME;

    /// The messages spell the limits out as text (a `const` message cannot format a number):
    /// they name the limits' values.
    #[test]
    fn the_messages_name_the_limits() {
        let app = format!("1 to {MAX_APP_NAME} characters");
        assert!(Violation::AppName.message().contains(&app));
        let max = format!("1 to {MAX_INSTANCES}");
        assert!(Violation::InstanceMax.message().ends_with(&max));
        let name = format!("1 to {MAX_INSTANCE_NAME}");
        assert!(Violation::InstanceNameLen.message().ends_with(&name));
        let parts = format!("more than {} counters", crate::MAX_SUM_PARTS);
        assert!(Violation::SumTooLong.message().contains(&parts));
        let sharded = format!("at most {} per object", crate::MAX_SHARDED);
        assert!(Violation::TooManySharded.message().ends_with(&sharded));
        for level in DETAIL_LEVELS {
            let listed = format!("`{level}`");
            assert!(
                Violation::DetailLevel.message().contains(&listed),
                "{level}"
            );
        }
    }

    #[test]
    fn each_rule_accepts_its_bounds_and_refuses_past_them() {
        assert_eq!(app_name("A"), Ok(()));
        assert_eq!(app_name("a..b"), Err(Violation::AppName));
        assert_eq!(offset(0), Ok(()));
        assert_eq!(offset(u32::MAX), Err(Violation::OddOffset));
        for good in ["009", "00C", "00c", "7fF"] {
            assert_eq!(language_id(good), Ok(()), "{good}");
        }
        for bad in ["", "7", "0009", "fr ", "00G"] {
            assert_eq!(language_id(bad), Err(Violation::LanguageId), "{bad}");
        }
        let top = u64::from(MAX_INSTANCES);
        assert_eq!(instance_max(1), Ok(()));
        assert_eq!(instance_max(top), Ok(()));
        assert_eq!(instance_max(0), Err(Violation::InstanceMax));
        assert_eq!(instance_max(top + 1), Err(Violation::InstanceMax));
        assert_eq!(lang_block("00C"), Ok(()));
        assert_eq!(lang_block("009"), Err(Violation::EnglishInLangBlock));
        assert_eq!(lang_block("fr"), Err(Violation::LanguageId));
        assert!(same_language("00c", "00C") && !same_language("00C", "007"));
        assert_eq!(default_counter(Some(false)), Ok(()));
        assert_eq!(default_counter(Some(true)), Err(Violation::DefaultIsBase));
        assert_eq!(default_counter(None), Err(Violation::DefaultNotACounter));
        assert_eq!(detail_level("Wizard"), Ok(3));
        assert_eq!(detail_level("novice"), Err(Violation::DetailLevel));
        let top = u64::from(MAX_INSTANCE_NAME);
        assert_eq!(instance_name_len(top), Ok(()));
        assert_eq!(instance_name_len(0), Err(Violation::InstanceNameLen));
        assert_eq!(instance_name_len(top + 1), Err(Violation::InstanceNameLen));
    }
}

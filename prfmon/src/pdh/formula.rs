//! A counter's displayable value from one or two raw samples, as PDH computes it.
//!
//! perflib hands a consumer raw numbers: a counter's value (and its base's), and the collection's
//! clocks. What perfmon, typeperf and `PdhGetFormattedCounterValue` display is computed from them
//! by a formula that the counter type selects. [`format()`] applies that formula to a previous and
//! a current [`RawSample`].
//!
//! # The formulas
//!
//! N is the counter's value, B its base's value (the counter definition that follows it), T the
//! system timer (`PERF_DATA_BLOCK.PerfTime`, frequency F = `PerfFreq`), T100 the 100 ns clock
//! (`PerfTime100nSec`), Tobj and Fobj the object's own timer (`PERF_OBJECT_TYPE.PerfTime` /
//! `PerfFreq`). Δ is "current sample minus previous sample".
//!
//! | Counter type                                            | Value                 | Unit |
//! |---------------------------------------------------------|-----------------------|------|
//! | `COUNTER_COUNTER`, `SAMPLE_COUNTER`, `BULK_COUNT`       | ΔN / (ΔT / F)         | /sec |
//! | `COUNTER_TIMER`                                         | 100 ΔN / ΔT           | %    |
//! | `COUNTER_TIMER_INV`                                     | 100 (1 − ΔN / ΔT)     | %    |
//! | `100NSEC_TIMER`                                         | 100 ΔN / ΔT100        | %    |
//! | `100NSEC_TIMER_INV`                                     | 100 (1 − ΔN / ΔT100)  | %    |
//! | `OBJ_TIME_TIMER`                                        | 100 ΔN / ΔTobj        | %    |
//! | `COUNTER_QUEUELEN_TYPE`, `COUNTER_LARGE_QUEUELEN_TYPE`  | ΔN / ΔT               |      |
//! | `COUNTER_100NS_QUEUELEN_TYPE`                           | ΔN / ΔT100            |      |
//! | `COUNTER_OBJ_TIME_QUEUELEN_TYPE`                        | ΔN / ΔTobj            |      |
//! | `RAW_FRACTION`, `LARGE_RAW_FRACTION`                    | 100 N / B (one sample)| %    |
//! | `SAMPLE_FRACTION`                                       | 100 ΔN / ΔB           | %    |
//! | `AVERAGE_TIMER`                                         | (ΔN / F) / ΔB         | s    |
//! | `AVERAGE_BULK`                                          | ΔN / ΔB               |      |
//! | `ELAPSED_TIME`                                          | (Tobj − N) / Fobj     | s    |
//! | `COUNTER_DELTA`, `COUNTER_LARGE_DELTA`                  | ΔN                    |      |
//! | `COUNTER_RAWCOUNT(_HEX)`, `COUNTER_LARGE_RAWCOUNT(_HEX)`| N (one sample)        |      |
//! | `COUNTER_MULTI_TIMER`                                   | 100 (ΔN / ΔT) / B     | %    |
//! | `COUNTER_MULTI_TIMER_INV`                               | 100 (B − ΔN / ΔT)     | %    |
//! | `100NSEC_MULTI_TIMER`                                   | 100 (ΔN / ΔT100) / B  | %    |
//! | `100NSEC_MULTI_TIMER_INV`                               | 100 (B − ΔN / ΔT100)  | %    |
//! | `PRECISION_SYSTEM_TIMER`, `_100NS_`, `_OBJECT_TIMER`    | 100 ΔN / ΔB           | %    |
//!
//! `ELAPSED_TIME` follows NT's Process object: Tobj is the wall clock as a FILETIME (100 ns units
//! since 1601-01-01), Fobj 10,000,000, and N the start time in the same units, which is what
//! prfdata's provider and apps write ([`prfdata::clock`]).
//!
//! For the multi timers B is the current sample's `PERF_COUNTER_MULTI_BASE` (the number of
//! items timed); for the precision timers B is the `PERF_PRECISION_TIMESTAMP` the provider
//! supplies in the counter that follows. `COUNTER_NODATA`, text counters and bases have no value
//! ([`NoValue::NoData`]).
//!
//! Sources, each formula checked against them:
//! - *Windows Server 2003 Technical Reference, Counter Types*
//!   (<https://learn.microsoft.com/en-us/previous-versions/windows/it-pro/windows-server-2003/cc776490(v=ws.10)>),
//!   one page per type, e.g. `PERF_SAMPLE_COUNTER` "(N1 − N0) / ((D1 − D0) / F)" (cc740231),
//!   `PERF_100NSEC_TIMER` "(N1 − N0) / (D1 − D0) × 100" (cc728274), `PERF_COUNTER_LARGE_QUEUELEN_TYPE`
//!   "(N1 − N0) / (D1 − D0)" (cc776041), `PERF_ELAPSED_TIME` "(D0 − N0) / F" (cc756820),
//!   `PERF_COUNTER_MULTI_TIMER_INV` "(B − ((N1 − N0) / (D1 − D0))) × 100" (cc756801),
//!   `PERF_100NSEC_MULTI_TIMER_INV` (cc779374), `PERF_PRECISION_100NS_TIMER` "N1 − N0 / D1 − D0"
//!   where D is the provider's timer (cc756128), `PERF_PRECISION_TIMER` (cc781290).
//! - *Calculating Counter Values*, Win32 Performance Counters
//!   (<https://learn.microsoft.com/en-us/windows/win32/perfctrs/calculating-counter-values>): the
//!   reference C switch over every type, e.g. `PERF_100NSEC_MULTI_TIMER` "100*((N1 − N0)/(D1 −
//!   D0))/B1", `PERF_AVERAGE_TIMER` "((N1 − N0)/TB)/(B1 − B0)", `PERF_RAW_FRACTION` "100*N/B";
//!   it also notes that `PERF_AVERAGE_TIMER` and `PERF_AVERAGE_BULK` need two samples although
//!   they lack `PERF_DELTA_COUNTER`.
//! - `PdhGetFormattedCounterValue` (pdh.h,
//!   <https://learn.microsoft.com/en-us/windows/win32/api/pdh/nf-pdh-pdhgetformattedcountervalue>):
//!   `PDH_FMT_NOCAP100`, "Counter values greater than 100 (for example, counter values measuring
//!   the processor load on multiprocessor computers) will not be reset to 100. The default
//!   behavior is that counter values are capped at a value of 100"; `PDH_FMT_NOSCALE`, "Do not
//!   apply the counter's default scaling factor".
//!
//! Where the sources disagree, this module follows the Windows Server 2003 reference:
//! - `PERF_COUNTER_MULTI_TIMER`: *Calculating Counter Values* (and the Windows CE "Calculations
//!   for Raw Counter Data" pages) write 100·(ΔN / (ΔT / F)) / B, dividing a tick count by
//!   seconds, which is 10⁷ times too large at 10 MHz for a numerator counted in timer ticks;
//!   Windows Server 2003 writes 100·(ΔN / ΔT) / B, dimensionless like every other timer.
//! - The inverse multi timers: the Windows CE pages divide by B again, 100·(B − ΔN / ΔT) / B;
//!   Windows Server 2003 and *Calculating Counter Values* do not, so the value is a sum over
//!   the B items (up to 100·B before the cap), which is why `PDH_FMT_NOCAP100` exists.
//!
//! # Wrap-around, resets and missing values
//!
//! - **32-bit values wrap.** For a DWORD counter (and a DWORD base) the delta is taken modulo
//!   2³², as PDH does: 0xFFFF_FF00 → 0x0000_0100 is a change of 0x200, not of −4 294 966 784. The
//!   sample's value is read as its low 32 bits, so a sign-extended DWORD works as well as a
//!   zero-extended one. (A DWORD counter that was *reset* therefore shows one large delta.)
//! - **64-bit values do not wrap** (2⁶³ ticks of a 10 MHz clock is 29 000 years). Their delta is
//!   the plain difference; a negative one means the counter was reset or went back, and gives
//!   [`NoValue::CounterWentBack`] rather than a wrong negative rate.
//! - A zero or negative time delta gives [`NoValue::TimeNotAdvanced`]; a zero or negative base
//!   delta gives [`NoValue::BaseNotAdvanced`]; a base of zero or less where one sample's base
//!   divides (raw fractions, multi timers) gives [`NoValue::BadBase`]; a frequency of zero or less
//!   gives [`NoValue::BadFrequency`]. No division by zero ever reaches an `f64`.
//! - Percentages (`PERF_DISPLAY_PERCENT` types) are capped at 100 unless
//!   [`FormatOptions::cap_percent`] is false; inverse timers (`PERF_INVERSE_COUNTER`) are always
//!   floored at 0, since a busy time below zero is only sampling skew.
//!
//! # Examples
//!
//! ```
//! use prfmon::pdh::formula::{format, FormatOptions, RawSample};
//! use prfdata_wire::winperf::PERF_100NSEC_TIMER;
//!
//! // A thread busy for 0.3 s of a 1 s interval (100 ns units): 30 %.
//! let t0 = RawSample::new(PERF_100NSEC_TIMER, 0).with_time_100ns(0);
//! let t1 = RawSample::new(PERF_100NSEC_TIMER, 3_000_000).with_time_100ns(10_000_000);
//! assert_eq!(format(Some(&t0), &t1, FormatOptions::default()), Ok(30.0));
//! ```

use prfdata_wire::winperf::{
    self, PERF_100NSEC_MULTI_TIMER, PERF_100NSEC_MULTI_TIMER_INV, PERF_100NSEC_TIMER,
    PERF_100NSEC_TIMER_INV, PERF_AVERAGE_BULK, PERF_AVERAGE_TIMER,
    PERF_COUNTER_100NS_QUEUELEN_TYPE, PERF_COUNTER_BULK_COUNT, PERF_COUNTER_COUNTER,
    PERF_COUNTER_DELTA, PERF_COUNTER_LARGE_DELTA, PERF_COUNTER_LARGE_QUEUELEN_TYPE,
    PERF_COUNTER_LARGE_RAWCOUNT, PERF_COUNTER_LARGE_RAWCOUNT_HEX, PERF_COUNTER_MULTI_TIMER,
    PERF_COUNTER_MULTI_TIMER_INV, PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, PERF_COUNTER_QUEUELEN_TYPE,
    PERF_COUNTER_RAWCOUNT, PERF_COUNTER_RAWCOUNT_HEX, PERF_COUNTER_TIMER, PERF_COUNTER_TIMER_INV,
    PERF_DISPLAY_MASK, PERF_DISPLAY_PERCENT, PERF_DISPLAY_PER_SEC, PERF_DISPLAY_SECONDS,
    PERF_ELAPSED_TIME, PERF_INVERSE_COUNTER, PERF_LARGE_RAW_FRACTION, PERF_OBJ_TIME_TIMER,
    PERF_PRECISION_100NS_TIMER, PERF_PRECISION_OBJECT_TIMER, PERF_PRECISION_SYSTEM_TIMER,
    PERF_RAW_FRACTION, PERF_SAMPLE_COUNTER, PERF_SAMPLE_FRACTION,
};
use serde::{Deserialize, Serialize};

/// One raw sample of one counter: its value, its base's value and the clocks of the collection
/// it came from.
///
/// Fill it from a collection: `value` from the counter block at the definition's
/// `CounterOffset` (a DWORD counter zero-extended, a LARGE one as `i64`), `base` likewise from
/// the definition that follows when the type needs one ([`winperf::required_base`]), `time` /
/// `freq` / `time_100ns` from the `PERF_DATA_BLOCK`, `object_time` / `object_freq` from the
/// counter's `PERF_OBJECT_TYPE`. Clocks a type does not use may be left at 0.
///
/// The widths of the value and of the base are not stored: they follow from the counter type
/// (its `PERF_SIZE_*` field, and that of the base [`winperf::required_base`] names), so a DWORD
/// value or base is read as its low 32 bits whichever way it was extended. A multi timer's item
/// count (`PERF_COUNTER_MULTI_BASE`) and a precision timer's time stamp
/// (`PERF_PRECISION_TIMESTAMP`) are its base.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::RawSample;
/// use prfdata_wire::winperf::PERF_RAW_FRACTION;
///
/// let s = RawSample::new(PERF_RAW_FRACTION, 3).with_base(4);
/// assert_eq!((s.value, s.base), (3, Some(4)));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RawSample {
    /// The counter type (`PERF_COUNTER_COUNTER`, ...), from the counter definition.
    pub counter_type: u32,
    /// The raw value: DWORD counters zero-extended from `u32`, LARGE counters as `i64`.
    pub value: i64,
    /// The base counter's raw value (zero-extended when the base is a DWORD), for fractions,
    /// averages, multi timers (the item count) and precision timers (the time stamp).
    pub base: Option<i64>,
    /// `PERF_DATA_BLOCK.PerfTime`: the system timer, in ticks of `freq`.
    pub time: i64,
    /// `PERF_DATA_BLOCK.PerfFreq`: ticks per second of `time`.
    pub freq: i64,
    /// `PERF_DATA_BLOCK.PerfTime100nSec`: the time in 100 ns units.
    pub time_100ns: i64,
    /// `PERF_OBJECT_TYPE.PerfTime`: the object's own timer, in ticks of `object_freq`.
    pub object_time: i64,
    /// `PERF_OBJECT_TYPE.PerfFreq`: ticks per second of `object_time`.
    pub object_freq: i64,
}

impl RawSample {
    /// A sample of `value` for a counter of `counter_type`, with no base and all clocks at 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::formula::RawSample;
    /// use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;
    ///
    /// let s = RawSample::new(PERF_COUNTER_RAWCOUNT, 42);
    /// assert_eq!((s.counter_type, s.value, s.base, s.time), (PERF_COUNTER_RAWCOUNT, 42, None, 0));
    /// ```
    pub const fn new(counter_type: u32, value: i64) -> Self {
        RawSample {
            counter_type,
            value,
            base: None,
            time: 0,
            freq: 0,
            time_100ns: 0,
            object_time: 0,
            object_freq: 0,
        }
    }

    /// This sample with the base counter's value.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::formula::RawSample;
    /// use prfdata_wire::winperf::PERF_SAMPLE_FRACTION;
    ///
    /// assert_eq!(RawSample::new(PERF_SAMPLE_FRACTION, 1).with_base(2).base, Some(2));
    /// ```
    pub const fn with_base(self, base: i64) -> Self {
        RawSample {
            base: Some(base),
            ..self
        }
    }

    /// This sample with the system timer (`PerfTime`) and its frequency (`PerfFreq`).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::formula::RawSample;
    /// use prfdata::clock::PERF_FREQUENCY;
    /// use prfdata_wire::winperf::PERF_COUNTER_COUNTER;
    ///
    /// let s = RawSample::new(PERF_COUNTER_COUNTER, 7).with_time(123, PERF_FREQUENCY);
    /// assert_eq!((s.time, s.freq), (123, 10_000_000));
    /// ```
    pub const fn with_time(self, time: i64, freq: i64) -> Self {
        RawSample { time, freq, ..self }
    }

    /// This sample with the 100 ns clock (`PerfTime100nSec`).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::formula::RawSample;
    /// use prfdata_wire::winperf::PERF_100NSEC_TIMER;
    ///
    /// assert_eq!(RawSample::new(PERF_100NSEC_TIMER, 0).with_time_100ns(5).time_100ns, 5);
    /// ```
    pub const fn with_time_100ns(self, time_100ns: i64) -> Self {
        RawSample { time_100ns, ..self }
    }

    /// This sample with its object's timer (`PERF_OBJECT_TYPE.PerfTime`) and frequency.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::formula::RawSample;
    /// use prfdata_wire::winperf::PERF_ELAPSED_TIME;
    ///
    /// let s = RawSample::new(PERF_ELAPSED_TIME, 0).with_object_time(30, 10);
    /// assert_eq!((s.object_time, s.object_freq), (30, 10));
    /// ```
    pub const fn with_object_time(self, object_time: i64, object_freq: i64) -> Self {
        RawSample {
            object_time,
            object_freq,
            ..self
        }
    }
}

/// How [`format()`] presents a value (`PdhGetFormattedCounterValue`'s format flags).
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::FormatOptions;
///
/// let chart = FormatOptions { scale: Some(-1), ..FormatOptions::default() };
/// assert!(chart.cap_percent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FormatOptions {
    /// Cap percentages at 100 (PDH's default; false is `PDH_FMT_NOCAP100`).
    pub cap_percent: bool,
    /// Multiply the value by 10^scale (the counter's DefaultScale, as perfmon's chart does);
    /// `None` leaves it unscaled (`PDH_FMT_NOSCALE`). PDH scales by default; here the caller
    /// chooses, since a log wants the true value and a chart the scaled one.
    pub scale: Option<i32>,
}

impl Default for FormatOptions {
    /// Capped at 100, unscaled.
    fn default() -> Self {
        FormatOptions {
            cap_percent: true,
            scale: None,
        }
    }
}

/// The clock a time delta was measured on.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::Clock;
///
/// assert_eq!(Clock::Ns100.to_string(), "100 ns clock (PerfTime100nSec)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Clock {
    /// The system timer: `PERF_DATA_BLOCK.PerfTime` at `PerfFreq`.
    System,
    /// The 100 ns clock: `PERF_DATA_BLOCK.PerfTime100nSec`.
    Ns100,
    /// The object's own timer: `PERF_OBJECT_TYPE.PerfTime` at its `PerfFreq`.
    Object,
}

impl Clock {
    /// The clock's reading in a sample.
    fn read(self, s: &RawSample) -> i64 {
        match self {
            Clock::System => s.time,
            Clock::Ns100 => s.time_100ns,
            Clock::Object => s.object_time,
        }
    }
}

impl core::fmt::Display for Clock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Clock::System => "system timer (PerfTime)",
            Clock::Ns100 => "100 ns clock (PerfTime100nSec)",
            Clock::Object => "object timer (the object's PerfTime)",
        })
    }
}

/// Why a sample has no formatted value (PDH's `PDH_CSTATUS_*` / `PDH_CALC_*` statuses).
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::{format, FormatOptions, NoValue, RawSample};
/// use prfdata_wire::winperf::PERF_COUNTER_COUNTER;
///
/// let first = RawSample::new(PERF_COUNTER_COUNTER, 10).with_time(0, 10_000_000);
/// let err = format(None, &first, FormatOptions::default()).unwrap_err();
/// assert_eq!(err, NoValue::FirstSample { counter_type: PERF_COUNTER_COUNTER });
/// assert_eq!(err.to_string(), "PERF_COUNTER_COUNTER needs two samples; this is the first");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum NoValue {
    /// The type differentiates over time and there is no previous sample yet.
    #[error("{} needs two samples; this is the first", type_label(.counter_type))]
    FirstSample {
        /// The counter type.
        counter_type: u32,
    },
    /// The previous sample is of another counter type (the counter was redefined).
    #[error(
        "the counter type changed between samples, from {} to {}",
        type_label(.previous),
        type_label(.current)
    )]
    TypeChanged {
        /// The previous sample's type.
        previous: u32,
        /// The current sample's type.
        current: u32,
    },
    /// The clock the type divides by did not advance between the samples.
    #[error("the {clock} moved by {delta} ticks between the samples; it must advance")]
    TimeNotAdvanced {
        /// The clock.
        clock: Clock,
        /// Its change, zero or negative.
        delta: i64,
    },
    /// The frequency the type divides by is zero or negative.
    #[error("the frequency of the {clock} is {freq}; it must be positive")]
    BadFrequency {
        /// The clock whose frequency it is.
        clock: Clock,
        /// The frequency.
        freq: i64,
    },
    /// The type needs its base counter's value and the sample has none.
    #[error("{} needs the value of its base counter; the sample has none", type_label(.counter_type))]
    MissingBase {
        /// The counter type.
        counter_type: u32,
    },
    /// The base (denominator) did not advance between the samples.
    #[error("the base counter moved by {delta} between the samples; it must advance")]
    BaseNotAdvanced {
        /// Its change, zero or negative.
        delta: i64,
    },
    /// A one-sample base (raw fraction denominator, multi timer item count) is zero or negative.
    #[error("the base counter is {base}; it must be positive")]
    BadBase {
        /// The base's value.
        base: i64,
    },
    /// A 64-bit value went back between the samples (the counter was reset).
    #[error("the 64-bit counter went back by {} between the samples (reset?)", -.delta)]
    CounterWentBack {
        /// Its change, negative.
        delta: i64,
    },
    /// An elapsed-time counter's start time lies after its object's time.
    #[error("the start time is {} ticks after the object's time", -.ticks)]
    NegativeElapsed {
        /// The object's time minus the start time, negative.
        ticks: i64,
    },
    /// A histogram's bucket counts cannot be read: the wrong number of them, or a total past
    /// 2^64 − 1 (see [`percentile`](super::histogram::percentile)).
    #[error("the histogram's bucket counts are unusable: {fault}")]
    BadHistogram {
        /// What is wrong with them.
        fault: HistogramFault,
    },
    /// The type carries no number to format: `PERF_COUNTER_NODATA`, text, or a base.
    #[error("{} has no formatted value", type_label(.counter_type))]
    NoData {
        /// The counter type.
        counter_type: u32,
    },
    /// The type is none of winperf.h's composed counter types.
    #[error("counter type {counter_type:#010x} is not a winperf.h counter type")]
    UnknownType {
        /// The counter type.
        counter_type: u32,
    },
}

/// What makes a histogram's bucket counts unusable ([`NoValue::BadHistogram`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum HistogramFault {
    /// A sample holds another number of buckets than the geometry lays out.
    #[error("{found} bucket counts where the geometry has {expected} buckets")]
    Buckets {
        /// The bucket counts in the sample.
        found: usize,
        /// The geometry's buckets.
        expected: usize,
    },
    /// The bucket counts of the interval add up past 2^64 − 1.
    #[error("the bucket counts add up past 2^64 - 1")]
    Total,
}

/// A counter type's winperf.h name, or its hexadecimal value.
fn type_label(counter_type: &u32) -> String {
    match winperf::counter_type_name(*counter_type) {
        Some(name) => name.to_owned(),
        None => format!("counter type {counter_type:#010x}"),
    }
}

/// Which formula a counter type selects (see the table in the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Formula {
    /// N, one sample, low 32 bits.
    Raw32,
    /// N, one sample, 64 bits.
    Raw64,
    /// 100 N / B, one sample.
    RawFraction,
    /// (Tobj − N) / Fobj, one sample.
    Elapsed,
    /// A formula over the change between two samples.
    Differenced(Difference),
}

/// The formulas over two samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Difference {
    /// ΔN / (ΔT / F).
    Rate,
    /// 100 ΔN / ΔT on `clock`, or 100 (1 − ΔN / ΔT) when inverse.
    Timer { clock: Clock, inverse: bool },
    /// ΔN / ΔT on `clock`.
    QueueLength { clock: Clock },
    /// 100 (ΔN / ΔT) / B on `clock`, or 100 (B − ΔN / ΔT) when inverse.
    MultiTimer { clock: Clock, inverse: bool },
    /// 100 ΔN / ΔB (sample fraction; precision timers, whose base is a time stamp).
    Fraction,
    /// (ΔN / F) / ΔB.
    AverageTimer,
    /// ΔN / ΔB.
    AverageBulk,
    /// ΔN.
    Delta,
}

impl Formula {
    /// The formula of a counter type.
    fn of(counter_type: u32) -> Result<Formula, NoValue> {
        use Clock::{Ns100, Object, System};
        use Difference as D;
        Ok(Formula::Differenced(match counter_type {
            PERF_COUNTER_RAWCOUNT | PERF_COUNTER_RAWCOUNT_HEX => return Ok(Formula::Raw32),
            PERF_COUNTER_LARGE_RAWCOUNT | PERF_COUNTER_LARGE_RAWCOUNT_HEX => {
                return Ok(Formula::Raw64)
            }
            PERF_RAW_FRACTION | PERF_LARGE_RAW_FRACTION => return Ok(Formula::RawFraction),
            PERF_ELAPSED_TIME => return Ok(Formula::Elapsed),
            PERF_COUNTER_COUNTER | PERF_SAMPLE_COUNTER | PERF_COUNTER_BULK_COUNT => D::Rate,
            PERF_COUNTER_TIMER | PERF_COUNTER_TIMER_INV => D::Timer {
                clock: System,
                inverse: counter_type == PERF_COUNTER_TIMER_INV,
            },
            PERF_100NSEC_TIMER | PERF_100NSEC_TIMER_INV => D::Timer {
                clock: Ns100,
                inverse: counter_type == PERF_100NSEC_TIMER_INV,
            },
            PERF_OBJ_TIME_TIMER => D::Timer {
                clock: Object,
                inverse: false,
            },
            PERF_COUNTER_QUEUELEN_TYPE | PERF_COUNTER_LARGE_QUEUELEN_TYPE => {
                D::QueueLength { clock: System }
            }
            PERF_COUNTER_100NS_QUEUELEN_TYPE => D::QueueLength { clock: Ns100 },
            PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE => D::QueueLength { clock: Object },
            PERF_COUNTER_MULTI_TIMER | PERF_COUNTER_MULTI_TIMER_INV => D::MultiTimer {
                clock: System,
                inverse: counter_type == PERF_COUNTER_MULTI_TIMER_INV,
            },
            PERF_100NSEC_MULTI_TIMER | PERF_100NSEC_MULTI_TIMER_INV => D::MultiTimer {
                clock: Ns100,
                inverse: counter_type == PERF_100NSEC_MULTI_TIMER_INV,
            },
            PERF_SAMPLE_FRACTION
            | PERF_PRECISION_SYSTEM_TIMER
            | PERF_PRECISION_100NS_TIMER
            | PERF_PRECISION_OBJECT_TIMER => D::Fraction,
            PERF_AVERAGE_TIMER => D::AverageTimer,
            PERF_AVERAGE_BULK => D::AverageBulk,
            PERF_COUNTER_DELTA | PERF_COUNTER_LARGE_DELTA => D::Delta,
            // Every other composed type is NODATA, text or a base; anything else is unknown.
            _ if winperf::counter_type_name(counter_type).is_some() => {
                return Err(NoValue::NoData { counter_type })
            }
            _ => return Err(NoValue::UnknownType { counter_type }),
        }))
    }
}

/// The displayable value of a counter from its previous and current raw samples.
///
/// `prev` may be `None` for the types that need one sample (raw counts, raw fractions, elapsed
/// time; see [`needs_two_samples`]); the others answer [`NoValue::FirstSample`] without it. The
/// formulas, the wrap-around of 32-bit values, the 100 % cap and every reason for no value are
/// described in the [module documentation](self). DefaultScale is applied last, after the cap,
/// when `opts.scale` is set.
///
/// # Errors
///
/// A [`NoValue`] that says why there is no value: no previous sample, a clock or base that did
/// not advance, a missing or non-positive base or frequency, a 64-bit counter that went back, or a
/// type with nothing to format.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::{format, FormatOptions, NoValue, RawSample};
/// use prfdata_wire::winperf::{PERF_AVERAGE_TIMER, PERF_COUNTER_TIMER};
///
/// // 20 operations took 0.5 s in all (5 000 000 ticks at 10 MHz): 0.025 s each.
/// let f = 10_000_000;
/// let t0 = RawSample::new(PERF_AVERAGE_TIMER, 0).with_base(100).with_time(0, f);
/// let t1 = RawSample::new(PERF_AVERAGE_TIMER, 5_000_000).with_base(120).with_time(f, f);
/// assert_eq!(format(Some(&t0), &t1, FormatOptions::default()), Ok(0.025));
///
/// // Busy 1.2 s of a 1 s interval (two threads): capped at 100 unless asked not to be.
/// let t0 = RawSample::new(PERF_COUNTER_TIMER, 0).with_time(0, f);
/// let t1 = RawSample::new(PERF_COUNTER_TIMER, 12_000_000).with_time(f, f);
/// assert_eq!(format(Some(&t0), &t1, FormatOptions::default()), Ok(100.0));
/// let uncapped = FormatOptions { cap_percent: false, ..FormatOptions::default() };
/// assert_eq!(format(Some(&t0), &t1, uncapped), Ok(120.0));
///
/// // The same time twice: no value rather than a division by zero.
/// assert!(matches!(format(Some(&t1), &t1, FormatOptions::default()),
///                  Err(NoValue::TimeNotAdvanced { delta: 0, .. })));
/// ```
pub fn format(
    prev: Option<&RawSample>,
    cur: &RawSample,
    opts: FormatOptions,
) -> Result<f64, NoValue> {
    let counter_type = cur.counter_type;
    let mut value = match Formula::of(counter_type)? {
        Formula::Raw32 => f64::from(low32(cur.value)),
        Formula::Raw64 => cur.value as f64,
        Formula::RawFraction => {
            let base = base_of(cur)?;
            if base <= 0 {
                return Err(NoValue::BadBase { base });
            }
            100.0 * value_of(cur) as f64 / base as f64
        }
        Formula::Elapsed => {
            let freq = positive_freq(Clock::Object, cur.object_freq)?;
            let ticks = cur.object_time.wrapping_sub(cur.value);
            if ticks < 0 {
                return Err(NoValue::NegativeElapsed { ticks });
            }
            ticks as f64 / freq
        }
        Formula::Differenced(difference) => {
            let prev = prev.ok_or(NoValue::FirstSample { counter_type })?;
            if prev.counter_type != counter_type {
                return Err(NoValue::TypeChanged {
                    previous: prev.counter_type,
                    current: counter_type,
                });
            }
            differenced(difference, prev, cur)?
        }
    };
    if counter_type & PERF_INVERSE_COUNTER != 0 {
        value = value.max(0.0);
    }
    if opts.cap_percent && counter_type & PERF_DISPLAY_MASK == PERF_DISPLAY_PERCENT {
        value = value.min(100.0);
    }
    Ok(match opts.scale {
        Some(scale) => scaled(value, scale),
        None => value,
    })
}

/// A formula over two samples of the same counter type.
fn differenced(difference: Difference, prev: &RawSample, cur: &RawSample) -> Result<f64, NoValue> {
    let dn = value_delta(prev, cur)? as f64;
    Ok(match difference {
        Difference::Rate => {
            let dt = time_delta(Clock::System, prev, cur)?;
            let freq = positive_freq(Clock::System, cur.freq)?;
            dn / (dt / freq)
        }
        Difference::Timer { clock, inverse } => {
            let ratio = dn / time_delta(clock, prev, cur)?;
            if inverse {
                100.0 * (1.0 - ratio)
            } else {
                100.0 * ratio
            }
        }
        Difference::QueueLength { clock } => dn / time_delta(clock, prev, cur)?,
        Difference::MultiTimer { clock, inverse } => {
            let ratio = dn / time_delta(clock, prev, cur)?;
            let items = base_of(cur)?;
            if items <= 0 {
                return Err(NoValue::BadBase { base: items });
            }
            let items = items as f64;
            if inverse {
                100.0 * (items - ratio)
            } else {
                100.0 * ratio / items
            }
        }
        Difference::Fraction => 100.0 * dn / base_delta(prev, cur)?,
        Difference::AverageTimer => {
            let freq = positive_freq(Clock::System, cur.freq)?;
            (dn / freq) / base_delta(prev, cur)?
        }
        Difference::AverageBulk => dn / base_delta(prev, cur)?,
        Difference::Delta => dn,
    })
}

/// The low 32 bits of a DWORD value, however it was extended to `i64`.
fn low32(value: i64) -> u32 {
    value as u32
}

/// Whether a counter type's value is a DWORD (else a LARGE).
fn is_dword(counter_type: u32) -> bool {
    winperf::counter_size(counter_type) == Some(4)
}

/// A sample's value, read at the counter's width.
fn value_of(s: &RawSample) -> i64 {
    if is_dword(s.counter_type) {
        i64::from(low32(s.value))
    } else {
        s.value
    }
}

/// The width of the base a counter type reads: a DWORD for `PERF_SAMPLE_BASE`,
/// `PERF_AVERAGE_BASE` and `PERF_RAW_BASE`, else a LARGE.
fn base_is_dword(counter_type: u32) -> bool {
    winperf::required_base(counter_type).is_some_and(is_dword)
}

/// A sample's base, read at the base's width.
fn base_of(s: &RawSample) -> Result<i64, NoValue> {
    let base = s.base.ok_or(NoValue::MissingBase {
        counter_type: s.counter_type,
    })?;
    Ok(if base_is_dword(s.counter_type) {
        i64::from(low32(base))
    } else {
        base
    })
}

/// The change of a value or base: modulo 2³² for a DWORD, else the difference, which must not be
/// negative.
fn wrapping_delta(dword: bool, prev: i64, cur: i64) -> i64 {
    if dword {
        i64::from(low32(cur).wrapping_sub(low32(prev)))
    } else {
        cur.wrapping_sub(prev)
    }
}

/// ΔN, modulo 2³² for a DWORD counter; a 64-bit counter that went back has no value.
fn value_delta(prev: &RawSample, cur: &RawSample) -> Result<i64, NoValue> {
    let delta = wrapping_delta(is_dword(cur.counter_type), prev.value, cur.value);
    if delta < 0 {
        return Err(NoValue::CounterWentBack { delta });
    }
    Ok(delta)
}

/// ΔB, modulo 2³² for a DWORD base; it must be positive.
fn base_delta(prev: &RawSample, cur: &RawSample) -> Result<f64, NoValue> {
    let delta = wrapping_delta(
        base_is_dword(cur.counter_type),
        base_of(prev)?,
        base_of(cur)?,
    );
    if delta <= 0 {
        return Err(NoValue::BaseNotAdvanced { delta });
    }
    Ok(delta as f64)
}

/// ΔT on a clock; it must be positive.
fn time_delta(clock: Clock, prev: &RawSample, cur: &RawSample) -> Result<f64, NoValue> {
    let delta = clock.read(cur).wrapping_sub(clock.read(prev));
    if delta <= 0 {
        return Err(NoValue::TimeNotAdvanced { clock, delta });
    }
    Ok(delta as f64)
}

/// A clock's frequency; it must be positive.
fn positive_freq(clock: Clock, freq: i64) -> Result<f64, NoValue> {
    if freq <= 0 {
        return Err(NoValue::BadFrequency { clock, freq });
    }
    Ok(freq as f64)
}

/// `value` × 10^`scale`: a counter's DefaultScale applied, as perfmon's chart applies it.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::scaled;
///
/// assert_eq!(scaled(3.0, 2), 300.0);
/// assert_eq!(scaled(1234.0, -3), 1.234);
/// assert_eq!(scaled(5.0, 0), 5.0);
/// ```
pub fn scaled(value: f64, scale: i32) -> f64 {
    // 10^-3 is not exact in binary: divide by the exact 10^3 instead, so 1234 × 10^-3 is 1.234.
    if scale >= 0 {
        value * 10f64.powi(scale)
    } else {
        value / 10f64.powi(scale.saturating_neg())
    }
}

/// Whether a counter type's value needs a previous sample: every `PERF_DELTA_COUNTER` type, and
/// `PERF_AVERAGE_TIMER` / `PERF_AVERAGE_BULK`, which difference their value and base without
/// the flag.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::needs_two_samples;
/// use prfdata_wire::winperf::*;
///
/// assert!(needs_two_samples(PERF_COUNTER_COUNTER));
/// assert!(needs_two_samples(PERF_AVERAGE_TIMER));
/// assert!(!needs_two_samples(PERF_RAW_FRACTION));
/// assert!(!needs_two_samples(PERF_ELAPSED_TIME));
/// ```
pub fn needs_two_samples(counter_type: u32) -> bool {
    winperf::is_differentiated(counter_type)
}

/// Whether [`format`] reads the previous sample for a counter of `counter_type` (its formula
/// is over two samples): a sampler keeps the raw samples of these counters only.
pub(crate) fn reads_previous(counter_type: u32) -> bool {
    matches!(Formula::of(counter_type), Ok(Formula::Differenced(_)))
}

/// The suffix a counter type's value is displayed with, from its `PERF_DISPLAY_*` field:
/// `"/sec"`, `"%"`, `"s"`, or `""` (no suffix, and for types not displayed).
///
/// # Examples
///
/// ```
/// use prfmon::pdh::formula::unit;
/// use prfdata_wire::winperf::*;
///
/// assert_eq!(unit(PERF_COUNTER_COUNTER), "/sec");
/// assert_eq!(unit(PERF_100NSEC_TIMER), "%");
/// assert_eq!(unit(PERF_ELAPSED_TIME), "s");
/// assert_eq!(unit(PERF_COUNTER_RAWCOUNT), "");
/// ```
pub fn unit(counter_type: u32) -> &'static str {
    match counter_type & PERF_DISPLAY_MASK {
        PERF_DISPLAY_PER_SEC => "/sec",
        PERF_DISPLAY_PERCENT => "%",
        PERF_DISPLAY_SECONDS => "s",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_wire::winperf::*;

    /// 10 MHz, the system timer frequency on this platform (`prfdata::clock::PERF_FREQUENCY`).
    const F: i64 = 10_000_000;

    fn fmt(prev: &RawSample, cur: &RawSample) -> Result<f64, NoValue> {
        format(Some(prev), cur, FormatOptions::default())
    }

    fn uncapped(prev: &RawSample, cur: &RawSample) -> Result<f64, NoValue> {
        let opts = FormatOptions {
            cap_percent: false,
            scale: None,
        };
        format(Some(prev), cur, opts)
    }

    #[track_caller]
    fn close(got: Result<f64, NoValue>, want: f64) {
        let got = got.unwrap_or_else(|e| panic!("expected {want}, got no value: {e}"));
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "expected {want}, got {got}"
        );
    }

    /// Samples of `ty` on the system timer at F.
    fn sys(ty: u32, value: i64, time: i64) -> RawSample {
        RawSample::new(ty, value).with_time(time, F)
    }

    // --- Rates: ΔN / (ΔT / F) -------------------------------------------------------------

    #[test]
    fn counter_counter() {
        // ΔN = 1500 − 1000 = 500 over ΔT = 20 000 000 ticks = 2 s at F = 10 MHz → 250/s.
        close(
            fmt(
                &sys(PERF_COUNTER_COUNTER, 1000, 0),
                &sys(PERF_COUNTER_COUNTER, 1500, 2 * F),
            ),
            250.0,
        );
    }

    #[test]
    fn sample_counter() {
        // ΔN = 30 over ΔT = 5 000 000 ticks = 0.5 s → 60 per second.
        close(
            fmt(
                &sys(PERF_SAMPLE_COUNTER, 10, F),
                &sys(PERF_SAMPLE_COUNTER, 40, F + F / 2),
            ),
            60.0,
        );
    }

    #[test]
    fn bulk_count() {
        // A 64-bit byte count: ΔN = 4 096 000 over 4 s → 1 024 000 bytes/s.
        let n0 = 10_000_000_000;
        close(
            fmt(
                &sys(PERF_COUNTER_BULK_COUNT, n0, 0),
                &sys(PERF_COUNTER_BULK_COUNT, n0 + 4_096_000, 4 * F),
            ),
            1_024_000.0,
        );
    }

    #[test]
    fn rate_uses_the_frequency() {
        // Same ΔN = 100 and ΔT = 1000 ticks, but F = 1 kHz: ΔT is 1 s → 100/s.
        let a = RawSample::new(PERF_COUNTER_COUNTER, 0).with_time(0, 1000);
        let b = RawSample::new(PERF_COUNTER_COUNTER, 100).with_time(1000, 1000);
        close(fmt(&a, &b), 100.0);
    }

    // --- Timers: 100 ΔN / ΔT ----------------------------------------------------------------

    #[test]
    fn counter_timer() {
        // Busy 2 500 000 ticks of ΔT = 10 000 000 → 100 × 0.25 = 25 %.
        close(
            fmt(
                &sys(PERF_COUNTER_TIMER, 0, 0),
                &sys(PERF_COUNTER_TIMER, 2_500_000, F),
            ),
            25.0,
        );
    }

    #[test]
    fn counter_timer_inv() {
        // Idle 7 500 000 ticks of ΔT = 10 000 000 → 100 × (1 − 0.75) = 25 % busy.
        close(
            fmt(
                &sys(PERF_COUNTER_TIMER_INV, 0, 0),
                &sys(PERF_COUNTER_TIMER_INV, 7_500_000, F),
            ),
            25.0,
        );
    }

    #[test]
    fn nsec_timer_uses_the_100ns_clock() {
        // Busy 3 000 000 × 100 ns = 0.3 s of ΔT100 = 10 000 000 (1 s) → 30 %. The system timer
        // moved differently (by 1 tick) and must not be used.
        let a = sys(PERF_100NSEC_TIMER, 0, 0).with_time_100ns(50);
        let b = sys(PERF_100NSEC_TIMER, 3_000_000, 1).with_time_100ns(50 + 10_000_000);
        close(fmt(&a, &b), 30.0);
    }

    #[test]
    fn nsec_timer_inv() {
        // Idle 0.9 s of 1 s → 100 × (1 − 0.9) = 10 %.
        let a = RawSample::new(PERF_100NSEC_TIMER_INV, 0).with_time_100ns(0);
        let b = RawSample::new(PERF_100NSEC_TIMER_INV, 9_000_000).with_time_100ns(10_000_000);
        close(fmt(&a, &b), 10.0);
    }

    #[test]
    fn obj_time_timer_uses_the_object_timer() {
        // Object timer at 1 kHz: ΔTobj = 1000 ticks (1 s), ΔN = 400 → 40 %. System timer moved
        // by 3 ticks and must not be used.
        let a = sys(PERF_OBJ_TIME_TIMER, 100, 0).with_object_time(5_000, 1_000);
        let b = sys(PERF_OBJ_TIME_TIMER, 500, 3).with_object_time(6_000, 1_000);
        close(fmt(&a, &b), 40.0);
    }

    // --- Queue lengths: ΔN / ΔT ------------------------------------------------------------

    #[test]
    fn queuelen() {
        // A queue 3 long for 10 000 000 ticks adds 3 per tick: ΔN = 30 000 000 / ΔT = 10 000 000 → 3.
        close(
            fmt(
                &sys(PERF_COUNTER_QUEUELEN_TYPE, 0, 0),
                &sys(PERF_COUNTER_QUEUELEN_TYPE, 30_000_000, F),
            ),
            3.0,
        );
    }

    #[test]
    fn large_queuelen() {
        // ΔN = 15 000 000 000 over ΔT = 10 000 000 000 ticks → 1.5 (a 64-bit numerator).
        let n0 = 1_i64 << 40;
        close(
            fmt(
                &sys(PERF_COUNTER_LARGE_QUEUELEN_TYPE, n0, 0),
                &sys(
                    PERF_COUNTER_LARGE_QUEUELEN_TYPE,
                    n0 + 15_000_000_000,
                    1000 * F,
                ),
            ),
            1.5,
        );
    }

    #[test]
    fn queuelen_100ns() {
        // ΔN = 5 000 000 over ΔT100 = 2 000 000 → 2.5.
        let a = RawSample::new(PERF_COUNTER_100NS_QUEUELEN_TYPE, 0).with_time_100ns(0);
        let b =
            RawSample::new(PERF_COUNTER_100NS_QUEUELEN_TYPE, 5_000_000).with_time_100ns(2_000_000);
        close(fmt(&a, &b), 2.5);
    }

    #[test]
    fn queuelen_obj_time() {
        // ΔN = 1500 over ΔTobj = 1000 → 1.5.
        let a = RawSample::new(PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, 0).with_object_time(0, 1000);
        let b =
            RawSample::new(PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, 1500).with_object_time(1000, 1000);
        close(fmt(&a, &b), 1.5);
    }

    // --- Fractions and averages ------------------------------------------------------------

    #[test]
    fn raw_fraction_needs_one_sample() {
        // N = 3, B = 4 → 100 × 3 / 4 = 75 %, with no previous sample.
        let s = RawSample::new(PERF_RAW_FRACTION, 3).with_base(4);
        close(format(None, &s, FormatOptions::default()), 75.0);
    }

    #[test]
    fn large_raw_fraction() {
        // N = 2³³, B = 2³⁵ → 100 × 1/4 = 25 %.
        let s = RawSample::new(PERF_LARGE_RAW_FRACTION, 1 << 33).with_base(1 << 35);
        close(format(None, &s, FormatOptions::default()), 25.0);
    }

    #[test]
    fn sample_fraction() {
        // ΔN = 40 − 10 = 30 hits of ΔB = 160 − 100 = 60 lookups → 50 %.
        let a = RawSample::new(PERF_SAMPLE_FRACTION, 10).with_base(100);
        let b = RawSample::new(PERF_SAMPLE_FRACTION, 40).with_base(160);
        close(fmt(&a, &b), 50.0);
    }

    #[test]
    fn average_timer() {
        // ΔN = 5 000 000 ticks = 0.5 s at 10 MHz, over ΔB = 20 operations → 0.025 s each.
        let a = sys(PERF_AVERAGE_TIMER, 1_000, 0).with_base(7);
        let b = sys(PERF_AVERAGE_TIMER, 5_001_000, F).with_base(27);
        close(fmt(&a, &b), 0.025);
    }

    #[test]
    fn average_bulk() {
        // ΔN = 8192 bytes over ΔB = 4 transfers → 2048 bytes per transfer.
        let a = RawSample::new(PERF_AVERAGE_BULK, 1 << 40).with_base(10);
        let b = RawSample::new(PERF_AVERAGE_BULK, (1 << 40) + 8192).with_base(14);
        close(fmt(&a, &b), 2048.0);
    }

    #[test]
    fn elapsed_time_needs_one_sample() {
        // Object time 50 000 000 at 10 MHz, started at 20 000 000 → 30 000 000 / 10 MHz = 3 s.
        let s = RawSample::new(PERF_ELAPSED_TIME, 20_000_000).with_object_time(50_000_000, F);
        close(format(None, &s, FormatOptions::default()), 3.0);
    }

    /// NT's convention, as prfdata's provider follows it: FILETIME start and object clock.
    #[test]
    fn elapsed_time_from_filetimes() {
        use prfdata_wire::filetime::{of as filetime, OBJECT_FREQUENCY};
        use std::time::{Duration, UNIX_EPOCH};
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let now = start + Duration::from_millis(86_400_500);
        let s = RawSample::new(PERF_ELAPSED_TIME, filetime(start))
            .with_object_time(filetime(now), OBJECT_FREQUENCY);
        close(format(None, &s, FormatOptions::default()), 86_400.5);
    }

    #[test]
    fn elapsed_time_in_the_future_has_no_value() {
        // Started at 60 with the object's time at 50: −10 ticks.
        let s = RawSample::new(PERF_ELAPSED_TIME, 60).with_object_time(50, F);
        assert_eq!(
            format(None, &s, FormatOptions::default()),
            Err(NoValue::NegativeElapsed { ticks: -10 })
        );
    }

    // --- Deltas and raw counts -------------------------------------------------------------

    #[test]
    fn counter_delta() {
        // N 7 → 12: ΔN = 5.
        close(
            fmt(
                &RawSample::new(PERF_COUNTER_DELTA, 7),
                &RawSample::new(PERF_COUNTER_DELTA, 12),
            ),
            5.0,
        );
    }

    #[test]
    fn large_delta() {
        // N 2⁴⁰ → 2⁴⁰ + 9: ΔN = 9.
        let a = RawSample::new(PERF_COUNTER_LARGE_DELTA, 1 << 40);
        let b = RawSample::new(PERF_COUNTER_LARGE_DELTA, (1 << 40) + 9);
        close(fmt(&a, &b), 9.0);
    }

    #[test]
    fn rawcounts() {
        let one = |ty, n| format(None, &RawSample::new(ty, n), FormatOptions::default());
        // N as is: 42; hex types are the same number (only the display base differs).
        close(one(PERF_COUNTER_RAWCOUNT, 42), 42.0);
        close(one(PERF_COUNTER_RAWCOUNT_HEX, 0xFF), 255.0);
        close(
            one(PERF_COUNTER_LARGE_RAWCOUNT, 1 << 40),
            1_099_511_627_776.0,
        );
        close(
            one(PERF_COUNTER_LARGE_RAWCOUNT_HEX, 0x1_0000_0000),
            4_294_967_296.0,
        );
        // A DWORD is unsigned: 0xFFFF_FFFF, zero- or sign-extended, is 4 294 967 295.
        close(one(PERF_COUNTER_RAWCOUNT, 0xFFFF_FFFF), 4_294_967_295.0);
        close(one(PERF_COUNTER_RAWCOUNT, -1), 4_294_967_295.0);
    }

    // --- Multi timers: B is the number of items --------------------------------------------

    #[test]
    fn multi_timer() {
        // 4 CPUs busy 20 000 000 ticks in all over ΔT = 10 000 000: 100 × 2 / 4 = 50 %.
        let a = sys(PERF_COUNTER_MULTI_TIMER, 0, 0).with_base(4);
        let b = sys(PERF_COUNTER_MULTI_TIMER, 20_000_000, F).with_base(4);
        close(fmt(&a, &b), 50.0);
    }

    #[test]
    fn multi_timer_inv() {
        // 4 items idle 35 000 000 ticks in all over 10 000 000: 100 × (4 − 3.5) = 50 %.
        let a = sys(PERF_COUNTER_MULTI_TIMER_INV, 0, 0).with_base(4);
        let b = sys(PERF_COUNTER_MULTI_TIMER_INV, 35_000_000, F).with_base(4);
        close(fmt(&a, &b), 50.0);
        // Idle 10 000 000 in all: 100 × (4 − 1) = 300 %, capped to 100 by default.
        let b = sys(PERF_COUNTER_MULTI_TIMER_INV, 10_000_000, F).with_base(4);
        close(fmt(&a, &b), 100.0);
        close(uncapped(&a, &b), 300.0);
    }

    #[test]
    fn nsec_multi_timer() {
        // 2 items busy 1 s in all of 1 s (100 ns units): 100 × 1 / 2 = 50 %.
        let a = RawSample::new(PERF_100NSEC_MULTI_TIMER, 0)
            .with_base(2)
            .with_time_100ns(0);
        let b = RawSample::new(PERF_100NSEC_MULTI_TIMER, 10_000_000)
            .with_base(2)
            .with_time_100ns(10_000_000);
        close(fmt(&a, &b), 50.0);
    }

    #[test]
    fn nsec_multi_timer_inv() {
        // 2 items idle 1.5 s in all of 1 s: 100 × (2 − 1.5) = 50 %.
        let a = RawSample::new(PERF_100NSEC_MULTI_TIMER_INV, 0)
            .with_base(2)
            .with_time_100ns(0);
        let b = RawSample::new(PERF_100NSEC_MULTI_TIMER_INV, 15_000_000)
            .with_base(2)
            .with_time_100ns(10_000_000);
        close(fmt(&a, &b), 50.0);
    }

    #[test]
    fn multi_timer_uses_the_current_base() {
        // The item count went from 2 to 4: the current one divides. ΔN/ΔT = 2 → 100 × 2 / 4 = 50 %.
        let a = sys(PERF_COUNTER_MULTI_TIMER, 0, 0).with_base(2);
        let b = sys(PERF_COUNTER_MULTI_TIMER, 20_000_000, F).with_base(4);
        close(fmt(&a, &b), 50.0);
    }

    #[test]
    fn multi_timer_with_no_items_has_no_value() {
        let a = sys(PERF_COUNTER_MULTI_TIMER, 0, 0).with_base(0);
        let b = sys(PERF_COUNTER_MULTI_TIMER, 1, F).with_base(0);
        assert_eq!(fmt(&a, &b), Err(NoValue::BadBase { base: 0 }));
    }

    // --- Precision timers: the base is the provider's time stamp ---------------------------

    #[test]
    fn precision_timers() {
        // Busy ΔN = 600 of the time stamp's ΔB = 2000 − 1000 = 1000 → 60 %, whatever the
        // collection's clocks did (they stand still here).
        for ty in [
            PERF_PRECISION_SYSTEM_TIMER,
            PERF_PRECISION_100NS_TIMER,
            PERF_PRECISION_OBJECT_TIMER,
        ] {
            let a = RawSample::new(ty, 0).with_base(1000);
            let b = RawSample::new(ty, 600).with_base(2000);
            close(fmt(&a, &b), 60.0);
        }
    }

    #[test]
    fn precision_timer_with_a_time_stamp_that_went_back_has_no_value() {
        let a = RawSample::new(PERF_PRECISION_100NS_TIMER, 0).with_base(2000);
        let b = RawSample::new(PERF_PRECISION_100NS_TIMER, 600).with_base(1000);
        assert_eq!(fmt(&a, &b), Err(NoValue::BaseNotAdvanced { delta: -1000 }));
    }

    // --- Wrap-around -------------------------------------------------------------------------

    #[test]
    fn dword_counter_wraps_modulo_2_32() {
        // 0xFFFF_FF00 → 0x0000_0100: ΔN = 0x100 + 0x100 = 512 over 1 s → 512/s.
        let a = sys(PERF_COUNTER_COUNTER, 0xFFFF_FF00, 0);
        let b = sys(PERF_COUNTER_COUNTER, 0x0000_0100, F);
        close(fmt(&a, &b), 512.0);
        // The same when the DWORD was sign-extended (−256 is 0xFFFF_FF00).
        close(fmt(&sys(PERF_COUNTER_COUNTER, -256, 0), &b), 512.0);
    }

    #[test]
    fn dword_base_wraps_modulo_2_32() {
        // B 0xFFFF_FFF0 → 0x10: ΔB = 16 + 16 = 32; ΔN = 16 → 100 × 16 / 32 = 50 %.
        let a = RawSample::new(PERF_SAMPLE_FRACTION, 0).with_base(0xFFFF_FFF0);
        let b = RawSample::new(PERF_SAMPLE_FRACTION, 16).with_base(0x10);
        close(fmt(&a, &b), 50.0);
    }

    #[test]
    fn average_timer_wraps() {
        // N 0xFFFF_0000 → 0x0001_0000: ΔN = 0x2_0000 = 131 072 ticks = 0.013 107 2 s; ΔB = 1.
        let a = sys(PERF_AVERAGE_TIMER, 0xFFFF_0000, 0).with_base(5);
        let b = sys(PERF_AVERAGE_TIMER, 0x0001_0000, F).with_base(6);
        close(fmt(&a, &b), 0.013_107_2);
    }

    #[test]
    fn dword_delta_wraps() {
        // COUNTER_DELTA 0xFFFF_FFFF → 4: ΔN = 5.
        let a = RawSample::new(PERF_COUNTER_DELTA, 0xFFFF_FFFF);
        close(fmt(&a, &RawSample::new(PERF_COUNTER_DELTA, 4)), 5.0);
    }

    #[test]
    fn large_counter_that_went_back_has_no_value() {
        // A 64-bit counter does not wrap: 1000 → 500 is a reset.
        let a = sys(PERF_COUNTER_BULK_COUNT, 1000, 0);
        let b = sys(PERF_COUNTER_BULK_COUNT, 500, F);
        assert_eq!(fmt(&a, &b), Err(NoValue::CounterWentBack { delta: -500 }));
        let a = RawSample::new(PERF_COUNTER_LARGE_DELTA, 10);
        let b = RawSample::new(PERF_COUNTER_LARGE_DELTA, 9);
        assert_eq!(fmt(&a, &b), Err(NoValue::CounterWentBack { delta: -1 }));
    }

    // --- Caps and floors ---------------------------------------------------------------------

    #[test]
    fn percentages_are_capped_unless_asked() {
        // 12 000 000 busy of 10 000 000 → 120 %, capped to 100.
        let a = sys(PERF_COUNTER_TIMER, 0, 0);
        let b = sys(PERF_COUNTER_TIMER, 12_000_000, F);
        close(fmt(&a, &b), 100.0);
        close(uncapped(&a, &b), 120.0);
        // 100 × 5 / 4 = 125 % → 100.
        let s = RawSample::new(PERF_RAW_FRACTION, 5).with_base(4);
        close(format(None, &s, FormatOptions::default()), 100.0);
    }

    #[test]
    fn rates_are_not_capped() {
        // 1000/s is not a percentage.
        close(
            fmt(
                &sys(PERF_COUNTER_COUNTER, 0, 0),
                &sys(PERF_COUNTER_COUNTER, 1000, F),
            ),
            1000.0,
        );
    }

    #[test]
    fn inverse_timers_are_floored_at_zero() {
        // Idle 11 000 000 of 10 000 000 (skew) → 100 × (1 − 1.1) = −10 → 0, capped or not.
        let a = sys(PERF_COUNTER_TIMER_INV, 0, 0);
        let b = sys(PERF_COUNTER_TIMER_INV, 11_000_000, F);
        close(fmt(&a, &b), 0.0);
        close(uncapped(&a, &b), 0.0);
        // 2 items idle 2.5 in all: 100 × (2 − 2.5) = −50 → 0.
        let a = sys(PERF_COUNTER_MULTI_TIMER_INV, 0, 0).with_base(2);
        let b = sys(PERF_COUNTER_MULTI_TIMER_INV, 25_000_000, F).with_base(2);
        close(uncapped(&a, &b), 0.0);
    }

    // --- Zero and negative deltas ------------------------------------------------------------

    #[test]
    fn zero_or_negative_time_delta_has_no_value() {
        let a = sys(PERF_COUNTER_COUNTER, 0, F);
        assert_eq!(
            fmt(&a, &sys(PERF_COUNTER_COUNTER, 5, F)),
            Err(NoValue::TimeNotAdvanced {
                clock: Clock::System,
                delta: 0
            })
        );
        assert_eq!(
            fmt(&a, &sys(PERF_COUNTER_COUNTER, 5, F - 5)),
            Err(NoValue::TimeNotAdvanced {
                clock: Clock::System,
                delta: -5
            })
        );
        let a = RawSample::new(PERF_100NSEC_TIMER, 0).with_time_100ns(7);
        let b = RawSample::new(PERF_100NSEC_TIMER, 1).with_time_100ns(7);
        assert_eq!(
            fmt(&a, &b),
            Err(NoValue::TimeNotAdvanced {
                clock: Clock::Ns100,
                delta: 0
            })
        );
        let a = RawSample::new(PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, 0).with_object_time(7, 1);
        assert_eq!(
            fmt(&a, &a),
            Err(NoValue::TimeNotAdvanced {
                clock: Clock::Object,
                delta: 0
            })
        );
    }

    #[test]
    fn zero_base_delta_has_no_value() {
        let a = RawSample::new(PERF_SAMPLE_FRACTION, 1).with_base(10);
        let b = RawSample::new(PERF_SAMPLE_FRACTION, 2).with_base(10);
        assert_eq!(fmt(&a, &b), Err(NoValue::BaseNotAdvanced { delta: 0 }));
        let a = sys(PERF_AVERAGE_TIMER, 1, 0).with_base(3);
        let b = sys(PERF_AVERAGE_TIMER, 2, F).with_base(3);
        assert_eq!(fmt(&a, &b), Err(NoValue::BaseNotAdvanced { delta: 0 }));
        let a = RawSample::new(PERF_AVERAGE_BULK, 1).with_base(3);
        assert_eq!(fmt(&a, &a), Err(NoValue::BaseNotAdvanced { delta: 0 }));
    }

    #[test]
    fn zero_raw_base_has_no_value() {
        let s = RawSample::new(PERF_RAW_FRACTION, 1).with_base(0);
        assert_eq!(
            format(None, &s, FormatOptions::default()),
            Err(NoValue::BadBase { base: 0 })
        );
    }

    #[test]
    fn zero_frequency_has_no_value() {
        let a = RawSample::new(PERF_COUNTER_COUNTER, 0).with_time(0, 0);
        let b = RawSample::new(PERF_COUNTER_COUNTER, 1).with_time(1, 0);
        assert_eq!(
            fmt(&a, &b),
            Err(NoValue::BadFrequency {
                clock: Clock::System,
                freq: 0
            })
        );
        let s = RawSample::new(PERF_ELAPSED_TIME, 0).with_object_time(10, 0);
        assert_eq!(
            format(None, &s, FormatOptions::default()),
            Err(NoValue::BadFrequency {
                clock: Clock::Object,
                freq: 0
            })
        );
    }

    // --- Other reasons for no value ----------------------------------------------------------

    #[test]
    fn first_sample_of_a_two_sample_type_has_no_value() {
        for ty in [
            PERF_COUNTER_COUNTER,
            PERF_AVERAGE_TIMER,
            PERF_AVERAGE_BULK,
            PERF_COUNTER_DELTA,
        ] {
            let s = sys(ty, 1, F).with_base(1);
            assert_eq!(
                format(None, &s, FormatOptions::default()),
                Err(NoValue::FirstSample { counter_type: ty })
            );
        }
    }

    #[test]
    fn missing_base_has_no_value() {
        let a = RawSample::new(PERF_SAMPLE_FRACTION, 1);
        let b = RawSample::new(PERF_SAMPLE_FRACTION, 2);
        assert_eq!(
            fmt(&a, &b),
            Err(NoValue::MissingBase {
                counter_type: PERF_SAMPLE_FRACTION
            })
        );
    }

    #[test]
    fn changed_type_has_no_value() {
        let a = sys(PERF_COUNTER_COUNTER, 1, 0);
        let b = sys(PERF_COUNTER_BULK_COUNT, 2, F);
        assert_eq!(
            fmt(&a, &b),
            Err(NoValue::TypeChanged {
                previous: PERF_COUNTER_COUNTER,
                current: PERF_COUNTER_BULK_COUNT
            })
        );
    }

    #[test]
    fn nodata_text_and_bases_have_no_value() {
        for ty in [
            PERF_COUNTER_NODATA,
            PERF_COUNTER_TEXT,
            PERF_AVERAGE_BASE,
            PERF_SAMPLE_BASE,
            PERF_RAW_BASE,
            PERF_LARGE_RAW_BASE,
            PERF_COUNTER_MULTI_BASE,
        ] {
            let s = RawSample::new(ty, 1).with_base(1);
            assert_eq!(
                format(Some(&s), &s, FormatOptions::default()),
                Err(NoValue::NoData { counter_type: ty })
            );
        }
        let s = RawSample::new(0x1234_5678, 1);
        let err = format(None, &s, FormatOptions::default()).unwrap_err();
        assert_eq!(
            err,
            NoValue::UnknownType {
                counter_type: 0x1234_5678
            }
        );
        assert_eq!(
            err.to_string(),
            "counter type 0x12345678 is not a winperf.h counter type"
        );
    }

    #[test]
    fn messages_name_what_is_wrong() {
        assert_eq!(
            NoValue::TimeNotAdvanced {
                clock: Clock::System,
                delta: 0
            }
            .to_string(),
            "the system timer (PerfTime) moved by 0 ticks between the samples; it must advance"
        );
        assert_eq!(
            NoValue::CounterWentBack { delta: -500 }.to_string(),
            "the 64-bit counter went back by 500 between the samples (reset?)"
        );
        assert_eq!(
            NoValue::MissingBase {
                counter_type: PERF_AVERAGE_TIMER
            }
            .to_string(),
            "PERF_AVERAGE_TIMER needs the value of its base counter; the sample has none"
        );
    }

    // --- Scale, units, sample count ----------------------------------------------------------

    #[test]
    fn scale_applies_after_the_cap() {
        // 120 % → capped 100 → × 10⁻¹ = 10.
        let a = sys(PERF_COUNTER_TIMER, 0, 0);
        let b = sys(PERF_COUNTER_TIMER, 12_000_000, F);
        let opts = FormatOptions {
            cap_percent: true,
            scale: Some(-1),
        };
        close(format(Some(&a), &b, opts), 10.0);
        // 42 × 10² = 4200.
        let s = RawSample::new(PERF_COUNTER_RAWCOUNT, 42);
        let opts = FormatOptions {
            cap_percent: true,
            scale: Some(2),
        };
        close(format(None, &s, opts), 4200.0);
    }

    #[test]
    fn scaled_is_a_power_of_ten() {
        assert_eq!(scaled(42.0, 0), 42.0);
        assert_eq!(scaled(42.0, 1), 420.0);
        assert_eq!(scaled(42.0, -1), 4.2);
        assert_eq!(scaled(7.0, -7), 0.000_000_7);
        assert_eq!(scaled(1.0, 7), 10_000_000.0);
    }

    #[test]
    fn units_follow_the_display_field() {
        for (ty, want) in [
            (PERF_COUNTER_COUNTER, "/sec"),
            (PERF_COUNTER_BULK_COUNT, "/sec"),
            (PERF_SAMPLE_COUNTER, ""),
            (PERF_COUNTER_TIMER, "%"),
            (PERF_COUNTER_MULTI_TIMER_INV, "%"),
            (PERF_PRECISION_OBJECT_TIMER, "%"),
            (PERF_SAMPLE_FRACTION, "%"),
            (PERF_AVERAGE_TIMER, "s"),
            (PERF_ELAPSED_TIME, "s"),
            (PERF_AVERAGE_BULK, ""),
            (PERF_COUNTER_QUEUELEN_TYPE, ""),
            (PERF_COUNTER_LARGE_RAWCOUNT_HEX, ""),
            (PERF_COUNTER_NODATA, ""),
        ] {
            assert_eq!(unit(ty), want, "{}", type_label(&ty));
        }
    }

    #[test]
    fn two_samples_exactly_for_the_differencing_types() {
        let one = [
            PERF_COUNTER_RAWCOUNT,
            PERF_COUNTER_RAWCOUNT_HEX,
            PERF_COUNTER_LARGE_RAWCOUNT,
            PERF_COUNTER_LARGE_RAWCOUNT_HEX,
            PERF_RAW_FRACTION,
            PERF_LARGE_RAW_FRACTION,
            PERF_ELAPSED_TIME,
        ];
        for ty in one {
            assert!(!needs_two_samples(ty), "{}", type_label(&ty));
        }
        let two = [
            PERF_COUNTER_COUNTER,
            PERF_SAMPLE_COUNTER,
            PERF_COUNTER_BULK_COUNT,
            PERF_COUNTER_TIMER,
            PERF_COUNTER_TIMER_INV,
            PERF_100NSEC_TIMER,
            PERF_100NSEC_TIMER_INV,
            PERF_OBJ_TIME_TIMER,
            PERF_COUNTER_QUEUELEN_TYPE,
            PERF_COUNTER_LARGE_QUEUELEN_TYPE,
            PERF_COUNTER_100NS_QUEUELEN_TYPE,
            PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE,
            PERF_SAMPLE_FRACTION,
            PERF_AVERAGE_TIMER,
            PERF_AVERAGE_BULK,
            PERF_COUNTER_DELTA,
            PERF_COUNTER_LARGE_DELTA,
            PERF_COUNTER_MULTI_TIMER,
            PERF_COUNTER_MULTI_TIMER_INV,
            PERF_100NSEC_MULTI_TIMER,
            PERF_100NSEC_MULTI_TIMER_INV,
            PERF_PRECISION_SYSTEM_TIMER,
            PERF_PRECISION_100NS_TIMER,
            PERF_PRECISION_OBJECT_TIMER,
        ];
        for ty in two {
            assert!(needs_two_samples(ty), "{}", type_label(&ty));
            // And format agrees: without a previous sample, no value.
            let s = sys(ty, 1, F)
                .with_base(1)
                .with_object_time(1, 1)
                .with_time_100ns(1);
            assert_eq!(
                format(None, &s, FormatOptions::default()),
                Err(NoValue::FirstSample { counter_type: ty })
            );
        }
        for ty in one {
            let s = RawSample::new(ty, 1).with_base(1).with_object_time(1, 1);
            assert!(
                format(None, &s, FormatOptions::default()).is_ok(),
                "{}",
                type_label(&ty)
            );
        }
    }

    // --- Properties --------------------------------------------------------------------------

    /// Every composed winperf.h type, formatted or not.
    const ALL_TYPES: [u32; 38] = [
        PERF_COUNTER_COUNTER,
        PERF_COUNTER_TIMER,
        PERF_COUNTER_QUEUELEN_TYPE,
        PERF_COUNTER_LARGE_QUEUELEN_TYPE,
        PERF_COUNTER_100NS_QUEUELEN_TYPE,
        PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE,
        PERF_COUNTER_BULK_COUNT,
        PERF_COUNTER_TEXT,
        PERF_COUNTER_RAWCOUNT,
        PERF_COUNTER_LARGE_RAWCOUNT,
        PERF_COUNTER_RAWCOUNT_HEX,
        PERF_COUNTER_LARGE_RAWCOUNT_HEX,
        PERF_SAMPLE_FRACTION,
        PERF_SAMPLE_COUNTER,
        PERF_COUNTER_NODATA,
        PERF_COUNTER_TIMER_INV,
        PERF_SAMPLE_BASE,
        PERF_AVERAGE_TIMER,
        PERF_AVERAGE_BASE,
        PERF_AVERAGE_BULK,
        PERF_OBJ_TIME_TIMER,
        PERF_100NSEC_TIMER,
        PERF_100NSEC_TIMER_INV,
        PERF_COUNTER_MULTI_TIMER,
        PERF_COUNTER_MULTI_TIMER_INV,
        PERF_COUNTER_MULTI_BASE,
        PERF_100NSEC_MULTI_TIMER,
        PERF_100NSEC_MULTI_TIMER_INV,
        PERF_RAW_FRACTION,
        PERF_LARGE_RAW_FRACTION,
        PERF_RAW_BASE,
        PERF_LARGE_RAW_BASE,
        PERF_ELAPSED_TIME,
        PERF_COUNTER_DELTA,
        PERF_COUNTER_LARGE_DELTA,
        PERF_PRECISION_SYSTEM_TIMER,
        PERF_PRECISION_100NS_TIMER,
        PERF_PRECISION_OBJECT_TIMER,
    ];

    fn sample() -> impl proptest::strategy::Strategy<Value = RawSample> {
        use proptest::prelude::*;
        (
            (any::<i64>(), proptest::option::of(any::<i64>())),
            (any::<i64>(), any::<i64>(), any::<i64>()),
            (any::<i64>(), any::<i64>()),
        )
            .prop_map(
                |((value, base), (time, freq, time_100ns), (object_time, object_freq))| RawSample {
                    counter_type: 0,
                    value,
                    base,
                    time,
                    freq,
                    time_100ns,
                    object_time,
                    object_freq,
                },
            )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, ..Default::default() })]

        /// Whatever the raw numbers, a value is finite, a percentage is within [0, 100] when
        /// capped, and no input divides by zero or panics.
        #[test]
        fn values_are_finite_and_percentages_capped(
            ty in proptest::sample::select(&ALL_TYPES[..]),
            prev in sample(),
            cur in sample(),
        ) {
            let prev = RawSample { counter_type: ty, ..prev };
            let cur = RawSample { counter_type: ty, ..cur };
            if let Ok(v) = format(Some(&prev), &cur, FormatOptions::default()) {
                proptest::prop_assert!(v.is_finite(), "{} gave {}", type_label(&ty), v);
                if unit(ty) == "%" {
                    proptest::prop_assert!(v <= 100.0, "{} gave {}", type_label(&ty), v);
                }
                if ty & PERF_INVERSE_COUNTER != 0 {
                    proptest::prop_assert!(v >= 0.0, "{} gave {}", type_label(&ty), v);
                }
            }
        }
    }
}

//! winperf.h: the perflib wire structures, the counter-type bit fields and the composed types.
//!
//! The bit fields come from `windows-sys` (which compiles on every target); the composed counter
//! types (`PERF_COUNTER_COUNTER` and friends) are macros in winperf.h that `windows-sys` does not
//! carry, so they are composed here from the bit fields exactly as winperf.h composes them, and
//! the unit tests at the end of this file check each against its documented hexadecimal value.
//!
//! The wire structures are the x64 layouts (on `_WIN64` the title pointers are DWORDs) as they
//! lie in the bytes: little-endian fields (`zerocopy::little_endian`) with no alignment, so a
//! reference into a buffer is valid at any offset (a Windows provider's objects are only
//! DWORD-aligned) and a field read is one load. Their sizes and field offsets are checked at
//! compile time against winperf.h and against `windows-sys`' own declarations:
//!
//! ```text
//! PERF_DATA_BLOCK           88 bytes   one per collection
//! └ PERF_OBJECT_TYPE        64 bytes   one per object
//!   ├ PERF_COUNTER_DEFINITION 40 bytes one per counter
//!   ├ PERF_COUNTER_BLOCK      4 bytes  (objects without instances) + counter values
//!   └ PERF_INSTANCE_DEFINITION 24 bytes + UTF-16 name, then a PERF_COUNTER_BLOCK, per instance
//! ```
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::winperf::{self, PERF_COUNTER_COUNTER};
//!
//! assert_eq!(PERF_COUNTER_COUNTER, 0x1041_0400);
//! assert_eq!(winperf::counter_size(PERF_COUNTER_COUNTER), Some(4));
//! assert!(winperf::is_differentiated(PERF_COUNTER_COUNTER));
//! ```

use core::mem::{offset_of, size_of};
use windows_sys::Win32::System::Performance as ws;
// The little-endian field types of the wire structures, for the users that build them.
pub use zerocopy::little_endian::{I32, I64, U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

// ---------------------------------------------------------------------------------------------
// Bit fields (winperf.h), re-exported from windows-sys.
// ---------------------------------------------------------------------------------------------

pub use ws::{
    PERF_COUNTER_BASE, PERF_COUNTER_ELAPSED, PERF_COUNTER_FRACTION, PERF_COUNTER_HISTOGRAM,
    PERF_COUNTER_HISTOGRAM_TYPE, PERF_COUNTER_PRECISION, PERF_COUNTER_QUEUELEN, PERF_COUNTER_RATE,
    PERF_COUNTER_VALUE, PERF_DELTA_BASE, PERF_DELTA_COUNTER, PERF_DISPLAY_NOSHOW,
    PERF_DISPLAY_NO_SUFFIX, PERF_DISPLAY_PERCENT, PERF_DISPLAY_PER_SEC, PERF_DISPLAY_SECONDS,
    PERF_INVERSE_COUNTER, PERF_MULTI_COUNTER, PERF_NO_INSTANCES, PERF_NO_UNIQUE_ID,
    PERF_NUMBER_DECIMAL, PERF_NUMBER_DEC_1000, PERF_NUMBER_HEX, PERF_OBJECT_TIMER, PERF_SIZE_DWORD,
    PERF_SIZE_LARGE, PERF_SIZE_VARIABLE_LEN, PERF_SIZE_ZERO, PERF_TEXT_ASCII, PERF_TEXT_UNICODE,
    PERF_TIMER_100NS, PERF_TIMER_TICK, PERF_TYPE_COUNTER, PERF_TYPE_NUMBER, PERF_TYPE_TEXT,
    PERF_TYPE_ZERO,
};

/// Mask of the size field (`PERF_SIZE_*`) of a counter type.
pub const PERF_SIZE_MASK: u32 = 0x0000_0300;
/// Mask of the type field (`PERF_TYPE_*`) of a counter type.
pub const PERF_TYPE_MASK: u32 = 0x0000_0C00;
/// Mask of the subtype field (`PERF_COUNTER_*`, `PERF_NUMBER_*`, `PERF_TEXT_*`).
pub const PERF_SUBTYPE_MASK: u32 = 0x000F_0000;
/// Mask of the timer base field (`PERF_TIMER_TICK`, `PERF_TIMER_100NS`, `PERF_OBJECT_TIMER`).
pub const PERF_TIMER_MASK: u32 = 0x0030_0000;
/// Mask of the display suffix field (`PERF_DISPLAY_*`).
pub const PERF_DISPLAY_MASK: u32 = 0xF000_0000;

/// Detail level: a counter anyone can understand.
pub const PERF_DETAIL_NOVICE: u32 = ws::PERF_DETAIL_NOVICE;
/// Detail level: for the advanced user.
pub const PERF_DETAIL_ADVANCED: u32 = ws::PERF_DETAIL_ADVANCED;
/// Detail level: for the expert user.
pub const PERF_DETAIL_EXPERT: u32 = ws::PERF_DETAIL_EXPERT;
/// Detail level: for the system designer.
pub const PERF_DETAIL_WIZARD: u32 = ws::PERF_DETAIL_WIZARD;

/// Windows 95 perf.h `PSTF_FUNCPTR`: the stat's value is computed on request. In a
/// block's counter record: an on-demand counter.
pub const PSTF_FUNCPTR: u32 = 0x0000_0001;
/// Windows 95 perf.h `PSTF_FACTOR_MULTIPLY`: displayed values are multiplied by the
/// stat's scale factor.
pub const PSTF_FACTOR_MULTIPLY: u32 = 0x0000_0040;
/// Windows 95 perf.h `PSTF_FACTOR_DIVIDE`: displayed values are divided by the
/// stat's scale factor.
pub const PSTF_FACTOR_DIVIDE: u32 = 0x0000_0080;
/// Windows 95 perf.h `PSTF_COMPLEX`: the stat is the sum of other stats.
pub const PSTF_COMPLEX: u32 = 0x0000_0100;
/// Windows 95 perf.h `MAXCOMPLEXSUBSTAT`: the most stats a complex stat sums.
pub const MAXCOMPLEXSUBSTAT: usize = 8;

/// Collect returned because the buffer was too small (winerror.h `ERROR_MORE_DATA`).
pub const ERROR_MORE_DATA: u32 = 234;
/// Success (winerror.h `ERROR_SUCCESS`).
pub const ERROR_SUCCESS: u32 = 0;

// ---------------------------------------------------------------------------------------------
// Composed counter types, exactly as winperf.h composes them.
// ---------------------------------------------------------------------------------------------

/// A count per second: 32-bit, ΔN / ΔT (system timer).
pub const PERF_COUNTER_COUNTER: u32 = PERF_SIZE_DWORD
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PER_SEC;
/// Percentage of time busy: 64-bit, ΔN / ΔT (system timer).
pub const PERF_COUNTER_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Queue length × time, 32-bit: average queue length over the interval.
pub const PERF_COUNTER_QUEUELEN_TYPE: u32 = PERF_SIZE_DWORD
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_QUEUELEN
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_NO_SUFFIX;
/// Queue length × time, 64-bit.
pub const PERF_COUNTER_LARGE_QUEUELEN_TYPE: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_QUEUELEN
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_NO_SUFFIX;
/// Queue length × time in 100 ns units, 64-bit.
pub const PERF_COUNTER_100NS_QUEUELEN_TYPE: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_QUEUELEN
    | PERF_TIMER_100NS
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_NO_SUFFIX;
/// Queue length × time against the object's own timer, 64-bit.
pub const PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_QUEUELEN
    | PERF_OBJECT_TIMER
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_NO_SUFFIX;
/// A count per second: 64-bit (bytes, operations in bulk).
pub const PERF_COUNTER_BULK_COUNT: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PER_SEC;
/// Unicode text of variable length.
pub const PERF_COUNTER_TEXT: u32 =
    PERF_SIZE_VARIABLE_LEN | PERF_TYPE_TEXT | PERF_TEXT_UNICODE | PERF_DISPLAY_NO_SUFFIX;
/// An instantaneous 32-bit value, shown as is.
pub const PERF_COUNTER_RAWCOUNT: u32 =
    PERF_SIZE_DWORD | PERF_TYPE_NUMBER | PERF_NUMBER_DECIMAL | PERF_DISPLAY_NO_SUFFIX;
/// An instantaneous 64-bit value, shown as is.
pub const PERF_COUNTER_LARGE_RAWCOUNT: u32 =
    PERF_SIZE_LARGE | PERF_TYPE_NUMBER | PERF_NUMBER_DECIMAL | PERF_DISPLAY_NO_SUFFIX;
/// An instantaneous 32-bit value, shown in hexadecimal.
pub const PERF_COUNTER_RAWCOUNT_HEX: u32 =
    PERF_SIZE_DWORD | PERF_TYPE_NUMBER | PERF_NUMBER_HEX | PERF_DISPLAY_NO_SUFFIX;
/// An instantaneous 64-bit value, shown in hexadecimal.
pub const PERF_COUNTER_LARGE_RAWCOUNT_HEX: u32 =
    PERF_SIZE_LARGE | PERF_TYPE_NUMBER | PERF_NUMBER_HEX | PERF_DISPLAY_NO_SUFFIX;
/// A percentage from two deltas: 100 ΔN / ΔB, with a [`PERF_SAMPLE_BASE`] after it.
pub const PERF_SAMPLE_FRACTION: u32 = PERF_SIZE_DWORD
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_FRACTION
    | PERF_DELTA_COUNTER
    | PERF_DELTA_BASE
    | PERF_DISPLAY_PERCENT;
/// A count per second, 32-bit, shown without the "/sec" suffix.
pub const PERF_SAMPLE_COUNTER: u32 = PERF_SIZE_DWORD
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_NO_SUFFIX;
/// A label with no data.
pub const PERF_COUNTER_NODATA: u32 = PERF_SIZE_ZERO | PERF_DISPLAY_NOSHOW;
/// prfdata's histogram buckets (not a winperf.h type): the third definition of a histogram,
/// after its sum (a named [`PERF_AVERAGE_BULK`]) and its count (a [`PERF_AVERAGE_BASE`]). Its
/// value is a descriptor (prfdata-rules' `histogram::Descriptor`) then one 64-bit count per
/// bucket, and its `CounterSize` is that length: winperf.h's `PERF_SIZE_VARIABLE_LEN` says the
/// definition carries the size, as for text. Composed so that no NT tool reads a number from it:
///
/// - `PERF_TYPE_ZERO`: winperf.h's "a zero value", so a tool walking the definitions computes
///   nothing from the words;
/// - `PERF_DISPLAY_NOSHOW`, and a name index of 0 in every block prfdata writes, so no counter
///   path reaches it ("How a performance DLL interfaces with a monitor": a monitor lists the
///   counters by their name index);
/// - `PERF_COUNTER_HISTOGRAM_TYPE`: winperf.h's "counter begins or ends a histogram" bit, which
///   no NT formula uses, marks it for prfdata's consumers.
pub const PERF_PRFDATA_HISTOGRAM: u32 =
    PERF_SIZE_VARIABLE_LEN | PERF_TYPE_ZERO | PERF_DISPLAY_NOSHOW | PERF_COUNTER_HISTOGRAM_TYPE;
/// Percentage of time idle, shown as busy: 100 (1 − ΔN/ΔT), 64-bit.
pub const PERF_COUNTER_TIMER_INV: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_INVERSE_COUNTER
    | PERF_DISPLAY_PERCENT;
/// The base of a [`PERF_SAMPLE_FRACTION`].
pub const PERF_SAMPLE_BASE: u32 =
    PERF_SIZE_DWORD | PERF_TYPE_COUNTER | PERF_COUNTER_BASE | PERF_DISPLAY_NOSHOW | 0x0000_0001;
/// Average time per operation: (ΔN / F) / ΔB seconds, with a [`PERF_AVERAGE_BASE`] after it.
pub const PERF_AVERAGE_TIMER: u32 =
    PERF_SIZE_DWORD | PERF_TYPE_COUNTER | PERF_COUNTER_FRACTION | PERF_DISPLAY_SECONDS;
/// The base of a [`PERF_AVERAGE_TIMER`] or [`PERF_AVERAGE_BULK`].
pub const PERF_AVERAGE_BASE: u32 =
    PERF_SIZE_DWORD | PERF_TYPE_COUNTER | PERF_COUNTER_BASE | PERF_DISPLAY_NOSHOW | 0x0000_0002;
/// Average count per operation: ΔN / ΔB, 64-bit, with a [`PERF_AVERAGE_BASE`] after it.
pub const PERF_AVERAGE_BULK: u32 =
    PERF_SIZE_LARGE | PERF_TYPE_COUNTER | PERF_COUNTER_FRACTION | PERF_DISPLAY_NOSHOW;
/// Percentage of time against the object's own timer, 64-bit.
pub const PERF_OBJ_TIME_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_OBJECT_TIMER
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Percentage of time busy, value in 100 ns units, 64-bit.
pub const PERF_100NSEC_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_100NS
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Percentage of time idle in 100 ns units, shown as busy, 64-bit.
pub const PERF_100NSEC_TIMER_INV: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_100NS
    | PERF_DELTA_COUNTER
    | PERF_INVERSE_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Busy percentage summed over several items, with a [`PERF_COUNTER_MULTI_BASE`] after it.
pub const PERF_COUNTER_MULTI_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_DELTA_COUNTER
    | PERF_TIMER_TICK
    | PERF_MULTI_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Inverse of [`PERF_COUNTER_MULTI_TIMER`].
pub const PERF_COUNTER_MULTI_TIMER_INV: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_RATE
    | PERF_DELTA_COUNTER
    | PERF_MULTI_COUNTER
    | PERF_TIMER_TICK
    | PERF_INVERSE_COUNTER
    | PERF_DISPLAY_PERCENT;
/// The number of items of a multi timer.
pub const PERF_COUNTER_MULTI_BASE: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_BASE
    | PERF_MULTI_COUNTER
    | PERF_DISPLAY_NOSHOW;
/// Multi timer in 100 ns units.
pub const PERF_100NSEC_MULTI_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_DELTA_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_100NS
    | PERF_MULTI_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Inverse multi timer in 100 ns units.
pub const PERF_100NSEC_MULTI_TIMER_INV: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_DELTA_COUNTER
    | PERF_COUNTER_RATE
    | PERF_TIMER_100NS
    | PERF_MULTI_COUNTER
    | PERF_INVERSE_COUNTER
    | PERF_DISPLAY_PERCENT;
/// A percentage from one sample: 100 N / B, 32-bit, with a [`PERF_RAW_BASE`] after it.
pub const PERF_RAW_FRACTION: u32 =
    PERF_SIZE_DWORD | PERF_TYPE_COUNTER | PERF_COUNTER_FRACTION | PERF_DISPLAY_PERCENT;
/// A percentage from one sample, 64-bit, with a [`PERF_LARGE_RAW_BASE`] after it.
pub const PERF_LARGE_RAW_FRACTION: u32 =
    PERF_SIZE_LARGE | PERF_TYPE_COUNTER | PERF_COUNTER_FRACTION | PERF_DISPLAY_PERCENT;
/// The base of a [`PERF_RAW_FRACTION`].
pub const PERF_RAW_BASE: u32 =
    PERF_SIZE_DWORD | PERF_TYPE_COUNTER | PERF_COUNTER_BASE | PERF_DISPLAY_NOSHOW | 0x0000_0003;
/// The base of a [`PERF_LARGE_RAW_FRACTION`], and the time stamp of the precision timers.
pub const PERF_LARGE_RAW_BASE: u32 =
    PERF_SIZE_LARGE | PERF_TYPE_COUNTER | PERF_COUNTER_BASE | PERF_DISPLAY_NOSHOW;
/// Time elapsed since the value (a start time) against the object's timer, 64-bit.
pub const PERF_ELAPSED_TIME: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_ELAPSED
    | PERF_OBJECT_TIMER
    | PERF_DISPLAY_SECONDS;
/// The change of a 32-bit value between two samples.
pub const PERF_COUNTER_DELTA: u32 = PERF_SIZE_DWORD
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_VALUE
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_NO_SUFFIX;
/// The change of a 64-bit value between two samples.
pub const PERF_COUNTER_LARGE_DELTA: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_VALUE
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_NO_SUFFIX;
/// Busy percentage against a time stamp the provider supplies (the next counter), system timer.
pub const PERF_PRECISION_SYSTEM_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_PRECISION
    | PERF_TIMER_TICK
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Busy percentage against a provider time stamp in 100 ns units.
pub const PERF_PRECISION_100NS_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_PRECISION
    | PERF_TIMER_100NS
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PERCENT;
/// Busy percentage against a provider time stamp in the object's timer units.
pub const PERF_PRECISION_OBJECT_TIMER: u32 = PERF_SIZE_LARGE
    | PERF_TYPE_COUNTER
    | PERF_COUNTER_PRECISION
    | PERF_OBJECT_TIMER
    | PERF_DELTA_COUNTER
    | PERF_DISPLAY_PERCENT;
/// The time stamp that follows a precision timer (winperf.h defines it as the large raw base).
pub const PERF_PRECISION_TIMESTAMP: u32 = PERF_LARGE_RAW_BASE;

// ---------------------------------------------------------------------------------------------
// Questions asked of a counter type.
// ---------------------------------------------------------------------------------------------

/// The value size in bytes that a counter type's size field implies: 4, 8 or 0.
///
/// Returns `None` for `PERF_SIZE_VARIABLE_LEN` (text), whose size the definition carries.
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// assert_eq!(counter_size(PERF_COUNTER_BULK_COUNT), Some(8));
/// assert_eq!(counter_size(PERF_COUNTER_NODATA), Some(0));
/// assert_eq!(counter_size(PERF_COUNTER_TEXT), None);
/// ```
pub const fn counter_size(counter_type: u32) -> Option<u32> {
    match counter_type & PERF_SIZE_MASK {
        PERF_SIZE_DWORD => Some(4),
        PERF_SIZE_LARGE => Some(8),
        PERF_SIZE_ZERO => Some(0),
        _ => None,
    }
}

/// Whether a counter type is a base (the denominator of the counter before it).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// assert!(is_base(PERF_AVERAGE_BASE));
/// assert!(!is_base(PERF_AVERAGE_TIMER));
/// ```
pub const fn is_base(counter_type: u32) -> bool {
    counter_type & PERF_TYPE_MASK == PERF_TYPE_COUNTER
        && counter_type & PERF_SUBTYPE_MASK == PERF_COUNTER_BASE
}

/// The base type that must follow a counter of this type, if it needs one.
///
/// Fractions, averages, multi timers and precision timers read their denominator from the
/// counter definition that immediately follows them (winperf.h).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// assert_eq!(required_base(PERF_AVERAGE_TIMER), Some(PERF_AVERAGE_BASE));
/// assert_eq!(required_base(PERF_PRECISION_100NS_TIMER), Some(PERF_PRECISION_TIMESTAMP));
/// assert_eq!(required_base(PERF_COUNTER_COUNTER), None);
/// ```
pub const fn required_base(counter_type: u32) -> Option<u32> {
    match counter_type {
        PERF_SAMPLE_FRACTION => Some(PERF_SAMPLE_BASE),
        PERF_AVERAGE_TIMER | PERF_AVERAGE_BULK => Some(PERF_AVERAGE_BASE),
        PERF_RAW_FRACTION => Some(PERF_RAW_BASE),
        PERF_LARGE_RAW_FRACTION => Some(PERF_LARGE_RAW_BASE),
        PERF_COUNTER_MULTI_TIMER
        | PERF_COUNTER_MULTI_TIMER_INV
        | PERF_100NSEC_MULTI_TIMER
        | PERF_100NSEC_MULTI_TIMER_INV => Some(PERF_COUNTER_MULTI_BASE),
        PERF_PRECISION_SYSTEM_TIMER | PERF_PRECISION_100NS_TIMER | PERF_PRECISION_OBJECT_TIMER => {
            Some(PERF_PRECISION_TIMESTAMP)
        }
        _ => None,
    }
}

/// Whether a monitor differentiates the value over time (KB Q174631's "Differentiate": "If
/// "Differentiate" is "TRUE" the data retrieved for this counter must be differentiated over
/// time"), i.e. whether its displayed value needs two samples.
///
/// That is every type with `PERF_DELTA_COUNTER` (rates, timers, deltas, sample fractions) and
/// also `PERF_AVERAGE_TIMER` and `PERF_AVERAGE_BULK`, whose formulas, ((N1 − N0) / F) / (B1 − B0)
/// and (N1 − N0) / (B1 − B0), are differences although winperf.h gives them no
/// `PERF_DELTA_COUNTER` bit (*Calculating Counter Values*, Win32 Performance Counters).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// assert!(is_differentiated(PERF_100NSEC_TIMER));
/// assert!(is_differentiated(PERF_AVERAGE_TIMER));
/// assert!(!is_differentiated(PERF_COUNTER_RAWCOUNT));
/// assert!(!is_differentiated(PERF_RAW_FRACTION));
/// ```
pub const fn is_differentiated(counter_type: u32) -> bool {
    counter_type & PERF_DELTA_COUNTER != 0
        || counter_type == PERF_AVERAGE_TIMER
        || counter_type == PERF_AVERAGE_BULK
}

/// Whether a counter type uses the object's own timer (PerfTime / PerfFreq of its object).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// assert!(uses_object_timer(PERF_ELAPSED_TIME));
/// assert!(!uses_object_timer(PERF_100NSEC_TIMER));
/// ```
pub const fn uses_object_timer(counter_type: u32) -> bool {
    counter_type & PERF_TIMER_MASK == PERF_OBJECT_TIMER
}

/// The winperf.h name of a composed counter type, or `None` for a type this module does not
/// compose.
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::*;
/// assert_eq!(counter_type_name(0x3002_0400), Some("PERF_AVERAGE_TIMER"));
/// ```
pub const fn counter_type_name(counter_type: u32) -> Option<&'static str> {
    Some(match counter_type {
        PERF_COUNTER_COUNTER => "PERF_COUNTER_COUNTER",
        PERF_COUNTER_TIMER => "PERF_COUNTER_TIMER",
        PERF_COUNTER_QUEUELEN_TYPE => "PERF_COUNTER_QUEUELEN_TYPE",
        PERF_COUNTER_LARGE_QUEUELEN_TYPE => "PERF_COUNTER_LARGE_QUEUELEN_TYPE",
        PERF_COUNTER_100NS_QUEUELEN_TYPE => "PERF_COUNTER_100NS_QUEUELEN_TYPE",
        PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE => "PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE",
        PERF_COUNTER_BULK_COUNT => "PERF_COUNTER_BULK_COUNT",
        PERF_COUNTER_TEXT => "PERF_COUNTER_TEXT",
        PERF_COUNTER_RAWCOUNT => "PERF_COUNTER_RAWCOUNT",
        PERF_COUNTER_LARGE_RAWCOUNT => "PERF_COUNTER_LARGE_RAWCOUNT",
        PERF_COUNTER_RAWCOUNT_HEX => "PERF_COUNTER_RAWCOUNT_HEX",
        PERF_COUNTER_LARGE_RAWCOUNT_HEX => "PERF_COUNTER_LARGE_RAWCOUNT_HEX",
        PERF_SAMPLE_FRACTION => "PERF_SAMPLE_FRACTION",
        PERF_SAMPLE_COUNTER => "PERF_SAMPLE_COUNTER",
        PERF_COUNTER_NODATA => "PERF_COUNTER_NODATA",
        PERF_COUNTER_TIMER_INV => "PERF_COUNTER_TIMER_INV",
        PERF_SAMPLE_BASE => "PERF_SAMPLE_BASE",
        PERF_AVERAGE_TIMER => "PERF_AVERAGE_TIMER",
        PERF_AVERAGE_BASE => "PERF_AVERAGE_BASE",
        PERF_AVERAGE_BULK => "PERF_AVERAGE_BULK",
        PERF_OBJ_TIME_TIMER => "PERF_OBJ_TIME_TIMER",
        PERF_100NSEC_TIMER => "PERF_100NSEC_TIMER",
        PERF_100NSEC_TIMER_INV => "PERF_100NSEC_TIMER_INV",
        PERF_COUNTER_MULTI_TIMER => "PERF_COUNTER_MULTI_TIMER",
        PERF_COUNTER_MULTI_TIMER_INV => "PERF_COUNTER_MULTI_TIMER_INV",
        PERF_COUNTER_MULTI_BASE => "PERF_COUNTER_MULTI_BASE",
        PERF_100NSEC_MULTI_TIMER => "PERF_100NSEC_MULTI_TIMER",
        PERF_100NSEC_MULTI_TIMER_INV => "PERF_100NSEC_MULTI_TIMER_INV",
        PERF_RAW_FRACTION => "PERF_RAW_FRACTION",
        PERF_LARGE_RAW_FRACTION => "PERF_LARGE_RAW_FRACTION",
        PERF_RAW_BASE => "PERF_RAW_BASE",
        PERF_LARGE_RAW_BASE => "PERF_LARGE_RAW_BASE",
        PERF_ELAPSED_TIME => "PERF_ELAPSED_TIME",
        PERF_COUNTER_DELTA => "PERF_COUNTER_DELTA",
        PERF_COUNTER_LARGE_DELTA => "PERF_COUNTER_LARGE_DELTA",
        PERF_PRECISION_SYSTEM_TIMER => "PERF_PRECISION_SYSTEM_TIMER",
        PERF_PRECISION_100NS_TIMER => "PERF_PRECISION_100NS_TIMER",
        PERF_PRECISION_OBJECT_TIMER => "PERF_PRECISION_OBJECT_TIMER",
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Wire structures.
// ---------------------------------------------------------------------------------------------

/// winperf.h `SYSTEMTIME` as it is embedded in [`PerfDataBlock`] (16 bytes).
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
#[allow(missing_docs)]
pub struct SystemTime {
    pub year: U16,
    pub month: U16,
    pub day_of_week: U16,
    pub day: U16,
    pub hour: U16,
    pub minute: U16,
    pub second: U16,
    pub milliseconds: U16,
}

/// `PERF_DATA_BLOCK`: the header of a whole collection (88 bytes).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PerfDataBlock;
/// assert_eq!(core::mem::size_of::<PerfDataBlock>(), 88);
/// ```
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
pub struct PerfDataBlock {
    /// `"PERF"` in UTF-16.
    pub signature: [U16; 4],
    /// 1 when the data is little endian.
    pub little_endian: U32,
    /// Structure version: 1.
    pub version: U32,
    /// Structure revision: 1.
    pub revision: U32,
    /// Bytes of the whole collection, this header included.
    pub total_byte_length: U32,
    /// Bytes of this header including the system name and its padding.
    pub header_length: U32,
    /// Number of objects that follow.
    pub num_object_types: U32,
    /// Name index of the default object, or -1.
    pub default_object: I32,
    /// Collection time, UTC.
    pub system_time: SystemTime,
    /// Explicit padding that aligns `perf_time` (the C compiler inserts it implicitly).
    pub _pad: U32,
    /// High-resolution counter value at collection.
    pub perf_time: I64,
    /// Ticks per second of `perf_time`.
    pub perf_freq: I64,
    /// Collection time in 100 ns units since 1601-01-01 (FILETIME).
    pub perf_time_100nsec: I64,
    /// Bytes of the system name, terminating NUL included.
    pub system_name_length: U32,
    /// Offset of the system name from the start of this structure.
    pub system_name_offset: U32,
}

/// `PERF_OBJECT_TYPE`: one object's header (64 bytes on x64).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PerfObjectType;
/// assert_eq!(core::mem::size_of::<PerfObjectType>(), 64);
/// ```
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
pub struct PerfObjectType {
    /// Bytes of this object: header, definitions and instance data.
    pub total_byte_length: U32,
    /// Bytes of the header and the counter definitions.
    pub definition_length: U32,
    /// Bytes of this structure (64).
    pub header_length: U32,
    /// Name index of the object.
    pub object_name_title_index: U32,
    /// Unused on x64 (was a pointer).
    pub object_name_title: U32,
    /// Help index of the object.
    pub object_help_title_index: U32,
    /// Unused on x64 (was a pointer).
    pub object_help_title: U32,
    /// `PERF_DETAIL_*`.
    pub detail_level: U32,
    /// Number of counter definitions.
    pub num_counters: U32,
    /// Index of the default counter among the definitions, or -1.
    pub default_counter: I32,
    /// Number of instances, or `PERF_NO_INSTANCES` (-1).
    pub num_instances: I32,
    /// 0: instance names are UTF-16.
    pub code_page: U32,
    /// The object's timer value, for object-timer counters.
    pub perf_time: I64,
    /// Ticks per second of `perf_time`.
    pub perf_freq: I64,
}

/// `PERF_COUNTER_DEFINITION`: one counter's description (40 bytes on x64).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PerfCounterDefinition;
/// assert_eq!(core::mem::size_of::<PerfCounterDefinition>(), 40);
/// ```
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
pub struct PerfCounterDefinition {
    /// Bytes of this structure (40).
    pub byte_length: U32,
    /// Name index of the counter (0 for a base).
    pub counter_name_title_index: U32,
    /// Unused on x64 (was a pointer).
    pub counter_name_title: U32,
    /// Help index of the counter (0 for a base).
    pub counter_help_title_index: U32,
    /// Unused on x64 (was a pointer).
    pub counter_help_title: U32,
    /// Power of ten to scale the value by for charts.
    pub default_scale: I32,
    /// `PERF_DETAIL_*`.
    pub detail_level: U32,
    /// The counter type (`PERF_COUNTER_COUNTER`, ...).
    pub counter_type: U32,
    /// Bytes of the value.
    pub counter_size: U32,
    /// Offset of the value from the start of the `PERF_COUNTER_BLOCK`.
    pub counter_offset: U32,
}

/// `PERF_INSTANCE_DEFINITION`: one instance's header, followed by its UTF-16 name (24 bytes).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PerfInstanceDefinition;
/// assert_eq!(core::mem::size_of::<PerfInstanceDefinition>(), 24);
/// ```
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
pub struct PerfInstanceDefinition {
    /// Bytes of this structure, the name and its padding (the counter block follows).
    pub byte_length: U32,
    /// Name index of the parent object, or 0.
    pub parent_object_title_index: U32,
    /// Position of the parent among the parent object's instances.
    pub parent_object_instance: U32,
    /// A unique id used instead of the name, or `PERF_NO_UNIQUE_ID` (-1).
    pub unique_id: I32,
    /// Offset of the name from the start of this structure (24).
    pub name_offset: U32,
    /// Bytes of the name, terminating NUL included.
    pub name_length: U32,
}

/// `PERF_COUNTER_BLOCK`: the length word that precedes counter values (4 bytes).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PerfCounterBlock;
/// assert_eq!(core::mem::size_of::<PerfCounterBlock>(), 4);
/// ```
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
pub struct PerfCounterBlock {
    /// Bytes of the block, this field included.
    pub byte_length: U32,
}

// Sizes and offsets, checked against winperf.h and against windows-sys' declarations.
const _: () = {
    assert!(size_of::<SystemTime>() == 16);
    assert!(size_of::<PerfDataBlock>() == 88);
    assert!(size_of::<PerfDataBlock>() == size_of::<ws::PERF_DATA_BLOCK>());
    assert!(offset_of!(PerfDataBlock, system_time) == 36);
    assert!(offset_of!(PerfDataBlock, perf_time) == 56);
    assert!(offset_of!(PerfDataBlock, perf_time) == offset_of!(ws::PERF_DATA_BLOCK, PerfTime));
    assert!(offset_of!(PerfDataBlock, system_name_offset) == 84);
    assert!(size_of::<PerfObjectType>() == 64);
    assert!(size_of::<PerfObjectType>() == size_of::<ws::PERF_OBJECT_TYPE>());
    assert!(offset_of!(PerfObjectType, num_instances) == 40);
    assert!(offset_of!(PerfObjectType, perf_time) == 48);
    assert!(size_of::<PerfCounterDefinition>() == 40);
    assert!(size_of::<PerfCounterDefinition>() == size_of::<ws::PERF_COUNTER_DEFINITION>());
    assert!(offset_of!(PerfCounterDefinition, counter_offset) == 36);
    assert!(size_of::<PerfInstanceDefinition>() == 24);
    assert!(size_of::<PerfInstanceDefinition>() == size_of::<ws::PERF_INSTANCE_DEFINITION>());
    assert!(size_of::<PerfCounterBlock>() == 4);
    assert!(size_of::<PerfCounterBlock>() == size_of::<ws::PERF_COUNTER_BLOCK>());
};

/// Bytes of PERF_OBJECT_TYPE.
pub const OBJECT_HEADER: usize = size_of::<PerfObjectType>();
/// Bytes of PERF_COUNTER_DEFINITION.
pub const COUNTER_DEFINITION: usize = size_of::<PerfCounterDefinition>();
/// Bytes of PERF_INSTANCE_DEFINITION; the instance's name follows it.
pub const INSTANCE_DEFINITION: usize = size_of::<PerfInstanceDefinition>();
/// A PERF_COUNTER_BLOCK's bytes before its first value: `ByteLength` and 4 of padding.
pub const COUNTER_BLOCK_HEADER: u32 = 8;
/// `"PERF"` in UTF-16: a PERF_DATA_BLOCK's `Signature`.
pub const SIGNATURE: [u16; 4] = [b'P' as u16, b'E' as u16, b'R' as u16, b'F' as u16];

/// Bytes of an instance definition with its name of `name_units` UTF-16 units: 24 + the name
/// and its NUL, padded to 8.
#[inline]
pub const fn instance_size(name_units: usize) -> usize {
    (INSTANCE_DEFINITION + (name_units + 1) * 2).next_multiple_of(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The histogram buckets' type carries its own size, is neither a base nor needs one, is
    /// not differentiated and has no winperf.h name, so an NT formula reads nothing from it.
    #[test]
    fn the_histogram_type_is_a_variable_length_zero_value() {
        let t = PERF_PRFDATA_HISTOGRAM;
        assert_eq!(t & PERF_SIZE_MASK, PERF_SIZE_VARIABLE_LEN);
        assert_eq!(t & PERF_TYPE_MASK, PERF_TYPE_ZERO);
        assert_eq!(counter_size(t), None);
        assert!(!is_base(t) && !is_differentiated(t) && !uses_object_timer(t));
        assert_eq!(required_base(t), None);
        assert_eq!(counter_type_name(t), None);
    }

    /// The composed values as documented (winperf.h and the Windows Server counter-type docs).
    #[test]
    fn composed_types_match_documented_values() {
        let documented: &[(u32, u32)] = &[
            (PERF_COUNTER_COUNTER, 0x1041_0400),
            (PERF_COUNTER_TIMER, 0x2041_0500),
            (PERF_COUNTER_QUEUELEN_TYPE, 0x0045_0400),
            (PERF_COUNTER_LARGE_QUEUELEN_TYPE, 0x0045_0500),
            (PERF_COUNTER_100NS_QUEUELEN_TYPE, 0x0055_0500),
            (PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, 0x0065_0500),
            (PERF_COUNTER_BULK_COUNT, 0x1041_0500),
            (PERF_COUNTER_TEXT, 0x0000_0B00),
            (PERF_COUNTER_RAWCOUNT, 0x0001_0000),
            (PERF_COUNTER_LARGE_RAWCOUNT, 0x0001_0100),
            (PERF_COUNTER_RAWCOUNT_HEX, 0x0000_0000),
            (PERF_COUNTER_LARGE_RAWCOUNT_HEX, 0x0000_0100),
            (PERF_SAMPLE_FRACTION, 0x20C2_0400),
            (PERF_SAMPLE_COUNTER, 0x0041_0400),
            (PERF_COUNTER_NODATA, 0x4000_0200),
            (PERF_PRFDATA_HISTOGRAM, 0xC000_0F00),
            (PERF_COUNTER_TIMER_INV, 0x2141_0500),
            (PERF_SAMPLE_BASE, 0x4003_0401),
            (PERF_AVERAGE_TIMER, 0x3002_0400),
            (PERF_AVERAGE_BASE, 0x4003_0402),
            (PERF_AVERAGE_BULK, 0x4002_0500),
            (PERF_OBJ_TIME_TIMER, 0x2061_0500),
            (PERF_100NSEC_TIMER, 0x2051_0500),
            (PERF_100NSEC_TIMER_INV, 0x2151_0500),
            (PERF_COUNTER_MULTI_TIMER, 0x2241_0500),
            (PERF_COUNTER_MULTI_TIMER_INV, 0x2341_0500),
            (PERF_COUNTER_MULTI_BASE, 0x4203_0500),
            (PERF_100NSEC_MULTI_TIMER, 0x2251_0500),
            (PERF_100NSEC_MULTI_TIMER_INV, 0x2351_0500),
            (PERF_RAW_FRACTION, 0x2002_0400),
            (PERF_LARGE_RAW_FRACTION, 0x2002_0500),
            (PERF_RAW_BASE, 0x4003_0403),
            (PERF_LARGE_RAW_BASE, 0x4003_0500),
            (PERF_ELAPSED_TIME, 0x3024_0500),
            (PERF_COUNTER_DELTA, 0x0040_0400),
            (PERF_COUNTER_LARGE_DELTA, 0x0040_0500),
            (PERF_PRECISION_SYSTEM_TIMER, 0x2047_0500),
            (PERF_PRECISION_100NS_TIMER, 0x2057_0500),
            (PERF_PRECISION_OBJECT_TIMER, 0x2067_0500),
        ];
        for &(composed, expected) in documented {
            assert_eq!(
                composed,
                expected,
                "{} composes to {composed:#010x}, documented {expected:#010x}",
                counter_type_name(composed).unwrap_or("?")
            );
        }
    }

    #[test]
    fn every_base_is_a_base_and_no_counter_needing_one_is() {
        for ty in [
            PERF_SAMPLE_BASE,
            PERF_AVERAGE_BASE,
            PERF_COUNTER_MULTI_BASE,
            PERF_RAW_BASE,
        ]
        .into_iter()
        .chain([PERF_LARGE_RAW_BASE])
        {
            assert!(is_base(ty), "{ty:#x}");
            assert_eq!(required_base(ty), None);
        }
        for ty in [
            PERF_AVERAGE_TIMER,
            PERF_RAW_FRACTION,
            PERF_COUNTER_MULTI_TIMER,
        ] {
            assert!(!is_base(ty));
            assert!(required_base(ty).is_some());
        }
    }

    #[test]
    fn sizes_follow_the_size_field() {
        assert_eq!(counter_size(PERF_COUNTER_RAWCOUNT), Some(4));
        assert_eq!(counter_size(PERF_ELAPSED_TIME), Some(8));
        assert_eq!(counter_size(PERF_AVERAGE_BASE), Some(4));
        assert_eq!(counter_size(PERF_COUNTER_MULTI_BASE), Some(8));
    }

    #[test]
    fn wire_structs_serialise_little_endian() {
        let block = PerfCounterBlock {
            byte_length: 0x0102_0304.into(),
        };
        assert_eq!(block.as_bytes(), &[4, 3, 2, 1]);
        let obj = PerfObjectType {
            num_instances: PERF_NO_INSTANCES.into(),
            ..Default::default()
        };
        assert_eq!(&obj.as_bytes()[40..44], &[0xff; 4]);
    }
}

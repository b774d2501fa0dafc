//! One marker type per counter type of winperf.h, carrying its value width.
//!
//! A counter in a [`prfdata_map!`](crate::prfdata_map) is declared with one of these types. Its
//! width ([`Dword`], [`Large`], [`NoValue`] or text's [`Utf16`]) is part of the counter's id
//! type: [`PrfData::get_ctr32`](crate::PrfData::get_ctr32) on a 64-bit counter,
//! or [`PrfData::get_ctr64`](crate::PrfData::get_ctr64) on a 32-bit one, does not compile
//! (CPrfData only asserted this in debug builds). A histogram's markers, [`Histogram`] and
//! [`TimeHistogram`], have the width [`Buckets`]: they have no single value, and only
//! `prf.histogram(..)` records into them.
//!
//! # Examples
//!
//! ```
//! use prfdata::counter_type::{AverageTimer, CounterType, RawCount};
//! use prfdata_wire::winperf;
//!
//! assert_eq!(RawCount::TYPE, winperf::PERF_COUNTER_RAWCOUNT);
//! assert_eq!(AverageTimer::BASE, Some(winperf::PERF_AVERAGE_BASE));
//! ```

use core::sync::atomic::{AtomicI32, AtomicI64};

use prfdata_rules::counter_types as rules;

use crate::winperf::*;

mod sealed {
    pub trait Sealed {}
}

/// The width of a counter's value in the shared block.
pub trait Width: sealed::Sealed + 'static {
    /// Bytes of the value.
    const SIZE: u32;
}

/// A 32-bit value (`PERF_SIZE_DWORD`), reached through `get_ctr32` as an `AtomicI32`.
#[derive(Debug)]
pub enum Dword {}
/// A 64-bit value (`PERF_SIZE_LARGE`), reached through `get_ctr64` as an `AtomicI64`.
#[derive(Debug)]
pub enum Large {}
/// No value (`PERF_SIZE_ZERO`): the counter is a label.
#[derive(Debug)]
pub enum NoValue {}

/// A histogram's value (`PERF_SIZE_VARIABLE_LEN`): its descriptor words and one u64 per bucket,
/// as many as its geometry gives, so its size is the counter's
/// ([`CounterDef::value_size`](crate::map::CounterDef::value_size)) and [`Width::SIZE`] is 0.
/// Not an [`AtomicWidth`]: a histogram is recorded through `prf.histogram(..)`.
#[derive(Debug)]
pub enum Buckets {}

impl sealed::Sealed for Dword {}
impl sealed::Sealed for Large {}
impl sealed::Sealed for NoValue {}
impl sealed::Sealed for Buckets {}
impl Width for Dword {
    const SIZE: u32 = 4;
}
impl Width for Large {
    const SIZE: u32 = 8;
}
impl Width for NoValue {
    const SIZE: u32 = 0;
}
impl Width for Buckets {
    const SIZE: u32 = 0;
}

/// A width whose value is one atomic integer: [`Dword`] (`AtomicI32`) or [`Large`]
/// (`AtomicI64`): what an on-demand counter of this width is stored in
/// ([`OnDemand::serve`](crate::OnDemand::serve)).
///
/// # Examples
///
/// ```
/// use prfdata::counter_type::{AtomicWidth, BulkCount, CounterType, RawCount};
///
/// fn atomic_of<T: CounterType>() -> &'static str
/// where
///     T::Width: AtomicWidth,
/// {
///     std::any::type_name::<<T::Width as AtomicWidth>::Atomic>()
/// }
/// assert!(atomic_of::<RawCount>().ends_with("AtomicI32"));
/// assert!(atomic_of::<BulkCount>().ends_with("AtomicI64"));
/// ```
#[diagnostic::on_unimplemented(
    message = "a counter of width `{Self}` has no atomic value to update",
    label = "text and no-data counters have no atomic value",
    note = "set a text counter with `prf.text().set`; a `NoData` counter has no value"
)]
pub trait AtomicWidth: Width {
    /// `AtomicI32` or `AtomicI64`.
    type Atomic: Send + Sync + 'static;
    /// `i32` or `i64`: what an on-demand closure of this width returns
    /// ([`OnDemand::serve`](crate::OnDemand::serve)).
    type Value: Copy + Send + 'static;

    /// Stores `value` in `atomic` (relaxed): how an on-demand value is published.
    #[doc(hidden)]
    fn __store(atomic: &Self::Atomic, value: Self::Value);

    /// The atomic at `ptr`: how prfdata reaches a counter of this width.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reads and writes of [`Width::SIZE`] bytes for `'a`, aligned to that
    /// size, and only ever accessed atomically while the reference lives.
    #[doc(hidden)]
    unsafe fn __at<'a>(ptr: *mut u8) -> &'a Self::Atomic;
}

impl AtomicWidth for Dword {
    type Atomic = AtomicI32;
    type Value = i32;

    #[inline]
    fn __store(atomic: &AtomicI32, value: i32) {
        atomic.store(value, core::sync::atomic::Ordering::Relaxed);
    }

    #[inline(always)]
    unsafe fn __at<'a>(ptr: *mut u8) -> &'a AtomicI32 {
        // SAFETY: the caller gives a valid, 4-aligned, atomically accessed `i32` for `'a`.
        unsafe { AtomicI32::from_ptr(ptr.cast()) }
    }
}

impl AtomicWidth for Large {
    type Atomic = AtomicI64;
    type Value = i64;

    #[inline]
    fn __store(atomic: &AtomicI64, value: i64) {
        atomic.store(value, core::sync::atomic::Ordering::Relaxed);
    }

    #[inline(always)]
    unsafe fn __at<'a>(ptr: *mut u8) -> &'a AtomicI64 {
        // SAFETY: the caller gives a valid, 8-aligned, atomically accessed `i64` for `'a`.
        unsafe { AtomicI64::from_ptr(ptr.cast()) }
    }
}

/// A winperf.h counter type: its composed value and its width.
pub trait CounterType: sealed::Sealed + 'static {
    /// The composed counter type (`PERF_COUNTER_COUNTER`, ...).
    const TYPE: u32;
    /// The base type that must follow a counter of this type, if any.
    const BASE: Option<u32> = required_base(Self::TYPE);
    /// The width of the value.
    type Width: Width;
    /// For text types: room in UTF-16 code units, the NUL included; 0 otherwise.
    const TEXT_LEN: u32 = 0;
}

/// A counter type with one value, a number or a text: every type but the histograms. What
/// [`PrfData::get_ctr32`](crate::PrfData::get_ctr32),
/// [`get_ctr64`](crate::PrfData::get_ctr64) and [`sharded`](crate::PrfData::sharded) take.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a histogram: it has no single value to get or update",
    label = "a histogram's id",
    note = "a histogram is recorded through `prf.histogram(..)`"
)]
pub trait Scalar: CounterType {}

/// Whether prfdata-rules' row for a marker agrees with winperf.h: the composed type `ty`, and
/// the base it needs or is as winperf.h's classification says.
const fn agrees_with_winperf(name: &str, ty: u32) -> bool {
    let Some(row) = rules::find(name) else {
        return false;
    };
    let kind_ok = match (row.kind, required_base(ty)) {
        (rules::Kind::NeedsBase { base_type, .. }, Some(b)) => base_type == b,
        (rules::Kind::Base { base_type }, None) => is_base(ty) && base_type == ty,
        (rules::Kind::Plain, None) => !is_base(ty),
        _ => false,
    };
    row.ty == ty && kind_ok
}

macro_rules! counter_types {
    ($($(#[$doc:meta])* $name:ident = $ty:ident, $width:ident;)*) => {
        /// Every counter type with a value of fixed width.
        #[cfg(test)]
        const FIXED: &[&str] = &[$(stringify!($name)),*];
        $(
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $name {}
        impl sealed::Sealed for $name {}
        impl CounterType for $name {
            const TYPE: u32 = rules::marker(stringify!($name));
            type Width = $width;
        }
        impl Scalar for $name {}
        const _: () = assert!(agrees_with_winperf(stringify!($name), $ty));
        const _: () = assert!(matches!(counter_size($ty), Some(n) if n == <$width as Width>::SIZE));
    )*};
}

counter_types! {
    /// `PERF_COUNTER_RAWCOUNT`: an instantaneous 32-bit value.
    RawCount = PERF_COUNTER_RAWCOUNT, Dword;
    /// `PERF_COUNTER_RAWCOUNT_HEX`: an instantaneous 32-bit value shown in hexadecimal.
    RawCountHex = PERF_COUNTER_RAWCOUNT_HEX, Dword;
    /// `PERF_COUNTER_LARGE_RAWCOUNT`: an instantaneous 64-bit value.
    LargeRawCount = PERF_COUNTER_LARGE_RAWCOUNT, Large;
    /// `PERF_COUNTER_LARGE_RAWCOUNT_HEX`: an instantaneous 64-bit value in hexadecimal.
    LargeRawCountHex = PERF_COUNTER_LARGE_RAWCOUNT_HEX, Large;
    /// `PERF_COUNTER_COUNTER`: a 32-bit count, shown per second.
    CounterCounter = PERF_COUNTER_COUNTER, Dword;
    /// `PERF_SAMPLE_COUNTER`: a 32-bit count per second without the suffix.
    SampleCounter = PERF_SAMPLE_COUNTER, Dword;
    /// `PERF_COUNTER_BULK_COUNT`: a 64-bit count, shown per second.
    BulkCount = PERF_COUNTER_BULK_COUNT, Large;
    /// `PERF_COUNTER_DELTA`: the change of a 32-bit value between samples.
    CounterDelta = PERF_COUNTER_DELTA, Dword;
    /// `PERF_COUNTER_LARGE_DELTA`: the change of a 64-bit value between samples.
    LargeDelta = PERF_COUNTER_LARGE_DELTA, Large;
    /// `PERF_COUNTER_QUEUELEN_TYPE`: queue length summed every system tick, 32-bit.
    QueueLen = PERF_COUNTER_QUEUELEN_TYPE, Dword;
    /// `PERF_COUNTER_LARGE_QUEUELEN_TYPE`: the same, 64-bit.
    LargeQueueLen = PERF_COUNTER_LARGE_QUEUELEN_TYPE, Large;
    /// `PERF_COUNTER_100NS_QUEUELEN_TYPE`: queue length × time in 100 ns units.
    QueueLen100Ns = PERF_COUNTER_100NS_QUEUELEN_TYPE, Large;
    /// `PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE`: queue length × time in object timer units.
    ObjTimeQueueLen = PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE, Large;
    /// `PERF_COUNTER_TIMER`: busy time in system timer ticks, shown as a percentage.
    CounterTimer = PERF_COUNTER_TIMER, Large;
    /// `PERF_COUNTER_TIMER_INV`: idle time in system ticks, shown as busy percentage.
    CounterTimerInv = PERF_COUNTER_TIMER_INV, Large;
    /// `PERF_100NSEC_TIMER`: busy time in 100 ns units, shown as a percentage.
    Timer100Ns = PERF_100NSEC_TIMER, Large;
    /// `PERF_100NSEC_TIMER_INV`: idle time in 100 ns units, shown as busy percentage.
    Timer100NsInv = PERF_100NSEC_TIMER_INV, Large;
    /// `PERF_OBJ_TIME_TIMER`: busy time in object timer units, shown as a percentage.
    ObjTimeTimer = PERF_OBJ_TIME_TIMER, Large;
    /// `PERF_COUNTER_MULTI_TIMER`: busy time summed over several items; needs [`MultiBase`].
    MultiTimer = PERF_COUNTER_MULTI_TIMER, Large;
    /// `PERF_COUNTER_MULTI_TIMER_INV`: inverse multi timer; needs [`MultiBase`].
    MultiTimerInv = PERF_COUNTER_MULTI_TIMER_INV, Large;
    /// `PERF_100NSEC_MULTI_TIMER`: multi timer in 100 ns units; needs [`MultiBase`].
    MultiTimer100Ns = PERF_100NSEC_MULTI_TIMER, Large;
    /// `PERF_100NSEC_MULTI_TIMER_INV`: inverse 100 ns multi timer; needs [`MultiBase`].
    MultiTimer100NsInv = PERF_100NSEC_MULTI_TIMER_INV, Large;
    /// `PERF_COUNTER_MULTI_BASE`: the number of items of the multi timer before it.
    MultiBase = PERF_COUNTER_MULTI_BASE, Large;
    /// `PERF_RAW_FRACTION`: 100 N / B from one sample; needs [`RawBase`].
    RawFraction = PERF_RAW_FRACTION, Dword;
    /// `PERF_RAW_BASE`: the denominator of a [`RawFraction`].
    RawBase = PERF_RAW_BASE, Dword;
    /// `PERF_LARGE_RAW_FRACTION`: 64-bit raw fraction; needs [`LargeRawBase`].
    LargeRawFraction = PERF_LARGE_RAW_FRACTION, Large;
    /// `PERF_LARGE_RAW_BASE`: the denominator of a [`LargeRawFraction`].
    LargeRawBase = PERF_LARGE_RAW_BASE, Large;
    /// `PERF_SAMPLE_FRACTION`: 100 ΔN / ΔB; needs [`SampleBase`].
    SampleFraction = PERF_SAMPLE_FRACTION, Dword;
    /// `PERF_SAMPLE_BASE`: the denominator of a [`SampleFraction`].
    SampleBase = PERF_SAMPLE_BASE, Dword;
    /// `PERF_AVERAGE_TIMER`: total time in system ticks per operation; needs [`AverageBase`].
    AverageTimer = PERF_AVERAGE_TIMER, Dword;
    /// `PERF_AVERAGE_BULK`: total count per operation, 64-bit; needs [`AverageBase`].
    AverageBulk = PERF_AVERAGE_BULK, Large;
    /// `PERF_AVERAGE_BASE`: the operation count of an average.
    AverageBase = PERF_AVERAGE_BASE, Dword;
    /// `PERF_PRECISION_SYSTEM_TIMER`: busy ticks against a [`PrecisionTimestamp`].
    PrecisionSystemTimer = PERF_PRECISION_SYSTEM_TIMER, Large;
    /// `PERF_PRECISION_100NS_TIMER`: busy 100 ns against a [`PrecisionTimestamp`].
    Precision100NsTimer = PERF_PRECISION_100NS_TIMER, Large;
    /// `PERF_PRECISION_OBJECT_TIMER`: busy object ticks against a [`PrecisionTimestamp`].
    PrecisionObjectTimer = PERF_PRECISION_OBJECT_TIMER, Large;
    /// `PERF_PRECISION_TIMESTAMP`: the time stamp after a precision timer.
    PrecisionTimestamp = PERF_PRECISION_TIMESTAMP, Large;
    /// `PERF_ELAPSED_TIME`: a start time in object timer units; shown as seconds since then.
    ElapsedTime = PERF_ELAPSED_TIME, Large;
    /// `PERF_COUNTER_NODATA`: a label without a value.
    NoData = PERF_COUNTER_NODATA, NoValue;
}

/// The width of a text counter: `N` UTF-16 code units (the terminating NUL included), set with
/// [`TextCtrs::set`](crate::TextCtrs::set).
#[derive(Debug)]
pub enum Utf16<const N: u32> {}
impl<const N: u32> sealed::Sealed for Utf16<N> {}
impl<const N: u32> Width for Utf16<N> {
    const SIZE: u32 = 2 * N;
}

/// A text counter type ([`Text<N>`](Text)), set with [`TextCtrs::set`](crate::TextCtrs::set).
pub trait TextType: CounterType {}

/// `PERF_COUNTER_TEXT` with room for `N - 1` UTF-16 units of text and the NUL. A map names it
/// `Text16`, `Text32`, `Text64` or `Text128` (`Text<16>` to `Text<128>`), the sizes it exists in.
#[derive(Debug)]
pub enum Text<const N: u32> {}

macro_rules! text_types {
    ($($name:ident = $units:literal;)*) => {
        /// Every text counter type's name.
        #[cfg(test)]
        const TEXT: &[&str] = &[$(stringify!($name)),*];
        $(
        impl sealed::Sealed for Text<$units> {}
        impl CounterType for Text<$units> {
            const TYPE: u32 = rules::marker(stringify!($name));
            type Width = Utf16<$units>;
            const TEXT_LEN: u32 = $units;
        }
        impl TextType for Text<$units> {}
        impl Scalar for Text<$units> {}
        const _: () = assert!(agrees_with_winperf(stringify!($name), PERF_COUNTER_TEXT));
    )*};
}

text_types! {
    Text16 = 16;
    Text32 = 32;
    Text64 = 64;
    Text128 = 128;
}

/// A histogram of sizes or counts (`Histogram { unit: bytes | count, .. }` in a map): its id
/// names the bucket counter, a
/// [`PERF_PRFDATA_HISTOGRAM`] after the histogram's sum
/// and count ([`Source::Histogram`](crate::map::Source::Histogram)).
#[derive(Debug)]
pub enum Histogram {}
/// A histogram of durations (`Histogram { unit: ns | us | ms | s, .. }` in a map), as
/// [`Histogram`], which a timer can also record into.
#[derive(Debug)]
pub enum TimeHistogram {}

impl sealed::Sealed for Histogram {}
impl sealed::Sealed for TimeHistogram {}
impl CounterType for Histogram {
    const TYPE: u32 = PERF_PRFDATA_HISTOGRAM;
    type Width = Buckets;
}
impl CounterType for TimeHistogram {
    const TYPE: u32 = PERF_PRFDATA_HISTOGRAM;
    type Width = Buckets;
}
const _: () = assert!(counter_size(PERF_PRFDATA_HISTOGRAM).is_none());

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter type of prfdata-rules' table, which the map macro accepts, is a marker type
    /// here, in the same order (each marker's row is checked against winperf.h at compile time).
    #[test]
    fn every_counter_type_of_the_rules_has_a_marker() {
        let rows: Vec<&str> = rules::ALL.iter().map(|row| row.name).collect();
        let ours: Vec<&str> = FIXED.iter().chain(TEXT).copied().collect();
        assert_eq!(rows, ours);
    }
}

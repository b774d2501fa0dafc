//! The high-resolution clock counters are measured against: perflib's
//! `QueryPerformanceCounter` / `QueryPerformanceFrequency` on this platform.
//!
//! Timer counters (`PERF_COUNTER_TIMER`, `PERF_AVERAGE_TIMER`, the precision system timer) count
//! ticks of this clock; object-timer counters (`PERF_ELAPSED_TIME`, `PERF_OBJ_TIME_TIMER`) count
//! ticks of the same clock too, and a provider reports it as each object's PerfTime / PerfFreq.
//! It is `CLOCK_MONOTONIC` in 100 ns ticks (10 MHz, the frequency Windows reports for
//! `QueryPerformanceFrequency` on current systems): system-wide, so the application that writes a
//! value and the collector that reads it, in another process, agree; and coarse enough that a
//! 32-bit `PERF_AVERAGE_TIMER` holds 429 s of accumulated time before it wraps.
//!
//! # Examples
//!
//! ```
//! let t0 = prfdata::clock::perf_counter();
//! std::thread::sleep(std::time::Duration::from_millis(2));
//! let elapsed = prfdata::clock::perf_counter() - t0;
//! assert!(elapsed >= 2 * prfdata::clock::PERF_FREQUENCY / 1000);
//! ```

/// Ticks per second of [`perf_counter`].
pub const PERF_FREQUENCY: i64 = 10_000_000;

/// The current value of the high-resolution clock, in ticks of [`PERF_FREQUENCY`].
///
/// # Examples
///
/// ```
/// assert!(prfdata::clock::perf_counter() > 0);
/// ```
pub fn perf_counter() -> i64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec
        .saturating_mul(PERF_FREQUENCY)
        .saturating_add(ts.tv_nsec)
}

/// A duration in ticks of [`perf_counter`] (and so in the 100 ns units `PERF_100NSEC_TIMER`
/// counters count), saturating.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(prfdata::clock::ticks(Duration::from_millis(1)), 10_000);
/// ```
pub fn ticks(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_nanos() / 100).unwrap_or(i64::MAX)
}

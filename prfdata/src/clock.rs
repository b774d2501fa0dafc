//! The high-resolution clock counters are measured against: perflib's
//! `QueryPerformanceCounter` / `QueryPerformanceFrequency` on this platform.
//!
//! Timer counters (`PERF_COUNTER_TIMER`, `PERF_AVERAGE_TIMER`, the precision system timer) count
//! ticks of this clock; object-timer counters (`PERF_ELAPSED_TIME`, `PERF_OBJ_TIME_TIMER`) count
//! ticks of the same clock too, and a provider reports it as each object's PerfTime / PerfFreq.
//! It is `CLOCK_MONOTONIC` in nanoseconds: system-wide, so the application that writes a value
//! and the collector that reads it, in another process, agree.
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
pub const PERF_FREQUENCY: i64 = 1_000_000_000;

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

/// The current time in 100 ns units of [`perf_counter`]'s clock: what `PERF_100NSEC_TIMER`
/// counters are measured in.
///
/// # Examples
///
/// ```
/// let a = prfdata::clock::perf_counter_100ns();
/// assert!(prfdata::clock::perf_counter_100ns() >= a);
/// ```
pub fn perf_counter_100ns() -> i64 {
    perf_counter() / 100
}

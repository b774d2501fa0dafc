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
        .saturating_add(ts.tv_nsec / NANOS_PER_TICK)
}

/// Nanoseconds per tick of [`perf_counter`].
const NANOS_PER_TICK: i64 = 1_000_000_000 / PERF_FREQUENCY;

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Regression: the clock once counted nanoseconds in the seconds' 100 ns ticks, running
    /// faster than time.
    #[test]
    fn perf_counter_ticks_at_perf_frequency() {
        let (t0, i0) = (perf_counter(), Instant::now());
        std::thread::sleep(Duration::from_millis(200));
        let (t1, elapsed) = (perf_counter(), i0.elapsed());
        let measured = (t1 - t0) as f64 / PERF_FREQUENCY as f64;
        let real = elapsed.as_secs_f64();
        assert!(
            (measured - real).abs() < 0.02,
            "clock says {measured} s, {real} s passed"
        );
    }

    #[test]
    fn ticks_are_100_ns() {
        assert_eq!(ticks(Duration::from_micros(3)), 30);
        assert_eq!(ticks(Duration::from_secs(1)), PERF_FREQUENCY);
    }
}

//! The clocks counters are measured against: perflib's system timer
//! (`QueryPerformanceCounter` / `QueryPerformanceFrequency`) and the object timer, on this
//! platform.
//!
//! # The system timer: [`perf_counter`]
//!
//! Timer counters (`PERF_COUNTER_TIMER`, `PERF_AVERAGE_TIMER`, the precision system timer) count
//! ticks of [`perf_counter`], and a collector reports it as the PERF_DATA_BLOCK's PerfTime /
//! PerfFreq. It is `CLOCK_MONOTONIC` in 100 ns ticks ([`PERF_FREQUENCY`], 10 MHz, the frequency
//! Windows reports for `QueryPerformanceFrequency` on current systems): system-wide, so the
//! application that writes a value and the collector that reads it, in another process, agree;
//! never stepped by a clock change; and coarse enough that a 32-bit `PERF_AVERAGE_TIMER` holds
//! 429 s of accumulated time before it wraps.
//!
//! # The object timer: [`filetime::now`]
//!
//! Counters whose type has `PERF_OBJECT_TIMER` are read against their object's own PerfTime /
//! PerfFreq (winperf.h: "use the object timer"). NT's Process object, and every consumer written
//! against it (PDH, windows_exporter), makes that clock the wall clock as a `FILETIME`: 100 ns
//! units since 1601-01-01 UTC, PerfFreq 10,000,000. The provider sets every object's PerfTime to
//! [`filetime::now`] at collection and its PerfFreq to [`OBJECT_FREQUENCY`], so:
//!
//! | type | what the app stores | what a consumer shows |
//! |---|---|---|
//! | `PERF_ELAPSED_TIME` ([`ElapsedTime`](crate::counter_type::ElapsedTime)) | the **start time** as a FILETIME: [`filetime::of`] / [`filetime::now`], or [`PrfData::set_elapsed_start`](crate::PrfData::set_elapsed_start) | (PerfTime − N) / PerfFreq: seconds since the start |
//! | `PERF_OBJ_TIME_TIMER`, `PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE` | busy time (or queue length × time) accumulated in 100 ns units: a duration's `as_nanos() / 100`, or a difference of [`perf_counter`] readings | ΔN / ΔPerfTime: both in 100 ns units |
//! | `PERF_PRECISION_OBJECT_TIMER` | busy time in 100 ns units, with its `PERF_PRECISION_TIMESTAMP` base in the same units | ΔN / ΔBase |
//!
//! Durations in 100 ns units are the same whichever clock measured them, so a duration taken
//! from [`perf_counter`] (which never jumps) accumulates correctly against the object timer;
//! only `PERF_ELAPSED_TIME`, a point in time, must be a FILETIME. A consumer may also read the
//! value as NT's does: windows_exporter reports a process's start time as
//! `(N − FILETIME of 1970-01-01) / 10⁷` Unix seconds ([`FILETIME_UNIX_EPOCH`]).
//!
//! [`filetime::now`]: prfdata_wire::filetime::now
//! [`filetime::of`]: prfdata_wire::filetime::of
//! [`OBJECT_FREQUENCY`]: prfdata_wire::filetime::OBJECT_FREQUENCY
//! [`FILETIME_UNIX_EPOCH`]: prfdata_wire::filetime::FILETIME_UNIX_EPOCH
//!
//! # Examples
//!
//! ```
//! let t0 = prfdata::clock::perf_counter();
//! std::thread::sleep(std::time::Duration::from_millis(2));
//! let elapsed = prfdata::clock::perf_counter() - t0;
//! assert!(elapsed >= 2 * prfdata::clock::PERF_FREQUENCY / 1000);
//!
//! // A start time, and the seconds since it as a consumer computes them from an object's clock.
//! use prfdata_wire::filetime;
//! let start = filetime::now();
//! let perf_time = filetime::now();
//! let seconds = (perf_time - start) as f64 / filetime::OBJECT_FREQUENCY as f64;
//! assert!((0.0..60.0).contains(&seconds));
//! ```

use std::time::Duration;

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
pub(crate) fn ticks(d: Duration) -> i64 {
    i64::try_from(d.as_nanos() / 100).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn ticks_are_100_ns_and_saturate() {
        assert_eq!(ticks(Duration::from_millis(1)), 10_000);
        assert_eq!(ticks(Duration::MAX), i64::MAX);
    }

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

//! FILETIME: 100 ns units since 1601-01-01 UTC, the unit of the object timer (the PerfTime of
//! every object a provider returns, with PerfFreq [`OBJECT_FREQUENCY`]) and of
//! `PERF_ELAPSED_TIME` start times.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Ticks per second of the object timer ([`now`]): FILETIME's 100 ns units, the PerfFreq of
/// every object a provider returns.
pub const OBJECT_FREQUENCY: i64 = 10_000_000;

/// 1970-01-01 00:00 UTC as a FILETIME: 100 ns units since 1601-01-01 (369 years, 89 of them leap
/// years: 134,774 days of 86,400 s).
pub const FILETIME_UNIX_EPOCH: i64 = 116_444_736_000_000_000;

/// `time` as a FILETIME (saturating).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use prfdata_wire::filetime::{of, FILETIME_UNIX_EPOCH};
/// assert_eq!(of(UNIX_EPOCH), FILETIME_UNIX_EPOCH);
/// assert_eq!(of(UNIX_EPOCH + Duration::from_secs(1)), FILETIME_UNIX_EPOCH + 10_000_000);
/// assert_eq!(of(UNIX_EPOCH - Duration::from_micros(1)), FILETIME_UNIX_EPOCH - 10);
/// ```
pub fn of(time: SystemTime) -> i64 {
    let ticks = |d: Duration| i64::try_from(d.as_nanos() / 100).unwrap_or(i64::MAX);
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => FILETIME_UNIX_EPOCH.saturating_add(ticks(after)),
        Err(before) => FILETIME_UNIX_EPOCH.saturating_sub(ticks(before.duration())),
    }
}

/// The wall clock now as a FILETIME: the object timer, every object's PerfTime.
///
/// # Examples
///
/// ```
/// // Some time after 2020-01-01 (FILETIME 132,223,104,000,000,000).
/// assert!(prfdata_wire::filetime::now() > 132_223_104_000_000_000);
/// ```
pub fn now() -> i64 {
    of(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The epoch constant from its definition: 1601-01-01 to 1970-01-01 is 369 years, 89 of
    /// them leap years (1700, 1800 and 1900 are not).
    #[test]
    fn filetime_epoch_is_369_years_before_unix() {
        let days: i64 = 369 * 365 + 89;
        assert_eq!(FILETIME_UNIX_EPOCH, days * 86_400 * OBJECT_FREQUENCY);
    }

    #[test]
    fn filetime_now_follows_the_wall_clock() {
        let before = SystemTime::now();
        let t = now();
        let after = SystemTime::now();
        assert!(of(before) <= t && t <= of(after));
    }
}

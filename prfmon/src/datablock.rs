//! Building the PERF_DATA_BLOCK that heads a collection: what `RegQueryValueEx
//! (HKEY_PERFORMANCE_DATA, ...)` returns.
//!
//! ```text
//! 0    PERF_DATA_BLOCK (88 bytes)
//!        Signature "PERF" (UTF-16)  LittleEndian 1  Version 1  Revision 1
//!        TotalByteLength (all of it)  HeaderLength  NumObjectTypes  DefaultObject
//!        SystemTime (UTC)  PerfTime  PerfFreq  PerfTime100nSec (FILETIME)
//!        SystemNameLength  SystemNameOffset = 88
//! 88   system name, UTF-16 + NUL, zero-padded to a multiple of 8  → HeaderLength
//! ...  the providers' objects, each exactly as its Collect returned it
//! ```
//!
//! # Examples
//!
//! ```
//! use prfmon::datablock::{build_data_block, CollectionTimes};
//! let bytes = build_data_block("box", &CollectionTimes::now(), &[]);
//! // 88 + "box\0" (8 bytes) = 96, already a multiple of 8.
//! assert_eq!(bytes.len(), 96);
//! assert_eq!(&bytes[..8], b"P\0E\0R\0F\0");
//! ```

use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
use prfdata_wire::winperf::{SystemTime, U16};

/// The largest PERF_DATA_BLOCK: its `TotalByteLength` is a DWORD. A collection is at most this
/// (a service whose answer would take it past is left out of that collection, logged), and
/// `prfmon decode` reads a file up to this size: whatever the collector makes, it decodes. Each
/// service's share comes from prfdata's rule
/// ([`BlockReader::MAX_COLLECT_ANSWER`](prfdata::reader::BlockReader::MAX_COLLECT_ANSWER)).
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::datablock::MAX_PERF_DATA_BLOCK, u64::from(u32::MAX));
/// ```
pub const MAX_PERF_DATA_BLOCK: u64 = u32::MAX as u64;

/// 100 ns intervals between 1601-01-01 (FILETIME's epoch) and 1970-01-01 (Unix's): the same as
/// [`prfdata_wire::filetime::FILETIME_UNIX_EPOCH`].
pub const FILETIME_UNIX_EPOCH: i64 = prfdata_wire::filetime::FILETIME_UNIX_EPOCH;

/// The times a collection is stamped with, taken before the providers are called.
///
/// # Examples
///
/// ```
/// let t = prfmon::datablock::CollectionTimes::now();
/// assert!(t.system_time.year >= 2024);
/// assert!(t.perf_time_100nsec > prfmon::datablock::FILETIME_UNIX_EPOCH);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectionTimes {
    /// `SystemTime`: the wall clock, UTC.
    pub system_time: SystemTime,
    /// `PerfTime`: [`prfdata::clock::perf_counter`], the clock timer counters use.
    pub perf_time: i64,
    /// `PerfFreq`: [`prfdata::clock::PERF_FREQUENCY`].
    pub perf_freq: i64,
    /// `PerfTime100nSec`: the wall clock in 100 ns units since 1601-01-01 (FILETIME).
    pub perf_time_100nsec: i64,
}

impl CollectionTimes {
    /// Reads the clocks now.
    ///
    /// # Examples
    ///
    /// ```
    /// let a = prfmon::datablock::CollectionTimes::now();
    /// let b = prfmon::datablock::CollectionTimes::now();
    /// assert!(b.perf_time >= a.perf_time);
    /// ```
    pub fn now() -> Self {
        let perf_time = prfdata::clock::perf_counter();
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let unix_100ns = i64::try_from(since_epoch.as_nanos() / 100).unwrap_or(i64::MAX);
        Self {
            system_time: system_time_utc(since_epoch),
            perf_time,
            perf_freq: prfdata::clock::PERF_FREQUENCY,
            perf_time_100nsec: unix_100ns.saturating_add(FILETIME_UNIX_EPOCH),
        }
    }

    /// A PERF_DATA_BLOCK for `system_name` stamped with these times, room for `room` bytes
    /// of objects.
    pub(crate) fn writer(&self, system_name: &str, room: usize) -> DataBlockWriter {
        let (system_time, ft) = (self.system_time, self.perf_time_100nsec);
        DataBlockWriter::new(system_name, room).times(
            system_time,
            self.perf_time,
            self.perf_freq,
            ft,
        )
    }
}

/// A time since the Unix epoch as a UTC `SYSTEMTIME` (day of week 0 = Sunday).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// // 2000-03-01 12:34:56.789 UTC, a Wednesday.
/// let t = prfmon::datablock::system_time_utc(Duration::from_millis(951_914_096_789));
/// let t = prfdata_wire::snapshot::SystemTimeFields::from(t);
/// assert_eq!((t.year, t.month, t.day, t.day_of_week), (2000, 3, 1, 3));
/// assert_eq!((t.hour, t.minute, t.second, t.milliseconds), (12, 34, 56, 789));
/// ```
pub fn system_time_utc(since_epoch: std::time::Duration) -> SystemTime {
    let secs = since_epoch.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days: days since 1970-01-01 → proleptic Gregorian date.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    SystemTime {
        year: U16::new(u16::try_from(year).unwrap_or(u16::MAX)),
        month: U16::new(month as u16),
        // 1970-01-01 was a Thursday (4).
        day_of_week: U16::new(((days + 4).rem_euclid(7)) as u16),
        day: U16::new(day as u16),
        hour: U16::new((rem / 3600) as u16),
        minute: U16::new((rem / 60 % 60) as u16),
        second: U16::new((rem % 60) as u16),
        milliseconds: U16::new(since_epoch.subsec_millis() as u16),
    }
}

/// This machine's name, as perflib puts it in `SystemName`: the kernel's node name
/// (`uname -n`).
///
/// # Examples
///
/// ```
/// assert!(!prfmon::datablock::host_name().is_empty());
/// ```
pub fn host_name() -> String {
    let name = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    if name.is_empty() {
        "localhost".to_owned()
    } else {
        name
    }
}

/// Assembles a PERF_DATA_BLOCK from the objects the providers returned.
///
/// `providers` holds each provider's Collect output (whole PERF_OBJECT_TYPEs, already
/// validated) with the number of objects in it; the outputs are copied in order. Every object
/// in them is a multiple of 8 bytes (the collector pads DWORD-aligned ones: see
/// [`crate::collector::realign`]), so each object starts 8-aligned. `DefaultObject` is the name index
/// of the first object, or -1 if there is none.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// let object = prfdata_testkit::sample::sample_object(1848);
/// let out = ProviderOutput { bytes: object.clone(), num_objects: 1 };
/// let block = build_data_block("box", &CollectionTimes::now(), &[out]);
/// assert_eq!(block.len(), 96 + object.len());
/// let snap = prfdata_wire::snapshot::decode(&block)?;
/// assert_eq!(snap.default_object, 1848);
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn build_data_block(
    system_name: &str,
    times: &CollectionTimes,
    providers: &[ProviderOutput],
) -> Vec<u8> {
    let data_len: usize = providers.iter().map(|p| p.bytes.len()).sum();
    let start = times.writer(system_name, data_len);
    providers
        .iter()
        .fold(start, |w, p| w.objects(&p.bytes, p.num_objects))
        .finish()
}

/// One provider's validated Collect output.
///
/// # Examples
///
/// ```
/// let out = prfmon::datablock::ProviderOutput { bytes: Vec::new(), num_objects: 0 };
/// assert!(out.bytes.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderOutput {
    /// The PERF_OBJECT_TYPEs it wrote.
    pub bytes: Vec<u8>,
    /// `*lpNumObjectTypes`.
    pub num_objects: u32,
}

/// One object written by an [`ObjectBuilder`].
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::ObjectBuilder;
/// let out = prfmon::datablock::ProviderOutput::from(&ObjectBuilder::new(10));
/// assert_eq!((out.bytes.len(), out.num_objects), (64 + 8, 1));
/// ```
impl From<&ObjectBuilder> for ProviderOutput {
    fn from(object: &ObjectBuilder) -> Self {
        ProviderOutput {
            bytes: object.build(),
            num_objects: 1,
        }
    }
}

impl ProviderOutput {
    /// The `ObjectNameTitleIndex` of each object, in order: the objects are walked by their
    /// `TotalByteLength` (validated output: each one is whole), stopping at anything short.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::ProviderOutput;
    /// let bytes = [prfdata_testkit::sample::sample_object(1848), prfdata_testkit::sample::sample_object(1860)].concat();
    /// let out = ProviderOutput { bytes, num_objects: 2 };
    /// assert_eq!(out.object_indexes(), [1848, 1860]);
    /// ```
    pub fn object_indexes(&self) -> Vec<u32> {
        let word = |at: usize| -> Option<u32> {
            let b = self.bytes.get(at..at.checked_add(4)?)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let mut out = Vec::with_capacity(self.num_objects as usize);
        let mut at = 0usize;
        for _ in 0..self.num_objects {
            let (Some(length), Some(index)) = (word(at), word(at + 12)) else {
                break;
            };
            out.push(index);
            if length == 0 {
                break;
            }
            at = at.saturating_add(length as usize);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_epoch_and_a_leap_day() {
        let t = system_time_utc(Duration::ZERO);
        assert_eq!(
            (
                t.year.get(),
                t.month.get(),
                t.day.get(),
                t.day_of_week.get()
            ),
            (1970, 1, 1, 4)
        );
        // 2024-02-29 00:00:00 UTC = 1709164800.
        let t = system_time_utc(Duration::from_secs(1_709_164_800));
        assert_eq!(
            (
                t.year.get(),
                t.month.get(),
                t.day.get(),
                t.day_of_week.get()
            ),
            (2024, 2, 29, 4)
        );
    }

    #[test]
    fn header_fields_are_as_perflib_writes_them() {
        let times = CollectionTimes::now();
        let bytes = build_data_block("abcd", &times, &[]);
        let snap = prfdata_wire::snapshot::decode(&bytes).unwrap();
        assert_eq!((snap.version, snap.revision), (1, 1));
        // 88 + 10 bytes of name → 104.
        assert_eq!(snap.header_length, 104);
        assert_eq!(snap.total_byte_length, 104);
        assert_eq!(snap.default_object, -1);
        assert_eq!(snap.system_name, "abcd");
        assert_eq!(snap.perf_time_100nsec, times.perf_time_100nsec);
    }
}

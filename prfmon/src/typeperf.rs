//! typeperf's log format: the PDH text log ("PDH-CSV 4.0" / "PDH-TSV 4.0") that Windows'
//! `typeperf` writes, and that perfmon, relog, PAL and the many scripts that read typeperf logs
//! read back.
//!
//! # The format, as matched here
//!
//! ```text
//! "(PDH-CSV 4.0) (Coordinated Universal Time)(0)","\\box\PrfData Demo Service\Jobs/sec","\\box\PrfData Demo Service\Queue length"
//! "11/22/2026 03:41:05.123"," ","3"
//! "11/22/2026 03:41:06.124","41.997","4"
//! ```
//!
//! - **Header row.** The first field is `(PDH-CSV 4.0)` (`(PDH-TSV 4.0)` for TSV) followed by
//!   ` (<time zone name>)(<bias>)`, as pdh.dll's text-log writer builds it from
//!   `GetTimeZoneInformation`: the bias is in minutes *west* of UTC and includes daylight saving
//!   time when it is in force (`(GMT Standard Time)(-60)` in a British summer, `(Pacific
//!   Daylight Time)(420)`). Linux has no Windows zone names: UTC is written as Windows writes it,
//!   `Coordinated Universal Time`; any other zone by its IANA name (`Europe/Paris`), from `TZ`
//!   when set, else from the system's `/etc/localtime` ([`TimeZone::local_at`]). The other
//!   fields are the full counter paths, `\\HOST\Object(Instance)\Counter`, the host being the
//!   collection's `SystemName`.
//! - **Sample rows.** The first field is the local time of the collection
//!   (`PERF_DATA_BLOCK.PerfTime100nSec`) as `MM/DD/YYYY HH:MM:SS.mmm`; then one field per
//!   counter.
//! - **Values.** PDH's text log formats with `PDH_FMT_DOUBLE | PDH_FMT_NOCAP100` and no scale:
//!   the true value, percentages not capped at 100; a counter's scale factor (the Windows 95
//!   stat servers' `factor: / 1024`) is part of its displayed value and applied
//!   ([`crate::factor`]). A value that cannot be computed (the first
//!   sample of a rate, an instance that is gone, a clock that stood still) is a single space,
//!   `" "`, as PDH writes it. Numbers are written two ways ([`ValueStyle`]): on the console as
//!   typeperf prints them, with six decimals (`"41.997000"`); in a file (`-o`) as pdh.dll's log
//!   writer does, `%.20g` from the Windows C runtime, which yields at most 17 significant
//!   digits and no trailing zeros (`"0.10000000000000001"`, `"3"`) — see [`g20`].
//! - **Quoting and separators.** Every field is quoted, the header's too; fields are separated
//!   by `,` (CSV) or a tab (TSV). Files end rows with CRLF, as pdh.dll writes them; the console
//!   with `\n`. Quoting is done by the `csv` crate (a `"` inside a name is doubled).
//!
//! What is not matched: typeperf also prints a blank line before the header and "Exiting,
//! please wait..." / "The command completed successfully." on the console; those would make
//! the output unparseable as CSV, so they are not written. BIN and SQL logs are not offered.
//!
//! # Examples
//!
//! ```
//! use prfmon::typeperf::{LogFormat, LogWriter, TimeZone, ValueStyle};
//! let mut out = Vec::new();
//! let mut log = LogWriter::new(&mut out, LogFormat::Csv, ValueStyle::Console);
//! let tz = TimeZone { name: "Coordinated Universal Time".into(), bias_minutes: 0 };
//! log.write_header(&tz, &[r"\\box\Memory\Available Bytes".to_owned()])?;
//! log.write_row("11/22/2026 03:41:05.123", &[Some(1024.0)])?;
//! log.write_row("11/22/2026 03:41:06.123", &[None])?;
//! drop(log);
//! assert_eq!(String::from_utf8(out)?, concat!(
//!     r#""(PDH-CSV 4.0) (Coordinated Universal Time)(0)","\\box\Memory\Available Bytes""#, "\n",
//!     r#""11/22/2026 03:41:05.123","1024.000000""#, "\n",
//!     r#""11/22/2026 03:41:06.123"," ""#, "\n",
//! ));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod counter_file;

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::io::Write;
use std::str::FromStr;
use std::time::SystemTime;

use chrono::{DateTime, Local, Offset, TimeZone as _};

use prfdata_untrusted::text::{escape_field, Style};

use crate::names::Names;
use prfdata_wire::snapshot::DataSnapshot;

/// The text log's flavour: `-f CSV` or `-f TSV`.
///
/// # Examples
///
/// ```
/// use prfmon::typeperf::LogFormat;
/// assert_eq!("tsv".parse::<LogFormat>()?, LogFormat::Tsv);
/// assert!("BIN".parse::<LogFormat>().is_err());
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Comma-separated, `(PDH-CSV 4.0)`.
    #[default]
    Csv,
    /// Tab-separated, `(PDH-TSV 4.0)`.
    Tsv,
}

impl LogFormat {
    /// The first field's signature: `(PDH-CSV 4.0)` or `(PDH-TSV 4.0)`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfmon::typeperf::LogFormat::Tsv.signature(), "(PDH-TSV 4.0)");
    /// ```
    pub fn signature(self) -> &'static str {
        match self {
            LogFormat::Csv => "(PDH-CSV 4.0)",
            LogFormat::Tsv => "(PDH-TSV 4.0)",
        }
    }

    /// The field separator.
    fn delimiter(self) -> u8 {
        match self {
            LogFormat::Csv => b',',
            LogFormat::Tsv => b'\t',
        }
    }
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "CSV" => Ok(LogFormat::Csv),
            "TSV" => Ok(LogFormat::Tsv),
            "BIN" | "SQL" => Err(format!(
                "the {s} log format is not supported; use CSV or TSV"
            )),
            _ => Err(format!("unknown log format `{s}`; use CSV or TSV")),
        }
    }
}

/// How numbers are written (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use prfmon::typeperf::ValueStyle;
/// assert_eq!(ValueStyle::Console.format(Some(0.5)), "0.500000");
/// assert_eq!(ValueStyle::File.format(Some(0.5)), "0.5");
/// assert_eq!(ValueStyle::File.format(None), " ");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueStyle {
    /// typeperf's console output: six decimals.
    Console,
    /// pdh.dll's log files: `%.20g` as the Windows C runtime prints it ([`g20`]).
    File,
}

impl ValueStyle {
    /// A value as a field: the number, or `" "` when there is none.
    pub fn format(self, value: Option<f64>) -> String {
        match value {
            None => " ".to_owned(),
            Some(v) => match self {
                ValueStyle::Console => format!("{v:.6}"),
                ValueStyle::File => g20(v),
            },
        }
    }
}

/// `printf("%.20g", value)` as msvcrt.dll (which pdh.dll uses) prints it: the value rounded to
/// 17 significant digits (msvcrt prints zeros after the 17th), in `%g` layout — plain notation
/// for decimal exponents from −4 to 19, else `d.ddde+XX` — with trailing zeros removed.
///
/// # Examples
///
/// ```
/// use prfmon::typeperf::g20;
/// assert_eq!(g20(88.359340674585567), "88.359340674585567");
/// assert_eq!(g20(3.0), "3");
/// assert_eq!(g20(-0.25), "-0.25");
/// assert_eq!(g20(1e-7), "9.9999999999999995e-08");
/// assert_eq!(g20(123456789012345678901.0), "1.2345678901234568e+20");
/// assert_eq!(g20(0.0), "0");
/// ```
pub fn g20(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    if value == 0.0 {
        return "0".to_owned();
    }
    // 17 significant digits: d.dddddddddddddddde±x.
    let sci = format!("{:.16e}", value.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if value < 0.0 { "-" } else { "" };
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if !(-4..20).contains(&exp) {
        let m = trim(format!("{}.{}", &digits[..1], &digits[1..]));
        let e_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{e_sign}{:02}", exp.abs());
    }
    let body = if exp >= 0 {
        let int_len = (exp + 1) as usize;
        if int_len >= digits.len() {
            format!("{digits}{}", "0".repeat(int_len - digits.len()))
        } else {
            trim(format!("{}.{}", &digits[..int_len], &digits[int_len..]))
        }
    } else {
        trim(format!("0.{}{digits}", "0".repeat((-exp - 1) as usize)))
    };
    format!("{sign}{body}")
}

/// The local time zone as the header names it: a name and the bias in minutes west of UTC
/// (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// let tz = prfmon::typeperf::TimeZone { name: "Europe/Paris".into(), bias_minutes: -60 };
/// assert_eq!(tz.header_suffix(), " (Europe/Paris)(-60)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeZone {
    /// The zone's name.
    pub name: String,
    /// Minutes to add to local time to get UTC (Windows' `Bias` + the daylight or standard
    /// bias in force).
    pub bias_minutes: i32,
}

/// What Windows calls UTC.
const UTC_NAME: &str = "Coordinated Universal Time";

/// The zone names that mean UTC (with no offset, named [`UTC_NAME`] as Windows does).
const UTC_ALIASES: [&str; 10] = [
    "",
    "UTC",
    "UCT",
    "Etc/UTC",
    "Etc/UCT",
    "Etc/Universal",
    "Universal",
    "Zulu",
    "Etc/Zulu",
    "UTC0",
];

impl TimeZone {
    /// The local zone at `time`: `TZ` (when set) or the system zone's IANA name, UTC spelt as
    /// Windows spells it, and the offset in force at `time` (from `chrono`'s local time, which
    /// follows `TZ` and the tz database).
    ///
    /// # Examples
    ///
    /// ```
    /// let tz = prfmon::typeperf::TimeZone::local_at(std::time::SystemTime::now());
    /// assert!(!tz.name.is_empty());
    /// assert!(tz.bias_minutes.abs() <= 14 * 60);
    /// ```
    pub fn local_at(time: SystemTime) -> Self {
        let utc: DateTime<chrono::Utc> = time.into();
        let offset = Local
            .offset_from_utc_datetime(&utc.naive_utc())
            .fix()
            .local_minus_utc();
        let name = std::env::var("TZ")
            .ok()
            .map(|tz| {
                let tz = tz.trim_start_matches(':');
                tz.rsplit_once("zoneinfo/")
                    .map_or(tz, |(_, zone)| zone)
                    .to_owned()
            })
            .filter(|tz| !tz.is_empty())
            .or_else(|| iana_time_zone::get_timezone().ok())
            .unwrap_or_default();
        let utc_alias = UTC_ALIASES.contains(&name.as_str());
        TimeZone {
            name: if utc_alias && offset == 0 {
                UTC_NAME.to_owned()
            } else if name.is_empty() {
                "Local Time".to_owned()
            } else {
                name
            },
            bias_minutes: -offset / 60,
        }
    }

    /// ` (<name>)(<bias>)`, as it follows the signature in the header.
    pub fn header_suffix(&self) -> String {
        format!(" ({})({})", self.name, self.bias_minutes)
    }
}

/// A sample's time stamp: local time as `MM/DD/YYYY HH:MM:SS.mmm`.
///
/// # Examples
///
/// ```
/// let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_763_782_865_123);
/// let stamp = prfmon::typeperf::timestamp(t);
/// assert_eq!(stamp.len(), 23);
/// assert!(stamp.ends_with(":05.123"), "{stamp}");
/// ```
pub fn timestamp(time: SystemTime) -> String {
    let local: DateTime<Local> = time.into();
    local.format("%m/%d/%Y %H:%M:%S%.3f").to_string()
}

/// Writes a typeperf log: one header, then one row per sample, flushed as it is written so a
/// reader (or a `tail -f`) sees every sample at once.
///
/// # Examples
///
/// ```
/// use prfmon::typeperf::{LogFormat, LogWriter, TimeZone, ValueStyle};
/// let mut out = Vec::new();
/// let mut log = LogWriter::new(&mut out, LogFormat::Tsv, ValueStyle::File);
/// let tz = TimeZone { name: "Europe/Paris".into(), bias_minutes: -60 };
/// log.write_header(&tz, &[r"\\h\A\B".to_owned(), r"\\h\A\C".to_owned()])?;
/// log.write_row("01/02/2026 10:00:00.000", &[Some(1.5), None])?;
/// drop(log);
/// assert_eq!(String::from_utf8(out)?,
///     "\"(PDH-TSV 4.0) (Europe/Paris)(-60)\"\t\"\\\\h\\A\\B\"\t\"\\\\h\\A\\C\"\r\n\
///      \"01/02/2026 10:00:00.000\"\t\"1.5\"\t\" \"\r\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LogWriter<W: Write> {
    csv: csv::Writer<W>,
    format: LogFormat,
    style: ValueStyle,
}

impl<W: Write> LogWriter<W> {
    /// A log in `format` with numbers in `style`; rows end with CRLF in [`ValueStyle::File`]
    /// and `\n` on the console.
    pub fn new(writer: W, format: LogFormat, style: ValueStyle) -> Self {
        let terminator = match style {
            ValueStyle::File => csv::Terminator::CRLF,
            ValueStyle::Console => csv::Terminator::Any(b'\n'),
        };
        let csv = csv::WriterBuilder::new()
            .delimiter(format.delimiter())
            .quote_style(csv::QuoteStyle::Always)
            .terminator(terminator)
            .flexible(true)
            .from_writer(writer);
        LogWriter { csv, format, style }
    }

    /// Writes the header row: signature and time zone, then the counter paths.
    ///
    /// # Errors
    ///
    /// The writer's error.
    pub fn write_header(&mut self, tz: &TimeZone, paths: &[String]) -> Result<(), csv::Error> {
        self.start_header(tz)?;
        for path in paths {
            self.header_field(path)?;
        }
        self.end_header()
    }

    /// Writes the header's first field (signature and time zone): the start of a header
    /// whose paths are written one at a time ([`LogWriter::header_field`], then
    /// [`LogWriter::end_header`]), as a log of a million columns finds them.
    ///
    /// # Errors
    ///
    /// The writer's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::typeperf::{LogFormat, LogWriter, TimeZone, ValueStyle};
    /// let mut out = Vec::new();
    /// let mut log = LogWriter::new(&mut out, LogFormat::Csv, ValueStyle::Console);
    /// let tz = TimeZone { name: "Coordinated Universal Time".into(), bias_minutes: 0 };
    /// log.start_header(&tz)?;
    /// log.header_field(r"\\h\A\B")?;
    /// log.end_header()?;
    /// drop(log);
    /// assert_eq!(String::from_utf8(out)?, "\"(PDH-CSV 4.0) (Coordinated Universal Time)(0)\",\"\\\\h\\A\\B\"\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_header(&mut self, tz: &TimeZone) -> Result<(), csv::Error> {
        let first = format!("{}{}", self.format.signature(), tz.header_suffix());
        self.csv.write_field(first)
    }

    /// Writes one counter path of the header: on the console with every control character
    /// escaped, newline and tab too, so that a name never starts a line of its own; in a file
    /// as it is (CSV quotes it). See [`LogWriter::start_header`].
    ///
    /// # Errors
    ///
    /// The writer's error.
    pub fn header_field(&mut self, path: &str) -> Result<(), csv::Error> {
        match self.style {
            ValueStyle::Console => self
                .csv
                .write_field(escape_field(path, Style::Terminal).as_ref()),
            ValueStyle::File => self.csv.write_field(path),
        }
    }

    /// Ends the header row and flushes it. See [`LogWriter::start_header`].
    ///
    /// # Errors
    ///
    /// The writer's error.
    pub fn end_header(&mut self) -> Result<(), csv::Error> {
        self.csv.write_record(None::<&[u8]>)?;
        Ok(self.csv.flush()?)
    }

    /// Writes one sample row: the time stamp (see [`timestamp`]), then the values.
    ///
    /// # Errors
    ///
    /// The writer's error.
    pub fn write_row(&mut self, stamp: &str, values: &[Option<f64>]) -> Result<(), csv::Error> {
        let fields = values.iter().map(|v| self.style.format(*v));
        self.csv
            .write_record(std::iter::once(stamp.to_owned()).chain(fields))?;
        Ok(self.csv.flush()?)
    }
}

/// The paths `typeperf -q` lists: one per counter, `\Object(*)\Counter` for objects with
/// instances and `\Object\Counter` for the others; with `expanded` (`-qx`), one per instance,
/// `\Object(Instance)\Counter`. `object` keeps only the object of that name (any case). In the
/// order of [`crate::sampler::offers`], without duplicates, each handed to `each` as it is
/// found (a million instances are never listed at once); returns how many there were.
///
/// # Errors
///
/// The first error `each` returns.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfmon::typeperf::query_paths;
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let names = prfmon::names::Names::default();
/// let list = |object: Option<&str>, expanded: bool| {
///     let mut paths = Vec::new();
///     query_paths(&snap, &names, object, expanded, |p| Ok::<(), ()>(paths.push(p.to_owned()))).unwrap();
///     paths
/// };
/// assert_eq!(list(None, false), [r"\#1848(*)\#1850", r"\#1848(*)\#1852"]);
/// assert_eq!(list(Some("#1848"), true).len(), 4);
/// assert!(list(Some("Memory"), true).is_empty());
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn query_paths<E>(
    snapshot: &DataSnapshot,
    names: &Names,
    object: Option<&str>,
    expanded: bool,
    mut each: impl FnMut(&str) -> Result<(), E>,
) -> Result<usize, E> {
    // Paths written so far, hashed twice (two paths would have to agree on 128 random bits).
    let keys = (RandomState::new(), RandomState::new());
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let mut count = 0;
    let mut result = Ok(());
    crate::sampler::each_offer(snapshot, names, |offer| {
        let a = &offer.available;
        if result.is_err() || object.is_some_and(|o| !o.trim().eq_ignore_ascii_case(&a.object)) {
            return;
        }
        let path = match (&a.instance, expanded) {
            (Some(_), false) => format!(r"\{}(*)\{}", a.object, a.counter),
            _ => a.path().to_string(),
        };
        if seen.insert((keys.0.hash_one(&path), keys.1.hash_one(&path))) {
            result = each(&path);
            count += 1;
        }
    });
    result.map(|()| count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g20_matches_msvcrt_digits_and_layout() {
        for (v, s) in [
            (1.0, "1"),
            (100.0, "100"),
            (0.1, "0.10000000000000001"),
            (1.0 / 3.0, "0.33333333333333331"),
            (12345678.0, "12345678"),
            (1e19, "10000000000000000000"),
            (1e20, "1e+20"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-1.5e-300, "-1.5000000000000001e-300"),
            (4294967295.0, "4294967295"),
        ] {
            assert_eq!(g20(v), s, "{v:e}");
        }
    }

    #[test]
    fn a_csv_header_quotes_everything_and_doubles_quotes() {
        let mut out = Vec::new();
        let mut log = LogWriter::new(&mut out, LogFormat::Csv, ValueStyle::File);
        let tz = TimeZone {
            name: UTC_NAME.into(),
            bias_minutes: 0,
        };
        log.write_header(&tz, &[r#"\\h\A("x")\B"#.to_owned()])
            .unwrap();
        log.write_row("x", &[Some(100.0)]).unwrap();
        drop(log);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"(PDH-CSV 4.0) (Coordinated Universal Time)(0)\",\"\\\\h\\A(\"\"x\"\")\\B\"\r\n\"x\",\"100\"\r\n"
        );
    }

    #[test]
    fn the_log_format_parses_without_regard_to_case() {
        assert_eq!("Csv".parse::<LogFormat>(), Ok(LogFormat::Csv));
        assert!("sql"
            .parse::<LogFormat>()
            .unwrap_err()
            .contains("not supported"));
    }
}

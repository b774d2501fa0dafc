//! `prfmon typeperf PATH... [-si [[hh:]mm:]ss] [-sc SAMPLES] [-o FILE] [-f CSV|TSV]` and
//! `prfmon typeperf -q [OBJECT]` / `-qx [OBJECT]`: Windows' typeperf over prfdata counters.
//!
//! The paths are expanded once, at the first collection, into the log's columns (a CSV header
//! cannot change): an instance that goes away afterwards gets `" "`, as in typeperf. One row is
//! written per collection, the first included (rates have no value in it yet); without `-sc`
//! it samples until interrupted. The format is described in [`prfmon::typeperf`].
//!
//! Each collection is `Global`; objects the paths name that `Global` does not return (costly
//! objects) are collected by index as well ([`Source`]). `-q` lists `Global` and `Costly`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cli::stdout::errln;
use clap::Args;
use prfmon::decode::DataSnapshot;
use prfmon::merge::merge_missing;
use prfmon::names::Names;
use prfmon::pdh::{self, CounterPath, FormatOptions};
use prfmon::sampler::{self, Columns, Sampler};
use prfmon::typeperf::{query_paths, timestamp, LogFormat, LogWriter, TimeZone, ValueStyle};

/// `prfmon typeperf ...`. typeperf's single-dash switches (`-si`, `-sc`, `-o`, `-f`, `-q`,
/// `-qx`, any case) are accepted as well as the long forms shown here.
#[derive(Args, Debug)]
pub struct TypeperfArgs {
    /// Counter paths, e.g. `"\PrfData Demo Worker(*)\% Busy"`.
    paths: Vec<String>,
    /// Time between samples, `[[hh:]mm:]ss` (fractions of a second allowed). typeperf: `-si`.
    #[arg(long = "si", value_name = "[[hh:]mm:]ss", default_value = "1")]
    interval: String,
    /// Number of samples to take; without it, sample until interrupted. typeperf: `-sc`.
    #[arg(long = "sc", value_name = "SAMPLES")]
    samples: Option<u64>,
    /// Write the log to FILE instead of standard output. typeperf: `-o`.
    #[arg(long = "output", short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// The log format: CSV or TSV. typeperf: `-f`.
    #[arg(long = "format", short = 'f', default_value = "CSV", value_parser = parse_format)]
    format: LogFormat,
    /// List the available counters (`\Object(*)\Counter`), of OBJECT only if given. typeperf: `-q`.
    #[arg(long = "query", short = 'q', value_name = "OBJECT", num_args = 0..=1)]
    query: Option<Option<String>>,
    /// List the available counters with every instance, of OBJECT only if given. typeperf: `-qx`.
    #[arg(long = "query-expanded", value_name = "OBJECT", num_args = 0..=1, conflicts_with = "query")]
    query_expanded: Option<Option<String>>,
    /// The language of counter names (a Perflib subkey).
    #[arg(long, default_value = "009")]
    lang: String,
    #[command(flatten)]
    collector: super::CollectorArgs,
    #[command(flatten)]
    remote: super::RemoteArgs,
}

fn parse_format(s: &str) -> Result<LogFormat, String> {
    s.parse()
}

/// `ss`, `mm:ss` or `hh:mm:ss`, each part a non-negative number (the last may have a
/// fraction), as a positive duration.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad sample interval `{text}`: expected [[hh:]mm:]ss, e.g. 1, 0.5, 01:30");
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() > 3 {
        return Err(bad());
    }
    let mut seconds = 0.0_f64;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let v: f64 = if last {
            part.parse().map_err(|_| bad())?
        } else {
            f64::from(part.parse::<u32>().map_err(|_| bad())?)
        };
        seconds = seconds * 60.0 + v;
    }
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 1e9 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Where the sampling subcommands get their collections: the collector over the registry or
/// a remote machine ([`super::OpenSource`]), the names of one language, and the costly objects
/// the paths name.
pub struct Source {
    source: super::OpenSource,
    /// The names of counters and objects.
    pub names: Names,
    /// The apps' name ranges, for the watch leases held on what is shown.
    pub apps: prfmon::lease::AppRanges,
    /// Seed 000's scale factors (for `watch`'s displayed values; typeperf's CSV stays as PDH's).
    pub factors: prfmon::factor::Factors,
    /// Object indexes collected after `Global` at every collection: the objects the paths name
    /// that `Global` does not return (costly objects), as `"i1 i2"`.
    extra: Option<String>,
}

impl Source {
    /// Opens the source of `requests` ([`super::OpenSource::open`]: the remote machine that
    /// `--computer` or the paths name, else the checked local registry and a collector) and
    /// its names of `lang`; `command` names the subcommand in messages.
    pub fn open(
        command: &str,
        lang: &str,
        collector: &super::CollectorArgs,
        remote: &super::RemoteArgs,
        requests: &[CounterPath],
    ) -> Result<Self, String> {
        let machines: Vec<&str> = requests
            .iter()
            .filter_map(|r| r.machine.as_deref())
            .collect();
        let source = super::OpenSource::open(command, lang, collector, remote, &machines)?;
        Ok(Source {
            names: source.names.clone(),
            apps: source.apps.clone(),
            factors: source.factors.clone(),
            source,
            extra: None,
        })
    }

    /// Arranges for the objects of `requests` that `snapshot` (a `Global` collection) lacks
    /// but the names know to be collected by index from now on; true if there are any.
    pub fn include_missing(&mut self, requests: &[CounterPath], snapshot: &DataSnapshot) -> bool {
        let mut indexes: Vec<u32> = Vec::new();
        for r in requests {
            let Some(index) = self.names.index_of(&r.object) else {
                continue;
            };
            if !snapshot.objects.iter().any(|o| o.name_index == index) && !indexes.contains(&index)
            {
                indexes.push(index);
            }
        }
        let extra: Vec<String> = indexes.iter().map(u32::to_string).collect();
        self.extra = (!extra.is_empty()).then(|| extra.join(" "));
        self.extra.is_some()
    }

    /// One collection: `Global`, with the extra objects appended (see
    /// [`Source::include_missing`]). The extra collection also holds the objects of its
    /// instances' parents; those `Global` has already are kept once, and the children
    /// re-pointed at them ([`prfmon::merge`]).
    pub fn collect(&mut self) -> Result<DataSnapshot, String> {
        let mut snapshot = self.collect_query("Global")?;
        if let Some(extra) = self.extra.clone() {
            let more = self.collect_query(&extra)?;
            merge_missing(&mut snapshot, more);
        }
        Ok(snapshot)
    }

    /// The first collection for `requests`: `Global`, and if the requests name objects it
    /// lacks, a second one with them ([`Source::include_missing`]), the first dropped before.
    pub fn collect_first(&mut self, requests: &[CounterPath]) -> Result<DataSnapshot, String> {
        let first = self.collect()?;
        if !self.include_missing(requests, &first) {
            return Ok(first);
        }
        drop(first);
        self.collect()
    }

    /// One collection of `query`, decoded.
    pub fn collect_query(&mut self, query: &str) -> Result<DataSnapshot, String> {
        self.source.collect_decoded(query)
    }

    /// Closes the collector (providers' Close, host processes stopped) or the connection.
    pub fn close(self) {
        drop(self.source);
    }
}

/// Runs `prfmon typeperf`.
pub fn run(args: TypeperfArgs) -> ExitCode {
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("prfmon typeperf: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why the log stopped.
fn write_error(e: csv::Error) -> String {
    format!("cannot write the log: {e}")
}

/// Whether a write failed because the reader went away (`prfmon typeperf ... | head`): then
/// typeperf stops quietly.
fn reader_gone(e: &csv::Error) -> bool {
    matches!(e.kind(), csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
}

fn run_inner(args: TypeperfArgs) -> Result<(), String> {
    let interval = parse_interval(&args.interval)?;
    if args.samples == Some(0) {
        return Err("-sc must be at least 1".into());
    }
    let query = match (&args.query, &args.query_expanded) {
        (Some(object), _) => Some((object.clone(), false)),
        (None, Some(object)) => Some((object.clone(), true)),
        (None, None) => None,
    };
    if query.is_none() && args.paths.is_empty() {
        return Err("name at least one counter path, e.g. \"\\PrfData Demo Service\\Jobs/sec\", or list them with -q".into());
    }
    let requests = args
        .paths
        .iter()
        .map(|p| pdh::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;

    let out: Box<dyn Write> = match &args.output {
        Some(file) => Box::new(
            std::fs::File::create(file)
                .map_err(|e| format!("cannot create {}: {e}", file.display()))?,
        ),
        // The exact text in a file; on standard output, control characters escaped (a CSV
        // field with `\x1b` is still CSV).
        None => Box::new(crate::cli::stdout::EscapedWriter::new(
            std::io::stdout().lock(),
        )),
    };
    let mut source = Source::open(
        "typeperf",
        &args.lang,
        &args.collector,
        &args.remote,
        &requests,
    )?;

    if let Some((object, expanded)) = query {
        return list(&mut source, out, object.as_deref(), expanded);
    }

    let style = if args.output.is_some() {
        ValueStyle::File
    } else {
        ValueStyle::Console
    };
    let log = LogWriter::new(out, args.format, style);
    write_log(source, log, requests, interval, args.samples)
}

/// Samples `requests` every `interval` (`samples` times, or until interrupted) into `log`:
/// the header at the first collection, then a row per collection.
fn write_log(
    mut source: Source,
    mut log: LogWriter<Box<dyn Write>>,
    requests: Vec<CounterPath>,
    interval: Duration,
    samples: Option<u64>,
) -> Result<(), String> {
    let first = source.collect_first(&requests)?;
    let names = source.names.clone();
    sampler::check(&requests, &first, &names).map_err(|e| e.to_string())?;
    // PDH's text log: the true value, percentages not capped (PDH_FMT_NOCAP100, as typeperf
    // logs a process's "% Processor Time" above 100 on several cores), no scale. `watch` caps
    // unless asked not to (`--nocap100`), as perfmon's chart does.
    let options = FormatOptions {
        cap_percent: false,
        scale: None,
    };
    // The header, written as the columns are found (a CSV header cannot change).
    let tz = TimeZone::local_at(sample_time(&first));
    let columns = log.start_header(&tz).and_then(|()| {
        let columns = Columns::new(&requests, &first, &names, options, |path| {
            log.header_field(&path.to_string())
        })?;
        log.end_header().map(|()| columns)
    });
    let mut columns = match columns {
        Ok(columns) => columns,
        Err(e) if reader_gone(&e) => {
            source.close();
            return Ok(());
        }
        Err(e) => return Err(write_error(e)),
    };
    // Watch leases on what is logged, renewed at every sample (seed 000's start/stop).
    let mut leases = prfmon::lease::Leases::new(source.apps.clone(), interval);
    let sampler = Sampler::new(requests, options);

    let start = Instant::now();
    let mut snapshot = first;
    let mut taken: u64 = 0;
    loop {
        leases.hold(&sampler.titles(&snapshot, &names));
        let values = columns.sample(&snapshot, &names);
        match log.write_row(&timestamp(sample_time(&snapshot)), &values) {
            Ok(()) => {}
            Err(e) if reader_gone(&e) => break,
            Err(e) => return Err(write_error(e)),
        }
        taken += 1;
        if samples.is_some_and(|n| taken >= n) {
            break;
        }
        // Fixed-rate schedule: sample k is due at start + k × interval, whatever collecting took.
        let due = start + interval.mul_f64(taken as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // The last collection goes before the next comes: two are never held at once.
        drop(snapshot);
        snapshot = match source.collect() {
            Ok(s) => s,
            Err(e) => {
                errln!("prfmon typeperf: {e}");
                DataSnapshot::default()
            }
        };
    }
    leases.release();
    source.close();
    Ok(())
}

/// `typeperf -q` / `-qx`: the counters of `Global` and `Costly` (of `object` only if given),
/// written to `out` as they are found.
fn list(
    source: &mut Source,
    mut out: Box<dyn Write>,
    object: Option<&str>,
    expanded: bool,
) -> Result<(), String> {
    let mut both = source.collect_query("Global")?;
    let costly = source.collect_query("Costly")?;
    // `Costly` also returns the non-costly parents of costly objects: listed once.
    merge_missing(&mut both, costly);
    let listed = query_paths(&both, &source.names, object, expanded, |p| {
        writeln!(out, "{p}")
    })
    .and_then(|count| out.flush().map(|()| count));
    match listed {
        Ok(0) => Err(match object {
            Some(o) => format!("no object named `{o}` is available"),
            None => "no counters are available".into(),
        }),
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the list: {e}"))
        }
        _ => Ok(()),
    }
}

/// When a collection was made, as its sample's time stamp gives it (now, if it says nothing
/// usable).
fn sample_time(snapshot: &DataSnapshot) -> std::time::SystemTime {
    prfmon::sampler::Sample {
        perf_time_100nsec: snapshot.perf_time_100nsec,
        system_name: String::new(),
        readings: Vec::new(),
        unmatched: Vec::new(),
    }
    .wall_time()
    .unwrap_or_else(std::time::SystemTime::now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_take_typeperf_forms_and_fractions() {
        assert_eq!(parse_interval("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_interval("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("01:30"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_interval("1:00:01"), Ok(Duration::from_secs(3601)));
        for bad in ["0", "", "x", "1:2:3:4", "-1", "1.5:00"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}

//! `prfmon typeperf PATH... [-cf FILE] [-si [[hh:]mm:]ss] [-sc SAMPLES] [-o FILE [-y]] [-f CSV|TSV]` and
//! `prfmon typeperf -q [OBJECT]` / `-qx [OBJECT]`: Windows' typeperf over prfdata counters.
//!
//! The paths are expanded once, at the first collection, into the log's columns (a CSV header
//! cannot change): an instance that goes away afterwards gets `" "`, as in typeperf. A path
//! without wildcards that names nothing then (an app not installed or not running yet) is not
//! an error: it is said on stderr (`not found now: PATH (did you mean ...?)`) and keeps its
//! column, `" "` until the counter appears; a wildcard that names nothing gets no column
//! ([`Columns`]). The names are read again when the registry changes
//! ([`prfmon::session::Facts`]), so a column follows an app installed, uninstalled or
//! renamed since. One row is written per collection, the first included (rates have no value
//! in it yet); without `-sc` it samples until interrupted, with `-sc` a path that matched
//! nothing in any sample makes the exit status 1. The format is described in
//! [`prfmon::typeperf`].
//!
//! Each collection is `Global`; objects the paths name that `Global` does not return (costly
//! objects) are collected by index as well ([`Session::sample`]). `-q` lists `Global` and `Costly`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cli::error::CliError;
use crate::cli::stdout::{errln, field};
use clap::Args;
use prfdata_wire::snapshot::DataSnapshot;
use prfmon::merge::merge_missing;
use prfmon::names::objects;
use prfmon::pdh::{self, CounterPath, FormatOptions};
use prfmon::report::plural;
use prfmon::sampler::{self, Columns, Sampler};
use prfmon::session::{Machine, Session};
use prfmon::typeperf::counter_file::read_counter_file;
use prfmon::typeperf::{query_paths, timestamp, LogFormat, LogWriter, TimeZone, ValueStyle};

/// `prfmon typeperf ...`. typeperf's single-dash switches (`-cf`, `-si`, `-sc`, `-o`, `-y`,
/// `-f`, `-q`, `-qx`, any case) are accepted as well as the long forms shown here.
#[derive(Args, Debug)]
pub struct TypeperfArgs {
    /// Counter paths, e.g. `"\PrfData Demo Worker(*)\% Busy"`.
    paths: Vec<String>,
    /// A file of counter paths to log as well, one per line (blank lines and lines starting
    /// with `#` skipped). typeperf: `-cf`.
    #[arg(long = "counter-file", value_name = "FILE")]
    counter_file: Option<PathBuf>,
    /// Time between samples, `[[hh:]mm:]ss` (fractions of a second allowed). typeperf: `-si`.
    #[arg(long = "si", value_name = "[[hh:]mm:]ss", default_value = "1")]
    interval: String,
    /// Number of samples to take; without it, sample until interrupted. typeperf: `-sc`.
    #[arg(long = "sc", value_name = "SAMPLES")]
    samples: Option<u64>,
    /// Write the log to FILE instead of standard output. typeperf: `-o`.
    #[arg(long = "output", short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Overwrite the `-o` file if it exists (without it, an existing file is kept and typeperf
    /// stops). typeperf: `-y`.
    #[arg(long = "yes")]
    yes: bool,
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

/// Opens the session of `requests` ([`super::open_session`]: the remote machine that
/// `--computer` or the paths name, else the checked local registry and a collector) with names
/// of `lang`; `command` names the subcommand in messages.
pub fn open(
    command: &str,
    lang: &str,
    collector: &super::CollectorArgs,
    remote: &super::RemoteArgs,
    requests: &[CounterPath],
) -> Result<Session, String> {
    let machines: Vec<&str> = requests
        .iter()
        .filter_map(|r| r.machine.as_deref())
        .collect();
    super::open_session(command, lang, collector, remote, &machines)
}

/// The objects `requests` name, once each: what [`Session::sample`] collects.
pub fn objects(requests: &[CounterPath]) -> Vec<String> {
    let mut objects: Vec<String> = Vec::new();
    for r in requests {
        if !objects.contains(&r.object) {
            objects.push(r.object.clone());
        }
    }
    objects
}

/// The first sample for `requests`, and the requests that name nothing in it, each said on
/// stderr as not found now (`prfmon COMMAND: not found now: PATH (did you mean ...?); ...`)
/// followed by what `then(request)` says will happen.
///
/// # Errors
///
/// The collection failed, or a request names another machine than the one collected.
pub fn collect_first(
    session: &mut Session,
    command: &str,
    requests: &[CounterPath],
    then: impl Fn(&CounterPath) -> &'static str,
) -> Result<(DataSnapshot, Vec<sampler::Unmatched>), String> {
    let first = session
        .sample(&objects(requests))
        .map_err(|e| e.to_string())?;
    let waiting = sampler::unmatched(requests, &first, &session.machine().names)
        .map_err(|e| e.to_string())?;
    for u in &waiting {
        let (path, near) = match &u.error {
            pdh::PathError::NoMatch { path, near } => (path.as_str(), near.as_slice()),
            other => return Err(other.to_string()),
        };
        let hint = if near.is_empty() {
            let object = requests.get(u.request).map_or("", |r| r.object.as_str());
            prfmon::absence::hint_for_object(session.machine(), object)
        } else {
            format!("did you mean {}?", near.join(", "))
        };
        let then = requests.get(u.request).map_or("", &then);
        errln!("prfmon {command}: not found now: {path} ({hint}); {then}");
    }
    Ok((first, waiting))
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

/// Runs `prfmon typeperf`.
pub fn run(args: TypeperfArgs) -> Result<ExitCode, CliError> {
    let interval = parse_interval(&args.interval)?;
    if args.samples == Some(0) {
        return Err("-sc must be at least 1".into());
    }
    let query = match (&args.query, &args.query_expanded) {
        (Some(object), _) => Some((object.clone(), false)),
        (None, Some(object)) => Some((object.clone(), true)),
        (None, None) => None,
    };
    let mut requests = parse_paths(&args.paths)?;
    if let Some(file) = &args.counter_file {
        requests.extend(read_counter_file(file).map_err(|e| e.to_string())?);
    }
    if query.is_none() && requests.is_empty() {
        return Err("name at least one counter path, e.g. \"\\PrfData Demo Service\\Jobs/sec\", or list them with -q".into());
    }

    let out: Box<dyn Write> = match &args.output {
        Some(file) => Box::new(create_output(file, args.yes)?),
        // The exact text in a file; on standard output, control characters escaped (a CSV
        // field with `\x1b` is still CSV).
        None => Box::new(crate::cli::stdout::EscapedWriter::new(
            std::io::stdout().lock(),
        )),
    };
    let mut session = open(
        "typeperf",
        &args.lang,
        &args.collector,
        &args.remote,
        &requests,
    )?;

    if let Some((object, expanded)) = query {
        let console = args.output.is_none();
        list(&mut session, out, object.as_deref(), expanded, console)?;
        return Ok(ExitCode::SUCCESS);
    }

    let style = if args.output.is_some() {
        ValueStyle::File
    } else {
        ValueStyle::Console
    };
    let log = LogWriter::new(out, args.format, style);
    write_log(session, log, requests, interval, args.samples)?;
    Ok(ExitCode::SUCCESS)
}

/// Creates the `-o` file: a new file, or with `yes` (`-y`) one that replaces what is there.
fn create_output(file: &std::path::Path, yes: bool) -> Result<std::fs::File, String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if yes {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    options.open(file).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            format!("{} exists: add -y to overwrite it", file.display())
        }
        _ => format!("cannot create {}: {e}", file.display()),
    })
}

/// The counter paths given, parsed.
pub fn parse_paths(paths: &[String]) -> Result<Vec<CounterPath>, String> {
    paths
        .iter()
        .map(|p| pdh::parse(p).map_err(|e| e.to_string()))
        .collect()
}

/// What typeperf says will happen to a path that names nothing at its first sample: a path
/// without wildcards keeps its column, empty until the counter appears; a wildcard's columns
/// are fixed at the first sample, as Windows' typeperf fixes them.
fn then_for(path: &CounterPath) -> &'static str {
    if path.is_wildcard() {
        "a wildcard's columns are fixed at the first sample, so it has none: run typeperf \
         again once it is there, or follow it with prfmon watch"
    } else {
        "waiting for it (its column stays empty until it appears)"
    }
}

/// Samples `requests` every `interval` (`samples` times, or until interrupted) into `log`:
/// the header at the first collection, then a row per collection. With `samples`, a path that
/// matched no counter in any sample is an error at the end.
fn write_log(
    mut session: Session,
    mut log: LogWriter<Box<dyn Write>>,
    requests: Vec<CounterPath>,
    interval: Duration,
    samples: Option<u64>,
) -> Result<(), String> {
    let (first, waiting) = collect_first(&mut session, "typeperf", &requests, then_for)?;
    // PDH's text log: the true value, percentages not capped (PDH_FMT_NOCAP100, as typeperf
    // logs a process's "% Processor Time" above 100 on several cores), no DefaultScale; a
    // counter's scale factor is part of its displayed value (`Columns::sample`). `watch` caps
    // unless asked not to (`--nocap100`), as perfmon's chart does.
    let options = FormatOptions {
        cap_percent: false,
        scale: None,
    };
    // The header, written as the columns are found (a CSV header cannot change).
    let tz = TimeZone::local_at(sample_time(&first));
    let columns = log.start_header(&tz).and_then(|()| {
        let columns = Columns::new(
            &requests,
            &first,
            &session.machine().names,
            options,
            |path| log.header_field(&path.to_string()),
        )?;
        log.end_header().map(|()| columns)
    });
    let columns = match columns {
        Ok(columns) => columns,
        Err(e) if reader_gone(&e) => {
            session.close();
            return Ok(());
        }
        Err(e) => return Err(write_error(e)),
    };
    // Wildcards that matched nothing have no column, and never will.
    let mut never: Vec<usize> = waiting
        .iter()
        .map(|u| u.request)
        .filter(|&r| requests.get(r).is_some_and(CounterPath::is_wildcard))
        .collect();
    let sampler = Sampler::new(requests, options);
    let logged = sample_rows(
        &mut session,
        &mut log,
        first,
        columns,
        sampler,
        interval,
        samples,
    )?;
    session.close();
    let Some((columns, sampler)) = logged else {
        return Ok(());
    };
    never.extend(columns.never_matched());
    never.sort_unstable();
    if never.is_empty() {
        return Ok(());
    }
    let paths: Vec<String> = never
        .iter()
        .filter_map(|&r| sampler.requests().get(r))
        .map(ToString::to_string)
        .collect();
    Err(format!(
        "{} matched no counter in {}",
        paths.join(", "),
        plural(
            usize::try_from(samples.unwrap_or(0)).unwrap_or(usize::MAX),
            "sample"
        )
    ))
}

/// Writes a row for `first`, then one per collection every `interval` until `samples` rows
/// are written (returning the columns and the sampler, to say what never matched) or the
/// reader goes (returning `None`); without `samples`, until interrupted.
fn sample_rows(
    session: &mut Session,
    log: &mut LogWriter<Box<dyn Write>>,
    first: DataSnapshot,
    mut columns: Columns,
    mut sampler: Sampler,
    interval: Duration,
    samples: Option<u64>,
) -> Result<Option<(Columns, Sampler)>, String> {
    // Watch leases on what is logged, renewed at every sample (the Windows 95 stat servers'
    // start/stop), on the apps as the registry lists them now.
    let mut leases = prfmon::lease::Leases::new(session.machine().apps.clone(), interval);
    let objects = objects(sampler.requests());
    let mut generation = 0;
    let start = Instant::now();
    let mut snapshot = first;
    let mut taken: u64 = 0;
    let ended = loop {
        if session.changed_since(&mut generation) {
            leases.set_ranges(session.machine().apps.clone());
        }
        let names = &session.machine().names;
        leases.hold(&sampler.titles(&snapshot, names));
        let values = columns.sample(&snapshot, names, &session.machine().factors);
        match log.write_row(&timestamp(sample_time(&snapshot)), &values) {
            Ok(()) => {}
            Err(e) if reader_gone(&e) => break None,
            Err(e) => return Err(write_error(e)),
        }
        taken += 1;
        if samples.is_some_and(|n| taken >= n) {
            break Some((columns, sampler));
        }
        // Fixed-rate schedule: sample k is due at start + k × interval, whatever collecting took.
        let due = start + interval.mul_f64(taken as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // The last collection goes before the next comes: two are never held at once.
        drop(snapshot);
        snapshot = match session.sample(&objects) {
            Ok(s) => s,
            Err(e) => {
                errln!("prfmon typeperf: {e}");
                DataSnapshot::default()
            }
        };
    };
    leases.release();
    Ok(ended)
}

/// `typeperf -q` / `-qx`: the counters of `Global` and `Costly` (of `object` only if given),
/// written to `out` as they are found.
/// Lists the paths to `out`, each escaped as a field ([`field`]) when `console` (standard
/// output), exact in a file.
fn list(
    session: &mut Session,
    mut out: Box<dyn Write>,
    object: Option<&str>,
    expanded: bool,
    console: bool,
) -> Result<(), String> {
    let mut both = session.snapshot("Global").map_err(|e| e.to_string())?.0;
    let costly = session.snapshot("Costly").map_err(|e| e.to_string())?.0;
    // `Costly` also returns the non-costly parents of costly objects: listed once.
    merge_missing(&mut both, costly);
    let listed = query_paths(&both, &session.machine().names, object, expanded, |p| {
        let p = p.to_string();
        if console {
            writeln!(out, "{}", field(&p))
        } else {
            writeln!(out, "{p}")
        }
    })
    .and_then(|count| out.flush().map(|()| count));
    match listed {
        Ok(0) => Err(match object {
            Some(o) => not_listed(o, session.machine(), &both),
            None => "no counters are available".into(),
        }),
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the list: {e}"))
        }
        _ => Ok(()),
    }
}

/// Why `typeperf -q OBJECT` listed nothing from collection `both`: the object `object` is
/// not collected (a counter's object, or why the installed object is missing), or the
/// object names near it.
fn not_listed(object: &str, machine: &Machine, both: &DataSnapshot) -> String {
    let command = "typeperf -q";
    match machine.names.index_of(object) {
        Some(index) if !both.objects.iter().any(|o| o.name_index == index) => {
            objects::not_collected(object, index, machine, &[both], command, None)
        }
        _ => objects::not_an_object(object, None, machine, &[both], command),
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

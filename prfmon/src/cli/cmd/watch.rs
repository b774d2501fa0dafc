//! `prfmon watch PATH... [--interval SECONDS] [--lang 009] [--no-scale]`: a live chart of
//! counters in the terminal ([`crate::cli::chart`]).
//!
//! Keys: `↑` `↓` (or `k` `j`) select a legend row, PgUp PgDn Home End scroll the legend, Space
//! charts or hides the selected series, `a` charts every live one, `g` lists or folds the gone
//! ones ([`crate::cli::chart`] has the table); `+` samples less often, `-` more often (through
//! [`crate::cli::chart::INTERVALS`]); `q`, Esc or Ctrl-C quit and restore the terminal.
//! Messages that come while the chart is on screen show on its status row, and all of them are
//! written to stderr after the terminal is restored. The paths are resolved again at every sample,
//! so wildcards pick up new instances, and the names are read again when the registry changes,
//! so a path whose app is installed later starts drawing then: a well-formed path that matches
//! nothing at the start is said on stderr (`not found now: ...`) and waits, listed in the
//! legend's title as not found now; one whose app goes is marked gone. Collections are made as
//! `typeperf` makes them ([`prfmon::session::Session::sample`]).
//!
//! Without a terminal (standard output not one, or no controlling terminal to read keys from),
//! `watch` checks its paths as usual, then exits with status 1 naming the `prfmon typeperf`
//! command that logs the same counters at the same interval to a pipe or a file.
//!
//! The hidden option `--frames N` quits by itself after N samples have been drawn, and
//! `--panic-after N` panics then (its message must reach the real stderr, the terminal
//! restored), for tests.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cli::chart::{render, Message, Move, WatchState};
use crate::cli::error::CliError;
use clap::Args;
use prfmon::pdh::FormatOptions;
use prfmon::sampler::Sampler;
use prfmon::session::Session;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

/// The keys, for `prfmon watch --help`.
const KEYS_HELP: &str = "Keys:
  Up Down, k j        select a legend row
  PgUp PgDn Home End  scroll the legend
  Space               chart or hide the selected series (on the gone row: list the gone ones)
  a                   chart every live series
  g                   list or fold the gone series
  + -                 sample less or more often
  q Esc Ctrl-C        quit

Messages that come while the chart is on screen show on its last row; all of them are written \
to stderr after it quits.";

/// `prfmon watch ...`.
#[derive(Args, Debug)]
#[command(after_help = KEYS_HELP)]
pub struct WatchArgs {
    /// Counter paths, e.g. `"\PrfData Demo Worker(*)\% Busy"`.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Seconds between samples (fractions allowed; `+` / `-` change it while running).
    #[arg(long, default_value = "1", value_parser = super::typeperf::parse_interval)]
    interval: Duration,
    /// The language of counter names (a Perflib subkey).
    #[arg(long, default_value = "009")]
    lang: String,
    /// Chart and list the true values instead of value × 10^DefaultScale (a counter's integer
    /// scale factor, the Windows 95 stat servers' `PSTF_FACTOR_*`, is applied either way).
    #[arg(long)]
    no_scale: bool,
    /// Do not cap percentages at 100 (PDH's `PDH_FMT_NOCAP100`): a multi-threaded busy time
    /// can exceed it.
    #[arg(long = "nocap100")]
    nocap100: bool,
    #[command(flatten)]
    collector: super::CollectorArgs,
    #[command(flatten)]
    remote: super::RemoteArgs,
    /// Quit after this many samples (for tests).
    #[arg(long, hide = true)]
    frames: Option<u64>,
    /// Panic after this many samples (for tests).
    #[arg(long, hide = true)]
    panic_after: Option<u64>,
}

/// Takes one sample of `snapshot` into the chart, a reading at a time (a wildcard over many
/// instances is never listed whole; the chart keeps at most [`crate::cli::chart::MAX_SERIES`]),
/// named as `session` names them now, with the watch leases held on what it shows.
fn sample_into(
    state: &mut WatchState,
    sampler: &mut Sampler,
    leases: &mut prfmon::lease::Leases,
    session: &Session,
    snapshot: &prfdata_wire::snapshot::DataSnapshot,
) {
    let names = &session.machine().names;
    leases.hold(&sampler.titles(snapshot, names));
    let mut seen = state.begin();
    let sample = sampler.sample_with(snapshot, names, |r| state.add(&r, &mut seen));
    state.finish(&sample, seen);
    let requests = sampler.requests();
    let objects = sample
        .unmatched
        .iter()
        .filter_map(|u| requests.get(u.request));
    let objects = objects.map(|r| r.object.as_str());
    state.absent = prfmon::absence::briefs(session.machine(), snapshot, objects);
}

/// Runs `prfmon watch`.
pub fn run(args: WatchArgs) -> Result<ExitCode, CliError> {
    let requests = super::typeperf::parse_paths(&args.paths)?;
    let typeperf = super::typeperf::open;
    let mut session = typeperf(
        "watch",
        &args.lang,
        &args.collector,
        &args.remote,
        &requests,
    )?;
    let objects = super::typeperf::objects(&requests);
    let (first, _) =
        super::typeperf::collect_first(&mut session, "watch", &requests, |_| "waiting for it")?;

    // perfmon's chart: percentages capped at 100; DefaultScale is applied by the chart state.
    let options = FormatOptions {
        cap_percent: !args.nocap100,
        ..FormatOptions::default()
    };
    let mut chart = Chart {
        sampler: Sampler::new(requests, options),
        state: WatchState::new(args.interval, !args.no_scale),
        // Watch leases on what is charted, renewed at every sample (the Windows 95 stat
        // servers' start/stop).
        leases: prfmon::lease::Leases::new(session.machine().apps.clone(), args.interval),
        generation: 0,
        panic_after: args.panic_after,
    };
    // The Windows 95 stat servers' scale factors, from the registry the names came from.
    chart.state.factors = session.machine().factors.clone();
    sample_into(
        &mut chart.state,
        &mut chart.sampler,
        &mut chart.leases,
        &session,
        &first,
    );
    drop(first);

    if let Some(why) = terminal_missing() {
        return Err(no_terminal(&args, why).into());
    }
    // Messages that come while the chart is on screen are written after it, never over it.
    let held = crate::cli::logger::hold();
    // And what is written to fd 2 itself (a provider loaded with `--in-process`, `errln!`).
    let console = crate::cli::console::capture()
        .map_err(|e| format!("cannot take over standard error while drawing: {e}"))?;
    let mut terminal = ratatui::try_init().map_err(|e| format!("cannot use the terminal: {e}"))?;
    let result = chart.run(&mut terminal, &mut session, &objects, args.frames, &held);
    ratatui::restore();
    drop(console);
    drop(held);
    chart.leases.release();
    session.close();
    result?;
    Ok(ExitCode::SUCCESS)
}

/// Why `watch` cannot draw here, if it cannot: standard output is not a terminal, or there is
/// no controlling terminal (`/dev/tty`, where the keys are read from) to open.
fn terminal_missing() -> Option<String> {
    if !std::io::stdout().is_terminal() {
        return Some("standard output is not one".into());
    }
    match std::fs::File::open("/dev/tty") {
        Ok(_) => None,
        Err(e) => Some(format!(
            "this process has none to read keys from (/dev/tty: {e})"
        )),
    }
}

/// The message for a `watch` with no terminal (`why`), naming the `typeperf` command that logs
/// the same counters at the same interval to a pipe or a file, quoted for a POSIX shell.
fn no_terminal(args: &WatchArgs, why: String) -> String {
    let quote = prfmon::collector::shell_word;
    let mut command = String::from("prfmon typeperf");
    for path in &args.paths {
        command.push(' ');
        command.push_str(&quote(path));
    }
    if let Some(computer) = &args.remote.computer {
        command.push_str(&format!(" -s {}", quote(computer)));
    }
    command.push_str(&format!(" -si {}", args.interval.as_secs_f64()));
    format!(
        "watch draws in a terminal, and {why}; for a pipe or a file, log the same counters \
         with: {command}"
    )
}

/// What the chart keeps between samples.
struct Chart {
    sampler: Sampler,
    state: WatchState,
    leases: prfmon::lease::Leases,
    /// The session's facts' generation the leases and factors were taken at.
    generation: u64,
    /// Panic after this many samples (`--panic-after`).
    panic_after: Option<u64>,
}

impl Chart {
    /// Samples `objects` from `session` and draws until a quitting key (or `frames` samples).
    fn run(
        &mut self,
        terminal: &mut ratatui::DefaultTerminal,
        session: &mut Session,
        objects: &[String],
        frames: Option<u64>,
        held: &crate::cli::logger::Held,
    ) -> Result<(), String> {
        let mut draw = |state: &mut WatchState| {
            state.message = held.latest().map(|(text, more)| Message { text, more });
            terminal
                .draw(|frame| render(frame, state))
                .map(|_| ())
                .map_err(|e| format!("cannot draw: {e}"))
        };
        draw(&mut self.state)?;
        let mut last = Instant::now();
        loop {
            if frames.is_some_and(|n| self.state.samples >= n) {
                return Ok(());
            }
            if let Some(n) = self.panic_after.filter(|&n| self.state.samples >= n) {
                panic!("--panic-after {n}: a panic while the chart is on screen");
            }
            let due = last + self.state.interval;
            let wait = due.saturating_duration_since(Instant::now());
            if event::poll(wait).map_err(|e| e.to_string())? {
                if self.key(event::read().map_err(|e| e.to_string())?) {
                    return Ok(());
                }
                draw(&mut self.state)?;
                continue;
            }
            last = Instant::now();
            self.sample(session, objects);
            draw(&mut self.state)?;
        }
    }

    /// Acts on `event`; true for a quitting key.
    fn key(&mut self, event: Event) -> bool {
        let Event::Key(key) = event else {
            return false;
        };
        if key.kind == KeyEventKind::Release {
            return false;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Char('Q') | KeyCode::Esc => return true,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return true,
            KeyCode::Char('+') => self.state.slower(),
            KeyCode::Char('-') => self.state.faster(),
            KeyCode::Char(' ') => self.state.toggle_selected(),
            KeyCode::Char('a') => self.state.chart_all_live(),
            KeyCode::Char('g') => self.state.toggle_gone(),
            code => {
                if let Some(to) = legend_move(code) {
                    self.state.move_selection(to);
                }
            }
        }
        false
    }

    /// One sample into the chart, the leases and factors following the session's facts.
    fn sample(&mut self, session: &mut Session, objects: &[String]) {
        let snapshot = session.sample(objects).unwrap_or_default();
        if session.changed_since(&mut self.generation) {
            self.leases.set_ranges(session.machine().apps.clone());
            self.state.factors = session.machine().factors.clone();
        }
        self.leases.set_interval(self.state.interval);
        let (state, sampler, leases) = (&mut self.state, &mut self.sampler, &mut self.leases);
        sample_into(state, sampler, leases, session, &snapshot);
        // The collection goes before the next comes: two are never held at once.
        drop(snapshot);
    }
}

/// The legend move `code` asks for, if any.
fn legend_move(code: KeyCode) -> Option<Move> {
    Some(match code {
        KeyCode::Up | KeyCode::Char('k') => Move::Up,
        KeyCode::Down | KeyCode::Char('j') => Move::Down,
        KeyCode::PageUp => Move::PageUp,
        KeyCode::PageDown => Move::PageDown,
        KeyCode::Home => Move::Home,
        KeyCode::End => Move::End,
        _ => return None,
    })
}

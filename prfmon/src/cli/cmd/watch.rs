//! `prfmon watch PATH... [--interval SECONDS] [--lang 009] [--no-scale]`: a live chart of
//! counters in the terminal ([`crate::cli::chart`]).
//!
//! Keys: `+` samples less often, `-` more often (through [`crate::cli::chart::INTERVALS`]); `q`,
//! Esc or Ctrl-C quit and restore the terminal. The paths are resolved again at every sample,
//! so wildcards pick up new instances, and the names are read again when the registry changes,
//! so a path whose app is installed later starts drawing then: a well-formed path that matches
//! nothing at the start is said on stderr (`not found now: ...`) and waits, listed in the
//! legend's title as not found now; one whose app goes is marked gone. Collections are made as
//! `typeperf` makes them ([`super::typeperf::Source`]).
//!
//! The hidden option `--frames N` quits by itself after N samples have been drawn, for tests.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::typeperf::Source;
use crate::cli::chart::{render, WatchState};
use crate::cli::stdout::errln;
use clap::Args;
use prfmon::pdh::{self, FormatOptions};
use prfmon::sampler::Sampler;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

/// `prfmon watch ...`.
#[derive(Args, Debug)]
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
}

/// Takes one sample of `snapshot` into the chart, a reading at a time (a wildcard over many
/// instances is never listed whole; the chart keeps at most [`crate::cli::chart::MAX_SERIES`]),
/// named as `source` names them now, with the watch leases held on what it shows.
fn sample_into(
    state: &mut WatchState,
    sampler: &mut Sampler,
    leases: &mut prfmon::lease::Leases,
    source: &Source,
    snapshot: &prfmon::decode::DataSnapshot,
) {
    let names = source.names();
    leases.hold(&sampler.titles(snapshot, names));
    let mut seen = state.begin();
    let sample = sampler.sample_with(snapshot, names, |r| state.add(&r, &mut seen));
    state.finish(&sample, seen);
}

/// Runs `prfmon watch`.
pub fn run(args: WatchArgs) -> ExitCode {
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("prfmon watch: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: WatchArgs) -> Result<(), String> {
    let requests = args
        .paths
        .iter()
        .map(|p| pdh::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let mut source = Source::open(
        "watch",
        &args.lang,
        &args.collector,
        &args.remote,
        &requests,
    )?;
    let (first, _) = source.collect_first("watch", &requests, |_| "waiting for it")?;

    // perfmon's chart: percentages capped at 100; DefaultScale is applied by the chart state.
    let options = FormatOptions {
        cap_percent: !args.nocap100,
        ..FormatOptions::default()
    };
    let mut sampler = Sampler::new(requests, options);
    let mut state = WatchState::new(args.interval, !args.no_scale);
    // Watch leases on what is charted, renewed at every sample (the Windows 95 stat servers'
    // start/stop).
    let mut leases = prfmon::lease::Leases::new(source.apps().clone(), args.interval);
    let mut generation = 0;
    // The Windows 95 stat servers' scale factors, from the registry the names came from.
    state.factors = source.factors().clone();
    sample_into(&mut state, &mut sampler, &mut leases, &source, &first);
    drop(first);

    let mut terminal = ratatui::try_init().map_err(|e| format!("cannot use the terminal: {e}"))?;
    let mut draw = |state: &WatchState| {
        terminal
            .draw(|frame| render(frame, state))
            .map(|_| ())
            .map_err(|e| format!("cannot draw: {e}"))
    };
    let result = (|| -> Result<(), String> {
        draw(&state)?;
        let mut last = Instant::now();
        loop {
            if args.frames.is_some_and(|n| state.samples >= n) {
                return Ok(());
            }
            let due = last + state.interval;
            let wait = due.saturating_duration_since(Instant::now());
            if event::poll(wait).map_err(|e| e.to_string())? {
                match event::read().map_err(|e| e.to_string())? {
                    Event::Key(key) if key.kind != KeyEventKind::Release => match key.code {
                        KeyCode::Char('q') | KeyCode::Char('Q') | KeyCode::Esc => return Ok(()),
                        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                            return Ok(())
                        }
                        KeyCode::Char('+') => state.slower(),
                        KeyCode::Char('-') => state.faster(),
                        _ => {}
                    },
                    _ => {}
                }
                draw(&state)?;
                continue;
            }
            last = Instant::now();
            let snapshot = source.collect().unwrap_or_default();
            if source.changed_since(&mut generation) {
                leases.set_ranges(source.apps().clone());
                state.factors = source.factors().clone();
            }
            leases.set_interval(state.interval);
            sample_into(&mut state, &mut sampler, &mut leases, &source, &snapshot);
            // The collection goes before the next comes: two are never held at once.
            drop(snapshot);
            draw(&state)?;
        }
    })();
    ratatui::restore();
    leases.release();
    source.close();
    result
}

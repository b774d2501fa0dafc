//! The live chart of `prfmon watch`: System Monitor's chart view in a terminal.
//!
//! [`WatchState`] keeps one [`Series`](state::Series) per counter the paths have matched so far (a wildcard's
//! new instances are added as they appear; an instance that goes keeps its statistics, listed
//! among the gone ones, and continues if it comes back). [`render`] draws it with ratatui:
//!
//! ```text
//! ┌ prfmon watch ── every 1 s (+/- to change) ── sample 12 ── q to quit ─────────┐
//! │100┤      ⣀⡠⠤⠒⠉                                                                │
//! │  0┼──────────────────────────────────────────────────────────────────────────│
//! └───────────────────────────────────────────────────────────────────────────────┘
//! ┌ Legend 1–3 of 3 (values × Scale) ─────────────────────────────────────────────┐
//! │   Scale       Last    Average    Minimum    Maximum  Counter                   │
//! │ ■ 1          41.997     40.120     12.000     44.000  \PrfData Demo Service\Jo…│
//! │ □ 1           2.000      2.000      2.000      2.000  \PrfData Demo Worker(w1)…│
//! │                                                       ▸ 4 gone (g shows them)   │
//! └ ↑↓ PgUp PgDn: scroll ─ Space: chart/hide ─ a: chart all ─ g: gone ─────────────┘
//! prfdata-provider: app PrfDataDemo: no data: every process that published ... (+2)
//! ```
//!
//! The legend lists the live series in the order they appeared, then one row for the gone
//! ones (`g` lists them under it). Each series keeps its colour; `■` marks a charted series,
//! `□` a hidden one. At [`MAX_SERIES`] a new series evicts the oldest gone one; a live series
//! is never dropped. The keys (read by `prfmon watch`):
//!
//! | Key | Does |
//! |---|---|
//! | `↑` `↓`, `k` `j` | select the row above or below |
//! | PgUp PgDn, Home End | scroll the legend a window, to its first or last row |
//! | Space | chart or hide the selected series (on the gone row: list or fold the gone ones) |
//! | `a` | chart every live series |
//! | `g` | list or fold the gone series |
//! | `+` `-` | sample less or more often ([`INTERVALS`]) |
//! | `q`, Esc, Ctrl-C | quit |
//!
//! The legend's title says which rows it shows (`Legend 9–16 of 23`). The last row is the
//! status row: the latest message that came while the chart owns the terminal, with how many
//! came before it; all of them are written to stderr after the chart quits.
//!
//! As in perfmon's chart, values are multiplied by the counter's DefaultScale (×10^scale,
//! [`prfmon::pdh::scaled`]) so that counters of different magnitudes share the 0–100 vertical
//! axis, and percentages are capped at 100; the legend says each counter's scale, and its Last,
//! Average, Minimum and Maximum are in the same (scaled) units as the line, over every value
//! since the counter appeared. `prfmon watch --no-scale` charts and lists the true values
//! instead. The layout fits an 80×24 terminal: a legend of up to [`LEGEND_ROWS`] rows, the
//! status row, the chart above them.

pub mod legend;
mod plot;
pub mod state;
mod status;
mod text;

use ratatui::layout::{Constraint, Layout};
use ratatui::style::Color;
use ratatui::Frame;

pub use legend::Move;
pub use state::{Message, WatchState};

/// How many samples a series keeps: the chart's width in braille dots (two per column) on a
/// wide terminal.
pub const HISTORY: usize = 240;
/// The most series kept: a new one evicts the oldest gone series; when all are live, later
/// matches are not charted (the legend's title says how many).
pub const MAX_SERIES: usize = 64;
/// Legend rows shown at most, so that an 80×24 terminal keeps 12 rows for the chart.
pub const LEGEND_ROWS: usize = 8;
const _: () = assert!(
    MAX_SERIES >= LEGEND_ROWS,
    "every legend row has a series to show"
);
/// The intervals `+` and `-` step through, in seconds.
pub const INTERVALS: [f64; 9] = [0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0];

/// Line colours, in the order counters are added (perfmon's first colours, as far as a
/// terminal has them); a series keeps its colour while it lives.
const COLORS: [Color; 8] = [
    Color::LightRed,
    Color::LightGreen,
    Color::LightBlue,
    Color::LightYellow,
    Color::LightMagenta,
    Color::LightCyan,
    Color::Red,
    Color::Green,
];

/// Draws the chart, its legend and the status row into `frame` (see the [module docs](self));
/// the legend's window follows the rows the frame has room for.
pub fn render(frame: &mut Frame, state: &mut WatchState) {
    let area = frame.area();
    let [main, status_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(area);
    let legend_height = legend::height(state, main.height);
    let [chart_area, legend_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(legend_height)]).areas(main);
    plot::render(frame, chart_area, state);
    legend::render(frame, legend_area, state);
    status::render(frame, status_area, state.message.as_ref());
}

/// Readings, samples and screens for the tests of the chart's modules.
#[cfg(test)]
mod fixtures {
    use super::*;
    use prfdata_wire::winperf::{PERF_COUNTER_BULK_COUNT, PERF_COUNTER_COUNTER};
    use prfmon::pdh::{CounterPath, InstanceSel, NoValue, RawSample};
    use prfmon::sampler::{Reading, Sample, ValueError};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    pub fn reading(
        instance: Option<&str>,
        counter: &str,
        scale: i32,
        value: Option<f64>,
    ) -> Reading {
        let mut path = CounterPath::new("PrfData Demo Worker", counter).with_machine("box");
        if let Some(i) = instance {
            path = path.with_instance(InstanceSel::named(i));
        }
        Reading {
            request: 0,
            path,
            counter_type: PERF_COUNTER_COUNTER,
            name_index: 1850,
            default_scale: scale,
            raw: RawSample::new(PERF_COUNTER_COUNTER, 0),
            value: value.ok_or(ValueError::NoValue(NoValue::FirstSample {
                counter_type: PERF_COUNTER_BULK_COUNT,
            })),
        }
    }

    pub fn sample(readings: Vec<Reading>) -> Sample {
        Sample {
            perf_time_100nsec: 0,
            system_name: "box".into(),
            readings,
            unmatched: vec![],
        }
    }

    pub fn screen(state: &mut WatchState, w: u16, h: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| render(f, state)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..h)
            .map(|y| (0..w).map(|x| buffer[(x, y)].symbol()).collect())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{reading, sample, screen};
    use super::*;
    use prfdata_wire::winperf::PERF_COUNTER_BULK_COUNT;
    use prfmon::factor::Factors;
    use prfmon::pdh::{CounterPath, PathError, RawSample};
    use prfmon::sampler::{Reading, Sample, Unmatched};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::time::Duration;

    #[test]
    fn an_empty_chart_renders_its_title() {
        let mut state = WatchState::new(Duration::from_secs(1), true);
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal.draw(|frame| render(frame, &mut state)).unwrap();
        let screen: String = terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(screen.contains("prfmon watch"));
    }

    #[test]
    fn the_limits_fit_the_layout() {
        // Two braille dots per column: a 120-column chart shows all of them.
        assert_eq!(HISTORY, 2 * 120);
        // Borders, header and rows, and the status row, leave 24 − 12 = 12 rows for the chart.
        assert_eq!(2 + 1 + LEGEND_ROWS + 1, 12);
        assert!(INTERVALS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_new_series_and_chart_are_empty() {
        assert_eq!(
            state::Series::new(r"\A\B".into(), 0, COLORS[0]).average(),
            None
        );
        assert_eq!(WatchState::new(Duration::from_secs(2), true).samples, 0);
    }

    #[test]
    fn update_scales_and_keeps_statistics() {
        let reading = |v: f64| Reading {
            request: 0,
            path: CounterPath::new("PrfData Demo Service", "Bytes/sec"),
            counter_type: PERF_COUNTER_BULK_COUNT,
            name_index: 1852,
            default_scale: -3,
            raw: RawSample::new(PERF_COUNTER_BULK_COUNT, 0),
            value: Ok(v),
        };
        let sample = |v| Sample {
            perf_time_100nsec: 0,
            system_name: "h".into(),
            readings: vec![reading(v)],
            unmatched: vec![],
        };
        let mut state = WatchState::new(Duration::from_secs(1), true);
        state.update(&sample(20_000.0));
        state.update(&sample(40_000.0));
        let s = &state.series[0];
        assert_eq!(s.last, Some(40.0)); // × 10^-3
        assert_eq!(
            (s.average(), s.minimum(), s.maximum()),
            (Some(30.0), Some(20.0), Some(40.0))
        );
    }

    #[test]
    fn update_applies_a_counters_scale_factor_before_its_default_scale() {
        let mut hive = prfdata_registry::perflib::new_hive();
        prfdata_registry::stats::write_factors(&mut hive, "App", &[(1852, "*4096".into())])
            .unwrap();
        let mut state = WatchState::new(Duration::from_secs(1), true);
        state.factors = Factors::from_hive(&hive).unwrap();
        let reading = Reading {
            request: 0,
            path: CounterPath::new("PrfData Demo Service", "Pages"),
            counter_type: PERF_COUNTER_BULK_COUNT,
            name_index: 1852,
            default_scale: -3,
            raw: RawSample::new(PERF_COUNTER_BULK_COUNT, 0),
            value: Ok(2.0),
        };
        let other = Reading {
            name_index: 1854,
            path: CounterPath::new("PrfData Demo Service", "Other"),
            ..reading.clone()
        };
        state.update(&Sample {
            perf_time_100nsec: 0,
            system_name: "h".into(),
            readings: vec![reading, other],
            unmatched: vec![],
        });
        assert_eq!(state.series[0].last, Some(2.0 * 4096.0 / 1000.0));
        assert_eq!(state.series[1].last, Some(2.0 / 1000.0), "no factor");
    }

    #[test]
    fn slower_and_faster_step_through_the_intervals() {
        let mut s = WatchState::new(Duration::from_secs(1), true);
        s.slower();
        assert_eq!(s.interval, Duration::from_secs(2));
        s.faster();
        s.faster();
        assert_eq!(s.interval, Duration::from_millis(500));
    }

    #[test]
    fn the_legend_shows_scaled_values_and_fits_80_by_24() {
        let mut state = WatchState::new(Duration::from_secs(1), true);
        for v in [10.0, 30.0, 20.0] {
            state.update(&sample(vec![
                reading(Some("fast-1"), "Jobs/sec", 0, Some(v)),
                reading(None, "Bytes/sec", -3, Some(v * 1000.0)),
            ]));
        }
        let lines = screen(&mut state, 80, 24);
        let text = lines.join("\n");
        assert!(
            lines[0].contains("every 1 s") && lines[0].contains("sample 3"),
            "{text}"
        );
        let row = lines
            .iter()
            .find(|l| l.contains(r"Worker(fast-1)\Jobs/sec"))
            .unwrap_or_else(|| panic!("{text}"));
        // Scale, Last, Average, Minimum, Maximum.
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(cells[0].ends_with('■'), "{row}");
        assert_eq!(
            &cells[1..6],
            ["1", "20.000", "20.000", "10.000", "30.000"],
            "{row}"
        );
        let row = lines
            .iter()
            .find(|l| l.contains(r"\Bytes/sec"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(row.contains("0.001") && row.contains("30.000"), "{row}");
        // Every line is exactly 80 columns; the legend's bottom border is above the status row.
        assert!(lines.iter().all(|l| l.chars().count() == 80));
        assert!(lines[22].starts_with('└'), "{text}");
        assert!(text.contains("Legend 1–2 of 2 (values × Scale)"), "{text}");
    }

    #[test]
    fn instances_that_go_are_marked_and_new_ones_added() {
        let mut state = WatchState::new(Duration::from_secs(1), true);
        state.update(&sample(vec![reading(Some("a"), "Jobs/sec", 0, Some(1.0))]));
        state.update(&sample(vec![reading(Some("b"), "Jobs/sec", 0, None)]));
        assert_eq!(state.series.len(), 2);
        assert!(!state.series[0].present);
        assert_eq!(state.series[0].last, None);
        assert_eq!(state.series[0].average(), Some(1.0));
        let text = screen(&mut state, 80, 24).join("\n");
        assert!(text.contains("▸ 1 gone (g shows them)"), "{text}");
        assert!(text.contains(r"Demo Worker(b)\Jobs/sec"), "{text}");
        state.toggle_gone();
        let text = screen(&mut state, 80, 24).join("\n");
        assert!(text.contains(r"Worker(a)\Jobs/sec (gone)"), "{text}");
    }

    #[test]
    fn many_counters_and_long_paths_still_fit() {
        let mut state = WatchState::new(Duration::from_millis(250), false);
        let long = "a-very-long-instance-name-that-will-not-fit-in-the-legend";
        state.update(&Sample {
            unmatched: vec![Unmatched {
                request: 1,
                error: PathError::NoMatch {
                    path: r"\X\Y".into(),
                    near: vec![],
                },
            }],
            ..sample(
                (0..12)
                    .map(|i| reading(Some(&format!("{long}{i}")), "Jobs/sec", 0, Some(1e9)))
                    .collect(),
            )
        });
        let lines = screen(&mut state, 80, 24);
        let text = lines.join("\n");
        assert!(text.contains("Legend 1–8 of 12"), "{text}");
        assert!(text.contains(r"Not found now: \X\Y"), "{text}");
        assert!(text.contains("every 250 ms"), "{text}");
        assert!(text.contains(r"…-fit-in-the-legend0)\Jobs/sec"), "{text}");
        assert!(text.contains("1.000e9"), "{text}");
        assert!(lines.iter().all(|l| l.chars().count() == 80));
    }
}

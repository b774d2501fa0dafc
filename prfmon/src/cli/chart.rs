//! The live chart of `prfmon watch`: System Monitor's chart view in a terminal.
//!
//! [`WatchState`] keeps one [`Series`] per counter the paths have matched so far (a wildcard's
//! new instances are added as they appear; an instance that goes keeps its line, marked gone in
//! the legend, and continues if it comes back). [`render`] draws it with ratatui:
//!
//! ```text
//! ┌ prfmon watch ── every 1 s (+/- to change) ── sample 12 ── q to quit ─────────┐
//! │100┤      ⣀⡠⠤⠒⠉                                                                │
//! │   │  ⢀⠔⠉                                                                      │
//! │  0┼──────────────────────────────────────────────────────────────────────────│
//! └───────────────────────────────────────────────────────────────────────────────┘
//! ┌ Legend (values × Scale) ──────────────────────────────────────────────────────┐
//! │   Scale       Last    Average    Minimum    Maximum  Counter                   │
//! │ ■ 1          41.997     40.120     12.000     44.000  \PrfData Demo Service\Jo…│
//! └───────────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! As in perfmon's chart, values are multiplied by the counter's DefaultScale (×10^scale,
//! [`pdh::scaled`]) so that counters of different magnitudes share the 0–100 vertical axis, and
//! percentages are capped at 100; the legend says each counter's scale, and its Last, Average,
//! Minimum and Maximum are in the same (scaled) units as the line, over every value since the
//! counter appeared. `prfmon watch --no-scale` charts and lists the true values instead. The
//! vertical axis runs from 0 to 100, or to the next 1, 2 or 5 × 10ⁿ above the largest value shown.
//! The layout fits an 80×24 terminal: a legend of up to [`LEGEND_ROWS`] counters (then "… N
//! more"), the chart above it.

use std::collections::VecDeque;
use std::time::Duration;

use prfdata_untrusted::text::{escape_field, Style as TextStyle};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Cell, Chart, Dataset, GraphType, Row, Table};
use ratatui::Frame;

use prfmon::factor::Factors;
use prfmon::pdh;
use prfmon::sampler::{Reading, Sample};

/// How many samples a series keeps: the chart's width in braille dots (two per column) on a
/// wide terminal.
pub const HISTORY: usize = 240;
/// The most counters charted; later matches are ignored (with a note in the legend's title).
pub const MAX_SERIES: usize = 64;
/// Legend rows shown at most, so that an 80×24 terminal keeps 10 rows for the chart.
pub const LEGEND_ROWS: usize = 8;
const _: () = assert!(
    MAX_SERIES >= LEGEND_ROWS,
    "every legend row has a series to show"
);
/// The intervals `+` and `-` step through, in seconds.
pub const INTERVALS: [f64; 9] = [0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0];

/// Line colours, in the order counters are added (perfmon's first colours, as far as a
/// terminal has them).
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

/// One counter's line and statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The counter's path, without the machine.
    pub path: String,
    /// Its DefaultScale.
    pub scale: i32,
    /// (sample number, charted value) for the last [`HISTORY`] samples that had a value.
    pub points: VecDeque<(f64, f64)>,
    /// The value of the latest sample, if it had one.
    pub last: Option<f64>,
    /// Whether the latest sample matched the counter (an instance may have gone).
    pub present: bool,
    sum: f64,
    count: u64,
    min: f64,
    max: f64,
}

impl Series {
    /// An empty series for `path` with DefaultScale `scale`.
    pub fn new(path: String, scale: i32) -> Self {
        Series {
            path,
            scale,
            points: VecDeque::new(),
            last: None,
            present: true,
            sum: 0.0,
            count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds sample `x`'s value (or its absence).
    fn push(&mut self, x: f64, value: Option<f64>) {
        self.present = true;
        self.last = value;
        if let Some(v) = value {
            self.points.push_back((x, v));
            if self.points.len() > HISTORY {
                self.points.pop_front();
            }
            self.sum += v;
            self.count += 1;
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
    }

    /// The mean of every value since the counter appeared.
    pub fn average(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// The smallest value since the counter appeared.
    pub fn minimum(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value since the counter appeared.
    pub fn maximum(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }
}

/// What the chart shows: the series, the sampling interval and what the last sample could not
/// find.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchState {
    /// One series per counter matched so far, in the order they appeared.
    pub series: Vec<Series>,
    /// The time between samples.
    pub interval: Duration,
    /// Samples taken so far.
    pub samples: u64,
    /// Whether values are multiplied by their DefaultScale.
    pub scale: bool,
    /// The paths that matched nothing in the latest sample.
    pub unmatched: Vec<String>,
    /// Counters not charted because there were already [`MAX_SERIES`].
    pub dropped: usize,
    /// The Windows 95 stat servers' scale factors, applied to every displayed value (with or
    /// without `scale`: a factor gives the counter its unit, as pages × 4096 are bytes).
    pub factors: Factors,
}

impl WatchState {
    /// An empty chart sampled every `interval`, scaled by DefaultScale if `scale`.
    pub fn new(interval: Duration, scale: bool) -> Self {
        WatchState {
            series: Vec::new(),
            interval,
            samples: 0,
            scale,
            unmatched: Vec::new(),
            dropped: 0,
            factors: Factors::default(),
        }
    }

    /// Adds a sample: each reading to its series (a new series for a counter not seen before),
    /// series the sample did not match are marked gone.
    #[cfg(test)]
    pub fn update(&mut self, sample: &Sample) {
        let mut seen = self.begin();
        for r in &sample.readings {
            self.add(r, &mut seen);
        }
        self.finish(sample, seen);
    }

    /// Starts adding a sample's readings ([`WatchState::add`], then [`WatchState::finish`]):
    /// what [`WatchState::update`] does with a sample's list, for readings that come one at a
    /// time ([`prfmon::sampler::Sampler::sample_with`]). Returns which series have a reading
    /// so far.
    pub fn begin(&mut self) -> Vec<bool> {
        self.samples += 1;
        vec![false; self.series.len()]
    }

    /// Adds one reading of the sample begun with [`WatchState::begin`].
    pub fn add(&mut self, r: &Reading, seen: &mut Vec<bool>) {
        let x = self.samples as f64;
        // Shown as the legend shows it: control characters escaped, newline and tab too.
        let path = prfmon::pdh::CounterPath {
            machine: None,
            ..r.path.clone()
        }
        .to_string();
        let path = escape_field(&path, TextStyle::Terminal).into_owned();
        let index = match self.series.iter().position(|s| s.path == path) {
            Some(i) => i,
            None if self.series.len() < MAX_SERIES => {
                self.series.push(Series::new(path, r.default_scale));
                seen.push(false);
                self.series.len() - 1
            }
            None => {
                self.dropped += 1;
                return;
            }
        };
        if seen[index] {
            return;
        }
        seen[index] = true;
        let value = r.value.ok().map(|v| {
            let v = self.factors.apply(r.name_index, v);
            if self.scale {
                pdh::scaled(v, r.default_scale)
            } else {
                v
            }
        });
        self.series[index].push(x, value);
    }

    /// Ends the sample begun with [`WatchState::begin`]: series without a reading are marked
    /// gone, and `sample`'s unmatched paths listed.
    pub fn finish(&mut self, sample: &Sample, seen: Vec<bool>) {
        for (series, seen) in self.series.iter_mut().zip(seen) {
            if !seen {
                series.present = false;
                series.last = None;
            }
        }
        self.unmatched = sample
            .unmatched
            .iter()
            .map(|u| match &u.error {
                pdh::PathError::NoMatch { path, .. } => path.clone(),
                other => other.to_string(),
            })
            .map(|text| escape_field(&text, TextStyle::Terminal).into_owned())
            .collect();
    }

    /// The next longer interval (`+`).
    pub fn slower(&mut self) {
        let now = self.interval.as_secs_f64();
        if let Some(next) = INTERVALS.iter().find(|&&i| i > now + 1e-9) {
            self.interval = Duration::from_secs_f64(*next);
        }
    }

    /// The next shorter interval (`-`).
    pub fn faster(&mut self) {
        let now = self.interval.as_secs_f64();
        if let Some(next) = INTERVALS.iter().rev().find(|&&i| i < now - 1e-9) {
            self.interval = Duration::from_secs_f64(*next);
        }
    }
}

/// The width of the legend's number columns.
const NUMBER_WIDTH: u16 = 9;

/// A number in at most [`NUMBER_WIDTH`] characters: three decimals, or scientific notation
/// from 100 000 up.
fn number(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) if v.abs() >= 1e5 => format!("{v:.3e}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// A DefaultScale as perfmon's legend shows it: the factor, `0.001` ... `1000`, else `1eN`.
fn scale_label(scale: i32) -> String {
    match scale {
        0 => "1".to_owned(),
        1..=3 => 10_i64.pow(scale as u32).to_string(),
        -3..=-1 => format!(
            "{:.*}",
            scale.unsigned_abs() as usize,
            pdh::scaled(1.0, scale)
        ),
        _ => format!("1e{scale}"),
    }
}

/// An interval for the title: `250 ms`, `1 s`, `5 min`.
fn interval_label(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{} ms", d.as_millis())
    } else if s >= 60.0 && (s % 60.0).abs() < 1e-9 {
        format!("{} min", (s / 60.0) as u64)
    } else {
        format!("{s} s")
    }
}

/// The top of the vertical axis: 100, or the next 1, 2 or 5 × 10ⁿ above `max`.
fn axis_top(max: f64) -> f64 {
    if !max.is_finite() || max <= 100.0 {
        return 100.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&top| top >= max)
        .unwrap_or(max)
}

/// `text` cut to `width` characters, keeping its end (a path's counter name) and marking the
/// cut with `…`.
fn keep_end(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width || width == 0 {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - (width - 1)).collect();
    format!("…{tail}")
}

/// Draws the chart and its legend into `frame` (see the [module docs](self)).
pub fn render(frame: &mut Frame, state: &WatchState) {
    let area = frame.area();
    let legend_rows =
        state.series.len().clamp(1, LEGEND_ROWS) + usize::from(state.series.len() > LEGEND_ROWS);
    // Borders (2) + header row (1) + rows.
    let legend_height = (legend_rows as u16 + 3).min(area.height / 2);
    let [chart_area, legend_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(legend_height)]).areas(area);
    render_chart(frame, chart_area, state);
    render_legend(frame, legend_area, state);
}

fn render_chart(frame: &mut Frame, area: Rect, state: &WatchState) {
    let title = format!(
        " prfmon watch ─ every {} (+/- to change) ─ sample {} ─ q to quit ",
        interval_label(state.interval),
        state.samples
    );
    let block = Block::bordered().title(title);
    let x_max = (state.samples as f64).max(2.0);
    // As many samples as the chart has braille dots across (two per column).
    let span = (f64::from(area.width.saturating_sub(8)) * 2.0).clamp(10.0, HISTORY as f64);
    let x_min = (x_max - span).max(1.0);
    let data: Vec<Vec<(f64, f64)>> = state
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|(x, _)| *x >= x_min)
                .collect()
        })
        .collect();
    let visible = data.iter().flatten().map(|(_, y)| *y);
    let y_max = axis_top(visible.clone().fold(f64::NEG_INFINITY, f64::max));
    let y_min = visible.fold(0.0_f64, f64::min);
    let datasets: Vec<Dataset> = data
        .iter()
        .zip(&state.series)
        .enumerate()
        .map(|(i, (points, _))| {
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(COLORS[i % COLORS.len()]))
                .data(points)
        })
        .collect();
    let label = |v: f64| {
        if v.abs() >= 1e5 {
            format!("{v:.0e}")
        } else {
            format!("{v}")
        }
    };
    let chart = Chart::new(datasets)
        .block(block)
        .x_axis(Axis::default().bounds([x_min, x_max]))
        .y_axis(Axis::default().bounds([y_min, y_max]).labels([
            label(y_min),
            label((y_min + y_max) / 2.0),
            label(y_max),
        ]));
    frame.render_widget(chart, area);
}

fn render_legend(frame: &mut Frame, area: Rect, state: &WatchState) {
    let mut title = if state.scale {
        " Legend (values × Scale) ".to_owned()
    } else {
        " Legend (true values) ".to_owned()
    };
    if !state.unmatched.is_empty() {
        title = format!(" Not found now: {} ", state.unmatched.join(", "));
    } else if state.dropped > 0 {
        title = format!(" Legend: only the first {MAX_SERIES} counters are charted ");
    }
    let widths = [
        Constraint::Length(1),
        Constraint::Length(5),
        Constraint::Length(NUMBER_WIDTH),
        Constraint::Length(NUMBER_WIDTH),
        Constraint::Length(NUMBER_WIDTH),
        Constraint::Length(NUMBER_WIDTH),
        Constraint::Fill(1),
    ];
    // Inner width less the six column gaps and the fixed columns.
    let path_width = usize::from(area.width.saturating_sub(2 + 6 + 1 + 5 + 4 * NUMBER_WIDTH));
    let header = Row::new(
        [
            "", "Scale", "Last", "Average", "Minimum", "Maximum", "Counter",
        ]
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            if (2..=5).contains(&i) {
                Cell::from(Line::from(h).right_aligned())
            } else {
                Cell::from(h)
            }
        }),
    )
    .style(Style::default().add_modifier(Modifier::BOLD));
    let shown = state.series.len().min(LEGEND_ROWS);
    let mut rows: Vec<Row> = state.series[..shown]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let color = COLORS[i % COLORS.len()];
            let right = |v: Option<f64>| Cell::from(Line::from(number(v)).right_aligned());
            let mut name = keep_end(&s.path, path_width);
            let mut style = Style::default();
            if !s.present {
                name = keep_end(&format!("{} (gone)", s.path), path_width);
                style = style.add_modifier(Modifier::DIM);
            }
            Row::new([
                Cell::from(Span::styled("■", Style::default().fg(color))),
                Cell::from(scale_label(if state.scale { s.scale } else { 0 })),
                right(s.last),
                right(s.average()),
                right(s.minimum()),
                right(s.maximum()),
                Cell::from(name),
            ])
            .style(style)
        })
        .collect();
    if state.series.len() > shown {
        let more = format!("… {} more", state.series.len() - shown);
        rows.push(Row::new(
            std::iter::repeat_n(Cell::from(""), 6).chain([Cell::from(more)]),
        ));
    }
    if rows.is_empty() {
        rows.push(Row::new(
            std::iter::repeat_n(Cell::from(""), 6).chain([Cell::from("(no values yet)")]),
        ));
    }
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::bordered().title(title));
    frame.render_widget(table, area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_wire::winperf::{PERF_COUNTER_BULK_COUNT, PERF_COUNTER_COUNTER};
    use prfmon::pdh::{CounterPath, InstanceSel, NoValue, PathError, RawSample};
    use prfmon::sampler::{Unmatched, ValueError};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    // What were this module's doc examples when it was in the library.

    #[test]
    fn an_empty_chart_renders_its_title() {
        let state = WatchState::new(Duration::from_secs(1), true);
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal.draw(|frame| render(frame, &state)).unwrap();
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
        // Borders, header, rows and a "… N more" row leave 24 − 12 = 12 rows for the chart.
        assert_eq!(2 + 1 + LEGEND_ROWS + 1, 12);
        assert!(INTERVALS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_new_series_and_chart_are_empty() {
        assert_eq!(Series::new(r"\A\B".into(), 0).average(), None);
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

    fn reading(instance: Option<&str>, counter: &str, scale: i32, value: Option<f64>) -> Reading {
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

    fn sample(readings: Vec<Reading>) -> Sample {
        Sample {
            perf_time_100nsec: 0,
            system_name: "box".into(),
            readings,
            unmatched: vec![],
        }
    }

    fn screen(state: &WatchState, w: u16, h: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| render(f, state)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..h)
            .map(|y| (0..w).map(|x| buffer[(x, y)].symbol()).collect())
            .collect()
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
        let lines = screen(&state, 80, 24);
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
        // Every line is exactly 80 columns and the legend's bottom border is on the last row.
        assert!(lines.iter().all(|l| l.chars().count() == 80));
        assert!(lines[23].starts_with('└'), "{text}");
        assert!(text.contains("Legend (values × Scale)"), "{text}");
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
        let text = screen(&state, 80, 24).join("\n");
        assert!(text.contains(r"Worker(a)\Jobs/sec (gone)"), "{text}");
        assert!(text.contains(r"Demo Worker(b)\Jobs/sec"), "{text}");
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
        let lines = screen(&state, 80, 24);
        let text = lines.join("\n");
        assert!(text.contains("… 4 more"), "{text}");
        assert!(text.contains(r"Not found now: \X\Y"), "{text}");
        assert!(text.contains("every 250 ms"), "{text}");
        assert!(text.contains(r"…-fit-in-the-legend0)\Jobs/sec"), "{text}");
        assert!(text.contains("1.000e9"), "{text}");
        assert!(lines.iter().all(|l| l.chars().count() == 80));
    }

    #[test]
    fn labels_and_axis() {
        assert_eq!(scale_label(-3), "0.001");
        assert_eq!(scale_label(2), "100");
        assert_eq!(scale_label(-7), "1e-7");
        assert_eq!(axis_top(42.0), 100.0);
        assert_eq!(axis_top(130.0), 200.0);
        assert_eq!(axis_top(501.0), 1000.0);
        assert_eq!(interval_label(Duration::from_secs(300)), "5 min");
        assert_eq!(keep_end("abcdef", 4), "…def");
    }
}

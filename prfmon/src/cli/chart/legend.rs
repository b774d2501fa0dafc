//! The legend under the chart: one row per live series in the order they appeared, then one
//! row for the gone ones (`▸ 10 gone (g shows them)`, or `▾ ... (g hides them)` followed by
//! them), a window of at most [`LEGEND_ROWS`] rows that the keys move, and the selected row
//! whose series Space charts or hides (`■` charted, `□` hidden, in the series' colour).

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Row, Table};
use ratatui::Frame;

use super::state::WatchState;
use super::text::{keep_end, number, scale_label};
use super::{LEGEND_ROWS, MAX_SERIES};

/// The keys the legend answers to, for the bottom border.
const KEYS: &str = " ↑↓ PgUp PgDn: scroll ─ Space: chart/hide ─ a: chart all ─ g: gone ";

/// The width of the legend's number columns.
const NUMBER_WIDTH: u16 = 9;

/// The legend's selected row, its window and whether gone series are listed.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendView {
    /// The selected row (an index into [`rows`]).
    pub selected: usize,
    /// The selected series' path: the selection follows it as rows above it come and go.
    pub anchor: Option<String>,
    /// The first row shown.
    pub offset: usize,
    /// How many rows the legend showed last (what PgUp and PgDn move by).
    pub page: usize,
    /// Whether the gone series are listed under their row.
    pub show_gone: bool,
}

impl Default for LegendView {
    /// The first row selected, the window at the top, [`LEGEND_ROWS`] high until drawn.
    fn default() -> Self {
        LegendView {
            selected: 0,
            anchor: None,
            offset: 0,
            page: LEGEND_ROWS,
            show_gone: false,
        }
    }
}

/// One row of the legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegendRow {
    /// The series at this index of [`WatchState::series`].
    Series(usize),
    /// The row standing for the gone series: how many.
    Gone(usize),
}

/// The legend's rows: live series in the order they appeared, then the gone ones' row and,
/// if they are shown, the gone series in the order they appeared.
pub fn rows(state: &WatchState) -> Vec<LegendRow> {
    let live = |present: bool| {
        state
            .series
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.present == present)
            .map(|(i, _)| LegendRow::Series(i))
    };
    let mut rows: Vec<LegendRow> = live(true).collect();
    let gone = state.series.len() - rows.len();
    if gone > 0 {
        rows.push(LegendRow::Gone(gone));
        if state.legend.show_gone {
            rows.extend(live(false));
        }
    }
    rows
}

impl LegendView {
    /// Keeps the selection among `total` rows and inside the window of [`LegendView::page`].
    fn fit(&mut self, total: usize) {
        let page = self.page.max(1);
        self.selected = self.selected.min(total.saturating_sub(1));
        self.offset = self.offset.min(total.saturating_sub(page));
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + page {
            self.offset = self.selected + 1 - page;
        }
    }
}

/// A key that moves the legend's selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// `↑` or `k`.
    Up,
    /// `↓` or `j`.
    Down,
    /// PgUp: a window up.
    PageUp,
    /// PgDn: a window down.
    PageDown,
    /// Home: the first row.
    Home,
    /// End: the last row.
    End,
}

impl WatchState {
    /// Selects the anchor's row again, wherever the rows have moved it (if it is listed).
    fn follow_anchor(&mut self) {
        let Some(path) = &self.legend.anchor else {
            return;
        };
        let row = rows(self).iter().position(|r| match r {
            LegendRow::Series(i) => self.series[*i].path == *path,
            LegendRow::Gone(_) => false,
        });
        if let Some(row) = row {
            self.legend.selected = row;
        }
    }

    /// Makes the selected row's series (if it is one) the anchor, after its window is fitted.
    fn set_anchor(&mut self) {
        let all = rows(self);
        self.legend.fit(all.len());
        self.legend.anchor = match all.get(self.legend.selected) {
            Some(LegendRow::Series(i)) => Some(self.series[*i].path.clone()),
            _ => None,
        };
    }

    /// Moves the legend's selection (and its window with it).
    pub fn move_selection(&mut self, to: Move) {
        self.follow_anchor();
        let total = rows(self).len();
        let view = &mut self.legend;
        let page = view.page.max(1);
        match to {
            Move::Up => view.selected = view.selected.saturating_sub(1),
            Move::Down => view.selected += 1,
            Move::PageUp => {
                view.selected = view.selected.saturating_sub(page);
                view.offset = view.offset.saturating_sub(page);
            }
            Move::PageDown => {
                view.selected += page;
                view.offset += page;
            }
            Move::Home => (view.selected, view.offset) = (0, 0),
            Move::End => (view.selected, view.offset) = (total, total),
        }
        self.set_anchor();
    }

    /// Space: charts or hides the selected series; on the gone row, shows or hides them.
    pub fn toggle_selected(&mut self) {
        self.follow_anchor();
        match rows(self).get(self.legend.selected) {
            Some(LegendRow::Series(i)) => self.series[*i].charted ^= true,
            Some(LegendRow::Gone(_)) => self.toggle_gone(),
            None => {}
        }
    }

    /// `a`: charts every live series.
    pub fn chart_all_live(&mut self) {
        for s in self.series.iter_mut().filter(|s| s.present) {
            s.charted = true;
        }
    }

    /// `g`: lists the gone series under their row, or stops listing them.
    pub fn toggle_gone(&mut self) {
        self.follow_anchor();
        self.legend.show_gone ^= true;
        self.follow_anchor();
        self.set_anchor();
    }
}

/// The legend's height for `state` in an area `height` rows high: borders, header and rows.
pub fn height(state: &WatchState, height: u16) -> u16 {
    let rows = rows(state).len().clamp(1, LEGEND_ROWS);
    (rows as u16 + 3).min(height / 2)
}

/// The legend's title: the window, then what the values are or what was not found.
fn title(state: &WatchState, total: usize) -> String {
    let view = &state.legend;
    let window = if total == 0 {
        "Legend".to_owned()
    } else {
        let last = (view.offset + view.page).min(total);
        format!("Legend {}–{last} of {total}", view.offset + 1)
    };
    if !state.unmatched.is_empty() {
        // Why first: a long path list is cut at the right edge.
        let why: String = state.absent.iter().map(|a| format!("{a} ─ ")).collect();
        format!(
            " {window} ─ {why}Not found now: {} ",
            state.unmatched.join(", ")
        )
    } else if state.dropped > 0 {
        format!(
            " {window} ─ {MAX_SERIES} live counters at most, not charted: {} ",
            state.dropped
        )
    } else if state.scale {
        format!(" {window} (values × Scale) ")
    } else {
        format!(" {window} (true values) ")
    }
}

/// The header row.
fn header() -> Row<'static> {
    let names = [
        "", "Scale", "Last", "Average", "Minimum", "Maximum", "Counter",
    ];
    Row::new(names.into_iter().enumerate().map(|(i, h)| {
        if (2..=5).contains(&i) {
            Cell::from(Line::from(h).right_aligned())
        } else {
            Cell::from(h)
        }
    }))
    .style(Style::default().add_modifier(Modifier::BOLD))
}

/// The table row for `row`, its counter's path cut to `path_width`.
fn table_row(state: &WatchState, row: LegendRow, path_width: usize) -> Row<'static> {
    let blank = || std::iter::repeat_n(Cell::from(""), 6);
    let s = match row {
        LegendRow::Gone(n) if state.legend.show_gone => {
            return Row::new(blank().chain([Cell::from(format!("▾ {n} gone (g hides them)"))]))
        }
        LegendRow::Gone(n) => {
            return Row::new(blank().chain([Cell::from(format!("▸ {n} gone (g shows them)"))]))
        }
        LegendRow::Series(i) => &state.series[i],
    };
    let right = |v: Option<f64>| Cell::from(Line::from(number(v)).right_aligned());
    let (mut name, mut style) = (s.path.clone(), Style::default());
    if !s.present {
        name = format!("{} (gone)", s.path);
        style = style.add_modifier(Modifier::DIM);
    }
    let mark = if s.charted { "■" } else { "□" };
    Row::new([
        Cell::from(Span::styled(mark, Style::default().fg(s.color))),
        Cell::from(scale_label(if state.scale { s.scale } else { 0 })),
        right(s.last),
        right(s.average()),
        right(s.minimum()),
        right(s.maximum()),
        Cell::from(keep_end(&name, path_width)),
    ])
    .style(style)
}

/// Draws the legend into `area`, fitting its window to the rows `area` has.
pub fn render(frame: &mut Frame, area: Rect, state: &mut WatchState) {
    state.legend.page = usize::from(area.height.saturating_sub(3)).max(1);
    state.follow_anchor();
    state.set_anchor();
    let all = rows(state);
    let view = state.legend.clone();
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
    let mut rows: Vec<Row> = all
        .iter()
        .enumerate()
        .skip(view.offset)
        .take(view.page)
        .map(|(i, row)| {
            let drawn = table_row(state, *row, path_width);
            if i == view.selected {
                drawn.add_modifier(Modifier::REVERSED)
            } else {
                drawn
            }
        })
        .collect();
    if rows.is_empty() {
        let blank = std::iter::repeat_n(Cell::from(""), 6);
        rows.push(Row::new(blank.chain([Cell::from("(no values yet)")])));
    }
    let block = Block::bordered()
        .title(title(state, all.len()))
        .title_bottom(KEYS);
    frame.render_widget(Table::new(rows, widths).header(header()).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{reading, sample, screen};
    use super::*;
    use std::time::Duration;

    /// A sample of instances `iNN` of `Jobs/sec` for `range`, each valued its number.
    fn jobs(range: std::ops::Range<usize>) -> prfmon::sampler::Sample {
        let name = |i: usize| format!("i{i:02}");
        sample(
            range
                .map(|i| reading(Some(&name(i)), "Jobs/sec", 0, Some(i as f64)))
                .collect(),
        )
    }

    /// A chart that has seen instances `first..` of `Jobs/sec`, then only those in `now`.
    fn churned(first: std::ops::Range<usize>, now: std::ops::Range<usize>) -> WatchState {
        let mut state = WatchState::new(Duration::from_secs(1), true);
        state.update(&jobs(first));
        state.update(&jobs(now));
        state
    }

    /// The legend's rows on an 80×24 screen: from the header to the bottom border.
    fn legend_rows(lines: &[String]) -> Vec<String> {
        let header = lines
            .iter()
            .position(|l| l.contains("Counter"))
            .expect("the header");
        lines[header + 1..]
            .iter()
            .take_while(|l| !l.starts_with('└'))
            .cloned()
            .collect()
    }

    #[test]
    fn live_rows_come_first_and_gone_ones_collapse_into_one_row() {
        // i00..i05 first, then i03..i08: i00, i01, i02 are gone.
        let mut state = churned(0..6, 3..9);
        let lines = screen(&mut state, 80, 24);
        let rows = legend_rows(&lines);
        let text = lines.join("\n");
        for (row, name) in rows.iter().zip(["i03", "i04", "i05", "i06", "i07", "i08"]) {
            assert!(row.contains(&format!(r"Worker({name})\Jobs/sec")), "{text}");
        }
        assert!(rows[6].contains("▸ 3 gone (g shows them)"), "{text}");
        assert_eq!(rows.len(), 7, "{text}");
        assert!(text.contains("Legend 1–7 of 7"), "{text}");
        assert!(!text.contains("(gone)"), "{text}");

        state.toggle_gone();
        let lines = screen(&mut state, 80, 24);
        let rows = legend_rows(&lines);
        assert!(
            rows[6].contains("▾ 3 gone (g hides them)"),
            "{}",
            lines.join("\n")
        );
        assert!(
            rows[7].contains(r"Worker(i00)\Jobs/sec (gone)"),
            "{}",
            lines.join("\n")
        );
        assert!(lines.join("\n").contains("Legend 1–8 of 10"));
    }

    #[test]
    fn the_selection_follows_its_series_as_rows_above_it_go() {
        let mut state = churned(0..10, 0..10);
        for _ in 0..5 {
            state.move_selection(Move::Down);
        }
        // i05 selected; i01 and i02 go: i05 moves up two rows, and stays selected.
        state.update(&sample(
            [0, 3, 4, 5, 6, 7, 8, 9]
                .into_iter()
                .map(|i| reading(Some(&format!("i{i:02}")), "Jobs/sec", 0, Some(1.0)))
                .collect(),
        ));
        let rows = legend_rows(&screen(&mut state, 80, 24));
        assert_eq!(state.legend.selected, 3);
        state.toggle_selected();
        let hidden: Vec<&str> = state
            .series
            .iter()
            .filter(|s| !s.charted)
            .map(|s| s.path.as_str())
            .collect();
        assert_eq!(hidden, [r"\PrfData Demo Worker(i05)\Jobs/sec"], "{rows:?}");
    }

    #[test]
    fn a_new_live_series_evicts_the_oldest_gone_one_at_max_series() {
        // MAX_SERIES series, the first two gone.
        let mut state = churned(0..MAX_SERIES, 2..MAX_SERIES);
        let colors: Vec<_> = state
            .series
            .iter()
            .map(|s| (s.path.clone(), s.color))
            .collect();
        // Two new live ones: the two gone ones make room.
        state.update(&jobs(2..MAX_SERIES + 2));
        assert_eq!(state.series.len(), MAX_SERIES);
        assert_eq!(state.dropped, 0);
        assert!(state.series.iter().all(|s| s.present));
        assert!(!state
            .series
            .iter()
            .any(|s| s.path.contains("(i00)") || s.path.contains("(i01)")));
        // The others keep their colours.
        for s in &state.series[..MAX_SERIES - 2] {
            assert!(colors.contains(&(s.path.clone(), s.color)), "{}", s.path);
        }
        // Every series live: one more is not charted, and no live one is dropped.
        state.update(&jobs(2..MAX_SERIES + 3));
        assert_eq!(state.series.len(), MAX_SERIES);
        assert_eq!(state.dropped, 1);
        assert!(state.series.iter().all(|s| s.present));
        let text = screen(&mut state, 80, 24).join("\n");
        assert!(
            text.contains("64 live counters at most, not charted: 1"),
            "{text}"
        );
    }

    #[test]
    fn scrolling_shows_the_rows_below_and_the_window_in_the_title() {
        // 20 live, 3 gone: 21 rows.
        let mut state = churned(0..23, 3..23);
        // Keys before the first frame move by the legend's full height.
        state.move_selection(Move::Down);
        state.move_selection(Move::Down);
        state.move_selection(Move::PageDown);
        let lines = screen(&mut state, 80, 24);
        let text = lines.join("\n");
        assert!(text.contains("Legend 9–16 of 21"), "{text}");
        let rows = legend_rows(&lines);
        assert!(rows[0].contains(r"Worker(i11)\Jobs/sec"), "{text}");
        assert_eq!(state.legend.selected, 10);

        // Space hides the selected series (i13) from the chart; `a` charts it again.
        state.toggle_selected();
        let rows = legend_rows(&screen(&mut state, 80, 24));
        assert!(
            rows[2].contains('□') && rows[2].contains("(i13)"),
            "{rows:?}"
        );
        assert!(rows[1].contains('■'), "{rows:?}");
        state.chart_all_live();
        assert!(state.series.iter().all(|s| s.charted));

        state.move_selection(Move::End);
        let text = screen(&mut state, 80, 24).join("\n");
        assert!(
            text.contains("Legend 14–21 of 21") && text.contains("▸ 3 gone"),
            "{text}"
        );
        // Space on the gone row lists them.
        state.toggle_selected();
        state.move_selection(Move::End);
        let text = screen(&mut state, 80, 24).join("\n");
        assert!(
            text.contains("Legend 17–24 of 24") && text.contains("(i02)"),
            "{text}"
        );
        state.move_selection(Move::Home);
        state.move_selection(Move::Up);
        let text = screen(&mut state, 80, 24).join("\n");
        assert!(text.contains("Legend 1–8 of 24"), "{text}");
        state.move_selection(Move::PageUp);
        assert_eq!((state.legend.selected, state.legend.offset), (0, 0));
    }
}

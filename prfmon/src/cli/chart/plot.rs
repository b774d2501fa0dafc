//! The chart itself: the charted series' lines over the last samples, on a vertical axis from 0
//! to 100 or to the next 1, 2 or 5 × 10ⁿ above the largest value shown.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType};
use ratatui::Frame;

use super::state::WatchState;
use super::text::interval_label;
use super::HISTORY;

/// The top of the vertical axis: 100, or the next 1, 2 or 5 × 10ⁿ above `max`.
pub fn axis_top(max: f64) -> f64 {
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

/// An axis label: the value, or its power of ten from 100 000 up.
fn label(v: f64) -> String {
    if v.abs() >= 1e5 {
        format!("{v:.0e}")
    } else {
        format!("{v}")
    }
}

/// Draws the charted series' lines into `area`, in a block titled with the interval, the
/// sample number and the keys.
pub fn render(frame: &mut Frame, area: Rect, state: &WatchState) {
    let title = format!(
        " prfmon watch ─ every {} (+/- to change) ─ sample {} ─ q to quit ",
        interval_label(state.interval),
        state.samples
    );
    let x_max = (state.samples as f64).max(2.0);
    // As many samples as the chart has braille dots across (two per column).
    let span = (f64::from(area.width.saturating_sub(8)) * 2.0).clamp(10.0, HISTORY as f64);
    let x_min = (x_max - span).max(1.0);
    let lines: Vec<(Vec<(f64, f64)>, Style)> = state
        .series
        .iter()
        .filter(|s| s.charted)
        .map(|s| {
            let points = s.points.iter().copied().filter(|(x, _)| *x >= x_min);
            (points.collect(), Style::default().fg(s.color))
        })
        .collect();
    let visible = lines.iter().flat_map(|(p, _)| p).map(|(_, y)| *y);
    let y_max = axis_top(visible.clone().fold(f64::NEG_INFINITY, f64::max));
    let y_min = visible.fold(0.0_f64, f64::min);
    let datasets: Vec<Dataset> = lines
        .iter()
        .map(|(points, style)| {
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(*style)
                .data(points)
        })
        .collect();
    let labels = [label(y_min), label((y_min + y_max) / 2.0), label(y_max)];
    let chart = Chart::new(datasets)
        .block(Block::bordered().title(title))
        .x_axis(Axis::default().bounds([x_min, x_max]))
        .y_axis(Axis::default().bounds([y_min, y_max]).labels(labels));
    frame.render_widget(chart, area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_ends_at_100_or_a_round_number_above() {
        assert_eq!(axis_top(42.0), 100.0);
        assert_eq!(axis_top(130.0), 200.0);
        assert_eq!(axis_top(501.0), 1000.0);
    }
}

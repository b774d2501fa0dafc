//! What the chart keeps: one [`Series`] per counter matched so far, with its statistics, and
//! the [`WatchState`] that adds each sample to them.
//!
//! A wildcard's new instances are added as they appear; an instance that goes keeps its line
//! and statistics, marked gone, and continues if it comes back. At [`MAX_SERIES`] the oldest
//! gone series makes room for a new one; a live series is never dropped.

use std::collections::VecDeque;
use std::time::Duration;

use prfdata_untrusted::text::{escape_field, Style as TextStyle};
use ratatui::style::Color;

use prfmon::factor::Factors;
use prfmon::pdh;
use prfmon::sampler::{Reading, Sample};

use super::legend::LegendView;
use super::{COLORS, HISTORY, INTERVALS, MAX_SERIES};

/// One counter's line and statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The counter's path, without the machine.
    pub path: String,
    /// Its DefaultScale.
    pub scale: i32,
    /// Its line's colour, kept while it lives (however the legend's rows move).
    pub color: Color,
    /// Whether its line is drawn (Space in the legend hides it or draws it again).
    pub charted: bool,
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
    /// An empty, charted series for `path` with DefaultScale `scale`, drawn in `color`.
    pub fn new(path: String, scale: i32, color: Color) -> Self {
        Series {
            path,
            scale,
            color,
            charted: true,
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

/// The latest message while the chart owns the terminal, for the status row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    /// The message, one line.
    pub text: String,
    /// How many came before it (written to stderr with it after the chart quits).
    pub more: usize,
}

/// What the chart shows: the series, the sampling interval, what the last sample could not
/// find, the legend's window and the status row's message.
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
    /// Why installed apps named by [`WatchState::unmatched`] publish nothing, in brief
    /// ([`prfmon::absence::Absence::brief`]).
    pub absent: Vec<String>,
    /// Counters not charted because there were already [`MAX_SERIES`] live ones.
    pub dropped: usize,
    /// The Windows 95 stat servers' scale factors, applied to every displayed value (with or
    /// without `scale`: a factor gives the counter its unit, as pages × 4096 are bytes).
    pub factors: Factors,
    /// The legend's selected row, window and whether gone series are listed.
    pub legend: LegendView,
    /// The status row's message, if any came.
    pub message: Option<Message>,
    /// Series made so far (the next one's colour).
    made: usize,
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
            absent: Vec::new(),
            dropped: 0,
            factors: Factors::default(),
            legend: LegendView::default(),
            message: None,
            made: 0,
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
    /// what `update` (for tests) does with a sample's list, for readings that come one at a
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
            None => match self.make(path, r.default_scale, seen) {
                Some(i) => i,
                None => {
                    self.dropped += 1;
                    return;
                }
            },
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

    /// A new series for `path`, after the others; at [`MAX_SERIES`] the oldest gone series
    /// (one the sample being added has not matched either) makes room. `None` if every series
    /// is live.
    fn make(&mut self, path: String, scale: i32, seen: &mut Vec<bool>) -> Option<usize> {
        if self.series.len() >= MAX_SERIES {
            let oldest_gone =
                (0..self.series.len()).find(|&i| !self.series[i].present && !seen[i])?;
            self.series.remove(oldest_gone);
            seen.remove(oldest_gone);
        }
        let color = COLORS[self.made % COLORS.len()];
        self.made += 1;
        self.series.push(Series::new(path, scale, color));
        seen.push(false);
        Some(self.series.len() - 1)
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

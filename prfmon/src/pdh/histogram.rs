//! A percentile of a histogram over a sample interval, from two samples of its bucket counts.
//!
//! A histogram publishes one count per bucket (its geometry, [`Geometry`], says which values each
//! bucket holds). Between a previous and a current sample, bucket i counted d_i = cur_i − prev_i
//! values, N = Σ d_i in all. The percentile Q is the nearest-rank value: rank
//! r = max(1, ⌈Q·N/100⌉), read from the first bucket whose cumulative count reaches r, as that
//! bucket's midpoint `(lower + upper) / 2` (both edges inclusive) in the histogram's unit.
//!
//! - **Accuracy**: a log-linear bucket is at most 2^-p of its lower edge wide (or one value wide),
//!   so its midpoint lies within 2^-(p+1) of every value in it, the percentile's exact value among
//!   them: half the geometry's stated relative error ([`Geometry::relative_error`]).
//! - **Outside the range**: a log-linear histogram's underflow bucket (values below `lo`) reads
//!   as the lower edge of bucket 1: the percentile is *at most* that. Its overflow bucket, and an
//!   explicit histogram's last bucket (above the last bound), read as the last finite edge (the
//!   upper edge of the bucket before): the percentile is *at least* that. Prometheus'
//!   `histogram_quantile` does the same with its `+Inf` bucket.
//! - **No value** ([`NoValue`]), as for the mean beside it: no previous sample
//!   ([`NoValue::FirstSample`]); a bucket count that went back, the app restarted
//!   ([`NoValue::CounterWentBack`]); no value recorded in the interval
//!   ([`NoValue::BaseNotAdvanced`]); counts that do not fit the geometry or add up past 2^64 − 1
//!   ([`NoValue::BadHistogram`]).
//!
//! # Examples
//!
//! ```
//! use prfmon::pdh::histogram::{percentile, Percentile};
//! use prfdata_rules::histogram::{Explicit, Geometry, Unit};
//!
//! // Buckets ..=10 ms, 11..=20 ms, 21 ms..: 90 values in the first, 10 in the second.
//! let g = Geometry::Explicit(Explicit::new(Unit::Milliseconds, &[10, 20]).unwrap());
//! let (prev, cur) = ([5, 0, 0], [95, 10, 0]);
//! let p90: Percentile = "p90".parse()?;
//! assert_eq!(percentile(Some(&prev), &cur, &g, p90), Ok(5.0)); // midpoint of 0..=10
//! assert_eq!(percentile(Some(&prev), &cur, &g, "p99".parse()?), Ok(15.5)); // of 11..=20
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::formula::{HistogramFault, NoValue};
use prfdata_rules::histogram::Geometry;
use prfdata_wire::winperf::PERF_PRFDATA_HISTOGRAM;

/// Thousandths of a percent in one percent.
const MILLI: u32 = 1000;

/// A percentile Q with 0 < Q ≤ 100 and at most three decimals, as a counter path writes it:
/// `p50`, `p99.9`, `p100`.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::histogram::Percentile;
/// let q: Percentile = "p99.9".parse()?;
/// assert_eq!(q.thousandths(), 99_900);
/// assert_eq!(q.to_string(), "p99.9");
/// assert!("p0".parse::<Percentile>().is_err());
/// # Ok::<(), prfmon::pdh::histogram::PercentileError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Percentile(u32);

/// Why a text is not a [`Percentile`].
///
/// # Examples
///
/// ```
/// use prfmon::pdh::histogram::{Percentile, PercentileError};
/// let e = "p99.9999".parse::<Percentile>().unwrap_err();
/// assert!(matches!(e, PercentileError::Decimals { .. }));
/// assert_eq!(e.to_string(), r#""p99.9999" has more than three decimals: write at most three, as p99.999"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PercentileError {
    /// The text does not have the form `p` + digits, optionally `.` + one to three digits.
    #[error("{text:?} is not a percentile: write p and a number, as p50, p99.9 or p100")]
    Form {
        /// The text given.
        text: String,
    },
    /// The number has more than three decimals.
    #[error("{text:?} has more than three decimals: write at most three, as p99.999")]
    Decimals {
        /// The text given.
        text: String,
    },
    /// The number is 0 or above 100.
    #[error("{text:?} is outside 0 < Q <= 100: write p0.001 to p100")]
    Range {
        /// The text given.
        text: String,
    },
}

impl Percentile {
    /// The percentile of `thousandths` thousandths of a percent (99.9 % is 99 900), if
    /// 0 < Q ≤ 100.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::histogram::Percentile;
    /// assert_eq!(Percentile::from_thousandths(50_000), "p50".parse().ok());
    /// assert_eq!(Percentile::from_thousandths(0), None);
    /// ```
    pub const fn from_thousandths(thousandths: u32) -> Option<Percentile> {
        if thousandths == 0 || thousandths > 100 * MILLI {
            None
        } else {
            Some(Percentile(thousandths))
        }
    }

    /// Q in thousandths of a percent: 1 to 100 000.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::histogram::Percentile;
    /// assert_eq!("p0.001".parse::<Percentile>()?.thousandths(), 1);
    /// # Ok::<(), prfmon::pdh::histogram::PercentileError>(())
    /// ```
    pub const fn thousandths(self) -> u32 {
        self.0
    }

    /// The nearest rank among `n` values: max(1, ⌈Q·n/100⌉), exactly (no floating point).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::pdh::histogram::Percentile;
    /// let p99: Percentile = "p99".parse()?;
    /// assert_eq!((p99.rank(100), p99.rank(101), p99.rank(1)), (99, 100, 1));
    /// # Ok::<(), prfmon::pdh::histogram::PercentileError>(())
    /// ```
    pub const fn rank(self, n: u64) -> u64 {
        let scale = 100 * MILLI as u128;
        let r = (self.0 as u128 * n as u128).div_ceil(scale);
        if r == 0 {
            1
        } else {
            r as u64
        }
    }
}

impl core::str::FromStr for Percentile {
    type Err = PercentileError;

    fn from_str(text: &str) -> Result<Percentile, PercentileError> {
        let form = || PercentileError::Form { text: text.into() };
        let number = text.strip_prefix('p').ok_or_else(form)?;
        let (whole, decimals) = number.split_once('.').unwrap_or((number, "0"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || !digits(decimals) {
            return Err(form());
        }
        if decimals.len() > 3 {
            return Err(PercentileError::Decimals { text: text.into() });
        }
        let range = || PercentileError::Range { text: text.into() };
        let whole: u32 = match whole.trim_start_matches('0') {
            "" => 0,
            w if w.len() > 3 => return Err(range()),
            w => w.parse().map_err(|_| form())?,
        };
        let scale = 10u32.pow(3 - decimals.len() as u32);
        let fraction: u32 = decimals.parse::<u32>().map_err(|_| form())? * scale;
        Percentile::from_thousandths(whole * MILLI + fraction).ok_or_else(range)
    }
}

impl core::fmt::Display for Percentile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (whole, fraction) = (self.0 / MILLI, self.0 % MILLI);
        if fraction == 0 {
            return write!(f, "p{whole}");
        }
        let decimals = format!("{fraction:03}");
        write!(f, "p{whole}.{}", decimals.trim_end_matches('0'))
    }
}

/// The percentile `q` of the values a histogram of geometry `g` counted between the samples
/// `prev` and `cur` of its bucket counts, in the histogram's unit (see the
/// [module docs](self) for the rank, the midpoint, and what the buckets outside the range read
/// as).
///
/// # Errors
///
/// [`NoValue::FirstSample`] without `prev`; [`NoValue::CounterWentBack`] when a bucket count
/// went back (a restart); [`NoValue::BaseNotAdvanced`] when no value was counted;
/// [`NoValue::BadHistogram`] when a sample's length is not `g`'s bucket count or the interval's
/// counts add up past 2^64 − 1.
///
/// # Examples
///
/// ```
/// use prfmon::pdh::histogram::percentile;
/// use prfmon::pdh::NoValue;
/// use prfdata_rules::histogram::{Geometry, LogLinear, Unit};
///
/// // 5..=40 us at p = 2: bucket 4 holds 8..=9, bucket 5 holds 10..=11.
/// let g = Geometry::LogLinear(LogLinear::new(Unit::Microseconds, 5, 40, 2).unwrap());
/// let mut prev = vec![0; g.buckets()];
/// let mut cur = prev.clone();
/// cur[4] = 50;
/// cur[5] = 50;
/// assert_eq!(percentile(Some(&prev), &cur, &g, "p50".parse()?), Ok(8.5));
/// assert_eq!(percentile(Some(&prev), &cur, &g, "p51".parse()?), Ok(10.5));
/// prev[5] = 60; // went back: the app restarted
/// assert!(matches!(percentile(Some(&prev), &cur, &g, "p50".parse()?),
///                  Err(NoValue::CounterWentBack { delta: -10 })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn percentile(
    prev: Option<&[u64]>,
    cur: &[u64],
    g: &Geometry,
    q: Percentile,
) -> Result<f64, NoValue> {
    let prev = prev.ok_or(NoValue::FirstSample {
        counter_type: PERF_PRFDATA_HISTOGRAM,
    })?;
    let n = counted(prev, cur, g.buckets())?;
    if n == 0 {
        return Err(NoValue::BaseNotAdvanced { delta: 0 });
    }
    let rank = q.rank(n);
    let mut seen = 0;
    let bucket = prev.iter().zip(cur).position(|(p, c)| {
        seen += c - p; // no overflow: the whole sum fits (`counted`)
        seen >= rank
    });
    // The rank is at most n, so some bucket reaches it.
    Ok(reading(g, bucket.unwrap_or(g.buckets() - 1)))
}

/// How many values the buckets counted between `prev` and `cur`, both `buckets` long.
fn counted(prev: &[u64], cur: &[u64], buckets: usize) -> Result<u64, NoValue> {
    for found in [prev.len(), cur.len()] {
        if found != buckets {
            let fault = HistogramFault::Buckets {
                found,
                expected: buckets,
            };
            return Err(NoValue::BadHistogram { fault });
        }
    }
    if let Some((p, c)) = prev.iter().zip(cur).find(|(p, c)| c < p) {
        let delta = i64::try_from(*c as i128 - *p as i128).unwrap_or(i64::MIN);
        return Err(NoValue::CounterWentBack { delta });
    }
    prev.iter()
        .zip(cur)
        .try_fold(0u64, |n, (p, c)| n.checked_add(c - p))
        .ok_or(NoValue::BadHistogram {
            fault: HistogramFault::Total,
        })
}

/// What bucket `i` reads as: its midpoint; a log-linear underflow bucket the lower edge of
/// bucket 1 (at most), the last bucket the upper edge of the one before (at least).
fn reading(g: &Geometry, i: usize) -> f64 {
    let last = g.buckets() - 1;
    match g {
        Geometry::LogLinear(_) if i == 0 => g.lower(1) as f64,
        _ if i == last => g.upper(last - 1) as f64,
        _ => (g.lower(i) as f64 + g.upper(i) as f64) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_rules::histogram::{Explicit, LogLinear, Unit};

    fn q(text: &str) -> Percentile {
        text.parse().unwrap()
    }

    /// 5..=40 at p = 2 (the geometry drawn in prfdata-rules' module docs): bucket 0 holds
    /// 0..=4, buckets 1..=3 hold 5, 6, 7, bucket 4 holds 8..=9, .., bucket 13 40..=47, bucket 14
    /// 48 and above.
    fn small() -> Geometry {
        Geometry::LogLinear(LogLinear::new(Unit::Count, 5, 40, 2).unwrap())
    }

    /// Counts with `counts[j].1` values in bucket `counts[j].0`.
    fn counts(g: &Geometry, counts: &[(usize, u64)]) -> Vec<u64> {
        let mut c = vec![0; g.buckets()];
        for &(i, n) in counts {
            c[i] += n;
        }
        c
    }

    #[test]
    fn percentile_texts_parse_to_thousandths_and_print_back() {
        for (text, thousandths) in [("p50", 50_000), ("p99.9", 99_900), ("p100", 100_000)] {
            assert_eq!(q(text).thousandths(), thousandths, "{text}");
            assert_eq!(q(text).to_string(), text);
        }
        assert_eq!(q("p0.001").thousandths(), 1);
        assert_eq!(q("p99.990").to_string(), "p99.99");
    }

    #[test]
    fn percentile_texts_outside_the_rule_are_refused_by_kind() {
        for text in [
            "50", "p", "p.5", "p5.", "p-1", "p+5", "p 5", "P50", "p1e2", "p50%",
        ] {
            assert!(
                matches!(
                    text.parse::<Percentile>(),
                    Err(PercentileError::Form { .. })
                ),
                "{text}"
            );
        }
        for text in ["p99.9999", "p0.0001"] {
            let e = text.parse::<Percentile>();
            assert!(matches!(e, Err(PercentileError::Decimals { .. })), "{text}");
        }
        for text in ["p0", "p0.000", "p100.001", "p101", "p99999999999"] {
            assert!(
                matches!(
                    text.parse::<Percentile>(),
                    Err(PercentileError::Range { .. })
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn no_previous_sample_is_the_first_sample() {
        let g = small();
        let cur = counts(&g, &[(4, 1)]);
        let first = NoValue::FirstSample {
            counter_type: PERF_PRFDATA_HISTOGRAM,
        };
        assert_eq!(percentile(None, &cur, &g, q("p50")), Err(first));
    }

    #[test]
    fn a_bucket_count_that_went_back_is_a_restart() {
        let g = small();
        let prev = counts(&g, &[(4, 10), (6, 3)]);
        let cur = counts(&g, &[(4, 100), (6, 1)]);
        let back = NoValue::CounterWentBack { delta: -2 };
        assert_eq!(percentile(Some(&prev), &cur, &g, q("p50")), Err(back));
    }

    #[test]
    fn no_value_counted_in_the_interval_is_a_base_not_advanced() {
        let g = small();
        let same = counts(&g, &[(4, 10)]);
        let none = NoValue::BaseNotAdvanced { delta: 0 };
        assert_eq!(percentile(Some(&same), &same, &g, q("p99")), Err(none));
    }

    #[test]
    fn counts_past_2_pow_64_or_of_another_length_are_a_bad_histogram() {
        let g = small();
        let prev = counts(&g, &[]);
        let cur = counts(&g, &[(4, u64::MAX), (5, 1)]);
        let total = NoValue::BadHistogram {
            fault: HistogramFault::Total,
        };
        assert_eq!(percentile(Some(&prev), &cur, &g, q("p50")), Err(total));
        let short = &cur[1..];
        let length = NoValue::BadHistogram {
            fault: HistogramFault::Buckets {
                found: g.buckets() - 1,
                expected: g.buckets(),
            },
        };
        assert_eq!(percentile(Some(&prev), short, &g, q("p50")), Err(length));
        assert_eq!(percentile(Some(short), &cur, &g, q("p50")), Err(length));
    }

    #[test]
    fn the_nearest_rank_bucket_reads_as_its_midpoint() {
        let g = small();
        let prev = counts(&g, &[(4, 7), (13, 1)]);
        // 100 values in the interval: 1 of 5, 49 of 8..=9, 49 of 10..=11, 1 of 40..=47.
        let cur = counts(&g, &[(1, 1), (4, 56), (5, 49), (13, 2)]);
        let at = |text| percentile(Some(&prev), &cur, &g, q(text));
        assert_eq!(at("p0.001"), Ok(5.0));
        assert_eq!(at("p1"), Ok(5.0));
        assert_eq!(at("p1.001"), Ok(8.5));
        assert_eq!(at("p50"), Ok(8.5));
        assert_eq!(at("p50.001"), Ok(10.5));
        assert_eq!(at("p99"), Ok(10.5));
        assert_eq!(at("p99.001"), Ok(43.5));
        assert_eq!(at("p100"), Ok(43.5));
    }

    #[test]
    fn underflow_reads_as_at_most_lo_and_overflow_as_at_least_the_last_edge() {
        let g = small();
        let last = g.buckets() - 1;
        let prev = counts(&g, &[]);
        let cur = counts(&g, &[(0, 1), (last, 1)]);
        assert_eq!(percentile(Some(&prev), &cur, &g, q("p50")), Ok(5.0));
        assert_eq!(percentile(Some(&prev), &cur, &g, q("p100")), Ok(47.0));
        let e = Geometry::Explicit(Explicit::new(Unit::Bytes, &[10, 20]).unwrap());
        let prev = [0, 0, 0];
        assert_eq!(percentile(Some(&prev), &[1, 0, 0], &e, q("p50")), Ok(5.0));
        assert_eq!(percentile(Some(&prev), &[0, 0, 1], &e, q("p50")), Ok(20.0));
    }

    /// For every distribution and p, the percentiles over the second half of the values (the
    /// first half is already in the previous sample) lie within 2^-(p+1) of the exact
    /// nearest-rank percentile of those values sorted: the midpoint of a bucket at most 2^-p of
    /// its lower edge wide is at most half that width from any value in it, and the nearest-rank
    /// bucket is the one holding the exact percentile.
    #[test]
    fn percentiles_are_within_half_the_stated_error_of_the_exact_ones() {
        use prfdata_testkit::values::{values, Mix};
        let mut mix = Mix(0x2545_f491_4f6c_dd1d);
        let kinds = ["uniform", "log-normal 0.5", "log-normal 1.5", "bimodal"];
        for (kind, p) in kinds.iter().flat_map(|k| [2u8, 4, 6, 7].map(|p| (*k, p))) {
            let ll = LogLinear::new(Unit::Microseconds, 1, 10_000_000, p).unwrap();
            let g = Geometry::LogLinear(ll);
            let all = values(kind, 40_000, (1.0, 10_000_000.0), &mut mix);
            let (before, during) = all.split_at(all.len() / 2);
            let mut prev = vec![0; g.buckets()];
            before.iter().for_each(|&v| prev[g.index(v)] += 1);
            let mut cur = prev.clone();
            during.iter().for_each(|&v| cur[g.index(v)] += 1);
            let mut sorted = during.to_vec();
            sorted.sort_unstable();
            let half = g.relative_error().unwrap() / 2.0;
            assert_eq!(half, 1.0 / (1u64 << (p + 1)) as f64);
            for text in ["p50", "p90", "p99", "p99.9"] {
                let exact = sorted[q(text).rank(sorted.len() as u64) as usize - 1] as f64;
                let got = percentile(Some(&prev), &cur, &g, q(text)).unwrap();
                let bound = half * exact;
                assert!(
                    (got - exact).abs() <= bound,
                    "{kind} p={p} {text}: {got} vs {exact}"
                );
            }
        }
    }

    proptest::proptest! {
        /// Over any counts, a higher percentile never reads lower, every percentile lies
        /// between the readings of the first and the last bucket, and the printed form of any
        /// percentile parses back to it.
        #[test]
        fn percentiles_grow_with_q_and_print_back(
            p in 1u8..=8,
            lo in 1u64..5000,
            span in 2u64..4000,
            deltas in proptest::collection::vec(0u64..50, 1..=64),
            qs in proptest::collection::vec(1u32..=100_000, 2..8),
        ) {
            let g = Geometry::LogLinear(LogLinear::new(Unit::Count, lo, lo * span, p).unwrap());
            let prev = vec![7; g.buckets()];
            let mut cur = prev.clone();
            for (j, d) in deltas.iter().enumerate() {
                cur[j * 7919 % g.buckets()] += d;
            }
            let mut qs: Vec<Percentile> =
                qs.iter().filter_map(|&t| Percentile::from_thousandths(t)).collect();
            qs.sort();
            let at = |q| percentile(Some(&prev), &cur, &g, q);
            let readings: Vec<_> = qs.iter().map(|&q| at(q)).collect();
            if deltas.iter().all(|&d| d == 0) {
                let none = NoValue::BaseNotAdvanced { delta: 0 };
                proptest::prop_assert!(readings.iter().all(|r| *r == Err(none)));
                return Ok(());
            }
            let readings: Vec<f64> = readings.into_iter().map(Result::unwrap).collect();
            let (low, high) = (g.lower(1) as f64, g.upper(g.buckets() - 2) as f64);
            proptest::prop_assert!(readings.windows(2).all(|w| w[0] <= w[1]), "{readings:?}");
            proptest::prop_assert!(readings.iter().all(|&r| low <= r && r <= high));
            for q in qs {
                proptest::prop_assert_eq!(q.to_string().parse::<Percentile>(), Ok(q));
            }
        }
    }
}

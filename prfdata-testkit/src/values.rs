//! Reproducible values for the histogram tests: a small deterministic generator ([`Mix`],
//! splitmix64) and the distributions those tests record ([`values`]), so that every process of
//! a test, and every run, draws the same numbers from the same start.
//!
//! # Examples
//!
//! ```
//! use prfdata_testkit::values::{values, Mix};
//!
//! let a = values("log-normal 0.5", 1000, (1.0, 1e7), &mut Mix(7));
//! let b = values("log-normal 0.5", 1000, (1.0, 1e7), &mut Mix(7));
//! assert_eq!(a, b);
//! assert!(a.iter().all(|&v| (1..=10_000_000).contains(&v)));
//! ```

/// A small deterministic generator (splitmix64): the same start gives the same numbers.
#[derive(Clone, Debug)]
pub struct Mix(pub u64);

impl Mix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Log-normal around `median` with shape `sigma` (Box-Muller for the normal).
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        let (a, b) = (self.unit(), self.unit());
        let z = (-2.0 * a.ln()).sqrt() * (core::f64::consts::TAU * b).cos();
        median * (sigma * z).exp()
    }
}

/// `n` values of distribution `kind`, clamped to `lo..=hi`: `"uniform"` over the range,
/// `"log-normal 0.5"` and `"log-normal 1.5"` around 1000, or (anything else) bimodal: 90 %
/// near 200 and 10 % near 50,000, so that p99 and p99.9 lie in the second mode.
pub fn values(kind: &str, n: usize, (lo, hi): (f64, f64), mix: &mut Mix) -> Vec<u64> {
    let draw = |mix: &mut Mix| match kind {
        "uniform" => lo + mix.unit() * (hi - lo),
        "log-normal 0.5" => mix.log_normal(1000.0, 0.5),
        "log-normal 1.5" => mix.log_normal(1000.0, 1.5),
        _ if mix.unit() < 0.9 => mix.log_normal(200.0, 0.2),
        _ => mix.log_normal(50_000.0, 0.2),
    };
    (0..n).map(|_| draw(mix).clamp(lo, hi) as u64).collect()
}

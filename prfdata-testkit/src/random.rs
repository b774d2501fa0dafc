//! Reproducible pseudo-random values for tests and benchmarks: the same seed gives the same
//! values on every machine, so a failing case can be replayed and two runs measure the same work.
//!
//! # Examples
//!
//! ```
//! use prfdata_testkit::random::Mix;
//!
//! let mut a = Mix::new(7);
//! let mut b = Mix::new(7);
//! let v = a.log_normal(2000.0, 0.8);
//! assert!(v > 0.0);
//! assert_eq!(v, b.log_normal(2000.0, 0.8));
//! ```

/// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): one 64-bit state, every output equally likely.
#[derive(Debug, Clone)]
pub struct Mix(u64);

impl Mix {
    /// A generator whose values follow from `seed` alone.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in the open interval (0, 1).
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Log-normal with median `median` and shape `sigma` (the normal from Box and Muller's
    /// transform): half the values lie below `median`, and `ln v` has standard deviation `sigma`.
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        let (a, b) = (self.unit(), self.unit());
        let z = (-2.0 * a.ln()).sqrt() * (core::f64::consts::TAU * b).cos();
        median * (sigma * z).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::Mix;

    /// The median and the spread of `ln v` are the ones asked for (within sampling error).
    #[test]
    fn log_normal_has_the_median_and_shape_asked_for() {
        let mut mix = Mix::new(1);
        let mut values: Vec<f64> = (0..100_000).map(|_| mix.log_normal(2000.0, 0.8)).collect();
        values.sort_by(f64::total_cmp);
        let median = values[values.len() / 2];
        assert!((median / 2000.0 - 1.0).abs() < 0.02, "median {median}");
        let n = values.len() as f64;
        let mean = values.iter().map(|v| v.ln()).sum::<f64>() / n;
        let var = values.iter().map(|v| (v.ln() - mean).powi(2)).sum::<f64>() / n;
        assert!((var.sqrt() - 0.8).abs() < 0.01, "shape {}", var.sqrt());
    }

    /// Uniform values stay inside (0, 1) and fill both halves.
    #[test]
    fn unit_is_inside_the_open_interval_and_balanced() {
        let mut mix = Mix::new(2);
        let values: Vec<f64> = (0..10_000).map(|_| mix.unit()).collect();
        assert!(values.iter().all(|&u| u > 0.0 && u < 1.0));
        let low = values.iter().filter(|&&u| u < 0.5).count();
        assert!((4_800..5_200).contains(&low), "{low} of 10000 below 0.5");
    }
}

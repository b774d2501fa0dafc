//! The raw samples of one collection, kept for the next: what a rate needs from the sample
//! before.
//!
//! Only the counters whose formula reads the previous sample keep one (a `PERF_COUNTER_RAWCOUNT`
//! keeps nothing), each as three words and a type, keyed by its path: PDH keys a counter's
//! previous raw value by the counter's handle, which stands for its path; here the key is the
//! path in lower case (as it always was), hashed to 64 bits with a randomly keyed SipHash, and
//! a second, independent 32-bit hash is checked on every lookup. Two paths of one query would
//! have to agree on 96 random bits to be confused.
//!
//! ```text
//! path (lower case) ──SipHash k1──▶ key (HashMap)   ──▶ value, base, type, object clock
//!                   ──SipHash k2──▶ check (32 bits)
//! ```
//!
//! The clocks of the collection are kept once, and those of each object once
//! (`PERF_OBJECT_TYPE.PerfTime` and `PerfFreq`), not per counter.
//!
//! A histogram whose percentiles are sampled keeps its bucket counts and geometry, once for all
//! its percentiles, keyed the same way by the path of the histogram (its name, without `:pQ`).
//! A geometry that changed between the samples (the app restarted with another map) makes the
//! next sample a first one.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::histogram::HistogramView;
use crate::pdh::{FormatOptions, NoValue, Percentile, RawSample};
use prfdata_rules::histogram::Geometry;
use prfdata_wire::snapshot::DataSnapshot;

/// One counter's raw sample, without its clocks.
#[derive(Debug, Clone, Copy)]
struct Kept {
    value: i64,
    base: i64,
    counter_type: u32,
    /// Position of the object's clock in [`Previous::clocks`].
    clock: u32,
    /// The second hash of the path.
    check: u32,
    has_base: bool,
}

/// One histogram's bucket counts.
#[derive(Debug, Clone)]
struct KeptBuckets {
    /// The second hash of the path.
    check: u32,
    geometry: Geometry,
    counts: Vec<u64>,
}

/// The raw samples of one collection by path (see the [module docs](self)).
#[derive(Debug, Clone)]
pub(crate) struct Previous {
    keys: (RandomState, RandomState),
    /// `PerfTime`, `PerfFreq`, `PerfTime100nSec` of the collection.
    times: (i64, i64, i64),
    /// (`PerfTime`, `PerfFreq`) of the objects whose counters are kept, each once.
    clocks: Vec<(i64, i64)>,
    /// Position of each object's clock in `clocks`, by object position.
    clock_of: HashMap<usize, u32>,
    raws: HashMap<u64, Kept>,
    /// The histograms' bucket counts, by the hash of the histogram's path.
    buckets: HashMap<u64, KeptBuckets>,
}

impl Default for Previous {
    fn default() -> Self {
        Previous::new(RandomState::new(), RandomState::new())
    }
}

impl Previous {
    fn new(first: RandomState, second: RandomState) -> Self {
        Previous {
            keys: (first, second),
            times: (0, 0, 0),
            clocks: Vec::new(),
            clock_of: HashMap::new(),
            raws: HashMap::new(),
            buckets: HashMap::new(),
        }
    }

    /// An empty set for the raw samples of `snapshot`, with the same keys as this one (so
    /// that it can be looked up as the next sample's previous).
    pub(crate) fn next(&self, snapshot: &DataSnapshot) -> Previous {
        Previous {
            times: (
                snapshot.perf_time,
                snapshot.perf_freq,
                snapshot.perf_time_100nsec,
            ),
            ..Previous::new(self.keys.0.clone(), self.keys.1.clone())
        }
    }

    /// The two hashes of a path in lower case.
    fn hashes(&self, key: &str) -> (u64, u32) {
        (self.keys.0.hash_one(key), self.keys.1.hash_one(key) as u32)
    }

    /// The raw sample kept under `key` (a path in lower case), clocks included.
    pub(crate) fn get(&self, key: &str) -> Option<RawSample> {
        let (hash, check) = self.hashes(key);
        let kept = self.raws.get(&hash).filter(|k| k.check == check)?;
        let (object_time, object_freq) = *self.clocks.get(kept.clock as usize)?;
        let (time, freq, time_100ns) = self.times;
        let raw = RawSample::new(kept.counter_type, kept.value)
            .with_time(time, freq)
            .with_time_100ns(time_100ns)
            .with_object_time(object_time, object_freq);
        Some(if kept.has_base {
            raw.with_base(kept.base)
        } else {
            raw
        })
    }

    /// `raw`'s value formatted with `options` ([`crate::pdh::format`]) from the sample kept
    /// here under `key` (a path in lower case), `raw` then kept under `key` in `next` (the
    /// set of this collection, [`Previous::next`]).
    pub(crate) fn format(
        &self,
        next: &mut Previous,
        key: &str,
        object: usize,
        raw: &RawSample,
        options: FormatOptions,
    ) -> Result<f64, NoValue> {
        let value = crate::pdh::format(self.get(key).as_ref(), raw, options);
        next.insert(key, object, raw);
        value
    }

    /// Percentile `q` of the histogram `view` over the interval from the bucket counts kept
    /// here under `key` (the histogram's path in lower case, without `:pQ`) to `view`'s
    /// ([`crate::pdh::percentile`]); `view`'s counts are then kept under `key` in `next`, once
    /// for all the percentiles of the histogram.
    pub(crate) fn percentile(
        &self,
        next: &mut Previous,
        key: &str,
        view: &HistogramView<'_>,
        q: Percentile,
    ) -> Result<f64, NoValue> {
        let (hash, check) = self.hashes(key);
        let before = self
            .buckets
            .get(&hash)
            .filter(|k| k.check == check && k.geometry == view.geometry)
            .map(|k| k.counts.as_slice());
        let value = crate::pdh::percentile(before, &view.buckets, &view.geometry, q);
        next.buckets.entry(hash).or_insert_with(|| KeptBuckets {
            check,
            geometry: view.geometry,
            counts: view.buckets.to_vec(),
        });
        value
    }

    /// Keeps `raw`, a sample of a counter of the object at `object` (a position in the
    /// snapshot this set was made for), under `key`, if its formula reads the previous sample.
    pub(crate) fn insert(&mut self, key: &str, object: usize, raw: &RawSample) {
        if !crate::pdh::formula::reads_previous(raw.counter_type) {
            return;
        }
        let clocks = &mut self.clocks;
        let clock = *self.clock_of.entry(object).or_insert_with(|| {
            clocks.push((raw.object_time, raw.object_freq));
            (clocks.len() - 1) as u32
        });
        let (hash, check) = self.hashes(key);
        self.raws.insert(
            hash,
            Kept {
                value: raw.value,
                base: raw.base.unwrap_or(0),
                counter_type: raw.counter_type,
                clock,
                check,
                has_base: raw.base.is_some(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_wire::winperf::{PERF_AVERAGE_BULK, PERF_COUNTER_RAWCOUNT};

    #[test]
    fn a_kept_sample_reads_back_whole_and_a_raw_count_is_not_kept() {
        let snapshot = DataSnapshot {
            perf_time: 5,
            perf_freq: 10,
            perf_time_100nsec: 7,
            ..DataSnapshot::default()
        };
        let mut previous = Previous::default().next(&snapshot);
        let raw = RawSample::new(PERF_AVERAGE_BULK, 40)
            .with_base(4)
            .with_time(5, 10)
            .with_time_100ns(7)
            .with_object_time(3, 1000);
        previous.insert(r"\a(x)\b", 0, &raw);
        previous.insert(r"\a(x)\c", 0, &RawSample::new(PERF_COUNTER_RAWCOUNT, 1));
        assert_eq!(previous.get(r"\a(x)\b"), Some(raw));
        assert_eq!(previous.get(r"\a(x)\c"), None);
        assert_eq!(previous.get(r"\a(y)\b"), None);
        assert_eq!(previous.clocks.len(), 1);
    }
}

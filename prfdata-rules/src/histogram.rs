//! A histogram's bucket geometry, once: the map macro checks a histogram's `range`, `error` or
//! `buckets` with it, prfdata lays the buckets out and records into them with it, the reader
//! checks a block's histograms with it, and every consumer reads the buckets back with it.
//!
//! Two schemes:
//!
//! - **log-linear** ([`LogLinear`]): HdrHistogram's layout without its overlapping half-octaves.
//!   Each octave `[2^e, 2^(e+1))` is cut into 2^p equal sub-buckets, so a bucket is never wider
//!   than 2^-p of its lower edge: the stated relative error. Values are counted in units of
//!   2^s (the resolution shift), chosen so the first bucket at `lo` already has that error.
//!   Bucket 0 is the underflow (below `lo`), bucket n − 1 the overflow (above `hi`);
//! - **explicit** ([`Explicit`]): up to [`MAX_EXPLICIT_BOUNDS`] bounds `B1 < .. < Bk`; bucket i
//!   counts the values `v` with `B(i) < v <= B(i+1)` (Prometheus' `le`), the last one every value
//!   above `Bk`.
//!
//! ```text
//!   log-linear, p = 2, s = 0, lo = 5, hi = 40           (edges are lower(i) .. upper(i))
//!   bucket  0     1   2   3   4    5     6     7     8      9      ..  13     14
//!   values  0..4  5   6   7   8-9  10-11 12-13 14-15 16-19  20-23  ..  40-47  48..
//!           under └ width 1 ┘ └─────── width 2^(e−p): 1/4 of the octave ───┘  over
//! ```
//!
//! [`Descriptor`] encodes a geometry into the words that precede a histogram's bucket counts in
//! perflib data, and decodes untrusted words back, checking everything.
//!
//! A map's histogram is checked by rules that each return the [`Violation`] the map macro reports
//! at the token and prfdata's map validation again: [`shape`], [`Unit::from_name`],
//! [`Unit::whole`], [`sub_bits`], [`LogLinear::new`], [`explicit_len`], [`explicit_bound`],
//! [`aggregate`], [`recorded`], [`sum_part`] and [`shard_line`].
//!
//! # Examples
//!
//! ```
//! use prfdata_rules::histogram::{Geometry, LogLinear, Unit};
//!
//! // 1 µs to 10 s, within 2 %: p = 6 (buckets at most 1/64 = 1.56 % of their lower edge).
//! let p = prfdata_rules::histogram::sub_bits(200).unwrap(); // 200 basis points = 2 %
//! let g = Geometry::LogLinear(LogLinear::new(Unit::Microseconds, 1, 10_000_000, p).unwrap());
//! assert_eq!(g.buckets(), 1166);
//! let i = g.index(1234);
//! assert!(g.lower(i) <= 1234 && 1234 <= g.upper(i));
//! ```

mod descriptor;

pub use descriptor::{Descriptor, DescriptorError, MAX_DESCRIPTOR_WORDS};

use crate::limits::{MAX_EXPLICIT_BOUNDS, MAX_HISTOGRAM_BUCKETS, MAX_SHARD_LINE};
use crate::map::{HistogramViolation, Violation};

/// The rule `h` broken, as a rule's result.
const fn broken<T>(h: HistogramViolation) -> Result<T, Violation> {
    Err(Violation::Histogram(h))
}

/// The largest value a histogram's range or bounds may name, in its unit: 2^62. It keeps every
/// bucket edge, and the edge after the last, inside a `u64` with room to spare.
pub const MAX_HISTOGRAM_VALUE: u64 = 1 << 62;

/// The fewest and most sub-bucket bits: an error of 50 % (p = 1) down to 0.39 % (p = 8).
pub const SUB_BITS: core::ops::RangeInclusive<u8> = 1..=8;

/// The unit a histogram's values are recorded in. Its code is the descriptor's unit field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Unit {
    /// Plain numbers.
    Count = 0,
    /// Nanoseconds.
    Nanoseconds = 1,
    /// Microseconds.
    Microseconds = 2,
    /// Milliseconds.
    Milliseconds = 3,
    /// Seconds.
    Seconds = 4,
    /// Bytes.
    Bytes = 5,
}

/// The units by the names a map gives them, in [`Unit`] code order.
pub const UNIT_NAMES: [&str; 6] = ["count", "ns", "us", "ms", "s", "bytes"];

impl Unit {
    /// The unit whose descriptor code is `code`, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::Unit;
    /// assert_eq!(Unit::from_code(2), Some(Unit::Microseconds));
    /// assert_eq!(Unit::from_code(6), None);
    /// ```
    pub const fn from_code(code: u8) -> Option<Unit> {
        Some(match code {
            0 => Unit::Count,
            1 => Unit::Nanoseconds,
            2 => Unit::Microseconds,
            3 => Unit::Milliseconds,
            4 => Unit::Seconds,
            5 => Unit::Bytes,
            _ => return None,
        })
    }

    /// The unit a map names (`unit: us`), one of [`UNIT_NAMES`].
    ///
    /// # Errors
    ///
    /// [`HistogramViolation::Unit`].
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::Unit;
    /// assert_eq!(Unit::from_name("ms"), Ok(Unit::Milliseconds));
    /// ```
    pub const fn from_name(name: &str) -> Result<Unit, crate::map::Violation> {
        let mut code = 0;
        while code < UNIT_NAMES.len() {
            if crate::str_eq(UNIT_NAMES[code], name) {
                if let Some(unit) = Unit::from_code(code as u8) {
                    return Ok(unit);
                }
            }
            code += 1;
        }
        broken(HistogramViolation::Unit)
    }

    /// The name a map gives the unit.
    pub const fn name(self) -> &'static str {
        UNIT_NAMES[self as usize]
    }

    /// Nanoseconds in one unit, for a time unit; `None` for `count` and `bytes`.
    pub const fn nanos(self) -> Option<u64> {
        match self {
            Unit::Nanoseconds => Some(1),
            Unit::Microseconds => Some(1_000),
            Unit::Milliseconds => Some(1_000_000),
            Unit::Seconds => Some(1_000_000_000),
            Unit::Count | Unit::Bytes => None,
        }
    }

    /// The index in [`UNITS`](crate::counter::UNITS) of the base unit a consumer exports the
    /// values in (`bytes` or `seconds`), as for any counter with a declared unit; `None` for
    /// `count`.
    pub const fn base_unit(self) -> Option<usize> {
        match self {
            Unit::Count => None,
            Unit::Bytes => Some(0),
            _ => Some(1),
        }
    }

    /// `amount` given with `suffix` (`10ms`: 10 and `"ms"`) in this unit. A time unit takes a
    /// time suffix (`ns`, `us`, `ms`, `s`), `count` and `bytes` take none (`""`).
    ///
    /// # Errors
    ///
    /// [`HistogramViolation::Suffix`] (a suffix of the wrong kind),
    /// [`HistogramViolation::NotWhole`]
    /// (`1500ns` in `us`) or [`HistogramViolation::High`] (past [`MAX_HISTOGRAM_VALUE`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::Unit;
    /// assert_eq!(Unit::Microseconds.whole(10, "ms"), Ok(10_000));
    /// assert!(Unit::Microseconds.whole(1500, "ns").is_err());
    /// ```
    pub const fn whole(self, amount: u64, suffix: &str) -> Result<u64, Violation> {
        let value = match (self.nanos(), suffix.is_empty()) {
            (None, true) => amount,
            (Some(unit_ns), false) => {
                let given_ns = match Unit::from_name(suffix) {
                    Ok(given) => match given.nanos() {
                        Some(ns) => ns,
                        None => return broken(HistogramViolation::Suffix),
                    },
                    Err(_) => return broken(HistogramViolation::Suffix),
                };
                let ns = amount as u128 * given_ns as u128;
                if !ns.is_multiple_of(unit_ns as u128) {
                    return broken(HistogramViolation::NotWhole);
                }
                let v = ns / unit_ns as u128;
                if v > MAX_HISTOGRAM_VALUE as u128 {
                    return broken(HistogramViolation::High);
                }
                v as u64
            }
            _ => return broken(HistogramViolation::Suffix),
        };
        if value > MAX_HISTOGRAM_VALUE {
            return broken(HistogramViolation::High);
        }
        Ok(value)
    }
}

/// The sub-bucket bits p for an error of `basis_points` hundredths of a percent (`2%` is 200):
/// the smallest p with 2^-p ≤ the error, which must be 0.4 % to 50 % (p 1 to 8).
///
/// # Errors
///
/// [`HistogramViolation::Error`].
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::sub_bits;
/// assert_eq!(sub_bits(1000), Ok(4)); // 10 %: 1/16 = 6.25 %
/// assert_eq!(sub_bits(100), Ok(7)); // 1 %: 1/128 = 0.78 %
/// assert!(sub_bits(39).is_err());
/// ```
pub const fn sub_bits(basis_points: u32) -> Result<u8, Violation> {
    if basis_points < 40 || basis_points > 5000 {
        return broken(HistogramViolation::Error);
    }
    let mut p = *SUB_BITS.start();
    while (basis_points as u64) << p < 10_000 {
        p += 1;
    }
    Ok(p)
}

/// Log-linear buckets (see the [module docs](self)): everything the hot path needs, five small
/// numbers fixed by the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogLinear {
    unit: Unit,
    sub_bits: u8,
    shift: u8,
    base: u32,
    last: u32,
}

/// The raw log-linear index of `w` (a value already shifted by s): `w` itself below 2^(p+1),
/// then 2^p per octave.
const fn raw(w: u64, p: u8) -> u64 {
    let e = 63 - (w | 1 << p).leading_zeros();
    let k = e - p as u32;
    ((k as u64) << p) + (w >> k)
}

/// The lower edge of raw index `j` before the shift, in `u128` so a corrupt `j` cannot overflow;
/// `None` past any `u64` edge.
const fn raw_lower(j: u64, p: u8) -> Option<u128> {
    if j < 1 << (p + 1) {
        return Some(j as u128);
    }
    let octave = j >> p;
    if octave > 64 {
        return None;
    }
    let mantissa = (1u128 << p) + (j & ((1 << p) - 1)) as u128;
    Some(mantissa << (octave - 1))
}

impl LogLinear {
    /// The buckets for the values `lo..=hi` in `unit`, each at most 2^-`sub_bits` of its lower
    /// edge wide (see [`sub_bits`]).
    ///
    /// # Errors
    ///
    /// [`HistogramViolation::Error`] (p outside 1 to 8), [`HistogramViolation::Range`] (`lo` 0 or
    /// not below `hi`), [`HistogramViolation::High`] (`hi` past [`MAX_HISTOGRAM_VALUE`]) or
    /// [`HistogramViolation::Buckets`] (more than [`MAX_HISTOGRAM_BUCKETS`]; [`bucket_count`]
    /// says how many).
    ///
    /// [`bucket_count`]: LogLinear::bucket_count
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::{LogLinear, Unit};
    /// let g = LogLinear::new(Unit::Bytes, 64, 1 << 30, 4).unwrap();
    /// assert_eq!(g.lower(1), 64);
    /// assert!(g.upper(g.buckets() - 2) >= 1 << 30);
    /// ```
    pub const fn new(unit: Unit, lo: u64, hi: u64, sub_bits: u8) -> Result<LogLinear, Violation> {
        let n = match LogLinear::bucket_count(lo, hi, sub_bits) {
            Ok(n) => n,
            Err(v) => return Err(v),
        };
        if n > MAX_HISTOGRAM_BUCKETS as u64 {
            return broken(HistogramViolation::Buckets);
        }
        let shift = shift_for(lo, sub_bits);
        let base = raw(lo >> shift, sub_bits) - 1;
        LogLinear::from_parts(unit, sub_bits, shift, base as u32, n as u32)
    }

    /// How many buckets [`new`](LogLinear::new) lays out for `lo..=hi` at `sub_bits`, the
    /// underflow and overflow buckets included, whatever the limit.
    ///
    /// # Errors
    ///
    /// As [`new`](LogLinear::new), but never [`HistogramViolation::Buckets`].
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::LogLinear;
    /// // 1 ns to 1000 s at 1 %: past the 4096-bucket limit.
    /// assert_eq!(LogLinear::bucket_count(1, 1_000_000_000_000, 7), Ok(4330));
    /// ```
    pub const fn bucket_count(lo: u64, hi: u64, sub_bits: u8) -> Result<u64, Violation> {
        if sub_bits < *SUB_BITS.start() || sub_bits > *SUB_BITS.end() {
            return broken(HistogramViolation::Error);
        }
        if lo == 0 || lo >= hi {
            return broken(HistogramViolation::Range);
        }
        if hi > MAX_HISTOGRAM_VALUE {
            return broken(HistogramViolation::High);
        }
        let shift = shift_for(lo, sub_bits);
        Ok(raw(hi >> shift, sub_bits) - raw(lo >> shift, sub_bits) + 3)
    }

    /// The geometry of its five numbers (a descriptor's fields), checked: p 1 to 8, s below 64,
    /// 3 to [`MAX_HISTOGRAM_BUCKETS`] buckets, every bucket at or above bucket 1 within the
    /// stated error (with s > 0, bucket 1 is past the linear part: `base + 1 ≥ 2^p`), and the
    /// overflow bucket's lower edge at most 2^63.
    ///
    /// # Errors
    ///
    /// [`HistogramViolation::Error`], [`HistogramViolation::Shift`],
    /// [`HistogramViolation::Buckets`] or [`HistogramViolation::High`].
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::{LogLinear, Unit};
    /// let g = LogLinear::new(Unit::Count, 10, 1000, 3).unwrap();
    /// let again = LogLinear::from_parts(Unit::Count, 3, g.shift(), g.base(), g.buckets() as u32);
    /// assert_eq!(again, Ok(g));
    /// ```
    pub const fn from_parts(
        unit: Unit,
        sub_bits: u8,
        shift: u8,
        base: u32,
        buckets: u32,
    ) -> Result<LogLinear, Violation> {
        if sub_bits < *SUB_BITS.start() || sub_bits > *SUB_BITS.end() {
            return broken(HistogramViolation::Error);
        }
        if shift > 63 || (shift > 0 && (base as u64) + 1 < 1 << sub_bits) {
            return broken(HistogramViolation::Shift);
        }
        if buckets < 3 || buckets > MAX_HISTOGRAM_BUCKETS {
            return broken(HistogramViolation::Buckets);
        }
        let overflow = match raw_lower(base as u64 + buckets as u64 - 1, sub_bits) {
            Some(edge) => edge << shift,
            None => return broken(HistogramViolation::High),
        };
        if overflow > 1 << 63 {
            return broken(HistogramViolation::High);
        }
        Ok(LogLinear {
            unit,
            sub_bits,
            shift,
            base,
            last: buckets - 1,
        })
    }

    /// The bucket of `v`, without a branch (a conditional move at each end):
    ///
    /// ```text
    /// w   = v >> s                           resolution 2^s
    /// e   = floor(log2(w | 2^p))             at least p
    /// k   = e − p                            octaves above the linear part
    /// raw = k·2^p + (w >> k)                 = w below 2^(p+1); continuous above
    /// i   = min(raw − base saturating, n − 1)
    /// ```
    #[inline(always)]
    pub const fn index(&self, v: u64) -> usize {
        let i = raw(v >> self.shift, self.sub_bits).saturating_sub(self.base as u64);
        if i > self.last as u64 {
            self.last as usize
        } else {
            i as usize
        }
    }

    /// The smallest value bucket `i` counts: 0 for the underflow bucket.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`buckets`](LogLinear::buckets).
    pub const fn lower(&self, i: usize) -> u64 {
        assert!(i <= self.last as usize, "no such bucket");
        if i == 0 {
            return 0;
        }
        match raw_lower(self.base as u64 + i as u64, self.sub_bits) {
            // A checked geometry keeps every edge at most 2^63 (`from_parts`).
            Some(edge) => (edge << self.shift) as u64,
            None => u64::MAX,
        }
    }

    /// The largest value bucket `i` counts (inclusive): `u64::MAX` for the overflow bucket.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`buckets`](LogLinear::buckets).
    pub const fn upper(&self, i: usize) -> u64 {
        if i == self.last as usize {
            u64::MAX
        } else {
            self.lower(i + 1) - 1
        }
    }

    /// The number of buckets, underflow and overflow included.
    pub const fn buckets(&self) -> usize {
        self.last as usize + 1
    }

    /// The unit of the values.
    pub const fn unit(&self) -> Unit {
        self.unit
    }

    /// The sub-bucket bits p: every bucket from bucket 1 to the overflow is at most 2^-p of its
    /// lower edge wide, or one value wide (exact).
    pub const fn sub_bits(&self) -> u8 {
        self.sub_bits
    }

    /// The resolution shift s: values are counted in units of 2^s.
    pub const fn shift(&self) -> u8 {
        self.shift
    }

    /// The raw index of bucket 1, minus one (the descriptor's `base`).
    pub const fn base(&self) -> u32 {
        self.base
    }
}

/// The resolution shift for `lo`: `max(0, floor(log2 lo) − p)`, so `lo >> s` lies in
/// `[2^p, 2^(p+1))` when s > 0 and bucket 1 already has the stated error.
const fn shift_for(lo: u64, sub_bits: u8) -> u8 {
    (63 - (lo | 1).leading_zeros()).saturating_sub(sub_bits as u32) as u8
}

/// Explicit bounds (see the [module docs](self)); the bounds are stored inline, so a geometry
/// decoded from shared memory needs no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Explicit {
    unit: Unit,
    len: u8,
    bounds: [u64; MAX_EXPLICIT_BOUNDS],
}

/// A histogram's declaration gives a `unit` and either `range` and `error` or `buckets`.
///
/// # Errors
///
/// [`HistogramViolation::Shape`].
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::shape;
/// assert!(shape(true, true, true, false).is_ok());
/// assert!(shape(true, true, false, true).is_err());
/// ```
pub const fn shape(unit: bool, range: bool, error: bool, buckets: bool) -> Result<(), Violation> {
    let log_linear = range && error && !buckets;
    let explicit = buckets && !range && !error;
    if unit && (log_linear || explicit) {
        Ok(())
    } else {
        broken(HistogramViolation::Shape)
    }
}

/// A histogram aggregates as a sum (its buckets, count and sum add up): `rule` indexes
/// [`AGGREGATES`](crate::counter::AGGREGATES), `None` for the default (`sum`).
///
/// # Errors
///
/// [`HistogramViolation::Aggregate`].
pub const fn aggregate(rule: Option<usize>) -> Result<(), Violation> {
    match rule {
        None | Some(0) => Ok(()),
        Some(_) => broken(HistogramViolation::Aggregate),
    }
}

/// A histogram is recorded by the app: not on demand, not a sum, without a scale factor.
///
/// # Errors
///
/// [`HistogramViolation::Computed`].
pub const fn recorded(on_demand: bool, sum: bool, factor: bool) -> Result<(), Violation> {
    if on_demand || sum || factor {
        broken(HistogramViolation::Computed)
    } else {
        Ok(())
    }
}

/// A sum's part is not a histogram (`histogram`: the part named is one).
///
/// # Errors
///
/// [`HistogramViolation::SumPart`].
pub const fn sum_part(histogram: bool) -> Result<(), Violation> {
    if histogram {
        broken(HistogramViolation::SumPart)
    } else {
        Ok(())
    }
}

/// The words an object's shard line takes (one per sharded counter, one per bucket of each
/// `sharded: true` histogram): at most [`MAX_SHARD_LINE`] bytes.
///
/// # Errors
///
/// [`HistogramViolation::ShardLine`].
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::shard_line;
/// assert!(shard_line(8192).is_ok() && shard_line(8193).is_err());
/// ```
pub const fn shard_line(words: u64) -> Result<(), Violation> {
    if words > (MAX_SHARD_LINE / 8) as u64 {
        broken(HistogramViolation::ShardLine)
    } else {
        Ok(())
    }
}

/// A map's number of explicit bounds: 1 to [`MAX_EXPLICIT_BOUNDS`].
///
/// # Errors
///
/// [`HistogramViolation::BoundsEmpty`] or [`HistogramViolation::BoundsTooMany`].
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::explicit_len;
/// assert!(explicit_len(64).is_ok() && explicit_len(65).is_err() && explicit_len(0).is_err());
/// ```
pub const fn explicit_len(bounds: usize) -> Result<(), Violation> {
    if bounds == 0 {
        broken(HistogramViolation::BoundsEmpty)
    } else if bounds > MAX_EXPLICIT_BOUNDS {
        broken(HistogramViolation::BoundsTooMany)
    } else {
        Ok(())
    }
}

/// One explicit bound, after `previous` (`None` for the first): at least 1, above the one
/// before it, at most [`MAX_HISTOGRAM_VALUE`].
///
/// # Errors
///
/// [`HistogramViolation::BoundZero`], [`HistogramViolation::BoundsOrder`] or
/// [`HistogramViolation::High`].
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::explicit_bound;
/// use prfdata_rules::map::{HistogramViolation, Violation};
///
/// let order = Violation::Histogram(HistogramViolation::BoundsOrder);
/// assert_eq!(explicit_bound(Some(5), 5), Err(order));
/// assert!(explicit_bound(Some(5), 25).is_ok());
/// ```
pub const fn explicit_bound(previous: Option<u64>, bound: u64) -> Result<(), Violation> {
    match previous {
        None if bound == 0 => broken(HistogramViolation::BoundZero),
        Some(before) if bound <= before => broken(HistogramViolation::BoundsOrder),
        _ if bound > MAX_HISTOGRAM_VALUE => broken(HistogramViolation::High),
        _ => Ok(()),
    }
}

impl Explicit {
    /// The buckets of `bounds` in `unit`, checked by [`explicit_len`] and [`explicit_bound`].
    ///
    /// # Errors
    ///
    /// The first violation those rules find.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::{Explicit, Unit};
    /// let g = Explicit::new(Unit::Milliseconds, &[1, 5, 25]).unwrap();
    /// assert_eq!((g.index(5), g.index(6), g.index(1000)), (1, 2, 3));
    /// ```
    pub const fn new(unit: Unit, bounds: &[u64]) -> Result<Explicit, Violation> {
        if let Err(v) = explicit_len(bounds.len()) {
            return Err(v);
        }
        let mut stored = [0; MAX_EXPLICIT_BOUNDS];
        let mut i = 0;
        while i < bounds.len() {
            let previous = if i == 0 { None } else { Some(bounds[i - 1]) };
            if let Err(v) = explicit_bound(previous, bounds[i]) {
                return Err(v);
            }
            stored[i] = bounds[i];
            i += 1;
        }
        Ok(Explicit {
            unit,
            len: bounds.len() as u8,
            bounds: stored,
        })
    }

    /// The bucket of `v`: how many bounds are below it. The slower form, O(k) without a branch
    /// on the data.
    #[inline]
    pub const fn index(&self, v: u64) -> usize {
        let mut i = 0;
        let mut above = 0;
        while i < self.len as usize {
            above += (v > self.bounds[i]) as usize;
            i += 1;
        }
        above
    }

    /// The smallest value bucket `i` counts: 0, or one above the bound before it.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`buckets`](Explicit::buckets).
    pub const fn lower(&self, i: usize) -> u64 {
        assert!(i <= self.len as usize, "no such bucket");
        if i == 0 {
            0
        } else {
            self.bounds[i - 1] + 1
        }
    }

    /// The largest value bucket `i` counts: its bound (`le`), `u64::MAX` for the last.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`buckets`](Explicit::buckets).
    pub const fn upper(&self, i: usize) -> u64 {
        assert!(i <= self.len as usize, "no such bucket");
        if i == self.len as usize {
            u64::MAX
        } else {
            self.bounds[i]
        }
    }

    /// The number of buckets: one more than the bounds.
    pub const fn buckets(&self) -> usize {
        self.len as usize + 1
    }

    /// The bounds, increasing.
    pub const fn bounds(&self) -> &[u64] {
        self.bounds.split_at(self.len as usize).0
    }

    /// The unit of the values.
    pub const fn unit(&self) -> Unit {
        self.unit
    }
}

/// A histogram's buckets, of either scheme.
///
/// Explicit bounds are stored inline (520 bytes), so a geometry decoded from shared memory
/// needs no allocation and a map holds one as a `static`; the hot path keeps a [`LogLinear`].
#[allow(clippy::large_enum_variant)] // inline on purpose: no allocation, `Copy`, `const`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Geometry {
    /// Log-linear buckets with a stated relative error.
    LogLinear(LogLinear),
    /// Explicit bounds.
    Explicit(Explicit),
}

impl Geometry {
    /// The bucket of `v`. A handle on the hot path keeps the [`LogLinear`] itself and calls its
    /// `index`, which has no branch.
    #[inline]
    pub const fn index(&self, v: u64) -> usize {
        match self {
            Geometry::LogLinear(g) => g.index(v),
            Geometry::Explicit(g) => g.index(v),
        }
    }

    /// The smallest value bucket `i` counts.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`buckets`](Geometry::buckets).
    pub const fn lower(&self, i: usize) -> u64 {
        match self {
            Geometry::LogLinear(g) => g.lower(i),
            Geometry::Explicit(g) => g.lower(i),
        }
    }

    /// The largest value bucket `i` counts (inclusive).
    ///
    /// # Panics
    ///
    /// If `i` is not below [`buckets`](Geometry::buckets).
    pub const fn upper(&self, i: usize) -> u64 {
        match self {
            Geometry::LogLinear(g) => g.upper(i),
            Geometry::Explicit(g) => g.upper(i),
        }
    }

    /// The number of buckets, one `u64` each.
    pub const fn buckets(&self) -> usize {
        match self {
            Geometry::LogLinear(g) => g.buckets(),
            Geometry::Explicit(g) => g.buckets(),
        }
    }

    /// The unit of the values.
    pub const fn unit(&self) -> Unit {
        match self {
            Geometry::LogLinear(g) => g.unit(),
            Geometry::Explicit(g) => g.unit(),
        }
    }

    /// The stated relative error, 2^-p, for log-linear buckets; explicit bounds state none.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::histogram::{Geometry, LogLinear, Unit};
    /// let ns = LogLinear::new(Unit::Nanoseconds, 1000, 60_000_000_000, 5).unwrap();
    /// let g = Geometry::LogLinear(ns);
    /// assert_eq!(g.relative_error(), Some(1.0 / 32.0));
    /// ```
    pub const fn relative_error(&self) -> Option<f64> {
        match self {
            Geometry::LogLinear(g) => Some(1.0 / (1u64 << g.sub_bits) as f64),
            Geometry::Explicit(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::HistogramViolation as H;
    use proptest::prelude::*;

    fn rule(h: H) -> Violation {
        Violation::Histogram(h)
    }

    fn err<T>(h: H) -> Result<T, Violation> {
        Err(rule(h))
    }

    /// The reference index: the first bucket whose upper edge is at or above `v`, by a scan.
    fn index_slow(g: &Geometry, v: u64) -> usize {
        (0..g.buckets()).find(|&i| v <= g.upper(i)).unwrap()
    }

    /// A value spread over every magnitude: `bits` random low bits.
    fn magnitude() -> impl Strategy<Value = u64> {
        (0u32..=64, any::<u64>()).prop_map(|(bits, r)| r.checked_shr(64 - bits).unwrap_or(0))
    }

    /// A log-linear geometry of random p, lo and hi within the bucket limit.
    fn log_linear() -> impl Strategy<Value = (LogLinear, u64, u64)> {
        (1u8..=8, magnitude(), 0u32..64, any::<u64>()).prop_filter_map(
            "past the bucket limit",
            |(p, lo, octaves, r)| {
                let lo = lo.clamp(1, MAX_HISTOGRAM_VALUE - 1);
                let octaves = octaves.min(4096 >> p);
                let span = (lo.saturating_mul(1 << octaves) | 1) as u128;
                let hi = (lo as u128 + 1 + r as u128 % span).min(MAX_HISTOGRAM_VALUE as u128);
                let g = LogLinear::new(Unit::Count, lo, hi as u64, p).ok()?;
                Some((g, lo, hi as u64))
            },
        )
    }

    fn explicit() -> impl Strategy<Value = Explicit> {
        proptest::collection::btree_set(1..=MAX_HISTOGRAM_VALUE, 1..=MAX_EXPLICIT_BOUNDS).prop_map(
            |set| {
                let bounds: Vec<u64> = set.into_iter().collect();
                Explicit::new(Unit::Bytes, &bounds).unwrap()
            },
        )
    }

    fn geometry() -> impl Strategy<Value = Geometry> {
        prop_oneof![
            log_linear().prop_map(|(g, _, _)| Geometry::LogLinear(g)),
            explicit().prop_map(Geometry::Explicit),
        ]
    }

    /// The value in bucket `i`'s edges and the reference scan's bucket, for a test's message.
    fn check_value(g: &Geometry, v: u64) -> Result<(), TestCaseError> {
        let i = g.index(v);
        prop_assert!(g.lower(i) <= v && v <= g.upper(i), "{v} in bucket {i}");
        prop_assert_eq!(i, index_slow(g, v), "value {}", v);
        Ok(())
    }

    /// Bucket 0 starts at 0, each bucket starts one after the one before ends, the overflow
    /// ends at `u64::MAX`, and every bucket from 1 to n − 2 is within the stated error or one
    /// value wide.
    fn check_edges(g: &LogLinear) -> Result<(), TestCaseError> {
        let n = g.buckets();
        prop_assert_eq!((g.lower(0), g.upper(n - 1)), (0, u64::MAX));
        for i in 0..n {
            prop_assert!(g.lower(i) <= g.upper(i));
            if i + 1 < n {
                prop_assert_eq!(g.upper(i) + 1, g.lower(i + 1));
            }
            let width = g.upper(i) - g.lower(i) + 1;
            if (1..n - 1).contains(&i) {
                prop_assert!(
                    width == 1 || width << g.sub_bits() <= g.lower(i),
                    "bucket {} [{}, {}] of p {}",
                    i,
                    g.lower(i),
                    g.upper(i),
                    g.sub_bits()
                );
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_value_lies_within_its_buckets_edges(
            (g, lo, hi) in log_linear(),
            v in magnitude(),
        ) {
            let g = Geometry::LogLinear(g);
            let i = g.index(v % (hi + 1));
            let (l, u) = (g.lower(i), g.upper(i));
            let edges = [l, u, l.saturating_sub(1), u.saturating_add(1)];
            for v in [v, lo - 1, lo, hi, hi + 1, v % (hi + 1)].into_iter().chain(edges) {
                check_value(&g, v)?;
            }
        }

        #[test]
        fn values_at_powers_of_two_and_beside_them_lie_within_their_buckets(g in geometry()) {
            for k in 0..64 {
                for v in [(1u64 << k) - 1, 1 << k, (1 << k) + 1] {
                    check_value(&g, v)?;
                }
            }
            check_value(&g, u64::MAX)?;
        }

        #[test]
        fn the_index_is_monotone(g in geometry(), a in magnitude(), b in magnitude()) {
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(g.index(lo) <= g.index(hi));
        }

        #[test]
        fn edges_increase_and_buckets_keep_the_stated_error((g, lo, hi) in log_linear()) {
            let n = g.buckets();
            prop_assert!(g.lower(1) <= lo && hi <= g.upper(n - 2));
            prop_assert_eq!((g.index(lo), g.index(hi)), (1, n - 2));
            check_edges(&g)?;
        }

        #[test]
        fn explicit_buckets_are_prometheus_le(g in explicit(), v in magnitude()) {
            let beside = g.bounds().iter().flat_map(|&b| [b - 1, b, b + 1]);
            for v in beside.chain([v]) {
                let le = g.bounds().iter().position(|&b| v <= b).unwrap_or(g.bounds().len());
                prop_assert_eq!(g.index(v), le);
                check_value(&Geometry::Explicit(g), v)?;
            }
        }

        #[test]
        fn a_descriptor_decodes_to_its_geometry(g in geometry(), count in any::<u64>()) {
            let d = Descriptor::of(&g);
            let mut value = d.words().to_vec();
            value.resize(d.words().len() + g.buckets(), count);
            prop_assert_eq!(Descriptor::decode(&value), Ok((g, d.words().len())));
            value.push(0);
            prop_assert!(Descriptor::decode(&value).is_err());
        }

        /// Words from shared memory: a valid value with random words changed, cut or grown. A
        /// decode that succeeds describes exactly the words it read.
        #[test]
        fn any_words_decode_to_an_error_or_to_a_geometry_that_encodes_to_them(
            g in geometry(),
            changes in proptest::collection::vec((0usize..70, any::<u64>(), any::<bool>()), 0..4),
            len in 0usize..4200,
        ) {
            let d = Descriptor::of(&g);
            let mut value = d.words().to_vec();
            value.resize(d.words().len() + g.buckets(), 1);
            for (at, word, flip_one_bit) in changes {
                if let Some(w) = value.get_mut(at) {
                    *w = if flip_one_bit { *w ^ 1 << (word % 64) } else { word };
                }
            }
            if len >= 3000 {
                value.resize(len % (value.len() + 2), 1);
            }
            if let Ok((decoded, used)) = Descriptor::decode(&value) {
                let again = Descriptor::of(&decoded);
                prop_assert_eq!(again.words(), &value[..used]);
                prop_assert_eq!(value.len(), used + decoded.buckets());
                if let Geometry::LogLinear(g) = decoded {
                    check_edges(&g)?;
                }
            }
        }
    }

    /// The module docs' diagram: p = 2 from 5 to 40.
    #[test]
    fn the_diagrams_buckets_are_the_geometrys() {
        let g = LogLinear::new(Unit::Count, 5, 40, 2).unwrap();
        let edges: Vec<_> = (0..g.buckets()).map(|i| (g.lower(i), g.upper(i))).collect();
        assert_eq!(
            &edges[..10],
            &[
                (0, 4),
                (5, 5),
                (6, 6),
                (7, 7),
                (8, 9),
                (10, 11),
                (12, 13),
                (14, 15),
                (16, 19),
                (20, 23)
            ]
        );
        assert_eq!(&edges[13..], &[(40, 47), (48, u64::MAX)]);
    }

    /// The bucket counts of the memory table in docs/histograms.md and README.md (range, unit
    /// and error as there) and the range that does not fit.
    #[test]
    fn bucket_counts_of_common_ranges() {
        let table = [
            ((1, 10_000_000), [325, 616, 1166, 2202]), // 1 µs .. 10 s in us
            ((10, 10_000_000), [316, 607, 1157, 2193]), // 10 µs .. 10 s in us (the demo)
            ((1_000, 60_000_000_000), [415, 828, 1653, 3304]), // 1 µs .. 60 s in ns
            ((1_000, 60_000_000), [256, 510, 1016, 2029]), // 1 ms .. 60 s in us
            ((64, 1 << 30), [387, 771, 1539, 3011]),   // 64 B .. 1 GiB
        ];
        for ((lo, hi), counts) in table {
            let got: Vec<_> = [1000, 500, 200, 100]
                .iter()
                .map(|&bp| LogLinear::bucket_count(lo, hi, sub_bits(bp).unwrap()).unwrap())
                .collect();
            assert_eq!(got, counts, "{lo}..{hi}");
        }
        let ns_to_1000_s = LogLinear::bucket_count(1, 1_000_000_000_000, 7);
        assert_eq!(ns_to_1000_s, Ok(4330));
        let refused = LogLinear::new(Unit::Nanoseconds, 1, 1_000_000_000_000, 7);
        assert_eq!(refused, err(H::Buckets));
    }

    #[test]
    fn each_histogram_rule_accepts_its_bounds_and_refuses_past_them() {
        assert_eq!((sub_bits(5000), sub_bits(40)), (Ok(1), Ok(8)));
        assert_eq!(sub_bits(5001), err(H::Error));
        assert_eq!(sub_bits(39), err(H::Error));
        let count = |lo, hi, p| LogLinear::bucket_count(lo, hi, p);
        assert_eq!(count(1, 2, 1), Ok(4));
        assert_eq!(count(0, 2, 1), err(H::Range));
        assert_eq!(count(2, 2, 1), err(H::Range));
        assert_eq!(count(1, 2, 0), err(H::Error));
        assert_eq!(count(1, 2, 9), err(H::Error));
        assert!(count(1, MAX_HISTOGRAM_VALUE, 1).is_ok());
        assert_eq!(count(1, MAX_HISTOGRAM_VALUE + 1, 1), err(H::High));
        // The largest hi of 4096 buckets at p = 8 from 1, found by bisection.
        let (mut fits, mut past) = (2, MAX_HISTOGRAM_VALUE);
        while past - fits > 1 {
            let mid = fits + (past - fits) / 2;
            if count(1, mid, 8).unwrap() <= 4096 {
                fits = mid
            } else {
                past = mid
            }
        }
        assert_eq!(
            LogLinear::new(Unit::Count, 1, fits, 8).unwrap().buckets(),
            4096
        );
        let past_limit = LogLinear::new(Unit::Count, 1, fits + 1, 8);
        assert_eq!(past_limit, err(H::Buckets));
        let parts = |s, base, n| LogLinear::from_parts(Unit::Count, 4, s, base, n);
        assert!(parts(1, 15, 3).is_ok());
        assert_eq!(parts(1, 14, 3), err(H::Shift));
        assert_eq!(parts(64, 15, 3), err(H::Shift));
        assert_eq!(parts(0, 0, 2), err(H::Buckets));
        assert_eq!(parts(0, 0, 4097), err(H::Buckets));
        // The overflow bucket's lower edge: raw 15 + 18 − 1 = 32 is 32 << 58 = 2^63 at most.
        let top = parts(58, 15, 18).unwrap();
        assert_eq!(top.lower(17), 1 << 63);
        assert_eq!(parts(58, 15, 19), err(H::High));
        assert_eq!(parts(0, u32::MAX, 3), err(H::High));
    }

    #[test]
    fn each_explicit_rule_accepts_its_bounds_and_refuses_past_them() {
        assert_eq!(explicit_len(0), err(H::BoundsEmpty));
        assert_eq!(
            (explicit_len(1), explicit_len(MAX_EXPLICIT_BOUNDS)),
            (Ok(()), Ok(()))
        );
        assert_eq!(explicit_len(MAX_EXPLICIT_BOUNDS + 1), err(H::BoundsTooMany));
        assert_eq!(explicit_bound(None, 0), err(H::BoundZero));
        assert_eq!(explicit_bound(None, 1), Ok(()));
        assert_eq!(explicit_bound(Some(5), 5), err(H::BoundsOrder));
        assert_eq!(explicit_bound(Some(5), MAX_HISTOGRAM_VALUE), Ok(()));
        let high = explicit_bound(Some(5), MAX_HISTOGRAM_VALUE + 1);
        assert_eq!(high, err(H::High));
        let many: Vec<u64> = (1..=65).collect();
        assert!(Explicit::new(Unit::Count, &many[..64]).is_ok());
        assert_eq!(Explicit::new(Unit::Count, &many), err(H::BoundsTooMany));
        assert_eq!(Explicit::new(Unit::Count, &[3, 2]), err(H::BoundsOrder));
    }

    #[test]
    fn units_convert_whole_values_and_refuse_the_rest() {
        for (code, name) in UNIT_NAMES.iter().enumerate() {
            let unit = Unit::from_name(name).unwrap();
            assert_eq!((unit as usize, unit.name()), (code, *name));
            assert_eq!(Unit::from_code(code as u8), Some(unit));
        }
        assert_eq!(Unit::from_name("sec"), err(H::Unit));
        assert_eq!(Unit::Microseconds.whole(10, "s"), Ok(10_000_000));
        assert_eq!(Unit::Microseconds.whole(2000, "ns"), Ok(2));
        assert_eq!(Unit::Microseconds.whole(1500, "ns"), err(H::NotWhole));
        assert_eq!(Unit::Microseconds.whole(10, ""), err(H::Suffix));
        assert_eq!(Unit::Microseconds.whole(10, "bytes"), err(H::Suffix));
        assert_eq!(Unit::Bytes.whole(10, "ms"), err(H::Suffix));
        assert_eq!(
            Unit::Count.whole(MAX_HISTOGRAM_VALUE, ""),
            Ok(MAX_HISTOGRAM_VALUE)
        );
        assert_eq!(Unit::Count.whole(MAX_HISTOGRAM_VALUE + 1, ""), err(H::High));
        assert_eq!(Unit::Nanoseconds.whole(u64::MAX, "s"), err(H::High));
        assert_eq!(
            crate::counter::UNITS[Unit::Bytes.base_unit().unwrap()],
            "bytes"
        );
        assert_eq!(
            crate::counter::UNITS[Unit::Seconds.base_unit().unwrap()],
            "seconds"
        );
        assert_eq!(Unit::Count.base_unit(), None);
    }

    #[test]
    fn each_declaration_rule_accepts_its_bounds_and_refuses_past_them() {
        assert_eq!(shape(true, true, true, false), Ok(()));
        assert_eq!(shape(true, false, false, true), Ok(()));
        for (unit, range, error, buckets) in [
            (false, true, true, false),
            (false, false, false, true),
            (true, false, false, false),
            (true, true, false, false),
            (true, false, true, false),
            (true, true, true, true),
            (true, true, false, true),
        ] {
            let given = (unit, range, error, buckets);
            assert_eq!(
                shape(unit, range, error, buckets),
                err(H::Shape),
                "{given:?}"
            );
        }
        assert_eq!((aggregate(None), aggregate(Some(0))), (Ok(()), Ok(())));
        for rule in 1..crate::counter::AGGREGATES.len() {
            assert_eq!(aggregate(Some(rule)), err(H::Aggregate), "{rule}");
        }
        assert_eq!(recorded(false, false, false), Ok(()));
        for (on_demand, sum, factor) in [
            (true, false, false),
            (false, true, false),
            (false, false, true),
        ] {
            assert_eq!(recorded(on_demand, sum, factor), err(H::Computed));
        }
        assert_eq!((sum_part(false), sum_part(true)), (Ok(()), err(H::SumPart)));
        assert!(rule(H::Aggregate).message().contains("`aggregate: sum`"));
    }

    /// The largest histogram value (the longest descriptor and the most buckets) fits a counter
    /// block, and the largest log-linear edge fits a `u64` with the overflow bucket above it.
    #[test]
    fn the_largest_histogram_fits_the_block_limits() {
        let words = (MAX_DESCRIPTOR_WORDS + MAX_HISTOGRAM_BUCKETS as usize) as u32;
        assert!(words * 8 <= crate::MAX_COUNTER_BLOCK);
        let widest = LogLinear::new(Unit::Count, 1, MAX_HISTOGRAM_VALUE, 1).unwrap();
        let n = widest.buckets();
        assert!(widest.upper(n - 2) >= MAX_HISTOGRAM_VALUE && widest.lower(n - 1) <= 1 << 63);
        assert_eq!(widest.index(u64::MAX), n - 1);
    }

    /// The messages spell the limits out as text: they name the limits' values.
    #[test]
    fn the_histogram_messages_name_the_limits() {
        let buckets = format!("3 to {MAX_HISTOGRAM_BUCKETS} buckets");
        assert!(rule(H::Buckets).message().contains(&buckets));
        let bounds = format!("1 to {MAX_EXPLICIT_BOUNDS} bounds");
        assert!(rule(H::BoundsEmpty).message().contains(&bounds));
        let most = format!("at most {MAX_EXPLICIT_BOUNDS} bounds");
        assert!(rule(H::BoundsTooMany).message().contains(&most));
        let high = format!("2^62 ({MAX_HISTOGRAM_VALUE})");
        assert!(rule(H::High).message().contains(&high));
        let kib = format!("{} KiB", MAX_HISTOGRAM_BUCKETS * 8 / 1024);
        assert!(rule(H::Buckets).message().contains(&kib));
        for (p, bp) in [(1, 5000), (8, 40)] {
            assert_eq!(sub_bits(bp), Ok(p));
        }
        assert!(rule(H::Error).message().contains("0.4% to 50%"));
    }

    /// Each field a descriptor checks, broken alone in a valid value.
    #[test]
    fn a_descriptor_is_refused_for_each_broken_field() {
        let g = Geometry::LogLinear(LogLinear::new(Unit::Microseconds, 10, 1000, 3).unwrap());
        let mut good = Descriptor::of(&g).words().to_vec();
        good.resize(2 + g.buckets(), 0);
        let broken = |at: usize, word: u64| {
            let mut v = good.clone();
            v[at] = word;
            Descriptor::decode(&v).unwrap_err()
        };
        let (w0, w1) = (good[0], good[1]);
        assert_eq!(broken(0, w0 ^ 1), DescriptorError::Magic(0x4749));
        assert_eq!(broken(0, w0 ^ 3 << 16), DescriptorError::Version(2));
        assert_eq!(broken(0, w0 ^ 4 << 24), DescriptorError::Scheme(5));
        assert_eq!(broken(0, w0 | 0xff << 32), DescriptorError::Unit(0xff));
        assert_eq!(broken(0, w0 | 1 << 56), DescriptorError::Reserved);
        let p9 = broken(0, w0 & !(0xff << 40) | 9 << 40);
        assert_eq!(p9, DescriptorError::Geometry(rule(H::Error)));
        let n = broken(1, w1 & !0xffff_ffff | 4097);
        assert_eq!(n, DescriptorError::Geometry(rule(H::Buckets)));
        let short = Descriptor::decode(&good[..1]).unwrap_err();
        assert_eq!(
            short,
            DescriptorError::Short {
                words: 1,
                needed: 2
            }
        );
        let size = Descriptor::decode(&good[..good.len() - 1]).unwrap_err();
        let expected = good.len() as u32;
        assert_eq!(
            size,
            DescriptorError::Size {
                expected,
                found: expected - 1
            }
        );
        assert!(size.to_string().contains("the descriptor says"));

        let e = Geometry::Explicit(Explicit::new(Unit::Count, &[1, 2, 3]).unwrap());
        let mut good = Descriptor::of(&e).words().to_vec();
        good.resize(5 + 4, 0);
        let mut v = good.clone();
        v[0] |= 1 << 40;
        assert_eq!(Descriptor::decode(&v), Err(DescriptorError::Reserved));
        let mut v = good.clone();
        v[3] = 1;
        assert_eq!(
            Descriptor::decode(&v),
            Err(DescriptorError::Geometry(rule(H::BoundsOrder)))
        );
        let mut v = good.clone();
        v[1] = 66;
        let too_many = DescriptorError::Geometry(rule(H::BoundsTooMany));
        assert_eq!(Descriptor::decode(&v), Err(too_many));
        let cut = Descriptor::decode(&good[..4]).unwrap_err();
        assert_eq!(
            cut,
            DescriptorError::Short {
                words: 4,
                needed: 5
            }
        );
    }
}

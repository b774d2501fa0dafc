//! The descriptor: the words before a histogram's bucket counts in perflib data, which say how
//! to read them. A reader writes it into each copy from the block's checked records (the app
//! never writes it); a consumer decodes it from data it did not write, so [`Descriptor::decode`]
//! checks every field and never panics.
//!
//! ```text
//! w0   bits 0-15 magic 0x4748 ("HG")   16-23 version 1   24-31 scheme (1 log-linear, 2 explicit)
//!      32-39 unit (Unit code)   40-47 p   48-55 s   56-63 zero          (p, s zero if explicit)
//! w1   bits 0-31 n (buckets, underflow and overflow included)   32-63 base (log-linear) or 0
//! w2.. explicit only: the k = n − 1 bounds, strictly increasing
//! then the n bucket counts           the counter's size = 8 × (descriptor words + n), exactly
//! ```

use super::{Explicit, Geometry, LogLinear, Unit};
use crate::limits::MAX_EXPLICIT_BOUNDS;
use crate::map::Violation;

/// The most words a descriptor takes: two, and the bounds of an explicit histogram.
pub const MAX_DESCRIPTOR_WORDS: usize = 2 + MAX_EXPLICIT_BOUNDS;

const SCHEME_LOG_LINEAR: u8 = 1;
const SCHEME_EXPLICIT: u8 = 2;

/// A geometry's descriptor words.
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::{Descriptor, Explicit, Geometry, Unit};
///
/// let g = Geometry::Explicit(Explicit::new(Unit::Milliseconds, &[1, 5, 25]).unwrap());
/// let d = Descriptor::of(&g);
/// // The counter's value: the descriptor, then one count per bucket.
/// let mut value = d.words().to_vec();
/// value.extend([0, 3, 1, 0]);
/// assert_eq!(Descriptor::decode(&value), Ok((g, d.words().len())));
/// assert!(Descriptor::decode(&value[..5]).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    words: [u64; MAX_DESCRIPTOR_WORDS],
    len: u8,
}

/// Why a histogram's descriptor was refused: the histogram has no data.
///
/// # Examples
///
/// ```
/// use prfdata_rules::histogram::{Descriptor, DescriptorError};
///
/// let err = Descriptor::decode(&[0x1234, 3, 0, 0, 0]).unwrap_err();
/// assert_eq!(err, DescriptorError::Magic(0x1234));
/// assert!(err.to_string().contains("not 0x4748"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescriptorError {
    /// Fewer words than the descriptor needs.
    Short {
        /// The words given (saturating at `u32::MAX`).
        words: u32,
        /// The words the descriptor needs.
        needed: u32,
    },
    /// The first word's magic is not 0x4748.
    Magic(u16),
    /// A descriptor version this reader does not know.
    Version(u8),
    /// A scheme that is neither log-linear (1) nor explicit (2).
    Scheme(u8),
    /// A unit code that is no [`Unit`].
    Unit(u8),
    /// A field that must be zero is not (bits 56-63, or p, s or base of explicit bounds).
    Reserved,
    /// The geometry breaks a rule.
    Geometry(Violation),
    /// The counter's words are not the descriptor and one word per bucket.
    Size {
        /// Descriptor words plus buckets.
        expected: u32,
        /// The words given (saturating at `u32::MAX`).
        found: u32,
    },
}

impl core::fmt::Display for DescriptorError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DescriptorError::Short { words, needed } => {
                write!(f, "histogram descriptor: {words} words, needs {needed}")
            }
            DescriptorError::Magic(m) => {
                write!(f, "histogram descriptor: magic {m:#06x}, not 0x4748")
            }
            DescriptorError::Version(v) => write!(f, "histogram descriptor: unknown version {v}"),
            DescriptorError::Scheme(s) => write!(f, "histogram descriptor: unknown scheme {s}"),
            DescriptorError::Unit(u) => write!(f, "histogram descriptor: unknown unit {u}"),
            DescriptorError::Reserved => {
                write!(f, "histogram descriptor: a field that must be zero is not")
            }
            DescriptorError::Geometry(v) => write!(f, "histogram descriptor: {}", v.message()),
            DescriptorError::Size { expected, found } => write!(
                f,
                "histogram value: {found} words, the descriptor says {expected} (descriptor and \
                 one word per bucket)"
            ),
        }
    }
}

impl core::error::Error for DescriptorError {}

impl Descriptor {
    /// The magic of the first word's low 16 bits, "HG".
    pub const MAGIC: u16 = 0x4748;
    /// The version this crate writes and reads.
    pub const VERSION: u8 = 1;

    /// The descriptor of `geometry`.
    pub const fn of(geometry: &Geometry) -> Descriptor {
        let mut words = [0; MAX_DESCRIPTOR_WORDS];
        let head = Descriptor::MAGIC as u64 | (Descriptor::VERSION as u64) << 16;
        let (scheme, unit, len) = match geometry {
            Geometry::LogLinear(g) => {
                words[0] = (g.sub_bits() as u64) << 40 | (g.shift() as u64) << 48;
                words[1] = (g.base() as u64) << 32;
                (SCHEME_LOG_LINEAR, g.unit(), 2)
            }
            Geometry::Explicit(g) => {
                let bounds = g.bounds();
                let mut i = 0;
                while i < bounds.len() {
                    words[2 + i] = bounds[i];
                    i += 1;
                }
                (SCHEME_EXPLICIT, g.unit(), 2 + bounds.len())
            }
        };
        words[0] |= head | (scheme as u64) << 24 | (unit as u64) << 32;
        words[1] |= geometry.buckets() as u64;
        Descriptor {
            words,
            len: len as u8,
        }
    }

    /// The descriptor's words, to write before the bucket counts.
    pub const fn words(&self) -> &[u64] {
        self.words.split_at(self.len as usize).0
    }

    /// The geometry of a histogram's value `words` (descriptor, then the counts) and how many
    /// words the descriptor takes; the counts are the rest.
    ///
    /// # Errors
    ///
    /// A [`DescriptorError`] for the first field that is wrong, including a value whose length
    /// is not the descriptor's and one word per bucket.
    pub fn decode(words: &[u64]) -> Result<(Geometry, usize), DescriptorError> {
        let [w0, w1, ..] = *words else {
            return Err(DescriptorError::Short {
                words: word_count(words),
                needed: 2,
            });
        };
        let field = |bit: u32| (w0 >> bit) as u8;
        if w0 as u16 != Descriptor::MAGIC {
            return Err(DescriptorError::Magic(w0 as u16));
        }
        if field(16) != Descriptor::VERSION {
            return Err(DescriptorError::Version(field(16)));
        }
        let unit = Unit::from_code(field(32)).ok_or(DescriptorError::Unit(field(32)))?;
        if field(56) != 0 {
            return Err(DescriptorError::Reserved);
        }
        let (n, base) = (w1 as u32, (w1 >> 32) as u32);
        let (geometry, len) = match field(24) {
            SCHEME_LOG_LINEAR => {
                let g = LogLinear::from_parts(unit, field(40), field(48), base, n);
                (
                    Geometry::LogLinear(g.map_err(DescriptorError::Geometry)?),
                    2,
                )
            }
            SCHEME_EXPLICIT => {
                if field(40) != 0 || field(48) != 0 || base != 0 {
                    return Err(DescriptorError::Reserved);
                }
                let k = (n as usize).saturating_sub(1);
                crate::histogram::explicit_len(k).map_err(DescriptorError::Geometry)?;
                let bounds = words.get(2..2 + k).ok_or(DescriptorError::Short {
                    words: word_count(words),
                    needed: 2 + k as u32,
                })?;
                let g = Explicit::new(unit, bounds).map_err(DescriptorError::Geometry)?;
                (Geometry::Explicit(g), 2 + k)
            }
            other => return Err(DescriptorError::Scheme(other)),
        };
        // `n` passed the geometry's rules: at most MAX_HISTOGRAM_BUCKETS, so no overflow.
        let expected = len as u32 + n;
        if words.len() != expected as usize {
            return Err(DescriptorError::Size {
                expected,
                found: word_count(words),
            });
        }
        Ok((geometry, len))
    }
}

/// How many `words` there are, for an error: saturating at `u32::MAX`.
fn word_count(words: &[u64]) -> u32 {
    u32::try_from(words.len()).unwrap_or(u32::MAX)
}

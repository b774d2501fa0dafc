//! UTF-16 text: in wire bytes (UTF-16LE), the well-formedness check of names and text values (a
//! word at a time when there is no surrogate) and the lossy decode of what was checked; in a
//! prfdata block (native order), the repair of lone surrogates a reader serves names and text
//! counters with.
//!
//! Instance names and text counters in a block are UTF-16 another process wrote. prfdata's
//! writer only ever stores whole `&str`s, so a lone surrogate (a high one not followed by a low
//! one, or a low one not preceded by a high one) means the block was corrupted or written by
//! someone else. Consumers must not choke on it (a collector that checks UTF-16 would otherwise
//! disable the whole provider for one bad name), and perflib passes names through as they are,
//! so a reader neither refuses the instance nor drops it: [`make_well_formed`] replaces each lone
//! surrogate by U+FFFD REPLACEMENT CHARACTER, what `String::from_utf16_lossy` does. U+FFFD is one
//! UTF-16 unit, like the surrogate it replaces, so no length changes: a name keeps the length the
//! reader sized it with.
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::utf16::make_units_well_formed;
//!
//! let mut units = [0x61, 0xD800, 0xD83D, 0xDE00];
//! make_units_well_formed(&mut units);
//! assert_eq!(units, [0x61, 0xFFFD, 0xD83D, 0xDE00]);
//! ```

#[cfg(feature = "view")]
use crate::error::DecodeError;

#[cfg(feature = "view")]
/// The UTF-16LE code units of `raw` (an odd last byte left out) up to the first NUL.
#[inline]
pub(crate) fn units(raw: &[u8]) -> impl Iterator<Item = u16> + '_ {
    raw.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
}

#[cfg(feature = "view")]
/// Whether `raw` up to its first NUL is valid UTF-16LE: every high surrogate followed by a low
/// one, no low surrogate alone. What `char::decode_utf16` accepts, without building chars.
#[inline]
pub(crate) fn is_utf16(raw: &[u8]) -> bool {
    let mut it = units(raw);
    while let Some(u) = it.next() {
        if u & 0xF800 != 0xD800 {
            continue;
        }
        // A surrogate: a high one (D800–DBFF) must have a low one (DC00–DFFF) after it.
        if u >= 0xDC00 || it.next().is_none_or(|v| v & 0xFC00 != 0xDC00) {
            return false;
        }
    }
    true
}

#[cfg(feature = "view")]
/// Whether `raw` holds no surrogate code unit at all (whole units; an odd last byte is not
/// one): then it is valid UTF-16LE whatever follows its NUL. The fast path of [`check_utf16`]
/// for names and text: four units a word, the last word overlapping the one before it rather
/// than a unit-by-unit tail (a 24-byte name is four loads, no loop set-up).
#[inline(always)]
pub(crate) fn has_no_surrogate(raw: &[u8]) -> bool {
    // A unit is a surrogate (D800–DFFF) when its high byte (the second, little-endian) is D8–DF.
    // Four units a word: a unit's lane of `x` is zero exactly when it is a surrogate, and the
    // usual "has a zero lane" test (no false positive: a lane is 0 or at least 0x0800) finds one.
    #[inline(always)]
    fn surrogates(word: [u8; 8]) -> u64 {
        surrogate_lanes(u64::from_le_bytes(word))
    }
    // Whole units only; the words below then start on a unit (every offset is even).
    let raw = raw.get(..raw.len() & !1).unwrap_or_default();
    let Some(last) = raw.last_chunk::<8>() else {
        // Under four units: padded with zero units, which are not surrogates.
        let mut word = [0u8; 8];
        word[..raw.len()].copy_from_slice(raw);
        return surrogates(word) == 0;
    };
    let (words, _) = raw.as_chunks::<8>();
    let mut found = surrogates(*last);
    for word in words {
        found |= surrogates(*word);
    }
    found == 0
}

#[cfg(feature = "view")]
/// Checks that `bytes[start..end]` up to its first NUL is valid UTF-16LE.
#[inline(always)]
pub(crate) fn check_utf16(
    bytes: &[u8],
    start: usize,
    end: usize,
    what: &'static str,
) -> Result<(), DecodeError> {
    match bytes.get(start..end) {
        Some(raw) if has_no_surrogate(raw) => Ok(()),
        _ => check_utf16_exactly(bytes, start, end, what),
    }
}

#[cfg(feature = "view")]
/// [`check_utf16`] unit by unit: text with a surrogate in it (rare), or out of the bytes.
#[cold]
#[inline(never)]
pub(crate) fn check_utf16_exactly(
    bytes: &[u8],
    start: usize,
    end: usize,
    what: &'static str,
) -> Result<(), DecodeError> {
    match bytes.get(start..end) {
        Some(raw) if is_utf16(raw) => Ok(()),
        _ => Err(DecodeError::Utf16 {
            offset: start,
            what,
        }),
    }
}

#[cfg(feature = "view")]
/// `raw` up to its first NUL as UTF-16LE, invalid units replaced (never, once checked).
pub(crate) fn utf16_lossy(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len() / 2);
    out.extend(char::decode_utf16(units(raw)).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)));
    out
}

#[cfg(feature = "view")]
/// `raw` up to its first NUL as 8-bit text (a code page other than UTF-16), lossily.
pub(crate) fn ascii_lossy(raw: &[u8]) -> String {
    let text = raw.split(|&b| b == 0).next().unwrap_or(raw);
    String::from_utf8_lossy(text).into_owned()
}

/// The lanes of the four UTF-16 units of `word` (each unit in its 16 bits, as the word was
/// loaded) that hold a surrogate (`0xD800..=0xDFFF`): each unit's top five bits compared with
/// `11011` at once; a lane of the XOR is zero where they match, and the usual "has a zero lane"
/// test (no false positive: a lane is 0 or at least 0x0800) sets that lane's high bit.
#[inline(always)]
const fn surrogate_lanes(word: u64) -> u64 {
    const LANES: u64 = 0x0001_0001_0001_0001;
    let x = (word & (0xF800 * LANES)) ^ (0xD800 * LANES);
    x.wrapping_sub(LANES) & !x & (0x8000 * LANES)
}

/// Whether a surrogate (`0xD800..=0xDFFF`) is among the four UTF-16 units of `word`, each unit
/// in its 16 bits (four native-order units loaded with `u64::from_ne_bytes`).
///
/// # Examples
///
/// ```
/// use prfdata_wire::utf16::has_surrogate;
///
/// let word = |units: [u16; 4]| {
///     let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_ne_bytes()).collect();
///     u64::from_ne_bytes(bytes.try_into().unwrap())
/// };
/// assert!(has_surrogate(word([0x61, 0x62, 0xDC00, 0x63])));
/// assert!(!has_surrogate(word([0x61, 0x62, 0xFFFD, 0x63])));
/// ```
#[inline]
pub fn has_surrogate(word: u64) -> bool {
    surrogate_lanes(word) != 0
}

/// Replaces each lone surrogate among the native-order UTF-16 units in `bytes` by U+FFFD; a
/// trailing odd byte is left alone. Returns whether anything changed.
///
/// # Examples
///
/// ```
/// use prfdata_wire::utf16::make_well_formed;
///
/// let bytes = |units: &[u16]| -> Vec<u8> { units.iter().flat_map(|u| u.to_ne_bytes()).collect() };
/// let mut name = bytes(&[0x61, 0xDC00]);
/// assert!(make_well_formed(&mut name));
/// assert_eq!(name, bytes(&[0x61, 0xFFFD]));
/// ```
pub fn make_well_formed(bytes: &mut [u8]) -> bool {
    // Text without surrogates, nearly all of it, is only scanned: four units at a time.
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    let clean = tail
        .chunks_exact(2)
        .all(|u| !(0xD800..0xE000).contains(&u16::from_ne_bytes([u[0], u[1]])))
        && words
            .map(|w| u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
            .all(|w| !has_surrogate(w));
    if clean {
        return false;
    }
    replace_lone_surrogates(bytes)
}

#[cold]
fn replace_lone_surrogates(bytes: &mut [u8]) -> bool {
    let unit = |b: &[u8]| u16::from_ne_bytes([b[0], b[1]]);
    let n = bytes.len() / 2;
    let mut changed = false;
    let mut i = 0;
    while i < n {
        let u = unit(&bytes[2 * i..]);
        let high = (0xD800..0xDC00).contains(&u);
        if high && i + 1 < n && (0xDC00..0xE000).contains(&unit(&bytes[2 * i + 2..])) {
            i += 2; // a pair
            continue;
        }
        if (0xD800..0xE000).contains(&u) {
            bytes[2 * i..2 * i + 2].copy_from_slice(&0xFFFDu16.to_ne_bytes());
            changed = true;
        }
        i += 1;
    }
    changed
}

/// [`make_well_formed`] over units.
pub fn make_units_well_formed(units: &mut [u16]) {
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        let next_low = units
            .get(i + 1)
            .is_some_and(|v| (0xDC00..0xE000).contains(v));
        if (0xD800..0xDC00).contains(&u) && next_low {
            i += 2;
            continue;
        }
        if (0xD800..0xE000).contains(&u) {
            units[i] = 0xFFFD;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(units: &[u16]) -> Vec<u8> {
        units.iter().flat_map(|u| u.to_ne_bytes()).collect()
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let cases: [(&[u16], &[u16]); 6] = [
            (&[0x61, 0x62], &[0x61, 0x62]),
            (&[0xD83D, 0xDE00], &[0xD83D, 0xDE00]),
            (&[0xD800, 0x61], &[0xFFFD, 0x61]),
            (&[0x61, 0xDC00], &[0x61, 0xFFFD]),
            (&[0xDC00, 0xD800], &[0xFFFD, 0xFFFD]),
            (&[0xD800, 0xD800, 0xDC00], &[0xFFFD, 0xD800, 0xDC00]),
        ];
        for (input, expected) in cases {
            let mut b = bytes(input);
            assert_eq!(make_well_formed(&mut b), input != expected, "{input:x?}");
            assert_eq!(b, bytes(expected), "{input:x?}");
            let mut u = input.to_vec();
            make_units_well_formed(&mut u);
            assert_eq!(u, expected, "{input:x?}");
            // What the standard library makes of it.
            assert_eq!(
                String::from_utf16(&u).unwrap(),
                String::from_utf16_lossy(input)
            );
        }
    }

    #[test]
    fn the_word_test_finds_a_surrogate_in_any_lane() {
        for lane in 0..4 {
            for unit in [0xD800u16, 0xDBFF, 0xDC00, 0xDFFF] {
                let mut units = [0x0061u16; 4];
                units[lane] = unit;
                let word = u64::from_ne_bytes(bytes(&units).try_into().unwrap());
                assert!(has_surrogate(word), "{units:x?}");
            }
            for unit in [0xD7FFu16, 0xE000, 0xFFFD, 0, 0x5800] {
                let mut units = [0x0061u16; 4];
                units[lane] = unit;
                let word = u64::from_ne_bytes(bytes(&units).try_into().unwrap());
                assert!(!has_surrogate(word), "{units:x?}");
            }
        }
    }
}

//! UTF-16 text in wire bytes: lone surrogates replaced in place (what a text counter copied out
//! of an app's block gets), and, with the `view` feature, the well-formedness check of names
//! and text values (a word at a time when there is no surrogate) and the lossy decode of what
//! was checked.

#[cfg(feature = "view")]
use crate::error::DecodeError;

/// Whether a surrogate (`0xD800..=0xDFFF`) is among the four native-order UTF-16 units of
/// `word`: each unit's top five bits compared with `11011` at once (a lane of the XOR is zero
/// where they match; "has a zero lane" is the usual bit trick).
#[inline]
pub fn has_surrogate(word: u64) -> bool {
    const LANES: u64 = 0x0001_0001_0001_0001;
    const TOP5: u64 = 0xF800 * LANES;
    const SURROGATE: u64 = 0xD800 * LANES;
    const HIGH_BIT: u64 = 0x8000 * LANES;
    let x = (word & TOP5) ^ SURROGATE;
    x.wrapping_sub(LANES) & !x & HIGH_BIT != 0
}

/// Replaces each lone surrogate (a high one not followed by a low one, a low one not preceded
/// by a high one) among the native-order UTF-16 units in `bytes` by U+FFFD, as
/// `String::from_utf16_lossy` does (one unit for one, so no length changes); a
/// trailing odd byte is left alone. Returns whether anything changed.
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

/// The UTF-16LE code units of `raw` (an odd last byte left out) up to the first NUL.
#[cfg(feature = "view")]
#[inline]
pub(crate) fn units(raw: &[u8]) -> impl Iterator<Item = u16> + '_ {
    raw.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
}

/// Whether `raw` up to its first NUL is valid UTF-16LE: every high surrogate followed by a low
/// one, no low surrogate alone. What `char::decode_utf16` accepts, without building chars.
#[cfg(feature = "view")]
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

/// Whether `raw` holds no surrogate code unit at all (whole units; an odd last byte is not
/// one): then it is valid UTF-16LE whatever follows its NUL. The fast path of [`check_utf16`]
/// for names and text: four units a word, the last word overlapping the one before it rather
/// than a unit-by-unit tail (a 24-byte name is four loads, no loop set-up).
#[inline(always)]
#[cfg(feature = "view")]
pub(crate) fn has_no_surrogate(raw: &[u8]) -> bool {
    // A unit is a surrogate (D800–DFFF) when its high byte (the second, little-endian) is D8–DF.
    // Four units a word: a unit's lane of `x` is zero exactly when it is a surrogate, and the
    // usual "has a zero lane" test (no false positive: a lane is 0 or at least 0x0800) finds one.
    const ONES: u64 = 0x0001_0001_0001_0001;
    const HIGH: u64 = 0x8000_8000_8000_8000;
    #[inline(always)]
    fn surrogates(word: [u8; 8]) -> u64 {
        let x = (u64::from_le_bytes(word) & 0xF800_F800_F800_F800) ^ 0xD800_D800_D800_D800;
        x.wrapping_sub(ONES) & !x & HIGH
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

/// Checks that `bytes[start..end]` up to its first NUL is valid UTF-16LE.
#[inline(always)]
#[cfg(feature = "view")]
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

/// [`check_utf16`] unit by unit: text with a surrogate in it (rare), or out of the bytes.
#[cold]
#[inline(never)]
#[cfg(feature = "view")]
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

/// `raw` up to its first NUL as UTF-16LE, invalid units replaced (never, once checked).
#[cfg(feature = "view")]
pub(crate) fn utf16_lossy(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len() / 2);
    out.extend(char::decode_utf16(units(raw)).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)));
    out
}

/// `raw` up to its first NUL as 8-bit text (a code page other than UTF-16), lossily.
#[cfg(feature = "view")]
pub(crate) fn ascii_lossy(raw: &[u8]) -> String {
    let text = raw.split(|&b| b == 0).next().unwrap_or(raw);
    String::from_utf8_lossy(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(units: &[u16]) -> Vec<u8> {
        units.iter().flat_map(|u| u.to_ne_bytes()).collect()
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

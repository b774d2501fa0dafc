//! UTF-16LE text in wire bytes: the well-formedness check of names and text values (a word at a
//! time when there is no surrogate), and the lossy decode of what was checked.

use crate::error::DecodeError;

/// The UTF-16LE code units of `raw` (an odd last byte left out) up to the first NUL.
#[inline]
pub(crate) fn units(raw: &[u8]) -> impl Iterator<Item = u16> + '_ {
    raw.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
}

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

/// Whether `raw` holds no surrogate code unit at all (whole units; an odd last byte is not
/// one): then it is valid UTF-16LE whatever follows its NUL. The fast path of [`check_utf16`]
/// for names and text: four units a word, the last word overlapping the one before it rather
/// than a unit-by-unit tail (a 24-byte name is four loads, no loop set-up).
#[inline(always)]
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
pub(crate) fn utf16_lossy(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len() / 2);
    out.extend(char::decode_utf16(units(raw)).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)));
    out
}

/// `raw` up to its first NUL as 8-bit text (a code page other than UTF-16), lossily.
pub(crate) fn ascii_lossy(raw: &[u8]) -> String {
    let text = raw.split(|&b| b == 0).next().unwrap_or(raw);
    String::from_utf8_lossy(text).into_owned()
}

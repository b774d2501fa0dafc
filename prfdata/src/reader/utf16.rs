//! Instance names and text counters are UTF-16 another process wrote: a reader serves them
//! well-formed.
//!
//! The writer only ever stores whole `&str`s, so a lone surrogate (a high one not followed by a
//! low one, or a low one not preceded by a high one) means the block was corrupted or written
//! by someone else. Consumers must not choke on it (a collector that checks UTF-16 would
//! otherwise disable the whole provider for one bad name), and perflib passes names through
//! as they are, so the reader neither refuses the instance nor drops it: each lone surrogate is
//! replaced by U+FFFD REPLACEMENT CHARACTER, what `String::from_utf16_lossy` does. U+FFFD is
//! one UTF-16 unit, like the surrogate it replaces, so no length changes: a name keeps the
//! length the reader sized it with.

/// Whether a surrogate (`0xD800..=0xDFFF`) is among the four native-order UTF-16 units of
/// `word`: each unit's top five bits compared with `11011` at once (a lane of the XOR is zero
/// where they match; "has a zero lane" is the usual bit trick).
#[inline]
pub(super) fn has_surrogate(word: u64) -> bool {
    const LANES: u64 = 0x0001_0001_0001_0001;
    const TOP5: u64 = 0xF800 * LANES;
    const SURROGATE: u64 = 0xD800 * LANES;
    const HIGH_BIT: u64 = 0x8000 * LANES;
    let x = (word & TOP5) ^ SURROGATE;
    x.wrapping_sub(LANES) & !x & HIGH_BIT != 0
}

/// Replaces each lone surrogate among the native-order UTF-16 units in `bytes` by U+FFFD; a
/// trailing odd byte is left alone. Returns whether anything changed.
pub(super) fn make_well_formed(bytes: &mut [u8]) -> bool {
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
pub(super) fn make_units_well_formed(units: &mut [u16]) {
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

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

pub(super) use prfdata_wire::utf16::{has_surrogate, make_well_formed};

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
}

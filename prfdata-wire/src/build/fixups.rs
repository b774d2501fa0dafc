//! The fix-ups of a counter block copied out of an app's block: [`CounterBlockFixups`].

use crate::utf16::make_well_formed;

/// What turns a counter block copied word by word out of an app's shared block into wire
/// format: the copy holds the values as the app stored them, and a few counters are not their
/// stored bytes.
///
/// - `ByteLength`: the block's validated size (the app's own word is not trusted);
/// - text counters (`PERF_COUNTER_TEXT`): UTF-16 made well-formed (see [`crate::utf16`]);
/// - sums (the Windows 95 stat servers' `PSTF_COMPLEX`): computed from their parts in the same
///   copy, so one consistent set of values, presented at the sum's width;
/// - histograms (`PERF_PRFDATA_HISTOGRAM`): the descriptor words written before the bucket
///   counts (the app never writes them), and the count, the sum of the buckets, stored mod 2^32
///   in the histogram's `PERF_AVERAGE_BASE`, so that count and buckets always agree. A count
///   past 2^64 zeroes the descriptor's first word: the histogram has no data (its magic is
///   gone), never a wrong one.
///
/// The values are in the machine's order, as the app stored them (a little-endian machine's,
/// as the wire format says).
///
/// Every place lies inside the block, which whoever makes the fix-ups checks.
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::CounterBlockFixups;
/// // A 24-byte block: text at 8 (8 bytes), a DWORD sum at 16 of the DWORDs at 4 and 20.
/// let mut fixups = CounterBlockFixups::new(24);
/// fixups.text(8, 8);
/// fixups.sum(16, 4, vec![4, 20]);
/// let mut block = [0u8; 24];
/// block[4..8].copy_from_slice(&3u32.to_ne_bytes());
/// block[8..10].copy_from_slice(&0xD800u16.to_ne_bytes()); // a lone surrogate
/// block[20..24].copy_from_slice(&4u32.to_ne_bytes());
/// fixups.apply(&mut block);
/// assert_eq!(block[..4], 24u32.to_le_bytes());
/// assert_eq!(block[8..10], 0xFFFDu16.to_ne_bytes());
/// assert_eq!(block[16..20], 7u32.to_ne_bytes());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterBlockFixups {
    byte_length: u32,
    /// Text counters: offset and bytes.
    text: Vec<(u32, u32)>,
    sums: Vec<Sum>,
    histograms: Vec<Histogram>,
}

/// A histogram's value (its descriptor words, then `buckets` counts) at `offset` and its base
/// (a DWORD) at `base`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Histogram {
    offset: u32,
    descriptor: Vec<u64>,
    buckets: u32,
    base: u32,
}

/// A sum's place and width (4 or 8 bytes), and its parts' places (each of the same width).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Sum {
    offset: u32,
    size: u32,
    parts: Vec<u32>,
}

impl CounterBlockFixups {
    /// The fix-ups of blocks of `byte_length` bytes with no text and no sum: `ByteLength` only.
    pub fn new(byte_length: u32) -> Self {
        CounterBlockFixups {
            byte_length,
            ..Default::default()
        }
    }

    /// A text counter of `size` bytes at `offset`.
    pub fn text(&mut self, offset: u32, size: u32) {
        self.text.push((offset, size));
    }

    /// A sum of `size` bytes (4 or 8) at `offset`, of the values of its width at `parts`.
    pub fn sum(&mut self, offset: u32, size: u32, parts: Vec<u32>) {
        self.sums.push(Sum {
            offset,
            size,
            parts,
        });
    }

    /// A histogram whose value lies at `offset`: the `descriptor` words (written little-endian,
    /// as perflib data is), then `buckets` counts of 8 bytes; its `PERF_AVERAGE_BASE` (a DWORD)
    /// at `base`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::CounterBlockFixups;
    /// // A 48-byte block: the base at 4, a descriptor of 2 words at 8, 2 buckets at 24.
    /// let mut fixups = CounterBlockFixups::new(48);
    /// fixups.histogram(8, vec![0x4748, 2], 2, 4);
    /// let mut block = [0u8; 48];
    /// block[24..32].copy_from_slice(&3u64.to_ne_bytes());
    /// block[32..40].copy_from_slice(&4u64.to_ne_bytes());
    /// fixups.apply(&mut block);
    /// assert_eq!(block[4..8], 7u32.to_ne_bytes()); // the count: 3 + 4
    /// assert_eq!(block[8..16], 0x4748u64.to_le_bytes());
    /// ```
    pub fn histogram(&mut self, offset: u32, descriptor: Vec<u64>, buckets: u32, base: u32) {
        self.histograms.push(Histogram {
            offset,
            descriptor,
            buckets,
            base,
        });
    }

    /// Whether the blocks need nothing but `ByteLength`.
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.text.is_empty() && self.sums.is_empty() && self.histograms.is_empty()
    }

    /// Fixes up `block`, one counter block copied out of the app's block.
    #[inline]
    pub fn apply(&self, block: &mut [u8]) {
        if let Some(word) = block.get_mut(..4) {
            word.copy_from_slice(&self.byte_length.to_le_bytes());
        }
        for &(offset, size) in &self.text {
            if let Some(text) = block.get_mut(offset as usize..(offset + size) as usize) {
                make_well_formed(text);
            }
        }
        for h in &self.histograms {
            h.apply(block);
        }
        for sum in &self.sums {
            let total = sum
                .parts
                .iter()
                .fold(0u64, |t, &p| t.wrapping_add(load(block, p, sum.size)));
            let at = sum.offset as usize;
            if sum.size == 4 {
                if let Some(b) = block.get_mut(at..at + 4) {
                    b.copy_from_slice(&(total as u32).to_ne_bytes());
                }
            } else if let Some(b) = block.get_mut(at..at + 8) {
                b.copy_from_slice(&total.to_ne_bytes());
            }
        }
    }
}

impl Histogram {
    /// Writes the descriptor and the base of the histogram into `block`, from its bucket counts
    /// there.
    fn apply(&self, block: &mut [u8]) {
        let start = self.offset as usize;
        let counts = start + 8 * self.descriptor.len();
        // The buckets inside the block (each place is checked by whoever makes the fix-ups; a
        // word outside it counts 0); a count past 2^64 is no count at all.
        let end = counts
            .saturating_add(8 * self.buckets as usize)
            .min(block.len());
        let words = block.get(counts..end).unwrap_or_default();
        let count = u64::try_from(sum_words(words)).ok();
        for (i, word) in self.descriptor.iter().enumerate() {
            let word = if i == 0 && count.is_none() { 0 } else { *word };
            let at = start + 8 * i;
            if let Some(b) = block.get_mut(at..at + 8) {
                b.copy_from_slice(&word.to_le_bytes());
            }
        }
        let at = self.base as usize;
        if let Some(b) = block.get_mut(at..at + 4) {
            b.copy_from_slice(&(count.unwrap_or(0) as u32).to_ne_bytes());
        }
    }
}

/// The exact sum of the whole 8-byte values in `bytes` (machine order), a trailing part of a
/// word ignored: the low and the high halves summed apart, which cannot overflow for 2^32
/// words at a time, and which the compiler turns into vector adds.
fn sum_words(bytes: &[u8]) -> u128 {
    let (words, _) = bytes.as_chunks::<8>();
    words
        .chunks(u32::MAX as usize)
        .map(|part| {
            let (low, high) = part.iter().fold((0u64, 0u64), |(low, high), w| {
                let w = u64::from_ne_bytes(*w);
                (low + (w & 0xFFFF_FFFF), high + (w >> 32))
            });
            (u128::from(high) << 32) + u128::from(low)
        })
        .sum()
}

/// The DWORD (`size` 4) or LARGE value at `at` in `block`, 0 outside it.
fn load(block: &[u8], at: u32, size: u32) -> u64 {
    let at = at as usize;
    match size {
        4 => block
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, |b| u64::from(u32::from_ne_bytes(b))),
        _ => block
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_ne_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of `words` u64 words, ByteLength included in word 0.
    fn block(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    fn word(block: &[u8], i: usize) -> u64 {
        u64::from_ne_bytes(block[8 * i..8 * i + 8].try_into().unwrap())
    }

    #[test]
    fn a_histogram_gets_its_descriptor_and_its_count_mod_2_32() {
        // Word 0: ByteLength and the base; words 1-2 descriptor; words 3-5 buckets.
        let mut fixups = CounterBlockFixups::new(48);
        fixups.histogram(8, vec![0x1_4748, 3 | 7 << 32], 3, 4);
        assert!(!fixups.is_plain());
        let mut b = block(&[99, 0xdead, 0xbeef, 1 << 32, 5, 1]);
        fixups.apply(&mut b);
        assert_eq!(b[..4], 48u32.to_le_bytes());
        assert_eq!(b[4..8], 6u32.to_ne_bytes(), "(2^32 + 5 + 1) mod 2^32");
        assert_eq!(b[8..16], 0x1_4748u64.to_le_bytes());
        assert_eq!(b[16..24], (3u64 | 7 << 32).to_le_bytes());
        assert_eq!([word(&b, 3), word(&b, 4), word(&b, 5)], [1 << 32, 5, 1]);
    }

    #[test]
    fn a_count_of_exactly_2_64_minus_1_is_kept_and_halves_carry() {
        // Low halves that carry into the high ones, a total of exactly u64::MAX.
        let mut fixups = CounterBlockFixups::new(48);
        fixups.histogram(8, vec![0x1_4748, 3], 3, 4);
        let buckets = [0xFFFF_FFFF, 0xFFFF_FFFF, u64::MAX - 2 * 0xFFFF_FFFF];
        let mut b = block(&[0, 7, 7, buckets[0], buckets[1], buckets[2]]);
        fixups.apply(&mut b);
        assert_eq!(word(&b, 1), 0x1_4748, "the magic: data");
        assert_eq!(b[4..8], (u64::MAX as u32).to_ne_bytes());
        assert_eq!(sum_words(&b[24..48]), u128::from(u64::MAX));
        assert_eq!(
            sum_words(&b[24..44]),
            u128::from(2 * 0xFFFF_FFFFu64),
            "a part word is 0"
        );
    }

    #[test]
    fn a_count_past_2_64_leaves_the_histogram_without_data() {
        let mut fixups = CounterBlockFixups::new(40);
        fixups.histogram(8, vec![0x1_4748, 2], 2, 4);
        let mut b = block(&[0, 7, 7, u64::MAX, 1]);
        fixups.apply(&mut b);
        assert_eq!(word(&b, 1), 0, "no magic: no data");
        assert_eq!(b[16..24], 2u64.to_le_bytes());
        assert_eq!(b[4..8], [0; 4]);
        assert_eq!(
            [word(&b, 3), word(&b, 4)],
            [u64::MAX, 1],
            "counts as stored"
        );
    }

    #[test]
    fn a_histogram_placed_past_the_block_writes_nothing_there() {
        let mut fixups = CounterBlockFixups::new(16);
        fixups.histogram(8, vec![0x1_4748, 2], 2, 40);
        let mut b = block(&[0, 0]);
        fixups.apply(&mut b);
        assert_eq!(
            word(&b, 1),
            0x1_4748u64.to_le(),
            "the word inside is written"
        );
    }
}

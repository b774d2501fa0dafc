//! The fix-ups of a counter block copied out of an app's block: [`CounterBlockFixups`].

use crate::utf16::make_well_formed;

/// What turns a counter block copied word by word out of an app's shared block into wire
/// format: the copy holds the values as the app stored them, and a few counters are not their
/// stored bytes.
///
/// - `ByteLength`: the block's validated size (the app's own word is not trusted);
/// - text counters (`PERF_COUNTER_TEXT`): UTF-16 made well-formed (see [`crate::utf16`]);
/// - sums (the Windows 95 stat servers' `PSTF_COMPLEX`): computed from their parts in the same
///   copy, so one consistent set of values, presented at the sum's width.
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

    /// Whether the blocks need nothing but `ByteLength`.
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.text.is_empty() && self.sums.is_empty()
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

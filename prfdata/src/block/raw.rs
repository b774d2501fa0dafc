//! A mapped block reached only through atomics: never a `&[u8]` over memory another process
//! writes.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU16, AtomicU32, AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};

/// A shared mapping of a block file (read-write or read-only), addressed by byte offsets.
///
/// The unchecked accessors are `unsafe`: the caller guarantees the offset is in bounds and
/// aligned. The checked ones (`load_*`) return `None` for an offset outside the mapping, and are
/// what code reading an untrusted block uses.
#[derive(Debug)]
pub(crate) struct RawBlock {
    map: MmapRaw,
}

impl RawBlock {
    /// Maps the first `len` bytes of `file`, shared.
    pub(crate) fn map(file: &File, len: usize, writable: bool) -> io::Result<RawBlock> {
        let opts = {
            let mut o = MmapOptions::new();
            o.len(len);
            o
        };
        let map = if writable {
            opts.map_raw(file)?
        } else {
            opts.map_raw_read_only(file)?
        };
        Ok(RawBlock { map })
    }

    /// Bytes mapped.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The base address.
    #[inline]
    pub(crate) fn base(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// The `AtomicU32` at `off`.
    ///
    /// # Safety
    ///
    /// `off + 4 <= self.len()` and `off % 4 == 0`; stores through it only on a writable mapping.
    #[inline]
    pub(crate) unsafe fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(
            off + 4 <= self.len() && off.is_multiple_of(4),
            "u32 at {off}"
        );
        // SAFETY:
        // - the caller guarantees the 4 bytes at `off` are inside the mapping and 4-aligned (the
        //   mapping itself is page-aligned);
        // - the mapping lives as long as `self`, which bounds the returned lifetime;
        // - every access to shared block memory is atomic, so concurrent access from other
        //   threads and processes is not a data race.
        unsafe { AtomicU32::from_ptr(self.base().add(off).cast()) }
    }

    /// The `AtomicI32` at `off`.
    ///
    /// # Safety
    ///
    /// As [`RawBlock::u32_at`].
    #[inline]
    pub(crate) unsafe fn i32_at(&self, off: usize) -> &AtomicI32 {
        debug_assert!(
            off + 4 <= self.len() && off.is_multiple_of(4),
            "i32 at {off}"
        );
        // SAFETY: as in `u32_at`: in bounds and aligned by the caller's contract, lifetime bound
        // to the mapping, and only ever accessed atomically.
        unsafe { AtomicI32::from_ptr(self.base().add(off).cast()) }
    }

    /// The `AtomicU64` at `off`.
    ///
    /// # Safety
    ///
    /// `off + 8 <= self.len()` and `off % 8 == 0`; stores only on a writable mapping.
    #[inline]
    pub(crate) unsafe fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(
            off + 8 <= self.len() && off.is_multiple_of(8),
            "u64 at {off}"
        );
        // SAFETY: as in `u32_at`, with 8 bytes and 8-byte alignment guaranteed by the caller.
        unsafe { AtomicU64::from_ptr(self.base().add(off).cast()) }
    }

    /// The `AtomicI64` at `off`.
    ///
    /// # Safety
    ///
    /// As [`RawBlock::u64_at`].
    #[inline]
    pub(crate) unsafe fn i64_at(&self, off: usize) -> &AtomicI64 {
        debug_assert!(
            off + 8 <= self.len() && off.is_multiple_of(8),
            "i64 at {off}"
        );
        // SAFETY: as in `u64_at`.
        unsafe { AtomicI64::from_ptr(self.base().add(off).cast()) }
    }

    /// The `AtomicU16` at `off`.
    ///
    /// # Safety
    ///
    /// `off + 2 <= self.len()` and `off % 2 == 0`; stores only on a writable mapping.
    #[inline]
    pub(crate) unsafe fn u16_at(&self, off: usize) -> &AtomicU16 {
        debug_assert!(
            off + 2 <= self.len() && off.is_multiple_of(2),
            "u16 at {off}"
        );
        // SAFETY: as in `u32_at`, with 2 bytes and 2-byte alignment guaranteed by the caller.
        unsafe { AtomicU16::from_ptr(self.base().add(off).cast()) }
    }

    /// The `AtomicU32` at `off`, or `None` if it is out of bounds or misaligned: for files whose
    /// every word is read and written atomically by several processes (the watch table).
    #[inline]
    pub(crate) fn u32_checked(&self, off: usize) -> Option<&AtomicU32> {
        if !off.is_multiple_of(4) || off.checked_add(4)? > self.len() {
            return None;
        }
        // SAFETY: bounds and alignment were just checked.
        Some(unsafe { self.u32_at(off) })
    }

    /// The `AtomicU64` at `off`, or `None` if it is out of bounds or misaligned.
    #[inline]
    pub(crate) fn u64_checked(&self, off: usize) -> Option<&AtomicU64> {
        if !off.is_multiple_of(8) || off.checked_add(8)? > self.len() {
            return None;
        }
        // SAFETY: bounds and alignment were just checked.
        Some(unsafe { self.u64_at(off) })
    }

    /// Checked relaxed load of the `u32` at `off`: `None` if out of bounds or misaligned.
    #[inline]
    pub(crate) fn load_u32(&self, off: usize) -> Option<u32> {
        if !off.is_multiple_of(4) || off.checked_add(4)? > self.len() {
            return None;
        }
        // SAFETY: bounds and alignment were just checked.
        Some(unsafe { self.u32_at(off) }.load(Ordering::Relaxed))
    }

    /// Checked relaxed load of the `u64` at `off`.
    #[inline]
    pub(crate) fn load_u64(&self, off: usize) -> Option<u64> {
        if !off.is_multiple_of(8) || off.checked_add(8)? > self.len() {
            return None;
        }
        // SAFETY: bounds and alignment were just checked.
        Some(unsafe { self.u64_at(off) }.load(Ordering::Relaxed))
    }

    /// Copies `len` bytes at `off` (both multiples of 8) into `out` with relaxed 64-bit atomic
    /// loads: the values may be changing, but each 8-byte word is read whole, and no reference to
    /// the shared bytes is ever made. `None` if the range is outside the mapping.
    #[inline]
    pub(crate) fn copy_words(&self, off: usize, len: usize, out: &mut Vec<u8>) -> Option<()> {
        if !off.is_multiple_of(8) || !len.is_multiple_of(8) || off.checked_add(len)? > self.len() {
            return None;
        }
        // Sized once, then filled word by word: no capacity check per word.
        let start = out.len();
        out.resize(start + len, 0);
        self.copy_words_to(off, &mut out[start..])
    }

    /// Fills `out` (a multiple of 8 bytes long, any alignment) with the bytes at `off` (8-aligned)
    /// as they are in memory, read with relaxed 64-bit atomic loads as in
    /// [`RawBlock::copy_words`]. `None`, with nothing written, if the range is outside the mapping.
    #[inline]
    pub(crate) fn copy_words_to(&self, off: usize, out: &mut [u8]) -> Option<()> {
        let len = out.len();
        if !off.is_multiple_of(8) || !len.is_multiple_of(8) || off.checked_add(len)? > self.len() {
            return None;
        }
        // SAFETY: `off + len <= self.len()` and both are multiples of 8 (checked above).
        unsafe { self.load_words_to(off, out) };
        Some(())
    }

    /// Fills `out` with the bytes at `off` as [`RawBlock::copy_words_to`] does, without the
    /// checks: each 8-byte word read whole, with the widest loads that guarantee it
    /// ([`crate::sys::wide_copy`]).
    ///
    /// # Safety
    ///
    /// `off` and `out.len()` are multiples of 8 and `off + out.len() <= self.len()`.
    #[inline(always)]
    pub(crate) unsafe fn load_words_to(&self, off: usize, out: &mut [u8]) {
        debug_assert!(
            off.is_multiple_of(8) && out.len().is_multiple_of(8) && off + out.len() <= self.len(),
            "{} words at {off}",
            out.len() / 8
        );
        // SAFETY:
        // - `base + off` is 8-aligned (the mapping is page-aligned) and the `out.len()` bytes
        //   from it are inside the mapping, which lives as long as `self` (caller's contract);
        // - every write to block memory, by any process, is atomic;
        // - `out.len()` is a multiple of 8.
        unsafe { crate::sys::wide_copy::load_words(self.base().add(off), out) }
    }

    /// Appends the `n` UTF-16 units at `off` (2-aligned) to `out` with relaxed 16-bit atomic
    /// loads, as [`RawBlock::copy_words`] does with words. `None` if the range is outside the
    /// mapping.
    #[inline]
    pub(crate) fn copy_u16s(&self, off: usize, n: usize, out: &mut Vec<u16>) -> Option<()> {
        if !off.is_multiple_of(2) || off.checked_add(n.checked_mul(2)?)? > self.len() {
            return None;
        }
        // Bounds checked once for the whole range, then filled without a check per unit.
        let start = out.len();
        out.resize(start + n, 0);
        for (unit, at) in out[start..].iter_mut().zip((off..).step_by(2)) {
            // SAFETY: `at` is 2-aligned and `at + 2 <= off + 2 * n <= self.len()`.
            *unit = unsafe { self.u16_at(at) }.load(Ordering::Relaxed);
        }
        Some(())
    }

    /// Copies `len` bytes at `off` (8-aligned, multiple of 8) into an untrusted plain buffer.
    ///
    /// Reads the static part of a block (header, records) into local memory once, so it can be
    /// parsed with `zerocopy` and cannot change while it is being validated.
    pub(crate) fn snapshot_bytes(&self, off: usize, len: usize) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(len);
        self.copy_words(off, len, &mut out)?;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A read-only mapping of 64 bytes whose byte `i` is `i`.
    fn counting_block() -> (tempfile::NamedTempFile, RawBlock) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&(0..64u8).collect::<Vec<_>>()).unwrap();
        let raw = RawBlock::map(file.as_file(), 64, false).unwrap();
        (file, raw)
    }

    #[test]
    fn copy_words_appends_exactly_the_range() {
        let (_file, raw) = counting_block();
        let mut out = vec![0xAA];
        raw.copy_words(8, 16, &mut out).unwrap();
        assert_eq!(out, [0xAA].into_iter().chain(8..24).collect::<Vec<u8>>());
        raw.copy_words(56, 8, &mut out).unwrap();
        assert_eq!(out.len(), 1 + 16 + 8);
    }

    #[test]
    fn copy_words_refuses_ranges_outside_or_misaligned() {
        let (_file, raw) = counting_block();
        let mut out = Vec::new();
        assert!(raw.copy_words(56, 16, &mut out).is_none());
        assert!(raw.copy_words(4, 8, &mut out).is_none());
        assert!(raw.copy_words(usize::MAX - 7, 8, &mut out).is_none());
        assert!(out.is_empty(), "nothing appended on refusal");
    }

    #[test]
    fn copy_words_to_fills_exactly_the_slice_or_nothing() {
        let (_file, raw) = counting_block();
        let mut out = [0xAAu8; 17];
        raw.copy_words_to(16, &mut out[1..17]).unwrap();
        assert_eq!(out[0], 0xAA, "unaligned destinations are fine");
        assert_eq!(&out[1..], (16..32).collect::<Vec<u8>>().as_slice());
        let mut out = [0xAAu8; 16];
        assert!(raw.copy_words_to(56, &mut out).is_none());
        assert!(raw.copy_words_to(4, &mut out[..8]).is_none());
        assert!(raw.copy_words_to(0, &mut out[..7]).is_none());
        assert!(out.iter().all(|&b| b == 0xAA), "nothing written on refusal");
    }

    #[test]
    fn copy_u16s_appends_little_endian_units() {
        let (_file, raw) = counting_block();
        let mut out = vec![7u16];
        raw.copy_u16s(62, 1, &mut out).unwrap();
        raw.copy_u16s(2, 2, &mut out).unwrap();
        assert_eq!(out, [7, 0x3f3e, 0x0302, 0x0504]);
        raw.copy_u16s(64, 0, &mut out).unwrap();
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn copy_u16s_refuses_ranges_outside_or_misaligned() {
        let (_file, raw) = counting_block();
        let mut out = Vec::new();
        assert!(raw.copy_u16s(62, 2, &mut out).is_none());
        assert!(raw.copy_u16s(1, 1, &mut out).is_none());
        assert!(raw.copy_u16s(0, usize::MAX / 2 + 1, &mut out).is_none());
        assert!(out.is_empty(), "nothing appended on refusal");
    }
}

//! Word-wise copies where no wider atomic load is guaranteed: the `AtomicU64` loop.

/// Copies `out.len()` bytes (a multiple of 8) from `src` into `out`, each 8-byte word read whole.
///
/// # Safety
///
/// - `src` is 8-aligned and the `out.len()` bytes from it lie inside one live mapping (or
///   allocation) for the duration of the call;
/// - those bytes are only ever written with atomic operations (by any process);
/// - `out.len()` is a multiple of 8.
#[inline]
pub(crate) unsafe fn load_words(src: *const u8, out: &mut [u8]) {
    // SAFETY: the caller's contract is `load_words_atomic`'s.
    unsafe { super::load_words_atomic(src, out) }
}

/// Whether [`load_words_wide`] may be called: never here (no wider load is guaranteed).
#[inline]
pub(crate) fn wide_loads() -> bool {
    false
}

/// [`load_words`] for a caller that checked [`wide_loads`]: the same loop.
///
/// # Safety
///
/// As [`load_words`].
#[inline]
pub(crate) unsafe fn load_words_wide(src: *const u8, out: &mut [u8]) {
    // SAFETY: the caller's contract is `load_words_atomic`'s.
    unsafe { super::load_words_atomic(src, out) }
}

/// [`load_words_wide`] from a 16-aligned `src` into `len` bytes at `dst`: the same loop.
///
/// # Safety
///
/// As [`load_words`], with `dst` valid for `len` bytes of writes.
#[inline]
pub(crate) unsafe fn load_aligned_wide(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract is `load_words_atomic`'s, `dst` has `len` bytes.
    unsafe { super::load_words_atomic(src, std::slice::from_raw_parts_mut(dst, len)) }
}

//! x86-64: 16-byte `MOVDQA` loads when the processor has AVX (see the [module docs](super) for
//! the guarantee), else the `AtomicU64` loop.

use std::arch::asm;
use std::arch::x86_64::{__m128i, _mm_storeu_si128};
use std::sync::atomic::{AtomicU64, Ordering};

/// Copies `out.len()` bytes (a multiple of 8) from `src` into `out`, each naturally aligned
/// 8-byte word read whole.
///
/// # Safety
///
/// - `src` is 8-aligned and the `out.len()` bytes from it lie inside one live mapping (or
///   allocation) for the duration of the call;
/// - those bytes are only ever written with atomic operations (by any process);
/// - `out.len()` is a multiple of 8.
///
/// Inlined into its callers (a counter block is a few dozen bytes: a call would cost as much as
/// the copy).
#[inline(always)]
pub(crate) unsafe fn load_words(src: *const u8, out: &mut [u8]) {
    // `std` caches the CPUID answer: one load and a bit test after the first call.
    if wide_loads() {
        // SAFETY: the caller's contract, and AVX was just checked.
        unsafe { load_words_wide(src, out) }
    } else {
        // SAFETY: the caller's contract is `load_words_atomic`'s.
        unsafe { super::load_words_atomic(src, out) }
    }
}

/// Whether [`load_words_wide`] may be called: the processor has AVX, whose aligned 16-byte
/// loads are atomic (see the [module docs](super)).
#[inline]
pub(crate) fn wide_loads() -> bool {
    std::is_x86_feature_detected!("avx")
}

/// [`load_words`] for a caller that checked [`wide_loads`] once for many copies.
///
/// # Safety
///
/// As [`load_words`], and [`wide_loads`] returned `true`.
#[inline(always)]
pub(crate) unsafe fn load_words_wide(src: *const u8, out: &mut [u8]) {
    debug_assert!(src.addr().is_multiple_of(8) && out.len().is_multiple_of(8));
    debug_assert!(wide_loads());
    if out.len() < 16 {
        // SAFETY: the caller's contract is `load_words_atomic`'s.
        return unsafe { super::load_words_atomic(src, out) };
    }
    let mut src = src;
    let mut dst = out.as_mut_ptr();
    let mut left = out.len();
    if !src.addr().is_multiple_of(16) {
        // SAFETY: `src` is 8-aligned and `left >= 16` bytes from it are mapped (the caller's
        // contract); the word is only accessed atomically; `dst` has `left` bytes.
        unsafe {
            let word = AtomicU64::from_ptr(src.cast::<u64>().cast_mut()).load(Ordering::Relaxed);
            dst.cast::<u64>().write_unaligned(word);
            src = src.add(8);
            dst = dst.add(8);
        }
        left -= 8;
    }
    // SAFETY: `src` is now 16-aligned, with `left` bytes (a multiple of 8) mapped from it and
    // as many writable at `dst`; AVX was checked (the caller's contract).
    unsafe { load_aligned_wide(src, dst, left) }
}

/// [`load_words_wide`] from a 16-aligned `src` into `len` bytes at `dst`.
///
/// # Safety
///
/// As [`load_words_wide`], with `src` 16-aligned and `dst` valid for `len` bytes of writes
/// that overlap nothing the source is.
#[inline(always)]
pub(crate) unsafe fn load_aligned_wide(src: *const u8, dst: *mut u8, len: usize) {
    debug_assert!(src.addr().is_multiple_of(16) && len.is_multiple_of(8));
    let (mut src, mut dst, mut left) = (src, dst, len);
    // 64 bytes per step: four loads in one `asm!` that only reads memory (`readonly`: LLVM
    // keeps every value it holds in registers across it, where an `asm!` that may write memory
    // made it reload them, some from the stack, from addresses that 4K-alias the stores into
    // `out`), then four ordinary stores into `out`, our own buffer.
    while left >= 64 {
        // SAFETY: four 16-byte loads at `src`, `src + 16`, `src + 32`, `src + 48`, 16-aligned
        // (`src` was aligned above and only ever moves by multiples of 16), `64 <= left` bytes
        // the caller guarantees are mapped; `MOVDQA` on a 16-aligned address is one atomic
        // access on a processor with AVX (this function's contract), so each 8-byte word is
        // read whole while other processes update it atomically; no Rust reference to the
        // source is made; the block writes no memory, uses no stack and keeps the flags.
        let (a, b, c, d): (__m128i, __m128i, __m128i, __m128i);
        unsafe {
            asm!(
                "movdqa {a}, xmmword ptr [{src}]",
                "movdqa {b}, xmmword ptr [{src} + 16]",
                "movdqa {c}, xmmword ptr [{src} + 32]",
                "movdqa {d}, xmmword ptr [{src} + 48]",
                src = in(reg) src,
                a = out(xmm_reg) a,
                b = out(xmm_reg) b,
                c = out(xmm_reg) c,
                d = out(xmm_reg) d,
                options(readonly, nostack, preserves_flags),
            );
        }
        // SAFETY: 64 bytes at `dst`, inside `out` (`dst + left` is its end, `64 <= left`);
        // unaligned stores; `src` stays inside the caller's range for the next step or ends
        // at its end.
        unsafe {
            _mm_storeu_si128(dst.cast(), a);
            _mm_storeu_si128(dst.add(16).cast(), b);
            _mm_storeu_si128(dst.add(32).cast(), c);
            _mm_storeu_si128(dst.add(48).cast(), d);
            src = src.add(64);
            dst = dst.add(64);
        }
        left -= 64;
    }
    while left >= 16 {
        // SAFETY: as the loads above, one 16-byte load at the 16-aligned `src`, `16 <= left`
        // bytes.
        let x: __m128i;
        unsafe {
            asm!(
                "movdqa {x}, xmmword ptr [{src}]",
                src = in(reg) src,
                x = out(xmm_reg) x,
                options(readonly, nostack, preserves_flags),
            );
        }
        // SAFETY: 16 bytes at `dst`, inside `out`; `src` moves inside the caller's range.
        unsafe {
            _mm_storeu_si128(dst.cast(), x);
            src = src.add(16);
            dst = dst.add(16);
        }
        left -= 16;
    }
    if left == 8 {
        // SAFETY: the last mapped word of the range, 8-aligned; `dst` has its 8 bytes.
        unsafe {
            let word = AtomicU64::from_ptr(src.cast::<u64>().cast_mut()).load(Ordering::Relaxed);
            dst.cast::<u64>().write_unaligned(word);
        }
    }
}

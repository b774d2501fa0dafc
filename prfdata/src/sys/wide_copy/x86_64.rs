//! x86-64: 16-byte `MOVDQA` loads when the processor has AVX (see the [module docs](super) for
//! the guarantee), else the `AtomicU64` loop.

use std::arch::asm;
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
    // 64 bytes per step, four loads then four stores (no loop inside the `asm!`: straight-line
    // code LLVM can schedule around, the trip count known to the branch predictor as Rust's).
    while left >= 64 {
        // SAFETY:
        // - reads: four 16-byte loads at `src`, `src + 16`, `src + 32`, `src + 48`, 16-aligned
        //   (`src` was aligned above and only ever moves by multiples of 16), `64 <= left`
        //   bytes the caller guarantees are mapped; `MOVDQA` on a 16-aligned address is one
        //   atomic access on a processor with AVX (this function's contract), so each 8-byte
        //   word is read whole while other processes update it atomically; no Rust reference to
        //   the source is made;
        // - writes: 64 bytes at `dst`, inside `out` (`dst + left` is its end), with unaligned
        //   stores (`MOVDQU`);
        // - the block clobbers four xmm registers, declared; it uses no stack and keeps the
        //   flags.
        unsafe {
            asm!(
                "movdqa {a}, xmmword ptr [{src}]",
                "movdqa {b}, xmmword ptr [{src} + 16]",
                "movdqa {c}, xmmword ptr [{src} + 32]",
                "movdqa {d}, xmmword ptr [{src} + 48]",
                "movdqu xmmword ptr [{dst}], {a}",
                "movdqu xmmword ptr [{dst} + 16], {b}",
                "movdqu xmmword ptr [{dst} + 32], {c}",
                "movdqu xmmword ptr [{dst} + 48], {d}",
                src = in(reg) src,
                dst = in(reg) dst,
                a = out(xmm_reg) _,
                b = out(xmm_reg) _,
                c = out(xmm_reg) _,
                d = out(xmm_reg) _,
                options(nostack, preserves_flags),
            );
            src = src.add(64);
            dst = dst.add(64);
        }
        left -= 64;
    }
    while left >= 16 {
        // SAFETY: as the step above, with one 16-byte load at the 16-aligned `src` and one
        // store at `dst`, `16 <= left` bytes.
        unsafe {
            asm!(
                "movdqa {x}, xmmword ptr [{src}]",
                "movdqu xmmword ptr [{dst}], {x}",
                src = in(reg) src,
                dst = in(reg) dst,
                x = out(xmm_reg) _,
                options(nostack, preserves_flags),
            );
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

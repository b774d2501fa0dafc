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
#[inline]
pub(crate) unsafe fn load_words(src: *const u8, out: &mut [u8]) {
    debug_assert!(src.addr().is_multiple_of(8) && out.len().is_multiple_of(8));
    // `std` caches the CPUID answer: one load and a bit test after the first call.
    if out.len() < 16 || !std::is_x86_feature_detected!("avx") {
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
    let blocks = left / 16;
    if blocks > 0 {
        // SAFETY:
        // - reads: `blocks` 16-byte loads from the 16-aligned `src` (aligned just above),
        //   `16 * blocks <= left` bytes the caller guarantees are mapped; `MOVDQA` on a 16-aligned
        //   address is one atomic access on a processor with AVX (checked above), so each 8-byte
        //   word is read whole while other processes update it atomically; no Rust reference to
        //   the source is made;
        // - writes: `16 * blocks` bytes to `dst`, inside `out` (`dst + left` is its end), with
        //   unaligned stores (`MOVDQU`);
        // - the block clobbers one xmm register and the flags, declared; it uses no stack.
        unsafe {
            asm!(
                "2:",
                "movdqa {x}, xmmword ptr [{src}]",
                "movdqu xmmword ptr [{dst}], {x}",
                "add {src}, 16",
                "add {dst}, 16",
                "dec {n}",
                "jnz 2b",
                src = inout(reg) src,
                dst = inout(reg) dst,
                n = inout(reg) blocks => _,
                x = out(xmm_reg) _,
                options(nostack),
            );
        }
        left -= 16 * blocks;
    }
    if left == 8 {
        // SAFETY: the last mapped word of the range, 8-aligned; `dst` has its 8 bytes.
        unsafe {
            let word = AtomicU64::from_ptr(src.cast::<u64>().cast_mut()).load(Ordering::Relaxed);
            dst.cast::<u64>().write_unaligned(word);
        }
    }
}

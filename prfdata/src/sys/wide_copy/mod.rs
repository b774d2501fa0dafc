//! Bulk copies out of memory other processes write: every naturally aligned 8-byte word read
//! whole (never torn), as a relaxed `AtomicU64` load reads it, but with the widest loads the
//! processor guarantees that of.
//!
//! A counter block is a run of 8-aligned DWORD and LARGE values that the app updates with atomic
//! instructions outside any lock; a reader must never see half of an update of one value. A loop
//! of relaxed `AtomicU64` loads gives that, but LLVM never merges atomic loads, so it moves 8
//! bytes per instruction where `memcpy` moves 16 or 32. On x86-64 processors with AVX, Intel and
//! AMD guarantee that an aligned 16-byte SSE load (`MOVDQA`) is one atomic access:
//!
//! > Processors that enumerate support for Intel AVX (by setting the feature flag
//! > CPUID.01H:ECX.AVX\[bit 28\]) guarantee that the 16-byte memory operations performed by the
//! > following instructions will always be carried out atomically: MOVAPD, MOVAPS, and MOVDQA.
//! > (Intel SDM vol. 3A, 10.1.1 "Guaranteed Atomic Operations"; AMD APM vol. 2, 7.3.2, says the
//! > same of processors with AVX.)
//!
//! so [`load_words`] copies the 16-aligned body of a range with `MOVDQA` loads, each of its two
//! 8-byte halves a whole word, and a leading or trailing 8-byte word with a relaxed atomic
//! load. Elsewhere (another architecture, or no AVX) it is the `AtomicU64` loop.
//!
//! # Why an `asm!` load may race with writers
//!
//! Rust's memory model makes a non-atomic access that races with a write undefined behaviour;
//! `core::arch` intrinsics such as `_mm_load_si128` are non-atomic accesses in that model. An
//! `asm!` block is not: to the compiler it is an opaque operation with the effect the hardware
//! gives it (the same reasoning `portable-atomic` uses for its 128-bit atomic loads with
//! `VMOVDQA`), and the hardware gives an atomic 16-byte load. What the compiler must know is
//! said in the operands: the block only loads (`readonly`, which is true: it writes no memory;
//! the loaded registers are stored into the caller's buffer by ordinary Rust stores), and the
//! source is never turned into a Rust reference. `readonly` matters for speed too: an `asm!`
//! block that may write memory makes LLVM reload, after every block, each value it holds
//! behind a pointer, and a copy loop then spills to the stack.

#[cfg_attr(target_arch = "x86_64", path = "x86_64.rs")]
#[cfg_attr(not(target_arch = "x86_64"), path = "generic.rs")]
mod imp;

pub(crate) use imp::{load_aligned_wide, load_words, load_words_wide, wide_loads};

/// The `AtomicU64` loop: `out.len() / 8` words from `src`.
///
/// # Safety
///
/// As [`load_words`].
#[inline]
pub(crate) unsafe fn load_words_atomic(src: *const u8, out: &mut [u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    for (i, chunk) in out.chunks_exact_mut(8).enumerate() {
        // SAFETY: the caller guarantees `src` is 8-aligned and `out.len()` bytes from it are
        // mapped and only ever accessed atomically: the word at `src + 8 * i` is in bounds and
        // aligned (`8 * i < out.len()`).
        let word = unsafe { AtomicU64::from_ptr(src.add(8 * i).cast::<u64>().cast_mut()) }
            .load(Ordering::Relaxed);
        // Memory order: a byte copy (values are native words, names native UTF-16).
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// Every length and both alignments of the source (8 and 16 mod 16) and of the destination,
    /// through both entry points (`load_words_wide` where the processor allows it).
    #[test]
    fn copies_exactly_the_range_at_every_alignment() {
        copies_exactly_the_range_with(|src, out| {
            // SAFETY: the test's contract below: `src` and `out` as `load_words` requires.
            unsafe { load_words(src, out) }
        });
        if wide_loads() {
            copies_exactly_the_range_with(|src, out| {
                // SAFETY: as above, and `wide_loads()` returned true.
                unsafe { load_words_wide(src, out) }
            });
        }
    }

    /// Runs `copy(src, out)` (with `src` 8-aligned, the `out.len()` bytes from it inside a
    /// vector nothing writes) over every length and alignment.
    fn copies_exactly_the_range_with(copy: impl Fn(*const u8, &mut [u8])) {
        let words: Vec<u64> = (0..64u64)
            .map(|i| i.wrapping_mul(0x0101_0101_0101_0101))
            .collect();
        let src = words.as_ptr().cast::<u8>();
        for start in 0..4 {
            for n in 0..40 {
                for dst_off in 0..3 {
                    let mut out = vec![0xAAu8; 8 * n + dst_off + 1];
                    // `start + n <= 64` words of `words`, 8-aligned; nothing writes them.
                    copy(
                        src.wrapping_add(8 * start),
                        &mut out[dst_off..dst_off + 8 * n],
                    );
                    let want: Vec<u8> = words[start..start + n]
                        .iter()
                        .flat_map(|w| w.to_ne_bytes())
                        .collect();
                    assert_eq!(
                        &out[dst_off..dst_off + 8 * n],
                        &want[..],
                        "{start} {n} {dst_off}"
                    );
                    assert!(out[..dst_off].iter().all(|&b| b == 0xAA));
                    assert_eq!(out[dst_off + 8 * n], 0xAA, "nothing past the range");
                }
            }
        }
    }

    /// A writer flips words between two values whose halves differ; a copy never sees a mix.
    #[test]
    fn words_are_never_torn_under_a_writer() {
        const A: u64 = 0x0000_0000_ffff_ffff;
        const B: u64 = 0xffff_ffff_0000_0000;
        let words: Vec<AtomicU64> = (0..33).map(|_| AtomicU64::new(A)).collect();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut v = B;
                while !stop.load(Ordering::Relaxed) {
                    for w in &words {
                        w.store(v, Ordering::Relaxed);
                    }
                    v = if v == A { B } else { A };
                }
            });
            let mut out = vec![0u8; 8 * 32];
            for pass in 0..20_000 {
                // 16-aligned or not.
                let start = pass % 2;
                // SAFETY: 32 words from `start` are inside `words`, 8-aligned, and only ever
                // accessed atomically.
                unsafe { load_words(words.as_ptr().add(start).cast(), &mut out) };
                for w in out.chunks_exact(8) {
                    let w = u64::from_ne_bytes(w.try_into().unwrap());
                    assert!(w == A || w == B, "torn word {w:#x}");
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
}

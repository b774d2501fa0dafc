//! Futex wait and wake on a 32-bit word that may live in memory shared between processes.
//!
//! The word is usually inside a `MAP_SHARED` mapping used by several processes, so the
//! operations are issued *without* `FUTEX_PRIVATE_FLAG`: futex(2) says the private flag "tells
//! the kernel that the futex is process-private and not shared with another process", and a
//! private wait would never be woken by a wake from another process. Shared futexes also work
//! on private memory, only slightly slower, so one code path serves both.
//!
//! A futex word is 32 bits. A lock whose state needs more (the optex's owner identity) keeps a
//! 64-bit word and waits on its low half with [`wait_low`] and [`wake_low`]: see [`low_half`]
//! for why that is sound.

use std::sync::atomic::{AtomicU32, AtomicU64};
use std::time::Duration;

use rustix::io::Errno;
use rustix::thread::futex;

/// How a [`wait`] ended. Callers re-check the word in every case: futex waits may end
/// spuriously.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitOutcome {
    /// The kernel returned normally: a wake, or a spurious wakeup.
    Woken,
    /// The word did not hold `expected` when the kernel looked (`EAGAIN`).
    ValueChanged,
    /// The timeout elapsed (`ETIMEDOUT`).
    TimedOut,
    /// A signal handler ran (`EINTR`), or the kernel refused the wait for another reason (then
    /// this call slept briefly instead, so that a caller's retry loop does not spin hot).
    Interrupted,
}

/// Longest sleep used in place of a futex wait the kernel refused (seccomp filters, ENOSYS).
const FALLBACK_SLEEP: Duration = Duration::from_millis(1);

/// Sleeps while `word` holds `expected`, at most `timeout` (relative, `CLOCK_MONOTONIC`).
///
/// `FUTEX_WAIT` without the private flag, so a [`wake`] from any process that maps the same
/// memory ends it.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> WaitOutcome {
    let timespec = timeout.map(|d| futex::Timespec {
        tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: d.subsec_nanos().into(),
    });
    match futex::wait(word, futex::Flags::empty(), expected, timespec.as_ref()) {
        Ok(()) => WaitOutcome::Woken,
        Err(Errno::AGAIN) => WaitOutcome::ValueChanged,
        Err(Errno::TIMEDOUT) => WaitOutcome::TimedOut,
        Err(Errno::INTR) => WaitOutcome::Interrupted,
        Err(_) => {
            std::thread::sleep(timeout.map_or(FALLBACK_SLEEP, |t| t.min(FALLBACK_SLEEP)));
            WaitOutcome::Interrupted
        }
    }
}

/// Wakes up to `n` threads (of any process) sleeping in [`wait`] on `word`; returns how many
/// were woken.
pub(crate) fn wake(word: &AtomicU32, n: u32) -> usize {
    futex::wake(word, futex::Flags::empty(), n).unwrap_or(0)
}

/// [`wait`] on the low 32 bits of a 64-bit word: sleeps while `word`'s low half holds
/// `expected`, whatever its high half holds.
pub(crate) fn wait_low(word: &AtomicU64, expected: u32, timeout: Option<Duration>) -> WaitOutcome {
    wait(low_half(word), expected, timeout)
}

/// [`wake`] for threads sleeping in [`wait_low`] on `word`.
pub(crate) fn wake_low(word: &AtomicU64, n: u32) -> usize {
    wake(low_half(word), n)
}

// The low half of a little-endian `u64` is its first four bytes; `low_half` relies on it. (The
// crate root refuses big-endian targets too; this check keeps the reasoning next to its use.)
const _: () = assert!(cfg!(target_endian = "little"));

/// The futex word of `word`: its low 32 bits, as an address to hand to the kernel.
///
/// The returned reference is private to this module and only ever passed to `futex(2)`; no Rust
/// code loads or stores through it. That matters because Rust's memory model does not allow
/// racing atomic accesses of different sizes to the same bytes (`std::sync::atomic`, "Memory
/// model for atomic accesses"), and other threads access `word` as a whole 64-bit atomic. The
/// futex operations are not Rust accesses: rustix turns the reference into a pointer and issues
/// the system call, and the kernel reads the four bytes with its own atomic load, comparing
/// them to the expected value under the futex's hash-bucket lock (futex(2): "the loading of
/// the futex word's value, the comparison of that value with the expected value, and the
/// actual blocking will happen atomically"), exactly as it would read a word another process
/// changes through its own mapping. Every Rust access to the bytes stays a 64-bit atomic.
///
/// The futex is keyed by the address (for shared futexes: the page and the offset in it), so a
/// [`wake_low`] from any process that maps the same memory reaches a [`wait_low`] on it.
fn low_half(word: &AtomicU64) -> &AtomicU32 {
    // SAFETY: `AtomicU32::from_ptr`'s preconditions:
    // - alignment: `AtomicU64` is 8-aligned, so its first byte is 4-aligned;
    // - validity: the four bytes lie inside `word`, which is borrowed for the returned lifetime,
    //   and any bit pattern is a valid `u32`;
    // - the memory model (no mixed-size atomic accesses that race, no non-atomic ones): the
    //   reference is used only as the address of a futex system call (see above), so no Rust
    //   access of another size or kind ever happens through it. On a little-endian target
    //   (checked at compile time above) these four bytes are the word's low 32 bits.
    unsafe { AtomicU32::from_ptr(word.as_ptr().cast::<u32>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn wait_returns_on_timeout() {
        let word = AtomicU32::new(7);
        let start = Instant::now();
        let outcome = wait(&word, 7, Some(Duration::from_millis(50)));
        let elapsed = start.elapsed();
        assert_eq!(outcome, WaitOutcome::TimedOut);
        assert!(elapsed >= Duration::from_millis(50), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }

    #[test]
    fn wait_returns_at_once_when_the_word_differs() {
        let word = AtomicU32::new(1);
        let start = Instant::now();
        assert_eq!(
            wait(&word, 2, Some(Duration::from_secs(5))),
            WaitOutcome::ValueChanged
        );
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn zero_timeout_does_not_sleep() {
        let word = AtomicU32::new(0);
        let start = Instant::now();
        assert_eq!(wait(&word, 0, Some(Duration::ZERO)), WaitOutcome::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn huge_timeouts_are_accepted() {
        // Must not be refused as EINVAL (which would turn into a 1 ms sleep): the word differs.
        let word = AtomicU32::new(0);
        assert_eq!(
            wait(&word, 1, Some(Duration::MAX)),
            WaitOutcome::ValueChanged
        );
    }

    /// The scheduler state (`S` sleeping, `R` running, ...) of one of our threads.
    fn thread_state(tid: i32) -> Option<u8> {
        let bytes = std::fs::read(format!("/proc/self/task/{tid}/stat")).ok()?;
        crate::sys::process::parse_stat(&bytes).map(|s| s.state)
    }

    /// Starts a thread that waits (`wait_once`, looped over spurious wakeups) until `is_set`,
    /// waits until it sleeps in the kernel, then runs `set_and_wake`, which must wake exactly it.
    fn assert_wakes_a_sleeper(
        wait_once: impl Fn() + Send + 'static,
        is_set: impl Fn() -> bool + Send + 'static,
        set_and_wake: impl FnOnce() -> usize,
    ) {
        let tid = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let waiter = {
            let tid = Arc::clone(&tid);
            std::thread::spawn(move || {
                tid.store(
                    rustix::thread::gettid().as_raw_nonzero().get(),
                    Ordering::Release,
                );
                let start = Instant::now();
                // Loop over spurious wakeups until the flag flips, bounded by a deadline.
                while !is_set() {
                    assert!(start.elapsed() < Duration::from_secs(10), "never woken");
                    wait_once();
                }
                start.elapsed()
            })
        };
        // Wait until the waiter sleeps in the kernel, so that the wake below must find it.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "waiter never went to sleep");
            let tid = tid.load(Ordering::Acquire);
            if tid != 0 && thread_state(tid) == Some(b'S') {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(set_and_wake(), 1);
        let slept = waiter.join().unwrap();
        assert!(slept < Duration::from_secs(5), "{slept:?}");
    }

    #[test]
    fn wake_wakes_a_waiting_thread() {
        let word = Arc::new(AtomicU32::new(0));
        let (w1, w2) = (Arc::clone(&word), Arc::clone(&word));
        assert_wakes_a_sleeper(
            move || {
                wait(&w1, 0, Some(Duration::from_secs(10)));
            },
            move || w2.load(Ordering::Acquire) != 0,
            || {
                word.store(1, Ordering::Release);
                wake(&word, 1)
            },
        );
    }

    #[test]
    fn wait_low_compares_the_low_half_only() {
        let word = AtomicU64::new(7 | (9 << 32));
        // The low half holds 7: sleep, whatever the high half holds.
        assert_eq!(
            wait_low(&word, 7, Some(Duration::from_millis(20))),
            WaitOutcome::TimedOut
        );
        // 9 is in the high half, not the low one.
        assert_eq!(
            wait_low(&word, 9, Some(Duration::from_secs(5))),
            WaitOutcome::ValueChanged
        );
    }

    #[test]
    fn wake_low_wakes_a_thread_in_wait_low() {
        // The high half is set from the start: only the low half decides.
        let word = Arc::new(AtomicU64::new(5 << 32));
        let (w1, w2) = (Arc::clone(&word), Arc::clone(&word));
        assert_wakes_a_sleeper(
            move || {
                wait_low(&w1, 0, Some(Duration::from_secs(10)));
            },
            move || w2.load(Ordering::Acquire) as u32 != 0,
            || {
                word.store(1, Ordering::Release);
                wake_low(&word, 1)
            },
        );
    }

    #[test]
    fn wake_with_no_waiters_wakes_nobody() {
        let word = AtomicU32::new(0);
        assert_eq!(wake(&word, u32::MAX), 0);
    }
}

//! The optex: a lock that lives in shared memory and excludes threads of several processes.
//!
//! Richter's CPrfData guards its shared block with his `COptex` (MSJ, January 1998 Win32 Q&A):
//!
//! > "Since I want very high-speed mutual exclusive access to the shared memory buffer from
//! > threads in multiple processes, I decided to synchronize access to the shared memory buffer
//! > using my COptex class" — seed 002, *Synchronizing Access to the Counter Values*.
//!
//! An optex is a word in the shared block: taking a free optex is one compare-and-exchange in
//! user space, and only contention goes to the kernel (a futex on Linux). Unlike a critical
//! section it works across processes; unlike a kernel mutex it costs no system call when free.
//!
//! Because the processes that share it are independent programs, one of them may die while it
//! holds the optex. Every waiter therefore wakes up now and then ([`CHECK_INTERVAL`]) and asks
//! whether the owner is still running ([`ProcessId::liveness`]); if it is not, the waiter takes
//! the optex over and its guard says so ([`OptexGuard::owner_died`]), so that it can check and
//! repair whatever the dead owner was changing.
//!
//! # Layout
//!
//! ```text
//!  offset  size  field        content
//!  ------  ----  -----------  --------------------------------------------------------------
//!       0     4  state        owner pid and WAITERS bit (table at the constants below)
//!       4     4  recoveries   number of take-overs from a dead owner (wrapping)
//!       8     8  owner_start  owner pid << 40 | owner start time (mod 2^40); 0 = not published
//!      16    48  reserved     zero
//! ```
//!
//! All zero is an unlocked optex, so a zero-filled block needs no initialisation.

use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, offset_of, size_of};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::process::{probe, Probe, ProcessId};
use crate::sys::futex;

// The state word, `Optex::state`:
//
// | bits   | name        | meaning                                                          |
// |--------|-------------|------------------------------------------------------------------|
// | 0..30  | OWNER_MASK  | pid of the owning process; 0 = unlocked. Linux pids are below    |
// |        |             | PID_MAX_LIMIT = 2^22 (include/linux/threads.h), so 30 bits fit.  |
// | 30     | WAITERS     | some thread may be asleep in a futex wait on this word: unlock   |
// |        |             | must wake one.                                                   |
// | 31     | (reserved)  | always 0; unlock clears it.                                      |

/// Bits of the state word that hold the owner's pid (0 = unlocked).
const OWNER_MASK: u32 = (1 << 30) - 1;
/// Bit of the state word set while some thread may sleep on it.
const WAITERS: u32 = 1 << 30;

// `Optex::owner_start`, written by the owner right after it acquires and cleared to 0 right
// before it releases:
//
// | bits    | meaning                                                                  |
// |---------|--------------------------------------------------------------------------|
// | 0..40   | the owner's `ProcessId::start_time` mod 2^40 (2^40 ticks at 100 Hz is     |
// |         | over 300 years of uptime); 0 = unknown (its `/proc` was unreadable)      |
// | 40..64  | the owner's pid, so a reader can tell whether the start time belongs to   |
// |         | the pid in the state word or is left over from another process           |
//
// The whole word is 0 while no owner has published it.

/// Shift of the pid inside `owner_start`.
const TAG_PID_SHIFT: u32 = 40;
/// Bits of `owner_start` that hold the start time.
const TAG_START_MASK: u64 = (1 << TAG_PID_SHIFT) - 1;

/// Busy-wait rounds before a locker starts to yield: round `n` spins `2 << n` times (2, 4, 8).
///
/// From parking_lot_core's `SpinWait`, which spins for three rounds of doubling length: long
/// enough to ride out a short critical section on another core, short enough not to matter
/// when the owner is descheduled.
///
/// # Examples
///
/// ```
/// assert!(prfdata::optex::SPIN_LIMIT <= prfdata::optex::YIELD_LIMIT);
/// ```
pub const SPIN_LIMIT: u32 = 3;

/// Rounds (spinning ones included) before a locker stops yielding and sleeps in the kernel.
///
/// Also parking_lot_core's `SpinWait` (ten rounds in all). A locker skips spinning altogether
/// when others already sleep: the lock is contended and spinning would only burn a core.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata::optex::YIELD_LIMIT, 10);
/// ```
pub const YIELD_LIMIT: u32 = 10;

/// How long a waiter sleeps on one owner before it checks whether that owner's process died.
///
/// Bounds the time to recover from a dead owner (to about this plus [`RECHECK_DELAY`]), well
/// under the one second that a provider's collect call can afford; each check reads one
/// `/proc/<pid>/stat`, which at 20 checks a second per waiter costs nothing measurable.
///
/// # Examples
///
/// ```
/// use prfdata::optex::{CHECK_INTERVAL, RECHECK_DELAY};
/// use std::time::Duration;
///
/// assert!(CHECK_INTERVAL + RECHECK_DELAY < Duration::from_secs(1));
/// ```
pub const CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// How long a waiter waits to confirm that an owner's recorded start time really differs from
/// the start time of the process that now has the owner's pid.
///
/// The owner publishes its pid and start time a few instructions after it takes the optex.
/// A waiter ignores a record that carries another pid, but when a new process that got a dead
/// owner's pid takes the optex over, the dead owner's record (same pid, other start time) is
/// still there for those few instructions. Such a mismatch resolves within microseconds, while
/// a pid reused after its owner died stays mismatched: a mismatch is only believed when the
/// state word and the record are unchanged after this delay.
///
/// # Examples
///
/// ```
/// assert!(prfdata::optex::RECHECK_DELAY < prfdata::optex::CHECK_INTERVAL);
/// ```
pub const RECHECK_DELAY: Duration = Duration::from_millis(20);

/// A lock for threads of several processes, placed in memory they share.
///
/// It is not recursive: a thread that locks an optex it already holds deadlocks. Threads of the
/// owning process wait like threads of other processes.
///
/// # Owner death
///
/// A waiter takes the optex over when the owning process is dead: no process has its pid any
/// more, it is a zombie, or its pid now belongs to a process with another start time. Any exit
/// counts, a normal exit (or `exit` from a thread) included, and the next locker gets a guard
/// whose [`owner_died`](OptexGuard::owner_died) is `true`. Recovery takes about
/// [`CHECK_INTERVAL`]. The owner is a *process*: a thread that ends while holding the optex
/// (having leaked its guard) leaves it locked for as long as its process lives, and a process
/// that calls `exec` while holding it keeps it (same pid, same start time).
///
/// One corner is not recovered: an owner that dies in the few instructions between taking the
/// optex and publishing its start time, and whose pid is then taken by a new process before a
/// waiter looks, keeps the optex locked until that new process exits.
///
/// # Shared memory
///
/// `Optex` is `#[repr(C, align(64))]`, exactly 64 bytes (one cache line), and valid when all
/// its bytes are zero. Put it at a 64-aligned offset in a `MAP_SHARED` mapping and reach it with
/// [`Optex::from_ptr`]. All processes must share one pid namespace.
///
/// # Examples
///
/// Two mappings of one file stand for two processes:
///
/// ```
/// use memmap2::MmapRaw;
/// use prfdata::Optex;
///
/// let path = std::env::temp_dir().join(format!("optex-doc-{}", std::process::id()));
/// let file = std::fs::OpenOptions::new()
///     .read(true)
///     .write(true)
///     .create(true)
///     .truncate(true)
///     .open(&path)?;
/// file.set_len(4096)?; // zero-filled: an unlocked optex
/// let (a, b) = (MmapRaw::map_raw(&file)?, MmapRaw::map_raw(&file)?);
/// // SAFETY: each mapping is page-aligned, 4096 bytes long and outlives the reference, and the
/// // optex at offset 0 is only ever accessed through `Optex`.
/// let (in_a, in_b) = unsafe {
///     (Optex::from_ptr(a.as_ptr().cast()), Optex::from_ptr(b.as_ptr().cast()))
/// };
/// {
///     let _guard = in_a.lock();
///     assert!(in_b.is_locked());
///     assert!(in_b.try_lock().is_none());
/// }
/// assert!(in_b.try_lock().is_some());
/// # drop((a, b));
/// std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[repr(C, align(64))]
pub struct Optex {
    /// Owner pid and WAITERS bit; see the table above [`OWNER_MASK`].
    state: AtomicU32,
    /// Take-overs from a dead owner, for diagnostics.
    recoveries: AtomicU32,
    /// Owner pid and start time; see the table above [`TAG_PID_SHIFT`].
    owner_start: AtomicU64,
    /// Zero; room for later fields.
    _reserved: [u8; 48],
}

const _: () = assert!(size_of::<Optex>() == 64);
const _: () = assert!(align_of::<Optex>() == 64);
const _: () = assert!(offset_of!(Optex, state) == 0);
const _: () = assert!(offset_of!(Optex, recoveries) == 4);
const _: () = assert!(offset_of!(Optex, owner_start) == 8);
const _: () = assert!(offset_of!(Optex, _reserved) == 16);
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Optex>();
};

/// The outcome of a raw acquisition ([`Optex::lock_raw`]): the optex is held and must be
/// released with [`Optex::unlock_raw`].
///
/// # Examples
///
/// ```
/// let optex = prfdata::Optex::new();
/// let acquired = optex.lock_raw();
/// assert!(!acquired.owner_died());
/// // SAFETY: this process took the optex just above and holds no guard for it.
/// unsafe { optex.unlock_raw() };
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "the optex stays locked until `unlock_raw`"]
pub struct Acquired {
    owner_died: bool,
}

impl Acquired {
    /// `true` if the optex was taken over from a dead owner: what it guards may be half
    /// updated and must be checked.
    ///
    /// # Examples
    ///
    /// ```
    /// let optex = prfdata::Optex::new();
    /// let acquired = optex.lock_raw();
    /// if acquired.owner_died() {
    ///     // verify and repair the guarded data here
    /// }
    /// // SAFETY: this process holds the optex.
    /// unsafe { optex.unlock_raw() };
    /// ```
    pub fn owner_died(self) -> bool {
        self.owner_died
    }
}

impl Optex {
    /// An unlocked optex (all bytes zero).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::Optex;
    ///
    /// static LOCK: Optex = Optex::new();
    /// assert!(!LOCK.is_locked());
    /// ```
    pub const fn new() -> Optex {
        Optex {
            state: AtomicU32::new(0),
            recoveries: AtomicU32::new(0),
            owner_start: AtomicU64::new(0),
            _reserved: [0; 48],
        }
    }

    /// The optex at `ptr`, typically inside a shared mapping.
    ///
    /// # Safety
    ///
    /// - `ptr` is aligned to 64 bytes and valid for reads and writes of 64 bytes for `'a`.
    /// - Those bytes hold a valid optex: all zero, or left so by `Optex` operations (possibly
    ///   of a process that has died since).
    /// - For `'a`, every access to those bytes, from any process, goes through `Optex` (or is
    ///   atomic with the same layout); nothing creates `&mut` or plain `&[u8]` over them.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::Optex;
    ///
    /// let map = memmap2::MmapRaw::from(memmap2::MmapMut::map_anon(4096)?);
    /// // SAFETY: the anonymous map is page-aligned, zero-filled, 4096 bytes long, outlives the
    /// // reference, and is accessed only through it.
    /// let optex = unsafe { Optex::from_ptr(map.as_ptr().cast()) };
    /// assert!(optex.try_lock().is_some());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub unsafe fn from_ptr<'a>(ptr: *const Optex) -> &'a Optex {
        debug_assert!(ptr.is_aligned(), "optex pointer {ptr:p} is not 64-aligned");
        // SAFETY: the caller guarantees alignment, validity for `'a` and that all accesses are
        // atomic; `Optex` consists of atomics and plain bytes, for which any bit pattern is
        // valid.
        unsafe { &*ptr }
    }

    /// Locks the optex, waiting as long as its owner is alive.
    ///
    /// Takes the optex over if its owner dies (see the type's docs); the guard's
    /// [`owner_died`](OptexGuard::owner_died) then says so.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::Optex;
    /// use std::sync::Arc;
    ///
    /// let optex = Arc::new(Optex::new());
    /// let other = Arc::clone(&optex);
    /// let guard = optex.lock();
    /// let t = std::thread::spawn(move || other.lock().owner_died());
    /// drop(guard);
    /// assert!(!t.join().unwrap());
    /// ```
    #[inline]
    pub fn lock(&self) -> OptexGuard<'_> {
        OptexGuard::new(self, self.lock_raw())
    }

    /// Locks the optex if it is free now, without waiting (and without checking whether a
    /// holder is dead: that needs [`lock`](Optex::lock) or [`try_lock_for`](Optex::try_lock_for)).
    ///
    /// # Examples
    ///
    /// ```
    /// let optex = prfdata::Optex::new();
    /// let guard = optex.try_lock().expect("free");
    /// assert!(optex.try_lock().is_none());
    /// drop(guard);
    /// assert!(optex.try_lock().is_some());
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<OptexGuard<'_>> {
        self.try_lock_raw().map(|a| OptexGuard::new(self, a))
    }

    /// Locks the optex, waiting at most about `timeout`: for readers that must not hang.
    ///
    /// Returns `None` if the optex is still held by a live owner when the timeout expires.
    /// Before it gives up, it checks at least once whether the owner is dead (one read of
    /// `/proc/<pid>/stat`), so that even short timeouts, zero included, take over a dead
    /// owner's optex. Confirming that a reused pid is not the owner any more takes
    /// [`RECHECK_DELAY`], by which such a call can return late.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::Optex;
    /// use std::time::Duration;
    ///
    /// let optex = Optex::new();
    /// let held = optex.lock();
    /// let other = std::thread::scope(|s| {
    ///     s.spawn(|| optex.try_lock_for(Duration::from_millis(20)).is_some()).join().unwrap()
    /// });
    /// assert!(!other);
    /// drop(held);
    /// assert!(optex.try_lock_for(Duration::from_millis(20)).is_some());
    /// ```
    #[inline]
    pub fn try_lock_for(&self, timeout: Duration) -> Option<OptexGuard<'_>> {
        self.try_lock_raw_for(timeout)
            .map(|a| OptexGuard::new(self, a))
    }

    /// Whether some process holds the optex now (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let optex = prfdata::Optex::new();
    /// assert!(!optex.is_locked());
    /// let _guard = optex.lock();
    /// assert!(optex.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & OWNER_MASK != 0
    }

    /// The process that holds the optex now (a snapshot), or `None` if it is free.
    ///
    /// `start_time` is 0 if the owner has not published it yet (it does so right after it
    /// acquires) or could not read it; it holds the owner's start time modulo 2^40 ticks
    /// (which is the start time itself for over 300 years of uptime).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::{Optex, ProcessId};
    ///
    /// let optex = Optex::new();
    /// assert_eq!(optex.owner(), None);
    /// let _guard = optex.lock();
    /// assert_eq!(optex.owner(), Some(ProcessId::current()));
    /// ```
    pub fn owner(&self) -> Option<ProcessId> {
        let state = self.state.load(Ordering::Acquire);
        let pid = state & OWNER_MASK;
        if pid == 0 {
            return None;
        }
        let tag = self.owner_start.load(Ordering::Relaxed);
        let start_time = if tag_belongs_to(tag, pid) {
            tag & TAG_START_MASK
        } else {
            0
        };
        Some(ProcessId { pid, start_time })
    }

    /// How many times a locker has taken this optex over from a dead owner (wrapping).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata::Optex::new().recoveries(), 0);
    /// ```
    pub fn recoveries(&self) -> u32 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Locks the optex like [`lock`](Optex::lock) but returns no guard: the caller releases it
    /// with [`unlock_raw`](Optex::unlock_raw). For code that holds the optex across a boundary
    /// a guard cannot cross.
    ///
    /// # Examples
    ///
    /// ```
    /// let optex = prfdata::Optex::new();
    /// let _ = optex.lock_raw();
    /// assert!(optex.is_locked());
    /// // SAFETY: this process holds the optex and no guard for it exists.
    /// unsafe { optex.unlock_raw() };
    /// assert!(!optex.is_locked());
    /// ```
    #[inline]
    pub fn lock_raw(&self) -> Acquired {
        let me = ProcessId::current();
        if self.try_acquire_free(me) {
            return Acquired { owner_died: false };
        }
        match self.lock_slow(me, None) {
            Some(acquired) => acquired,
            None => unreachable!("a wait without deadline only ends by acquiring"),
        }
    }

    /// Like [`try_lock`](Optex::try_lock), without a guard: release with
    /// [`unlock_raw`](Optex::unlock_raw).
    ///
    /// # Examples
    ///
    /// ```
    /// let optex = prfdata::Optex::new();
    /// assert!(optex.try_lock_raw().is_some());
    /// assert!(optex.try_lock_raw().is_none());
    /// // SAFETY: this process holds the optex and no guard for it exists.
    /// unsafe { optex.unlock_raw() };
    /// ```
    #[inline]
    pub fn try_lock_raw(&self) -> Option<Acquired> {
        let me = ProcessId::current();
        if self.try_acquire_free(me) {
            return Some(Acquired { owner_died: false });
        }
        let state = self.state.load(Ordering::Relaxed);
        if state & OWNER_MASK != 0 {
            return None;
        }
        // Free but with WAITERS (or reserved bits) set: keep WAITERS, as the slow path does.
        let new = (me.pid & OWNER_MASK) | (state & WAITERS);
        self.state
            .compare_exchange(state, new, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| {
                self.publish(me);
                Acquired { owner_died: false }
            })
    }

    /// Like [`try_lock_for`](Optex::try_lock_for), without a guard: release with
    /// [`unlock_raw`](Optex::unlock_raw).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let optex = prfdata::Optex::new();
    /// let acquired = optex.try_lock_raw_for(Duration::from_millis(10)).expect("free");
    /// assert!(!acquired.owner_died());
    /// // SAFETY: this process holds the optex and no guard for it exists.
    /// unsafe { optex.unlock_raw() };
    /// ```
    #[inline]
    pub fn try_lock_raw_for(&self, timeout: Duration) -> Option<Acquired> {
        let me = ProcessId::current();
        if self.try_acquire_free(me) {
            return Some(Acquired { owner_died: false });
        }
        // A deadline beyond what `Instant` can represent is no deadline.
        self.lock_slow(me, Instant::now().checked_add(timeout))
    }

    /// Unlocks the optex and wakes one waiter if any may sleep.
    ///
    /// # Safety
    ///
    /// - The optex is locked, and the caller is entitled to end that acquisition: this process
    ///   took it with [`lock_raw`](Optex::lock_raw) (or a `try_` variant) or forgot the guard of
    ///   a guarded acquisition (`std::mem::forget`); or the caller knows by other means that
    ///   the holder will never touch the guarded data again (repair tools).
    /// - No guard for that acquisition will be dropped later (it would unlock someone else's
    ///   acquisition).
    ///
    /// Unlocking an optex that is not held breaks mutual exclusion for the next lockers;
    /// it is not memory-unsafe for the optex itself, but the data it guards may be.
    ///
    /// # Examples
    ///
    /// ```
    /// let optex = prfdata::Optex::new();
    /// std::mem::forget(optex.lock());
    /// // SAFETY: the guard of this process's acquisition was forgotten, never dropped.
    /// unsafe { optex.unlock_raw() };
    /// assert!(!optex.is_locked());
    /// ```
    #[inline]
    pub unsafe fn unlock_raw(&self) {
        // Cleared before release, so a waiter never pairs the next owner's pid with our start.
        self.owner_start.store(0, Ordering::Relaxed);
        let prev = self.state.swap(0, Ordering::Release);
        if prev & WAITERS != 0 {
            self.wake_one();
        }
    }

    /// The fast path: one compare-and-exchange from free (0) to our pid.
    #[inline]
    fn try_acquire_free(&self, me: ProcessId) -> bool {
        debug_assert!(me.pid & !OWNER_MASK == 0, "pid {} above 2^30", me.pid);
        let taken = self
            .state
            .compare_exchange(0, me.pid & OWNER_MASK, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if taken {
            self.publish(me);
        }
        taken
    }

    /// Records the new owner's identity (the state word already holds its pid).
    #[inline]
    fn publish(&self, me: ProcessId) {
        self.owner_start.store(tag_of(me), Ordering::Relaxed);
    }

    #[cold]
    fn wake_one(&self) {
        futex::wake(&self.state, 1);
    }

    /// Spins, yields, then sleeps until the optex is free or its owner is found dead; gives up
    /// at `deadline`.
    #[cold]
    fn lock_slow(&self, me: ProcessId, deadline: Option<Instant>) -> Option<Acquired> {
        let my_pid = me.pid & OWNER_MASK;
        let mut rounds = 0u32;
        // Whether this thread has slept: then others may sleep too, and the WAITERS bit must
        // survive our acquisition so that our unlock wakes them (Drepper, "Futexes Are Tricky",
        // mutex 3, which takes the lock as "locked, maybe waiters" after sleeping).
        let mut slept = false;
        // The owner pid this thread is waiting on, and since when.
        let mut watched: Option<(u32, Instant)> = None;
        // Whether this call has checked an owner's liveness yet.
        let mut checked = false;
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if state & OWNER_MASK == 0 {
                let new = my_pid | if slept { WAITERS } else { state & WAITERS };
                match self.state.compare_exchange_weak(
                    state,
                    new,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        self.publish(me);
                        return Some(Acquired { owner_died: false });
                    }
                    Err(now) => {
                        state = now;
                        continue;
                    }
                }
            }

            // Held. Spin, then yield, while nobody sleeps.
            if state & WAITERS == 0 && rounds < YIELD_LIMIT {
                if rounds < SPIN_LIMIT {
                    for _ in 0..(2u32 << rounds) {
                        std::hint::spin_loop();
                    }
                } else {
                    std::thread::yield_now();
                }
                rounds += 1;
                state = self.state.load(Ordering::Relaxed);
                continue;
            }

            let now = Instant::now();
            let expired = deadline.is_some_and(|d| now >= d);
            let owner = state & OWNER_MASK;
            let since = match watched {
                Some((pid, since)) if pid == owner => since,
                _ => {
                    watched = Some((owner, now));
                    now
                }
            };
            let waited = now.saturating_duration_since(since);
            // Check the owner every CHECK_INTERVAL, and once before giving up, so that timed
            // acquires shorter than CHECK_INTERVAL still recover from a dead owner.
            if waited >= CHECK_INTERVAL || (expired && !checked) {
                checked = true;
                watched = Some((owner, now));
                if self.owner_is_dead(state, me) {
                    match self.state.compare_exchange(
                        state,
                        my_pid | WAITERS,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            self.publish(me);
                            self.recoveries.fetch_add(1, Ordering::Relaxed);
                            return Some(Acquired { owner_died: true });
                        }
                        Err(now) => {
                            state = now;
                            continue;
                        }
                    }
                }
                state = self.state.load(Ordering::Relaxed);
                continue;
            }
            if expired {
                return None;
            }

            // Announce that we are going to sleep.
            if state & WAITERS == 0 {
                if let Err(now) = self.state.compare_exchange_weak(
                    state,
                    state | WAITERS,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    state = now;
                    continue;
                }
                state |= WAITERS;
            }

            let mut timeout = CHECK_INTERVAL - waited;
            if let Some(deadline) = deadline {
                timeout = timeout.min(deadline.saturating_duration_since(now));
            }
            futex::wait(&self.state, state, Some(timeout));
            slept = true;
            state = self.state.load(Ordering::Relaxed);
        }
    }

    /// Whether the process whose pid is in `word` (a locked state word) has died holding the
    /// optex. `false` whenever in doubt: stealing from a live owner would break exclusion.
    #[cold]
    fn owner_is_dead(&self, word: u32, me: ProcessId) -> bool {
        // Acquire: the owner took the optex with a read-modify-write of the previous owner's
        // releasing swap, so this load synchronises with that release, and the load of
        // `owner_start` below sees its clearing to 0 or something newer: never a start time
        // older than the owner in `word`.
        if self.state.load(Ordering::Acquire) != word {
            return false;
        }
        let pid = word & OWNER_MASK;
        let tag = self.owner_start.load(Ordering::Relaxed);
        let published = tag_belongs_to(tag, pid);
        let start = tag & TAG_START_MASK;

        if pid == me.pid & OWNER_MASK {
            // A thread of this process holds it, unless the recorded start time says the owner
            // was an earlier process that had our pid.
            let earlier = published
                && start != 0
                && me.start_time != 0
                && start != me.start_time & TAG_START_MASK;
            return earlier && self.unchanged_after_delay(word, tag);
        }

        match probe(pid) {
            // Nobody (or only a zombie) has the pid: whoever wrote `word` is gone. This holds
            // even before the owner published its start time.
            Probe::Gone => true,
            // Cannot read its start time: assume the owner is alive.
            Probe::Unknown => false,
            Probe::Running { start_time } => {
                if !published || start == 0 || start == start_time & TAG_START_MASK {
                    // Not published yet, unknown, or matching: the owner is alive.
                    return false;
                }
                // The pid belongs to a process that started at another time: the owner died
                // and its pid was reused, unless the recorded start time is about to change
                // (see RECHECK_DELAY).
                self.unchanged_after_delay(word, tag)
                    && match probe(pid) {
                        Probe::Gone => true,
                        Probe::Unknown => false,
                        Probe::Running { start_time } => start != start_time & TAG_START_MASK,
                    }
            }
        }
    }

    /// Waits [`RECHECK_DELAY`] (less if the state word changes) and tells whether the state
    /// word and `owner_start` still hold `word` and `tag`.
    fn unchanged_after_delay(&self, word: u32, tag: u64) -> bool {
        let until = Instant::now() + RECHECK_DELAY;
        loop {
            if self.state.load(Ordering::Acquire) != word {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            futex::wait(&self.state, word, Some(left));
        }
        self.owner_start.load(Ordering::Relaxed) == tag
            && self.state.load(Ordering::Acquire) == word
    }
}

impl Default for Optex {
    /// An unlocked optex, as [`Optex::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!prfdata::Optex::default().is_locked());
    /// ```
    fn default() -> Optex {
        Optex::new()
    }
}

impl fmt::Debug for Optex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.load(Ordering::Relaxed);
        f.debug_struct("Optex")
            .field("owner", &self.owner())
            .field("waiters", &(state & WAITERS != 0))
            .field("recoveries", &self.recoveries())
            .finish()
    }
}

/// The `owner_start` word for `id`.
fn tag_of(id: ProcessId) -> u64 {
    (u64::from(id.pid) << TAG_PID_SHIFT) | (id.start_time & TAG_START_MASK)
}

/// Whether `tag` was published by a process with `pid` (pids are below 2^22, so the 24 bits
/// the tag keeps for them are enough).
fn tag_belongs_to(tag: u64, pid: u32) -> bool {
    tag != 0 && tag >> TAG_PID_SHIFT == u64::from(pid)
}

/// Proof that this thread holds an [`Optex`]; dropping it unlocks.
///
/// Not `Send`: the acquisition belongs to the acquiring process, and the guard stays on the
/// thread that made it. A guard copied into a `fork()`ed child does nothing when the child
/// drops it (the optex stays held by the parent).
///
/// # Examples
///
/// ```
/// let optex = prfdata::Optex::new();
/// let guard = optex.lock();
/// assert!(!guard.owner_died());
/// drop(guard);
/// assert!(!optex.is_locked());
/// ```
///
/// A guard cannot move to another thread:
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// let optex = prfdata::Optex::new();
/// send(optex.lock());
/// ```
#[must_use = "the optex unlocks as soon as the guard is dropped"]
pub struct OptexGuard<'a> {
    optex: &'a Optex,
    /// The pid that acquired: in a forked child it differs from the current pid.
    pid: u32,
    owner_died: bool,
    _not_send: PhantomData<*const ()>,
}

impl<'a> OptexGuard<'a> {
    #[inline]
    fn new(optex: &'a Optex, acquired: Acquired) -> OptexGuard<'a> {
        OptexGuard {
            optex,
            pid: ProcessId::current().pid,
            owner_died: acquired.owner_died,
            _not_send: PhantomData,
        }
    }

    /// `true` if this acquisition took the optex over from an owner process that died while
    /// holding it: the guarded data may be half updated, and the caller must verify or repair
    /// it.
    ///
    /// # Examples
    ///
    /// ```
    /// let optex = prfdata::Optex::new();
    /// let guard = optex.lock();
    /// if guard.owner_died() {
    ///     // check the shared block's invariants, rebuild what is inconsistent
    /// }
    /// ```
    pub fn owner_died(&self) -> bool {
        self.owner_died
    }
}

impl Drop for OptexGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        if ProcessId::current().pid == self.pid {
            // SAFETY: this guard's process acquired the optex (the pid check excludes a forked
            // child's copy of the guard), the acquisition is still in force, and this drop is
            // its only release.
            unsafe { self.optex.unlock_raw() };
        }
    }
}

impl fmt::Debug for OptexGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OptexGuard")
            .field("optex", self.optex)
            .field("owner_died", &self.owner_died)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicI32};
    use std::sync::{mpsc, Arc};

    /// Aborts the test process if it is still alive after `limit`: bounds tests that must call
    /// the unbounded `lock`, so that a deadlock fails CI instead of hanging it.
    struct Watchdog(Option<mpsc::Sender<()>>);

    impl Watchdog {
        fn new(limit: Duration, what: &'static str) -> Watchdog {
            let (tx, rx) = mpsc::channel::<()>();
            std::thread::spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                    eprintln!("watchdog: {what} still running after {limit:?}; aborting");
                    std::process::abort();
                }
            });
            Watchdog(Some(tx))
        }
    }

    impl Drop for Watchdog {
        fn drop(&mut self) {
            // Dropping the sender disconnects the channel and ends the watchdog thread.
            self.0.take();
        }
    }

    /// `try_lock_for` with a generous bound, for tests of recovery.
    fn lock_bounded(optex: &Optex) -> OptexGuard<'_> {
        optex
            .try_lock_for(Duration::from_secs(5))
            .expect("not acquired within 5 s")
    }

    #[test]
    fn new_is_all_zero_and_zero_is_unlocked() {
        // SAFETY: `Optex` is 64 bytes of atomics and plain bytes; reading it as bytes is fine.
        let bytes: [u8; 64] = unsafe { std::mem::transmute(Optex::new()) };
        assert_eq!(bytes, [0; 64]);
        // SAFETY: all-zero bytes are a valid `Optex` (atomics and plain bytes).
        let zeroed: Optex = unsafe { std::mem::zeroed() };
        assert!(!zeroed.is_locked());
        let guard = zeroed.try_lock().unwrap();
        assert!(!guard.owner_died());
    }

    #[test]
    fn lock_records_owner_and_unlock_clears_it() {
        let optex = Optex::new();
        {
            let _guard = optex.lock();
            assert_eq!(optex.owner(), Some(ProcessId::current()));
            assert_eq!(
                optex.state.load(Ordering::Relaxed),
                ProcessId::current().pid
            );
        }
        assert_eq!(optex.state.load(Ordering::Relaxed), 0);
        assert_eq!(optex.owner_start.load(Ordering::Relaxed), 0);
        assert_eq!(optex.owner(), None);
    }

    #[test]
    fn threads_exclude_each_other() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let _watchdog = Watchdog::new(Duration::from_secs(60), "threads_exclude_each_other");
        let optex = Optex::new();
        let inside = AtomicBool::new(false);
        let count = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..ROUNDS {
                        let guard = optex.lock();
                        assert!(!guard.owner_died());
                        assert!(!inside.swap(true, Ordering::Relaxed), "two threads inside");
                        // A non-atomic read-modify-write: lost updates would show.
                        let c = count.load(Ordering::Relaxed);
                        std::hint::spin_loop();
                        count.store(c + 1, Ordering::Relaxed);
                        inside.store(false, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(count.into_inner(), THREADS * ROUNDS);
        assert_eq!(optex.recoveries(), 0);
        assert!(!optex.is_locked());
        assert_eq!(optex.state.load(Ordering::Relaxed) & WAITERS, 0);
    }

    #[test]
    fn a_thread_of_the_owner_process_waits_past_the_check_interval() {
        let _watchdog = Watchdog::new(Duration::from_secs(60), "same-process wait");
        let optex = Arc::new(Optex::new());
        let guard = optex.lock();
        let released = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (optex, released) = (Arc::clone(&optex), Arc::clone(&released));
            std::thread::spawn(move || {
                let g = optex.lock();
                (released.load(Ordering::Acquire), g.owner_died())
            })
        };
        std::thread::sleep(CHECK_INTERVAL * 4);
        released.store(true, Ordering::Release);
        drop(guard);
        let (after_release, died) = waiter.join().unwrap();
        assert!(
            after_release,
            "the waiter stole the optex from a live thread"
        );
        assert!(!died);
        assert_eq!(optex.recoveries(), 0);
    }

    #[test]
    fn try_lock_for_times_out_while_held() {
        let optex = Optex::new();
        let _guard = optex.lock();
        std::thread::scope(|s| {
            s.spawn(|| {
                let start = Instant::now();
                assert!(optex.try_lock_for(Duration::from_millis(150)).is_none());
                let took = start.elapsed();
                assert!(took >= Duration::from_millis(150), "{took:?}");
                assert!(took < Duration::from_secs(2), "{took:?}");
                assert!(optex.try_lock_for(Duration::ZERO).is_none());
                assert!(optex.try_lock().is_none());
            });
        });
    }

    #[test]
    fn a_dead_owner_is_recovered() {
        // A pid no process can have (above PID_MAX_LIMIT), with some start time.
        let dead = ProcessId {
            pid: (1 << 22) + 7,
            start_time: 12345,
        };
        let optex = Optex::new();
        optex.state.store(dead.pid, Ordering::Relaxed);
        optex.owner_start.store(tag_of(dead), Ordering::Relaxed);
        assert_eq!(optex.owner(), Some(dead));
        assert!(optex.try_lock().is_none(), "try_lock does not recover");
        let start = Instant::now();
        let guard = lock_bounded(&optex);
        assert!(guard.owner_died());
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(optex.recoveries(), 1);
        assert_eq!(optex.owner(), Some(ProcessId::current()));
        drop(guard);
        assert!(!lock_bounded(&optex).owner_died());
    }

    #[test]
    fn short_timed_acquires_recover_a_dead_owner() {
        for timeout in [Duration::ZERO, Duration::from_millis(1)] {
            let optex = Optex::new();
            optex.state.store((1 << 22) + 11, Ordering::Relaxed);
            let start = Instant::now();
            let guard = optex.try_lock_for(timeout).expect("no take-over");
            assert!(guard.owner_died());
            assert!(start.elapsed() < Duration::from_secs(1));
        }
    }

    #[test]
    fn short_timed_acquires_leave_a_live_owner_alone() {
        let optex = Optex::new();
        let _guard = optex.lock();
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..100 {
                    assert!(optex.try_lock_for(Duration::ZERO).is_none());
                }
            });
        });
        assert_eq!(optex.recoveries(), 0);
    }

    #[test]
    fn a_dead_owner_that_never_published_is_recovered() {
        let optex = Optex::new();
        optex.state.store((1 << 22) + 9, Ordering::Relaxed);
        let guard = optex.try_lock_for(Duration::from_secs(1)).unwrap();
        assert!(guard.owner_died());
    }

    #[test]
    fn a_reused_owner_pid_is_recovered() {
        // Our own parent's pid is running, but not with this start time.
        let parent = std::os::unix::process::parent_id();
        let real = ProcessId::of(parent).unwrap();
        let impostor = ProcessId {
            start_time: real.start_time + 1,
            ..real
        };
        let optex = Optex::new();
        optex.state.store(parent, Ordering::Relaxed);
        optex.owner_start.store(tag_of(impostor), Ordering::Relaxed);
        let start = Instant::now();
        let guard = optex.try_lock_for(Duration::from_secs(2)).unwrap();
        assert!(guard.owner_died());
        let took = start.elapsed();
        assert!(took >= CHECK_INTERVAL + RECHECK_DELAY, "{took:?}");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn a_live_owner_in_another_process_is_not_robbed() {
        // Our parent is alive with its real start time, so the optex stays its own.
        let parent = ProcessId::of(std::os::unix::process::parent_id()).unwrap();
        let optex = Optex::new();
        optex.state.store(parent.pid, Ordering::Relaxed);
        optex.owner_start.store(tag_of(parent), Ordering::Relaxed);
        assert!(optex.try_lock_for(CHECK_INTERVAL * 3).is_none());
        // Nor while the owner has not published its start time yet: the record is cleared...
        optex.owner_start.store(0, Ordering::Relaxed);
        assert!(optex.try_lock_for(CHECK_INTERVAL * 3).is_none());
        // ...or still names another (here: dead) process that held the optex before.
        let previous = ProcessId {
            pid: (1 << 22) + 3,
            start_time: 99,
        };
        optex.owner_start.store(tag_of(previous), Ordering::Relaxed);
        assert!(optex.try_lock_for(CHECK_INTERVAL * 3).is_none());
        assert!(optex.try_lock_for(Duration::ZERO).is_none());
        assert_eq!(optex.recoveries(), 0);
    }

    #[test]
    fn an_earlier_process_with_our_pid_is_recovered() {
        let me = ProcessId::current();
        let earlier = ProcessId {
            start_time: me.start_time - 1,
            ..me
        };
        let optex = Optex::new();
        optex.state.store(me.pid | WAITERS, Ordering::Relaxed);
        optex.owner_start.store(tag_of(earlier), Ordering::Relaxed);
        let guard = optex.try_lock_for(Duration::from_secs(1)).unwrap();
        assert!(guard.owner_died());
    }

    #[test]
    fn waiters_bit_survives_a_sleeper_acquiring() {
        // Two threads sleep on the optex. The one that gets it first must keep WAITERS set, or
        // its unlock would not wake the other, which would then only notice at its next
        // check-interval timeout.
        let _watchdog = Watchdog::new(Duration::from_secs(60), "waiters bit");
        let optex = Arc::new(Optex::new());
        let guard = optex.lock();
        let tids = Arc::new([AtomicI32::new(0), AtomicI32::new(0)]);
        let order = Arc::new(AtomicU32::new(0));
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let (optex, tids, order) =
                    (Arc::clone(&optex), Arc::clone(&tids), Arc::clone(&order));
                std::thread::spawn(move || {
                    tids[i].store(
                        rustix::thread::gettid().as_raw_nonzero().get(),
                        Ordering::Release,
                    );
                    let g = optex.lock();
                    let waiters = optex.state.load(Ordering::Relaxed) & WAITERS != 0;
                    let first = order.fetch_add(1, Ordering::Relaxed) == 0;
                    drop(g);
                    (first, waiters)
                })
            })
            .collect();
        // Release only once both threads sleep in the kernel.
        let deadline = Instant::now() + Duration::from_secs(20);
        for tid in tids.iter() {
            loop {
                assert!(Instant::now() < deadline, "waiters never went to sleep");
                let tid = tid.load(Ordering::Acquire);
                if tid != 0 && thread_state(tid) == Some(b'S') {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        assert_ne!(optex.state.load(Ordering::Relaxed) & WAITERS, 0);
        drop(guard);
        for h in handles {
            let (first, waiters) = h.join().unwrap();
            if first {
                assert!(
                    waiters,
                    "the first sleeper to acquire dropped the WAITERS bit"
                );
            }
        }
        assert_eq!(optex.state.load(Ordering::Relaxed), 0);
    }

    /// The scheduler state (`S` sleeping, `R` running, ...) of one of our threads.
    fn thread_state(tid: i32) -> Option<u8> {
        let bytes = std::fs::read(format!("/proc/self/task/{tid}/stat")).ok()?;
        crate::sys::process::parse_stat(&bytes).map(|s| s.state)
    }

    #[test]
    fn a_guard_dropped_in_a_forked_child_does_not_unlock() {
        let optex = Optex::new();
        let guard = optex.lock();
        // SAFETY: the child only drops the guard (an atomic load of the cached pid, which the
        // fork handler reset, and a `/proc` read), checks the optex and leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            drop(guard);
            let ok = optex.is_locked();
            // SAFETY: `_exit` has no preconditions.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        let mut status = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            // SAFETY: `status` is a valid out-pointer and `pid` our child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            assert!(r >= 0);
            if r == pid {
                break;
            }
            assert!(Instant::now() < deadline, "forked child hangs");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert!(optex.is_locked());
        drop(guard);
        assert!(!optex.is_locked());
    }
}

//! The optex: a lock that lives in shared memory and excludes threads of several processes.
//!
//! Richter's CPrfData guards its shared block with his `COptex` (MSJ, January 1998 Win32 Q&A):
//!
//! > "Since I want very high-speed mutual exclusive access to the shared memory buffer from
//! > threads in multiple processes, I decided to synchronize access to the shared memory buffer
//! > using my COptex class" — Richter, MSJ, August 1998, *Synchronizing Access to the Counter
//! > Values*.
//!
//! An optex is a word in the shared block: taking a free optex is one compare-and-exchange in
//! user space, and only contention goes to the kernel (a futex on Linux). Unlike a critical
//! section it works across processes; unlike a kernel mutex it costs no system call when free.
//!
//! Because the processes that share it are independent programs, one of them may die while it
//! holds the optex. Every waiter therefore wakes up now and then ([`Optex::CHECK_INTERVAL`]) and asks
//! whether the owner is still running ([`ProcessId::is_alive`]); if it is not, the waiter takes
//! the optex over and its guard says so ([`OptexGuard::owner_died`]), so that it can check and
//! repair whatever the dead owner was changing.
//!
//! A pid names a process only in its own pid namespace: a waiter in another (a container of its
//! own) would find no such process and take a live owner's optex. So the optex of a block is
//! taken by its processes with another death check, the presence locks they hold on the block's
//! file, which the kernel keeps the same for every namespace (`crate::block::presence`); the
//! `/proc` check of this page is the one a bare `Optex` uses.
//!
//! # One word names the owner
//!
//! A pid alone does not name the owner for long (a dead owner's pid goes to a later process), so
//! the owner is recorded as its pid *and* a tag of its start time ([`ProcessId`]). Both live in
//! one 64-bit state word, which the owner writes in the compare-and-exchange that takes the
//! optex and clears in the swap that releases it. Locking is therefore one atomic operation and
//! unlocking one more, as for an ordinary mutex, and the word never pairs one process's pid with
//! another's start time: whoever reads a locked word reads the full identity of the process
//! that performed that acquisition.
//!
//! That makes the death check a single look. A waiter reads the word, then `/proc/<pid>/stat`
//! for its pid: if no process (or only a zombie) has the pid, the owner is gone; if a process
//! has it but started at a time with another tag, that process is not the owner, and since no
//! two live processes share a pid, the owner has exited and its pid was reused. Either way the
//! waiter takes over with a compare-and-exchange that expects the very word it checked, so if
//! the owner released the optex in between, the take-over fails and the waiter starts again.
//!
//! (Layout version 1 kept the start time in a separate word that the owner stored right after
//! its compare-and-exchange and cleared right before its swap. Waiters could then see a new
//! owner whose start time was not written yet, or a previous owner's start time beside a new
//! owner's pid, and had to re-check a mismatch after a delay; an owner that died between the
//! two steps could not always be recovered. With one word none of that can happen.)
//!
//! # Layout
//!
//! ```text
//!  offset  size  field        content
//!  ------  ----  -----------  --------------------------------------------------------------
//!       0     8  state        owner pid, WAITERS bit, owner start tag (table at the constants)
//!       8     4  recoveries   number of take-overs from a dead owner (wrapping)
//!      12     4  sleepers     threads in a futex wait on the state word now (a hint)
//!      16    48  reserved     zero
//!
//!  state, as the little-endian word it is in memory:
//!
//!   byte  0         3 4         7
//!        +-----------+-----------+
//!        | pid|WAIT. | start tag |
//!        +-----------+-----------+
//!         ^ futex word: waiters sleep on these 32 bits
//! ```
//!
//! All zero is an unlocked optex, so a zero-filled block needs no initialisation.
//!
//! # Contention
//!
//! Taking a free optex and releasing one nobody waits for are one atomic instruction each, and
//! no system call. A locker that finds the optex held spins a little ([`Optex::SPIN_LIMIT`] turns of
//! crossbeam-utils' `Backoff::spin`, an exponential backoff), reading the word once per turn
//! and trying the compare-and-exchange only when it reads the optex free; it sleeps in the
//! kernel (a futex wait) only when the spin ends, when it loses the race for a release to
//! another locker, or at once when others already sleep. Only a sleeper sets the WAITERS bit,
//! and only an unlock that finds it set makes a system call (a futex wake). A sleeper that
//! acquires keeps WAITERS set only while others still sleep (the `sleepers` count), so the last
//! one does not leave a wake behind that nobody needs.
//!
//! The spinning is deliberately short and gives up after one lost race: two processes that lock
//! in a tight loop would otherwise hand the optex back and forth on every iteration, paying a
//! cache-line transfer each time, where letting the loser sleep lets the winner run its
//! critical sections from its own cache (the `lock/*_two_processes` benchmarks). A woken
//! sleeper spins again before it sleeps once more, so it competes for the next release.

use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, offset_of, size_of};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

use crate::process::{probe, start_tag, Probe, ProcessId};
use crate::sys::futex;

// The state word, `Optex::state` (a `u64`; the futex waits on bits 0..32):
//
// | bits   | name        | meaning                                                          |
// |--------|-------------|------------------------------------------------------------------|
// | 0..30  | OWNER_MASK  | pid of the owning process; 0 = unlocked. Linux pids are below    |
// |        |             | PID_MAX_LIMIT = 2^22 (include/linux/threads.h), so 30 bits fit.  |
// | 30     | WAITERS     | some thread may be asleep in a futex wait on this word: unlock   |
// |        |             | must wake one.                                                   |
// | 31     | (reserved)  | always 0; unlock clears it.                                      |
// | 32..64 | TAG_SHIFT   | the owner's start tag, `start_tag(owner.start_time)`: the low 32 |
// |        |             | bits of its start time, 1 if those are 0; 0 = unknown (the owner |
// |        |             | could not read its start time) or unlocked.                      |
//
// Free is 0 (unlock swaps in 0; a free word with WAITERS set is tolerated). Locked is
// `pid | tag << 32`, plus WAITERS once someone sleeps: written whole by the acquiring
// compare-and-exchange, so the pid and the tag always belong to the same process.

/// Bits of the state word that hold the owner's pid (0 = unlocked).
const OWNER_MASK: u64 = (1 << 30) - 1;
/// Bit of the state word set while some thread may sleep on it.
const WAITERS: u64 = 1 << 30;
/// How long a locker has waited on the owner of the held word `state` at `now`, `watched` being
/// the owner it waits on and since when. The whole owner identity counts: a new owner with the
/// same pid (a reused pid) restarts the interval too.
fn waited_on(watched: &mut Option<(u64, Instant)>, state: u64, now: Instant) -> Duration {
    let owner = state & !WAITERS;
    let since = match *watched {
        Some((watching, since)) if watching == owner => since,
        _ => watched.insert((owner, now)).1,
    };
    now.saturating_duration_since(since)
}

/// Shift of the owner's start tag in the state word (its high half).
const TAG_SHIFT: u32 = 32;

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
/// [`Optex::CHECK_INTERVAL`]. The owner is a *process*: a thread that ends while holding the optex
/// (having leaked its guard) leaves it locked for as long as its process lives, and a process
/// that calls `exec` while holding it keeps it (same pid, same start time).
///
/// The start time is kept as a 32-bit tag (its low 32 bits). Two corners are not recovered,
/// and the optex then stays locked until the process that now has the dead owner's pid exits:
/// an owner that could not read its own start time (its `/proc` unreadable: only a pid that no
/// process has any more tells that it died), and a dead owner whose pid went to a process that
/// started a multiple of 2^32 clock ticks (497 days at 100 Hz) before or after it.
///
/// # Shared memory
///
/// `Optex` is `#[repr(C, align(64))]`, exactly 64 bytes (one cache line), and valid when all
/// its bytes are zero. Put it at a 64-aligned offset in a `MAP_SHARED` mapping and reach it with
/// [`Optex::from_ptr`]. All processes must share one pid namespace: the owner's death is judged
/// by its pid (a block's processes judge it by their locks on the block's file instead, which
/// holds across pid namespaces).
///
/// # Examples
///
/// Two mappings of one file stand for two processes:
///
/// ```
/// use memmap2::MmapRaw;
/// use prfdata::Optex;
///
/// let file = tempfile::tempfile()?; // a file without a name: gone once closed
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
/// # Ok::<(), std::io::Error>(())
/// ```
#[repr(C, align(64))]
pub struct Optex {
    /// Owner pid, WAITERS bit and owner start tag; see the table above [`OWNER_MASK`].
    state: AtomicU64,
    /// Take-overs from a dead owner, for diagnostics.
    recoveries: AtomicU32,
    /// Threads between the start and the end of a futex wait on `state` (wrapping). Only a
    /// hint: a sleeper that acquires keeps WAITERS set when it is nonzero. A process killed in
    /// its wait leaves it too high, which costs wakes nobody needs, never a missed one.
    sleepers: AtomicU32,
    /// Zero; room for later fields.
    _reserved: [u8; 48],
}

const _: () = assert!(size_of::<Optex>() == 64);
const _: () = assert!(align_of::<Optex>() == 64);
const _: () = assert!(offset_of!(Optex, state) == 0);
const _: () = assert!(offset_of!(Optex, recoveries) == 8);
const _: () = assert!(offset_of!(Optex, sleepers) == 12);
const _: () = assert!(offset_of!(Optex, _reserved) == 16);
// The futex waits on the state word's first four bytes, which hold OWNER_MASK and WAITERS only
// on a little-endian target (see `sys::futex::low_half`).
const _: () = assert!(cfg!(target_endian = "little"));
const _: () = assert!((OWNER_MASK | WAITERS) >> TAG_SHIFT == 0);
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
    /// Busy-wait turns before a locker that finds the optex held sleeps in the kernel: turn `n` is
    /// crossbeam-utils' `Backoff::spin`, `1 << n` spin-loop hints (1, 2, 4, ... 32: 63 in all), then
    /// the word is read once.
    ///
    /// Backoff's own limit of spinning is also 6, but the optex counts its turns itself: its
    /// `is_completed` also counts yields, and the optex never yields. Six turns are long enough to ride out a
    /// short critical section on another core, a few microseconds at most, and with the word read
    /// only six times, too few to slow its owner down. Unlike parking_lot's `SpinWait` and
    /// crossbeam's `snooze`, no turn yields: `sched_yield` is a system call that either returns at
    /// once (an idle machine) or gives the core away for a whole time slice (a busy one), and
    /// sleeping on the futex is cheaper than both. A locker skips spinning altogether when others
    /// already sleep, and stops at the first release it loses to another locker.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata::Optex::SPIN_LIMIT, 6);
    /// ```
    pub const SPIN_LIMIT: u32 = 6;

    /// How long a waiter sleeps on one owner before it checks whether that owner's process died.
    ///
    /// Bounds the time to recover from a dead owner to about this, well under the one second that a
    /// provider's collect call can afford; each check reads one `/proc/<pid>/stat`, which at 20
    /// checks a second per waiter costs nothing measurable.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::Optex;
    /// use std::time::Duration;
    ///
    /// assert!(Optex::CHECK_INTERVAL < Duration::from_secs(1));
    /// ```
    pub const CHECK_INTERVAL: Duration = Duration::from_millis(50);

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
            state: AtomicU64::new(0),
            recoveries: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
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
    /// owner's optex.
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
    /// The optex records only a 32-bit tag of the owner's start time. When the owner is this
    /// process, or the process that has the owner's pid now matches the tag (one read of
    /// `/proc/<pid>/stat`), `start_time` is that process's full start time. Otherwise the owner
    /// is dead and `start_time` is the tag (the low 32 bits of the dead owner's start time), or
    /// 0 if the owner could not read its own start time.
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
        let state = self.state.load(Ordering::Relaxed);
        let pid = owner_pid(state);
        if pid == 0 {
            return None;
        }
        let tag = owner_tag(state);
        let me = ProcessId::current();
        if pid == me.pid && tag == start_tag(me.start_time) {
            return Some(me);
        }
        let start_time = match probe(pid) {
            Probe::Running { start_time } if tag != 0 && start_tag(start_time) == tag => start_time,
            _ => u64::from(tag),
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
        match self.lock_slow(me, None, &ByPid) {
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
        let new = owner_word(me) | (state & WAITERS);
        self.state
            .compare_exchange(state, new, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Acquired { owner_died: false })
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
        self.lock_slow(me, Instant::now().checked_add(timeout), &ByPid)
    }

    /// [`lock`](Optex::lock), asking `check` whether an owner has died.
    pub(crate) fn lock_checked(&self, check: &dyn OwnerCheck) -> OptexGuard<'_> {
        let me = ProcessId::current();
        if self.try_acquire_free(me) {
            return OptexGuard::new(self, Acquired { owner_died: false });
        }
        match self.lock_slow(me, None, check) {
            Some(acquired) => OptexGuard::new(self, acquired),
            None => unreachable!("a wait without deadline only ends by acquiring"),
        }
    }

    /// [`try_lock_for`](Optex::try_lock_for), asking `check` whether an owner has died.
    pub(crate) fn try_lock_for_checked(
        &self,
        timeout: Duration,
        check: &dyn OwnerCheck,
    ) -> Option<OptexGuard<'_>> {
        let me = ProcessId::current();
        if self.try_acquire_free(me) {
            return Some(OptexGuard::new(self, Acquired { owner_died: false }));
        }
        self.lock_slow(me, Instant::now().checked_add(timeout), check)
            .map(|a| OptexGuard::new(self, a))
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
        // One swap clears the owner's pid and tag together.
        let prev = self.state.swap(0, Ordering::Release);
        if prev & WAITERS != 0 {
            self.wake_one();
        }
    }

    /// The fast path: one compare-and-exchange from free (0) to our pid and start tag.
    #[inline]
    fn try_acquire_free(&self, me: ProcessId) -> bool {
        self.state
            .compare_exchange(0, owner_word(me), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[cold]
    fn wake_one(&self) {
        futex::wake_low(&self.state, 1);
    }

    /// Spins, then sleeps until the optex is free or its owner is found dead; gives up at
    /// `deadline`.
    #[cold]
    fn lock_slow(
        &self,
        me: ProcessId,
        deadline: Option<Instant>,
        check: &dyn OwnerCheck,
    ) -> Option<Acquired> {
        let mine = owner_word(me);
        // Spin turns done since this call began or this thread last woke (see Optex::SPIN_LIMIT): the
        // optex counts its own, since `Backoff::is_completed` also counts yields.
        let mut spins = 0u32;
        let backoff = Backoff::new();
        // Whether this thread has slept: then others may sleep too, and the WAITERS bit must
        // survive our acquisition while they do, so that our unlock wakes one (Drepper,
        // "Futexes Are Tricky", mutex 3, which takes the lock as "locked, maybe waiters" after
        // sleeping; here only while `sleepers` says so).
        let mut slept = false;
        // The owner (state word without WAITERS) this thread is waiting on, and since when.
        let mut watched: Option<(u64, Instant)> = None;
        // Whether this call has checked an owner's liveness yet.
        let mut checked = false;
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state & OWNER_MASK == 0 {
                match self.take_free(state, mine, slept) {
                    Ok(()) => return Some(Acquired { owner_died: false }),
                    // Another locker took the release: leave it the optex for a while rather
                    // than fight for the next one (see "Contention" above).
                    Err(now) if now & OWNER_MASK != 0 => (spins, state) = (Optex::SPIN_LIMIT, now),
                    Err(now) => state = now,
                }
                continue;
            }
            // Held. Spin while nobody sleeps, reading the word once per turn.
            if state & WAITERS == 0 && spins < Optex::SPIN_LIMIT {
                backoff.spin();
                spins += 1;
                state = self.state.load(Ordering::Acquire);
                continue;
            }
            let now = Instant::now();
            let expired = deadline.is_some_and(|d| now >= d);
            let waited = waited_on(&mut watched, state, now);
            // Check the owner every Optex::CHECK_INTERVAL, and once before giving up, so that timed
            // acquires shorter than Optex::CHECK_INTERVAL still recover from a dead owner.
            if waited >= Optex::CHECK_INTERVAL || (expired && !checked) {
                (checked, watched) = (true, Some((state & !WAITERS, now)));
                match self.take_from_dead(state, me, check) {
                    Ok(acquired) => return Some(acquired),
                    Err(now) => state = now,
                }
                continue;
            }
            if expired {
                // We may have been woken by an unlock that meant to hand the optex to a
                // sleeper: pass the wake on to another one rather than leave it asleep until
                // its check interval.
                if slept && self.others_sleep() {
                    self.wake_one();
                }
                return None;
            }
            let mut timeout = Optex::CHECK_INTERVAL - waited;
            if let Some(deadline) = deadline {
                timeout = timeout.min(deadline.saturating_duration_since(now));
            }
            if let Err(now) = self.sleep(state, timeout) {
                state = now;
                continue;
            }
            slept = true;
            // Woken (or timed out): spin again for the release that woke us before sleeping on.
            spins = 0;
            backoff.reset();
            state = self.state.load(Ordering::Acquire);
        }
    }

    /// Takes the free word `state` for `mine`; a thread that slept keeps WAITERS set while others
    /// sleep. `Err` with the word found instead.
    fn take_free(&self, state: u64, mine: u64, slept: bool) -> Result<(), u64> {
        let keep = if slept && self.others_sleep() {
            WAITERS
        } else {
            state & WAITERS
        };
        self.state
            .compare_exchange_weak(state, mine | keep, Ordering::Acquire, Ordering::Acquire)
            .map(drop)
    }

    /// Takes the optex over if its owner (in `state`) is found dead: `Err` with the word to look
    /// at again otherwise.
    #[cold]
    fn take_from_dead(
        &self,
        state: u64,
        me: ProcessId,
        check: &dyn OwnerCheck,
    ) -> Result<Acquired, u64> {
        if !self.owner_is_dead(state, me, check) {
            return Err(self.state.load(Ordering::Acquire));
        }
        // Succeeds only if the word still names the owner found dead, an identity no live
        // process can put back (except with tag 0: a process that got the dead owner's pid
        // within microseconds and could not read its own start time).
        let mine = owner_word(me) | WAITERS;
        self.state
            .compare_exchange(state, mine, Ordering::Acquire, Ordering::Relaxed)?;
        self.recoveries.fetch_add(1, Ordering::Relaxed);
        Ok(Acquired { owner_died: true })
    }

    /// Sleeps on the held word `state` for at most `timeout`, with WAITERS set and counted
    /// among the sleepers; `Err` with the word if it changed before WAITERS could be set.
    #[cold]
    fn sleep(&self, mut state: u64, timeout: Duration) -> Result<(), u64> {
        // Announce that we are going to sleep: count ourselves first, so that a sleeper that
        // acquires after the unlock our WAITERS bit causes sees the count (SeqCst here and in
        // `others_sleep`; on x86-64 still one `lock xadd` and one plain load). The count is a
        // hint: the futex word alone decides whether we sleep.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if state & WAITERS == 0 {
            if let Err(now) = self.state.compare_exchange_weak(
                state,
                state | WAITERS,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                self.sleepers.fetch_sub(1, Ordering::Relaxed);
                return Err(now);
            }
            state |= WAITERS;
        }
        // The kernel compares only the low half (pid and WAITERS): a new owner with the same
        // pid and WAITERS lets us sleep on, but its unlock wakes one since WAITERS is set, as
        // with a 32-bit word; the timeout bounds the sleep in any case.
        futex::wait_low(&self.state, state as u32, Some(timeout));
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    /// Whether some other thread may be asleep on the state word, for a sleeper that is about
    /// to acquire or give up (its own wait has ended and is no longer counted).
    #[inline]
    fn others_sleep(&self) -> bool {
        self.sleepers.load(Ordering::SeqCst) != 0
    }

    /// Whether the process named by `word` (a locked state word) has died holding the optex,
    /// as `check` tells. `false` whenever in doubt: stealing from a live owner would break
    /// exclusion.
    ///
    /// The acquiring compare-and-exchange wrote the pid and the start tag in `word` together,
    /// both from the acquiring process's own [`ProcessId`], so they name one process: the
    /// owner. No in-between state exists in which a live owner's pid sits beside another
    /// process's tag (layout version 1 had one, and needed a delayed re-check to rule it out).
    /// If `word` changes between this check and the caller's compare-and-exchange, that fails:
    /// only the owner found dead is ever taken over.
    #[cold]
    fn owner_is_dead(&self, word: u64, me: ProcessId, check: &dyn OwnerCheck) -> bool {
        // The owner released or was replaced meanwhile: nothing to check (and no `/proc` read).
        if self.state.load(Ordering::Relaxed) != word {
            return false;
        }
        let pid = owner_pid(word);
        let tag = owner_tag(word);
        if pid == me.pid {
            // This process has the pid: the owner is one of our threads, unless the tag says it
            // was an earlier process that had our pid (and so has exited). A tag of 0 (unknown)
            // on either side proves nothing.
            let mine = start_tag(me.start_time);
            if tag == 0 || mine == 0 || tag == mine {
                return false;
            }
        }
        check.is_dead(pid, tag)
    }
}

/// Who tells whether the process a locked state word names, by its pid and start tag, has
/// died: `/proc` by default ([`ByPid`]), for processes that share one pid namespace. The
/// processes of a block ask the locks each of them holds on the block's file instead, which
/// tell the same across pid namespaces (`crate::block::presence`).
pub(crate) trait OwnerCheck {
    /// `true` only if the owner (`pid`, as the namespace it locked in numbers it, and the tag
    /// of its start time) is certainly gone; `false` whenever in doubt.
    fn is_dead(&self, pid: u32, tag: u32) -> bool;
}

/// The owner is the process that has its pid in this pid namespace, if its start tag matches
/// ([`probe`]: one read of `/proc/<pid>/stat`). Pids are unique among live processes, so a
/// process with the pid and another tag is not the owner, whose pid it has: the owner is gone.
pub(crate) struct ByPid;

impl OwnerCheck for ByPid {
    fn is_dead(&self, pid: u32, tag: u32) -> bool {
        match probe(pid) {
            // Nobody (or only a zombie) has the pid: whoever wrote the word is gone.
            Probe::Gone => true,
            // Cannot read its start time: assume the owner is alive.
            Probe::Unknown => false,
            // Alive if the tags match, or if either is unknown; otherwise the pid was reused.
            Probe::Running { start_time } => {
                let now = start_tag(start_time);
                tag != 0 && now != 0 && tag != now
            }
        }
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
        // The raw word, without `owner`'s `/proc` read: formatting does no I/O.
        let state = self.state.load(Ordering::Relaxed);
        f.debug_struct("Optex")
            .field("owner_pid", &owner_pid(state))
            .field("owner_start_tag", &owner_tag(state))
            .field("waiters", &(state & WAITERS != 0))
            .field("sleepers", &self.sleepers.load(Ordering::Relaxed))
            .field("recoveries", &self.recoveries())
            .finish()
    }
}

/// The locked state word that names `me` (without WAITERS).
#[inline]
fn owner_word(me: ProcessId) -> u64 {
    debug_assert!(
        u64::from(me.pid) & !OWNER_MASK == 0,
        "pid {} above 2^30",
        me.pid
    );
    (u64::from(me.pid) & OWNER_MASK) | (u64::from(start_tag(me.start_time)) << TAG_SHIFT)
}

/// The owner's pid in a state word (0 = unlocked).
#[inline]
fn owner_pid(word: u64) -> u32 {
    (word & OWNER_MASK) as u32
}

/// The owner's start tag in a state word (0 = unknown or unlocked).
#[inline]
fn owner_tag(word: u64) -> u32 {
    (word >> TAG_SHIFT) as u32
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
            let me = ProcessId::current();
            assert_eq!(optex.owner(), Some(me));
            assert_eq!(
                optex.state.load(Ordering::Relaxed),
                u64::from(me.pid) | u64::from(start_tag(me.start_time)) << 32
            );
        }
        assert_eq!(optex.state.load(Ordering::Relaxed), 0);
        assert_eq!(optex.owner(), None);
    }

    #[test]
    fn threads_exclude_each_other() {
        const THREADS: usize = 4;
        const TURNS: usize = 20_000;
        let _watchdog = Watchdog::new(Duration::from_secs(60), "threads_exclude_each_other");
        let optex = Optex::new();
        let inside = AtomicBool::new(false);
        let count = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..TURNS {
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
        assert_eq!(count.into_inner(), THREADS * TURNS);
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
        std::thread::sleep(Optex::CHECK_INTERVAL * 4);
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
        optex.state.store(owner_word(dead), Ordering::Relaxed);
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
    fn a_dead_owner_with_an_unknown_start_time_is_recovered() {
        let optex = Optex::new();
        optex.state.store((1 << 22) + 9, Ordering::Relaxed);
        assert_eq!(
            optex.owner(),
            Some(ProcessId {
                pid: (1 << 22) + 9,
                start_time: 0
            })
        );
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
        optex.state.store(owner_word(impostor), Ordering::Relaxed);
        // The dead owner's start time is only known as its tag.
        assert_eq!(
            optex.owner(),
            Some(ProcessId {
                start_time: u64::from(start_tag(impostor.start_time)),
                ..impostor
            })
        );
        let start = Instant::now();
        let guard = optex.try_lock_for(Duration::from_secs(2)).unwrap();
        assert!(guard.owner_died());
        let took = start.elapsed();
        assert!(took >= Optex::CHECK_INTERVAL, "{took:?}");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn a_reused_owner_pid_is_found_dead_at_the_first_look() {
        // Layout version 1 believed a start-time mismatch only after a 20 ms re-check. The state
        // word now names the owner whole, so one look decides, and a zero timeout takes over.
        let parent = std::os::unix::process::parent_id();
        let real = ProcessId::of(parent).unwrap();
        let impostor = ProcessId {
            start_time: real.start_time + 1,
            ..real
        };
        let me = ProcessId::current();
        let optex = Optex::new();
        optex.state.store(owner_word(real), Ordering::Relaxed);
        assert!(!optex.owner_is_dead(owner_word(real), me, &ByPid));
        let word = owner_word(impostor);
        optex.state.store(word, Ordering::Relaxed);
        assert!(optex.owner_is_dead(word, me, &ByPid));
        let start = Instant::now();
        let guard = optex.try_lock_for(Duration::ZERO).expect("no take-over");
        assert!(guard.owner_died());
        let took = start.elapsed();
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn a_live_owner_in_another_process_is_not_robbed() {
        // Our parent is alive with its real start time, so the optex stays its own.
        let parent = ProcessId::of(std::os::unix::process::parent_id()).unwrap();
        let optex = Optex::new();
        optex.state.store(owner_word(parent), Ordering::Relaxed);
        assert_eq!(optex.owner(), Some(parent));
        assert!(optex.try_lock_for(Optex::CHECK_INTERVAL * 3).is_none());
        assert!(optex.try_lock_for(Duration::ZERO).is_none());
        // Nor when the owner could not read its own start time (tag 0): only its pid counts.
        optex.state.store(u64::from(parent.pid), Ordering::Relaxed);
        assert!(optex.try_lock_for(Optex::CHECK_INTERVAL * 3).is_none());
        // Nor with WAITERS set beside the owner.
        optex
            .state
            .store(owner_word(parent) | WAITERS, Ordering::Relaxed);
        assert!(optex.try_lock_for(Optex::CHECK_INTERVAL * 3).is_none());
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
        optex
            .state
            .store(owner_word(earlier) | WAITERS, Ordering::Relaxed);
        let guard = optex.try_lock_for(Duration::from_secs(1)).unwrap();
        assert!(guard.owner_died());
        // The take-over keeps WAITERS, so that our unlock wakes whoever slept.
        assert_eq!(
            optex.state.load(Ordering::Relaxed),
            owner_word(me) | WAITERS
        );
    }

    #[test]
    fn our_pid_with_an_unknown_start_time_is_ours() {
        // Tag 0: a thread of ours that could not read the start time (or one we cannot tell
        // from us): never taken over.
        let me = ProcessId::current();
        let optex = Optex::new();
        optex.state.store(u64::from(me.pid), Ordering::Relaxed);
        std::thread::scope(|s| {
            s.spawn(|| assert!(optex.try_lock_for(Optex::CHECK_INTERVAL * 2).is_none()));
        });
        assert_eq!(optex.recoveries(), 0);
    }

    #[test]
    fn start_tags() {
        assert_eq!(start_tag(0), 0, "unknown stays unknown");
        assert_eq!(start_tag(5), 5);
        assert_eq!(start_tag(u64::from(u32::MAX)), u32::MAX);
        assert_eq!(start_tag(1 << 32), 1, "a known start time never has tag 0");
        assert_eq!(start_tag((7 << 32) | 5), 5);
    }

    #[test]
    fn the_state_word_layout() {
        let me = ProcessId {
            pid: (1 << 22) - 1,
            start_time: 0x1234_5678_9abc,
        };
        let word = owner_word(me);
        assert_eq!(word, 0x5678_9abc_0000_0000 | ((1 << 22) - 1));
        assert_eq!(owner_pid(word), me.pid);
        assert_eq!(owner_tag(word), 0x5678_9abc);
        assert_eq!(owner_pid(word | WAITERS), me.pid);
        assert_eq!(owner_tag(word | WAITERS), 0x5678_9abc);
        // The futex word, the first four bytes in memory, holds the pid and WAITERS only.
        let bytes = (word | WAITERS).to_ne_bytes();
        assert_eq!(
            u32::from_ne_bytes(bytes[..4].try_into().unwrap()),
            me.pid | (1 << 30)
        );
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

    #[test]
    fn a_lone_sleeper_acquires_without_the_waiters_bit() {
        // One thread sleeps on the optex; when it acquires nobody else sleeps, so it must not
        // keep WAITERS: its unlock would make a futex wake that wakes nobody. (Before the
        // `sleepers` count, every sleeper that acquired kept the bit.)
        let _watchdog = Watchdog::new(Duration::from_secs(60), "lone sleeper");
        let optex = Arc::new(Optex::new());
        let guard = optex.lock();
        let tid = Arc::new(AtomicI32::new(0));
        let handle = {
            let (optex, tid) = (Arc::clone(&optex), Arc::clone(&tid));
            std::thread::spawn(move || {
                tid.store(
                    rustix::thread::gettid().as_raw_nonzero().get(),
                    Ordering::Release,
                );
                let g = optex.lock();
                let state = optex.state.load(Ordering::Relaxed);
                drop(g);
                state
            })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < deadline, "the waiter never went to sleep");
            let tid = tid.load(Ordering::Acquire);
            if tid != 0
                && thread_state(tid) == Some(b'S')
                && optex.sleepers.load(Ordering::Relaxed) == 1
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_ne!(optex.state.load(Ordering::Relaxed) & WAITERS, 0);
        drop(guard);
        let state = handle.join().unwrap();
        assert_eq!(state & OWNER_MASK, u64::from(ProcessId::current().pid));
        assert_eq!(state & WAITERS, 0, "a lone sleeper kept the WAITERS bit");
        assert_eq!(optex.sleepers.load(Ordering::Relaxed), 0);
        assert_eq!(optex.state.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn contention_leaves_the_optex_free_with_no_sleepers_counted() {
        // Four threads hammer one optex with a non-atomic critical section: exclusion holds,
        // and afterwards the word is free and the sleeper count back at zero.
        let _watchdog = Watchdog::new(Duration::from_secs(120), "contention");
        let optex = Optex::new();
        let counter = std::cell::UnsafeCell::new(0u64);
        struct Shared<'a>(&'a std::cell::UnsafeCell<u64>);
        // SAFETY: the cell is only touched under the optex.
        unsafe impl Sync for Shared<'_> {}
        let shared = Shared(&counter);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let shared = &shared;
                    for i in 0..20_000u32 {
                        let _g = optex.lock();
                        // SAFETY: the optex excludes the other threads.
                        unsafe { *shared.0.get() += 1 };
                        if i % 1000 == 0 {
                            // A longer section now and then, so that some lockers sleep.
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    }
                });
            }
        });
        assert_eq!(counter.into_inner(), 80_000);
        assert_eq!(optex.state.load(Ordering::Relaxed), 0);
        assert_eq!(optex.sleepers.load(Ordering::Relaxed), 0);
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

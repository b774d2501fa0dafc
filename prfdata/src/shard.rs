//! Sharded counters: one counter's value spread over per-thread cache-line slots, so that
//! threads updating it at once never share a line and need no locked instruction.
//!
//! A counter declared `sharded: true` ([`Source::Sharded`](crate::map::Source::Sharded)) has,
//! after its counter block, [`SHARD_SLOTS`](crate::layout::SHARD_SLOTS) shard lines of
//! [`CACHE_LINE`](crate::layout::CACHE_LINE) bytes (see [`crate::layout`]); its value is the
//! counter block's word plus the counter's word in every line, which readers add up at each
//! read (the provider writes the sum into the `PERF_COUNTER_BLOCK`; `_Total`, sums and the
//! retired accumulator use it).
//!
//! ```text
//!  object's shard owners   [pid | start tag] × SHARD_SLOTS   (0: free)   claimed with a CAS
//!  each counter block      value (fetch_add by threads without a slot)
//!                          line 0   line 1   ...   line 15   one writer thread each
//! ```
//!
//! Slots belong to the object, for every instance: a thread claims one the first time it asks
//! for a handle of one of the object's sharded counters ([`PrfData::sharded`]), by a
//! compare-and-swap of a free owner word to its process's tag (pid in the low half, the low half
//! of the process's start time in the high half), across
//! every process attached to the block. The slot is kept in a `thread_local` (per block and
//! object) until the thread exits; then its owner word is freed and its values stay in the
//! lines: the next owner continues from them (a slot is never zeroed while its instance lives).
//! The slot of a process that died is taken over by the next thread that finds every slot
//! taken (its owner checked gone by its presence lock on the block, which names it by pid and
//! start tag and says the same from every pid namespace: `crate::block::presence`). When every slot is owned by a live
//! thread, a thread adds to the counter block's own word with `fetch_add`: still exact, only
//! contended.
//!
//! An update through an owned slot is a relaxed load and a relaxed store of a word no other
//! thread writes: no `lock` prefix, no line shared with another writer.
//!
//! [`PrfData::sharded`]: crate::PrfData::sharded

use core::marker::PhantomData;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::optex::OwnerCheck;
use crate::process::{start_tag, ProcessId};

/// A handle on a sharded counter for the thread that made it: [`add`](ShardedCtr::add) is a
/// relaxed load and store of the thread's own slot (or a `fetch_add` on the counter when every
/// slot is taken). Made by [`PrfData::sharded`](crate::PrfData::sharded); it is neither `Send`
/// nor `Sync` (the slot is its thread's): take one per thread, outside the hot loop.
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! { pub mod m { app: "ShardedCtrDoc",
///   object SERVER { name: "Server", help: name, counters {
///     BYTES: BulkCount { name: "Bytes/sec", help: "Bytes sent.", sharded: true },
///   } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             let bytes = prf.sharded(m::BYTES, ()); // this thread's slot
///             for _ in 0..1000 {
///                 bytes.add(1500);
///             }
///         });
///     }
/// });
/// let reader = prfdata::reader::BlockReader::open_path("ShardedCtrDoc", prf.path())?;
/// let total = reader.read_with(std::time::Duration::from_secs(1), |v| v.global_value(0, 0))?;
/// assert_eq!(total, 4 * 1000 * 1500); // the readers' sum: no increment lost
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShardedCtr<'a> {
    /// The address of the word [`add`](ShardedCtr::add) updates (the thread's slot word, or the
    /// counter's own value when it has no slot), its lowest bit set when that word is shared
    /// (no slot): an update reads the handle once, where a reference and an `Option` took two
    /// loads (a word is 8-aligned, so the bit is free).
    tagged: *const AtomicU64,
    /// The slot, if the thread owns one.
    slot: Option<u32>,
    /// The word's borrow, and not `Send`, not `Sync`: the slot belongs to the thread that made
    /// the handle.
    _word: PhantomData<(&'a AtomicU64, *const ())>,
}

/// [`ShardedCtr::tagged`]'s bit for a shared word.
const SHARED: usize = 1;

impl<'a> ShardedCtr<'a> {
    /// A handle on `word`, the thread's slot word (`slot`) or the counter itself (`None`).
    pub(crate) fn new(word: &'a AtomicU64, slot: Option<u32>) -> ShardedCtr<'a> {
        let ptr = std::ptr::from_ref(word);
        debug_assert_eq!(ptr.addr() & SHARED, 0, "an AtomicU64 is 8-aligned");
        ShardedCtr {
            tagged: if slot.is_some() {
                ptr
            } else {
                ptr.wrapping_byte_add(SHARED)
            },
            slot,
            _word: PhantomData,
        }
    }

    /// The thread's own slot word, when the thread owns a slot: a word no other thread writes
    /// while the handle lives.
    #[inline]
    pub(crate) fn own_word(&self) -> Option<*const AtomicU64> {
        (self.tagged.addr() & SHARED == 0).then_some(self.tagged)
    }

    /// Adds `n` to the counter (wrapping, as a 64-bit counter does).
    #[inline]
    pub fn add(&self, n: i64) {
        let tagged = self.tagged;
        if tagged.addr() & SHARED == 0 {
            // SAFETY: with its lowest bit clear, `tagged` is the pointer of the
            // `&'a AtomicU64` the handle was made from (`new`), and that reference outlives
            // the handle (`_word`'s lifetime).
            let word = unsafe { &*tagged };
            // One writer per slot word: a plain load and store, no locked instruction.
            let v = word.load(Ordering::Relaxed);
            word.store(v.wrapping_add(n as u64), Ordering::Relaxed);
        } else {
            // SAFETY: with its lowest bit set, `tagged` is that pointer plus one byte (`new`:
            // an `AtomicU64` is 8-aligned, so the bit was clear); one byte back is the
            // reference again, with its provenance.
            let word = unsafe { &*tagged.wrapping_byte_sub(SHARED) };
            word.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// The shard slot this thread owns, or `None` when every slot was taken and the thread
    /// adds to the counter itself with atomic adds.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "ShardedSlotDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     BYTES: BulkCount { name: "Bytes/sec", help: name, sharded: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// assert!(prf.sharded(m::BYTES, ()).slot().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slot(&self) -> Option<u32> {
        self.slot
    }
}

/// The shard slots one [`PrfData`](crate::PrfData) handle's threads own, by block: released
/// when the handle drops (before the block is unmapped), or when a thread exits.
#[derive(Debug)]
pub(crate) struct ShardHost {
    home: Arc<Home>,
}

/// What threads' claims point back to: the mapping's base and the claims still held.
#[derive(Debug)]
struct Home {
    state: Mutex<HomeState>,
}

#[derive(Debug)]
struct HomeState {
    /// The block's mapping base, or `None` once the handle dropped (the mapping may be gone).
    base: Option<usize>,
    /// Owner words (their offsets in the block) claimed by threads of this process, with the
    /// tag written in each.
    claims: Vec<(usize, u64)>,
}

/// One claim in a thread's `thread_local`.
struct Claim {
    home: Arc<Home>,
    /// Offset of the object's first owner word.
    owners: usize,
    slot: u32,
    tag: u64,
}

/// The claims of the current thread, released when it exits.
struct Claims(Vec<Claim>);

impl Drop for Claims {
    fn drop(&mut self) {
        for c in &self.0 {
            c.home.release(c.owners + 8 * c.slot as usize, c.tag);
        }
    }
}

thread_local! {
    static CLAIMS: RefCell<Claims> = const { RefCell::new(Claims(Vec::new())) };
}

/// The tag a process writes in the owner words it claims: its pid, and its start tag in the
/// high half (a reused pid is another owner), as the optex's state word names its owner.
fn tag_of(me: ProcessId) -> u64 {
    u64::from(me.pid) | (u64::from(start_tag(me.start_time)) << 32)
}

impl ShardHost {
    /// The host of the block mapped at `base`.
    pub(crate) fn new(base: *mut u8) -> ShardHost {
        ShardHost {
            home: Arc::new(Home {
                state: Mutex::new(HomeState {
                    base: Some(base as usize),
                    claims: Vec::new(),
                }),
            }),
        }
    }

    /// The slot the current thread owns among the `slots` owner words at `owners` (an object's
    /// shard owners, inside the block mapped at this host's base), claiming one if it has
    /// none; `None` if every slot is owned by a live thread.
    ///
    /// `word(i)` is owner word `i`; `gone` tells whether a slot's owner process has died (this
    /// process is present on the block: its claims stand for it).
    pub(crate) fn slot_for<'b>(
        &self,
        owners: usize,
        slots: u32,
        word: impl Fn(u32) -> &'b AtomicU64,
        gone: &dyn OwnerCheck,
    ) -> Option<u32> {
        let me = ProcessId::current();
        let tag = tag_of(me);
        let owned = CLAIMS
            .try_with(|claims| {
                let mut claims = claims.borrow_mut();
                // Claims copied from the parent by `fork` are the parent's: forget them.
                claims.0.retain(|c| c.tag as u32 == me.pid);
                claims
                    .0
                    .iter()
                    .find(|c| Arc::ptr_eq(&c.home, &self.home) && c.owners == owners)
                    .map(|c| c.slot)
            })
            .ok()?;
        if owned.is_some() {
            return owned;
        }
        let slot = claim(slots, tag, &word, gone)?;
        self.home
            .lock()
            .claims
            .push((owners + 8 * slot as usize, tag));
        let kept = CLAIMS.try_with(|claims| {
            claims.borrow_mut().0.push(Claim {
                home: self.home.clone(),
                owners,
                slot,
                tag,
            })
        });
        if kept.is_err() {
            // The thread is exiting: nothing would release the slot later.
            self.home.release(owners + 8 * slot as usize, tag);
            return None;
        }
        Some(slot)
    }
}

/// Claims a free slot, or the slot of a process that died; `None` when every slot has a live
/// owner.
#[cold]
fn claim<'b>(
    slots: u32,
    tag: u64,
    word: &impl Fn(u32) -> &'b AtomicU64,
    gone: &dyn OwnerCheck,
) -> Option<u32> {
    let take = |s: u32, from: u64| {
        word(s)
            .compare_exchange(from, tag, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    };
    if let Some(s) = (0..slots).find(|&s| take(s, 0)) {
        return Some(s);
    }
    (0..slots).find(|&s| {
        let owner = word(s).load(Ordering::Relaxed);
        owner != 0
            && owner as u32 != tag as u32
            && gone.is_dead(owner as u32, (owner >> 32) as u32)
            && take(s, owner)
    })
}

impl Home {
    fn lock(&self) -> std::sync::MutexGuard<'_, HomeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Frees the owner word at `at` if it still holds `tag` and the block is still mapped.
    fn release(&self, at: usize, tag: u64) {
        let mut state = self.lock();
        state.claims.retain(|&(a, t)| (a, t) != (at, tag));
        if let Some(base) = state.base {
            free(base, at, tag);
        }
    }
}

/// Frees the owner word at `at` of the block mapped at `base` if it holds `tag`: the caller
/// holds its [`Home`]'s lock and found the block mapped.
fn free(base: usize, at: usize, tag: u64) {
    // SAFETY: `base` is the start of the block's mapping, which stays mapped while the home's
    // `base` is `Some` (the `ShardHost`'s drop sets it to `None`, under the lock the caller
    // holds, before the mapping goes); `at` is the offset of an owner word of a block laid out
    // from the handle's map (`PrfData::sharded*` computed it), 8-aligned inside it.
    let word = unsafe { AtomicU64::from_ptr((base + at) as *mut u64) };
    // Release: the next owner's Acquire claim sees this thread's last store to the slot.
    let _ = word.compare_exchange(tag, 0, Ordering::Release, Ordering::Relaxed);
}

impl Drop for ShardHost {
    fn drop(&mut self) {
        let pid = ProcessId::current().pid;
        let mut state = self.home.lock();
        if let Some(base) = state.base.take() {
            for (at, tag) in std::mem::take(&mut state.claims) {
                // A forked child's copy of the parent's claims is not its own.
                if tag as u32 == pid {
                    free(base, at, tag);
                }
            }
        }
    }
}

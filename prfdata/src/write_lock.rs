//! The block's write lock as the app takes it: the [`Optex`](crate::Optex), the write section
//! readers check, and re-entry by the thread that already holds it.
//!
//! Every change to the instance tables, every text counter update and every
//! [`lock_ctrs`](crate::PrfData::lock_ctrs) takes the block's optex, which excludes threads of
//! every process but is not recursive: a thread that waits for an optex it holds waits for
//! itself. The thread that holds the optex through a [`CtrsGuard`](crate::CtrsGuard) is therefore
//! recorded, per thread and per block file (device and inode, so that two handles on one block,
//! an activated one and an attached one, count as one), and an operation that thread starts
//! while it holds the guard runs inside the guard's acquisition and write section instead of
//! taking them again ([`Acquisition::Reentered`]). CPrfData's `COptex` was recursive in the
//! same way.
//!
//! The record is per process too: a child forked while its parent held a guard inherits the
//! parent's thread-local memory, but not its hold on the optex (which names the parent's pid), so
//! it locks like any other process.

use core::marker::PhantomData;
use std::cell::RefCell;
use std::sync::atomic::{fence, AtomicU64, Ordering};

use crate::block::open::BlockKey;
use crate::optex::OptexGuard;
use crate::process::ProcessId;

/// A block whose optex a thread holds through a guard, and the process that took it.
#[derive(Clone, Copy, Debug)]
struct Held {
    key: BlockKey,
    pid: u32,
}

thread_local! {
    /// The blocks whose optex this thread holds through a guard (usually none, at most a few).
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread holds the optex of block `key` through a guard, in this process.
pub(crate) fn held_here(key: BlockKey) -> bool {
    let pid = ProcessId::current().pid;
    HELD.try_with(|held| {
        held.try_borrow()
            .is_ok_and(|list| list.iter().any(|h| h.key == key && h.pid == pid))
    })
    .unwrap_or(false)
}

/// Records that this thread holds the optex of a block, until dropped. Neither `Send` nor
/// `Sync`: it must be dropped by the thread it describes.
#[derive(Debug)]
pub(crate) struct HeldMark {
    key: BlockKey,
    pid: u32,
    _not_send: PhantomData<*const ()>,
}

impl HeldMark {
    /// Records the hold; call right after taking the optex.
    pub(crate) fn new(key: BlockKey) -> HeldMark {
        let pid = ProcessId::current().pid;
        // During thread teardown the list may be gone: the hold then goes unrecorded, and a
        // nested call would wait for it as another thread's call does (no worse than before).
        let _ = HELD.try_with(|held| {
            if let Ok(mut list) = held.try_borrow_mut() {
                list.push(Held { key, pid });
            }
        });
        HeldMark {
            key,
            pid,
            _not_send: PhantomData,
        }
    }
}

impl Drop for HeldMark {
    fn drop(&mut self) {
        let (key, pid) = (self.key, self.pid);
        let _ = HELD.try_with(|held| {
            if let Ok(mut list) = held.try_borrow_mut() {
                if let Some(i) = list.iter().rposition(|h| h.key == key && h.pid == pid) {
                    list.swap_remove(i);
                }
            }
        });
    }
}

/// The optex as one operation holds it.
#[derive(Debug)]
pub(crate) enum Acquisition<'a> {
    /// Taken by this operation; released when dropped.
    Taken {
        /// Held for the operation's duration.
        _guard: OptexGuard<'a>,
    },
    /// Held already by this thread's [`CtrsGuard`](crate::CtrsGuard), inside its write section.
    Reentered,
}

impl<'a> Acquisition<'a> {
    /// A write section for a change made under this acquisition: a new one if the optex was
    /// taken for it, none if it runs inside a guard's section (which stays open until the
    /// guard is dropped).
    pub(crate) fn section(&self, seq: &'a AtomicU64) -> Option<WriteSection<'a>> {
        match self {
            Acquisition::Taken { .. } => Some(WriteSection::begin(seq)),
            Acquisition::Reentered => None,
        }
    }
}

/// A write section of the block's sequence counter: odd from `begin` until dropped.
pub(crate) struct WriteSection<'a> {
    seq: &'a AtomicU64,
    odd: u64,
    /// The process that opened it: a forked child's copy must not close its parent's section.
    pid: u32,
}

impl<'a> WriteSection<'a> {
    /// Opens a section. Hold the optex.
    pub(crate) fn begin(seq: &'a AtomicU64) -> Self {
        // An odd value here means a writer died inside its section: keep it odd, the end makes
        // it even again once the caller has repaired what that writer left.
        let odd = seq.load(Ordering::Relaxed) | 1;
        seq.store(odd, Ordering::Relaxed);
        fence(Ordering::Release);
        WriteSection {
            seq,
            odd,
            pid: ProcessId::current().pid,
        }
    }

    /// The odd sequence value of the section.
    pub(crate) fn odd(&self) -> u64 {
        self.odd
    }
}

impl Drop for WriteSection<'_> {
    fn drop(&mut self) {
        if ProcessId::current().pid == self.pid {
            self.seq.store(self.odd.wrapping_add(1), Ordering::Release);
        }
    }
}

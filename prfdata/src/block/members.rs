//! The members table: every process attached to a block (the owner is not special).
//!
//! ```text
//! members_offset   MemberEntry × MAX_MEMBERS   { pid u32 (0: free), reserved u32, start_time u64 }
//! ```
//!
//! Each process that activates or attaches a block joins its table and leaves it when its handle
//! is dropped or the process exits normally. The table changes only under the block's optex,
//! whose recovery survives a member killed while holding it. A member that died without leaving
//! (`SIGKILL`) is pruned by whoever joins or leaves next: an entry is alive while its process
//! holds its presence lock ([`super::presence`]: by pid *and* start time, so a reused pid never
//! keeps a dead member's entry, and the same from every pid namespace).
//!
//! The table is a claim anyone of the user can write: who is the last member out, and whether
//! a block whose members are all gone is adopted, is decided by the block's `flock` instead
//! (see `super::create::membership`).

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::raw::RawBlock;
use crate::layout::{MAX_MEMBERS, MEMBER_ENTRY_SIZE, MEMBER_PID_OFFSET, MEMBER_START_OFFSET};
use crate::process::ProcessId;

/// The members table of a mapped block. Its methods that change it are called holding the
/// block's optex.
pub(crate) struct Members<'a> {
    raw: &'a RawBlock,
    offset: usize,
}

/// The table has no free entry for a live process.
#[derive(Debug)]
pub(crate) struct Full;

impl<'a> Members<'a> {
    /// The table at `offset`, or `None` if it does not lie inside the mapping (a block whose
    /// header says otherwise was not laid out by this crate).
    pub(crate) fn new(raw: &'a RawBlock, offset: usize) -> Option<Members<'a>> {
        let end = offset.checked_add(MAX_MEMBERS as usize * MEMBER_ENTRY_SIZE)?;
        (offset.is_multiple_of(MEMBER_ENTRY_SIZE) && end <= raw.len())
            .then_some(Members { raw, offset })
    }

    fn entry(&self, i: usize) -> (&AtomicU32, &AtomicU64) {
        let at = self.offset + i * MEMBER_ENTRY_SIZE;
        // SAFETY: `new` checked that the whole table lies inside the mapping and that `offset`
        // is 16-aligned (the mapping is page-aligned), so entry `i < MAX_MEMBERS` has its u32
        // at `at` and its u64 at `at + 8`, both aligned and inside; the table is only reached
        // through atomics.
        unsafe {
            (
                self.raw.u32_at(at + MEMBER_PID_OFFSET),
                self.raw.u64_at(at + MEMBER_START_OFFSET),
            )
        }
    }

    /// Clears the entries whose process is gone (`alive` says, from its presence lock).
    pub(crate) fn prune(&self, alive: impl Fn(ProcessId) -> bool) {
        for i in 0..MAX_MEMBERS as usize {
            let (pid, start) = self.entry(i);
            let p = pid.load(Acquire);
            if p == 0 {
                continue;
            }
            let id = ProcessId {
                pid: p,
                start_time: start.load(Relaxed),
            };
            if !alive(id) {
                log::debug!("pruning gone member {} of a block", id.pid);
                pid.store(0, Release);
                start.store(0, Relaxed);
            }
        }
    }

    /// Adds `me` (pruning the gone first).
    pub(crate) fn join(
        &self,
        me: ProcessId,
        alive: impl Fn(ProcessId) -> bool,
    ) -> Result<(), Full> {
        self.prune(alive);
        for i in 0..MAX_MEMBERS as usize {
            let (pid, start) = self.entry(i);
            if pid.load(Relaxed) == 0 {
                start.store(me.start_time, Relaxed);
                pid.store(me.pid, Release);
                return Ok(());
            }
        }
        Err(Full)
    }

    /// How many entries the table lists now (each a claim: a process killed with `SIGKILL`
    /// stays listed until pruned).
    pub(crate) fn count(&self) -> usize {
        (0..MAX_MEMBERS as usize)
            .filter(|&i| self.entry(i).0.load(Acquire) != 0)
            .count()
    }

    /// Removes one entry of `me` (a process with two handles on the block has two) and prunes
    /// the gone.
    pub(crate) fn leave(&self, me: ProcessId, alive: impl Fn(ProcessId) -> bool) {
        for i in 0..MAX_MEMBERS as usize {
            let (pid, start) = self.entry(i);
            if pid.load(Relaxed) == me.pid && start.load(Relaxed) == me.start_time {
                pid.store(0, Release);
                start.store(0, Relaxed);
                break;
            }
        }
        self.prune(alive);
    }
}

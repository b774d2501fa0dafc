//! Readers recover a block whose lock holder died inside a write section.
//!
//! A process of the app (the owner, or one that attached) that is killed while it holds the
//! block's [`Optex`] inside a write section (`lock_ctrs`, an instance add or remove) leaves the
//! sequence counter odd. Readers then find no consistent window and answer "busy"; writers
//! recover the optex from its dead owner the next time one of them locks it, but an app whose
//! surviving processes only bump counters may never lock it again. So a reader that has seen
//! the sequence stay odd recovers the block itself, exactly as the next writer would:
//!
//! 1. it opens the block again, read-write, just for this (its own mapping stays read-only),
//!    checking that it is the same file (device, inode, size) it has mapped;
//! 2. it takes its presence on the block, as a writer does, then the optex with a zero
//!    timeout: the optex's own dead-owner path decides whether the holder is dead (its presence
//!    lock gone: the same answer from any pid namespace, so a collector in a container of its
//!    own never takes the lock of a live writer it cannot see), and takes it over only then; a
//!    live holder is never robbed;
//! 3. if it took the optex from a dead owner and the sequence is odd, it repairs the instance
//!    tables with the writers' own repair ([`Tables::repair`](crate::instances::Tables)), over the
//!    table layout it validated when it opened the block, and closes the write section;
//! 4. it releases the optex and unmaps its read-write mapping.
//!
//! The read-write mapping is watched for truncation like any read ([`crate::block::fault`]). It
//! sits with the reader, above the instance tables whose repair it borrows.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::block::fault::Watch;
use crate::block::open::open_block;
use crate::block::presence::{Presence, Probe};
use crate::block::raw::RawBlock;
use crate::block::records::TableLayout;
use crate::error::Error;
use crate::instances::Tables;
use crate::layout::{OPTEX_OFFSET, SEQ_OFFSET};
use crate::optex::Optex;
use crate::process::ProcessId;
use crate::sys::shm;

/// What a recovery attempt found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// The holder was dead: the optex was taken over, the tables repaired if a write section
    /// was open, and the optex released.
    Recovered,
    /// The optex was free or its holder is alive: nothing was changed.
    NotNeeded,
    /// The file at the path is no longer the one the reader mapped.
    Replaced,
}

/// Recovers the block of `app` at `path` (the file the reader mapped: `identity`) from a lock
/// holder that died, if one did. `layouts` are the instance tables of the block's objects, from
/// the records the reader validated against this file (`None` for an object without
/// instances).
pub(crate) fn dead_holder(
    app: &str,
    path: &Path,
    identity: shm::FileIdentity,
    layouts: &[Option<TableLayout>],
) -> Result<Recovery, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = open_block(app, path, true)?;
    let now = shm::identity(&file).map_err(io)?;
    if (now.dev, now.ino, now.size) != (identity.dev, identity.ino, identity.size) {
        return Ok(Recovery::Replaced);
    }
    // The same length the reader mapped, which held the records validated at open.
    let Ok(len) = usize::try_from(identity.size) else {
        return Ok(Recovery::Replaced);
    };
    let raw = RawBlock::map(&file, len, true).map_err(io)?;
    // Present before it may hold the optex: a writer that waits meanwhile sees it alive.
    let _presence = Presence::take(&file, path, ProcessId::current()).map_err(io)?;
    let Some(watch) = Watch::new(&raw, true) else {
        return Ok(Recovery::NotNeeded); // the fault table is full: try another time
    };
    // SAFETY:
    // - the header is inside the mapping (the reader checked the file holds at least
    //   HEADER_SIZE bytes, and this is the same file and length), OPTEX_OFFSET is a 64-aligned
    //   field of 64 bytes in it, and the mapping is page-aligned: aligned and valid for reads and
    //   writes for as long as `raw` lives, which outlives `optex`;
    // - any bit pattern is a valid optex (atomics and plain bytes), and every process reaches
    //   these bytes only through `Optex`.
    let optex = unsafe { Optex::from_ptr(raw.base().add(OPTEX_OFFSET).cast::<Optex>()) };
    // The optex's own dead-owner path: with a zero timeout it spins briefly, then checks the
    // holder once, and takes the optex over only if that holder is gone (`file` holds no
    // presence lock: the probe sees every process's).
    let Some(guard) = optex.try_lock_for_checked(Duration::ZERO, &Probe(&file)) else {
        return Ok(Recovery::NotNeeded);
    };
    if !guard.owner_died() {
        return Ok(Recovery::NotNeeded);
    }
    // SAFETY: SEQ_OFFSET + 8 <= HEADER_SIZE <= len, 8-aligned; the sequence is only ever
    // accessed atomically.
    let seq = unsafe { raw.u64_at(SEQ_OFFSET) };
    let odd = seq.load(Ordering::Relaxed);
    if odd & 1 == 1 {
        // As a writer that finds its predecessor dead: repair inside the section the dead
        // writer left open, then close it. Each layout was validated against this file's size
        // at open (see `ObjectInfo::table_layout`).
        Tables::with_layouts(&raw, layouts).repair();
        seq.store(odd.wrapping_add(1), Ordering::Release);
    }
    drop(guard);
    if watch.faulted() {
        // Truncated meanwhile: what was written went to zero pages; nothing to recover.
        return Ok(Recovery::Replaced);
    }
    Ok(Recovery::Recovered)
}

//! Joining a published block and leaving it: the members table, and the locks that prove what
//! the table only claims.
//!
//! Every member holds a shared `flock` on the block for its life (through its own open file
//! description, which a `fork`ed child shares), and a presence lock ([`super::presence`]). The
//! members table lists them for people and tools, and anyone of the user can write it; so no
//! decision rests on it:
//!
//! - *adopting* (every member is gone): a joiner that can take the `flock` exclusively, before
//!   it takes its shared one, holds the block alone;
//! - *the last member out*: a leaving member that can turn its shared `flock` into an exclusive
//!   one (without waiting), under the optex, is alone; then it marks the block closed and
//!   removes it. A joiner that took its shared lock before that try makes it fail; one that
//!   comes after it waits for the leaver's exclusive lock to go, takes the optex after the
//!   leaver released it, finds the block closed and opens the path again. A member that exits
//!   while another leaves drops its lock (the kernel does) before or after the try: after, the
//!   leaver stays; before, the leaver is the last, as it is;
//! - *the `closed` word*, which anyone of the user can write too: a joiner that finds it set
//!   believes it only if, under the optex, its own shared `flock` can turn exclusive (no other
//!   process holds the block); otherwise the block is live, and the joiner clears the word and
//!   joins;
//! - *pruning* the table: an entry whose process holds no presence is removed.
//!
//! Waits are bounded: joining by [`JOIN_BOUND`] (then [`Error::LockStalled`] names the holder),
//! leaving by [`LEAVE_BOUND`].

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use super::{check_same_map, BlockFile};
use crate::block::members::{Full, Members};
use crate::block::open::remove_if_same;
use crate::block::open::BlockKey;
use crate::block::presence::{Presence, Probe};
use crate::block::raw::RawBlock;
use crate::error::Error;
use crate::layout::*;
use crate::map::offsets::*;
use crate::map::MapDef;
use crate::optex::{Optex, OptexGuard, OwnerCheck};
use crate::process::ProcessId;
use crate::sys::shm;
use crate::write_lock::{held_here, WriteSection};

/// How a member handle came to the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Joined {
    /// This process published the block.
    Created,
    /// The block had live members.
    Shared,
    /// Every member of the block was gone: this process took it over, values and all.
    Adopted,
}

/// This process's entry in a block's members table, held by its handle.
#[derive(Debug)]
pub(super) struct Member {
    pub(super) me: ProcessId,
    pub(super) def: &'static MapDef,
    pub(super) how: Joined,
}

/// How long `activate` and `attach` wait for the block's lock (and for the file lock a
/// publisher or the last member holds for a moment) before they give up with
/// [`Error::LockStalled`], naming the holder.
///
/// One second, as a leaving process waits (`LEAVE_BOUND`): twenty times the optex's
/// [`CHECK_INTERVAL`](crate::Optex::CHECK_INTERVAL), so a holder that died is always recovered
/// well within it (recovery takes one interval), while a live process holds the lock for
/// microseconds (an instance added or removed) or for a `lock_ctrs` section, which must be as
/// short: a holder that keeps it a whole second is stopped or stuck, and waiting longer would
/// only hang the process starting up.
///
/// `activate` and `attach` document it as one second (the public surface names no constant:
/// the number is part of their contract, checked by the lifecycle tests).
pub(crate) const JOIN_BOUND: Duration = Duration::from_secs(1);

/// How long a process leaving a block (a handle dropped, or the process exiting) waits for its
/// optex: a live process that holds it that long (stopped, or an owner word written by someone
/// else that names a live process) must not hang a drop or an exit. A member that gives up
/// stays listed, as a killed one does, and the next process that joins or leaves prunes it.
pub(super) const LEAVE_BOUND: Duration = JOIN_BOUND;

/// How often a joiner tries again for its shared `flock` while another process holds the
/// block's exclusively (a publisher or the last member, for a moment).
const FLOCK_RETRY: Duration = Duration::from_millis(1);

/// Maps the existing block `file` at `path` (of the same map, else [`Error::MapMismatch`]) and
/// joins its members table, giving up at `deadline` ([`Error::LockStalled`]). `Ok(None)` if its
/// last member is removing it.
pub(super) fn join(
    map: &'static MapDef,
    path: &Path,
    file: File,
    deadline: Instant,
) -> Result<Option<BlockFile>, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let started = Instant::now();
    let identity = shm::identity(&file).map_err(io)?;
    let total = total_size(map);
    if identity.size != total as u64 {
        return Err(Error::MapMismatch {
            path: path.to_path_buf(),
            reason: format!(
                "its size is {} bytes, this map needs {total}",
                identity.size
            ),
        });
    }
    let raw = RawBlock::map(&file, total, true).map_err(io)?;
    check_same_map(map, &raw).map_err(|reason| Error::MapMismatch {
        path: path.to_path_buf(),
        reason,
    })?;
    let me = ProcessId::current();
    let presence = Presence::take(&file, path, me).map_err(io)?;
    let lock = MemberLock {
        file: &file,
        raw: &raw,
        path,
        started,
        deadline,
    };
    let alone = lock.take()?;
    let key = BlockKey {
        dev: identity.dev,
        ino: identity.ino,
    };
    let probe = Probe(&file);
    let bound = deadline.saturating_duration_since(Instant::now());
    {
        let _guard = match lock_members_within(&raw, map, key, bound, &probe) {
            MembersLock::Locked(guard) => Some(guard),
            MembersLock::HeldHere => None,
            MembersLock::TimedOut => return Err(stalled(&raw, path, started.elapsed())),
        };
        if closed(&raw).load(Ordering::Acquire) != 0 && lock.closed_for_real()? {
            // Its last member removes the file before it releases the optex: a closed block
            // still at the path was left by a member that died half-way (or its word was
            // scribbled on once every member had gone). It goes; the caller looks again.
            remove_if_same(path, identity);
            return Ok(None);
        }
        join_table(&raw, map, path, me, &probe)?;
    }
    let how = if alone {
        log::info!(
            "app {}: adopting {} (its processes are gone; its counters continue)",
            map.app,
            path.display()
        );
        Joined::Adopted
    } else {
        Joined::Shared
    };
    let member = Member { me, def: map, how };
    let block = BlockFile::new(Arc::new(raw), file, presence, path, identity, Some(member));
    exit_cleanup::register(&block, me, map);
    Ok(Some(block))
}

/// Adds `me` to the members table of the block mapped at `raw` (pruning entries whose process
/// holds no presence); the caller holds the optex.
fn join_table(
    raw: &RawBlock,
    map: &'static MapDef,
    path: &Path,
    me: ProcessId,
    probe: &Probe<'_>,
) -> Result<(), Error> {
    let members = Members::new(raw, members_offset(map)).ok_or_else(|| Error::MapMismatch {
        path: path.to_path_buf(),
        reason: "its members table lies outside it".into(),
    })?;
    members
        .join(me, |id| probe.is_alive(id))
        .map_err(|Full| Error::TooManyProcesses {
            app: map.app.to_string(),
            path: path.to_path_buf(),
            max: MAX_MEMBERS,
        })
}

/// A joiner's member `flock` on the block file, and how long it may wait for it.
struct MemberLock<'a> {
    file: &'a File,
    raw: &'a RawBlock,
    path: &'a Path,
    started: Instant,
    deadline: Instant,
}

impl MemberLock<'_> {
    fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.to_path_buf(),
            source,
        }
    }

    /// Takes this member's shared `flock`, for its life, trying it exclusively first: every
    /// member holds its own for life, so holding it alone proves that no other process is a
    /// member (`Ok(true)`: the block is adopted), whatever the members table says. Waits
    /// (until the deadline) while another process holds it exclusively: a publisher or the
    /// last member, for a moment.
    fn take(&self) -> Result<bool, Error> {
        let alone = shm::try_lock_exclusive(self.file).map_err(|e| self.io(e))?;
        // For a process that holds it alone, a conversion: no other can hold it exclusively.
        self.hold_shared()?;
        Ok(alone)
    }

    /// Takes (or keeps) the shared `flock`, waiting (until the deadline) while another process
    /// holds it exclusively.
    fn hold_shared(&self) -> Result<(), Error> {
        loop {
            if shm::try_lock_shared(self.file).map_err(|e| self.io(e))? {
                return Ok(());
            }
            if Instant::now() >= self.deadline {
                return Err(stalled(self.raw, self.path, self.started.elapsed()));
            }
            std::thread::sleep(FLOCK_RETRY);
        }
    }

    /// Whether the `closed` word a joiner found set, under the optex, was set by the block's
    /// last member out: only if no other process holds the block's `flock` (this joiner's
    /// shared lock turns exclusive). Any process of the user can write the word; while another
    /// member holds its lock the block is live, so the word is cleared (logged once per
    /// process) and the joiner keeps its shared lock and joins. A member that leaves meanwhile
    /// waits for the optex this joiner holds.
    fn closed_for_real(&self) -> Result<bool, Error> {
        static SCRIBBLE_LOGGED: AtomicBool = AtomicBool::new(false);
        if shm::try_lock_exclusive(self.file).map_err(|e| self.io(e))? {
            return Ok(true);
        }
        // A failed try dropped this joiner's shared lock (flock(2): a conversion is not
        // atomic). Nobody holds the lock exclusively for long while the optex is held: a leaver
        // converts only under it, a joiner only for the moment of its first try.
        self.hold_shared()?;
        closed(self.raw).store(0, Ordering::Release);
        if !SCRIBBLE_LOGGED.swap(true, Ordering::Relaxed) {
            log::warn!(
                "{}: the block says it was closed while other processes still hold it (a stray \
                 write to its `closed` word); the word is cleared and the block kept",
                self.path.display()
            );
        }
        Ok(false)
    }
}

/// [`Error::LockStalled`] for the block mapped at `raw`: the holder of its optex, else (the
/// optex free: a process holds the file lock) the process that published it.
fn stalled(raw: &RawBlock, path: &Path, waited: Duration) -> Error {
    let holder = optex(raw).owner().map(|o| o.pid);
    // SAFETY: the owner pid is a 4-aligned u32 of the header, inside the mapping.
    let publisher = unsafe { raw.u32_at(std::mem::offset_of!(BlockHeader, owner_pid)) };
    Error::LockStalled {
        path: path.to_path_buf(),
        pid: holder.unwrap_or_else(|| publisher.load(Ordering::Relaxed)),
        waited,
    }
}

/// The block's optex.
fn optex(raw: &RawBlock) -> &Optex {
    // SAFETY: `OPTEX_OFFSET` is a 64-aligned, 64-byte field of the header inside the mapping,
    // which `raw` keeps alive for the returned lifetime; the optex is only ever changed through
    // its atomics.
    unsafe { Optex::from_ptr(raw.base().add(OPTEX_OFFSET).cast::<Optex>()) }
}

/// The block's `closed` word.
fn closed(raw: &RawBlock) -> &AtomicU32 {
    // SAFETY: `CLOSED_OFFSET` is a 4-aligned u32 of the header, inside every mapping of a block
    // (the caller mapped at least the header).
    unsafe { raw.u32_at(CLOSED_OFFSET) }
}

/// What [`lock_members_within`] got.
enum MembersLock<'a> {
    Locked(OptexGuard<'a>),
    /// This thread holds the optex already (inside `lock_ctrs`).
    HeldHere,
    /// The bound passed with another process holding it.
    TimedOut,
}

/// Takes the block's optex to change its members table, waiting at most `bound`, an owner's
/// death told by `check`; repairs the instance tables if a writer died inside a write section.
fn lock_members_within<'a>(
    raw: &'a RawBlock,
    def: &'static MapDef,
    key: BlockKey,
    bound: Duration,
    check: &dyn OwnerCheck,
) -> MembersLock<'a> {
    if held_here(key) {
        return MembersLock::HeldHere;
    }
    let Some(guard) = optex(raw).try_lock_for_checked(bound, check) else {
        return MembersLock::TimedOut;
    };
    // SAFETY: the sequence is an 8-aligned u64 of the header, inside the mapping.
    let seq = unsafe { raw.u64_at(SEQ_OFFSET) };
    if guard.owner_died() && seq.load(Ordering::Relaxed) & 1 == 1 {
        let _section = WriteSection::begin(seq);
        crate::instances::Tables::new(raw, def).repair();
    }
    MembersLock::Locked(guard)
}

/// What leaving a block did: whether this process removed it, left it to other members, or
/// could not leave cleanly. [`PrfData::close`](crate::PrfData::close) answers it; dropping a
/// handle (or the process exiting) leaves the same way and says nothing.
///
/// Who is the last member out is proven by the block's file lock, which every member holds for
/// its life, not by the members table (any process of the user can write it): the count in
/// [`Departure::StillHeld`] is the table's, and at least 1.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "it says whether the block is still published"]
pub enum Departure {
    /// This process was the block's last member: it marked the block closed and removed it,
    /// with its watch table and run-time block. Monitors no longer see the app.
    Removed,
    /// Other live members hold the block, which stays published with its values and their
    /// instances.
    StillHeld {
        /// How many other handles the members table lists (at least 1; a process with two
        /// handles on the block counts twice).
        members: usize,
    },
    /// This process could not leave cleanly: the block stays, listing it until the next
    /// process that joins or leaves prunes it.
    Abandoned {
        /// Why, as a sentence.
        reason: String,
    },
}

/// What a member handle needs to leave its block.
pub(super) struct Leaving<'a> {
    pub(super) raw: &'a RawBlock,
    /// The member's file: its shared `flock`, and presences are probed through it.
    pub(super) file: &'a File,
    pub(super) path: &'a Path,
    pub(super) identity: shm::FileIdentity,
    pub(super) me: ProcessId,
    pub(super) def: &'static MapDef,
}

/// Leaves the members table of the block; the last member out (the one that can take the
/// block's `flock` alone) marks it closed and removes its companions, then the block.
pub(super) fn leave(l: Leaving<'_>) -> Departure {
    let key = BlockKey {
        dev: l.identity.dev,
        ino: l.identity.ino,
    };
    // Another process of this user may have truncated the file: a fault here reads zeros
    // instead of killing this process (at exit, or dropping its handle), and the block is
    // then left alone.
    let window = crate::block::fault::init()
        .ok()
        .and_then(|()| crate::block::fault::Watch::new(l.raw, true));
    let probe = Probe(l.file);
    let _guard = match lock_members_within(l.raw, l.def, key, LEAVE_BOUND, &probe) {
        MembersLock::Locked(guard) => Some(guard),
        MembersLock::HeldHere => None,
        MembersLock::TimedOut => {
            let reason = format!(
                "another process held the block's lock for {LEAVE_BOUND:?}; this process left \
                 without taking itself off its members table (the next process to join or leave \
                 prunes it)"
            );
            log::warn!("{}: {reason}", l.path.display());
            return Departure::Abandoned { reason };
        }
    };
    let members = Members::new(l.raw, members_offset(l.def));
    if let Some(members) = &members {
        members.leave(l.me, |id| probe.is_alive(id));
    }
    let others = members.map_or(0, |m| m.count());
    if window
        .as_ref()
        .is_some_and(crate::block::fault::Watch::faulted)
    {
        return Departure::Abandoned {
            reason: "another process truncated the block's file; it is left as it is".into(),
        };
    }
    // Another member's shared lock makes this fail, whatever the table says. A failed try
    // drops this handle's own shared lock (flock(2): a conversion is not atomic), which it
    // is about to close anyway.
    if !shm::try_lock_exclusive(l.file).unwrap_or(false) {
        return Departure::StillHeld {
            members: others.max(1),
        };
    }
    closed(l.raw).store(1, Ordering::Release);
    // The last one out. Companions first: a process activating the app meanwhile waits for the
    // optex, finds the block closed, and publishes its own block (and companions) only after.
    let dir = l.path.parent().unwrap_or(Path::new("."));
    for companion in companions(dir, l.def.app) {
        if fs::symlink_metadata(&companion).is_ok_and(|m| m.is_file()) {
            let _ = fs::remove_file(&companion);
        }
    }
    remove_if_same(l.path, l.identity);
    Departure::Removed
}

/// The live members the table of the block mapped at `raw` lists now (a forked child's view:
/// it is not a member itself), at least 1 (the process it was forked from).
pub(super) fn listed_members(raw: &RawBlock, def: &'static MapDef) -> usize {
    Members::new(raw, members_offset(def))
        .map_or(0, |m| m.count())
        .max(1)
}

/// The files beside an app's block that go with it: its watch table and run-time block.
fn companions(dir: &Path, app: &str) -> [PathBuf; 2] {
    [
        dir.join(format!("{app}.watch")),
        dir.join(format!("{app}.dyn.blk")),
    ]
}

/// Leaving the members tables of this process's blocks when it exits normally (`exit`, return
/// from `main`), even if the [`PrfData`](crate::PrfData) was leaked or lives in a static: the
/// last member out removes the block as a drop would.
pub(crate) mod exit_cleanup {
    use super::*;

    struct Entry {
        raw: Arc<RawBlock>,
        file: Arc<File>,
        path: PathBuf,
        identity: shm::FileIdentity,
        me: ProcessId,
        def: &'static MapDef,
    }

    static MEMBERSHIPS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
    static REGISTER: Once = Once::new();

    extern "C" fn at_exit() {
        // A forked child inherits the list: only the process that joined a block leaves it.
        let me = std::process::id();
        let list = match MEMBERSHIPS.lock() {
            Ok(mut list) => std::mem::take(&mut *list),
            Err(_) => return,
        };
        for e in list {
            if e.me.pid == me {
                let _ = leave(Leaving {
                    raw: &e.raw,
                    file: &e.file,
                    path: &e.path,
                    identity: e.identity,
                    me: e.me,
                    def: e.def,
                });
            }
            // The mapping stays: another exit handler may still read through a leaked handle.
            // Only it: the list and the paths are freed (leak checkers, such as the fuzzers'
            // LeakSanitizer, then see a leak only where a handle was leaked).
            std::mem::forget(e.raw);
        }
    }

    /// Remembers `block`, the membership of `me` in a block of `def`, for [`at_exit`].
    pub(crate) fn register(block: &BlockFile, me: ProcessId, def: &'static MapDef) {
        REGISTER.call_once(|| {
            // SAFETY: `at_exit` is an `extern "C" fn()` that does not unwind (it locks mutexes,
            // reads and writes the mapped members table and unlinks files) and stays valid for
            // the process lifetime.
            unsafe {
                libc::atexit(at_exit);
            }
        });
        if let Ok(mut list) = MEMBERSHIPS.lock() {
            list.push(Entry {
                raw: Arc::clone(&block.raw),
                file: Arc::clone(&block.file),
                path: block.path.clone(),
                identity: block.identity,
                me,
                def,
            });
        }
    }

    /// Forgets the membership of the handle mapping `raw` (its drop leaves the table itself).
    pub(crate) fn unregister(raw: &Arc<RawBlock>) {
        if let Ok(mut list) = MEMBERSHIPS.lock() {
            list.retain(|e| !Arc::ptr_eq(&e.raw, raw));
        }
    }
}

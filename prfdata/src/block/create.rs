//! The writer's side of a block file: build the records, create the file owner-only, publish it
//! without ever replacing a live block, join a live block of the same map, adopt or replace a
//! stale one, and remove it when the last member leaves.
//!
//! Publication protocol (every step fails safe):
//!
//! 0. Check the map (`map::validate`): its app name becomes a file name
//!    and its limits the file's size. Remove the temporary files of activations killed half-way
//!    in the folder ([`temp`]).
//! 1. Create `.<app>.<pid>.<n>.tmp` beside the block with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode
//!    0600, and take its `flock` at once (so that no other activation takes the file for one a
//!    killed process left). Reserve its pages (`fallocate`, [`shm::reserve`]): a full tmpfs
//!    fails the activation with [`Error::NoSpace`] here, instead of killing the app with
//!    `SIGBUS` the first time it touches a page of the block later. Write the header and
//!    records, this process as the first entry of the members table ([`super::members`]), map
//!    it.
//! 2. `rename(tmp, block, RENAME_NOREPLACE)`: readers only ever see a complete block.
//! 3. If a block is already there: open it without following a symlink and without blocking
//!    ([`open_block`]: anything but a regular file of ours is refused, by kind).
//!    - Laid out from the same map (layout version, fingerprint, records): *join* it
//!      ([`membership`]): if some member holds it the block is shared; if none does (they were
//!      `SIGKILL`ed) this process *adopts* it, and its counters continue. If its last member is
//!      removing it ([`BlockHeader::closed`]), go back to 2.
//!    - Another map or layout: if a process is there (its presence lock, [`super::presence`];
//!      for an older layout: its `flock` is held and its header's owner is alive), refuse;
//!      else it is stale: unlink it and go back to 2.
//!
//! Every member handle (activated or attached) leaves the members table when dropped, and at
//! the normal exit of the process (both only in the process that joined: a child that
//! inherited the handle through `fork` has another pid and leaves the table alone). The last
//! member out (proven by the block's `flock`, not by the table: [`membership`]) marks the block
//! closed and removes its companions (`<app>.watch`, `<app>.dyn.blk`) then the block.
//!
//! In debug builds only, the environment variable `PRFDATA_BLOCK_FAULT=before-publish` makes an
//! activating process kill itself (`SIGKILL`) between steps 1 and 2, as a crash would: the
//! tests use it to leave a temporary file behind. Release builds do not contain the hook.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use zerocopy::{FromBytes, IntoBytes};

use super::open::{block_path, open_block, remove_if_same, BlockKey};
use super::presence::{self, Presence, Probe};
use super::raw::RawBlock;
use crate::error::Error;
use crate::layout::*;
use crate::map::offsets::*;
use crate::map::MapDef;
use crate::process::{start_tag, Liveness, ProcessId};
use crate::sys::shm;

mod membership;
mod records;
mod temp;

pub use membership::Departure;
pub(crate) use membership::{exit_cleanup, Joined, JOIN_BOUND};
use membership::{join, leave, listed_members, Leaving, Member};
pub(crate) use records::records_image;

/// How many times a stale block is removed and publication retried before giving up (another
/// process racing to activate the same app can win the name between our unlink and rename).
const PUBLISH_ATTEMPTS: usize = 4;

fn path_in(app: &str, dir: Option<&Path>) -> Result<PathBuf, Error> {
    match dir {
        Some(d) => Ok(d.join(format!("{app}.blk"))),
        None => block_path(app),
    }
}

/// An open, mapped block.
#[derive(Debug)]
pub(crate) struct BlockFile {
    pub(crate) raw: Arc<RawBlock>,
    /// Kept open: it holds this member's shared `flock` (a run-time block: its publisher's
    /// exclusive one), and presences are probed through it (it holds no presence lock).
    file: Arc<File>,
    /// This process's presence on the block, on a description of its own.
    presence: Presence,
    /// The process known to be present through this handle: its opener, or a forked child
    /// once it took a presence of its own ([`BlockFile::probe`]).
    present_pid: AtomicU32,
    path: PathBuf,
    identity: shm::FileIdentity,
    /// This process's membership, for a handle of a map's block; `None` for a run-time block
    /// (`crate::dynamic`), which the last member of the app's block removes. A forked child's
    /// copy of the handle sees another pid and leaves the table alone.
    member: Option<Member>,
}

impl BlockFile {
    /// The block's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The block file's identity, shared by every handle on it.
    pub(crate) fn key(&self) -> BlockKey {
        BlockKey {
            dev: self.identity.dev,
            ino: self.identity.ino,
        }
    }

    /// How this handle joined its block (`None` for a run-time block).
    pub(crate) fn joined(&self) -> Option<Joined> {
        self.member.as_ref().map(|m| m.how)
    }

    /// Leaves the block now, as dropping the handle would, and says what that did; the drop
    /// then leaves nothing. A forked child's copy (not a member in its own name) leaves
    /// nothing: the block stays with the members it lists.
    pub(crate) fn depart(&mut self) -> Departure {
        let m = match self.member.take() {
            Some(m) if m.me.pid == std::process::id() => m,
            other => {
                // A run-time block (`None`) goes with its app's block, whose members keep it.
                let members = other
                    .as_ref()
                    .map_or(1, |m| listed_members(&self.raw, m.def));
                self.member = other;
                return Departure::StillHeld { members };
            }
        };
        exit_cleanup::unregister(&self.raw);
        leave(Leaving {
            raw: &self.raw,
            file: &self.file,
            path: &self.path,
            identity: self.identity,
            me: m.me,
            def: m.def,
        })
    }

    /// Asks which processes are present on the block, this one among them: a forked child
    /// writing through its parent's handle takes a presence of its own first. Every optex
    /// acquisition and every claim in the block's name goes through it.
    #[inline]
    pub(crate) fn probe(&self) -> Probe<'_> {
        let pid = ProcessId::current().pid;
        if self.present_pid.load(Ordering::Relaxed) != pid {
            self.present_here(pid);
        }
        Probe(&self.file)
    }

    #[cold]
    fn present_here(&self, pid: u32) {
        if pid != self.presence.pid() {
            presence::ensure_here(&self.file, &self.path);
        }
        self.present_pid.store(pid, Ordering::Relaxed);
    }

    /// A handle on `raw`, mapped from `file` at `path`, with this process's `presence`.
    fn new(
        raw: Arc<RawBlock>,
        file: File,
        presence: Presence,
        path: &Path,
        identity: shm::FileIdentity,
        member: Option<Member>,
    ) -> BlockFile {
        BlockFile {
            raw,
            file: Arc::new(file),
            present_pid: AtomicU32::new(presence.pid()),
            presence,
            path: path.to_path_buf(),
            identity,
            member,
        }
    }

    /// Creates and publishes the block of `map` in `dir` (default: [`shm_dir`]), or joins (or
    /// adopts) the block of the same map already there (waiting for its locks until
    /// `deadline`), or replaces a stale one of another map.
    pub(crate) fn create(
        map: &'static MapDef,
        dir: Option<&Path>,
        deadline: Instant,
    ) -> Result<BlockFile, Error> {
        crate::map::validate_at_run_time(map)?;
        let staged = Staged::new(map, map.fingerprint(), dir, true)?;
        #[cfg(debug_assertions)]
        fault_point("before-publish");
        let outcome = publish(map, &staged.tmp, &staged.path, deadline);
        match outcome {
            Ok(None) => {
                // From the publisher's exclusive lock to a member's shared one.
                shm::lock_shared(&staged.file).map_err(|source| Error::Io {
                    path: staged.path.clone(),
                    source,
                })?;
                Ok(staged.published(Some(map)))
            }
            Ok(Some(joined)) => {
                let _ = fs::remove_file(&staged.tmp);
                Ok(joined)
            }
            Err(e) => {
                let _ = fs::remove_file(&staged.tmp);
                Err(e)
            }
        }
    }

    /// Lays `map` out in a new file, lets `fill` write its first values (the new mapping,
    /// before anyone else can see it), then renames it over this process's own block at the
    /// same path: a new generation of a run-time block (`crate::dynamic`), left in place when
    /// dropped (the last member of the app's block removes it). The caller marks the old block
    /// superseded. The caller has checked `map` (`validate_at_run_time`), and gives its
    /// `fingerprint`: a run-time change computes each once.
    #[cfg_attr(not(feature = "install"), allow(dead_code))]
    pub(crate) fn replace(
        map: &MapDef,
        fingerprint: u64,
        dir: Option<&Path>,
        fill: impl FnOnce(&RawBlock),
    ) -> Result<BlockFile, Error> {
        let staged = Staged::new(map, fingerprint, dir, false)?;
        fill(&staged.raw);
        if let Err(source) = fs::rename(&staged.tmp, &staged.path) {
            let _ = fs::remove_file(&staged.tmp);
            return Err(Error::Create {
                path: staged.path.clone(),
                source,
            });
        }
        Ok(staged.published(None))
    }

    /// Removes the block's file now if it is still this one (a run-time block with nothing
    /// left to publish).
    #[cfg_attr(not(feature = "install"), allow(dead_code))]
    pub(crate) fn remove_now(&self) {
        remove_if_same(&self.path, self.identity);
    }

    /// Opens the live block of `map` read-write, checking that it was laid out from this map,
    /// and joins its members.
    pub(crate) fn attach(map: &'static MapDef, dir: Option<&Path>) -> Result<BlockFile, Error> {
        let deadline = join_deadline(Instant::now());
        crate::map::validate_at_run_time(map)?;
        let path = path_in(map.app, dir)?;
        for _ in 0..PUBLISH_ATTEMPTS {
            let file = open_block(map.app, &path, true)?;
            if let Some(block) = join(map, &path, file, deadline)? {
                return Ok(block);
            }
            // Its last member was removing it: look again.
        }
        Err(Error::NotActive {
            app: map.app.to_string(),
            path,
        })
    }
}

/// A block laid out and mapped under its temporary name, locked by this process, not yet
/// published.
struct Staged {
    raw: RawBlock,
    file: File,
    presence: Presence,
    tmp: PathBuf,
    path: PathBuf,
    identity: shm::FileIdentity,
    me: ProcessId,
}

impl Staged {
    /// `member`: this process is the first entry of the block's members table. `map` has been
    /// checked (`validate_at_run_time`) and has the fingerprint `fingerprint`.
    fn new(
        map: &MapDef,
        fingerprint: u64,
        dir: Option<&Path>,
        member: bool,
    ) -> Result<Staged, Error> {
        let path = path_in(map.app, dir)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        fs::create_dir_all(&dir).map_err(|source| Error::ShmDir {
            dir: dir.clone(),
            source,
        })?;
        temp::remove_stale(&dir);
        let me = ProcessId::current();
        let generation = next_generation(me);
        let tmp = dir.join(temp::name(map.app, me.pid, generation));
        let create_err = |source: io::Error| Error::Create {
            path: path.clone(),
            source,
        };

        let file = shm::create_exclusive(&tmp).map_err(create_err)?;
        let total = total_size(map);
        let staged = (|| -> Result<(RawBlock, shm::FileIdentity, Presence), Error> {
            // Locked before anything else, so that no other activation takes the file for one
            // that a killed process left (see `temp`).
            if !shm::try_lock_exclusive(&file).map_err(create_err)? {
                return Err(create_err(io::Error::other(
                    "could not lock the new block file",
                )));
            }
            shm::reserve(&file, total as u64).map_err(|source| no_space(&path, total, source))?;
            let mut image = records_image(map, fingerprint, me, generation);
            if member {
                let entry = MemberEntry {
                    pid: me.pid,
                    _reserved: 0,
                    start_time: me.start_time,
                };
                let at = members_offset(map);
                image[at..at + MEMBER_ENTRY_SIZE].copy_from_slice(entry.as_bytes());
            }
            file.write_all_at(&image, 0).map_err(create_err)?;
            let raw = RawBlock::map(&file, total, true).map_err(create_err)?;
            let presence = Presence::take(&file, &tmp, me).map_err(create_err)?;
            Ok((raw, shm::identity(&file).map_err(create_err)?, presence))
        })();
        match staged {
            Ok((raw, identity, presence)) => Ok(Staged {
                raw,
                file,
                presence,
                tmp,
                path,
                identity,
                me,
            }),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// The handle of the block once it is at its path; a member of it for a map's block
    /// (`def`).
    fn published(self, def: Option<&'static MapDef>) -> BlockFile {
        let member = def.map(|def| Member {
            me: self.me,
            def,
            how: Joined::Created,
        });
        let block = BlockFile::new(
            Arc::new(self.raw),
            self.file,
            self.presence,
            &self.path,
            self.identity,
            member,
        );
        if let Some(def) = def {
            exit_cleanup::register(&block, self.me, def);
        }
        block
    }
}

impl BlockFile {
    /// Opens the live block at `path` read-write without a map to compare it with (a run-time
    /// block, `crate::dynamic`, whose layout only its owner knows): its records are validated as
    /// a reader validates them, and returned.
    #[cfg_attr(not(feature = "install"), allow(dead_code))]
    pub(crate) fn attach_unmapped(
        app: &str,
        path: &Path,
    ) -> Result<(BlockFile, crate::block::records::Records), Error> {
        let file = open_block(app, path, true)?;
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let identity = shm::identity(&file).map_err(io)?;
        let mismatch = |reason: String| Error::MapMismatch {
            path: path.to_path_buf(),
            reason,
        };
        let size = usize::try_from(identity.size)
            .ok()
            .filter(|&n| n >= HEADER_SIZE)
            .ok_or_else(|| mismatch(format!("its size is {} bytes", identity.size)))?;
        let raw = RawBlock::map(&file, size, true).map_err(io)?;
        let records = crate::block::records::parse(&raw, identity.size)
            .map_err(|e| mismatch(e.to_string()))?;
        let presence = Presence::take(&file, path, ProcessId::current()).map_err(io)?;
        let block = BlockFile::new(Arc::new(raw), file, presence, path, identity, None);
        Ok((block, records))
    }
}

impl Drop for BlockFile {
    fn drop(&mut self) {
        // Only the process that joined leaves: a child that inherited the handle through
        // `fork` has another pid (the kernel's, not a cached one).
        if self
            .member
            .as_ref()
            .is_some_and(|m| m.me.pid == std::process::id())
        {
            let _ = self.depart();
        }
    }
}

/// The error for a failed reservation of the block's pages: [`Error::NoSpace`] when the folder
/// is full or over quota (or the file over the process's size limit), [`Error::Create`] else.
fn no_space(path: &Path, size: usize, source: io::Error) -> Error {
    let errno = match source.raw_os_error() {
        Some(libc::ENOSPC) => "ENOSPC",
        Some(libc::EDQUOT) => "EDQUOT",
        Some(libc::EFBIG) => "EFBIG",
        _ => {
            return Error::Create {
                path: path.to_path_buf(),
                source,
            }
        }
    };
    Error::NoSpace {
        path: path.to_path_buf(),
        size: size as u64,
        errno,
        source,
    }
}

/// Kills this process (`SIGKILL`: no destructors, no unlock, no exit handlers) if
/// `PRFDATA_BLOCK_FAULT` names `point`. Debug builds only (see the module docs).
#[cfg(debug_assertions)]
fn fault_point(point: &str) {
    if std::env::var_os("PRFDATA_BLOCK_FAULT").is_some_and(|v| v == point) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

/// Publishes the staged block `tmp` at `map`'s `path`: `Ok(None)` once it is there, or
/// `Ok(Some(handle))` if a block of the same map was there and this process joined it.
fn publish(
    map: &'static MapDef,
    tmp: &Path,
    path: &Path,
    deadline: Instant,
) -> Result<Option<BlockFile>, Error> {
    let app = map.app;
    for _ in 0..PUBLISH_ATTEMPTS {
        match shm::rename_noreplace(tmp, path) {
            Ok(()) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(Error::Create {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
        let existing = match open_block(app, path, true) {
            Ok(f) => f,
            Err(Error::NotActive { .. }) => continue, // removed meanwhile: try again
            Err(e) => return Err(e),
        };
        let header = read_header(&existing);
        let ours = header.is_some_and(|h| h.layout_version == LAYOUT_VERSION);
        if ours && header.is_some_and(|h| h.map_fingerprint == map.fingerprint()) {
            match join(map, path, existing, deadline) {
                Ok(Some(block)) => return Ok(Some(block)),
                Ok(None) => continue, // its last member is removing it
                // Same names, other limits: judged as a block of another map below.
                Err(Error::MapMismatch { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let existing = match open_block(app, path, false) {
            Ok(f) => f,
            Err(Error::NotActive { .. }) => continue,
            Err(e) => return Err(e),
        };
        let live = if ours {
            live_member(&existing)
        } else {
            older_owner(&existing, header).map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?
        };
        if let Some(pid) = live {
            return Err(Error::AlreadyActive {
                app: app.to_string(),
                pid,
                path: path.to_path_buf(),
            });
        }
        // Stale: every process of it is gone (none holds its presence). A block of this
        // layout is marked closed first, as its last member would have marked it: readers that
        // still map it end their reads at once and open the path again.
        if ours {
            mark_closed(app, path);
        }
        if let Ok(id) = shm::identity(&existing) {
            remove_if_same(path, id);
        }
    }
    Err(Error::Create {
        path: path.to_path_buf(),
        source: io::Error::other("another process keeps activating this app at the same time"),
    })
}

/// Sets the `closed` word of the stale block at `path` (every process of it gone), through the
/// file rather than a mapping: nothing is mapped, and a file shorter than the header is left
/// alone.
fn mark_closed(app: &str, path: &Path) {
    let Ok(file) = open_block(app, path, true) else {
        return;
    };
    if shm::identity(&file).is_ok_and(|id| id.size >= HEADER_SIZE as u64) {
        let _ = file.write_all_at(&1u32.to_ne_bytes(), CLOSED_OFFSET as u64);
    }
}

/// A block's header, if it can be read and has our magic.
fn read_header(file: &File) -> Option<BlockHeader> {
    let mut buf = [0u8; HEADER_SIZE];
    file.read_exact_at(&mut buf, 0).ok()?;
    let header = BlockHeader::read_from_bytes(&buf).ok()?;
    (header.magic == MAGIC).then_some(header)
}

/// A process of a block of this layout version, if one is there (its presence lock held):
/// the pid of a member whose presence is held, else its publisher's (a members table is only
/// a claim, read from the file as untrusted input: a table outside the file names no one).
fn live_member(file: &File) -> Option<u32> {
    let probe = Probe(file);
    if !probe.anyone() {
        return None;
    }
    let header = read_header(file)?;
    let len = header.max_members.min(MAX_MEMBERS) as usize * MEMBER_ENTRY_SIZE;
    let mut table = vec![0u8; len];
    let listed = file
        .read_exact_at(&mut table, u64::from(header.members_offset))
        .ok()
        .and_then(|()| {
            table
                .chunks_exact(MEMBER_ENTRY_SIZE)
                .filter_map(|e| MemberEntry::read_from_bytes(e).ok())
                .find(|e| e.pid != 0 && probe.present(e.pid, start_tag(e.start_time)) == Some(true))
        });
    Some(listed.map_or(header.owner_pid, |e| e.pid))
}

/// The live publisher of a block of an older layout version, which holds its `flock` for life
/// (probed with an exclusive one) and is named by the header.
fn older_owner(file: &File, header: Option<BlockHeader>) -> io::Result<Option<u32>> {
    let locked = shm::try_lock_exclusive(file)?;
    let owner = header.map(|h| ProcessId {
        pid: h.owner_pid,
        start_time: h.owner_start_time,
    });
    Ok(owner
        .filter(|o| !locked && o.liveness() == Liveness::Alive)
        .map(|o| o.pid))
}

/// When `activate` or `attach`, started at `start`, gives up waiting for the block's locks.
pub(crate) fn join_deadline(start: Instant) -> Instant {
    start.checked_add(JOIN_BOUND).unwrap_or(start)
}

/// Compares the records of an existing block with those `map` would produce.
fn check_same_map(map: &MapDef, raw: &RawBlock) -> Result<(), String> {
    let len = regions_offset(map);
    let actual = raw
        .snapshot_bytes(0, len)
        .ok_or("it is shorter than its records")?;
    let header = BlockHeader::read_from_prefix(&actual)
        .map_err(|_| "no header")?
        .0;
    if header.magic != MAGIC {
        return Err("bad magic".into());
    }
    if header.layout_version != LAYOUT_VERSION {
        return Err(format!(
            "layout version {} (this build: {LAYOUT_VERSION})",
            header.layout_version
        ));
    }
    let expected = records_image(
        map,
        map.fingerprint(),
        ProcessId {
            pid: 0,
            start_time: 0,
        },
        0,
    );
    // Compare the records, masking what changes after creation: the object records' live state
    // and the members table.
    let members = members_offset(map);
    if header.members_offset as usize != members || header.max_members != MAX_MEMBERS {
        return Err(format!(
            "its members table is at {} with {} entries (this map: {members}, {MAX_MEMBERS})",
            header.members_offset, header.max_members
        ));
    }
    let mut a = actual[HEADER_SIZE..members].to_vec();
    let mut e = expected[HEADER_SIZE..members].to_vec();
    for i in 0..map.objects.len() {
        let dynamic = i * OBJECT_RECORD_SIZE + LIVE_COUNT_OFFSET..(i + 1) * OBJECT_RECORD_SIZE;
        a[dynamic.clone()].fill(0);
        e[dynamic].fill(0);
    }
    if a != e || header.total_size != total_size(map) as u64 {
        return Err("its objects or counters differ".into());
    }
    Ok(())
}

fn next_generation(me: ProcessId) -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    now ^ (u64::from(me.pid) << 40)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

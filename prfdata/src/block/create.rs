//! The writer's side of a block file: build the records, create the file owner-only, publish it
//! without ever replacing a live block, join a live block of the same map, adopt or replace a
//! stale one, and remove it when the last member leaves.
//!
//! Publication protocol (every step fails safe):
//!
//! 0. Check the map ([`validate`](crate::map::validate())): its app name becomes a file name
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
//!    - Laid out from the same map (layout version, fingerprint, records): *join* it, under its
//!      optex: if some member is alive the block is shared; if all are dead (`SIGKILL`ed) this
//!      process *adopts* it, and its counters continue. If its last member is removing it
//!      ([`BlockHeader::closed`]), go back to 2.
//!    - Another map or layout: if a member is alive (for an older layout: its `flock` is held
//!      and its header's owner is alive), refuse; else it is stale: unlink it and go back to 2.
//!
//! Every member handle (activated or attached) leaves the members table when dropped, and at
//! the normal exit of the process (both only in the process that joined: a child that
//! inherited the handle through `fork` has another pid and leaves the table alone). The last
//! live member out marks the block closed and removes its companions (`<app>.watch`,
//! `<app>.dyn.blk`) then the block.
//!
//! In debug builds only, the environment variable `PRFDATA_BLOCK_FAULT=before-publish` makes an
//! activating process kill itself (`SIGKILL`) between steps 1 and 2, as a crash would: the
//! tests use it to leave a temporary file behind. Release builds do not contain the hook.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use zerocopy::{FromBytes, IntoBytes};

use super::members::{Full, Members};
use super::open::{block_path, open_block, remove_if_same};
use super::raw::RawBlock;
use crate::clock;
use crate::error::Error;
use crate::layout::*;
use crate::map::offsets::*;
use crate::map::{Instances, MapDef, Source};
use crate::optex::{Optex, OptexGuard};
use crate::process::{Liveness, ProcessId};
use crate::sys::shm;
use crate::winperf;
use crate::write_lock::{held_here, WriteSection};

mod temp;

/// How many times a stale block is removed and publication retried before giving up (another
/// process racing to activate the same app can win the name between our unlink and rename).
const PUBLISH_ATTEMPTS: usize = 4;

fn path_in(app: &str, dir: Option<&Path>) -> Result<PathBuf, Error> {
    match dir {
        Some(d) => Ok(d.join(format!("{app}.blk"))),
        None => block_path(app),
    }
}

/// The header and records of a map's block: the first [`regions_offset`] bytes.
pub(crate) fn records_image(map: &MapDef, owner: ProcessId, generation: u64) -> Vec<u8> {
    let mut app_name = [0u8; 64];
    let n = map.app.len().min(app_name.len());
    app_name[..n].copy_from_slice(&map.app.as_bytes()[..n]);
    let header = BlockHeader {
        magic: MAGIC,
        layout_version: LAYOUT_VERSION,
        header_size: HEADER_SIZE as u32,
        total_size: total_size(map) as u64,
        owner_pid: owner.pid,
        num_objects: map.objects.len() as u32,
        owner_start_time: owner.start_time,
        num_counters: total_counters(map) as u32,
        objects_offset: HEADER_SIZE as u32,
        counters_offset: counters_offset(map) as u32,
        _pad0: 0,
        timer_freq: clock::OBJECT_FREQUENCY as u64,
        seq: 0,
        generation,
        app_name,
        map_fingerprint: map.fingerprint(),
        superseded: 0,
        _pad1: 0,
        od_request: 0,
        od_served: 0,
        od_objects: 0,
        members_offset: members_offset(map) as u32,
        max_members: MAX_MEMBERS,
        closed: 0,
        _reserved: 0,
        optex: [0; 64],
    };
    let mut image = Vec::with_capacity(regions_offset(map));
    image.extend_from_slice(header.as_bytes());
    let mut first_counter = 0u32;
    for (i, obj) in map.objects.iter().enumerate() {
        let base = object_base(map, i) as u64;
        let regions = object_regions(obj);
        let (max, max_name_len) = match obj.instances {
            Instances::None => (0, 0),
            Instances::Max { max, max_name_len } => (max, max_name_len),
        };
        let record = ObjectRecord {
            name_offset: obj.offset,
            detail_level: obj.detail.to_winperf(),
            default_counter: obj.default_counter.map_or(-1, |d| d as i32),
            num_counters: obj.counters.len() as u32,
            first_counter,
            flags: if obj.has_instances() {
                OBJECT_INSTANCED
            } else {
                0
            } | if obj.costly { OBJECT_COSTLY } else { 0 }
                | if obj.total && obj.has_instances() {
                    OBJECT_TOTAL
                } else {
                    0
                },
            max_instances: max,
            max_name_len,
            counter_block_size: counter_block_size(obj) as u32,
            slot_size: slot_size(obj) as u32,
            live_offset: base + regions.live as u64,
            slots_offset: base + regions.slots as u64,
            data_offset: base + regions.data as u64,
            live_count: 0,
            free_head: 0,
            high_water: 0,
            _pad: 0,
            owned_count: 0,
            _pad2: 0,
            block_stride: block_stride(obj) as u32,
            shard_start: shard_start(obj) as u32,
            shard_line: shard_line(obj) as u32,
            shard_slots: shard_slots(obj) as u32,
            shard_owners: if shard_slots(obj) > 0 {
                base + regions.owners as u64
            } else {
                0
            },
            _reserved: [0; 16],
        };
        image.extend_from_slice(record.as_bytes());
        first_counter += obj.counters.len() as u32;
    }
    for obj in map.objects {
        for ((c, ctr), at) in obj.counters.iter().enumerate().zip(counter_offsets(obj)) {
            let record = CounterRecord {
                name_offset: ctr.offset.unwrap_or(NO_NAME),
                counter_type: ctr.counter_type,
                size: ctr.value_size().unwrap_or(0),
                block_offset: at as u32,
                default_scale: ctr.default_scale,
                detail_level: ctr.detail.to_winperf(),
                aggregate: crate::map::rule_code(obj, c),
                shard: shard_index(obj, c).map_or(0, |k| k as u32 + 1),
                ..stat_fields(ctr)
            };
            image.extend_from_slice(record.as_bytes());
        }
    }
    image.resize(regions_offset(map), 0);
    image
}

/// A counter record's seed 000 fields (stat flags, factor, parts), the rest zero.
fn stat_fields(ctr: &crate::map::CounterDef) -> CounterRecord {
    let (mut flags, factor) = ctr.factor.map_or((0, 0), |f| f.to_flags());
    let mut parts = [0u16; MAX_SUM_PARTS];
    let mut part_count = 0;
    match ctr.source {
        Source::Stored | Source::Sharded => {}
        Source::OnDemand => flags |= winperf::PSTF_FUNCPTR,
        Source::SumOf(list) => {
            flags |= winperf::PSTF_COMPLEX;
            // The map's validation: 1 to MAX_SUM_PARTS parts, each an index among the object's
            // counters (fewer than MAX_COUNTERS, so it fits a u16).
            for (slot, &p) in parts.iter_mut().zip(list) {
                *slot = p as u16;
            }
            part_count = list.len().min(MAX_SUM_PARTS) as u32;
        }
    }
    CounterRecord {
        stat_flags: flags,
        factor,
        parts,
        part_count,
        ..CounterRecord::default()
    }
}

/// A block file, as the kernel names it: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BlockKey {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
}

/// How a member handle came to the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Joined {
    /// This process published the block.
    Created,
    /// The block had live members.
    Shared,
    /// Every member of the block was dead: this process took it over, values and all.
    Adopted,
}

/// This process's entry in a block's members table, held by its handle.
#[derive(Debug)]
struct Member {
    me: ProcessId,
    def: &'static MapDef,
    how: Joined,
}

/// An open, mapped block.
#[derive(Debug)]
pub(crate) struct BlockFile {
    pub(crate) raw: Arc<RawBlock>,
    /// Kept open: it holds this member's shared `flock` (a run-time block: its publisher's
    /// exclusive one), which readers probe.
    _file: File,
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

    /// Creates and publishes the block of `map` in `dir` (default: [`shm_dir`]), or joins (or
    /// adopts) the block of the same map already there, or replaces a stale one of another map.
    pub(crate) fn create(map: &'static MapDef, dir: Option<&Path>) -> Result<BlockFile, Error> {
        let staged = Staged::new(map, dir, true)?;
        #[cfg(debug_assertions)]
        fault_point("before-publish");
        let outcome = publish(map, &staged.tmp, &staged.path);
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
    /// superseded.
    #[cfg_attr(not(feature = "install"), allow(dead_code))]
    pub(crate) fn replace(
        map: &MapDef,
        dir: Option<&Path>,
        fill: impl FnOnce(&RawBlock),
    ) -> Result<BlockFile, Error> {
        let staged = Staged::new(map, dir, false)?;
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
        crate::map::validate_at_run_time(map)?;
        let path = path_in(map.app, dir)?;
        for _ in 0..PUBLISH_ATTEMPTS {
            let file = open_block(map.app, &path, true)?;
            if let Some(block) = join(map, &path, file)? {
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

/// Maps the existing block `file` at `path` (of the same map, else [`Error::MapMismatch`]) and
/// joins its members table. `Ok(None)` if its last member is removing it.
fn join(map: &'static MapDef, path: &Path, file: File) -> Result<Option<BlockFile>, Error> {
    // A member's shared lock, for life: readers tell a block some process still writes by it.
    shm::lock_shared(&file).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let identity = shm::identity(&file).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
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
    let raw = RawBlock::map(&file, total, true).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    check_same_map(map, &raw).map_err(|reason| Error::MapMismatch {
        path: path.to_path_buf(),
        reason,
    })?;
    let key = BlockKey {
        dev: identity.dev,
        ino: identity.ino,
    };
    let me = ProcessId::current();
    let live_before = {
        let _guard = lock_members(&raw, map, key);
        if closed(&raw).load(Ordering::Acquire) != 0 {
            // Its last member removes the file before it releases the optex: a closed block
            // still at the path was left by a member that died half-way (or its word was
            // scribbled on). It goes; the caller looks again.
            remove_if_same(path, identity);
            return Ok(None);
        }
        let members =
            Members::new(&raw, members_offset(map)).ok_or_else(|| Error::MapMismatch {
                path: path.to_path_buf(),
                reason: "its members table lies outside it".into(),
            })?;
        members.join(me).map_err(|Full| Error::TooManyProcesses {
            app: map.app.to_string(),
            path: path.to_path_buf(),
            max: MAX_MEMBERS,
        })?
    };
    let how = if live_before == 0 {
        log::info!(
            "app {}: adopting {} (its processes are gone; its counters continue)",
            map.app,
            path.display()
        );
        Joined::Adopted
    } else {
        Joined::Shared
    };
    let raw = Arc::new(raw);
    exit_cleanup::register(&raw, path, identity, me, map);
    Ok(Some(BlockFile {
        raw,
        _file: file,
        path: path.to_path_buf(),
        identity,
        member: Some(Member { me, def: map, how }),
    }))
}

/// The block's `closed` word.
fn closed(raw: &RawBlock) -> &AtomicU32 {
    // SAFETY: `CLOSED_OFFSET` is a 4-aligned u32 of the header, inside every mapping of a block
    // (the caller mapped at least the header).
    unsafe { raw.u32_at(CLOSED_OFFSET) }
}

/// Takes the block's optex to change its members table, repairing the instance tables if a
/// writer died inside a write section; `None` if this thread holds it already (inside
/// `lock_ctrs`).
fn lock_members<'a>(
    raw: &'a RawBlock,
    def: &'static MapDef,
    key: BlockKey,
) -> Option<OptexGuard<'a>> {
    match lock_members_within(raw, def, key, None) {
        MembersLock::Locked(guard) => Some(guard),
        MembersLock::HeldHere | MembersLock::TimedOut => None,
    }
}

/// How long a process leaving a block (a handle dropped, or the process exiting) waits for its
/// optex: a live process that holds it that long (stopped, or an owner word written by someone
/// else that names a live process) must not hang a drop or an exit. A member that gives up
/// stays listed, as a killed one does, and the next process that joins or leaves prunes it.
const LEAVE_BOUND: Duration = Duration::from_secs(1);

/// What [`lock_members_within`] got.
enum MembersLock<'a> {
    Locked(OptexGuard<'a>),
    /// This thread holds the optex already (inside `lock_ctrs`).
    HeldHere,
    /// The bound passed with another process holding it.
    TimedOut,
}

/// [`lock_members`], waiting at most `bound` (`None`: as long as it takes).
fn lock_members_within<'a>(
    raw: &'a RawBlock,
    def: &'static MapDef,
    key: BlockKey,
    bound: Option<Duration>,
) -> MembersLock<'a> {
    if held_here(key) {
        return MembersLock::HeldHere;
    }
    // SAFETY: `OPTEX_OFFSET` is a 64-aligned, 64-byte field of the header inside the mapping,
    // which `raw` keeps alive for `'a`; the optex is only ever changed through its atomics.
    let optex = unsafe { Optex::from_ptr(raw.base().add(OPTEX_OFFSET).cast::<Optex>()) };
    let guard = match bound {
        None => optex.lock(),
        Some(bound) => match optex.try_lock_for(bound) {
            Some(guard) => guard,
            None => return MembersLock::TimedOut,
        },
    };
    // SAFETY: the sequence is an 8-aligned u64 of the header, inside the mapping.
    let seq = unsafe { raw.u64_at(SEQ_OFFSET) };
    if guard.owner_died() && seq.load(Ordering::Relaxed) & 1 == 1 {
        let _section = WriteSection::begin(seq);
        crate::instances::Tables::new(raw, def).repair();
    }
    MembersLock::Locked(guard)
}

/// Leaves the members table of the block mapped at `raw`; the last live member out marks it
/// closed and removes its companions, then the block.
fn leave(
    raw: &RawBlock,
    path: &Path,
    identity: shm::FileIdentity,
    me: ProcessId,
    def: &'static MapDef,
) {
    let key = BlockKey {
        dev: identity.dev,
        ino: identity.ino,
    };
    // Another process of this user may have truncated the file: a fault here reads zeros
    // instead of killing this process (at exit, or dropping its handle), and the block is
    // then left alone.
    let window = super::fault::init()
        .ok()
        .and_then(|()| super::fault::Watch::new(raw, true));
    let _guard = match lock_members_within(raw, def, key, Some(LEAVE_BOUND)) {
        MembersLock::Locked(guard) => Some(guard),
        MembersLock::HeldHere => None,
        MembersLock::TimedOut => {
            log::warn!(
                "{}: another process held the block's lock for {LEAVE_BOUND:?}; this process \
                 leaves without taking itself off its members table (the next process to join \
                 or leave prunes it)",
                path.display()
            );
            return;
        }
    };
    let Some(members) = Members::new(raw, members_offset(def)) else {
        return;
    };
    let live = members.leave(me);
    if live > 0 || window.as_ref().is_some_and(super::fault::Watch::faulted) {
        return;
    }
    closed(raw).store(1, Ordering::Release);
    // The last one out. Companions first: a process activating the app meanwhile waits for the
    // optex, finds the block closed, and publishes its own block (and companions) only after.
    let dir = path.parent().unwrap_or(Path::new("."));
    for companion in companions(dir, def.app) {
        if fs::symlink_metadata(&companion).is_ok_and(|m| m.is_file()) {
            let _ = fs::remove_file(&companion);
        }
    }
    remove_if_same(path, identity);
}

/// The files beside an app's block that go with it: its watch table and run-time block.
fn companions(dir: &Path, app: &str) -> [PathBuf; 2] {
    [
        dir.join(format!("{app}.watch")),
        dir.join(format!("{app}.dyn.blk")),
    ]
}

/// A block laid out and mapped under its temporary name, locked by this process, not yet
/// published.
struct Staged {
    raw: RawBlock,
    file: File,
    tmp: PathBuf,
    path: PathBuf,
    identity: shm::FileIdentity,
    me: ProcessId,
}

impl Staged {
    /// `member`: this process is the first entry of the block's members table.
    fn new(map: &MapDef, dir: Option<&Path>, member: bool) -> Result<Staged, Error> {
        crate::map::validate_at_run_time(map)?;
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
        let staged = (|| -> Result<(RawBlock, shm::FileIdentity), Error> {
            // Locked before anything else, so that no other activation takes the file for one
            // that a killed process left (see `temp`).
            if !shm::try_lock_exclusive(&file).map_err(create_err)? {
                return Err(create_err(io::Error::other(
                    "could not lock the new block file",
                )));
            }
            shm::reserve(&file, total as u64).map_err(|source| no_space(&path, total, source))?;
            let mut image = records_image(map, me, generation);
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
            Ok((raw, shm::identity(&file).map_err(create_err)?))
        })();
        match staged {
            Ok((raw, identity)) => Ok(Staged {
                raw,
                file,
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
        let raw = Arc::new(self.raw);
        let member = def.map(|def| {
            exit_cleanup::register(&raw, &self.path, self.identity, self.me, def);
            Member {
                me: self.me,
                def,
                how: Joined::Created,
            }
        });
        BlockFile {
            raw,
            _file: self.file,
            path: self.path,
            identity: self.identity,
            member,
        }
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
    ) -> Result<(BlockFile, crate::reader::records::Records), Error> {
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
        let records = crate::reader::records::parse(&raw, identity.size)
            .map_err(|e| mismatch(e.to_string()))?;
        Ok((
            BlockFile {
                raw: Arc::new(raw),
                _file: file,
                path: path.to_path_buf(),
                identity,
                member: None,
            },
            records,
        ))
    }
}

impl Drop for BlockFile {
    fn drop(&mut self) {
        // Only the process that joined leaves: a child that inherited the handle through
        // `fork` has another pid (the kernel's, not a cached one).
        if let Some(m) = &self.member {
            if m.me.pid == std::process::id() {
                exit_cleanup::unregister(&self.raw);
                leave(&self.raw, &self.path, self.identity, m.me, m.def);
            }
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
fn publish(map: &'static MapDef, tmp: &Path, path: &Path) -> Result<Option<BlockFile>, Error> {
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
            match join(map, path, existing) {
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
            // Another layout version: its publisher holds its `flock` for life.
            let locked = shm::try_lock_exclusive(&existing).map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
            let owner = header.map(|h| ProcessId {
                pid: h.owner_pid,
                start_time: h.owner_start_time,
            });
            owner.filter(|o| !locked && o.liveness() == Liveness::Alive)
        };
        if let Some(member) = live {
            return Err(Error::AlreadyActive {
                app: app.to_string(),
                pid: member.pid,
                path: path.to_path_buf(),
            });
        }
        // Stale: every process of it is gone (their pids dead or reused). A block of this
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

/// A live process among the members of a block of this layout version (read from the file, as
/// untrusted input: a table outside the file names no one).
fn live_member(file: &File) -> Option<ProcessId> {
    let header = read_header(file)?;
    let len = header.max_members.min(MAX_MEMBERS) as usize * MEMBER_ENTRY_SIZE;
    let mut table = vec![0u8; len];
    file.read_exact_at(&mut table, u64::from(header.members_offset))
        .ok()?;
    table
        .chunks_exact(MEMBER_ENTRY_SIZE)
        .filter_map(|e| MemberEntry::read_from_bytes(e).ok())
        .filter(|e| e.pid != 0)
        .map(|e| ProcessId {
            pid: e.pid,
            start_time: e.start_time,
        })
        .find(|p| p.liveness() == Liveness::Alive)
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

/// Leaving the members tables of this process's blocks when it exits normally (`exit`, return
/// from `main`), even if the [`PrfData`](crate::PrfData) was leaked or lives in a static: the
/// last member out removes the block as a drop would.
pub(crate) mod exit_cleanup {
    use super::*;

    struct Entry {
        raw: Arc<RawBlock>,
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
                leave(&e.raw, &e.path, e.identity, e.me, e.def);
            }
            // The mapping stays: another exit handler may still read through a leaked handle.
            // Only it: the list and the paths are freed (leak checkers, such as the fuzzers'
            // LeakSanitizer, then see a leak only where a handle was leaked).
            std::mem::forget(e.raw);
        }
    }

    pub(crate) fn register(
        raw: &Arc<RawBlock>,
        path: &Path,
        identity: shm::FileIdentity,
        me: ProcessId,
        def: &'static MapDef,
    ) {
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
                raw: Arc::clone(raw),
                path: path.to_path_buf(),
                identity,
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

//! The owner's side of a block file: build the records, create the file owner-only, publish it
//! without ever replacing a live block, replace a stale one, and remove it when done.
//!
//! Publication protocol (every step fails safe):
//!
//! 0. Check the map ([`validate`](crate::map::validate())): its app name becomes a file name
//!    and its limits the file's size. Remove the temporary files of activations killed half-way
//!    in the folder ([`temp`]).
//! 1. Create `.<app>.<pid>.<n>.tmp` beside the block with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode
//!    0600, and take its `flock` at once (held for the owner's whole life: the kernel drops it
//!    when the owner dies, however it dies). Reserve its pages (`fallocate`, [`shm::reserve`]):
//!    a full tmpfs fails the activation with [`Error::NoSpace`] here, instead of killing the app
//!    with `SIGBUS` the first time it touches a page of the block later. Write the header and
//!    records, map it.
//! 2. `rename(tmp, block, RENAME_NOREPLACE)`: readers only ever see a complete block.
//! 3. If a block is already there: open it without following a symlink and without blocking
//!    ([`open_block`]: anything but a regular file of ours is refused, by kind); if its `flock`
//!    is free or its header's owner (pid + start time) is dead, it is stale: unlink it while
//!    holding its lock and go back to 2; otherwise its owner is alive: refuse.
//!
//! The handle that created the block removes it when dropped, and at the normal exit of the
//! process; both only in the process that created it (the pid is checked), never in a child
//! that inherited the handle through `fork`.
//!
//! In debug builds only, the environment variable `PRFDATA_BLOCK_FAULT=before-publish` makes an
//! activating process kill itself (`SIGKILL`) between steps 1 and 2, as a crash would: the
//! tests use it to leave a temporary file behind. Release builds do not contain the hook.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use zerocopy::{FromBytes, IntoBytes};

use super::open::{block_path, open_block, remove_if_same};
use super::raw::RawBlock;
use crate::clock;
use crate::error::Error;
use crate::layout::*;
use crate::map::offsets::*;
use crate::map::{Instances, MapDef, Source};
use crate::process::{Liveness, ProcessId};
use crate::sys::shm;
use crate::winperf;

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
        _reserved: [0; 16],
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
        for (c, ctr) in obj.counters.iter().enumerate() {
            let record = CounterRecord {
                name_offset: ctr.offset.unwrap_or(NO_NAME),
                counter_type: ctr.counter_type,
                size: ctr.value_size().unwrap_or(0),
                block_offset: counter_offset(obj, c) as u32,
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

/// An open, mapped block.
#[derive(Debug)]
pub(crate) struct BlockFile {
    pub(crate) raw: RawBlock,
    /// Kept open: it holds the owner's `flock`.
    _file: File,
    path: PathBuf,
    identity: shm::FileIdentity,
    /// The pid of the process that created the block through this handle (and removes it on
    /// drop), or `None` for an attached handle. A forked child's copy of the handle sees another
    /// pid and leaves the block alone.
    owner: Option<u32>,
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

    /// Creates and publishes the block of `map` in `dir` (default: [`shm_dir`]), replacing a
    /// stale one.
    pub(crate) fn create(map: &MapDef, dir: Option<&Path>) -> Result<BlockFile, Error> {
        let staged = Staged::new(map, dir)?;
        #[cfg(debug_assertions)]
        fault_point("before-publish");
        if let Err(e) = publish(map.app, &staged.tmp, &staged.path) {
            let _ = fs::remove_file(&staged.tmp);
            return Err(e);
        }
        Ok(staged.published())
    }

    /// Lays `map` out in a new file, lets `fill` write its first values (the new mapping,
    /// before anyone else can see it), then renames it over this process's own block at the
    /// same path: a new generation of a block this process owns (run-time objects,
    /// `crate::dynamic`). The caller marks the old block superseded.
    #[cfg_attr(not(feature = "install"), allow(dead_code))]
    pub(crate) fn replace(
        map: &MapDef,
        dir: Option<&Path>,
        fill: impl FnOnce(&RawBlock),
    ) -> Result<BlockFile, Error> {
        let staged = Staged::new(map, dir)?;
        fill(&staged.raw);
        if let Err(source) = fs::rename(&staged.tmp, &staged.path) {
            let _ = fs::remove_file(&staged.tmp);
            return Err(Error::Create {
                path: staged.path.clone(),
                source,
            });
        }
        Ok(staged.published())
    }

    /// Opens the live block of `map` read-write, checking that it was laid out from this map.
    pub(crate) fn attach(map: &MapDef, dir: Option<&Path>) -> Result<BlockFile, Error> {
        crate::map::validate(map)?;
        let path = path_in(map.app, dir)?;
        let file = open_block(map.app, &path, true)?;
        let identity = shm::identity(&file).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let total = total_size(map);
        if identity.size != total as u64 {
            return Err(Error::MapMismatch {
                path,
                reason: format!(
                    "its size is {} bytes, this map needs {total}",
                    identity.size
                ),
            });
        }
        let raw = RawBlock::map(&file, total, true).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        check_same_map(map, &raw).map_err(|reason| Error::MapMismatch {
            path: path.clone(),
            reason,
        })?;
        Ok(BlockFile {
            raw,
            _file: file,
            path,
            identity,
            owner: None,
        })
    }
}

/// A block laid out and mapped under its temporary name, locked by this process, not yet
/// published.
struct Staged {
    raw: RawBlock,
    file: File,
    tmp: PathBuf,
    path: PathBuf,
    identity: shm::FileIdentity,
    pid: u32,
}

impl Staged {
    fn new(map: &MapDef, dir: Option<&Path>) -> Result<Staged, Error> {
        crate::map::validate(map)?;
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
            file.write_all_at(&records_image(map, me, generation), 0)
                .map_err(create_err)?;
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
                pid: me.pid,
            }),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// The handle of the block once it is at its path.
    fn published(self) -> BlockFile {
        exit_cleanup::register(&self.path, self.identity);
        BlockFile {
            raw: self.raw,
            _file: self.file,
            path: self.path,
            identity: self.identity,
            owner: Some(self.pid),
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
                raw,
                _file: file,
                path: path.to_path_buf(),
                identity,
                owner: None,
            },
            records,
        ))
    }
}

impl Drop for BlockFile {
    fn drop(&mut self) {
        // Only the process that created the block removes it: a child that inherited the
        // handle through `fork` has another pid (the kernel's, not a cached one).
        if self.owner == Some(std::process::id()) {
            exit_cleanup::unregister(self.identity);
            remove_if_same(&self.path, self.identity);
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

fn publish(app: &str, tmp: &Path, path: &Path) -> Result<(), Error> {
    for _ in 0..PUBLISH_ATTEMPTS {
        match shm::rename_noreplace(tmp, path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(Error::Create {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
        let existing = match open_block(app, path, false) {
            Ok(f) => f,
            Err(Error::NotActive { .. }) => continue, // removed meanwhile: try again
            Err(e) => return Err(e),
        };
        let locked = shm::try_lock_exclusive(&existing).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let owner = read_owner(&existing);
        let owner_alive = owner.is_some_and(|o| o.liveness() == Liveness::Alive);
        if !locked && owner_alive {
            return Err(Error::AlreadyActive {
                app: app.to_string(),
                pid: owner.map_or(0, |o| o.pid),
                path: path.to_path_buf(),
            });
        }
        // Stale: its owner is gone (the lock was free) or its pid is dead or reused. We hold its
        // lock if it was free, so no other activator judges it live while we remove it.
        if let Ok(id) = shm::identity(&existing) {
            remove_if_same(path, id);
        }
    }
    Err(Error::Create {
        path: path.to_path_buf(),
        source: io::Error::other("another process keeps activating this app at the same time"),
    })
}

/// The owner recorded in a block's header, if the header can be read.
fn read_owner(file: &File) -> Option<ProcessId> {
    let mut buf = [0u8; HEADER_SIZE];
    file.read_exact_at(&mut buf, 0).ok()?;
    let header = BlockHeader::read_from_bytes(&buf).ok()?;
    (header.magic == MAGIC).then_some(ProcessId {
        pid: header.owner_pid,
        start_time: header.owner_start_time,
    })
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
    // Compare the records, masking what changes after creation: the object records' live state.
    let mut a = actual[HEADER_SIZE..].to_vec();
    let mut e = expected[HEADER_SIZE..].to_vec();
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

/// Removal of owned blocks (and their watch tables) when the process exits normally (`exit`, return from `main`), even if
/// the [`PrfData`](crate::PrfData) was leaked or lives in a static.
pub(crate) mod exit_cleanup {
    use super::*;

    struct Entry {
        path: PathBuf,
        identity: shm::FileIdentity,
        pid: u32,
    }

    static OWNED: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
    static REGISTER: Once = Once::new();

    extern "C" fn at_exit() {
        // A forked child inherits the list: only the process that created a block removes it.
        let me = std::process::id();
        if let Ok(list) = OWNED.lock() {
            for e in list.iter().filter(|e| e.pid == me) {
                remove_if_same(&e.path, e.identity);
            }
        }
    }

    pub(crate) fn register(path: &Path, identity: shm::FileIdentity) {
        REGISTER.call_once(|| {
            // SAFETY: `at_exit` is an `extern "C" fn()` that does not unwind (it only locks a
            // mutex, reads memory and unlinks files) and stays valid for the process lifetime.
            unsafe {
                libc::atexit(at_exit);
            }
        });
        if let Ok(mut list) = OWNED.lock() {
            list.push(Entry {
                path: path.to_path_buf(),
                identity,
                pid: std::process::id(),
            });
        }
    }

    /// Forgets the file with this identity (a newer generation at the same path stays
    /// registered).
    pub(crate) fn unregister(identity: shm::FileIdentity) {
        if let Ok(mut list) = OWNED.lock() {
            list.retain(|e| (e.identity.dev, e.identity.ino) != (identity.dev, identity.ino));
        }
    }
}

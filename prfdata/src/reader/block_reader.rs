//! [`BlockReader`]: a block opened read-only, its records copied out and validated once.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::error::ReadError;
use crate::block::answer;
use crate::block::fault::{self, Watch};
use crate::block::open::{block_path, open_block};
use crate::block::raw::RawBlock;
use crate::block::records::{self, CounterInfo, ObjectInfo, Records};
use crate::layout::{
    HEADER_SIZE, MAX_BLOCK_SIZE, MAX_MEMBERS, MEMBER_ENTRY_SIZE, MEMBER_PID_OFFSET,
    MEMBER_START_OFFSET,
};
use crate::sys::shm;

/// A block opened read-only, with its records validated: the reader providers and tools use.
///
/// Everything is read through [`BlockReader::read_with`], inside one consistent window.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::Ordering::Relaxed;
/// use prfdata::reader::BlockReader;
/// # prfdata::prfdata_map! { pub mod app { app: "ReaderDoc", object JOBS = 0 { name: "Jobs",
/// #   help: "Jobs.", detail: Novice, default: none, instances: none, costly: false, counters {
/// #   DONE = 2: RawCount { name: "Done", help: "Done.", detail: Novice, scale: 0 }, } } } }
/// # std::env::set_var("PRFDATA_SHM_DIR", std::env::temp_dir());
/// let prf = app::PrfData::activate()?; // in the app
/// prf.get_ctr32(app::DONE, ()).store(7, Relaxed);
///
/// let reader = BlockReader::open("ReaderDoc")?; // in the provider
/// let done = reader.read_with(BlockReader::DEFAULT_READ_DEADLINE, |view| view.global_value(0, 0))?;
/// assert_eq!(done, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct BlockReader {
    pub(super) file: File,
    pub(super) raw: RawBlock,
    pub(super) app: String,
    pub(super) path: PathBuf,
    pub(super) identity: shm::FileIdentity,
    pub(super) records: Records,
    /// Set once a read found the mapping faulted (the file was truncated): it holds zeros now.
    pub(super) spent: AtomicBool,
    /// The block's first page mapped read-write, for the on-demand request word (mapped by the
    /// first [`BlockReader::refresh_on_demand`]).
    pub(super) header_rw: OnceLock<RawBlock>,
    /// The on-demand request of this reader that passed its deadline and that the app has not
    /// served since (`1 << 32 | generation`), or 0 (see `on_demand.rs`).
    pub(super) od_missed: AtomicU64,
    /// The owners of process-owned instances this reader has asked about.
    pub(super) owners: super::owners::OwnerCache,
    /// How long a finding that a member holds the block stands ([`BlockReader::with_liveness_interval`]);
    /// zero: every read asks the kernel.
    pub(super) liveness_interval: Duration,
    /// When a read last found a member holding the block: nanoseconds since `opened`, plus one
    /// (zero: never).
    pub(super) alive_seen: AtomicU64,
    /// When the reader was opened: the origin of `alive_seen`.
    pub(super) opened: Instant,
}

impl BlockReader {
    /// A deadline for [`read_with`](BlockReader::read_with) that fits a provider's Collect: how long it keeps
    /// retrying while writers change the block, well under the 50 ms a Collect may take in all.
    pub const DEFAULT_READ_DEADLINE: Duration = Duration::from_millis(20);
    /// How long a read waits, with the sequence odd all along, before it checks whether the
    /// lock's holder is dead (and recovers the block if so). A writer's section lasts
    /// microseconds; one that has held the sequence odd for a millisecond is stopped, slow
    /// (`lock_ctrs`) or dead, and telling which costs one `/proc/<pid>/stat` read. Reads with a
    /// deadline shorter than twice this check at half their deadline, so every read that ends
    /// busy has checked once.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::reader::BlockReader;
    /// assert!(BlockReader::DEAD_HOLDER_CHECK < BlockReader::DEFAULT_READ_DEADLINE);
    /// ```
    pub const DEAD_HOLDER_CHECK: Duration = Duration::from_millis(1);
    /// The largest block an app may publish (1 GiB): the limit of prfdata-rules, which
    /// [`BlockReader::open`] enforces.
    pub const MAX_BLOCK_SIZE: u64 = MAX_BLOCK_SIZE;

    /// Opens the block of `app` in [`shm_dir`](crate::shm_dir).
    ///
    /// # Errors
    ///
    /// [`ReadError::Open`] with [`Error::NotActive`](crate::Error::NotActive) when the app is
    /// not running; any other [`ReadError`] when the block is invalid.
    pub fn open(app: &str) -> Result<BlockReader, ReadError> {
        let path = block_path(app)?;
        Self::open_path(app, &path)
    }

    /// Opens the block at `path`: without following a symlink and without blocking
    /// (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`), then, from `fstat` of what was opened, only a
    /// regular file ([`Error::NotRegular`](crate::Error::NotRegular) otherwise: a FIFO planted
    /// at the path is refused at once) owned by this user with mode 0600
    /// ([`Error::NotABlock`](crate::Error::NotABlock)) and no larger than [`MAX_BLOCK_SIZE`](BlockReader::MAX_BLOCK_SIZE)
    /// ([`Error::TooLarge`](crate::Error::TooLarge)); only then is it mapped, read-only, and its
    /// records validated.
    ///
    /// The first open in a process installs prfdata's process-wide `SIGBUS` handler (see the
    /// [module docs](super)): faults in mappings being read are repaired, any other goes on to
    /// the handler installed before, or kills the process as it would have.
    ///
    /// # Errors
    ///
    /// As [`BlockReader::open`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let r = prfdata::reader::BlockReader::open_path("App", "/dev/shm/x/App.blk".as_ref())?;
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn open_path(app: &str, path: &Path) -> Result<BlockReader, ReadError> {
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Before the first mapping: from here on, a truncation under a read is survivable.
        fault::init().map_err(io)?;
        // Regular, ours, at most MAX_BLOCK_SIZE: `open_block` checked.
        let file = open_block(app, path, false)?;
        let identity = shm::identity(&file).map_err(io)?;
        if identity.size < HEADER_SIZE as u64 {
            return Err(ReadError::Truncated {
                actual: identity.size,
                expected: HEADER_SIZE as u64,
            });
        }
        // At most MAX_BLOCK_SIZE (checked by `open_block`; checked again below, since the file
        // may have grown since), which fits a usize on the 64-bit targets prfdata builds for.
        let too_large = || {
            ReadError::Open(crate::error::Error::TooLarge {
                path: path.to_path_buf(),
                size: identity.size,
                max: MAX_BLOCK_SIZE,
            })
        };
        if identity.size > MAX_BLOCK_SIZE {
            return Err(too_large());
        }
        let len = usize::try_from(identity.size).map_err(|_| too_large())?;
        let raw = RawBlock::map(&file, len, false).map_err(io)?;
        let parsed = {
            let watch = watch(&raw, false, || {
                Instant::now() + BlockReader::DEFAULT_READ_DEADLINE
            })?;
            let parsed = records::parse(&raw, identity.size);
            if watch.faulted() {
                return Err(truncated(&file, identity.size));
            }
            parsed
        };
        Ok(BlockReader {
            file,
            raw,
            app: app.to_owned(),
            path: path.to_path_buf(),
            identity,
            records: parsed?,
            spent: AtomicBool::new(false),
            header_rw: OnceLock::new(),
            od_missed: AtomicU64::new(0),
            owners: Default::default(),
            liveness_interval: Duration::ZERO,
            alive_seen: AtomicU64::new(0),
            opened: Instant::now(),
        })
    }

    /// The block's path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// println!("reading {}", reader.path().display());
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pid of the process that activated the block, as its header says.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// println!("published by process {}", reader.owner_pid());
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn owner_pid(&self) -> u32 {
        self.records.header.owner_pid
    }

    /// The processes the block's members table names now: every process of the app attached to
    /// it (its activator and attached workers alike), as claims (a member killed with `SIGKILL`
    /// stays listed until the next process joins or leaves; check each with
    /// [`ProcessId::is_alive`](crate::process::ProcessId::is_alive)).
    ///
    /// # Errors
    ///
    /// [`ReadError::Truncated`] if the block was truncated under the read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// let live = reader.members()?.iter().filter(|p| p.is_alive()).count();
    /// println!("{live} processes attached");
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn members(&self) -> Result<Vec<crate::process::ProcessId>, ReadError> {
        let window = watch(&self.raw, false, || {
            Instant::now() + BlockReader::DEFAULT_READ_DEADLINE
        })?;
        let header = &self.records.header;
        // `parse` checked that the table lies inside the block; the loads are checked again.
        let mut out = Vec::new();
        for i in 0..header.max_members.min(MAX_MEMBERS) as usize {
            let at = header.members_offset as usize + i * MEMBER_ENTRY_SIZE;
            let pid = self.raw.load_u32(at + MEMBER_PID_OFFSET);
            let start = self.raw.load_u64(at + MEMBER_START_OFFSET);
            match (pid, start) {
                (Some(0), _) => {}
                (Some(pid), Some(start_time)) => {
                    out.push(crate::process::ProcessId { pid, start_time })
                }
                _ => {
                    return Err(ReadError::Truncated {
                        actual: self.raw.len() as u64,
                        expected: (at + MEMBER_ENTRY_SIZE) as u64,
                    })
                }
            }
        }
        if window.faulted() {
            return Err(ReadError::Truncated {
                actual: 0,
                expected: header.total_size,
            });
        }
        Ok(out)
    }

    /// The fingerprint of the names of the map the block was laid out from
    /// ([`MapDef::fingerprint`](crate::map::MapDef::fingerprint)), as its header says: a provider
    /// compares it with the one install recorded in the registry before it labels any counter.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// println!("map {:016x}", reader.map_fingerprint());
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn map_fingerprint(&self) -> u64 {
        self.records.header.map_fingerprint
    }

    /// The highest symbolic offset the block's objects and counters name (bases, which have no
    /// name, left out): the block needs the registry to hold names from First Counter to First
    /// Counter + this.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// println!("names up to First Counter + {}", reader.highest_name_offset());
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn highest_name_offset(&self) -> u32 {
        let objects = self.records.objects.iter().map(|o| o.name_offset);
        let counters = self.records.counters.iter().filter_map(|c| c.name_offset);
        objects.chain(counters).max().unwrap_or(0)
    }

    /// The objects, as the block's records declare them (validated at open).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// for obj in reader.objects() {
    ///     println!("object +{}: up to {} instances", obj.name_offset, obj.max_instances);
    /// }
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn objects(&self) -> &[ObjectInfo] {
        &self.records.objects
    }

    /// All counters, in object order; an object's are `counters()[obj.counters.clone()]`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let reader = prfdata::reader::BlockReader::open("App")?;
    /// let first = &reader.objects()[0];
    /// for ctr in &reader.counters()[first.counters.clone()] {
    ///     println!("counter type {:#x} at +{}", ctr.counter_type, ctr.block_offset);
    /// }
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn counters(&self) -> &[CounterInfo] {
        &self.records.counters
    }

    /// Whether the block at the path is no longer the one opened (the app restarted or quit),
    /// the file changed size, or a read found it truncated under it: reopen it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut reader = prfdata::reader::BlockReader::open("App")?;
    /// if reader.is_replaced() {
    ///     reader = prfdata::reader::BlockReader::open("App")?;
    /// }
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn is_replaced(&self) -> bool {
        if self.spent.load(Ordering::Relaxed) {
            return true;
        }
        let same_path = matches!(shm::path_identity(&self.path),
            Ok(Some((dev, ino))) if dev == self.identity.dev && ino == self.identity.ino);
        let same_size = shm::identity(&self.file).is_ok_and(|id| id.size == self.identity.size);
        !(same_path && same_size)
    }

    /// Whether a process of the app still holds the block: every process that writes it (the
    /// one that activated it, each attached one) holds a presence lock on its file, which the
    /// kernel releases however the process ends, and which this asks without taking anything
    /// (`F_OFD_GETLK`: it never gets in a member's way), from any pid namespace. The process
    /// that activated the block may be gone while others write on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::reader::BlockReader::open("App")?;
    /// if !reader.owner_alive() {
    ///     println!("the app was killed; its counters are frozen");
    /// }
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn owner_alive(&self) -> bool {
        crate::block::presence::Probe(&self.file).anyone()
    }

    /// Lets [`BlockReader::read_with`] trust, for `interval`, that a member holds the block
    /// once it found one: a reader that reads again and again (a provider's Collect in a tight
    /// loop) then asks the kernel ([`BlockReader::owner_alive`], one `fcntl` call) at most once
    /// per `interval`, and trusts an owner of a process-owned instance it found alive as long. A member's normal exit is seen at the next read all the same (the last
    /// member out marks the block closed, and a read of a closed block ends with
    /// [`ReadError::Replaced`]); only a killed app's frozen values may be served for up to
    /// `interval` more. The default, zero, asks at every read.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// let reader = prfdata::reader::BlockReader::open("App")?
    ///     .with_liveness_interval(Duration::from_millis(10));
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    #[must_use]
    pub fn with_liveness_interval(mut self, interval: Duration) -> BlockReader {
        self.liveness_interval = interval;
        self
    }

    /// [`BlockReader::owner_alive`], trusting a finding younger than the liveness interval.
    #[inline]
    pub(super) fn owner_alive_lately(&self) -> bool {
        if self.liveness_interval.is_zero() {
            return self.owner_alive();
        }
        let now = u64::try_from(self.opened.elapsed().as_nanos())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1);
        let seen = self.alive_seen.load(Ordering::Relaxed);
        let interval = u64::try_from(self.liveness_interval.as_nanos()).unwrap_or(u64::MAX);
        if seen != 0 && now.saturating_sub(seen) < interval {
            return true;
        }
        let alive = self.owner_alive();
        self.alive_seen
            .store(if alive { now } else { 0 }, Ordering::Relaxed);
        alive
    }
}

/// Registers `raw` with the fault table for one read window, waiting for a free entry (every
/// one taken means [`fault::ENTRIES`] threads are reading at once) until the instant `until`
/// gives. `until` is only asked when an entry is not free at once: a window opened without
/// waiting reads no clock.
#[inline]
pub(super) fn watch(
    raw: &RawBlock,
    writable: bool,
    until: impl FnOnce() -> Instant,
) -> Result<Watch<'_>, ReadError> {
    if let Some(w) = Watch::new(raw, writable) {
        return Ok(w);
    }
    watch_slow(raw, writable, until())
}

#[cold]
fn watch_slow(raw: &RawBlock, writable: bool, until: Instant) -> Result<Watch<'_>, ReadError> {
    let start = Instant::now();
    loop {
        std::thread::yield_now();
        if let Some(w) = Watch::new(raw, writable) {
            return Ok(w);
        }
        if Instant::now() >= until {
            return Err(ReadError::Busy(start.elapsed()));
        }
    }
}

/// The error for a block found truncated under a read: its size now, and the size mapped.
#[cold]
pub(super) fn truncated(file: &File, mapped: u64) -> ReadError {
    ReadError::Truncated {
        actual: shm::identity(file).map_or(0, |id| id.size),
        expected: mapped,
    }
}

/// The Collect answer's bound (the rule is in `block/answer.rs`).
impl BlockReader {
    /// The most bytes one Collect of prfdata's provider answers for one app: the objects of its
    /// two blocks (installed and run-time), each at most [`MAX_BLOCK_SIZE`](BlockReader::MAX_BLOCK_SIZE) (see the rule in
    /// `block/answer.rs`). The provider answers no more for a whole service (an app that would
    /// take it past this is left out of that Collect, logged), and the collector grows its
    /// Collect buffer up to this before it calls a provider that still wants more misbehaving.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::reader::BlockReader;
    /// assert_eq!(
    ///     u64::from(BlockReader::MAX_COLLECT_ANSWER),
    ///     2 * BlockReader::MAX_BLOCK_SIZE
    /// );
    /// ```
    pub const MAX_COLLECT_ANSWER: u32 = {
        let max = answer::BLOCKS_PER_APP * MAX_BLOCK_SIZE;
        assert!(max <= u32::MAX as u64, "a DWORD byte count holds it");
        max as u32
    };

    /// The most bytes the objects of this block take in a Collect answer, every object once:
    /// at most the block's size (see `block/answer.rs`).
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod app { app: "AnswerDoc", object O = 0 { name: "O",
    /// #   help: "o", instances: { max: 8, name_len: 16 }, counters {
    /// #   C = 2: RawCount { name: "C", help: "c" }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = app::PrfData::activate_in(dir.path())?;
    /// let reader = prfdata::reader::BlockReader::open_path("AnswerDoc", prf.path())?;
    /// assert!(reader.answer_bound() <= std::fs::metadata(prf.path())?.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn answer_bound(&self) -> u64 {
        answer::answer_bound(self.records.objects.iter().map(ObjectInfo::geometry))
    }
}

//! Reading a block another process publishes: read-only, validated, consistent, and safe
//! whatever happens to the block meanwhile.
//!
//! Everything in a block is untrusted input: the records are copied out once and checked field by
//! field (an error names the offset, and no value read from the block can overflow
//! an arithmetic), and every later load is bounds-checked against the mapping. Instance tables are
//! read through the block's sequence counter: a copy is kept only if the sequence was even and
//! unchanged around it, with a bounded number of retries, so a reader never sees a half-made
//! instance and never waits on the writer's lock.
//!
//! One way to read, two shapes: [`BlockReader::read_with`] runs a closure inside one sequence
//! window on a [`BlockView`] (and its per-object [`InstanceTable`]s), which reads just what the
//! closure asks for straight from the mapping, so that a provider can serialise in one pass;
//! [`BlockReader::read`] uses it to copy everything into a [`Snapshot`]. Both keep a result only
//! from a window in which the sequence was even and did not move.
//!
//! # What a reader survives
//!
//! | what happens to the block | what the reader does |
//! |---|---|
//! | truncated, or truncated and regrown, under a read | the `SIGBUS` is caught (module `block::fault`): [`ReadError::Truncated`], the reader is spent ([`BlockReader::is_replaced`]) |
//! | replaced (another file renamed over the path) | [`BlockReader::is_replaced`]; a new reader reads the new file |
//! | a FIFO, socket, directory or symlink at the path | refused at open without blocking (`O_NOFOLLOW \| O_NONBLOCK`, then `fstat`: a regular file owned by this user, mode 0600) |
//! | a file larger than [`MAX_BLOCK_SIZE`] | [`Error::TooLarge`](crate::Error::TooLarge), never mapped |
//! | any byte changed to anything | [`ReadError::Field`] naming the offset, or the values as written; lone surrogates in names and text served as U+FFFD |
//! | a process killed holding the lock inside a write section | the reader takes the lock over through the optex's dead-owner path and repairs the tables as a writer would (module `block::recover`), within [`DEAD_HOLDER_CHECK`] of the sequence staying odd |
//! | the owner killed | [`ReadError::OwnerGone`] |
//!
//! Why a signal handler for truncation: whoever can write the block file can truncate it, and a
//! load from a page past the new end raises `SIGBUS`, whose default action kills the reader
//! (in process, the collector with every app's data). A size check before each read cannot
//! close the race: the truncation can land between the check and the load (a reviewer's
//! experiment killed an in-process collector in 8 to 165 of 300 truncations). So, as Wayland
//! compositors do for the shared-memory pools of their clients (libwayland-server's
//! `wl_shm_buffer_begin_access` and its `SIGBUS` handler), each read window registers its mapping
//! in a small lock-free table (a compare-and-exchange and a few stores, no system call); a
//! process-wide handler, installed once and chained to any handler installed before, maps zero
//! pages over a registered mapping that faults and marks the window, and the read reports
//! [`ReadError::Truncated`]: no data from that app this time.

mod records;
mod snapshot;
mod utf16;
mod view;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use records::{CounterInfo, ObjectInfo};
pub use snapshot::{counter_value, InstanceSnapshot, ObjectSnapshot, Snapshot};
pub use view::{BlockView, InstanceTable, LiveInstance, ParentLink};

use super::create::{block_path, open_block};
use super::fault::{self, Watch};
use super::layout::*;
use super::raw::RawBlock;
use super::recover::{self, Recovery};
use crate::sys::shm;

/// The most objects a block may declare.
pub const MAX_OBJECTS: u32 = 4096;
/// The most counters a block may declare.
pub const MAX_COUNTERS: u32 = 65536;
/// The largest counter block accepted.
pub const MAX_COUNTER_BLOCK: u32 = 1 << 20;
/// How long [`BlockReader::read`] keeps retrying while writers change the block: well under the
/// 50 ms a provider's Collect may take in all.
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
/// use prfdata::block::reader::{DEAD_HOLDER_CHECK, DEFAULT_READ_DEADLINE};
/// assert!(DEAD_HOLDER_CHECK < DEFAULT_READ_DEADLINE);
/// ```
pub const DEAD_HOLDER_CHECK: Duration = Duration::from_millis(1);

/// What is wrong with a block, or why it could not be read now.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The block could not be opened.
    #[error(transparent)]
    Open(#[from] crate::Error),
    /// I/O on the block failed.
    #[error("I/O error on the block {path}: {source}")]
    Io {
        /// The block's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The block is shorter than its header or than its header says, or it was truncated
    /// while it was being read (then the reader is spent: open the block again).
    #[error("the block is {actual} bytes long, expected at least {expected}")]
    Truncated {
        /// Bytes present.
        actual: u64,
        /// Bytes needed.
        expected: u64,
    },
    /// The first bytes are not a prfdata block.
    #[error("not a prfdata block: bad magic at offset 0")]
    BadMagic,
    /// A layout version this build does not read.
    #[error("block layout version {found} at offset 8; this build reads version {LAYOUT_VERSION}")]
    Version {
        /// The version found.
        found: u32,
    },
    /// A field with a value that cannot be right.
    #[error("invalid block: {what} at offset {offset} is {value}")]
    Field {
        /// Offset of the field in the block.
        offset: u64,
        /// What the field is.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// The process that activated the block is gone (killed: it could not remove its block), so
    /// the values are frozen.
    #[error("the app that published this block has exited without removing it")]
    OwnerGone,
    /// The writer kept changing the instance tables (or held `lock_ctrs`) for the whole
    /// deadline.
    #[error("the block stayed busy for {0:?} (a writer holds it, or died holding it)")]
    Busy(Duration),
    /// The block was rewritten since it was opened (its generation changed under the read):
    /// reopen it. (A file replaced at the path, or resized, is what
    /// [`BlockReader::is_replaced`] tells.)
    #[error("the block was replaced or rewritten since it was opened")]
    Replaced,
    /// The instance tables changed inside one sequence window without the sequence moving (a
    /// writer outside the protocol, or a corrupt block): what was read once no longer holds.
    #[error("the instance tables of the block changed without its sequence counter moving")]
    Inconsistent,
}

impl ReadError {
    /// A short name of the kind of error, the same for every occurrence (for logging each kind
    /// once).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::block::reader::ReadError;
    /// assert_eq!(ReadError::Busy(std::time::Duration::from_millis(3)).kind(), "busy");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            ReadError::Open(_) => "open",
            ReadError::Io { .. } => "io",
            ReadError::Truncated { .. } => "truncated",
            ReadError::BadMagic => "magic",
            ReadError::Version { .. } => "version",
            ReadError::Field { what, .. } => what,
            ReadError::OwnerGone => "owner gone",
            ReadError::Busy(_) => "busy",
            ReadError::Replaced => "replaced",
            ReadError::Inconsistent => "inconsistent",
        }
    }
}
/// A block opened read-only, with its records validated.
///
/// # Examples
///
/// ```no_run
/// use prfdata::block::reader::{BlockReader, Snapshot};
/// let reader = BlockReader::open("PrfDataDemo")?;
/// let mut snap = Snapshot::default();
/// reader.read(&mut snap)?;
/// for (info, obj) in reader.objects().iter().zip(&snap.objects) {
///     println!("object +{}: {} instances", info.name_offset, obj.instances.len());
/// }
/// # Ok::<(), prfdata::block::reader::ReadError>(())
/// ```
#[derive(Debug)]
pub struct BlockReader {
    file: File,
    raw: RawBlock,
    app: String,
    path: PathBuf,
    identity: shm::FileIdentity,
    header: BlockHeader,
    objects: Vec<ObjectInfo>,
    counters: Vec<CounterInfo>,
    /// The most instances the block can hold (all objects' limits together): no instance can
    /// have more children.
    capacity: u64,
    /// Set once a read found the mapping faulted (the file was truncated): it holds zeros now.
    spent: AtomicBool,
}

impl BlockReader {
    /// Opens the block of `app` in [`shm_dir`](super::shm_dir).
    ///
    /// # Errors
    ///
    /// [`ReadError::Open`] with [`Error::NotActive`](crate::Error::NotActive) when the app is
    /// not running; any other [`ReadError`] when the block is invalid.
    ///
    /// # Examples
    ///
    /// See [`BlockReader`].
    pub fn open(app: &str) -> Result<BlockReader, ReadError> {
        let path = block_path(app)?;
        Self::open_path(app, &path)
    }

    /// Opens the block at `path`: without following a symlink and without blocking
    /// (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`), then, from `fstat` of what was opened, only a
    /// regular file ([`Error::NotRegular`](crate::Error::NotRegular) otherwise: a FIFO planted
    /// at the path is refused at once) owned by this user with mode 0600
    /// ([`Error::NotABlock`](crate::Error::NotABlock)) and no larger than [`MAX_BLOCK_SIZE`]
    /// ([`Error::TooLarge`](crate::Error::TooLarge)); only then is it mapped, read-only, and its
    /// records validated.
    ///
    /// The first open in a process installs prfdata's process-wide `SIGBUS` handler (see the
    /// [module docs](self)): faults in mappings being read are repaired, any other goes on to
    /// the handler installed before, or kills the process as it would have.
    ///
    /// # Errors
    ///
    /// As [`BlockReader::open`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let r = prfdata::block::reader::BlockReader::open_path("App", "/dev/shm/x/App.blk".as_ref())?;
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
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
            ReadError::Open(crate::Error::TooLarge {
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
            let watch = watch(&raw, false, Instant::now() + DEFAULT_READ_DEADLINE)?;
            let parsed = records::parse(&raw, identity.size);
            if watch.faulted() {
                return Err(truncated(&file, identity.size));
            }
            parsed
        };
        let (header, objects, counters) = parsed?;
        // At most MAX_OBJECTS × MAX_INSTANCES = 2^32.
        let capacity = objects.iter().map(|o| u64::from(o.max_instances)).sum();
        Ok(BlockReader {
            file,
            raw,
            app: app.to_owned(),
            path: path.to_path_buf(),
            identity,
            header,
            objects,
            counters,
            capacity,
            spent: AtomicBool::new(false),
        })
    }

    /// The block's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header as it was when the block was opened.
    pub fn header(&self) -> &BlockHeader {
        &self.header
    }

    /// The objects.
    pub fn objects(&self) -> &[ObjectInfo] {
        &self.objects
    }

    /// All counters, in object order; an object's are `counters()[obj.counters.clone()]`.
    pub fn counters(&self) -> &[CounterInfo] {
        &self.counters
    }

    /// Whether the block at the path is no longer the one opened (the app restarted or quit),
    /// the file changed size, or a read found it truncated under it: reopen it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut reader = prfdata::block::reader::BlockReader::open("App")?;
    /// if reader.is_replaced() {
    ///     reader = prfdata::block::reader::BlockReader::open("App")?;
    /// }
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
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

    /// Whether the process that activated the block still holds it (its `flock`, which the kernel
    /// releases however the process ends).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::block::reader::BlockReader::open("App")?;
    /// if !reader.owner_alive() {
    ///     println!("the app was killed; its counters are frozen");
    /// }
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn owner_alive(&self) -> bool {
        shm::owner_holds_lock(&self.file).unwrap_or(false)
    }

    /// Copies a consistent snapshot into `snap`, retrying for up to [`DEFAULT_READ_DEADLINE`].
    ///
    /// # Errors
    ///
    /// [`ReadError::Replaced`] if the block's generation changed (the file was rewritten),
    /// [`ReadError::Truncated`] if it was truncated under the read, [`ReadError::OwnerGone`]
    /// if its owner is dead, [`ReadError::Busy`] if no consistent copy could be made in time,
    /// [`ReadError::Field`] for an invalid live value.
    ///
    /// # Examples
    ///
    /// See [`BlockReader`].
    pub fn read(&self, snap: &mut Snapshot) -> Result<(), ReadError> {
        self.read_within(snap, DEFAULT_READ_DEADLINE)
    }

    /// [`BlockReader::read`] with another deadline.
    ///
    /// # Errors
    ///
    /// As [`BlockReader::read`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::block::reader::BlockReader::open("App")?;
    /// # let mut snap = Default::default();
    /// reader.read_within(&mut snap, std::time::Duration::from_millis(5))?;
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn read_within(&self, snap: &mut Snapshot, deadline: Duration) -> Result<(), ReadError> {
        let copied = self.read_with(deadline, |view| snap.fill(view));
        if copied.is_err() {
            snap.clear();
        }
        copied
    }

    /// Runs `f` on a [`BlockView`] inside one sequence window, retrying until a window in which
    /// the sequence was even and did not move, for up to `deadline`; returns what `f` returned in
    /// that window (an error too: a consistent block that is invalid stays invalid).
    ///
    /// This is the single-pass interface: `f` reads what it needs straight from the mapping
    /// (every load checked, through atomics) and may write it wherever it likes, e.g. into a
    /// caller's buffer. `f` may run several times: whatever it produced in a window that was
    /// then rejected must be thrown away or overwritten by the next run.
    ///
    /// Each window registers the mapping with the `SIGBUS` handler (see the
    /// [module docs](self)): if the
    /// file is truncated under `f`, `f` reads zeros from then on, and its result is thrown away
    /// for [`ReadError::Truncated`]. If the sequence stays odd for [`DEAD_HOLDER_CHECK`], the
    /// read checks once whether the lock's holder died, and recovers the block if so.
    ///
    /// # Errors
    ///
    /// As [`BlockReader::read`], plus whatever `f` returns.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::block::reader::BlockReader::open("App")?;
    /// // How many instances each object has, all counted in the same consistent state.
    /// let counts = reader.read_with(std::time::Duration::from_millis(5), |view| {
    ///     (0..reader.objects().len()).map(|k| view.live_count(k)).collect::<Result<Vec<_>, _>>()
    /// })?;
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn read_with<T>(
        &self,
        deadline: Duration,
        mut f: impl FnMut(&BlockView<'_>) -> Result<T, ReadError>,
    ) -> Result<T, ReadError> {
        let start = Instant::now();
        let end = start.checked_add(deadline);
        let check_after = DEAD_HOLDER_CHECK.min(deadline / 2);
        let mut attempt = 0u32;
        // Since when the sequence has been odd at every look, and whether this read has
        // checked the lock's holder yet.
        let mut odd_since: Option<Instant> = None;
        let mut checked_holder = false;
        loop {
            if self.spent.load(Ordering::Relaxed) {
                return Err(truncated(&self.file, self.identity.size));
            }
            let window = watch(&self.raw, false, end.unwrap_or(start))?;
            if self.generation() != Some(self.header.generation) {
                return Err(self.end_window(window, ReadError::Replaced));
            }
            if attempt == 0 && !self.owner_alive() {
                return Err(ReadError::OwnerGone);
            }
            let seq = self.seq_load();
            if seq & 1 == 0 {
                odd_since = None;
                fence(Ordering::Acquire);
                let result = f(&BlockView { reader: self, seq });
                fence(Ordering::Acquire);
                let kept = self.seq_relaxed() == seq;
                // A truncation, even one regrown since, zeroes the generation with the rest:
                // checked after the copy, it vouches for everything the copy read before.
                if window.faulted() || self.generation() != Some(self.header.generation) {
                    return Err(self.end_window(window, ReadError::Replaced));
                }
                if kept {
                    return result;
                }
            } else {
                let now = Instant::now();
                let since = *odd_since.get_or_insert(now);
                if !checked_holder && now.saturating_duration_since(since) >= check_after {
                    checked_holder = true;
                    drop(window);
                    if self.recover_dead_holder() {
                        continue; // recovered: read again at once
                    }
                }
            }
            attempt += 1;
            if start.elapsed() >= deadline {
                return Err(ReadError::Busy(deadline));
            }
            backoff(attempt);
        }
    }

    /// Ends a window that read something it must not keep: if the mapping faulted, the reader is
    /// spent and the error is [`ReadError::Truncated`], else `error`.
    #[cold]
    fn end_window(&self, window: Watch<'_>, error: ReadError) -> ReadError {
        if window.faulted() {
            self.spent.store(true, Ordering::Relaxed);
            return truncated(&self.file, self.identity.size);
        }
        error
    }

    /// Recovers the block if the lock's holder died inside a write section
    /// ([`super::recover`]); `true` if it did.
    #[cold]
    fn recover_dead_holder(&self) -> bool {
        matches!(
            recover::dead_holder(&self.app, &self.path, self.identity, &self.objects),
            Ok(Recovery::Recovered)
        )
    }

    /// The block's generation as mapped now (zero once the mapping faulted).
    #[inline]
    fn generation(&self) -> Option<u64> {
        self.raw.load_u64(GENERATION_OFFSET)
    }

    #[inline]
    fn seq_load(&self) -> u64 {
        // SAFETY: SEQ_OFFSET + 8 <= HEADER_SIZE <= mapping length (checked at open), 8-aligned.
        unsafe { self.raw.u64_at(SEQ_OFFSET) }.load(Ordering::Acquire)
    }

    #[inline]
    fn seq_relaxed(&self) -> u64 {
        // SAFETY: as in `seq_load`.
        unsafe { self.raw.u64_at(SEQ_OFFSET) }.load(Ordering::Relaxed)
    }
}

/// Registers `raw` with the fault table for one read window, waiting for a free entry (every
/// one taken means [`fault::ENTRIES`] threads are reading at once) until `until`.
#[inline]
fn watch(raw: &RawBlock, writable: bool, until: Instant) -> Result<Watch<'_>, ReadError> {
    if let Some(w) = Watch::new(raw, writable) {
        return Ok(w);
    }
    watch_slow(raw, writable, until)
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
fn truncated(file: &File, mapped: u64) -> ReadError {
    ReadError::Truncated {
        actual: shm::identity(file).map_or(0, |id| id.size),
        expected: mapped,
    }
}

/// Offset of [`BlockHeader::generation`].
const GENERATION_OFFSET: usize = core::mem::offset_of!(BlockHeader, generation);

/// Spin briefly, then yield, then sleep: a writer's section lasts microseconds, `lock_ctrs` may
/// last longer.
fn backoff(attempt: u32) {
    match attempt {
        0..=3 => std::hint::spin_loop(),
        4..=10 => std::thread::yield_now(),
        _ => std::thread::sleep(Duration::from_micros(200)),
    }
}

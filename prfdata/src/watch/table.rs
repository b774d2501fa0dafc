//! The watch table's layout and its low-level operations, shared by the app (which creates and
//! reads it) and collectors (which write leases): every word reached atomically through
//! [`RawBlock`]'s checked accessors.
//!
//! ```text
//! 0    magic u32 ("PRFW")   4 version u32   8 generation u32 (futex word)   12 slots u32
//! 16   slot size u32        20..64 reserved
//! 64 + i * SLOT_SIZE: slot i
//!      0 pid u32 (0 free, DETACHED_PID detached)   4 reserved   8 start time u64
//!        (the holder, alive while it holds its presence lock on this file, version 2)
//!      16 expiry u64 (perf_counter ticks)   24 reserved   32 bits [u64; 8]   96..128 reserved
//! ```

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{WatchError, WatchSet, SLOTS, WATCH_WORDS};
use crate::block::fault;
use crate::block::presence::{Presence, Probe};
use crate::block::raw::RawBlock;
use crate::process::ProcessId;
use crate::sys::{futex, shm};

pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"PRFW");
/// 2: a lease's holder is alive while it holds its presence lock on the table's file
/// (`crate::block::presence`, as on a block), which holds across pid namespaces, where 1 asked
/// `/proc` for its pid. A version-1 collector holds none: a version-2 app would drop its lease.
pub(crate) const VERSION: u32 = 2;
pub(crate) const HEADER_SIZE: usize = 64;
pub(crate) const SLOT_SIZE: usize = 128;
pub(crate) const FILE_SIZE: usize = HEADER_SIZE + SLOTS * SLOT_SIZE;

const OFF_MAGIC: usize = 0;
const OFF_VERSION: usize = 4;
const OFF_GENERATION: usize = 8;
const OFF_SLOTS: usize = 12;
const OFF_SLOT_SIZE: usize = 16;

const SLOT_PID: usize = 0;
const SLOT_START: usize = 8;
const SLOT_EXPIRY: usize = 16;
const SLOT_BITS: usize = 32;
const _: () = assert!(SLOT_BITS + WATCH_WORDS * 8 <= SLOT_SIZE);

/// The pid word of a detached lease (no holder process; it lives by its expiry only). No Linux
/// pid reaches it (`pid_max` is at most 2^22).
pub(crate) const DETACHED_PID: u32 = u32::MAX;

/// `<dir>/<app>.watch`.
pub(crate) fn path_in(dir: &Path, app: &str) -> PathBuf {
    dir.join(format!("{app}.watch"))
}

/// A mapped watch table (either side).
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) raw: RawBlock,
    /// The file: lease holders' presences are probed through it (it holds none).
    file: File,
    /// This process's presence on the table, for the leases it writes (a table opened by a
    /// collector, or by another process of the app).
    _presence: Option<Presence>,
}

/// One slot as read: untrusted, every field as it was.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotImage {
    pub(crate) pid: u32,
    pub(crate) start_time: u64,
    pub(crate) expiry: u64,
    pub(crate) set: WatchSet,
}

impl Table {
    /// Creates the table for `app` in `dir` (replacing any old one: the caller just published
    /// the app's block, so an old table belongs to a dead instance of the app): written to a
    /// temporary file, owner-only, then renamed into place, so collectors never see a half-made
    /// table. Returns it mapped, with its path and identity.
    pub(crate) fn create(dir: &Path, app: &str) -> io::Result<(Table, PathBuf, shm::FileIdentity)> {
        let path = path_in(dir, app);
        let tmp = dir.join(format!(".{app}.watch.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let file = shm::create_exclusive(&tmp)?;
        let made = (|| {
            shm::reserve(&file, FILE_SIZE as u64)?;
            let raw = RawBlock::map(&file, FILE_SIZE, true)?;
            let table = Table {
                raw,
                file: file.try_clone()?,
                _presence: None,
            };
            table.word(OFF_MAGIC).store(MAGIC, Ordering::Relaxed);
            table.word(OFF_VERSION).store(VERSION, Ordering::Relaxed);
            table.word(OFF_SLOTS).store(SLOTS as u32, Ordering::Relaxed);
            table
                .word(OFF_SLOT_SIZE)
                .store(SLOT_SIZE as u32, Ordering::Relaxed);
            let identity = shm::identity(&file)?;
            std::fs::rename(&tmp, &path)?;
            Ok((table, identity))
        })();
        match made {
            Ok((table, identity)) => Ok((table, path, identity)),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Opens an existing table read-write with the untrusted-file rules (no symlink, no FIFO,
    /// a regular file of this user, mode 0600, exactly [`FILE_SIZE`] bytes, a known header).
    pub(crate) fn open(path: &Path) -> Result<(Table, shm::FileIdentity), WatchError> {
        let not = |reason: String| WatchError::NotATable {
            path: path.to_path_buf(),
            reason,
        };
        let (file, id): (File, _) = match shm::open_regular(path, true) {
            Ok(opened) => opened,
            Err(shm::OpenError::NotFound) => {
                return Err(WatchError::NotActive {
                    path: path.to_path_buf(),
                })
            }
            Err(shm::OpenError::Symlink) => return Err(not("a symbolic link".into())),
            Err(shm::OpenError::NotRegular(kind)) => return Err(not(format!("a {kind}"))),
            Err(shm::OpenError::Io(source)) => {
                return Err(WatchError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let uid = shm::current_uid();
        if id.uid != uid || id.mode & 0o077 != 0 {
            return Err(not(format!(
                "owner uid {} mode {:o}, expected uid {uid} and no access for others",
                id.uid,
                id.mode & 0o777
            )));
        }
        if id.size != FILE_SIZE as u64 {
            return Err(not(format!("{} bytes, expected {FILE_SIZE}", id.size)));
        }
        let io = |source| WatchError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Before the mapping: from here on, a truncation under an access is survivable.
        fault::init().map_err(io)?;
        let raw = RawBlock::map(&file, FILE_SIZE, true).map_err(io)?;
        let presence = Presence::take(&file, path, ProcessId::current()).map_err(io)?;
        let table = Table {
            raw,
            file,
            _presence: Some(presence),
        };
        let header = {
            let _guard = table.guard();
            (
                table.word(OFF_MAGIC).load(Ordering::Relaxed),
                table.word(OFF_VERSION).load(Ordering::Relaxed),
                table.word(OFF_SLOTS).load(Ordering::Relaxed),
                table.word(OFF_SLOT_SIZE).load(Ordering::Relaxed),
            )
        };
        if header != (MAGIC, VERSION, SLOTS as u32, SLOT_SIZE as u32) {
            return Err(not(format!(
                "header (magic {:#x}, version {}, {} slots of {} bytes), expected \
                 ({MAGIC:#x}, {VERSION}, {SLOTS}, {SLOT_SIZE})",
                header.0, header.1, header.2, header.3
            )));
        }
        Ok((table, id))
    }

    /// Whether the process that holds a lease (`pid`, `start_time`, from a slot: untrusted)
    /// is alive: its presence lock on the table's file, the same from every pid namespace.
    pub(crate) fn holder_alive(&self, pid: u32, start_time: u64) -> bool {
        Probe(&self.file).is_alive(ProcessId { pid, start_time })
    }

    /// A read window over the table for the time the result lives: a truncation of the file
    /// under it maps zero pages in instead of raising SIGBUS ([`fault`]). `None` if the
    /// process-wide fault table is full (then the access is unguarded, as a block's writer is).
    pub(crate) fn guard(&self) -> Option<fault::Watch<'_>> {
        fault::Watch::new(&self.raw, true)
    }

    /// A header word (offsets are constants inside the fixed-size mapping).
    fn word(&self, off: usize) -> &AtomicU32 {
        self.raw
            .u32_checked(off)
            .unwrap_or_else(|| unreachable!("header word {off} inside the {FILE_SIZE}-byte map"))
    }

    /// The generation word collectors bump and the app sleeps on.
    pub(crate) fn generation(&self) -> &AtomicU32 {
        self.word(OFF_GENERATION)
    }

    /// Announces a change: bumps the generation and wakes every waiter (the app's waiter).
    pub(crate) fn announce(&self) {
        self.generation().fetch_add(1, Ordering::Release);
        futex::wake(self.generation(), u32::MAX);
    }

    fn slot_off(slot: usize, field: usize) -> usize {
        HEADER_SIZE + slot * SLOT_SIZE + field
    }

    fn slot_u32(&self, slot: usize, field: usize) -> &AtomicU32 {
        let off = Self::slot_off(slot % SLOTS, field);
        self.raw
            .u32_checked(off)
            .unwrap_or_else(|| unreachable!("slot word {off} inside the map"))
    }

    fn slot_u64(&self, slot: usize, field: usize) -> &std::sync::atomic::AtomicU64 {
        let off = Self::slot_off(slot % SLOTS, field);
        self.raw
            .u64_checked(off)
            .unwrap_or_else(|| unreachable!("slot word {off} inside the map"))
    }

    /// Reads slot `slot` as it is now (untrusted).
    pub(crate) fn read(&self, slot: usize) -> SlotImage {
        let pid = self.slot_u32(slot, SLOT_PID).load(Ordering::Acquire);
        let mut words = [0u64; WATCH_WORDS];
        for (i, w) in words.iter_mut().enumerate() {
            *w = self
                .slot_u64(slot, SLOT_BITS + 8 * i)
                .load(Ordering::Relaxed);
        }
        SlotImage {
            pid,
            start_time: self.slot_u64(slot, SLOT_START).load(Ordering::Relaxed),
            expiry: self.slot_u64(slot, SLOT_EXPIRY).load(Ordering::Acquire),
            set: WatchSet::from_words(words),
        }
    }

    /// Takes slot `slot` from `seen` (its pid word as last read) for `pid`: `false` if another
    /// process changed it first.
    pub(crate) fn claim(&self, slot: usize, seen: u32, pid: u32) -> bool {
        self.slot_u32(slot, SLOT_PID)
            .compare_exchange(seen, pid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Frees slot `slot` if its pid word is still `pid`.
    pub(crate) fn free(&self, slot: usize, pid: u32) -> bool {
        self.claim(slot, pid, 0)
    }

    /// Writes a claimed slot's holder start time, watch set and expiry (the expiry last, with
    /// release ordering: an app that sees it sees the rest).
    pub(crate) fn fill(&self, slot: usize, start_time: u64, set: &WatchSet, expiry: u64) {
        self.slot_u64(slot, SLOT_START)
            .store(start_time, Ordering::Relaxed);
        for (i, w) in set.words().iter().enumerate() {
            self.slot_u64(slot, SLOT_BITS + 8 * i)
                .store(*w, Ordering::Relaxed);
        }
        self.slot_u64(slot, SLOT_EXPIRY)
            .store(expiry, Ordering::Release);
    }

    /// Sets a slot's expiry.
    pub(crate) fn set_expiry(&self, slot: usize, expiry: u64) {
        self.slot_u64(slot, SLOT_EXPIRY)
            .store(expiry, Ordering::Release);
    }
}

/// `perf_counter` now, as the table stores times (ticks of the monotonic clock, which every
/// process of the machine shares).
pub(crate) fn now() -> u64 {
    crate::clock::perf_counter().max(0) as u64
}

/// `now() + ttl`, with `ttl` capped at [`Lease::MAX_TTL`](super::Lease::MAX_TTL).
pub(crate) fn expiry_after(ttl: std::time::Duration) -> u64 {
    let ttl = ttl.min(super::MAX_LEASE_TTL);
    now().saturating_add(crate::clock::ticks(ttl).max(0) as u64)
}

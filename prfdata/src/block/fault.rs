//! Reading a block that another process may truncate at any moment, without dying of `SIGBUS`.
//!
//! # Why a signal handler
//!
//! A reader maps a block another process owns. If that process (or anyone who can write the
//! file) truncates it, the next load from a page past the new end raises `SIGBUS`, whose default
//! action kills the reader: a collector, with every other app's data. Checking the file's size
//! before each read does not help: the truncation can land between the check and the load (a
//! one experiment killed an in-process collector in 8 to 165 of 300 truncations). No
//! check can close that race; only handling the fault can.
//!
//! So, as Wayland compositors do for their clients' shared-memory pools (libwayland-server's
//! `wl_shm_buffer_begin_access` and `sigbus_handler`): every read of a mapping happens inside a
//! [`Watch`], which registers the mapping's address range in a small table of mappings being
//! read. A process-wide `SIGBUS` handler ([`crate::sys::sigbus`]) looks the faulting address up
//! in the table; if a watched mapping holds it, the handler maps anonymous zero pages over the
//! whole mapping, marks the entry faulted and returns, and the load runs again and reads
//! zeros. After its copy the reader asks [`Watch::faulted`]: if so, what it read is void, the
//! read reports [`ReadError::Truncated`](super::reader::ReadError::Truncated) ("no data this
//! time"), and the reader is dropped and the block reopened. Faults elsewhere go to the handler
//! installed before ours, or kill the process as they would have.
//!
//! # The table
//!
//! [`ENTRIES`] entries, each a small seqlock (its `seq` says which state the entry is in and
//! changes whenever its range does), claimed with one compare-and-exchange and released with one
//! store. The handler never waits: it reads each registered entry's range between two loads of
//! its `seq` and skips entries that changed meanwhile. Registration costs a compare-and-exchange
//! and four stores per read window (no system call), release one store.
//!
//! ```text
//!  seq % 4   state        who
//!  -------   ----------   -------------------------------------------------------------
//!        0   free         Watch::new claims it: compare-and-exchange to seq + 1
//!        1   being set    the claimer writes start, len, writable, faulted = false
//!        2   registered   handlers read it; Watch::drop releases: store seq + 2 (free)
//! ```
//!
//! # Why the handler may map over a watched range
//!
//! An entry is registered only while its `Watch` lives, and a `Watch` borrows the mapping, so a
//! registered entry's range is a live mapping. The handler acts only on a `BUS_ADRERR` fault at
//! an address inside a registered range read whole between two equal `seq` loads: at that
//! moment the range is a live mapping that holds the faulting address, and live mappings do not
//! overlap, so it is the mapping the faulting thread was reading; that thread is inside its
//! read, so the mapping stays live while the handler replaces its pages. Other threads reading
//! the same mapping read zeros from then on: their entries are marked too, and a window that
//! starts later finds the block's generation zero ([`super::reader`] checks it after each copy).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::raw::RawBlock;
use crate::sys::sigbus;

/// Entries in the table: the most threads of one process that can be inside a read at the
/// same time. A thread that finds every entry taken waits for one (bounded by its read
/// deadline); 64 is far more than the threads a collector reads blocks with.
pub(crate) const ENTRIES: usize = 64;

/// One mapping being read.
struct Entry {
    /// The state and version; see the table in the module docs.
    seq: AtomicUsize,
    /// The mapping's first byte.
    start: AtomicUsize,
    /// Its length in bytes.
    len: AtomicUsize,
    /// Whether it is mapped writable (the zero pages are too, so stores do not fault either).
    writable: AtomicBool,
    /// Set by the handler when it replaced the mapping.
    faulted: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array below, never shared
const FREE: Entry = Entry {
    seq: AtomicUsize::new(0),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    writable: AtomicBool::new(false),
    faulted: AtomicBool::new(false),
};

static TABLE: [Entry; ENTRIES] = [FREE; ENTRIES];

/// Installs the process-wide handler (once): call before the first [`Watch`].
///
/// # Errors
///
/// The `sigaction` error if it could not be installed; then blocks must not be read.
pub(crate) fn init() -> std::io::Result<()> {
    sigbus::install(on_fault)
}

/// A read window over a mapping: registered in the table while it lives.
pub(crate) struct Watch<'a> {
    entry: &'static Entry,
    /// The entry's `seq` while registered (`2 mod 4`).
    seq: usize,
    _raw: &'a RawBlock,
}

impl<'a> Watch<'a> {
    /// Registers `raw` (mapped `writable` or not) as being read; `None` if every entry is
    /// taken (the caller retries later). [`init`] must have succeeded.
    #[inline]
    pub(crate) fn new(raw: &'a RawBlock, writable: bool) -> Option<Watch<'a>> {
        // Start the search at an entry that depends on the thread (its stack address), so that
        // threads reading at once rarely contend for one entry.
        let probe = 0u8;
        let first = (&probe as *const u8 as usize >> 12) % ENTRIES;
        for i in 0..ENTRIES {
            let entry = &TABLE[(first + i) % ENTRIES];
            let seq = entry.seq.load(Ordering::Relaxed);
            if !seq.is_multiple_of(4) {
                continue;
            }
            if entry
                .seq
                .compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            entry.start.store(raw.base() as usize, Ordering::Relaxed);
            entry.len.store(raw.len(), Ordering::Relaxed);
            entry.writable.store(writable, Ordering::Relaxed);
            entry.faulted.store(false, Ordering::Relaxed);
            // Release: a handler that sees `seq + 2` sees the fields above.
            entry.seq.store(seq + 2, Ordering::Release);
            return Some(Watch {
                entry,
                seq: seq + 2,
                _raw: raw,
            });
        }
        None
    }

    /// Whether a fault inside the mapping was repaired while this window was registered: the
    /// mapping now holds zeros, and nothing read through it since the fault means anything.
    #[inline]
    pub(crate) fn faulted(&self) -> bool {
        self.entry.faulted.load(Ordering::Acquire)
    }
}

impl Drop for Watch<'_> {
    #[inline]
    fn drop(&mut self) {
        // Free again, with a new version: a handler that read the old range sees `seq` move.
        self.entry
            .seq
            .store(self.seq.wrapping_add(2), Ordering::Release);
    }
}

/// The [`sigbus::FaultHook`]: runs inside the `SIGBUS` handler, so only atomics and
/// [`sigbus::map_zeros`].
fn on_fault(addr: usize) -> bool {
    let mut repaired = false;
    // Every registered entry whose range holds `addr`: the same mapping, read by several
    // threads. The first one's range is replaced; all are marked.
    for entry in &TABLE {
        let seq = entry.seq.load(Ordering::Acquire);
        if seq % 4 != 2 {
            continue;
        }
        let start = entry.start.load(Ordering::Relaxed);
        let len = entry.len.load(Ordering::Relaxed);
        let writable = entry.writable.load(Ordering::Relaxed);
        // The fields were read between two equal loads of `seq`: they belong together.
        std::sync::atomic::fence(Ordering::Acquire);
        if entry.seq.load(Ordering::Relaxed) != seq {
            continue;
        }
        if addr < start || addr - start >= len {
            continue;
        }
        if !repaired {
            // SAFETY: `[start, start + len)` is a registered, so live, mapping that holds the
            // faulting address: the one the faulting thread is reading, which stays mapped
            // while it is inside its read (see the module docs). Its pages are the reader's
            // own; the `MmapRaw` that owns the mapping unmaps these pages when dropped.
            if !unsafe { sigbus::map_zeros(start, len, writable) } {
                return false;
            }
            repaired = true;
        }
        entry.faulted.store(true, Ordering::Release);
    }
    repaired
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn mapped(len: usize) -> (tempfile::NamedTempFile, RawBlock) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&vec![7u8; len]).unwrap();
        let raw = RawBlock::map(file.as_file(), len, false).unwrap();
        (file, raw)
    }

    #[test]
    fn a_watch_registers_its_range_and_frees_its_entry() {
        init().unwrap();
        let (_file, raw) = mapped(4096);
        let registered = |raw: &RawBlock| {
            TABLE.iter().any(|e| {
                e.seq.load(Ordering::Relaxed) % 4 == 2
                    && e.start.load(Ordering::Relaxed) == raw.base() as usize
            })
        };
        {
            let watch = Watch::new(&raw, false).unwrap();
            assert!(registered(&raw));
            assert!(!watch.faulted());
        }
        assert!(!registered(&raw), "dropped: free again");
    }

    #[test]
    fn a_truncated_mapping_reads_zeros_and_says_so() {
        init().unwrap();
        let (file, raw) = mapped(3 * 4096);
        let watch = Watch::new(&raw, false).unwrap();
        assert_eq!(raw.load_u64(8192), Some(0x0707_0707_0707_0707));
        file.as_file().set_len(4096).unwrap();
        // Past the new end of the file: SIGBUS, repaired; the whole mapping is zeros now.
        assert_eq!(raw.load_u64(8192), Some(0));
        assert_eq!(raw.load_u64(0), Some(0));
        assert!(watch.faulted());
        drop(watch);
        let again = Watch::new(&raw, false).unwrap();
        assert!(!again.faulted(), "a new window starts clean");
    }

    #[test]
    fn every_window_over_the_faulted_mapping_is_marked() {
        init().unwrap();
        let (file, raw) = mapped(2 * 4096);
        let first = Watch::new(&raw, false).unwrap();
        let second = Watch::new(&raw, false).unwrap();
        let (_other_file, other) = mapped(4096);
        let elsewhere = Watch::new(&other, false).unwrap();
        file.as_file().set_len(0).unwrap();
        assert_eq!(raw.load_u32(4096), Some(0));
        assert!(first.faulted() && second.faulted());
        assert!(!elsewhere.faulted(), "another mapping is untouched");
        assert_eq!(other.load_u32(0), Some(0x0707_0707));
    }
}

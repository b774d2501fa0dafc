//! On-demand counters, the collector's side: raise a request, wait a bounded time for the app
//! to serve it (the protocol is drawn in the app side's module, `prfdata::on_demand`, and on
//! [`BlockHeader::od_request`](crate::layout::BlockHeader::od_request)).
//!
//! The request word is the one word of the block a reader writes. The reader maps the block's
//! first page read-write for it (opened again, checked to be the same file, as the dead-holder
//! recovery does), once, and keeps that mapping; the rest of the block stays mapped read-only.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::block_reader::{watch, BlockReader};
use super::error::ReadError;
use crate::block::open::open_block;
use crate::block::raw::RawBlock;
use crate::layout::{HEADER_SIZE, OD_REQUEST_OFFSET, OD_SERVED_OFFSET};
use crate::sys::{futex, shm};

/// What [`BlockReader::refresh_on_demand`] found.
///
/// # Examples
///
/// See [`BlockReader::refresh_on_demand`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// The block declares no on-demand counter: nothing was asked.
    NotNeeded,
    /// The app served the request (this one, or one another collector raised just before):
    /// the on-demand counters hold values computed after the call began.
    Served,
    /// The bound passed first (the app is stopped, busy, or registered no closure): the
    /// counters hold the last values served. The request stays pending, so the next collector
    /// shares it rather than raising another.
    TimedOut,
}

impl BlockReader {
    /// Asks the app for fresh values of its on-demand counters (seed 000's `PSTF_FUNCPTR`) and
    /// waits at most `bound` for them: a provider calls it before it reads the block in a
    /// Collect. Collectors asking at once share one request. It never waits past `bound`,
    /// whatever the app does.
    ///
    /// # Errors
    ///
    /// [`ReadError::Open`] or [`ReadError::Io`] if the block cannot be mapped read-write for the
    /// request word, [`ReadError::Replaced`] if the file at the path is no longer the one
    /// opened, [`ReadError::Truncated`] if it was truncated meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use prfdata::reader::{BlockReader, Refresh, DEFAULT_READ_DEADLINE};
    /// prfdata::prfdata_map! { pub mod m { app: "RefreshDoc",
    ///   object PROC { name: "Process", help: "This process.", counters {
    ///     ANSWER: RawCount { name: "Answer", help: name, on_demand: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.on_demand(m::ANSWER, || 42)?;
    ///
    /// let reader = BlockReader::open_path("RefreshDoc", &dir.path().join("RefreshDoc.blk"))?;
    /// // A generous bound for a doctest; providers use the service's (20 ms by default).
    /// assert_eq!(reader.refresh_on_demand(Duration::from_secs(5))?, Refresh::Served);
    /// assert_eq!(reader.read_with(DEFAULT_READ_DEADLINE, |v| v.global_value(0, 0))?, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refresh_on_demand(&self, bound: Duration) -> Result<Refresh, ReadError> {
        if !self.records.counters.iter().any(|c| c.on_demand) {
            return Ok(Refresh::NotNeeded);
        }
        let deadline = Instant::now() + bound;
        let header = self.header_rw()?;
        let guard = watch(header, true, deadline)?;
        // SAFETY: both words lie in the first HEADER_SIZE bytes of `header`, a mapping of at
        // least that length, 4-aligned (layout.rs checks the offsets); they are only ever
        // accessed atomically; `header` lives as long as `self`.
        let (request, served) = unsafe {
            (
                header.u32_at(OD_REQUEST_OFFSET),
                header.u32_at(OD_SERVED_OFFSET),
            )
        };
        let target = raise(request, served);
        let outcome = wait_served(served, target, deadline);
        if guard.faulted() {
            self.spent.store(true, Ordering::Relaxed);
            return Err(super::block_reader::truncated(
                &self.file,
                self.identity.size,
            ));
        }
        Ok(outcome)
    }

    /// The first page of the block, mapped read-write (once, then kept).
    fn header_rw(&self) -> Result<&RawBlock, ReadError> {
        if let Some(raw) = self.header_rw.get() {
            return Ok(raw);
        }
        let io = |source| ReadError::Io {
            path: self.path.clone(),
            source,
        };
        let file = open_block(&self.app, &self.path, true)?;
        let now = shm::identity(&file).map_err(io)?;
        if (now.dev, now.ino, now.size)
            != (self.identity.dev, self.identity.ino, self.identity.size)
        {
            return Err(ReadError::Replaced);
        }
        // The file holds at least HEADER_SIZE bytes: checked at open, and it is the same file
        // of the same size.
        let raw = RawBlock::map(&file, HEADER_SIZE, true).map_err(io)?;
        // Another thread may have mapped it meanwhile: keep the first.
        let _ = self.header_rw.set(raw);
        self.header_rw.get().ok_or(ReadError::Replaced)
    }
}

/// The request generation to wait for: the pending one, or a new one raised here (and the
/// app's thread woken).
fn raise(request: &AtomicU32, served: &AtomicU32) -> u32 {
    let r = request.load(Ordering::Acquire);
    if r != served.load(Ordering::Acquire) {
        return r; // pending: share it
    }
    match request.compare_exchange(r, r.wrapping_add(1), Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            futex::wake(request, u32::MAX);
            r.wrapping_add(1)
        }
        Err(now) => now, // another collector raised it first
    }
}

/// Sleeps on `served` until it reaches `target` (in wrapping order) or `deadline` passes.
fn wait_served(served: &AtomicU32, target: u32, deadline: Instant) -> Refresh {
    loop {
        let s = served.load(Ordering::Acquire);
        // Wrapping order: `s` is at or past `target` when the distance from target is under
        // half the range.
        if s.wrapping_sub(target) < 1 << 31 {
            return Refresh::Served;
        }
        let Some(left) = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        else {
            return Refresh::TimedOut;
        };
        futex::wait(served, s, Some(left));
    }
}

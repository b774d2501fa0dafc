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
use crate::layout::{HEADER_SIZE, OD_OBJECTS_OFFSET, OD_REQUEST_OFFSET, OD_SERVED_OFFSET};
use crate::on_demand::object_bit;
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
        self.refresh_on_demand_of(|_| true, bound)
    }

    /// [`BlockReader::refresh_on_demand`] for the objects `wanted` says (by index among
    /// [`BlockReader::objects`]) only: the app runs the closures of those objects (and of
    /// objects 64 apart from them, which share their bit in the request).
    ///
    /// # Errors
    ///
    /// As [`BlockReader::refresh_on_demand`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::reader::BlockReader::open("App")?;
    /// // Only the first object's on-demand counters.
    /// reader.refresh_on_demand_of(|obj| obj == 0, std::time::Duration::from_millis(20))?;
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn refresh_on_demand_of(
        &self,
        wanted: impl Fn(usize) -> bool,
        bound: Duration,
    ) -> Result<Refresh, ReadError> {
        let counters = &self.records.counters;
        let mask = self
            .records
            .objects
            .iter()
            .enumerate()
            .filter(|(i, o)| wanted(*i) && counters[o.counters.clone()].iter().any(|c| c.on_demand))
            .fold(0u64, |m, (i, _)| m | object_bit(i));
        if mask == 0 {
            return Ok(Refresh::NotNeeded);
        }
        let deadline = Instant::now() + bound;
        let header = self.header_rw()?;
        let guard = watch(header, true, || deadline)?;
        // SAFETY: the three words lie in the first HEADER_SIZE bytes of `header`, a mapping of
        // at least that length, aligned to their sizes (layout.rs checks the offsets); they are
        // only ever accessed atomically; `header` lives as long as `self`.
        let (request, served, objects) = unsafe {
            (
                header.u32_at(OD_REQUEST_OFFSET),
                header.u32_at(OD_SERVED_OFFSET),
                header.u64_at(OD_OBJECTS_OFFSET),
            )
        };
        let prev = objects.fetch_or(mask, Ordering::AcqRel);
        let target = raise(request, served, prev & mask == mask);
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

/// The request generation to wait for: the pending one when `covered` (this collector's
/// objects were already in the requested mask, so the app has not taken them yet and will
/// with its next serve), or a new one raised here (and the app's thread woken).
///
/// A collector whose objects were not in the mask cannot share a pending request: the app
/// may have taken the mask for it already. It raises the next generation, which the app
/// serves after taking the mask again.
fn raise(request: &AtomicU32, served: &AtomicU32, covered: bool) -> u32 {
    let r = request.load(Ordering::Acquire);
    if covered && r != served.load(Ordering::Acquire) {
        return r; // pending, and it will cover this collector's objects: share it
    }
    let next = r.wrapping_add(1);
    match request.compare_exchange(r, next, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            futex::wake(request, u32::MAX);
            next
        }
        // Another collector raised it after this one's objects were in the mask: that
        // request's serve takes the mask after the raise, so it covers them.
        Err(now) => now,
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

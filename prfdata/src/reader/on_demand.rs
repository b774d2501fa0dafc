//! On-demand counters, the collector's side: raise a request, wait a bounded time for the app
//! to serve it (the protocol is drawn in the app side's module, `prfdata::on_demand`, and on
//! [`BlockHeader::od_request`](crate::layout::BlockHeader::od_request)).
//!
//! The request word is the one word of the block a reader writes. The reader maps the block's
//! first page read-write for it (opened again, checked to be the same file, as the dead-holder
//! recovery does), once, and keeps that mapping; the rest of the block stays mapped read-only.
//!
//! A provider serving several apps asks them all first and then waits for each until its own
//! deadline ([`BlockReader::refresh_on_demand_all`]): their waits overlap instead of adding up.
//! And a reader does not wait again for an app that let a request pass its deadline (stopped,
//! busy, or without a closure) until the app has served that request: [`Refresh::Missed`], the
//! last values at once.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::block_reader::{watch, BlockReader};
use super::error::ReadError;
use crate::block::open::open_block;
use crate::block::raw::RawBlock;
use crate::layout::{HEADER_SIZE, OD_OBJECTS_OFFSET, OD_REQUEST_OFFSET, OD_SERVED_OFFSET};
use crate::on_demand::object_bit;
use crate::sys::{futex, shm};

/// What [`BlockReader::refresh_on_demand`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Not waited for: a request of this reader passed its deadline and the app has not served
    /// it since (it is still stopped, busy, or without a closure). The counters hold the last
    /// values served; the objects asked for are added to the pending request, which the app
    /// serves when it runs again, and the reader waits again from then on.
    Missed,
}

/// What asking a block for its on-demand values did (the first half of a refresh).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    /// Nothing to wait for, and why ([`Refresh::NotNeeded`] or [`Refresh::Missed`]).
    Done(Refresh),
    /// A request of this generation is raised (or shared): wait until the app served it.
    Pending(u32),
}

/// `BlockReader::od_missed` when no request of the reader is known to have missed its deadline.
const NOT_MISSED: u64 = 0;

/// `BlockReader::od_missed` for a request of generation `target` that missed its deadline.
fn missed(target: u32) -> u64 {
    1 << 32 | u64::from(target)
}

impl BlockReader {
    /// Asks the app for fresh values of its on-demand counters (the Windows 95 stat servers'
    /// `PSTF_FUNCPTR`) and waits at most `bound` for them: a provider calls it before it reads the
    /// block in a Collect. Collectors asking at once share one request. It never waits past
    /// `bound`, whatever the app does, and does not wait at all ([`Refresh::Missed`]) while a
    /// request of this reader that passed its deadline is still unserved.
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
    /// use prfdata::reader::{BlockReader, Refresh};
    /// prfdata::prfdata_map! { pub mod m { app: "RefreshDoc",
    ///   object PROC { name: "Process", help: "This process.", counters {
    ///     ANSWER: RawCount { name: "Answer", help: name, on_demand: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.on_demand().serve(m::ANSWER, || 42)?;
    ///
    /// let reader = BlockReader::open_path("RefreshDoc", &dir.path().join("RefreshDoc.blk"))?;
    /// // A generous bound for a doctest; providers use the service's (20 ms by default).
    /// assert_eq!(reader.refresh_on_demand(Duration::from_secs(5))?, Refresh::Served);
    /// assert_eq!(reader.read_with(BlockReader::DEFAULT_READ_DEADLINE, |v| v.global_value(0, 0))?, 42);
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
        let deadline = Instant::now() + bound;
        let mut all = BlockReader::refresh_on_demand_all(&[(self, deadline)], |_, o| wanted(o));
        all.pop().unwrap_or(Ok(Refresh::NotNeeded))
    }

    /// [`BlockReader::refresh_on_demand_of`] for several blocks at once: asks each of `blocks`
    /// for the on-demand values of the objects `wanted(block, object)` says (by position in
    /// `blocks`, and by index among that block's [`BlockReader::objects`]), then waits for each
    /// until its own deadline. The apps compute their values meanwhile, so the call takes at
    /// most the latest deadline, not the sum of the waits. One result per block, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use prfdata::reader::{BlockReader, Refresh};
    /// prfdata::prfdata_map! { pub mod m { app: "AllDoc",
    ///   object PROC { name: "Process", help: "This process.", counters {
    ///     ANSWER: RawCount { name: "Answer", help: name, on_demand: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.on_demand().serve(m::ANSWER, || 42)?;
    /// let reader = BlockReader::open_path("AllDoc", &dir.path().join("AllDoc.blk"))?;
    /// let deadline = Instant::now() + Duration::from_secs(5);
    /// let got = BlockReader::refresh_on_demand_all(&[(&reader, deadline)], |_, _| true);
    /// assert_eq!(got[0].as_ref().ok(), Some(&Refresh::Served));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refresh_on_demand_all(
        blocks: &[(&BlockReader, Instant)],
        wanted: impl Fn(usize, usize) -> bool,
    ) -> Vec<Result<Refresh, ReadError>> {
        let asked: Vec<Result<Asked, ReadError>> = blocks
            .iter()
            .enumerate()
            .map(|(b, (reader, _))| reader.ask(|o| wanted(b, o)))
            .collect();
        asked
            .into_iter()
            .zip(blocks)
            .map(|(asked, (reader, deadline))| match asked? {
                Asked::Done(refresh) => Ok(refresh),
                Asked::Pending(target) => reader.wait(target, *deadline),
            })
            .collect()
    }

    /// Raises (or shares) a request for the on-demand values of the objects `wanted` says,
    /// unless a request of this reader that missed its deadline is still unserved.
    fn ask(&self, wanted: impl Fn(usize) -> bool) -> Result<Asked, ReadError> {
        let counters = &self.records.counters;
        let mask = self
            .records
            .objects
            .iter()
            .enumerate()
            .filter(|(i, o)| wanted(*i) && counters[o.counters.clone()].iter().any(|c| c.on_demand))
            .fold(0u64, |m, (i, _)| m | object_bit(i));
        if mask == 0 {
            return Ok(Asked::Done(Refresh::NotNeeded));
        }
        let header = self.header_rw()?;
        let guard = watch(header, true, || {
            Instant::now() + BlockReader::DEFAULT_READ_DEADLINE
        })?;
        let (request, served, objects) = words(header);
        let prev = objects.fetch_or(mask, Ordering::AcqRel);
        let missed = self.od_missed.load(Ordering::Relaxed);
        let asked = if missed != NOT_MISSED && !reached(served, missed as u32) {
            // Still unserved: the objects are in its mask now; no wait, no new request.
            Asked::Done(Refresh::Missed)
        } else {
            self.od_missed.store(NOT_MISSED, Ordering::Relaxed);
            Asked::Pending(raise(request, served, prev & mask == mask))
        };
        self.check_fault(guard.faulted())?;
        Ok(asked)
    }

    /// Waits until the app served generation `target` or `deadline` passes, whichever is
    /// first; a request that passes its deadline is remembered as missed.
    fn wait(&self, target: u32, deadline: Instant) -> Result<Refresh, ReadError> {
        let header = self.header_rw()?;
        let guard = watch(header, true, || deadline)?;
        let (_, served, _) = words(header);
        let outcome = wait_served(served, target, deadline);
        if outcome == Refresh::TimedOut {
            self.od_missed.store(missed(target), Ordering::Relaxed);
        }
        self.check_fault(guard.faulted())?;
        Ok(outcome)
    }

    /// [`ReadError::Truncated`] (and the reader spent) if a fault window on the request page
    /// `faulted`.
    fn check_fault(&self, faulted: bool) -> Result<(), ReadError> {
        if faulted {
            self.spent.store(true, Ordering::Relaxed);
            return Err(super::block_reader::truncated(
                &self.file,
                self.identity.size,
            ));
        }
        Ok(())
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

/// The request word, the served word and the requested-objects mask of the request page.
fn words(header: &RawBlock) -> (&AtomicU32, &AtomicU32, &AtomicU64) {
    // SAFETY: the three words lie in the first HEADER_SIZE bytes of `header`, a mapping of at
    // least that length, aligned to their sizes (layout.rs checks the offsets); they are only
    // ever accessed atomically; the references live as long as `header`, which lives as long
    // as the reader that mapped it.
    unsafe {
        (
            header.u32_at(OD_REQUEST_OFFSET),
            header.u32_at(OD_SERVED_OFFSET),
            header.u64_at(OD_OBJECTS_OFFSET),
        )
    }
}

/// Whether `served` is at or past `target`, in wrapping order (the distance from `target` under
/// half the range).
fn reached(served: &AtomicU32, target: u32) -> bool {
    served.load(Ordering::Acquire).wrapping_sub(target) < 1 << 31
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

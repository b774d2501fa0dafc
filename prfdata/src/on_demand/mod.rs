//! On-demand counters, the app's side (the Windows 95 stat servers' `PSTF_FUNCPTR`: "the data is
//! only calculated when requested").
//!
//! The protocol, through two futex words of the block header ([`BlockHeader::od_request`] and
//! [`BlockHeader::od_served`](crate::layout::BlockHeader::od_served)):
//!
//! ```text
//! collector (reader::BlockReader::refresh_on_demand)      app (the servicing thread here)
//!   prev = od_objects.fetch_or(its objects)                 sleeps on od_request (futex)
//!   r = od_request, s = od_served
//!   r != s and prev had its objects: share r
//!   else: CAS od_request r → r+1, wake     ───────────▶     wakes: r' = od_request != od_served
//!                                                           mask = od_objects.swap(0)
//!   sleeps on od_served (futex), at most                    runs the closures of the objects
//!   the service's bound                                     in mask, stores each value
//!                                          ◀───────────     od_served = r' (Release), wake all
//!   serves the block: fresh values, or the last ones if the bound passed first
//! ```
//!
//! The thread starts with the first closure registered ([`OnDemand::serve`]) and sleeps on
//! the request word; it never polls. It is stopped and joined when its [`PrfData`] is dropped,
//! before the block is unmapped (a closure still running is waited for). A closure that panics is logged and its counter keeps its last
//! value; the others are still served.
//!
//! [`BlockHeader::od_request`]: crate::layout::BlockHeader::od_request
//! [`PrfData`]: crate::PrfData

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod handle;

pub use handle::OnDemand;

use crate::layout::{OD_OBJECTS_OFFSET, OD_REQUEST_OFFSET, OD_SERVED_OFFSET};
use crate::sys::futex;

/// One registered closure: runs the app's function and stores the value in its counter.
pub(crate) type Closure = Box<dyn FnMut() + Send>;

/// How long dropping a [`Server`] waits for its thread before it logs that a closure has not
/// returned (it keeps waiting: the thread writes into the mapping, which must outlive it).
const STOP_LIMIT: Duration = Duration::from_secs(2);
/// Pause between two wakes while stopping (the thread may have been between its check of the
/// stop flag and its futex wait when the first wake came).
const STOP_RETRY: Duration = Duration::from_millis(1);

/// A block's two on-demand words, reached through a pointer into a mapping the owner keeps
/// alive (see [`Server::start`]).
struct Words {
    base: *mut u8,
}

// SAFETY: `base` points into a shared mapping that outlives every thread using `Words` (the
// server joins its thread before its owner unmaps the block), and the words it reaches are only
// accessed atomically.
unsafe impl Send for Words {}
// SAFETY: as above; shared access is through atomics only.
unsafe impl Sync for Words {}

impl Words {
    fn request(&self) -> &AtomicU32 {
        // SAFETY: OD_REQUEST_OFFSET + 4 <= HEADER_SIZE <= the mapping's length, 4-aligned in a
        // page-aligned mapping (layout.rs checks the offset at compile time); the word is only
        // ever accessed atomically; the mapping outlives `self` (see `Server::start`).
        unsafe { AtomicU32::from_ptr(self.base.add(OD_REQUEST_OFFSET).cast()) }
    }

    fn served(&self) -> &AtomicU32 {
        // SAFETY: as in `request`, for OD_SERVED_OFFSET.
        unsafe { AtomicU32::from_ptr(self.base.add(OD_SERVED_OFFSET).cast()) }
    }

    fn objects(&self) -> &AtomicU64 {
        // SAFETY: as in `request`, for OD_OBJECTS_OFFSET (8-aligned, checked in layout.rs).
        unsafe { AtomicU64::from_ptr(self.base.add(OD_OBJECTS_OFFSET).cast()) }
    }
}

struct Shared {
    words: Words,
    /// (object index, counter offset, closure).
    closures: Mutex<Vec<(usize, usize, Closure)>>,
    stop: AtomicBool,
}

/// The servicing thread of one [`PrfData`](crate::PrfData) handle and its closures.
pub(crate) struct Server {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The process that started the thread: a forked child has the handle but not the thread.
    pid: u32,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").finish_non_exhaustive()
    }
}

impl Server {
    /// Starts the servicing thread for the block mapped at `base`.
    ///
    /// # Safety
    ///
    /// `base` is the start of a mapping of a whole block (at least `HEADER_SIZE` bytes,
    /// page-aligned) that stays mapped until this `Server` is dropped, and every closure given
    /// to [`Server::register`] only touches memory that stays valid as long.
    pub(crate) unsafe fn start(base: *mut u8) -> std::io::Result<Server> {
        let shared = Arc::new(Shared {
            words: Words { base },
            closures: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("prfdata-on-demand".into())
            .spawn(move || serve(&for_thread))?;
        Ok(Server {
            shared,
            thread: Some(thread),
            pid: std::process::id(),
        })
    }

    /// Registers (or replaces) the closure of the counter at block offset `offset` of object
    /// `object`, then wakes the thread so that a request already pending is served with it.
    pub(crate) fn register(&self, object: usize, offset: usize, closure: Closure) {
        let mut closures = self
            .shared
            .closures
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match closures.iter_mut().find(|(_, o, _)| *o == offset) {
            Some(slot) => slot.2 = closure,
            None => closures.push((object, offset, closure)),
        }
        drop(closures);
        futex::wake(self.shared.words.request(), u32::MAX);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let Some(thread) = self.thread.take() else {
            return;
        };
        if self.pid != std::process::id() {
            // A forked copy: the thread lives (or lived) in the parent only.
            std::mem::forget(thread);
            return;
        }
        let start = Instant::now();
        let mut warned = false;
        // Woken again until it ends: the first wake may come between its check of `stop` and
        // its futex wait. Joined whatever a closure does, since the thread writes into the
        // mapping the caller unmaps next.
        while !thread.is_finished() {
            if !warned && start.elapsed() > STOP_LIMIT {
                warned = true;
                log::warn!(
                    "an on-demand closure has not returned within {STOP_LIMIT:?}: still waiting \
                     for it before the block is unmapped"
                );
            }
            futex::wake(self.shared.words.request(), u32::MAX);
            std::thread::sleep(STOP_RETRY);
        }
        let _ = thread.join();
    }
}

/// The servicing thread: sleeps on the request word, serves each new request.
fn serve(shared: &Shared) {
    let (request, served) = (shared.words.request(), shared.words.served());
    loop {
        let r = request.load(Ordering::Acquire);
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        if r == served.load(Ordering::Acquire) {
            futex::wait(request, r, None);
            continue;
        }
        // The objects asked for since the last swap: every collector set its bits before it
        // raised (or shared) the request now pending.
        let mask = shared.words.objects().swap(0, Ordering::AcqRel);
        run_requested(shared, mask);
        // Release: the values stored by the closures happen before a collector's Acquire load
        // of the served generation, hence before its read of the block.
        served.store(r, Ordering::Release);
        futex::wake(served, u32::MAX);
    }
}

/// The bit of object `object` in [`BlockHeader::od_objects`](crate::layout::BlockHeader).
pub(crate) fn object_bit(object: usize) -> u64 {
    1 << (object % 64)
}

fn run_requested(shared: &Shared, mask: u64) {
    let mut closures = shared
        .closures
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    for (object, offset, closure) in closures.iter_mut() {
        if mask & object_bit(*object) == 0 {
            continue;
        }
        if catch_unwind(AssertUnwindSafe(&mut *closure)).is_err() {
            log::error!(
                "the on-demand closure of the counter at block offset {offset} panicked: the \
                 counter keeps its last value"
            );
        }
    }
}

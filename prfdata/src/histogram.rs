//! Recording into a histogram: [`HistogramCtr`], and [`HistogramTimer`] for durations.
//!
//! A histogram of a map is a `PERF_PRFDATA_HISTOGRAM` counter whose value is a descriptor (written
//! by readers, see `prfdata_rules::histogram::Descriptor`) then one `u64` per bucket, preceded by
//! its sum (a sharded `PERF_AVERAGE_BULK`) and its base (`PERF_AVERAGE_BASE`, the count, which
//! readers compute from the buckets). A record is:
//!
//! ```text
//!   i = geometry.index(v)                 no branch for log-linear buckets
//!   bucket[i] += 1                        relaxed fetch_add: the one locked instruction
//!                                         (`sharded: true` and a slot: a load and a store)
//!   sum += v                              the thread's shard word: a load and a store
//! ```
//!
//! Relaxed atomics are enough: a bucket is a counter, whose read-modify-write alone makes
//! records from every thread and process exact; a shard word has one writer (the thread that
//! claimed its slot, see the `shard` module); readers need no order between a bucket and the
//! sum, which both only grow (a read that sees one without the other is off by the records in
//! flight, at most one per recording thread); and the count is not stored but summed from the
//! same copy of the buckets, so count and buckets always agree.

use core::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use prfdata_rules::histogram::{Geometry, LogLinear};

use crate::counter_type::{CounterType, TimeHistogram};
use crate::shard::ShardedCtr;

/// A handle on a histogram for the thread that made it: [`record`](HistogramCtr::record) adds a
/// value with one relaxed `fetch_add` on its bucket (none with `sharded: true` while the thread
/// owns a shard slot) and a relaxed load and store of the thread's own sum word. No lock, no
/// allocation, no system call.
///
/// Made by [`PrfData::histogram`](crate::PrfData::histogram). Like [`ShardedCtr`], it is neither
/// `Send` nor `Sync` (its words are its thread's): take one per thread, outside the hot loop.
/// `T` is the histogram's marker: [`TimeHistogram`](crate::counter_type::TimeHistogram) (a time
/// unit, with [`record_duration`](HistogramCtr::record_duration) and
/// [`start_timer`](HistogramCtr::start_timer)) or [`Histogram`](crate::counter_type::Histogram).
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! { pub mod m { app: "HistogramCtrDoc",
///   object SERVER { name: "Server", help: name, counters {
///     SIZE: Histogram { name: "Request size", help: "Bytes per request.", unit: bytes,
///       buckets: [64, 1024, 65536] },
///   } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// let size = prf.histogram(m::SIZE, ());
/// for v in [10, 100, 1000, 100_000] {
///     size.record(v);
/// }
/// // Readers see the sum (counter 0), the count (its base, 1) and the four buckets (2).
/// let reader = prfdata::reader::BlockReader::open_path("HistogramCtrDoc", prf.path())?;
/// let read = |c| reader.read_with(std::time::Duration::from_secs(1), |v| v.global_value(0, c));
/// assert_eq!(read(0)?, 101_110);
/// assert_eq!(read(1)?, 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HistogramCtr<'a, T> {
    /// The geometry the map declared (validated with the map at activation or attach).
    geometry: &'static Geometry,
    /// Its log-linear parameters, kept in the handle: the hot path reads them beside the
    /// words' addresses instead of following `geometry` (`None` for explicit bounds).
    log_linear: Option<LogLinear>,
    /// The address of bucket 0's word (the thread's shard line's with `sharded: true` and a
    /// slot, else the counter block's), its lowest bit set when the words are shared: a
    /// record adds with `fetch_add` then. Clear only when `own_sum` is the thread's word too.
    buckets: *const AtomicU64,
    /// The thread's own sum word when `buckets` is the thread's (null otherwise): an owned
    /// record tests one bit for both.
    own_sum: *const AtomicU64,
    /// The sum: the thread's shard word, or the counter block's.
    sum: ShardedCtr<'a>,
    /// The words' borrow; not `Send`, not `Sync` (the slot words are the thread's).
    _words: PhantomData<Words<'a, T>>,
}

/// What a [`HistogramCtr`] borrows and is: the words for `'a`, a raw pointer's `!Send` and
/// `!Sync`, and its marker `T`.
type Words<'a, T> = (&'a [AtomicU64], *const (), fn() -> T);

/// [`HistogramCtr::buckets`]' bit for shared words.
const SHARED: usize = 1;

impl<'a, T: CounterType> HistogramCtr<'a, T> {
    /// A handle on the buckets at `buckets` (`geometry.buckets()` words, the thread's own when
    /// `owned`) and on `sum`.
    ///
    /// # Safety
    ///
    /// `buckets` points to `geometry.buckets()` consecutive 8-aligned `AtomicU64`s that live for
    /// `'a`, only ever accessed atomically; when `owned`, no thread but the current one writes
    /// them while the handle lives (they are its shard slot's).
    pub(crate) unsafe fn new(
        geometry: &'static Geometry,
        buckets: *const AtomicU64,
        owned: bool,
        sum: ShardedCtr<'a>,
    ) -> Self {
        debug_assert_eq!(buckets.addr() & SHARED, 0, "an AtomicU64 is 8-aligned");
        let log_linear = match geometry {
            Geometry::LogLinear(l) => Some(*l),
            Geometry::Explicit(_) => None,
        };
        // Owned buckets come with an owned sum (the same slot); without one, both are shared.
        let (buckets, own_sum) = match (owned, sum.own_word()) {
            (true, Some(own_sum)) => (buckets, own_sum),
            _ => (buckets.wrapping_byte_add(SHARED), core::ptr::null()),
        };
        HistogramCtr {
            geometry,
            log_linear,
            buckets,
            own_sum,
            sum,
            _words: PhantomData,
        }
    }

    /// Records `v`, in the histogram's unit: its bucket counts one more, the sum grows by `v`
    /// (wrapping at 2^64, as a 64-bit counter does). A value below the declared range counts in
    /// the underflow bucket, one above it in the overflow bucket.
    #[inline]
    pub fn record(&self, v: u64) {
        let i = match &self.log_linear {
            Some(l) => l.index(v),
            None => self.geometry.index(v),
        };
        let tagged = self.buckets;
        if tagged.addr() & SHARED == 0 {
            // SAFETY: with its lowest bit clear, `tagged` is the `buckets` pointer `new` was
            // given, to `geometry.buckets()` words that outlive the handle; `index` returns a
            // bucket below `geometry.buckets()` (values past the range go to the last bucket):
            // word `i` is one of them, 8-aligned. `new` clears the bit only with `own_sum` the
            // thread's own slot word, which outlives the handle too (`sum` borrows it).
            let (word, sum) = unsafe { (&*tagged.add(i), &*self.own_sum) };
            // The thread's own words: plain loads and stores, no locked instruction.
            word.store(
                word.load(Ordering::Relaxed).wrapping_add(1),
                Ordering::Relaxed,
            );
            sum.store(
                sum.load(Ordering::Relaxed).wrapping_add(v),
                Ordering::Relaxed,
            );
        } else {
            // SAFETY: with its lowest bit set, `tagged` is that pointer plus one byte (`new`:
            // the words are 8-aligned, so the bit was clear); one byte back is the pointer
            // again, with its provenance, and word `i` is in bounds as above.
            let word = unsafe { &*tagged.wrapping_byte_sub(SHARED).add(i) };
            word.fetch_add(1, Ordering::Relaxed);
            self.sum.add(v as i64);
        }
    }

    /// The shard slot this thread owns (where its sum goes, and with `sharded: true` its
    /// buckets), or `None` when every slot was taken and the thread adds to the counter
    /// block's words with atomic adds (as [`ShardedCtr::slot`]).
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "HistogramSlotDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     LATENCY: Histogram { name: "Latency", help: "Microseconds.", unit: us,
    ///       range: 1us..10s, error: 5%, sharded: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// assert!(prf.histogram(m::LATENCY, ()).slot().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slot(&self) -> Option<u32> {
        self.sum.slot()
    }

    /// The histogram's geometry: its buckets' edges, its unit and its stated error.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "HistogramGeometryDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     LATENCY: Histogram { name: "Latency", help: "Microseconds.", unit: us,
    ///       range: 1us..10s, error: 2% },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let g = prf.histogram(m::LATENCY, ()).geometry();
    /// assert_eq!(g.buckets(), 1166);
    /// assert_eq!(g.relative_error(), Some(1.0 / 64.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn geometry(&self) -> &'static Geometry {
        self.geometry
    }
}

/// A histogram marker whose unit is a time (`ns`, `us`, `ms` or `s`): its handle records
/// [`Duration`]s ([`HistogramCtr::record_duration`], [`HistogramCtr::start_timer`]).
#[diagnostic::on_unimplemented(
    message = "a timer records a duration: declare the histogram with a time unit",
    label = "this histogram's unit is not a time",
    note = "`unit: ns`, `us`, `ms` or `s` make a `TimeHistogram`; record a number with `record`"
)]
pub trait TimeUnit: CounterType + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::counter_type::TimeHistogram {}
}

impl TimeUnit for TimeHistogram {}

/// Durations, for a histogram with a time unit (the bound on each method, so that calling one
/// on another histogram names it: [`TimeUnit`]'s message).
impl<'a, T: CounterType> HistogramCtr<'a, T> {
    /// Records `d` in the histogram's unit (rounded down; a duration past 2^64 units counts
    /// as 2^64 − 1, in the overflow bucket).
    #[inline]
    pub fn record_duration(&self, d: Duration)
    where
        T: TimeUnit,
    {
        // A time unit (the marker says so): its nanoseconds, at least 1.
        let per_unit = u128::from(self.geometry.unit().nanos().unwrap_or(1).max(1));
        let v = d.as_nanos() / per_unit;
        self.record(u64::try_from(v).unwrap_or(u64::MAX));
    }

    /// A guard that records the time from now until it is dropped (or
    /// [`stopped`](HistogramTimer::stop)). It costs two clock reads
    /// ([`Instant::now`], a vDSO call on Linux) on top of the record.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "StartTimerDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     LATENCY: Histogram { name: "Latency", help: "Microseconds.", unit: us,
    ///       range: 1us..10s, error: 5% },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let latency = prf.histogram(m::LATENCY, ());
    /// {
    ///     let _timer = latency.start_timer();
    ///     std::thread::sleep(std::time::Duration::from_millis(2));
    /// } // recorded here, in microseconds
    /// let took = latency.start_timer().stop(); // recorded, and returned
    /// assert!(took < std::time::Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn start_timer(&self) -> HistogramTimer<'_, 'a, T>
    where
        T: TimeUnit,
    {
        HistogramTimer {
            histogram: self,
            start: Instant::now(),
        }
    }
}

/// A running timer of a [`HistogramCtr`] with a time unit, from
/// [`HistogramCtr::start_timer`]: records the elapsed time when dropped.
#[must_use = "a timer records when it is dropped: dropping it at once records about zero"]
pub struct HistogramTimer<'h, 'a, T: TimeUnit> {
    histogram: &'h HistogramCtr<'a, T>,
    start: Instant,
}

impl<T: TimeUnit> HistogramTimer<'_, '_, T> {
    /// Records the elapsed time now, and returns it.
    pub fn stop(self) -> Duration {
        let took = self.start.elapsed();
        self.histogram.record_duration(took);
        std::mem::forget(self);
        took
    }

    /// Stops the timer without recording anything.
    pub fn discard(self) {
        std::mem::forget(self);
    }
}

impl<T: TimeUnit> Drop for HistogramTimer<'_, '_, T> {
    #[inline]
    fn drop(&mut self) {
        self.histogram.record_duration(self.start.elapsed());
    }
}

impl<T> core::fmt::Debug for HistogramCtr<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HistogramCtr")
            .field("buckets", &self.geometry.buckets())
            .field("owned", &(self.buckets.addr() & SHARED == 0))
            .field("slot", &self.sum.slot())
            .finish()
    }
}

impl<T: TimeUnit> core::fmt::Debug for HistogramTimer<'_, '_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HistogramTimer")
            .field("start", &self.start)
            .finish()
    }
}

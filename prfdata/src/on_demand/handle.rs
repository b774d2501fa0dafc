//! [`OnDemand`], the handle [`PrfData::on_demand`] gives: registers the closures the servicing
//! thread ([`Server`](super::Server)) runs when a collector asks.

use crate::counter_type::{AtomicWidth, CounterType};
use crate::map::{data_offset, CtrId, Global, Object, PerfDataMap, Source};
use crate::{Error, PrfData};

use super::Server;

/// Serves the on-demand counters of a [`PrfData`] (the Windows 95 stat servers'
/// `PSTF_FUNCPTR`): made by [`PrfData::on_demand`].
#[derive(Debug)]
pub struct OnDemand<'a, M: PerfDataMap> {
    prf: &'a PrfData<M>,
}

impl<M: PerfDataMap> PrfData<M> {
    /// The handle that registers the closures of on-demand counters ([`OnDemand`]).
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "OnDemandHandleDoc",
    ///   object PROC { name: "Process", help: "This process.", counters {
    ///     ANSWER: RawCount { name: "Answer", help: name, on_demand: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.on_demand().serve(m::ANSWER, || 42)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_demand(&self) -> OnDemand<'_, M> {
        OnDemand { prf: self }
    }
}

/// A counter's atomic, carried to the on-demand thread.
struct CounterPtr<A>(*const A);

impl<A> CounterPtr<A> {
    /// The pointer (a method, so that a closure captures the whole `Send` wrapper).
    fn get(&self) -> *const A {
        self.0
    }
}

// SAFETY: `A` is `AtomicI32` or `AtomicI64` in shared memory that outlives the thread it is sent
// to (see `OnDemand::serve`); it is only accessed atomically.
unsafe impl<A: Sync> Send for CounterPtr<A> {}

impl<M: PerfDataMap> OnDemand<'_, M> {
    /// Registers `f` as the closure that computes the on-demand counter `ctr` (declared
    /// `on_demand: true` in the map: the Windows 95 stat servers' `PSTF_FUNCPTR`), replacing any
    /// earlier one.
    ///
    /// The first registration starts the handle's servicing thread, which sleeps until a
    /// collector asks for fresh values, then runs every registered closure and stores each value
    /// in its counter (the collector's side is
    /// [`BlockReader::refresh_on_demand`](crate::reader::BlockReader::refresh_on_demand)). A
    /// collector waits for the answer at most its service's bound
    /// (`Services\<app>\Performance\OnDemand Timeout`, 20 ms by default), then serves the last
    /// value: keep closures short. The thread stops when the [`PrfData`] is dropped (waiting for a
    /// closure still running).
    ///
    /// # Errors
    ///
    /// [`Error::NotOnDemand`] if the map does not declare `ctr` on demand;
    /// [`Error::OnDemandThread`] if the servicing thread cannot be started.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "OnDemandDoc",
    ///   object PROC { name: "Process", help: "This process.", counters {
    ///     OPEN_FILES: RawCount { name: "Open files", help: name, on_demand: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.on_demand().serve(m::OPEN_FILES, || {
    ///     std::fs::read_dir("/proc/self/fd").map_or(-1, |d| d.count() as i32)
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn serve<T, O, F>(&self, ctr: CtrId<T, O>, mut f: F) -> Result<(), Error>
    where
        T: CounterType,
        T::Width: AtomicWidth,
        O: Object<Map = M, Scope = Global>,
        F: FnMut() -> <T::Width as AtomicWidth>::Value + Send + 'static,
    {
        let def = &M::DEF.objects[O::INDEX].counters[ctr.index()];
        if def.source != Source::OnDemand {
            return Err(Error::NotOnDemand {
                counter: def.symbol,
            });
        }
        let server = match self.prf.on_demand.get() {
            Some(server) => server,
            None => {
                // SAFETY: `base` is the start of the whole block's mapping, which `self.prf.block`
                // keeps until the `PrfData` is dropped; its `on_demand` is declared before `block`,
                // so the server (and its thread) is dropped first. The closures below touch
                // only counters inside that mapping.
                let server = unsafe { Server::start(self.prf.block.raw.base()) }
                    .map_err(Error::OnDemandThread)?;
                // Another thread may have started one meanwhile: keep the first, drop ours.
                let _ = self.prf.on_demand.set(server);
                self.prf.on_demand.get().ok_or(Error::NotOnDemand {
                    counter: def.symbol,
                })?
            }
        };
        let offset = const { data_offset::<O>() } + ctr.offset();
        let counter = CounterPtr(self.prf.atomic_at::<T::Width>(offset) as *const _);
        server.register(
            O::INDEX,
            offset,
            Box::new(move || {
                let value = f();
                // SAFETY: `counter` points at the counter's atomic in the block's mapping,
                // which outlives the server's thread, the only caller (see above).
                let atomic = unsafe { &*counter.get() };
                <T::Width as AtomicWidth>::__store(atomic, value);
            }),
        );
        Ok(())
    }
}

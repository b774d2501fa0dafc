//! [`Instances`], the handle [`PrfData::instances`] gives: listing, naming, removing whole
//! subtrees, reclaiming dead owners' instances, and the [`Instance`] guard.

use core::fmt;
use core::ops::Deref;

use crate::error::Error;
use crate::instances::SlotRef;
use crate::map::InstanceId;
use crate::map::{Instanced, Object, PerfDataMap};
use crate::PrfData;

/// The instances of a [`PrfData`] beyond adding and removing one: made by
/// [`PrfData::instances`].
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! { pub mod m { app: "InstancesDoc",
///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
///     counters { DONE: CounterCounter { name: "Done", help: name } } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// prf.add_instance(m::WORKER, "w1")?;
/// prf.add_instance(m::WORKER, "w2")?;
/// let instances = prf.instances();
/// let names: Vec<String> =
///     instances.list(m::WORKER)?.into_iter().filter_map(|i| instances.name(i)).collect();
/// assert_eq!(names, ["w1", "w2"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Instances<'a, M: PerfDataMap> {
    pub(crate) prf: &'a PrfData<M>,
}

impl<'a, M: PerfDataMap> Instances<'a, M> {
    /// The live instances of `obj`, in the order collectors report them.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if the object's live list was written outside prfdata.
    pub fn list<O>(&self, _obj: O) -> Result<Vec<InstanceId<O>>, Error>
    where
        O: Object<Map = M, Scope = Instanced>,
    {
        let prf = self.prf;
        let _lock = prf.lock_layout();
        let table = prf.tables().table(O::INDEX);
        let slots = table.live_slots().map_err(|c| prf.corrupt(c))?;
        Ok(slots
            .into_iter()
            .filter_map(|slot| {
                let generation = table.live_generation(slot)?;
                Some(InstanceId::new(table.block_offset(slot), slot, generation))
            })
            .collect())
    }

    /// The name of a live instance, or `None` if it was removed.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "InstanceNameDoc",
    ///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
    ///     counters { DONE: CounterCounter { name: "Done", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let w = prf.add_instance(m::WORKER, "worker 1")?;
    /// assert_eq!(prf.instances().name(w).as_deref(), Some("worker 1"));
    /// prf.remove_instance(w)?;
    /// assert_eq!(prf.instances().name(w), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name<O>(&self, inst: InstanceId<O>) -> Option<String>
    where
        O: Object<Map = M, Scope = Instanced>,
    {
        let _lock = self.prf.lock_layout();
        let table = self.prf.tables().table(O::INDEX);
        (table.live_generation(inst.slot()) == Some(inst.generation()))
            .then(|| String::from_utf16_lossy(&table.name(inst.slot())))
    }

    /// Removes an instance and every instance below it (its children, their children, ...), in
    /// one write section: collectors see the whole tree or none of it. Returns how many
    /// instances were removed (`inst` included). Their ids are all stale afterwards.
    ///
    /// O(live instances of the block) when `inst` has children, O(1) otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownInstance`] if `inst` was removed already; [`Error::Corrupt`] if the
    /// block's instance tables were written outside prfdata (the instances found before the
    /// damage are removed).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::InstanceSpec;
    /// prfdata::prfdata_map! { pub mod m { app: "RemoveTreeDoc",
    ///   object POOL { name: "Pool", help: name, instances: { max: 4, name_len: 16 },
    ///     counters { SIZE: RawCount { name: "Size", help: name } } }
    ///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
    ///     counters { DONE: CounterCounter { name: "Done", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let pool = prf.add_instance(m::POOL, "pool A")?;
    /// let w1 = prf.add_instance(m::WORKER, InstanceSpec::named("w1").parent(pool))?;
    /// prf.add_instance(m::WORKER, InstanceSpec::named("w2").parent(pool))?;
    /// assert_eq!(prf.instances().remove_tree(pool)?, 3);
    /// assert!(prf.instances().list(m::WORKER)?.is_empty());
    /// assert!(prf.remove_instance(w1).is_err(), "removed with its parent");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_tree<O>(&self, inst: InstanceId<O>) -> Result<usize, Error>
    where
        O: Object<Map = M, Scope = Instanced>,
    {
        let prf = self.prf;
        let lock = prf.lock_layout();
        let tables = prf.tables();
        if tables.table(O::INDEX).live_generation(inst.slot()) != Some(inst.generation()) {
            return Err(Error::UnknownInstance {
                object: M::DEF.objects[O::INDEX].symbol,
            });
        }
        let order = tables
            .subtree(SlotRef::of(&inst))
            .map_err(|c| prf.corrupt(c))?;
        let _section = lock.section(prf.seq());
        let mut removed = 0;
        for n in &order {
            let table = tables.table(n.object as usize);
            if tables
                .remove(&table, n.slot, n.generation)
                .map_err(|c| prf.corrupt(c))?
            {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Reclaims the instances whose owner process died (added with
    /// [`InstanceSpec::process_owned`](crate::InstanceSpec::process_owned)): their `sum`
    /// counters are folded into their objects' retired accumulators and their slots freed.
    /// Adding and removing instances does it too; call this from a supervisor that adds nothing
    /// for a while. Returns how many instances were reclaimed.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if the block's instance tables were written outside prfdata.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::InstanceSpec;
    /// prfdata::prfdata_map! { pub mod m { app: "ReclaimDoc",
    ///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
    ///     counters { DONE: CounterCounter { name: "Done", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.add_instance(m::WORKER, InstanceSpec::named("me").process_owned())?;
    /// assert_eq!(prf.instances().reclaim_dead()?, 0, "we are alive");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reclaim_dead(&self) -> Result<usize, Error> {
        let lock = self.prf.lock_layout();
        self.prf.reclaim_locked(&lock)
    }

    /// Puts a live instance under an [`Instance`] guard: it is removed (with any instance below
    /// it) when the guard is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::Ordering::Relaxed;
    /// prfdata::prfdata_map! { pub mod m { app: "GuardedDoc",
    ///   object JOB { name: "Job", help: "One running job.",
    ///     instances: { max: 8, name_len: 16 }, counters {
    ///     STEPS: RawCount { name: "Steps", help: "Steps done." },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// fn run(prf: &m::PrfData) -> Result<(), Box<dyn std::error::Error>> {
    ///     let job = prf.instances().guard(prf.add_instance(m::JOB, "nightly")?);
    ///     prf.get_ctr32(m::STEPS, *job).fetch_add(1, Relaxed);
    ///     Err("step 2 failed")? // the job's instance is removed on the way out
    /// }
    /// assert!(run(&prf).is_err());
    /// assert!(prf.instances().list(m::JOB)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn guard<O>(&self, inst: InstanceId<O>) -> Instance<'a, O>
    where
        O: Object<Map = M, Scope = Instanced>,
    {
        Instance {
            prf: self.prf,
            id: inst,
        }
    }
}

/// A live instance that is removed when this guard is dropped: the opt-in scoped form of
/// [`InstanceId`], made by [`Instances::guard`].
///
/// It dereferences to its id, so `*guard` goes wherever an [`InstanceId`] goes
/// ([`PrfData::get_ctr64`], the parent of a new instance, ...). The plain id API stays for
/// instances whose life is not a scope.
///
/// # Dropping
///
/// Dropping the guard removes the instance **and every instance below it**
/// ([`Instances::remove_tree`]), so an error path never leaves children that name a parent
/// that is gone, nor an instance monitors would show until the process exits. The ids of the
/// instances removed with it are stale afterwards (a guard of one of them, dropped later, finds
/// its instance gone and does nothing: the removal checks the slot's generation, so it never
/// removes an instance that took the slot since). Drop child guards before their parent's
/// (declare them after it in the same scope) to remove them one by one.
///
/// A removal that fails on drop can only be [`Error::Corrupt`] (the block was written outside
/// prfdata): it is logged through the [`log`] facade at `warn` level and the instance stays.
/// To handle the error, call [`Instance::remove`] instead of dropping the guard; to keep the
/// instance, [`Instance::into_id`].
///
/// # Examples
///
/// ```
/// use std::sync::atomic::Ordering::Relaxed;
/// prfdata::prfdata_map! { pub mod m { app: "InstanceGuardDoc",
///   object CONN { name: "Connection", help: "One client connection.",
///     instances: { max: 16, name_len: 32 }, counters {
///     BYTES: BulkCount { name: "Bytes/sec", help: "Bytes sent." },
///   } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// {
///     let conn = prf.instances().guard(prf.add_instance(m::CONN, "10.0.0.7:51234")?);
///     prf.get_ctr64(m::BYTES, *conn).fetch_add(1500, Relaxed);
///     assert_eq!(prf.instances().name(*conn).as_deref(), Some("10.0.0.7:51234"));
/// } // the connection's instance is removed here
/// assert!(prf.instances().list(m::CONN)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping the guard removes the instance at once"]
pub struct Instance<'a, O: Object<Scope = Instanced>> {
    prf: &'a PrfData<O::Map>,
    id: InstanceId<O>,
}

impl<O: Object<Scope = Instanced>> Instance<'_, O> {
    /// The instance's id (also `*guard`).
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "InstanceIdDoc", object W { name: "W",
    /// #   help: name, instances: { max: 2, name_len: 8 }, counters {
    /// #   C: RawCount { name: "C", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let w = prf.instances().guard(prf.add_instance(m::W, "w")?);
    /// assert_eq!(w.id(), *w);
    /// assert_eq!(w.id().slot(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> InstanceId<O> {
        self.id
    }

    /// Removes the instance and every instance below it now, as dropping the guard does, but
    /// returns the outcome: how many instances were removed.
    ///
    /// # Errors
    ///
    /// As [`Instances::remove_tree`]: [`Error::UnknownInstance`] if it was removed already
    /// (with an ancestor), [`Error::Corrupt`].
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "InstanceRemoveDoc", object W { name: "W",
    /// #   help: name, instances: { max: 2, name_len: 8 }, counters {
    /// #   C: RawCount { name: "C", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let w = prf.instances().guard(prf.add_instance(m::W, "w")?);
    /// assert_eq!(w.remove()?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(self) -> Result<usize, Error> {
        let (prf, id) = (self.prf, self.into_id());
        prf.instances().remove_tree(id)
    }

    /// Gives up the guard and keeps the instance: it lives until removed through its id.
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "InstanceIntoIdDoc", object W { name: "W",
    /// #   help: name, instances: { max: 2, name_len: 8 }, counters {
    /// #   C: RawCount { name: "C", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let w = prf.instances().guard(prf.add_instance(m::W, "w")?).into_id();
    /// assert_eq!(prf.instances().list(m::W)?, [w]);
    /// prf.remove_instance(w)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_id(self) -> InstanceId<O> {
        let id = self.id;
        // Nothing to release but the removal `Drop` would do.
        core::mem::forget(self);
        id
    }
}

impl<O: Object<Scope = Instanced>> Deref for Instance<'_, O> {
    type Target = InstanceId<O>;

    fn deref(&self) -> &InstanceId<O> {
        &self.id
    }
}

impl<O: Object<Scope = Instanced>> Drop for Instance<'_, O> {
    fn drop(&mut self) {
        match self.prf.instances().remove_tree(self.id) {
            Ok(_) => {}
            // Removed already, with an ancestor whose guard was dropped first: nothing to do.
            Err(Error::UnknownInstance { .. }) => {
                log::debug!("{:?}: removed already, with an ancestor", self.id)
            }
            Err(e) => log::warn!(
                "cannot remove {:?} when its guard is dropped; it stays in the block: {e}",
                self.id
            ),
        }
    }
}

impl<O: Object<Scope = Instanced>> fmt::Debug for Instance<'_, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Instance").field(&self.id).finish()
    }
}

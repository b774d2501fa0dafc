//! [`PrfData`]: an activated block, its instances and its live counters.

use core::fmt;
use core::marker::PhantomData;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use crate::block::create::{join_deadline, BlockFile, Departure, Joined};
use crate::counter_type::{
    AtomicWidth, Buckets, CounterType, Dword, ElapsedTime, Large, Scalar, TextType, Width,
};
use crate::error::Error;
use crate::histogram::HistogramCtr;
use crate::instances::Instances;
use crate::instances::{Corrupt, NewInstance, SlotRef, Tables};
use crate::layout;
use crate::map::{CtrId, InstanceId, Instanced, Object, PerfDataMap, Scope};
use crate::on_demand::Server;
use crate::optex::{Optex, OptexGuard};
use crate::shard::{ShardHost, ShardedCtr};
use crate::watch::waiter::Host as WatchHost;
use crate::watch::Watching;
use crate::write_lock::{held_here, Acquisition, HeldMark, WriteSection};
use prfdata_rules::histogram::Descriptor;

/// An activated performance data block for map `M`: CPrfData's object after `Activate`.
///
/// [`PrfData::activate`] creates the app's named shared-memory block, laid out from the map;
/// monitors in other processes read it through the provider library. Counters are updated through
/// the references [`get_ctr32`](PrfData::get_ctr32) / [`get_ctr64`](PrfData::get_ctr64) return:
/// one atomic instruction, at an offset the map fixed at compile time. Instances are added and
/// removed under the block's cross-process [`Optex`].
///
/// `PrfData` is `Send + Sync`: share it between threads with `&` or an `Arc`. Other processes of
/// the same app open the same block with [`PrfData::attach`] (or [`PrfData::activate`], which
/// joins a live block of the same map). Every such process is a member of the block, none
/// special: the block stays while one is alive, and the last one out (its handle dropped, or
/// its normal exit) removes it.
///
/// # Forked children
///
/// A child made with `fork` (without `exec`) inherits the handle and the mapping, which stays
/// shared with the parent. It may use the handle as an [attached](PrfData::attach) process
/// does: update counters, add and remove instances, take [`lock_ctrs`](PrfData::lock_ctrs). Its
/// locks are taken in its own name (its pid and start time), so the parent recovers the block if
/// the child dies holding one. It is not a member in its own name: dropping the handle in the
/// child, or the child's exit, leaves the block and its members table alone, and a guard or write section that
/// the child's copy of a thread held at the fork is not released or closed by the child (the
/// parent's thread still holds it).
///
/// # Locking
///
/// The methods that change the instance tables or set text take the block's lock; the
/// thread that holds [`lock_ctrs`](PrfData::lock_ctrs) may call them too (they then run inside
/// its write section), so no combination of these methods waits for itself.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::Ordering::Relaxed;
///
/// prfdata::prfdata_map! {
///     pub mod shop {
///         app: "PrfDataDocShop",
///         object STORE = 0 {
///             name: "Shop", help: "The shop.", detail: Novice, default: SALES,
///             instances: none, costly: false,
///             counters {
///                 SALES = 2: CounterCounter { name: "Sales/sec", help: "Sales.", detail: Novice, scale: 0 },
///             }
///         }
///         object TILL = 4 {
///             name: "Till", help: "One till.", detail: Novice, default: SCANNED,
///             instances: { max: 8, name_len: 16 }, costly: false,
///             counters {
///                 SCANNED = 6: BulkCount { name: "Items/sec", help: "Items scanned.", detail: Novice, scale: 0 },
///             }
///         }
///     }
/// }
///
/// # let dir = tempfile::tempdir()?;
/// # std::env::set_var("PRFDATA_SHM_DIR", dir.path());
/// let prf = shop::PrfData::activate()?;
/// prf.get_ctr32(shop::SALES, ()).fetch_add(1, Relaxed);
///
/// let till = prf.add_instance(shop::TILL, "till 1")?;
/// prf.get_ctr64(shop::SCANNED, till).fetch_add(3, Relaxed);
/// assert_eq!(prf.get_ctr64(shop::SCANNED, till).load(Relaxed), 3);
/// prf.remove_instance(till)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PrfData<M: PerfDataMap> {
    /// The on-demand servicing thread, started by the first [`OnDemand::serve`](crate::OnDemand::serve). Declared
    /// before `block`: dropped (the thread joined) before the block is unmapped.
    pub(crate) on_demand: OnceLock<Server>,
    /// The shard slots this handle's threads own ([`PrfData::sharded`]). Declared before
    /// `block`: released before the block is unmapped.
    shards: ShardHost,
    pub(crate) block: BlockFile,
    /// The objects and counters added at run time (feature `install`).
    #[cfg(feature = "install")]
    pub(crate) dynamic: crate::dynamic::Shared,
    /// The watch table beside the block and its waiter (dropped after the block: its drop stops
    /// the waiter and removes the table).
    pub(crate) watch: WatchHost,
    _map: PhantomData<fn() -> M>,
}

impl<M: PerfDataMap> Drop for PrfData<M> {
    fn drop(&mut self) {
        // Before the block goes (its last member removes the run-time block): the thread that
        // publishes staged run-time counters must not lay a run-time block out after that.
        #[cfg(feature = "install")]
        self.dynamic.stop();
    }
}

/// The folder a block lives in.
fn block_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// The watch table beside an app's block.
fn watch_path(def: &crate::map::MapDef, dir: &Path) -> std::path::PathBuf {
    dir.join(format!("{}.watch", def.app))
}

/// How to add an instance: its name, and optionally a unique id, a parent and an owner process.
/// A `&str` (or `&String`) is the spec of an instance with only a name.
///
/// # Examples
///
/// ```
/// use prfdata::InstanceSpec;
/// prfdata::prfdata_map! { pub mod m { app: "InstanceSpecDoc",
///   object POOL { name: "Pool", help: name, instances: { max: 4, name_len: 16 },
///     counters { SIZE: RawCount { name: "Size", help: name } } }
///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
///     counters { DONE: CounterCounter { name: "Done", help: name } } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// let pool = prf.add_instance(m::POOL, "pool A")?;
/// let spec = InstanceSpec::named("worker 3").unique_id(3).parent(pool);
/// assert_eq!((spec.name, spec.unique_id), ("worker 3", Some(3)));
/// let w = prf.add_instance(m::WORKER, spec)?;
/// assert_eq!(prf.instances().name(w).as_deref(), Some("worker 3"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct InstanceSpec<'n, M: PerfDataMap> {
    /// The instance name (may be empty when a unique id identifies it).
    pub name: &'n str,
    /// An id monitors use instead of the name (perflib's `UniqueID`), or `None` (written to the
    /// block as `PERF_NO_UNIQUE_ID`). A unique id is 0 or more:
    /// [`add_instance`](PrfData::add_instance) refuses a negative one ([`Error::BadUniqueId`]).
    pub unique_id: Option<i32>,
    parent: Option<SlotRef>,
    owned: bool,
    _map: PhantomData<fn() -> M>,
}

impl<'n, M: PerfDataMap> InstanceSpec<'n, M> {
    /// An instance identified by its name.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "NamedDoc",
    ///   object W { name: "W", help: name, instances: { max: 2, name_len: 8 },
    ///     counters { C: RawCount { name: "C", help: name } } } } }
    /// let spec: prfdata::InstanceSpec<'_, m::Map> = prfdata::InstanceSpec::named("a");
    /// assert_eq!(spec.unique_id, None);
    /// ```
    pub fn named(name: &'n str) -> Self {
        InstanceSpec {
            name,
            unique_id: None,
            parent: None,
            owned: false,
            _map: PhantomData,
        }
    }

    /// The same, with a unique id (as CPrfData's `AddInstance(obj, id)`).
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "UniqueIdDoc",
    /// #   object W { name: "W", help: name, instances: { max: 2, name_len: 8 },
    /// #   counters { C: RawCount { name: "C", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let w = prf.add_instance(m::W, prfdata::InstanceSpec::named("").unique_id(42))?;
    /// assert_eq!(prf.instances().name(w).as_deref(), Some(""));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unique_id(self, id: i32) -> Self {
        InstanceSpec {
            unique_id: Some(id),
            ..self
        }
    }

    /// The same, below `parent`, a live instance of object `P` (CPrfData's
    /// `AddInstance(obj, name, parentObj, parentInst)`). Monitors show the child as
    /// `parent/child`, and a provider asked for the child's object alone returns `P` too, so
    /// that the link always resolves. While the child lives, the parent cannot be removed on its
    /// own ([`PrfData::remove_instance`] refuses); [`Instances::remove_tree`] removes both.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::InstanceSpec;
    /// prfdata::prfdata_map! { pub mod m { app: "ParentDoc",
    ///   object POOL { name: "Pool", help: name, instances: { max: 4, name_len: 16 },
    ///     counters { SIZE: RawCount { name: "Size", help: name } } }
    ///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
    ///     counters { DONE: CounterCounter { name: "Done", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let pool = prf.add_instance(m::POOL, "pool A")?;
    /// let worker = prf.add_instance(m::WORKER, InstanceSpec::named("w1").parent(pool))?;
    /// prf.remove_instance(worker)?;
    /// prf.remove_instance(pool)?; // no children left
    /// let err = prf.add_instance(m::WORKER, InstanceSpec::named("w2").parent(pool)).unwrap_err();
    /// assert!(matches!(err, prfdata::Error::UnknownParent { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parent<P>(self, parent: InstanceId<P>) -> Self
    where
        P: Object<Map = M, Scope = Instanced>,
    {
        InstanceSpec {
            parent: Some(SlotRef::of(&parent)),
            ..self
        }
    }

    /// The same, owned by the calling process: when this process dies (a `SIGKILL` included),
    /// readers stop showing the instance and count its values into the object's retired share,
    /// and the next writer of the block (any process that adds or removes an instance)
    /// reclaims its slot, folding its `sum` counters (counts, timers: see
    /// [`map::Aggregate`](crate::map::Aggregate)) into the object's retired accumulator, so the
    /// object's `_Total` never goes backwards. The owner is the
    /// [`ProcessId`](crate::ProcessId) (pid and start time): a pid reused by another process
    /// does not keep the instance alive. For worker processes that
    /// [`attach`](PrfData::attach) to the block; put it under an [`Instance`](crate::Instance)
    /// guard ([`Instances::guard`]) to remove it on an orderly exit too.
    ///
    /// Reclaiming an instance removes the instances below it (its children) with it, owned or
    /// not, as [`Instances::remove_tree`] does. Readers hide a dead owner's instance at once (a
    /// child of it then shows no parent) and count its `sum` counters in the object's `_Total`
    /// until a writer reclaims it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::Ordering::Relaxed;
    /// prfdata::prfdata_map! { pub mod m { app: "OwnedDoc",
    ///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
    ///     total: true, counters {
    ///     DONE: CounterCounter { name: "Done", help: name },
    ///     QUEUE: RawCount { name: "Queue", help: name, aggregate: max },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let spec = prfdata::InstanceSpec::named("worker 1").process_owned();
    /// let me = prf.add_instance(m::WORKER, spec)?;
    /// prf.get_ctr32(m::DONE, me).fetch_add(5, Relaxed);
    /// prf.remove_instance(me)?; // its 5 stay in the object's retired accumulator
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn process_owned(self) -> Self {
        InstanceSpec {
            owned: true,
            ..self
        }
    }
}

impl<'n, M: PerfDataMap, S: AsRef<str> + ?Sized> From<&'n S> for InstanceSpec<'n, M> {
    fn from(name: &'n S) -> Self {
        InstanceSpec::named(name.as_ref())
    }
}

/// Holds the block's optex for a multi-counter update that readers must see whole
/// (CPrfData's `LockCtrs` / `UnlockCtrs`). Unlocks when dropped.
///
/// While it is held, collectors retry and finally skip the block instead of reading a half-made
/// update, so hold it briefly. The thread holding it may go on using the [`PrfData`] it came
/// from (and other handles on the same block) for anything, counters, text, instances, even a
/// nested `lock_ctrs`: those calls run inside this guard's lock and write section, and the
/// section ends when this guard (the outermost one) is dropped. Text is set through the guard
/// with [`CtrsGuard::set_text`], or through [`PrfData::text`].
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! { pub mod m { app: "CtrsGuardDoc",
///   object SERVER = 0 { name: "Server", help: "s", detail: Novice, default: none,
///     instances: none, costly: false, counters {
///     STATE = 2: Text32 { name: "State", help: "What it does.", detail: Novice, scale: 0 },
///     CHANGES = 4: RawCount { name: "Changes", help: "State changes.", detail: Novice, scale: 0 },
///   } } } }
/// # let dir = tempfile::tempdir()?;
/// let prf = m::PrfData::activate_in(dir.path())?;
/// {
///     let whole = prf.lock_ctrs();
///     whole.set_text(m::STATE, (), "draining");
///     prf.get_ctr32(m::CHANGES, ()).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
/// }
/// assert_eq!(prf.text().get(m::STATE, ()), "draining");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the block unlocks as soon as the guard is dropped"]
pub struct CtrsGuard<'a, M: PerfDataMap> {
    prf: &'a PrfData<M>,
    /// `None` for a guard taken while this thread already held one on the block.
    hold: Option<Hold<'a>>,
}

/// What the outermost guard holds, released in this order when dropped.
struct Hold<'a> {
    section: WriteSection<'a>,
    lock: OptexGuard<'a>,
    _mark: HeldMark,
}

impl<M: PerfDataMap> CtrsGuard<'_, M> {
    /// Whether taking the lock recovered it from a process that died holding it.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "OwnerDiedDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     DONE: CounterCounter { name: "Done", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let guard = prf.lock_ctrs();
    /// assert!(!guard.owner_died(), "nobody held it before");
    /// assert!(!prf.lock_ctrs().owner_died(), "a nested guard took nothing over");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn owner_died(&self) -> bool {
        self.hold.as_ref().is_some_and(|h| h.lock.owner_died())
    }

    /// Sets the text counter `ctr` at `at` inside this guard's write section, as
    /// [`TextCtrs::set`](crate::TextCtrs::set): collectors see the text change together with the rest of the update.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "GuardTextDoc",
    ///   object SESSION = 0 { name: "Session", help: "s", detail: Novice, default: none,
    ///     instances: { max: 4, name_len: 16 }, costly: false, counters {
    ///     USER = 2: Text16 { name: "User", help: "Who is logged in.", detail: Novice, scale: 0 },
    ///     LOGINS = 4: RawCount { name: "Logins", help: "Logins.", detail: Novice, scale: 0 },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let tty = prf.add_instance(m::SESSION, "tty1")?;
    /// {
    ///     let whole = prf.lock_ctrs();
    ///     whole.set_text(m::USER, tty, "bob");
    ///     prf.get_ctr32(m::LOGINS, tty).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    /// }
    /// assert_eq!(prf.text().get(m::USER, tty), "bob");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_text<T, O>(&self, ctr: CtrId<T, O>, at: <O::Scope as Scope>::At<O>, text: &str)
    where
        T: TextType,
        O: Object<Map = M>,
    {
        self.prf.text().set(ctr, at, text);
    }
}

impl<M: PerfDataMap> fmt::Debug for CtrsGuard<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CtrsGuard")
            .field("app", &M::DEF.app)
            .field("seq", &self.hold.as_ref().map(|h| h.section.odd()))
            .field("nested", &self.hold.is_none())
            .finish()
    }
}

impl<M: PerfDataMap> PrfData<M> {
    /// Creates and publishes the app's block (CPrfData's `Activate`).
    ///
    /// A block left by a dead process is replaced.
    ///
    /// # Errors
    ///
    /// [`Error::Map`] if the map is invalid (only a hand-written, `unsafe`, map can be);
    /// [`Error::AlreadyActive`] if a live process holds a block of the app laid out from another
    /// map; [`Error::TooManyProcesses`] if 256 live processes are members of its block already;
    /// [`Error::LockStalled`], naming the holder, if a live process holds the block's lock for a
    /// whole second (its bound: joining never hangs on a stopped or stuck process);
    /// [`Error::Symlink`],
    /// [`Error::NotRegular`], [`Error::NotABlock`] or [`Error::TooLarge`] if something else is at
    /// its path (refused at once: a FIFO there is never waited on); [`Error::NoSpace`] if the
    /// block's folder has no room for it (its pages are reserved now, so that a full tmpfs
    /// cannot kill the app with `SIGBUS` later); [`Error::Create`] or [`Error::ShmDir`] for
    /// other file-system failures. With the feature `install`: [`Error::InstalledNames`] if
    /// the app is installed (in `PRFDATA_REGISTRY`, else the per-user registry) with the names
    /// of another map, one that lacks this map's counters or has them at other offsets: the
    /// message names the installed range and what the map needs; reinstall the app.
    ///
    /// If the app's block is there already, laid out from this map, activation joins it: a
    /// block with a live member is shared (its values and instances stay), and a block whose
    /// members are all dead (killed) is adopted (told by the block's file lock, which every
    /// member holds for its life, not by its members table): its global counters continue, and
    /// the dead
    /// processes' instances are removed, their counts folded into their objects' retired
    /// accumulators, so that a `_Total` never goes backwards; the restarted process adds its
    /// instances again.
    ///
    /// Activation also removes the temporary files (`.<app>.<pid>.<n>.tmp`) that activations
    /// killed half-way left in the folder: those whose creator is gone (no process has its pid,
    /// and its `flock` is free).
    pub fn activate() -> Result<Self, Error> {
        Self::activate_impl(None)
    }

    /// [`PrfData::activate`] with the block in `dir` instead of
    /// [`shm_dir`](crate::shm_dir) (tests, or several setups side by side).
    ///
    /// # Errors
    ///
    /// As [`PrfData::activate`].
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "ActivateInDoc", object O = 0 { name: "O", help: "o",
    /// #   detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// assert_eq!(prf.path(), dir.path().join("ActivateInDoc.blk"));
    /// drop(prf);
    /// assert!(!dir.path().join("ActivateInDoc.blk").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn activate_in(dir: &Path) -> Result<Self, Error> {
        Self::activate_impl(Some(dir))
    }

    fn activate_impl(dir: Option<&Path>) -> Result<Self, Error> {
        #[cfg(feature = "install")]
        crate::install::check_installed(M::DEF)?;
        match Self::activate_once(dir) {
            // An orphaned block whose instance tables are corrupt is not worth adopting: this
            // process, its only member, dropped it (removing it); publish a fresh one.
            Err(Error::Corrupt { path, reason, .. }) => {
                log::warn!(
                    "app {}: not adopting {} ({reason}); publishing a new block",
                    M::DEF.app,
                    path.display()
                );
                Self::activate_once(dir)
            }
            other => other,
        }
    }

    fn activate_once(dir: Option<&Path>) -> Result<Self, Error> {
        let started = Instant::now();
        let deadline = join_deadline(started);
        let block = BlockFile::create(M::DEF, dir, deadline)?;
        let how = block.joined();
        let prf = match how {
            Some(Joined::Shared) => Self::attached(block)?,
            _ => {
                let dir = block_dir(block.path());
                let watch = if how == Some(Joined::Adopted) && watch_path(M::DEF, dir).is_file() {
                    WatchHost::attached(M::DEF, dir)
                } else {
                    WatchHost::create(M::DEF, dir)
                };
                PrfData {
                    on_demand: OnceLock::new(),
                    shards: ShardHost::new(block.raw.base()),
                    #[cfg(feature = "install")]
                    dynamic: crate::dynamic::Shared::new(M::DEF, block.path(), true),
                    block,
                    watch,
                    _map: PhantomData,
                }
            }
        };
        match how {
            Some(Joined::Created) => {
                for (i, obj) in M::DEF.objects.iter().enumerate() {
                    if !obj.has_instances() {
                        prf.tables().table(i).init_block(0);
                    }
                }
            }
            // Adopted: the dead processes' instances, owned or not, are removed, their `sum`
            // counters folded into the retired accumulators (totals and `_Total` never go
            // backwards); global counters keep their values. This process adds its instances
            // again, as a restarted app does.
            Some(Joined::Adopted) => {
                let lock = prf.lock_layout_until(started, deadline)?;
                let _section = lock.section(prf.seq());
                prf.tables().retire_all().map_err(|c| prf.corrupt(c))?;
            }
            _ => {
                let lock = prf.lock_layout_until(started, deadline)?;
                prf.reclaim_locked(&lock)?;
            }
        }
        #[cfg(feature = "install")]
        if how != Some(Joined::Shared) {
            prf.dynamic.clear_stale();
        }
        Ok(prf)
    }

    /// Opens the block another process of the app activated, to update its counters and
    /// instances from this process too.
    ///
    /// # Errors
    ///
    /// [`Error::NotActive`] if there is no block, [`Error::MapMismatch`] if it was laid out from
    /// another map, [`Error::TooManyProcesses`] if its members table is full,
    /// [`Error::LockStalled`] if a live process holds its lock for a whole second (as for
    /// [`PrfData::activate`]), and the map and file errors of [`PrfData::activate`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # prfdata::prfdata_map! { pub mod m { app: "AttachDoc", object O = 0 { name: "O", help: "o",
    /// #   detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// // In a worker process of an app whose main process called `activate`:
    /// let prf = m::PrfData::attach()?;
    /// prf.get_ctr32(m::C, ()).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    /// # Ok::<(), prfdata::Error>(())
    /// ```
    pub fn attach() -> Result<Self, Error> {
        Self::attached(BlockFile::attach(M::DEF, None)?)
    }

    /// [`PrfData::attach`] to the block in `dir`.
    ///
    /// # Errors
    ///
    /// As [`PrfData::attach`].
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "AttachInDoc", object O = 0 { name: "O", help: "o",
    /// #   detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// # let dir = dir.path();
    /// let owner = m::PrfData::activate_in(dir)?;
    /// let other = m::PrfData::attach_in(dir)?;
    /// other.get_ctr32(m::C, ()).store(5, std::sync::atomic::Ordering::Relaxed);
    /// assert_eq!(owner.get_ctr32(m::C, ()).load(std::sync::atomic::Ordering::Relaxed), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn attach_in(dir: &Path) -> Result<Self, Error> {
        Self::attached(BlockFile::attach(M::DEF, Some(dir))?)
    }

    fn attached(block: BlockFile) -> Result<Self, Error> {
        let watch = WatchHost::attached(M::DEF, block_dir(block.path()));
        Ok(PrfData {
            on_demand: OnceLock::new(),
            shards: ShardHost::new(block.raw.base()),
            #[cfg(feature = "install")]
            dynamic: crate::dynamic::Shared::new(M::DEF, block.path(), false),
            block,
            watch,
            _map: PhantomData,
        })
    }

    /// Leaves the block now, as dropping the handle does, and says what that did
    /// ([`Departure`]): [`Removed`](Departure::Removed) if this was its last member (monitors no
    /// longer see the app), [`StillHeld`](Departure::StillHeld) if other members (processes of
    /// the app, or other handles) keep it published, [`Abandoned`](Departure::Abandoned) if
    /// another process held the block's lock a whole second or truncated its file.
    ///
    /// Two runs of one app by one user (the same block folder) share one block: the first to
    /// stop leaves it to the other. A process forked from a member is not a member itself: its
    /// `close` leaves nothing and answers `StillHeld`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::Departure;
    /// # prfdata::prfdata_map! { pub mod m { app: "CloseDoc", object O = 0 { name: "O", help: "o",
    /// #   detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// # let dir = dir.path();
    /// let app = m::PrfData::activate_in(dir)?;
    /// let worker = m::PrfData::attach_in(dir)?;
    /// assert_eq!(app.close(), Departure::StillHeld { members: 1 });
    /// assert_eq!(worker.close(), Departure::Removed);
    /// assert!(!dir.join("CloseDoc.blk").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(mut self) -> Departure {
        // As a drop does: no run-time block laid out after the last member removed it, and the
        // on-demand thread, which answers through the block, joined first.
        #[cfg(feature = "install")]
        self.dynamic.stop();
        drop(self.on_demand.take());
        self.block.depart()
    }

    /// Installs this map (CPrfData's `Install`): see [`install::install`](crate::install::install).
    /// Feature `install`.
    ///
    /// # Errors
    ///
    /// As [`install::install`](crate::install::install).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # prfdata::prfdata_map! { pub mod m { app: "InstallMethodDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// let exe = std::env::current_exe()?;
    /// let dir = exe.parent().unwrap();
    /// m::PrfData::install(&prfdata::install::InstallOptions {
    ///     library: dir.join("libprfdata_provider.so"),
    ///     ini_dir: dir.to_path_buf(),
    ///     replace: true,
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "install")]
    pub fn install(
        options: &crate::install::InstallOptions,
    ) -> Result<crate::install::CounterRange, crate::install::InstallError> {
        crate::install::install(M::DEF, options)
    }

    /// Uninstalls this map (CPrfData's `Uninstall`): see
    /// [`install::uninstall`](crate::install::uninstall). Feature `install`.
    ///
    /// # Errors
    ///
    /// As [`install::uninstall`](crate::install::uninstall).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # prfdata::prfdata_map! { pub mod m { app: "UninstallMethodDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// m::PrfData::uninstall()?;
    /// # Ok::<(), prfdata::install::InstallError>(())
    /// ```
    #[cfg(feature = "install")]
    pub fn uninstall() -> Result<crate::install::CounterRange, crate::install::InstallError> {
        crate::install::uninstall(M::DEF)
    }

    /// The handle on who watches this app's stats ([`Watching`]): whether a counter or an
    /// object is watched now, and the start and stop events.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "WatchHandleDoc", object O { name: "O",
    ///   help: name, counters { C: RawCount { name: "C", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// if prf.watch().is_watched(m::C) {
    ///     // compute the costly value only now
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn watch(&self) -> Watching<'_, M> {
        Watching { prf: self }
    }

    /// The block's file.
    pub fn path(&self) -> &Path {
        self.block.path()
    }

    /// The live 32-bit counter `ctr` at `at`: update it with one atomic instruction, at an
    /// offset the map fixed at compile time.
    ///
    /// `at` is `()` for a counter of an object without instances and the instance's
    /// [`InstanceId`] otherwise (an [`Instance`](crate::Instance) guard gives it with `*guard`).
    /// A 64-bit counter, a text counter, a counter of another map, or an `at` of the wrong scope
    /// does not compile.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::Ordering::Relaxed;
    /// prfdata::prfdata_map! { pub mod m { app: "GetCtr32Doc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     REQUESTS: CounterCounter { name: "Requests/sec", help: "Requests served." },
    ///   } }
    ///   object WORKER { name: "Worker", help: "One worker.",
    ///     instances: { max: 8, name_len: 16 }, counters {
    ///     JOBS: RawCount { name: "Jobs", help: "Jobs done." },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.get_ctr32(m::REQUESTS, ()).fetch_add(1, Relaxed);
    /// let worker = prf.add_instance(m::WORKER, "w1")?;
    /// prf.get_ctr32(m::JOBS, worker).fetch_add(2, Relaxed);
    /// assert_eq!(prf.get_ctr32(m::JOBS, worker).load(Relaxed), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn get_ctr32<T, O>(&self, ctr: CtrId<T, O>, at: <O::Scope as Scope>::At<O>) -> &AtomicI32
    where
        T: CounterType<Width = Dword> + Scalar,
        O: Object<Map = M>,
    {
        // SAFETY: `__block_of` gives the offset of a counter block of object `O` in a block laid
        // out from `M` (validated at activation or attach) and mapped whole: a global object's
        // one block, or an instance's (made by `add_instance` from a slot below the object's
        // limit); `ctr.offset() + 4` lies within it, 4-aligned. Both come from `M` at compile
        // time.
        unsafe {
            self.block
                .raw
                .i32_at(O::Scope::__block_of::<O>(at) + ctr.offset())
        }
    }

    /// The live 64-bit counter `ctr` at `at`, as [`get_ctr32`](PrfData::get_ctr32) for a
    /// 32-bit one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::Ordering::Relaxed;
    /// prfdata::prfdata_map! { pub mod m { app: "GetCtr64Doc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     BYTES: BulkCount { name: "Bytes/sec", help: "Bytes sent." },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.get_ctr64(m::BYTES, ()).fetch_add(1 << 40, Relaxed);
    /// assert_eq!(prf.get_ctr64(m::BYTES, ()).load(Relaxed), 1 << 40);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn get_ctr64<T, O>(&self, ctr: CtrId<T, O>, at: <O::Scope as Scope>::At<O>) -> &AtomicI64
    where
        T: CounterType<Width = Large> + Scalar,
        O: Object<Map = M>,
    {
        // SAFETY: as in `get_ctr32`; 64-bit values are 8-aligned within 8-aligned blocks.
        unsafe {
            self.block
                .raw
                .i64_at(O::Scope::__block_of::<O>(at) + ctr.offset())
        }
    }

    /// A handle on the sharded counter `ctr` at `at` (`()` for an object without instances,
    /// else the instance's id), for this thread: [`ShardedCtr::add`] is a relaxed load and store
    /// of the thread's own cache-line slot, no locked instruction (see [`ShardedCtr`] and the
    /// `shard` module docs for slots, their owners across processes and the fallback when every
    /// slot is taken). Readers see the sum. The first call of a thread claims its slot (a
    /// compare-and-swap; the slot is the object's, for every instance); take the handle once per
    /// thread, outside the hot loop.
    ///
    /// On a 64-bit counter that is not sharded (`sharded: true` in the map), the handle adds
    /// to the counter with `fetch_add`, as [`get_ctr64`](PrfData::get_ctr64) would.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "ShardedDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     REQUESTS: BulkCount { name: "Requests/sec", help: name, sharded: true },
    ///   } }
    ///   object CONN { name: "Connection", help: name, instances: { max: 8, name_len: 16 },
    ///     counters { BYTES: BulkCount { name: "Bytes/sec", help: name, sharded: true } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let requests = prf.sharded(m::REQUESTS, ());
    /// requests.add(1);
    /// let conn = prf.add_instance(m::CONN, "c1")?;
    /// prf.sharded(m::BYTES, conn).add(4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sharded<T, O>(&self, ctr: CtrId<T, O>, at: <O::Scope as Scope>::At<O>) -> ShardedCtr<'_>
    where
        T: CounterType<Width = Large> + Scalar,
        O: Object<Map = M>,
    {
        self.sharded_at::<O>(O::Scope::__block_of::<O>(at), ctr.index(), ctr.offset())
    }

    /// A handle on the histogram `ctr` at `at` (`()` for an object without instances, else the
    /// instance's id), for this thread: [`HistogramCtr::record`] puts a value in its bucket with
    /// one relaxed `fetch_add` (none with `sharded: true`: the thread's shard line holds its own
    /// buckets) and adds it to the sum in the thread's shard line. Readers compute the count
    /// from the buckets. The first call of a thread claims its shard slot, as
    /// [`sharded`](PrfData::sharded) does: take the handle once per thread, outside the hot
    /// loop.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "HistogramDoc",
    ///   object WORKER { name: "Worker", help: name, instances: { max: 8, name_len: 16 },
    ///     total: true, counters {
    ///     JOB: Histogram { name: "Job latency", help: "Microseconds per job.", unit: us,
    ///       range: 10us..10s, error: 2%, sharded: true },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let worker = prf.add_instance(m::WORKER, "w1")?;
    /// let job = prf.histogram(m::JOB, worker);
    /// job.record(420);
    /// job.record_duration(std::time::Duration::from_millis(3)); // 3000 us
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn histogram<T, O>(
        &self,
        ctr: CtrId<T, O>,
        at: <O::Scope as Scope>::At<O>,
    ) -> HistogramCtr<'_, T>
    where
        T: CounterType<Width = Buckets>,
        O: Object<Map = M>,
    {
        use crate::map::{offsets, Source};
        let def = &M::DEF.objects[O::INDEX];
        let block = O::Scope::__block_of::<O>(at);
        // The id names a histogram's bucket counter (its type checked when it was made), and
        // a validated map gives every one the two counters before it: sum, then base.
        let Source::Histogram { geometry, .. } = def.counters[ctr.index()].source else {
            unreachable!("a histogram id names a counter with Source::Histogram")
        };
        let sum_index = ctr.index() - 2;
        let sum_at = offsets::counter_offset(def, sum_index);
        let sum = self.sharded_at::<O>(block, sum_index, sum_at);
        let descriptor = Descriptor::of(geometry).words().len();
        let (at, owned) = match (offsets::shard_index(def, ctr.index()), sum.slot()) {
            (Some(k), Some(s)) => (self.shard_word_at::<O>(block, s, k), true),
            _ => (block + ctr.offset() + 8 * descriptor, false),
        };
        // In bounds (see below); a pointer from the mapping's base, whose provenance covers
        // every bucket (a reference to bucket 0 would cover only its 8 bytes).
        let words = self.block.raw.base().wrapping_add(at).cast::<AtomicU64>();
        // SAFETY: `words` is bucket 0 of `geometry.buckets()` consecutive 8-aligned words that
        // the mapping (kept by `self` for `'_`) holds and that are only accessed atomically:
        // either the bucket counter's value in a counter block of `O` of a block laid out from
        // `M` (validated at activation or attach: the descriptor's words, then the buckets),
        // or, when `owned`, its `offsets::shard_words` (one per bucket) from word `k` of line
        // `s` of that block, the slot the thread holds until it exits (no other thread writes
        // them; the handle is not `Send`).
        unsafe { HistogramCtr::new(geometry, words, owned, sum) }
    }

    /// The handle on counter `index` (at `offset` in its block) of the counter block at `block`
    /// of object `O`: the thread's shard word, or the counter's own for a counter that is not
    /// sharded or a thread without a slot.
    fn sharded_at<O: Object<Map = M>>(
        &self,
        block: usize,
        index: usize,
        offset: usize,
    ) -> ShardedCtr<'_> {
        let def = &M::DEF.objects[O::INDEX];
        // SAFETY: `block` is a counter block of object `O` in a block laid out from `M`
        // (validated when it was activated or attached), and the 64-bit counter at `offset`
        // lies inside it, 8-aligned.
        let own = unsafe { self.block.raw.u64_at(block + offset) };
        let Some(k) = crate::map::offsets::shard_index(def, index) else {
            return ShardedCtr::new(own, None);
        };
        match self.shard_slot::<O>() {
            Some(s) => ShardedCtr::new(self.shard_word::<O>(block, s, k), Some(s)),
            None => ShardedCtr::new(own, None),
        }
    }

    /// The shard slot of object `O` the current thread owns, claimed if it has none; `None`
    /// when every slot has a live owner. The object has sharded counters.
    fn shard_slot<O: Object<Map = M>>(&self) -> Option<u32> {
        use crate::map::offsets;
        let def = &M::DEF.objects[O::INDEX];
        let owners = offsets::object_base(M::DEF, O::INDEX) + offsets::object_regions(def).owners;
        let slots = offsets::shard_slots(def) as u32;
        // SAFETY: the object has sharded counters, so its owner region holds `slots` u64s at
        // `owners` (8-aligned), and `s < slots` (the only values `slot_for` passes).
        let owner = |s: u32| unsafe { self.block.raw.u64_at(owners + 8 * s as usize) };
        self.shards
            .slot_for(owners, slots, owner, &self.block.probe())
    }

    /// The offset of word `k` of shard line `s` of the counter block at `block` of object `O`:
    /// `s` a slot [`shard_slot`](Self::shard_slot) gave, `k` below the words of the object's
    /// shard line (from `offsets::shard_index` of one of its sharded counters, plus less than
    /// its `offsets::shard_words`).
    fn shard_word_at<O: Object<Map = M>>(&self, block: usize, s: u32, k: usize) -> usize {
        use crate::map::offsets;
        let def = &M::DEF.objects[O::INDEX];
        block + offsets::shard_start(def) + s as usize * offsets::shard_line(def) + 8 * k
    }

    /// The word at [`shard_word_at`](Self::shard_word_at).
    fn shard_word<O: Object<Map = M>>(&self, block: usize, s: u32, k: usize) -> &AtomicU64 {
        // SAFETY: the shard lines of the counter block at `block` lie inside its stride
        // (`offsets::block_stride`), line `s < slots`, word `k` inside the line (the caller's
        // contract of `shard_word_at`): 8-aligned, in bounds.
        unsafe { self.block.raw.u64_at(self.shard_word_at::<O>(block, s, k)) }
    }

    /// The atomic of width `W` at `off`, which the callers computed from `M` and a counter id
    /// whose width is `W` (checked against the map when the id was made).
    #[inline(always)]
    pub(crate) fn atomic_at<W: AtomicWidth>(&self, off: usize) -> &W::Atomic {
        let size = <W as Width>::SIZE as usize;
        debug_assert!(
            off + size <= self.block.raw.len() && off.is_multiple_of(size),
            "counter of {size} bytes at {off}"
        );
        // SAFETY:
        // - in bounds: `off` is the offset of a counter of `W::SIZE` bytes inside a counter
        //   block of the block laid out from `M` (validated at activation or attach), which
        //   `self` keeps mapped whole for the returned lifetime;
        // - aligned: counter blocks are 8-aligned and a value is placed at a multiple of its
        //   size (`layout::counter_offset`);
        // - only ever accessed atomically, by this process and the others that map the block.
        unsafe { W::__at(self.block.raw.base().add(off)) }
    }

    /// Sets the `PERF_ELAPSED_TIME` counter `ctr` at `at` (`()` for an object without
    /// instances, else the instance's id) to the start time `start` (a FILETIME,
    /// [`filetime::of`](prfdata_wire::filetime::of)): monitors show the seconds since then, against the object's clock, as
    /// they do for NT's Process "Elapsed Time". A service's uptime is
    /// `set_elapsed_start(UPTIME, (), SystemTime::now())` once, when it starts.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant, SystemTime};
    /// prfdata::prfdata_map! { pub mod m { app: "ElapsedDoc",
    ///   object JOB = 0 { name: "Job", help: "j", detail: Novice, default: none,
    ///     instances: { max: 4, name_len: 16 }, costly: false, counters {
    ///     AGE = 2: ElapsedTime { name: "Elapsed Time", help: "Seconds since the job started.", detail: Novice, scale: 0 },
    ///   } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let job = prf.add_instance(m::JOB, "nightly")?;
    /// let started = SystemTime::now() - Duration::from_secs(90);
    /// prf.set_elapsed_start(m::AGE, job, started);
    /// // What a monitor computes from the object's PerfTime (the FILETIME now) and PerfFreq:
    /// let n = prf.get_ctr64(m::AGE, job).load(std::sync::atomic::Ordering::Relaxed);
    /// use prfdata_wire::filetime;
    /// let seconds = (filetime::now() - n) / filetime::OBJECT_FREQUENCY;
    /// assert!((90..100).contains(&seconds));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_elapsed_start<O>(
        &self,
        ctr: CtrId<ElapsedTime, O>,
        at: <O::Scope as Scope>::At<O>,
        start: SystemTime,
    ) where
        O: Object<Map = M>,
    {
        self.get_ctr64(ctr, at)
            .store(prfdata_wire::filetime::of(start), Ordering::Relaxed);
    }

    /// Adds an instance to `obj` (CPrfData's `AddInstance`): named by `spec`, a name or an
    /// [`InstanceSpec`] (a unique id, a parent, an owner process).
    ///
    /// Names are Unicode and need not be unique (as in perflib).
    ///
    /// # Errors
    ///
    /// [`Error::ObjectFull`], [`Error::NameTooLong`], [`Error::NameHasNul`],
    /// [`Error::BadUniqueId`] (a negative unique id), [`Error::UnknownParent`] (a parent that is
    /// not live); [`Error::Corrupt`] if the object's instance table was written outside prfdata
    /// (nothing is added).
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "AddInstanceDoc",
    ///   object W { name: "W", help: name, instances: { max: 1, name_len: 8 },
    ///     counters { C: RawCount { name: "C", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// prf.add_instance(m::W, "w1")?;
    /// let full = prf.add_instance(m::W, "w2").unwrap_err();
    /// assert!(matches!(full, prfdata::Error::ObjectFull { max: 1, .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_instance<'n, O>(
        &self,
        _obj: O,
        spec: impl Into<InstanceSpec<'n, M>>,
    ) -> Result<InstanceId<O>, Error>
    where
        O: Object<Map = M, Scope = Instanced>,
    {
        let spec = spec.into();
        let def = &M::DEF.objects[O::INDEX];
        let name: Vec<u16> = spec.name.encode_utf16().collect();
        let max = crate::map::offsets::max_instances(def) as u32;
        let max_name_len = match def.instances {
            crate::map::Instances::Max { max_name_len, .. } => max_name_len,
            crate::map::Instances::None => 0,
        };
        if name.len() > max_name_len as usize {
            return Err(Error::NameTooLong {
                object: def.symbol,
                name: spec.name.to_string(),
                len: name.len(),
                max: max_name_len,
            });
        }
        if name.contains(&0) {
            return Err(Error::NameHasNul {
                object: def.symbol,
                name: spec.name.to_string(),
            });
        }
        if let Some(id) = spec.unique_id.filter(|id| *id < 0) {
            return Err(Error::BadUniqueId {
                object: def.symbol,
                id,
            });
        }
        let lock = self.lock_layout();
        self.reclaim_locked(&lock)?;
        let tables = self.tables();
        if spec.parent.is_some_and(|p| !tables.resolve(p)) {
            return Err(Error::UnknownParent { object: def.symbol });
        }
        let _section = lock.section(self.seq());
        let new = NewInstance {
            name: &name,
            unique_id: spec.unique_id.unwrap_or(crate::winperf::PERF_NO_UNIQUE_ID),
            parent: spec.parent,
            owner: spec.owned.then(crate::ProcessId::current),
        };
        let table = tables.table(O::INDEX);
        let (slot, generation) = tables
            .add(&table, &new)
            .map_err(|c| self.corrupt(c))?
            .ok_or(Error::ObjectFull {
                object: def.symbol,
                max,
            })?;
        Ok(InstanceId::new(table.block_offset(slot), slot, generation))
    }

    /// The handle on the instances beyond adding and removing one ([`Instances`]): list, name,
    /// remove a subtree, reclaim dead owners' instances, guard.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "InstancesHandleDoc",
    ///   object W { name: "W", help: name, instances: { max: 2, name_len: 8 },
    ///     counters { C: RawCount { name: "C", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let w = prf.add_instance(m::W, "w")?;
    /// assert_eq!(prf.instances().list(m::W)?, [w]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn instances(&self) -> Instances<'_, M> {
        Instances { prf: self }
    }

    /// [`Instances::reclaim_dead`] holding the optex: a write section only if some instance is
    /// owned by a process.
    pub(crate) fn reclaim_locked(&self, lock: &Acquisition<'_>) -> Result<usize, Error> {
        let tables = self.tables();
        if !tables.has_owned() {
            return Ok(0);
        }
        let _section = lock.section(self.seq());
        let probe = self.block.probe();
        tables
            .reclaim_dead(|owner| probe.is_alive(owner))
            .map_err(|c| self.corrupt(c))
    }

    /// Removes an instance (CPrfData's `RemoveInstance`). Its slot is reused by a later add.
    ///
    /// An instance that is still the parent of live instances is not removed: its children
    /// would name a parent that is gone. Remove them first, or remove the whole subtree with
    /// [`Instances::remove_tree`]. The check is O(1) (each instance counts its live
    /// children).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownInstance`] if it was removed already; [`Error::HasChildren`], naming one
    /// of its children, if it still has some; [`Error::Corrupt`] if the block's instance tables
    /// were written outside prfdata.
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "DocApp",
    /// #   object POOL = 0 { name: "Pool", help: "p", detail: Novice, default: none,
    /// #     instances: { max: 4, name_len: 16 }, costly: false, counters {
    /// #     SIZE = 2: RawCount { name: "Size", help: "s", detail: Novice, scale: 0 }, } }
    /// #   object WORKER = 4 { name: "Worker", help: "w", detail: Novice, default: none,
    /// #     instances: { max: 8, name_len: 16 }, costly: false, counters {
    /// #     DONE = 6: CounterCounter { name: "Done", help: "d", detail: Novice, scale: 0 }, } } } }
    /// # use m::*;
    /// # use prfdata::InstanceSpec;
    /// # let dir = tempfile::tempdir()?;
    /// # let prf = m::PrfData::activate_in(dir.path())?;
    /// let pool = prf.add_instance(POOL, "pool A")?;
    /// let worker = prf.add_instance(WORKER, InstanceSpec::named("w1").parent(pool))?;
    /// match prf.remove_instance(pool) {
    ///     Err(prfdata::Error::HasChildren { child_object, child, .. }) => {
    ///         assert_eq!((child_object, child.as_str()), ("WORKER", "w1"));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// prf.remove_instance(worker)?;
    /// prf.remove_instance(pool)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_instance<O>(&self, inst: InstanceId<O>) -> Result<(), Error>
    where
        O: Object<Map = M, Scope = Instanced>,
    {
        let lock = self.lock_layout();
        self.reclaim_locked(&lock)?;
        let tables = self.tables();
        let table = tables.table(O::INDEX);
        if table.live_generation(inst.slot()) != Some(inst.generation()) {
            return Err(Error::UnknownInstance {
                object: M::DEF.objects[O::INDEX].symbol,
            });
        }
        let children = table.children(inst.slot()).load(Ordering::Relaxed);
        if children > 0 {
            return Err(self.has_children(&tables, SlotRef::of(&inst), children));
        }
        let _section = lock.section(self.seq());
        tables
            .remove(&table, inst.slot(), inst.generation())
            .map_err(|c| self.corrupt(c))?;
        Ok(())
    }

    /// The error for removing `parent`, which counts `children` live children, naming one of
    /// them; [`Error::Corrupt`] if none is found (the count was written outside prfdata: the
    /// writer keeps it exact, and recovery from a dead writer counts again).
    #[cold]
    fn has_children(&self, tables: &Tables<'_>, parent: SlotRef, children: u32) -> Error {
        let table = tables.table(parent.object as usize);
        let child = match tables.find_child(parent) {
            Ok(Some(child)) => child,
            Ok(None) => {
                return self.corrupt(table.corrupt_field(
                    "children",
                    children,
                    "no live instance names this one as its parent",
                ))
            }
            Err(c) => return self.corrupt(c),
        };
        let name =
            |r: SlotRef| String::from_utf16_lossy(&tables.table(r.object as usize).name(r.slot));
        Error::HasChildren {
            object: M::DEF.objects[parent.object as usize].symbol,
            instance: name(parent),
            children,
            child_object: M::DEF.objects[child.object as usize].symbol,
            child: name(child),
        }
    }

    /// The error for a contradiction found in the block's instance tables.
    #[cold]
    pub(crate) fn corrupt(&self, c: Corrupt) -> Error {
        Error::Corrupt {
            path: self.path().to_path_buf(),
            object: c.object,
            field: c.field,
            value: c.value,
            reason: c.reason,
        }
    }

    /// Locks the block against other writers and makes collectors wait for the update
    /// (CPrfData's `LockCtrs`): counters changed together under the guard are seen together.
    ///
    /// The thread holding the guard may call this again (it gets a nested guard; the lock and
    /// the write section last until the outermost guard is dropped) and may call any other
    /// method of the handle, as [`CtrsGuard`] says: nothing here waits for itself.
    ///
    /// # Examples
    ///
    /// ```
    /// # prfdata::prfdata_map! { pub mod m { app: "DocApp",
    /// #   object POOL = 0 { name: "Pool", help: "p", detail: Novice, default: none,
    /// #     instances: { max: 4, name_len: 16 }, costly: false, counters {
    /// #     SIZE = 2: RawCount { name: "Size", help: "s", detail: Novice, scale: 0 }, } }
    /// #   object WORKER = 4 { name: "Worker", help: "w", detail: Novice, default: none,
    /// #     instances: { max: 8, name_len: 16 }, costly: false, counters {
    /// #     DONE = 6: CounterCounter { name: "Done", help: "d", detail: Novice, scale: 0 }, } }
    /// #   object TOTAL = 8 { name: "Total", help: "t", detail: Novice, default: none,
    /// #     instances: none, costly: false, counters {
    /// #     LATENCY = 10: AverageTimer { name: "Latency", help: "l", detail: Novice, scale: 0 },
    /// #     LATENCY_BASE: AverageBase, } } } }
    /// # use m::*;
    /// # use prfdata::InstanceSpec;
    /// # use std::sync::atomic::Ordering::Relaxed;
    /// # let dir = tempfile::tempdir()?;
    /// # let prf = m::PrfData::activate_in(dir.path())?;
    /// let elapsed = 1234;
    /// {
    ///     let _guard = prf.lock_ctrs();
    ///     prf.get_ctr32(LATENCY, ()).fetch_add(elapsed, Relaxed);
    ///     prf.get_ctr32(LATENCY_BASE, ()).fetch_add(1, Relaxed);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_ctrs(&self) -> CtrsGuard<'_, M> {
        if held_here(self.block.key()) {
            return self.nested_guard();
        }
        let lock = self.optex().lock_checked(&self.block.probe());
        let lock = self.recover_if_needed(lock);
        self.guard(lock)
    }
    /// [`PrfData::lock_ctrs`] waiting at most `timeout`. With `Duration::ZERO` it does not wait
    /// (CPrfData's try-lock): it spins a few rounds, checks once whether a holder died, and
    /// gives up without sleeping. The thread that holds it already gets a nested guard, as from
    /// `lock_ctrs`.
    ///
    /// # Errors
    ///
    /// [`Error::LockTimeout`] if the lock was not released in time.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// prfdata::prfdata_map! { pub mod m { app: "LockForDoc",
    ///   object SERVER { name: "Server", help: name, counters {
    ///     DONE: CounterCounter { name: "Done", help: name } } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let held = prf.lock_ctrs();
    /// std::thread::scope(|s| {
    ///     let other = s.spawn(|| prf.lock_ctrs_for(Duration::ZERO).is_err());
    ///     assert!(other.join().unwrap(), "another holder makes it fail");
    /// });
    /// drop(held);
    /// let _g = prf.lock_ctrs_for(Duration::from_millis(10))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_ctrs_for(&self, timeout: Duration) -> Result<CtrsGuard<'_, M>, Error> {
        if held_here(self.block.key()) {
            return Ok(self.nested_guard());
        }
        let lock = self
            .optex()
            .try_lock_for_checked(timeout, &self.block.probe())
            .ok_or(Error::LockTimeout(timeout))?;
        let lock = self.recover_if_needed(lock);
        Ok(self.guard(lock))
    }

    /// The guard of a `lock_ctrs` that took the optex: a write section begins.
    fn guard<'a>(&'a self, lock: OptexGuard<'a>) -> CtrsGuard<'a, M> {
        CtrsGuard {
            prf: self,
            hold: Some(Hold {
                section: WriteSection::begin(self.seq()),
                lock,
                _mark: HeldMark::new(self.block.key()),
            }),
        }
    }

    /// The guard of a `lock_ctrs` by the thread that holds the optex already.
    fn nested_guard(&self) -> CtrsGuard<'_, M> {
        CtrsGuard {
            prf: self,
            hold: None,
        }
    }

    fn optex(&self) -> &Optex {
        // SAFETY: `OPTEX_OFFSET` is a 64-aligned, 64-byte field of the header inside the mapping,
        // which `self` keeps alive for the returned lifetime; the block was created zero-filled
        // (an unlocked optex) and is only ever changed through the optex's atomics.
        unsafe {
            Optex::from_ptr(
                self.block
                    .raw
                    .base()
                    .add(layout::OPTEX_OFFSET)
                    .cast::<Optex>(),
            )
        }
    }

    pub(crate) fn seq(&self) -> &AtomicU64 {
        // SAFETY: the sequence is an 8-aligned u64 of the header, inside the mapping.
        unsafe { self.block.raw.u64_at(layout::SEQ_OFFSET) }
    }

    pub(crate) fn tables(&self) -> Tables<'_> {
        Tables::new(&self.block.raw, M::DEF)
    }

    /// Takes the optex for a layout change, repairing what a dead owner left; or finds it held
    /// by this thread's [`CtrsGuard`], whose write section the change then joins.
    pub(crate) fn lock_layout(&self) -> Acquisition<'_> {
        if held_here(self.block.key()) {
            return Acquisition::Reentered;
        }
        let guard = self.optex().lock_checked(&self.block.probe());
        Acquisition::Taken {
            _guard: self.recover_if_needed(guard),
        }
    }

    /// [`PrfData::lock_layout`] for `activate`, giving up at `deadline` with
    /// [`Error::LockStalled`] (`JOIN_BOUND`, `block::create::membership`).
    fn lock_layout_until(
        &self,
        started: Instant,
        deadline: Instant,
    ) -> Result<Acquisition<'_>, Error> {
        if held_here(self.block.key()) {
            return Ok(Acquisition::Reentered);
        }
        let bound = deadline.saturating_duration_since(Instant::now());
        let Some(guard) = self
            .optex()
            .try_lock_for_checked(bound, &self.block.probe())
        else {
            return Err(Error::LockStalled {
                path: self.path().to_path_buf(),
                pid: self.optex().owner().map_or(0, |o| o.pid),
                waited: started.elapsed(),
            });
        };
        Ok(Acquisition::Taken {
            _guard: self.recover_if_needed(guard),
        })
    }

    #[cold]
    fn repair(&self) {
        let _section = WriteSection::begin(self.seq());
        self.tables().repair();
    }

    fn recover_if_needed<'a>(&'a self, guard: OptexGuard<'a>) -> OptexGuard<'a> {
        // A dead owner inside a write section leaves the sequence odd: rebuild the instance
        // lists from the slot states and the children counts from the live links, then close
        // the section.
        if guard.owner_died() && self.seq().load(Ordering::Relaxed) & 1 == 1 {
            self.repair();
        }
        guard
    }
}

impl<M: PerfDataMap> fmt::Debug for PrfData<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrfData")
            .field("app", &M::DEF.app)
            .field("path", &self.path())
            .finish()
    }
}

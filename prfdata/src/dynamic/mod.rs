//! Objects and counters added and removed at run time (feature `install`).
//!
//! The Windows 95 stat-server interface: "stat servers and statistics may be added and removed at
//! any time". A `prfdata_map!` map is fixed at compile time, and the counters it declares are
//! reached through `&AtomicI32` / `&AtomicI64` references into the app's block that the app may
//! keep for as long as its [`PrfData`](crate::PrfData) lives. Moving those counters to a new block
//! would leave those references pointing at the old one, and whatever was written there after the
//! copy would be lost. So the installed map's block never moves, and what the app adds at run time
//! lives in a second block beside it:
//!
//! ```text
//! <dir>/<App>.blk       the installed map (never re-laid out)
//! <dir>/<App>.dyn.blk   the run-time objects, laid out again on every add and remove
//! ```
//!
//! The run-time block is an ordinary block (the same layout, read by the same
//! [`reader`](crate::reader)), with objects without instances. Its objects and counters take
//! symbolic offsets above the installed map's highest, handed out in increasing order and never
//! reused while the process lives, so that a handle of a removed counter never reaches another.
//!
//! # A new generation, no value lost
//!
//! Adding or removing a run-time object or counter:
//!
//! 1. registers the run-time names in the registry
//!    ([`prfdata_registry::register_runtime_names`]: the app's range extended or shrunk, or moved
//!    as lodctr would move it, in one update; skipped when the app is not installed);
//! 2. takes the old run-time block's [`Optex`]: every write through a
//!    [`DynCounter`] holds it, in this process and in attached ones, so no value changes from
//!    here on;
//! 3. lays the new block out under a temporary name, copies every surviving value into it, and
//!    renames it over the old path (a new file: readers see the path's inode change and reopen,
//!    as they do when an app restarts);
//! 4. sets the old block's `superseded` word, swaps the new block in and releases the optex. A
//!    writer that was waiting finds `superseded` set and redoes its write on the new block (an
//!    attached process reopens the path first).
//!
//! The cost is one uncontended lock per run-time counter update (a compare-and-swap and a
//! store): run-time statistics are for values that change at human rates, the compile-time map
//! for hot paths. A published change costs one registry update (one journal record appended,
//! and the app's `.INI` and `.h` where install put them, replaced by a rename without a flush
//! to the disk: they are derived from the registry and written again at the next change) and
//! one new block. The block, the files and the names handed to the registry hold every
//! run-time counter, and the run-time map is built, validated and fingerprinted again from the
//! definitions: work in proportion to their number, and no memory kept beyond the new block
//! (the map each layout is made from is freed after it: `runtime_map`).
//!
//! # Adds published in batches
//!
//! Publishing every single add would make n adds cost work in n². So an add past the first
//! few is *staged*: it enters the definitions at once (its spec checked, its offset and
//! handle given by the call), and its value lives in a staging word of the owner
//! until the next publication copies it into the new block. The handle works at once: its
//! operations reach the staging word (under the staging lock, which the publication holds
//! while it copies the words and swaps the new block in, so no update is lost). An add is
//! staged only while
//!
//! - its object is in the current block already (an object's first counter is published with
//!   it, so that an object the block cannot hold is refused by its first add, not later),
//! - the staged counters, these included, are at most one eighth of the published ones, and
//! - the run-time map stays far below its limits (so that the publication cannot refuse it);
//!
//! otherwise the add is published at once with everything staged before it. While fewer than
//! 8 counters are published every add is published at once; past that, the published block
//! grows by at least one eighth between publications, so n single adds lay out O(log n)
//! generations (45 for 1000) and their total work is linear in n (each add's share of the
//! publications is constant).
//!
//! What is staged is published by whichever comes first: an add past the fraction, any other
//! change (a removal publishes the staged adds with it), [`Dynamic::publish_runtime`], or
//! the owner's publishing thread, started by the first staged add, [`PUBLISH_DELAY`] (50 ms)
//! after the oldest staged add. So **a counter added is visible to collectors, the registry,
//! the `.INI` and attached processes within `PUBLISH_DELAY`** (the time of one publication
//! more on a loaded machine), at once after `publish_runtime`; in the adding process it is
//! usable at once. A publication the thread cannot make (the registry or the folder failing)
//! is logged and retried after the delay; `publish_runtime` returns its error. When the owner
//! goes, the thread is stopped and joined before the app's block is removed, and what is
//! still staged is not published (the app's run-time block goes with it).
//! [`Dynamic::runtime_publications`] counts the generations laid out.
//!
//! [`Dynamic::publish_runtime`]: crate::dynamic::Dynamic::publish_runtime
//! [`Dynamic::runtime_publications`]: crate::dynamic::Dynamic::runtime_publications

mod handle;
mod pending;
mod runtime_map;
mod spec;

pub use handle::{DynCounter, DynObject, Dynamic};
pub use pending::PUBLISH_DELAY;
pub use spec::{CounterSpec, ObjectSpec};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::block::create::BlockFile;
use crate::block::raw::RawBlock;
use crate::layout::{OPTEX_OFFSET, SUPERSEDED_OFFSET};
use crate::map::offsets::{counter_offsets, data_offset};
use crate::map::{DetailLevel, MapDef, MapError};
use crate::{Error, Optex};
use pending::{Pending, Staged, Staging, Word};
use runtime_map::RuntimeMap;

/// An add is staged while the staged counters are at most one in `BATCH_DIVISOR` of the
/// published ones: the publications of n single adds lay out blocks whose sizes grow
/// geometrically (by 1 + 1/`BATCH_DIVISOR`), so that their total work is linear in n.
const BATCH_DIVISOR: usize = 8;

/// How many times a write follows a superseded block before it gives up: each try means
/// another whole re-layout happened during the write, which takes far longer than a write.
const FOLLOW_LIMIT: usize = 64;

/// The run-time block's app name: `<app>.dyn`.
fn dyn_app(app: &str) -> String {
    format!("{app}.dyn")
}

/// One run-time counter's definition.
#[derive(Clone, Debug)]
struct CtrDef {
    offset: u32,
    name: String,
    help: String,
    counter_type: u32,
    detail: DetailLevel,
    scale: i32,
}

impl CtrDef {
    fn new(offset: u32, spec: &CounterSpec<'_>) -> CtrDef {
        CtrDef {
            offset,
            name: spec.name.to_owned(),
            help: spec.help.to_owned(),
            counter_type: spec.counter_type,
            detail: spec.detail,
            scale: spec.default_scale,
        }
    }
}

/// One run-time object's definition.
#[derive(Clone, Debug)]
struct ObjDef {
    offset: u32,
    name: String,
    help: String,
    detail: DetailLevel,
    costly: bool,
    counters: Vec<CtrDef>,
}

/// The owner's run-time definitions.
#[derive(Clone, Debug, Default)]
struct Defs {
    next_offset: u32,
    objects: Vec<ObjDef>,
    /// How many counters the current run-time block holds (the others are staged).
    published: usize,
}

/// A value of the current run-time block: byte offset and size (4 or 8).
#[derive(Clone, Copy, Debug)]
struct Slot {
    at: usize,
    size: u32,
}

/// The current run-time block and where its counters are, by symbolic offset.
#[derive(Debug)]
struct Current {
    block: BlockFile,
    /// Keyed by offsets this process hands out or reads from its own app's block: foldhash,
    /// not SipHash, as the index is built again at every change.
    values: foldhash::HashMap<u32, Slot>,
}

impl Current {
    /// Indexes a run-time block by its own (validated) records; every value is checked to lie
    /// inside the mapping at its natural alignment, since an attached process reads records
    /// another process wrote.
    fn new(block: BlockFile, records: &crate::block::records::Records) -> Current {
        let mut values = foldhash::HashMap::with_capacity_and_hasher(
            records.counters.len(),
            foldhash::fast::RandomState::default(),
        );
        let len = block.raw.len() as u64;
        for obj in records.objects.iter().filter(|o| !o.instanced) {
            for ctr in &records.counters[obj.counters.clone()] {
                let (Some(offset), size @ (4 | 8)) = (ctr.name_offset, ctr.size) else {
                    continue;
                };
                let at = obj.data_offset + u64::from(ctr.block_offset);
                if at + u64::from(size) <= len && at % u64::from(size) == 0 {
                    values.insert(
                        offset,
                        Slot {
                            at: at as usize,
                            size,
                        },
                    );
                }
            }
        }
        Current { block, values }
    }

    fn optex(&self) -> &Optex {
        // SAFETY: `OPTEX_OFFSET` is a 64-aligned, 64-byte field of the header, inside the
        // mapping (a block is larger than its header), which `self` keeps alive for the returned
        // lifetime; it is only ever changed through the optex's atomics.
        unsafe { Optex::from_ptr(self.block.raw.base().add(OPTEX_OFFSET).cast::<Optex>()) }
    }

    /// Takes the block's optex, this process present on it, a dead owner told by the
    /// presence locks (`crate::block::presence`).
    fn lock(&self) -> crate::optex::OptexGuard<'_> {
        self.optex().lock_checked(&self.block.probe())
    }

    /// The value at `slot`.
    fn word(&self, slot: Slot) -> Word<'_> {
        // SAFETY: `slot` was checked to lie inside this mapping at its natural alignment when
        // the block was indexed (`Current::new`); the mapping lives as long as `self`.
        unsafe {
            match slot.size {
                4 => Word::I32(self.block.raw.i32_at(slot.at)),
                _ => Word::I64(self.block.raw.i64_at(slot.at)),
            }
        }
    }

    fn superseded(&self) -> &AtomicU32 {
        // SAFETY: `SUPERSEDED_OFFSET` is a 4-aligned u32 of the header, inside the mapping.
        unsafe { self.block.raw.u32_at(SUPERSEDED_OFFSET) }
    }
}

/// The run-time statistics of one [`PrfData`](crate::PrfData): its [`State`], shared with the
/// thread that publishes deferred adds (ended when this is dropped).
#[derive(Debug)]
pub(crate) struct Shared {
    state: Arc<State>,
}

impl std::ops::Deref for Shared {
    type Target = State;

    fn deref(&self) -> &State {
        &self.state
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.state.staging.stop();
    }
}

impl Shared {
    /// The run-time part of the block of `map` at `block_path`; `owner` for the activating
    /// process (which defines run-time objects), else attached.
    pub(crate) fn new(map: &'static MapDef, block_path: &Path, owner: bool) -> Shared {
        Shared {
            state: Arc::new(State::new(map, block_path, owner)),
        }
    }

    /// Ends the publishing thread: the owner goes, and nothing may recreate its run-time
    /// block after its block is removed.
    pub(crate) fn stop(&self) {
        self.state.staging.stop();
    }

    /// Adds counters of `specs` (checked) to the run-time object `obj` without publishing
    /// them, when that may wait (module docs: "Adds published in batches"): they are staged
    /// and the publishing thread woken. `None` when they must be published now.
    fn stage(&self, obj: u32, specs: &[CounterSpec<'_>]) -> Result<Option<Vec<u32>>, Error> {
        let mut defs = self.defs()?;
        let total: usize = defs.objects.iter().map(|o| o.counters.len()).sum();
        let Some(i) = defs.objects.iter().position(|o| o.offset == obj) else {
            return Ok(None);
        };
        let mut pending = self.staging.lock();
        let staged = pending.words.len() + specs.len();
        // The object is in the current block (its first counter was published with it), the
        // staged adds stay a small fraction of the published ones, and the map stays far from
        // its limits: the publication cannot refuse what is staged.
        let may_wait = !defs.objects[i].counters.is_empty()
            && staged * BATCH_DIVISOR <= defs.published
            && total + specs.len() <= prfdata_rules::limits::MAX_COUNTERS as usize / 2
            && !pending.stopping();
        if !may_wait {
            return Ok(None);
        }
        let mut offsets = Vec::with_capacity(specs.len());
        for spec in specs {
            let offset = State::take_offset(&mut defs);
            let size = crate::winperf::counter_size(spec.counter_type).unwrap_or(8);
            pending.words.insert(offset, Staged::new(size));
            defs.objects[i].counters.push(CtrDef::new(offset, spec));
            offsets.push(offset);
        }
        // The thread sleeps until something is staged, then until the oldest is due: only the
        // first staged add wakes it.
        let first = pending.since.is_none();
        pending.since.get_or_insert_with(std::time::Instant::now);
        drop(pending);
        self.staging.schedule(&self.state, first);
        Ok(Some(offsets))
    }
}

/// The run-time statistics of one [`PrfData`](crate::PrfData): its definitions (owner) and the
/// current run-time block.
#[derive(Debug)]
pub(crate) struct State {
    app: &'static str,
    /// The installed map (its names go into the rewritten .INI with the run-time ones).
    map: &'static MapDef,
    dir: PathBuf,
    owner: bool,
    installed_highest: u32,
    defs: Mutex<Defs>,
    current: RwLock<Option<Arc<Current>>>,
    /// The registry the names were last registered in, kept open: it keeps the tree it last
    /// wrote, so that the next change reads nothing back (see `prfdata_registry::FileRegistry`).
    registry: Mutex<Option<prfdata_registry::FileRegistry>>,
    /// The installed map's names, as the `.INI` written at every change starts with them.
    installed_names: std::sync::OnceLock<prfdata_registry::install::CounterSet>,
    /// The counters added since the last publication, and the thread that publishes them.
    staging: Staging,
    /// How many run-time block generations this process published.
    publications: AtomicU64,
}

impl State {
    fn new(map: &'static MapDef, block_path: &Path, owner: bool) -> State {
        let installed_highest = map.highest_offset();
        State {
            app: map.app,
            map,
            dir: block_path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            owner,
            installed_highest,
            defs: Mutex::new(Defs {
                next_offset: installed_highest + 2,
                objects: Vec::new(),
                published: 0,
            }),
            current: RwLock::new(None),
            registry: Mutex::new(None),
            installed_names: std::sync::OnceLock::new(),
            staging: Staging::default(),
            publications: AtomicU64::new(0),
        }
    }

    /// At activation: removes the run-time block a previous activation of the app left (it was
    /// killed, or did not exit normally), and its run-time names, so that a collector never
    /// serves a dead process's run-time statistics beside this one's. Only the process that
    /// holds the app's block creates its run-time block, and this one just activated it: any
    /// run-time block there is a previous one's.
    pub(crate) fn clear_stale(&self) {
        let path = self.path();
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                log::debug!(
                    "app {}: removing a previous run's {}",
                    self.app,
                    path.display()
                );
                let _ = std::fs::remove_file(&path);
                if let Err(e) = self.register_names(None) {
                    log::warn!("{e}");
                }
            }
            _ => {}
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.blk", dyn_app(self.app)))
    }

    /// The current block: the owner's, or (attached) the one at the path, opened if needed.
    fn current(&self) -> Result<Option<Arc<Current>>, Error> {
        let held = self
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if held.is_some() || self.owner {
            return Ok(held);
        }
        let path = self.path();
        let (block, records) = match BlockFile::attach_unmapped(&dyn_app(self.app), &path) {
            Ok(opened) => opened,
            Err(Error::NotActive { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let current = Arc::new(Current::new(block, &records));
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&current));
        Ok(Some(current))
    }

    /// An attached process drops a superseded block, to reopen the path.
    fn forget(&self, old: &Arc<Current>) {
        if self.owner {
            return;
        }
        let mut slot = self.current.write().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, old)) {
            *slot = None;
        }
    }

    /// Runs `f` on the run-time counter `offset` with the block's optex held, following
    /// re-layouts; on its staging word (its lock held) if it was added since the last
    /// publication.
    fn with_value<T>(&self, offset: u32, f: impl Fn(Word<'_>) -> T) -> Result<T, Error> {
        for _ in 0..FOLLOW_LIMIT {
            let current = self.current()?;
            if let Some(current) = &current {
                let guard = current.lock();
                if current.superseded().load(Ordering::Acquire) != 0 {
                    drop(guard);
                    self.forget(current);
                    continue;
                }
                if let Some(slot) = current.values.get(&offset).copied() {
                    let out = f(current.word(slot));
                    drop(guard);
                    return Ok(out);
                }
            }
            if !self.owner {
                break;
            }
            if let Some(staged) = self.staging.lock().words.get(&offset) {
                return Ok(f(staged.word()));
            }
            // Not staged either: published since the block was looked at, or no such counter.
            let now = self.current()?;
            if now.as_ref().map(Arc::as_ptr) == current.as_ref().map(Arc::as_ptr) {
                break;
            }
        }
        Err(Error::NoSuchStatistic {
            app: self.app.to_owned(),
            offset,
        })
    }

    /// Whether the run-time counter `offset` exists now (staged ones included, in the owner).
    fn has_counter(&self, offset: u32) -> Result<bool, Error> {
        if self.owner && self.staging.lock().words.contains_key(&offset) {
            return Ok(true);
        }
        // An attached process follows a block laid out again since it last looked.
        for _ in 0..FOLLOW_LIMIT {
            let Some(current) = self.current()? else {
                return Ok(false);
            };
            if current.superseded().load(Ordering::Acquire) != 0 {
                self.forget(&current);
                continue;
            }
            return Ok(current.values.contains_key(&offset));
        }
        Ok(false)
    }

    /// The owner's definitions, locked; `Err` in an attached process.
    fn defs(&self) -> Result<std::sync::MutexGuard<'_, Defs>, Error> {
        if !self.owner {
            return Err(Error::NotOwner {
                app: self.app.to_owned(),
            });
        }
        Ok(self.defs.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Changes the definitions with `edit`, then registers the names and lays the run-time block
    /// out again; the definitions change only if both succeed.
    fn change<T>(&self, edit: impl FnOnce(&mut Defs) -> Result<T, Error>) -> Result<T, Error> {
        let mut defs = self.defs()?;
        self.change_held(&mut defs, edit)
    }

    /// [`change`](Self::change) with the definitions' lock already held.
    fn change_held<T>(
        &self,
        defs: &mut Defs,
        edit: impl FnOnce(&mut Defs) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut next = defs.clone();
        let out = edit(&mut next)?;
        let layout = RuntimeMap::build(self.app, &next);
        // SAFETY: the map is read only below, while `layout` lives, by calls that keep nothing
        // of it: `validate` and `relayout` (whose map errors `detached` turns into text here),
        // and `register_names` (which copies the names out).
        let map = layout.as_ref().map(|l| unsafe { l.map() });
        if let Some(map) = map {
            crate::map::validate_at_run_time(map).map_err(|e| self.detached(e))?;
        }
        // The map's fingerprint, computed once for the names and the block: it hashes every
        // name and help text.
        let map = map.map(|m| (m, m.fingerprint()));
        self.register_names(map)?;
        if let Err(e) = self.relayout(map) {
            // Put the registry back to the block that stays, so that the provider keeps
            // labelling it.
            let kept = RuntimeMap::build(self.app, defs);
            // SAFETY: as above, for `kept`.
            let kept_map = kept.as_ref().map(|l| unsafe { l.map() });
            if let Err(undo) = self.register_names(kept_map.map(|m| (m, m.fingerprint()))) {
                log::warn!(
                    "app {}: run-time names left for a layout that failed: {undo}",
                    self.app
                );
            }
            return Err(e);
        }
        next.published = next.objects.iter().map(|o| o.counters.len()).sum();
        *defs = next;
        Ok(out)
    }

    /// A map error about a run-time map, as text: the map's strings are freed after the change
    /// that made it, and the error must outlive it.
    fn detached(&self, e: MapError) -> Error {
        Error::RuntimeLayout {
            app: self.app.to_owned(),
            reason: e.to_string(),
        }
    }

    /// Registers the run-time names of `map` (none: `None`), given with its fingerprint, in one
    /// registry update, then rewrites the app's `.INI` and `.h` from what that update read (no
    /// second read). The names are made once ([`counter_set`](crate::install::counter_set))
    /// and serve both.
    fn register_names(&self, map: Option<(&MapDef, u64)>) -> Result<(), Error> {
        use prfdata_registry::install::CounterNames;
        use prfdata_registry::{paths, service, update, LodctrError};
        let Ok(root) = paths::registry_root() else {
            return Ok(());
        };
        if !root.join(paths::STORE_FILE).exists() {
            return Ok(());
        }
        let runtime = map.map(|(m, fingerprint)| crate::install::counter_set_with(m, fingerprint));
        let objects = runtime.as_ref().map_or(&[][..], |set| &set.objects);
        // An object's own name, as the registry takes it: the objects are few.
        let object_names: Vec<CounterNames> = objects
            .iter()
            .map(|o| CounterNames {
                symbol: o.symbol.clone(),
                offset: o.offset,
                texts: o.texts.clone(),
                factor: None,
                unit: None,
            })
            .collect();
        let names = object_names
            .iter()
            .zip(objects)
            .flat_map(|(name, o)| std::iter::once(name).chain(&o.counters));
        let fingerprint = runtime.as_ref().and_then(|set| set.fingerprint);
        let registered = self
            .registry(&root)
            .map_err(LodctrError::from)
            .and_then(|reg| {
                update(&reg, |hive| {
                    let range = prfdata_registry::apply_runtime_names(
                        hive,
                        self.app,
                        self.installed_highest,
                        names,
                        fingerprint,
                    )?;
                    let ini = service::read_service(hive, self.app)?.and_then(|s| s.ini_file);
                    Ok::<_, LodctrError>((range, ini))
                })
            });
        match registered {
            Ok((range, ini)) => {
                log::debug!("app {}: run-time names registered: {range:?}", self.app);
                if let Some(ini) = ini {
                    self.rewrite_ini(Path::new(&ini), runtime);
                }
                Ok(())
            }
            Err(LodctrError::NotLoaded { .. }) => Ok(()),
            Err(e) => Err(Error::RuntimeNames {
                app: self.app.to_owned(),
                reason: e.to_string(),
            }),
        }
    }

    /// The registry in `root`, opened once (again if `PRFDATA_REGISTRY` now names another).
    fn registry(
        &self,
        root: &Path,
    ) -> Result<prfdata_registry::FileRegistry, prfdata_registry::RegistryError> {
        let mut kept = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        match &*kept {
            Some(reg) if reg.root() == root => Ok(reg.clone()),
            _ => {
                let reg = prfdata_registry::FileRegistry::open(root)?;
                *kept = Some(reg.clone());
                Ok(reg)
            }
        }
    }

    /// Rewrites the app's counter .INI and .h beside `ini` (where install recorded them, `Ini
    /// File`) with the installed map's names and the run-time ones, so that the files
    /// describe what the registry holds. The registry is what collectors read: a file that
    /// cannot be written is logged, not an error, and the files are not flushed to the disk
    /// (each is replaced whole by a rename; the next change writes them again).
    fn rewrite_ini(&self, ini: &Path, runtime: Option<prfdata_registry::install::CounterSet>) {
        let Some(dir) = ini.parent() else {
            return;
        };
        let mut set = self
            .installed_names
            .get_or_init(|| crate::install::counter_set(self.map))
            .clone();
        if let Some(runtime) = runtime {
            set.objects.extend(runtime.objects);
        }
        if let Err(e) = prfdata_registry::install::rewrite_counter_files(&set, dir) {
            log::warn!("app {}: run-time names registered, but {e}", self.app);
        }
    }

    /// Publishes the layout of `map`, given with its fingerprint (or removes the run-time block
    /// when `None`), copying every
    /// value that survives, with the old block's optex held throughout (module docs).
    fn relayout(&self, map: Option<(&MapDef, u64)>) -> Result<(), Error> {
        let mut slot = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let old = slot.clone();
        let guard = old.as_ref().map(|c| c.lock());
        let mut staged = self.staging.lock();
        let new = match map {
            None => {
                // Nothing left to publish: the run-time block goes (a block is never removed
                // on drop: the last member of the app's block removes it).
                if let Some(old) = &old {
                    old.block.remove_now();
                }
                None
            }
            Some((map, fingerprint)) => {
                let fill = |raw: &RawBlock| copy_values(old.as_deref(), &staged, map, raw);
                // Only the process that defines run-time objects writes this path (a previous
                // one's block was cleared at activation): a new layout replaces the old.
                let block = BlockFile::replace(map, fingerprint, Some(&self.dir), fill).map_err(
                    |e| match e {
                        Error::Map(e) => self.detached(e),
                        other => other,
                    },
                )?;
                let size = block.raw.len() as u64;
                let records = crate::block::records::parse(&block.raw, size).map_err(|e| {
                    Error::MapMismatch {
                        path: block.path().to_path_buf(),
                        reason: e.to_string(),
                    }
                })?;
                Some(Arc::new(Current::new(block, &records)))
            }
        };
        if let Some(old) = &old {
            old.superseded().store(1, Ordering::Release);
        }
        *slot = new;
        staged.published();
        self.publications.fetch_add(1, Ordering::Relaxed);
        drop(staged);
        drop(guard);
        Ok(())
    }

    /// Publishes the counters staged since the last publication, if any: one new block and
    /// one registry update for all of them.
    fn publish(&self) -> Result<(), Error> {
        let mut defs = self.defs()?;
        // Looked at under the definitions' lock: a publication that ran meanwhile (the
        // publishing thread's, or another call's) left nothing staged, and this one then lays
        // out nothing.
        if self.staging.lock().since.is_none() {
            return Ok(());
        }
        self.change_held(&mut defs, |_| Ok(()))
    }

    fn publications(&self) -> u64 {
        self.publications.load(Ordering::Relaxed)
    }

    fn take_offset(defs: &mut Defs) -> u32 {
        let offset = defs.next_offset;
        defs.next_offset += 2;
        offset
    }
}

/// Copies into the new block `raw` laid out from `map` the value of every counter of `map`
/// that `old` (the block it replaces, if any) or `staged` (the counters added since) holds with
/// the same size. The caller holds `old`'s optex and the staging lock.
fn copy_values(old: Option<&Current>, staged: &Pending, map: &MapDef, raw: &RawBlock) {
    for (i, obj) in map.objects.iter().enumerate() {
        let data = data_offset(map, i);
        for (ctr, at) in obj.counters.iter().zip(counter_offsets(obj)) {
            let (Some(offset), Some(size)) = (ctr.offset, ctr.value_size()) else {
                continue;
            };
            let from = old
                .and_then(|o| {
                    let slot = o.values.get(&offset).filter(|s| s.size == size)?;
                    Some(o.word(*slot))
                })
                .or_else(|| {
                    let word = staged.words.get(&offset).filter(|w| w.size() == size)?;
                    Some(word.word())
                });
            let Some(from) = from else {
                continue;
            };
            let to = data + at;
            // SAFETY: `to` is where `map` itself places the counter in the new block, which was
            // laid out from `map` (in bounds, aligned to its size); `raw` outlives `to`'s use.
            let to = unsafe {
                match size {
                    4 => Word::I32(raw.i32_at(to)),
                    _ => Word::I64(raw.i64_at(to)),
                }
            };
            to.store(from.load());
        }
    }
}

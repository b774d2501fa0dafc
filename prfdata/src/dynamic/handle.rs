//! [`Dynamic`], the handle [`PrfData::dynamic`] gives, and the handles of the run-time objects
//! and counters it makes.

use std::fmt;

use super::{CounterSpec, CtrDef, Defs, ObjDef, ObjectSpec, Shared, State};
use crate::map::{CounterDef, PerfDataMap, Source, Text};
use crate::{Error, PrfData};

/// An object added at run time ([`Dynamic::add_object`]): its symbolic offset, which its name
/// index is First Counter + (an offset above the installed map's highest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DynObject {
    offset: u32,
}

impl DynObject {
    /// The object's symbolic offset.
    pub fn offset(&self) -> u32 {
        self.offset
    }
}

/// A counter added at run time ([`Dynamic::add_counter`]), or found by its offset in an
/// attached process ([`Dynamic::dyn_counter`]).
///
/// Every operation takes the run-time block's lock for the instant of one atomic operation, and
/// follows the block when it is laid out again (see [`crate::dynamic`]): no update is lost to a
/// re-layout. Once the counter is removed, operations fail with
/// [`Error::NoSuchStatistic`].
pub struct DynCounter<'a> {
    shared: &'a Shared,
    offset: u32,
}

impl DynCounter<'_> {
    /// The counter's symbolic offset: what another process of the app passes to
    /// [`Dynamic::dyn_counter`] to reach it.
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// Adds `delta` (wrapping at the counter's width) and returns the previous value.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStatistic`] once the counter was removed.
    pub fn fetch_add(&self, delta: i64) -> Result<i64, Error> {
        self.shared
            .with_value(self.offset, |word| word.fetch_add(delta))
    }

    /// Sets the value (truncated to 32 bits for a DWORD counter).
    ///
    /// # Errors
    ///
    /// As [`DynCounter::fetch_add`].
    pub fn store(&self, value: i64) -> Result<(), Error> {
        self.shared
            .with_value(self.offset, |word| word.store(value))
    }

    /// The value (a DWORD counter's sign-extended).
    ///
    /// # Errors
    ///
    /// As [`DynCounter::fetch_add`].
    pub fn load(&self) -> Result<i64, Error> {
        self.shared.with_value(self.offset, |word| word.load())
    }
}

impl fmt::Debug for DynCounter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynCounter")
            .field("app", &self.shared.app)
            .field("offset", &self.offset)
            .finish()
    }
}

/// Refuses a counter type the run-time block cannot hold, before anything changes: one that is
/// not a plain DWORD or LARGE number, or that needs a base counter after it.
fn check_spec(spec: &CounterSpec<'_>) -> Result<(), Error> {
    let probe = CounterDef {
        symbol: "(the run-time counter)",
        offset: Some(2),
        texts: &[Text {
            lang: "009",
            name: "",
            help: "",
        }],
        detail: spec.detail,
        default_scale: spec.default_scale,
        counter_type: spec.counter_type,
        text_len: 0,
        factor: None,
        unit: None,
        source: Source::Stored,
        aggregate: None,
    };
    Ok(crate::map::validate::check_lone_counter(&probe)?)
}

fn find(defs: &mut Defs, obj: DynObject) -> Option<&mut ObjDef> {
    defs.objects.iter_mut().find(|o| o.offset == obj.offset)
}

/// Adds, removes and reaches the run-time objects and counters of a [`PrfData`] (the Windows 95
/// stat servers' statistics added "at any time"): made by [`PrfData::dynamic`]. Feature
/// `install`; see [`crate::dynamic`] for where they live and how their names reach the registry.
#[derive(Debug)]
pub struct Dynamic<'a, M: PerfDataMap> {
    prf: &'a PrfData<M>,
}

impl<M: PerfDataMap> PrfData<M> {
    /// The handle that adds, removes and reaches run-time objects and counters ([`Dynamic`]).
    /// Feature `install`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::dynamic::{CounterSpec, ObjectSpec};
    /// # prfdata::prfdata_map! { pub mod m { app: "DynamicHandleDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let dynamic = prf.dynamic();
    /// let obj = dynamic.add_object(&ObjectSpec::new("Plug-in", "p"))?;
    /// let calls = dynamic.add_counter(obj, &CounterSpec::new("Calls", "c",
    ///     prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT))?;
    /// calls.fetch_add(1)?;
    /// assert_eq!(calls.load()?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dynamic(&self) -> Dynamic<'_, M> {
        Dynamic { prf: self }
    }
}

impl<'a, M: PerfDataMap> Dynamic<'a, M> {
    /// Adds an object at run time (the Windows 95 stat servers' statistics added "at any time"),
    /// without counters yet: it is published with its first [`add_counter`](Dynamic::add_counter).
    /// Feature `install`; see [`crate::dynamic`] for where it lives and how its names reach
    /// the registry.
    ///
    /// # Errors
    ///
    /// [`Error::NotOwner`] in an attached process (only the activating process defines run-time
    /// statistics).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::dynamic::{CounterSpec, ObjectSpec};
    /// # prfdata::prfdata_map! { pub mod m { app: "AddObjectDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let plugin = prf.dynamic().add_object(&ObjectSpec::new("Plug-in", "A plug-in's counters."))?;
    /// let calls = prf.dynamic().add_counter(plugin, &CounterSpec::new("Calls", "Calls so far.",
    ///     prfdata_wire::winperf::PERF_COUNTER_LARGE_RAWCOUNT))?;
    /// calls.fetch_add(5)?;
    /// // Another counter re-lays the run-time block out; the value follows.
    /// let errors = prf.dynamic().add_counter(plugin, &CounterSpec::new("Errors", "Errors so far.",
    ///     prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT))?;
    /// assert_eq!(calls.load()?, 5);
    /// assert_eq!((plugin.offset(), calls.offset(), errors.offset()), (4, 6, 8));
    /// prf.dynamic().remove_counter(&calls)?;
    /// assert!(calls.load().is_err());
    /// prf.dynamic().remove_object(plugin)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_object(&self, spec: &ObjectSpec<'_>) -> Result<DynObject, Error> {
        let mut defs = self.prf.dynamic.defs()?;
        let offset = State::take_offset(&mut defs);
        defs.objects.push(ObjDef {
            offset,
            name: spec.name.to_owned(),
            help: spec.help.to_owned(),
            detail: spec.detail,
            costly: spec.costly,
            counters: Vec::new(),
        });
        Ok(DynObject { offset })
    }

    /// Adds a counter to a run-time object: the run-time block is laid out again with it (its
    /// other values kept) and its name registered, at once or, past the first few counters,
    /// with the next batch, within [`PUBLISH_DELAY`](crate::dynamic::PUBLISH_DELAY) (see
    /// [`crate::dynamic`], "Adds published in batches"). The counter is usable through its
    /// handle at once. Feature `install`.
    ///
    /// A publication is one registry update and one new block, each costing in proportion to
    /// the run-time counters there are; batches grow with the counters, so that n single adds
    /// cost work in proportion to n. [`add_counters`](Dynamic::add_counters) adds many in one
    /// call; [`publish_runtime`](Dynamic::publish_runtime) publishes what is staged now.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStatistic`] if `obj` was removed; [`Error::Map`] for a counter type that
    /// is not a plain DWORD or LARGE number; [`Error::RuntimeNames`] if the registry could not
    /// be updated; [`Error::RuntimeLayout`] past the block's limits; the file errors of
    /// [`PrfData::activate`]; [`Error::NotOwner`] in an attached process.
    pub fn add_counter(
        &self,
        obj: DynObject,
        spec: &CounterSpec<'_>,
    ) -> Result<DynCounter<'a>, Error> {
        let mut added = self.add_counters(obj, std::slice::from_ref(spec))?;
        added.pop().ok_or_else(|| Error::NoSuchStatistic {
            app: self.prf.dynamic.app.to_owned(),
            offset: obj.offset,
        })
    }

    /// Adds several counters to a run-time object in one change: one registry update and one
    /// new block for all of them, in the order given. Feature `install`.
    ///
    /// # Errors
    ///
    /// As [`Dynamic::add_counter`]; if any spec is refused, none is added.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::dynamic::{CounterSpec, ObjectSpec};
    /// use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;
    /// # prfdata::prfdata_map! { pub mod m { app: "AddCountersDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let queues = prf.dynamic().add_object(&ObjectSpec::new("Queues", "One counter per queue."))?;
    /// let names: Vec<String> = (0..3).map(|i| format!("Queue {i}")).collect();
    /// let specs: Vec<_> = names
    ///     .iter()
    ///     .map(|n| CounterSpec::new(n, "Items waiting.", PERF_COUNTER_RAWCOUNT))
    ///     .collect();
    /// let depths = prf.dynamic().add_counters(queues, &specs)?;
    /// depths[2].store(7)?;
    /// assert_eq!(depths.iter().map(|d| d.offset()).collect::<Vec<_>>(), [6, 8, 10]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_counters(
        &self,
        obj: DynObject,
        specs: &[CounterSpec<'_>],
    ) -> Result<Vec<DynCounter<'a>>, Error> {
        let shared = &self.prf.dynamic;
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        for spec in specs {
            check_spec(spec)?;
        }
        let offsets = match shared.stage(obj.offset, specs)? {
            Some(offsets) => offsets,
            None => shared.change(|defs| {
                let mut offsets = Vec::with_capacity(specs.len());
                for spec in specs {
                    let offset = State::take_offset(defs);
                    let target = find(defs, obj).ok_or_else(|| Error::NoSuchStatistic {
                        app: shared.app.to_owned(),
                        offset: obj.offset,
                    })?;
                    target.counters.push(CtrDef::new(offset, spec));
                    offsets.push(offset);
                }
                Ok(offsets)
            })?,
        };
        Ok(offsets
            .into_iter()
            .map(|offset| DynCounter { shared, offset })
            .collect())
    }

    /// Removes a run-time counter: the run-time block is laid out again without it and its name
    /// leaves the registry. Feature `install`.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStatistic`] if it was removed already; otherwise as
    /// [`Dynamic::add_counter`].
    pub fn remove_counter(&self, ctr: &DynCounter<'_>) -> Result<(), Error> {
        let shared = &self.prf.dynamic;
        shared.change(|defs| {
            for obj in &mut defs.objects {
                if let Some(i) = obj.counters.iter().position(|c| c.offset == ctr.offset) {
                    obj.counters.remove(i);
                    return Ok(());
                }
            }
            Err(Error::NoSuchStatistic {
                app: shared.app.to_owned(),
                offset: ctr.offset,
            })
        })
    }

    /// Removes a run-time object and its counters. Feature `install`.
    ///
    /// # Errors
    ///
    /// As [`Dynamic::remove_counter`].
    pub fn remove_object(&self, obj: DynObject) -> Result<(), Error> {
        let shared = &self.prf.dynamic;
        shared.change(|defs| {
            let i = defs
                .objects
                .iter()
                .position(|o| o.offset == obj.offset)
                .ok_or_else(|| Error::NoSuchStatistic {
                    app: shared.app.to_owned(),
                    offset: obj.offset,
                })?;
            defs.objects.remove(i);
            Ok(())
        })
    }

    /// The run-time counter at symbolic offset `offset` ([`DynCounter::offset`]), as the
    /// activating process published it: how an attached process reaches run-time counters.
    /// Feature `install`.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStatistic`] if there is no such run-time counter now.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::dynamic::{CounterSpec, ObjectSpec};
    /// # prfdata::prfdata_map! { pub mod m { app: "DynCounterDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let owner = m::PrfData::activate_in(dir.path())?;
    /// let obj = owner.dynamic().add_object(&ObjectSpec::new("Plug-in", "p"))?;
    /// let calls = owner.dynamic().add_counter(obj, &CounterSpec::new("Calls", "c",
    ///     prfdata_wire::winperf::PERF_COUNTER_LARGE_RAWCOUNT))?;
    /// // In a worker process (here the same one):
    /// let worker = m::PrfData::attach_in(dir.path())?;
    /// worker.dynamic().dyn_counter(calls.offset())?.fetch_add(2)?;
    /// assert_eq!(calls.load()?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dyn_counter(&self, offset: u32) -> Result<DynCounter<'a>, Error> {
        if self.prf.dynamic.has_counter(offset)? {
            Ok(DynCounter {
                shared: &self.prf.dynamic,
                offset,
            })
        } else {
            Err(Error::NoSuchStatistic {
                app: self.prf.dynamic.app.to_owned(),
                offset,
            })
        }
    }

    /// Publishes now the run-time counters added since the run-time block was last laid out
    /// (see [`crate::dynamic`], "Adds published in batches"): collectors and attached
    /// processes see them when this returns, instead of within [`PUBLISH_DELAY`]. Nothing
    /// to do when every counter is published. Feature `install`.
    ///
    /// [`PUBLISH_DELAY`]: crate::dynamic::PUBLISH_DELAY
    ///
    /// # Errors
    ///
    /// As [`Dynamic::add_counter`].
    pub fn publish_runtime(&self) -> Result<(), Error> {
        // Only the owner publishes (`Error::NotOwner` in an attached process).
        drop(self.prf.dynamic.defs()?);
        self.prf.dynamic.publish()
    }

    /// How many generations of the run-time block this process laid out: one per change
    /// published (an add published at once, a batch of staged adds, a removal). Feature
    /// `install`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::dynamic::{CounterSpec, ObjectSpec};
    /// use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;
    /// # prfdata::prfdata_map! { pub mod m { app: "PublicationsDoc", object O = 0 { name: "O",
    /// #   help: "o", detail: Novice, default: C, instances: none, costly: false, counters {
    /// #   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// # let dir = tempfile::tempdir()?;
    /// let prf = m::PrfData::activate_in(dir.path())?;
    /// let obj = prf.dynamic().add_object(&ObjectSpec::new("Queues", "One counter per queue."))?;
    /// let names: Vec<String> = (0..200).map(|i| format!("Queue {i}")).collect();
    /// for name in &names {
    ///     prf.dynamic().add_counter(obj, &CounterSpec::new(name, "Items waiting.", PERF_COUNTER_RAWCOUNT))?;
    /// }
    /// prf.dynamic().publish_runtime()?;
    /// // Far fewer block generations than adds: most adds were published in batches.
    /// assert!(prf.dynamic().runtime_publications() < 50);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runtime_publications(&self) -> u64 {
        self.prf.dynamic.publications()
    }
}

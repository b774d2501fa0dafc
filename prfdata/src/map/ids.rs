//! Typed ids: the map marker, objects and counters.
//!
//! The ids carry in their types everything the hot path would otherwise check at run time: which
//! map they belong to, whether their object has instances, and the counter's width. An update
//! through [`PrfData::get_ctr64`](crate::PrfData::get_ctr64) is then an addition of constants and
//! one atomic instruction.

use core::fmt;
use core::marker::PhantomData;

use super::MapDef;
use crate::counter_type::{CounterType, Width};

/// A performance data map: implemented by the `Map` type [`prfdata_map!`](crate::prfdata_map)
/// generates.
///
/// # Safety
///
/// Implement it only through [`prfdata_map!`](crate::prfdata_map). The layout of the shared
/// block, and so every offset [`PrfData`](crate::PrfData) reaches memory at, is computed from
/// `DEF`: an implementation promises that `DEF` passes the map's rules ([`MapError::assert_valid`](super::MapError::assert_valid)) (the
/// macro checks it at compile time). [`PrfData::activate`](crate::PrfData::activate) and
/// [`PrfData::attach`](crate::PrfData::attach) check it again and refuse an invalid map with
/// [`Error::Map`](crate::Error::Map), so a broken promise here ends in an error, not in memory
/// outside the block.
///
/// A hand-written implementation does not compile without `unsafe`:
///
/// ```compile_fail,E0200
/// struct Mine;
/// impl prfdata::map::PerfDataMap for Mine {
///     const DEF: &'static prfdata::map::MapDef = &prfdata::map::MapDef { app: "Mine", objects: &[] };
/// }
/// ```
///
/// # Examples
///
/// ```
/// use prfdata::map::PerfDataMap;
/// prfdata::prfdata_map! { pub mod m { app: "PerfDataMapDoc", object O = 0 { name: "O", help: "o",
///   detail: Novice, default: C, instances: none, costly: false, counters {
///   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
/// assert_eq!(<m::Map as PerfDataMap>::DEF.app, "PerfDataMapDoc");
/// ```
pub unsafe trait PerfDataMap: 'static {
    /// The map's definitions.
    const DEF: &'static MapDef;
}

mod sealed {
    pub trait Sealed {}
}

/// Whether an object has instances: [`Global`] or [`Instanced`].
pub trait Scope: sealed::Sealed + 'static {
    /// True for [`Instanced`].
    const INSTANCED: bool;
    /// Where a counter of object `O` lives: `()` for [`Global`] (its one counter block),
    /// an [`InstanceId`] for [`Instanced`]. What
    /// [`PrfData::get_ctr32`](crate::PrfData::get_ctr32) takes as its `at`.
    type At<O: Object>: Copy;

    /// The offset of the counter block `at` names in a block laid out from `O`'s map.
    #[doc(hidden)]
    fn __block_of<O: Object>(at: Self::At<O>) -> usize;
}

/// The scope of an object without instances: its counters are reached without an instance.
#[derive(Debug)]
pub enum Global {}
/// The scope of an object with instances: its counters are reached through an instance.
#[derive(Debug)]
pub enum Instanced {}
impl sealed::Sealed for Global {}
impl sealed::Sealed for Instanced {}
impl Scope for Global {
    const INSTANCED: bool = false;
    type At<O: Object> = ();

    #[inline(always)]
    fn __block_of<O: Object>((): ()) -> usize {
        const { data_offset::<O>() }
    }
}
impl Scope for Instanced {
    const INSTANCED: bool = true;
    type At<O: Object> = InstanceId<O>;

    #[inline(always)]
    fn __block_of<O: Object>(at: InstanceId<O>) -> usize {
        at.block_offset()
    }
}

/// An object of a map: implemented by the unit struct `prfdata_map!` generates per object.
///
/// It carries no offsets: every offset in the block is computed by prfdata from the map's
/// definitions ([`PerfDataMap::DEF`]) and the object's position, at compile time.
///
/// # Safety
///
/// Implement it only through [`prfdata_map!`](crate::prfdata_map), which promises that `INDEX`
/// is the position of this object in `Map::DEF.objects` and that `Scope` is [`Instanced`]
/// exactly when that object has instances: [`PrfData`](crate::PrfData) picks the region of the
/// block a counter lives in from them.
///
/// A hand-written implementation does not compile without `unsafe`:
///
/// ```compile_fail,E0200
/// prfdata::prfdata_map! { pub mod m { app: "ObjectSafetyDoc", object O = 0 { name: "O", help: "o",
///   detail: Novice, default: C, instances: none, costly: false, counters {
///   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
/// #[derive(Clone, Copy)]
/// struct Mine;
/// impl prfdata::map::Object for Mine {
///     type Map = m::Map;
///     type Scope = prfdata::map::Global;
///     const INDEX: usize = 0;
/// }
/// ```
///
/// # Examples
///
/// ```
/// use prfdata::map::Object;
/// prfdata::prfdata_map! { pub mod m { app: "ObjectDoc",
///   object A = 0 { name: "A", help: "a", detail: Novice, default: none, instances: none,
///     costly: false, counters { X = 2: RawCount { name: "X", help: "x", detail: Novice, scale: 0 }, } }
///   object B = 4 { name: "B", help: "b", detail: Novice, default: none,
///     instances: { max: 2, name_len: 8 }, costly: false,
///     counters { Y = 6: RawCount { name: "Y", help: "y", detail: Novice, scale: 0 }, } } } }
/// assert_eq!(<m::B as Object>::INDEX, 1);
/// ```
pub unsafe trait Object: Copy + 'static {
    /// The map the object belongs to.
    type Map: PerfDataMap;
    /// [`Global`] or [`Instanced`].
    type Scope: Scope;
    /// Position of the object in the map.
    const INDEX: usize;
}

/// Offset of object `O`'s first counter block in the block, computed from its map: a
/// constant in every caller, so reaching a counter of an object without instances costs no
/// computation at run time.
#[inline(always)]
pub(crate) const fn data_offset<O: Object>() -> usize {
    super::offsets::data_offset(<O::Map as PerfDataMap>::DEF, O::INDEX)
}

/// A counter of object `O`, of counter type `T`.
///
/// Made by [`prfdata_map!`](crate::prfdata_map), one constant per counter; it holds the counter's
/// position and its byte offset inside the object's counter block.
pub struct CtrId<T: CounterType, O: Object> {
    index: u32,
    offset: u32,
    _marker: PhantomData<fn() -> (T, O)>,
}

impl<T: CounterType, O: Object> CtrId<T, O> {
    /// The id of counter `index` of object `O`: what [`prfdata_map!`](crate::prfdata_map)
    /// makes its counter constants with. Not for use elsewhere (hence `unsafe` and hidden).
    ///
    /// # Safety
    ///
    /// `O`'s [`Object`] implementation and its map's [`PerfDataMap`] implementation come from
    /// `prfdata_map!` (the only code that calls this).
    ///
    /// # Panics
    ///
    /// At compile time (in the generated constants) if `index` is not a counter of `O` whose type
    /// is `T` and whose value has `T`'s width: ids can only name counters that exist, with the
    /// room their accessors write.
    #[doc(hidden)]
    pub const unsafe fn __from_macro(index: usize) -> Self {
        let def = &<O::Map as PerfDataMap>::DEF.objects[O::INDEX];
        assert!(
            index < def.counters.len(),
            "prfdata map: counter index out of range"
        );
        assert!(
            def.counters[index].counter_type == T::TYPE,
            "prfdata map: counter id typed with another counter type"
        );
        let histogram = matches!(def.counters[index].source, super::Source::Histogram { .. });
        assert!(
            histogram == (T::TYPE == crate::winperf::PERF_PRFDATA_HISTOGRAM),
            "prfdata map: a histogram id names a histogram's buckets, and only it"
        );
        assert!(
            matches!(def.counters[index].value_size(), Some(n)
                if n == <T::Width as Width>::SIZE || histogram),
            "prfdata map: counter id typed with another value size"
        );
        let offset = super::offsets::counter_offset(def, index);
        CtrId {
            index: index as u32,
            offset: offset as u32,
            _marker: PhantomData,
        }
    }

    /// The counter's position among its object's counters.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! {
    ///     pub mod m {
    ///         app: "CtrIdIndexExample",
    ///         object OBJ = 0 {
    ///             name: "Obj", help: "An object.", detail: Novice, default: B,
    ///             instances: none, costly: false,
    ///             counters {
    ///                 A = 2: RawCount { name: "A", help: "a", detail: Novice, scale: 0 },
    ///                 B = 4: BulkCount { name: "B", help: "b", detail: Novice, scale: 0 },
    ///             }
    ///         }
    ///     }
    /// }
    /// assert_eq!(m::B.index(), 1);
    /// assert_eq!(m::B.offset(), 16); // 8-byte block header, A at 8, B 8-aligned at 16
    /// ```
    pub const fn index(self) -> usize {
        self.index as usize
    }

    /// The byte offset of the value inside the object's counter block (its `CounterOffset`).
    pub const fn offset(self) -> usize {
        self.offset as usize
    }
}

impl<T: CounterType, O: Object> Clone for CtrId<T, O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: CounterType, O: Object> Copy for CtrId<T, O> {}
impl<T: CounterType, O: Object> fmt::Debug for CtrId<T, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let def = &<O::Map as PerfDataMap>::DEF.objects[O::INDEX];
        let symbol = def
            .counters
            .get(self.index as usize)
            .map_or("?", |c| c.symbol);
        write!(f, "CtrId({}::{})", def.symbol, symbol)
    }
}

/// A live instance of object `O`, returned by [`PrfData::add_instance`](crate::PrfData::add_instance) (CPrfData's INSTID).
///
/// It is `Copy`: keep it wherever the instance's counters are updated. After
/// [`PrfData::remove_instance`](crate::PrfData::remove_instance) (or [`Instances::remove_tree`](crate::Instances::remove_tree) of it or of an ancestor)
/// it is stale: removing it again is an error, and its counters belong to whatever instance
/// takes its slot next.
pub struct InstanceId<O: Object> {
    block_offset: usize,
    slot: u32,
    generation: u32,
    _object: PhantomData<fn() -> O>,
}

impl<O: Object> InstanceId<O> {
    pub(crate) fn new(block_offset: usize, slot: u32, generation: u32) -> Self {
        InstanceId {
            block_offset,
            slot,
            generation,
            _object: PhantomData,
        }
    }

    pub(crate) fn generation(&self) -> u32 {
        self.generation
    }

    /// The offset of the instance's counter block.
    #[inline(always)]
    pub(crate) fn block_offset(&self) -> usize {
        self.block_offset
    }

    /// The instance's slot in its object's table (stable while the instance lives).
    pub fn slot(&self) -> u32 {
        self.slot
    }
}

impl<O: Object> Clone for InstanceId<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O: Object> Copy for InstanceId<O> {}
impl<O: Object> PartialEq for InstanceId<O> {
    fn eq(&self, other: &Self) -> bool {
        self.slot == other.slot && self.generation == other.generation
    }
}
impl<O: Object> Eq for InstanceId<O> {}
impl<O: Object> fmt::Debug for InstanceId<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let symbol = <O::Map as PerfDataMap>::DEF.objects[O::INDEX].symbol;
        write!(
            f,
            "InstanceId({symbol} slot {} gen {})",
            self.slot, self.generation
        )
    }
}

//! Typed ids: the map marker, objects and counters.
//!
//! The ids carry in their types everything the hot path would otherwise check at run time: which
//! map they belong to, whether their object has instances, and the counter's width. An update
//! through [`PrfData::get_ctr64`](crate::PrfData::get_ctr64) is then an addition of constants and
//! one atomic instruction.

use core::fmt;
use core::marker::PhantomData;

use super::MapDef;
use crate::counter_type::CounterType;

/// A performance data map: implemented by the `Map` type [`prfdata_map!`](crate::prfdata_map)
/// generates.
pub trait PerfDataMap: 'static {
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
}
impl Scope for Instanced {
    const INSTANCED: bool = true;
}

/// An object of a map: implemented by the unit struct `prfdata_map!` generates per object.
pub trait Object: Copy + 'static {
    /// The map the object belongs to.
    type Map: PerfDataMap;
    /// [`Global`] or [`Instanced`].
    type Scope: Scope;
    /// Position of the object in the map.
    const INDEX: usize;
    /// Offset of the object's first counter block in the block: a constant, so reaching a
    /// counter of an object without instances costs no computation at run time.
    const DATA_OFFSET: usize =
        crate::block::layout::data_offset(<Self::Map as PerfDataMap>::DEF, Self::INDEX);
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
    /// The id of counter `index` of object `O`. Used by `prfdata_map!`.
    ///
    /// # Panics
    ///
    /// At compile time (in the generated constants) if `index` is not a counter of `O` whose type
    /// is `T`: ids can only name counters that exist.
    #[doc(hidden)]
    pub const fn new(index: usize) -> Self {
        let def = &<O::Map as PerfDataMap>::DEF.objects[O::INDEX];
        assert!(
            index < def.counters.len(),
            "prfdata map: counter index out of range"
        );
        assert!(
            def.counters[index].counter_type == T::TYPE,
            "prfdata map: counter id typed with another counter type"
        );
        let offset = crate::block::layout::counter_offset(def, index);
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
    ///
    /// # Examples
    ///
    /// See [`CtrId::index`].
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

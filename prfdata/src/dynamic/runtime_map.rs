//! The run-time block's map: built from the owner's definitions for one change, freed after it.
//!
//! The block writer, the map checks and install read a [`MapDef`], whose texts and slices are
//! `&'static`: a `prfdata_map!` map is a static. The run-time map is made again at every add
//! and remove, from every definition; leaked each time, its memory would grow with the square
//! of the number of counters. [`RuntimeMap`] owns what its map points into and frees it when
//! dropped, so the map it lends is valid for the life of the `RuntimeMap` only, not for
//! `'static` as its type says: [`RuntimeMap::map`] is `unsafe` for that reason, and its callers
//! (in this module's parent) keep nothing they read from it past one change.

use super::{dyn_app, Defs};
use crate::map::{CounterDef, Instances, MapDef, ObjectDef, Source, Text};

/// A run-time map and the allocations its references point into.
pub(super) struct RuntimeMap {
    map: MapDef,
    /// Every allocation `map` points into, freed on drop.
    owned: Vec<Owned>,
}

/// One allocation [`RuntimeMap::map`] points into.
enum Owned {
    Str(*mut str),
    Texts(*mut [Text]),
    Counters(*mut [CounterDef]),
    Objects(*mut [ObjectDef]),
}

impl RuntimeMap {
    /// The map of `defs` for `app`'s run-time block (objects without counters left out), or
    /// `None` when nothing is left to lay out.
    pub(super) fn build(app: &str, defs: &Defs) -> Option<RuntimeMap> {
        let mut owned = Vec::new();
        let objects: Vec<ObjectDef> = defs
            .objects
            .iter()
            .filter(|o| !o.counters.is_empty())
            .map(|o| {
                let counters: Vec<CounterDef> = o
                    .counters
                    .iter()
                    .map(|c| CounterDef {
                        symbol: lend_str(&mut owned, &format!("DYN_{}", c.offset)),
                        offset: Some(c.offset),
                        texts: lend_text(&mut owned, &c.name, &c.help),
                        detail: c.detail,
                        default_scale: c.scale,
                        counter_type: c.counter_type,
                        text_len: 0,
                        factor: None,
                        unit: None,
                        source: Source::Stored,
                        aggregate: None,
                    })
                    .collect();
                let counters = Box::into_raw(counters.into_boxed_slice());
                owned.push(Owned::Counters(counters));
                ObjectDef {
                    symbol: lend_str(&mut owned, &format!("DYN_{}", o.offset)),
                    offset: o.offset,
                    texts: lend_text(&mut owned, &o.name, &o.help),
                    detail: o.detail,
                    default_counter: None,
                    instances: Instances::None,
                    costly: o.costly,
                    total: false,
                    packed: false,
                    // SAFETY: `counters` came from `Box::into_raw` just above and is freed only
                    // when `owned` is dropped, with the `RuntimeMap` (see `map`).
                    counters: unsafe { &*counters },
                }
            })
            .collect();
        if objects.is_empty() {
            return None;
        }
        let objects = Box::into_raw(objects.into_boxed_slice());
        owned.push(Owned::Objects(objects));
        let app = lend_str(&mut owned, &dyn_app(app));
        Some(RuntimeMap {
            // SAFETY: as for `counters` above.
            map: MapDef {
                app,
                objects: unsafe { &*objects },
            },
            owned,
        })
    }

    /// The map.
    ///
    /// # Safety
    ///
    /// The texts and slices of the returned map live as long as `self`, not `'static`: the
    /// caller keeps nothing it reads from the map (a string, a slice, an error that holds one
    /// such as [`MapError`](crate::map::MapError)) beyond the life of `self`.
    pub(super) unsafe fn map(&self) -> &MapDef {
        &self.map
    }
}

impl Drop for RuntimeMap {
    fn drop(&mut self) {
        for owned in self.owned.drain(..) {
            // SAFETY: each pointer came from `Box::into_raw` in `build` and is freed once,
            // here; the references `map` holds into it are not used again (`map`'s contract).
            unsafe {
                match owned {
                    Owned::Str(p) => drop(Box::from_raw(p)),
                    Owned::Texts(p) => drop(Box::from_raw(p)),
                    Owned::Counters(p) => drop(Box::from_raw(p)),
                    Owned::Objects(p) => drop(Box::from_raw(p)),
                }
            }
        }
    }
}

/// A copy of `s`, owned by `owned`, lent for as long as `owned` keeps it.
fn lend_str(owned: &mut Vec<Owned>, s: &str) -> &'static str {
    let p = Box::into_raw(Box::<str>::from(s));
    owned.push(Owned::Str(p));
    // SAFETY: `p` came from `Box::into_raw` just above and is freed only when the
    // `RuntimeMap` that takes `owned` drops (see `RuntimeMap::map`).
    unsafe { &*p }
}

/// One English (009) text, owned by `owned` (see [`lend_str`]).
fn lend_text(owned: &mut Vec<Owned>, name: &str, help: &str) -> &'static [Text] {
    let text = Text {
        lang: "009",
        name: lend_str(owned, name),
        help: lend_str(owned, help),
    };
    let p = Box::into_raw(Box::<[Text]>::from([text]));
    owned.push(Owned::Texts(p));
    // SAFETY: as in `lend_str`.
    unsafe { &*p }
}

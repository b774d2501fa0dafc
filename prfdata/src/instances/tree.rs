//! Parents and children across the instance tables of one block.
//!
//! A child stores its parent as object, slot and generation ([`SlotRef`]); the parent's slot
//! counts its live children ([`layout::SlotHeader::children`](crate::block::layout::SlotHeader)).
//! The count makes the refusal to remove a parent that still has children O(1), the generation
//! makes a link to a parent whose slot was reused resolve to nothing rather than to a stranger.
//!
//! Every change here happens holding the optex, inside one write section: removing a whole
//! subtree is one section, so readers see the tree whole or gone. The order of the stores
//! inside a section does not matter to readers (they keep no copy made while the sequence was
//! odd); after a writer died inside one, [`Tables::recount`] derives every count again from the
//! links of the live instances.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;

use super::table::{Corrupt, NewInstance, ObjectTable, SlotRef};
use crate::block::raw::RawBlock;
use crate::map::MapDef;

/// All the instance tables of a writable block whose layout comes from a trusted map.
pub(crate) struct Tables<'a> {
    raw: &'a RawBlock,
    map: &'static MapDef,
}

impl<'a> Tables<'a> {
    /// The tables of `raw`, which was laid out from `map`.
    pub(crate) fn new(raw: &'a RawBlock, map: &'static MapDef) -> Tables<'a> {
        Tables { raw, map }
    }

    /// The table of object `object`.
    pub(crate) fn table(&self, object: usize) -> ObjectTable<'a> {
        ObjectTable::new(self.raw, self.map, object)
    }

    /// The indexes of the objects with instances (the only ones with slots, so with parents or
    /// children).
    fn instanced(&self) -> impl Iterator<Item = usize> + 'a {
        let objects = self.map.objects;
        (0..objects.len()).filter(move |&o| objects[o].has_instances())
    }

    /// Whether `link` names a live instance: an object with instances, and a slot live with
    /// that generation.
    pub(crate) fn resolve(&self, link: SlotRef) -> bool {
        let object = link.object as usize;
        self.map
            .objects
            .get(object)
            .is_some_and(|o| o.has_instances())
            && self.table(object).live_generation(link.slot) == Some(link.generation)
    }

    /// Adds `new` to `table` (one of these tables: the caller has it already, and making one
    /// costs a layout computation) and counts it among its parent's children. Hold the optex
    /// and a write section; `new.parent` must be live ([`Tables::resolve`]).
    ///
    /// Returns the slot and its generation, or `None` when the object is full.
    pub(crate) fn add(
        &self,
        table: &ObjectTable<'a>,
        new: &NewInstance<'_>,
    ) -> Result<Option<(u32, u32)>, Corrupt> {
        debug_assert!(new.parent.is_none_or(|p| self.resolve(p)));
        let Some(added) = table.add(new)? else {
            return Ok(None);
        };
        if let Some(p) = new.parent {
            let count = self.table(p.object as usize).children(p.slot);
            count.store(count.load(Relaxed).saturating_add(1), Relaxed);
        }
        Ok(Some(added))
    }

    /// The parent link of live slot `slot` of `table`, checked: an object with instances and a
    /// slot below its limit (the parent may have gone since: the generation is not checked).
    pub(crate) fn checked_parent(
        &self,
        table: &ObjectTable<'a>,
        slot: u32,
    ) -> Result<Option<SlotRef>, Corrupt> {
        let Some(p) = table.parent(slot) else {
            return Ok(None);
        };
        let Some(object) = self
            .map
            .objects
            .get(p.object as usize)
            .filter(|o| o.has_instances())
        else {
            return Err(table.corrupt_field(
                "parent_object",
                p.object.wrapping_add(1),
                "not an object with instances (+ 1)",
            ));
        };
        if p.slot as usize >= crate::block::layout::max_instances(object) {
            return Err(table.corrupt_field(
                "parent_slot",
                p.slot,
                "not a slot number of the parent's object",
            ));
        }
        Ok(Some(p))
    }

    /// Removes an instance of `table` (one of these tables) that has no live children and takes
    /// it off its parent's count. Hold the optex and a write section. Returns whether it was
    /// live (and so removed).
    ///
    /// The parent link and the parent's count are checked before anything is written.
    pub(crate) fn remove(
        &self,
        table: &ObjectTable<'a>,
        slot: u32,
        generation: u32,
    ) -> Result<bool, Corrupt> {
        if table.live_generation(slot) != Some(generation) {
            return Ok(false);
        }
        let parent = self
            .checked_parent(table, slot)?
            .filter(|&p| self.resolve(p))
            .map(|p| self.table(p.object as usize).children(p.slot));
        if let Some(count) = parent {
            // A live child whose link resolves is counted by its parent (added so, or counted
            // again by `recount`): a zero count is a scribble.
            if count.load(Relaxed) == 0 {
                return Err(table.corrupt_field(
                    "children",
                    0,
                    "the parent of a live child counts no children",
                ));
            }
        }
        if !table.remove(slot, generation)? {
            return Ok(false);
        }
        if let Some(count) = parent {
            count.store(count.load(Relaxed).saturating_sub(1), Relaxed);
        }
        Ok(true)
    }

    /// A live child of `parent`, if it has one. Scans every live instance: only to name a child
    /// in an error.
    #[cold]
    pub(crate) fn find_child(&self, parent: SlotRef) -> Result<Option<SlotRef>, Corrupt> {
        for object in self.instanced() {
            let table = self.table(object);
            for slot in table.live_slots()? {
                if table.parent(slot) == Some(parent) {
                    if let Some(generation) = table.live_generation(slot) {
                        return Ok(Some(SlotRef {
                            object: object as u32,
                            slot,
                            generation,
                        }));
                    }
                }
            }
        }
        Ok(None)
    }

    /// `root` and every live instance below it, each child before its parent (`root` last): the
    /// order in which [`Tables::remove`] can take them one by one, each a leaf when its turn
    /// comes. One pass over every live list, O(live instances).
    pub(crate) fn subtree(&self, root: SlotRef) -> Result<Vec<SlotRef>, Corrupt> {
        if self
            .table(root.object as usize)
            .children(root.slot)
            .load(Relaxed)
            == 0
        {
            return Ok(vec![root]);
        }
        let mut below: HashMap<SlotRef, Vec<SlotRef>> = HashMap::new();
        for object in self.instanced() {
            let table = self.table(object);
            for slot in table.live_slots()? {
                if let (Some(parent), Some(generation)) =
                    (table.parent(slot), table.live_generation(slot))
                {
                    below.entry(parent).or_default().push(SlotRef {
                        object: object as u32,
                        slot,
                        generation,
                    });
                }
            }
        }
        // Post-order without recursion; `seen` ends it even on links that form a cycle (which
        // the writer never makes: a parent is live before its child).
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![(root, false)];
        while let Some((node, children_done)) = stack.pop() {
            if children_done {
                order.push(node);
                continue;
            }
            if !seen.insert(node) {
                continue;
            }
            stack.push((node, true));
            for &child in below.get(&node).into_iter().flatten() {
                stack.push((child, false));
            }
        }
        Ok(order)
    }

    /// Derives every live instance's children count from the parent links of the live
    /// instances, after a writer died inside a write section: call once every table's lists are
    /// rebuilt ([`ObjectTable::rebuild`]). Hold the optex and a write section.
    ///
    /// A link that resolves to nothing (its parent is gone, or its slot holds another
    /// generation) counts for nobody; such a child shows no parent to readers either.
    #[cold]
    pub(crate) fn recount(&self) -> Result<(), Corrupt> {
        for object in self.instanced() {
            let table = self.table(object);
            for slot in table.live_slots()? {
                table.children(slot).store(0, Relaxed);
            }
        }
        for object in self.instanced() {
            let table = self.table(object);
            for slot in table.live_slots()? {
                if let Some(p) = table.parent(slot).filter(|&p| self.resolve(p)) {
                    let count = self.table(p.object as usize).children(p.slot);
                    count.store(count.load(Relaxed).saturating_add(1), Relaxed);
                }
            }
        }
        Ok(())
    }
}

//! Parents and children across the instance tables of one block.
//!
//! A child stores its parent as object, slot and generation ([`SlotRef`]); the parent's slot
//! counts its live children ([`layout::SlotHeader::children`](crate::layout::SlotHeader)).
//! The count makes the refusal to remove a parent that still has children O(1), the generation
//! makes a link to a parent whose slot was reused resolve to nothing rather than to a stranger.
//!
//! Every change here happens holding the optex, inside one write section: removing a whole
//! subtree is one section, so readers see the tree whole or gone. The order of the stores
//! inside a section does not matter to readers (they keep no copy made while the sequence was
//! odd); after a writer died inside one, [`Tables::repair`] derives every list and count again
//! from the slots' states and the links of the live instances.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;

use super::table::{Corrupt, NewInstance, ObjectTable, SlotRef};
use crate::block::raw::RawBlock;
use crate::block::records::TableLayout;
use crate::map::{offsets, MapDef};

/// All the instance tables of a writable block.
pub(crate) struct Tables<'a> {
    raw: &'a RawBlock,
    layout: Layout<'a>,
}

/// Where the tables' layout comes from.
#[derive(Clone, Copy)]
enum Layout<'a> {
    /// The trusted map the block was laid out from (the app's own processes).
    Map(&'static MapDef),
    /// One entry per object (`None` without instances), from records a reader validated
    /// against its mapping (a reader recovering from a dead lock holder).
    Tables(&'a [Option<TableLayout>]),
}

impl<'a> Tables<'a> {
    /// The tables of `raw`, which was laid out from `map`.
    pub(crate) fn new(raw: &'a RawBlock, map: &'static MapDef) -> Tables<'a> {
        Tables {
            raw,
            layout: Layout::Map(map),
        }
    }

    /// The tables of `raw` at `layouts`, one per object of the block (`None` for an object
    /// without instances), each vouched for as [`TableLayout`] says. Only for
    /// [`Tables::repair`].
    pub(crate) fn with_layouts(
        raw: &'a RawBlock,
        layouts: &'a [Option<TableLayout>],
    ) -> Tables<'a> {
        Tables {
            raw,
            layout: Layout::Tables(layouts),
        }
    }

    /// The table of object `object`, which has instances (or, from a map, any object).
    pub(crate) fn table(&self, object: usize) -> ObjectTable<'a> {
        match self.layout {
            Layout::Map(map) => ObjectTable::new(self.raw, map, object),
            Layout::Tables(layouts) => {
                // Only objects with instances are reached through these tables (every caller
                // checks `instance_limit` first); an object without is a table without slots.
                let none = TableLayout {
                    symbol: "an object without instances",
                    record: 0,
                    live: 0,
                    slots: 0,
                    data: 0,
                    slot_size: 0,
                    stride: 0,
                    block_size: 0,
                    max: 0,
                    max_name_len: 0,
                };
                let at = layouts.get(object).copied().flatten().unwrap_or(none);
                ObjectTable::with_layout(self.raw, &at)
            }
        }
    }

    /// The instance limit of object `object`, or `None` if it has no instances (or there is no
    /// such object).
    fn instance_limit(&self, object: usize) -> Option<usize> {
        match self.layout {
            Layout::Map(map) => map
                .objects
                .get(object)
                .filter(|o| o.has_instances())
                .map(offsets::max_instances),
            Layout::Tables(layouts) => layouts.get(object)?.map(|l| l.max as usize),
        }
    }

    /// The indexes of the objects with instances (the only ones with slots, so with parents or
    /// children).
    fn instanced(&self) -> impl Iterator<Item = usize> + '_ {
        let objects = match self.layout {
            Layout::Map(map) => map.objects.len(),
            Layout::Tables(layouts) => layouts.len(),
        };
        (0..objects).filter(move |&o| self.instance_limit(o).is_some())
    }

    /// Whether `link` names a live instance: an object with instances, and a slot live with
    /// that generation.
    pub(crate) fn resolve(&self, link: SlotRef) -> bool {
        let object = link.object as usize;
        self.instance_limit(object).is_some()
            && self.table(object).live_generation(link.slot) == Some(link.generation)
    }

    /// Derives every table's live and free lists from the slots' states, then every children
    /// count from the live links, after a writer died inside a write section: what the next
    /// locker does, be it a writer ([`PrfData`](crate::PrfData)) or a reader that found the
    /// holder dead (`crate::reader::recover`). Hold the optex and a write section.
    ///
    /// The rebuilt lists are consistent, so the recount finds nothing wrong unless a process
    /// scribbles on the block during the repair; the next operation that reads what it damaged
    /// then reports it.
    #[cold]
    pub(crate) fn repair(&self) {
        for object in self.instanced() {
            self.table(object).rebuild();
        }
        // Counts last: they are derived from the live instances the rebuilt lists hold.
        let _ = self.recount();
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
        let Some(limit) = self.instance_limit(p.object as usize) else {
            return Err(table.corrupt_field(
                "parent_object",
                p.object.wrapping_add(1),
                "not an object with instances (+ 1)",
            ));
        };
        if p.slot as usize >= limit {
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

    /// Reclaims every live instance whose owner process is gone (`alive` says: the block's
    /// presence locks, which tell a reused pid from its first owner and hold across pid
    /// namespaces), with the instances below it: each is removed as [`Tables::remove`] does,
    /// its `sum` counters folded into its object's retired accumulator. Hold the optex and a
    /// write section. O(live instances); each owner's liveness is asked once per call. Returns
    /// how many instances were removed.
    pub(crate) fn reclaim_dead(
        &self,
        alive: impl Fn(crate::process::ProcessId) -> bool,
    ) -> Result<usize, Corrupt> {
        let mut dead = Vec::new();
        let mut seen: HashMap<crate::process::ProcessId, bool> = HashMap::new();
        for object in self.instanced() {
            let table = self.table(object);
            if table.owned_count() == 0 {
                continue;
            }
            for slot in table.live_slots()? {
                let Some(owner) = table.owner(slot) else {
                    continue;
                };
                let alive = *seen.entry(owner).or_insert_with(|| alive(owner));
                if let (false, Some(generation)) = (alive, table.live_generation(slot)) {
                    dead.push(SlotRef {
                        object: object as u32,
                        slot,
                        generation,
                    });
                }
            }
        }
        let mut removed = 0;
        for root in dead {
            for n in self.subtree(root)? {
                let table = self.table(n.object as usize);
                if self.remove(&table, n.slot, n.generation)? {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Removes every live instance, children before their parents, folding each one's `sum`
    /// counters into its object's retired accumulator: what a process adopting a block whose
    /// processes all died does with their instances (they were theirs; the totals keep them).
    /// Call inside a write section, holding the optex. Returns how many were removed.
    pub(crate) fn retire_all(&self) -> Result<usize, Corrupt> {
        let mut removed = 0;
        // Roots first (their subtrees go with them); then whatever a parent link that resolves
        // to nothing left behind.
        for roots_only in [true, false] {
            let mut roots = Vec::new();
            for object in self.instanced() {
                let table = self.table(object);
                for slot in table.live_slots()? {
                    if roots_only && table.parent(slot).is_some() {
                        continue;
                    }
                    if let Some(generation) = table.live_generation(slot) {
                        roots.push(SlotRef {
                            object: object as u32,
                            slot,
                            generation,
                        });
                    }
                }
            }
            for root in roots {
                for n in self.subtree(root)? {
                    let table = self.table(n.object as usize);
                    if self.remove(&table, n.slot, n.generation)? {
                        removed += 1;
                    }
                }
            }
        }
        Ok(removed)
    }

    /// Whether any live instance is owned by a process: O(objects), from each object's
    /// owned count.
    pub(crate) fn has_owned(&self) -> bool {
        self.instanced()
            .any(|object| self.table(object).owned_count() > 0)
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
    fn recount(&self) -> Result<(), Corrupt> {
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

//! The instance table of one object, as the writer (the app, holding the optex) changes it.
//! Links between tables (parents and their children) are [`super::tree`]'s.
//!
//! Per object the block holds a dense *live list* of slot numbers, the slots themselves, and a
//! free list threaded through the free slots. Adding pops a free slot (or takes the next never
//! used one), removing swaps the last live entry into the hole: both O(1), where CPrfData scanned
//! every slot.
//!
//! Publication order, so that a reader never sees a half-made or half-removed instance:
//! every change happens inside a write section of the block's sequence counter (odd while
//! changing), and within it a slot's `state` is written LIVE last when adding and FREE first when
//! removing. A reader copies what it needs and keeps it only if the sequence was even and
//! unchanged around the copy ([`crate::block::reader`]).
//!
//! If the writer dies inside a write section, the sequence stays odd; the next process to take
//! the optex sees that its owner died and calls [`ObjectTable::rebuild`], which derives the live
//! and free lists again from the slots' states (the only thing written last / first); then
//! [`Tables::recount`](super::tree::Tables::recount) derives the children counts again.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::block::layout::{self, slot, SLOT_FREE, SLOT_LIVE};
use crate::block::raw::RawBlock;
use crate::map::{Instances, MapDef};

/// One object's instance table inside a writable block whose layout comes from a trusted map.
pub(crate) struct ObjectTable<'a> {
    raw: &'a RawBlock,
    record: usize,
    live: usize,
    slots: usize,
    data: usize,
    slot_size: usize,
    stride: usize,
    max: u32,
    max_name_len: u32,
}

/// A live instance named by its object, slot and generation: a parent link as a slot stores
/// it, and the way the tree code names instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SlotRef {
    /// The object's index in the map.
    pub object: u32,
    /// The slot.
    pub slot: u32,
    /// The slot's generation while this instance holds it.
    pub generation: u32,
}

/// What a new instance is made of.
pub(crate) struct NewInstance<'n> {
    pub name: &'n [u16],
    pub unique_id: i32,
    /// Its parent, live when the instance is added.
    pub parent: Option<SlotRef>,
}

impl<'a> ObjectTable<'a> {
    /// The table of object `index` of `map`, in `raw`, which was laid out from `map`.
    pub(crate) fn new(raw: &'a RawBlock, map: &MapDef, index: usize) -> ObjectTable<'a> {
        let obj = &map.objects[index];
        let base = layout::object_base(map, index);
        let regions = layout::object_regions(obj);
        let (max, max_name_len) = match obj.instances {
            Instances::None => (0, 0),
            Instances::Max { max, max_name_len } => (max, max_name_len),
        };
        debug_assert!(base + regions.size <= raw.len());
        ObjectTable {
            raw,
            record: layout::HEADER_SIZE + index * layout::OBJECT_RECORD_SIZE,
            live: base + regions.live,
            slots: base + regions.slots,
            data: base + regions.data,
            slot_size: layout::slot_size(obj),
            stride: layout::counter_block_size(obj),
            max,
            max_name_len,
        }
    }

    fn rec_u32(&self, field: usize) -> &'a AtomicU32 {
        // SAFETY: `record + field` addresses a u32 field of this object's record, which lies
        // inside the header region of a block laid out from the same map; fields are 4-aligned.
        unsafe { self.raw.u32_at(self.record + field) }
    }

    fn slot_u32(&self, slot_no: u32, field: usize) -> &'a AtomicU32 {
        debug_assert!(slot_no < self.max);
        // SAFETY: `slot_no < max`, so the slot lies inside the slots region, and `field` is a
        // 4-aligned offset inside its SLOT_HEADER_SIZE-byte header; slot sizes are multiples
        // of 8.
        unsafe {
            self.raw
                .u32_at(self.slots + slot_no as usize * self.slot_size + field)
        }
    }

    fn live_entry(&self, pos: u32) -> &'a AtomicU32 {
        debug_assert!(pos < self.max);
        // SAFETY: `pos < max` and the live list holds `max` u32 entries.
        unsafe { self.raw.u32_at(self.live + pos as usize * 4) }
    }

    /// Offset of a slot's counter block.
    pub(crate) fn block_offset(&self, slot_no: u32) -> usize {
        self.data + slot_no as usize * self.stride
    }

    /// Number of live instances.
    pub(crate) fn live_count(&self) -> u32 {
        self.rec_u32(layout::LIVE_COUNT_OFFSET).load(Acquire)
    }

    /// The generation of a slot, if it holds a live instance.
    pub(crate) fn live_generation(&self, slot_no: u32) -> Option<u32> {
        if slot_no >= self.max || self.slot_u32(slot_no, slot::STATE).load(Acquire) != SLOT_LIVE {
            return None;
        }
        Some(self.slot_u32(slot_no, slot::GENERATION).load(Relaxed))
    }

    /// The parent link a slot stores, if it has one (the parent may have gone since; see
    /// [`Tables::resolve`](super::tree::Tables::resolve)).
    pub(crate) fn parent(&self, slot_no: u32) -> Option<SlotRef> {
        let object = self
            .slot_u32(slot_no, slot::PARENT_OBJECT)
            .load(Relaxed)
            .checked_sub(1)?;
        Some(SlotRef {
            object,
            slot: self.slot_u32(slot_no, slot::PARENT_SLOT).load(Relaxed),
            generation: self
                .slot_u32(slot_no, slot::PARENT_GENERATION)
                .load(Relaxed),
        })
    }

    /// The count of a slot's live children (see [`layout::SlotHeader::children`]).
    pub(crate) fn children(&self, slot_no: u32) -> &'a AtomicU32 {
        self.slot_u32(slot_no, slot::CHILDREN)
    }

    /// The slot numbers of the live instances, in live-list order (entries that are not slot
    /// numbers of this object, which only a process writing the block outside the protocol could
    /// leave, are skipped).
    pub(crate) fn live_slots(&self) -> Vec<u32> {
        (0..self.live_count().min(self.max))
            .map(|p| self.live_entry(p).load(Relaxed))
            .filter(|&slot| slot < self.max)
            .collect()
    }

    /// The name of a slot's instance.
    pub(crate) fn name(&self, slot_no: u32) -> Vec<u16> {
        let len = self
            .slot_u32(slot_no, slot::NAME_LEN)
            .load(Relaxed)
            .min(self.max_name_len);
        let name_off = self.slots + slot_no as usize * self.slot_size + layout::SLOT_HEADER_SIZE;
        (0..len as usize)
            // SAFETY: `len <= max_name_len`, and the slot reserves `max_name_len` u16s after its
            // header, 2-aligned.
            .map(|i| unsafe { self.raw.u16_at(name_off + 2 * i) }.load(Relaxed))
            .collect()
    }

    /// Sets the `ByteLength` of a counter block (done once per block, when it is handed out).
    pub(crate) fn init_block(&self, slot_no: u32) {
        let off = self.block_offset(slot_no);
        // SAFETY: the counter block of a slot below `max` (or slot 0 of a global object) is
        // inside the data region; its first u32 is the ByteLength, 8-aligned.
        unsafe { self.raw.u32_at(off) }.store(self.stride as u32, Relaxed);
        let mut at = off + 8;
        while at < off + self.stride {
            // SAFETY: `at` is 8-aligned and below the end of this counter block.
            unsafe { self.raw.u64_at(at) }.store(0, Relaxed);
            at += 8;
        }
    }

    /// Adds an instance. Call inside a write section, holding the optex; the parent's count is
    /// the caller's ([`Tables::add`](super::tree::Tables::add)).
    ///
    /// Returns the slot and its new generation, or `None` when the object is full.
    pub(crate) fn add(&self, new: &NewInstance<'_>) -> Option<(u32, u32)> {
        debug_assert!(new.name.len() <= self.max_name_len as usize);
        let slot_no = self.pop_free()?;
        self.slot_u32(slot_no, slot::UNIQUE_ID)
            .store(new.unique_id as u32, Relaxed);
        let (pobj, pslot, pgen) = new
            .parent
            .map_or((0, 0, 0), |p| (p.object + 1, p.slot, p.generation));
        self.slot_u32(slot_no, slot::PARENT_OBJECT)
            .store(pobj, Relaxed);
        self.slot_u32(slot_no, slot::PARENT_SLOT)
            .store(pslot, Relaxed);
        self.slot_u32(slot_no, slot::PARENT_GENERATION)
            .store(pgen, Relaxed);
        self.children(slot_no).store(0, Relaxed);
        let name_off = self.slots + slot_no as usize * self.slot_size + layout::SLOT_HEADER_SIZE;
        for (i, unit) in new.name.iter().enumerate() {
            // SAFETY: the caller checked `name.len() <= max_name_len`; the slot reserves that
            // many u16s after its header.
            unsafe { self.raw.u16_at(name_off + 2 * i) }.store(*unit, Relaxed);
        }
        self.slot_u32(slot_no, slot::NAME_LEN)
            .store(new.name.len() as u32, Relaxed);
        let generation = self
            .slot_u32(slot_no, slot::GENERATION)
            .load(Relaxed)
            .wrapping_add(1);
        self.slot_u32(slot_no, slot::GENERATION)
            .store(generation, Relaxed);
        self.init_block(slot_no);
        // Publication: the slot is complete before it is marked live and listed.
        self.slot_u32(slot_no, slot::STATE)
            .store(SLOT_LIVE, Release);
        let pos = self.live_count();
        self.live_entry(pos).store(slot_no, Relaxed);
        self.slot_u32(slot_no, slot::LIVE_POS).store(pos, Relaxed);
        self.rec_u32(layout::LIVE_COUNT_OFFSET)
            .store(pos + 1, Release);
        Some((slot_no, generation))
    }

    /// Removes the instance in `slot_no` if it is live with `generation`. Call inside a write
    /// section, holding the optex; children and the parent's count are the caller's
    /// ([`Tables::remove`](super::tree::Tables::remove)). Returns whether it was removed.
    pub(crate) fn remove(&self, slot_no: u32, generation: u32) -> bool {
        if self.live_generation(slot_no) != Some(generation) {
            return false;
        }
        self.slot_u32(slot_no, slot::STATE)
            .store(SLOT_FREE, Release);
        let count = self.live_count();
        let pos = self.slot_u32(slot_no, slot::LIVE_POS).load(Relaxed);
        if count > 0 && pos < count {
            let last = self.live_entry(count - 1).load(Relaxed);
            self.live_entry(pos).store(last, Relaxed);
            if last < self.max {
                self.slot_u32(last, slot::LIVE_POS).store(pos, Relaxed);
            }
            self.rec_u32(layout::LIVE_COUNT_OFFSET)
                .store(count - 1, Release);
        }
        self.push_free(slot_no);
        true
    }

    fn pop_free(&self) -> Option<u32> {
        let head = self.rec_u32(layout::FREE_HEAD_OFFSET);
        let first = head.load(Relaxed);
        if first != 0 && first <= self.max {
            let slot_no = first - 1;
            head.store(
                self.slot_u32(slot_no, slot::NEXT_FREE).load(Relaxed),
                Relaxed,
            );
            return Some(slot_no);
        }
        let hw = self.rec_u32(layout::HIGH_WATER_OFFSET);
        let next = hw.load(Relaxed);
        if next < self.max {
            hw.store(next + 1, Relaxed);
            return Some(next);
        }
        None
    }

    fn push_free(&self, slot_no: u32) {
        let head = self.rec_u32(layout::FREE_HEAD_OFFSET);
        self.slot_u32(slot_no, slot::NEXT_FREE)
            .store(head.load(Relaxed), Relaxed);
        head.store(slot_no + 1, Relaxed);
    }

    /// Derives the live list and the free list again from the slots' states, after a writer died
    /// inside a write section. Hold the optex and a write section.
    pub(crate) fn rebuild(&self) {
        let hw = self
            .rec_u32(layout::HIGH_WATER_OFFSET)
            .load(Relaxed)
            .min(self.max);
        self.rec_u32(layout::HIGH_WATER_OFFSET).store(hw, Relaxed);
        self.rec_u32(layout::FREE_HEAD_OFFSET).store(0, Relaxed);
        let mut count = 0;
        for slot_no in (0..hw).rev() {
            if self.slot_u32(slot_no, slot::STATE).load(Relaxed) == SLOT_LIVE {
                self.live_entry(count).store(slot_no, Relaxed);
                self.slot_u32(slot_no, slot::LIVE_POS).store(count, Relaxed);
                count += 1;
            } else {
                self.slot_u32(slot_no, slot::STATE)
                    .store(SLOT_FREE, Relaxed);
                self.push_free(slot_no);
            }
        }
        self.rec_u32(layout::LIVE_COUNT_OFFSET)
            .store(count, Release);
    }
}

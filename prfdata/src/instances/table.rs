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
//! unchanged around the copy ([`crate::reader`]).
//!
//! If the writer dies inside a write section, the sequence stays odd; the next process to take
//! the optex (a writer, or a reader that found the holder dead) sees that its owner died and
//! calls [`Tables::repair`](super::tree::Tables::repair): [`ObjectTable::rebuild`] derives the
//! live and free lists again from the slots' states (the only thing written last / first), then
//! the children counts are derived again.
//!
//! # Untrusted indexes
//!
//! Every index the block holds (the live count, the free list's head and links, the high water
//! mark, the live list's entries, each slot's live position, parent links) is shared memory that
//! any process of the same user can write. The writer checks each one against the object's
//! limit and against the others before it uses it to reach memory or changes anything, and
//! reports a contradiction as a [`Corrupt`] naming the object and the field. Offsets themselves
//! never come from the block: they are computed from the (trusted, validated) map.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::block::raw::RawBlock;
use crate::block::records::TableLayout;
use crate::layout::AGG_SUM;
use crate::layout::{self, slot, SLOT_FREE, SLOT_LIVE};
use crate::map::{offsets, InstanceId, Instances, MapDef, Object, ObjectDef, Source};
use crate::process::ProcessId;

/// A contradiction found in an index read from the block: written by some process outside the
/// protocol (a live writer never leaves one, and a dead one is repaired before anyone reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Corrupt {
    /// The object's symbol.
    pub object: &'static str,
    /// The field, as the layout names it (`live_count`, `free_head`, ...).
    pub field: &'static str,
    /// The value found.
    pub value: u32,
    /// Why it cannot be right.
    pub reason: &'static str,
}

/// One object's instance table inside a writable block whose layout comes from a trusted map.
pub(crate) struct ObjectTable<'a> {
    raw: &'a RawBlock,
    symbol: &'static str,
    record: usize,
    live: usize,
    slots: usize,
    data: usize,
    slot_size: usize,
    stride: usize,
    block_size: usize,
    max: u32,
    max_name_len: u32,
    /// The object's definition, when the table comes from a trusted map: its counters' rules
    /// say what a removal folds into the retired accumulator.
    def: Option<&'static ObjectDef>,
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

impl SlotRef {
    /// The slot an instance id names.
    pub(crate) fn of<O: Object>(id: &InstanceId<O>) -> Self {
        SlotRef {
            object: O::INDEX as u32,
            slot: id.slot(),
            generation: id.generation(),
        }
    }
}

/// What a new instance is made of.
pub(crate) struct NewInstance<'n> {
    pub name: &'n [u16],
    pub unique_id: i32,
    /// Its parent, live when the instance is added.
    pub parent: Option<SlotRef>,
    /// The process that owns it (`InstanceSpec::process_owned`), or `None`.
    pub owner: Option<ProcessId>,
}

impl<'a> ObjectTable<'a> {
    /// The table of object `index` of `map`, in `raw`, which was laid out from `map`.
    pub(crate) fn new(raw: &'a RawBlock, map: &'static MapDef, index: usize) -> ObjectTable<'a> {
        let obj = &map.objects[index];
        let base = offsets::object_base(map, index);
        let regions = offsets::object_regions(obj);
        let (max, max_name_len) = match obj.instances {
            Instances::None => (0, 0),
            Instances::Max { max, max_name_len } => (max, max_name_len),
        };
        debug_assert!(base + regions.size <= raw.len());
        let mut table = ObjectTable::with_layout(
            raw,
            &TableLayout {
                symbol: obj.symbol,
                record: layout::HEADER_SIZE + index * layout::OBJECT_RECORD_SIZE,
                live: base + regions.live,
                slots: base + regions.slots,
                data: base + regions.data,
                slot_size: offsets::slot_size(obj),
                stride: offsets::block_stride(obj),
                block_size: offsets::counter_block_size(obj),
                max,
                max_name_len,
            },
        );
        table.def = Some(obj);
        table
    }

    /// The table at `at` in `raw` (see [`TableLayout`] for what `at` must guarantee).
    #[inline]
    pub(crate) fn with_layout(raw: &'a RawBlock, at: &TableLayout) -> ObjectTable<'a> {
        ObjectTable {
            raw,
            symbol: at.symbol,
            record: at.record,
            live: at.live,
            slots: at.slots,
            data: at.data,
            slot_size: at.slot_size,
            stride: at.stride,
            block_size: at.block_size,
            max: at.max,
            max_name_len: at.max_name_len,
            def: None,
        }
    }

    /// The owner of live slot `slot_no` (below `max`), if a process owns it.
    pub(crate) fn owner(&self, slot_no: u32) -> Option<ProcessId> {
        let pid = self.slot_u32(slot_no, slot::OWNER_PID).load(Relaxed);
        (pid != 0).then(|| ProcessId {
            pid,
            start_time: self.slot_u64(slot_no, slot::OWNER_START).load(Relaxed),
        })
    }

    /// A u64 field of slot `slot_no`'s header, checked as [`ObjectTable::slot_u32`] is.
    fn slot_u64(&self, slot_no: u32, field: usize) -> &'a std::sync::atomic::AtomicU64 {
        assert!(slot_no < self.max, "slot {slot_no} of {}", self.symbol);
        // SAFETY: as in `slot_u32`; `field` is an 8-aligned offset inside the header, and slots
        // start 8-aligned (their size is a multiple of 8, the region 64-aligned).
        unsafe {
            self.raw
                .u64_at(self.slots + slot_no as usize * self.slot_size + field)
        }
    }

    /// Folds the values of live slot `slot_no` into the retired accumulator (counter block
    /// number `max`), by each counter's rule: `sum` counters are added, the others dropped. A
    /// histogram's buckets are added word by word, each with its shard words; its descriptor
    /// words, which the app never writes, are not. Only for tables from a trusted map; call
    /// inside the write section that removes it.
    fn fold_into_retired(&self, slot_no: u32) {
        let Some(def) = self.def else { return };
        let from = self.block_offset(slot_no);
        let to = self.data + self.max as usize * self.stride;
        for i in 0..def.counters.len() {
            if crate::map::rule_code(def, i) != AGG_SUM {
                continue;
            }
            let at = offsets::counter_offset(def, i);
            let shard = offsets::shard_index(def, i);
            match (def.counters[i].source, def.counters[i].value_size()) {
                (Source::Histogram { geometry, .. }, _) => {
                    let first = at + 8 * offsets::descriptor_words(&def.counters[i]);
                    for j in 0..geometry.buckets() {
                        // SAFETY: bucket `j` of the histogram's value (its descriptor words,
                        // then its buckets, 8-aligned, inside each counter block), and its
                        // shard words `k + j` (below the line's words, `offsets::shard_index`).
                        unsafe {
                            self.fold_u64(def, from, to, first + 8 * j, shard.map(|k| k + j))
                        };
                    }
                }
                // SAFETY: both blocks are counter blocks of this object (slot `slot_no` below
                // `max`, and the retired block `max`, which the data region holds), and `at` is
                // the counter's offset inside one, aligned to its size.
                (_, Some(4)) => unsafe {
                    let v = self.raw.u32_at(from + at).load(Relaxed);
                    self.raw.u32_at(to + at).fetch_add(v, Relaxed);
                },
                // SAFETY: as above, for an 8-byte value and its shard word.
                (_, Some(8)) => unsafe { self.fold_u64(def, from, to, at, shard) },
                _ => {}
            }
        }
    }

    /// Adds the u64 at `at` of the counter block at `from`, and its word `shard` of each of
    /// that block's shard lines (a sharded value), to the u64 at `at` of the block at `to`.
    ///
    /// # Safety
    ///
    /// `from` and `to` are counter blocks of this table's object `def` (a trusted map), `at` an
    /// 8-aligned offset of a value inside one, `shard` below the object's shard line words.
    unsafe fn fold_u64(
        &self,
        def: &ObjectDef,
        from: usize,
        to: usize,
        at: usize,
        shard: Option<usize>,
    ) {
        // SAFETY: as the caller guarantees: two counter blocks of this object, `at` an 8-aligned
        // value inside each; a sharded value's words lie in the shard lines of the same stride
        // (`shard_words`).
        unsafe {
            let mut v = self.raw.u64_at(from + at).load(Relaxed);
            if let Some(k) = shard {
                for word in shard_words(def, from, k) {
                    v = v.wrapping_add(self.raw.u64_at(word).load(Relaxed));
                }
            }
            self.raw.u64_at(to + at).fetch_add(v, Relaxed);
        }
    }

    fn rec_u32(&self, field: usize) -> &'a AtomicU32 {
        // SAFETY: `record + field` addresses a u32 field of this object's record, which lies
        // inside the header region of a block laid out from the same map; fields are 4-aligned.
        unsafe { self.raw.u32_at(self.record + field) }
    }

    /// A field of slot `slot_no`'s header. The slot number is checked here, whatever its
    /// origin: an out-of-range one (only a caller bug could pass one; indexes from the block are
    /// checked before they get here) panics instead of reaching outside the slots.
    fn slot_u32(&self, slot_no: u32, field: usize) -> &'a AtomicU32 {
        assert!(slot_no < self.max, "slot {slot_no} of {}", self.symbol);
        // SAFETY: `slot_no < max` (just checked), so the slot lies inside the slots region, and
        // `field` is a 4-aligned offset inside its SLOT_HEADER_SIZE-byte header; slot sizes are
        // multiples of 8.
        unsafe {
            self.raw
                .u32_at(self.slots + slot_no as usize * self.slot_size + field)
        }
    }

    /// Entry `pos` of the live list; checked as [`ObjectTable::slot_u32`] is.
    fn live_entry(&self, pos: u32) -> &'a AtomicU32 {
        assert!(pos < self.max, "live entry {pos} of {}", self.symbol);
        // SAFETY: `pos < max` (just checked) and the live list holds `max` u32 entries.
        unsafe { self.raw.u32_at(self.live + pos as usize * 4) }
    }

    /// A [`Corrupt`] about this object, for the tree code.
    #[cold]
    pub(crate) fn corrupt_field(
        &self,
        field: &'static str,
        value: u32,
        reason: &'static str,
    ) -> Corrupt {
        self.corrupt(field, value, reason)
    }

    /// A [`Corrupt`] about this object.
    #[cold]
    fn corrupt(&self, field: &'static str, value: u32, reason: &'static str) -> Corrupt {
        Corrupt {
            object: self.symbol,
            field,
            value,
            reason,
        }
    }

    /// Whether slot `slot_no` (below `max`) is live.
    fn is_live(&self, slot_no: u32) -> bool {
        self.slot_u32(slot_no, slot::STATE).load(Acquire) == SLOT_LIVE
    }

    /// Offset of a slot's counter block.
    pub(crate) fn block_offset(&self, slot_no: u32) -> usize {
        self.data + slot_no as usize * self.stride
    }

    /// Number of live instances, as the block says: not checked.
    fn raw_live_count(&self) -> u32 {
        self.rec_u32(layout::LIVE_COUNT_OFFSET).load(Acquire)
    }

    /// Number of live instances: at most the object's limit.
    pub(crate) fn live_count(&self) -> Result<u32, Corrupt> {
        let count = self.raw_live_count();
        if count > self.max {
            return Err(self.corrupt(
                "live_count",
                count,
                "more live instances than the object's limit",
            ));
        }
        Ok(count)
    }

    /// The generation of a slot, if it holds a live instance.
    pub(crate) fn live_generation(&self, slot_no: u32) -> Option<u32> {
        if slot_no >= self.max || self.slot_u32(slot_no, slot::STATE).load(Acquire) != SLOT_LIVE {
            return None;
        }
        Some(self.slot_u32(slot_no, slot::GENERATION).load(Relaxed))
    }

    /// The parent link a slot stores, if it has one (the parent may have gone since; see
    /// [`Tables::resolve`](super::tree::Tables::resolve)). Unchecked: compare it or resolve it,
    /// or check it with [`Tables::checked_parent`](super::tree::Tables::checked_parent).
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

    /// The slot numbers of the live instances, in live-list order. Each entry must be a live
    /// slot whose live position is that entry (so no slot is listed twice).
    pub(crate) fn live_slots(&self) -> Result<Vec<u32>, Corrupt> {
        let count = self.live_count()?;
        let mut slots = Vec::with_capacity(count as usize);
        for pos in 0..count {
            slots.push(self.checked_live_entry(pos)?);
        }
        Ok(slots)
    }

    /// Entry `pos` (below the live count) of the live list: a live slot that knows its place.
    fn checked_live_entry(&self, pos: u32) -> Result<u32, Corrupt> {
        let slot_no = self.live_entry(pos).load(Relaxed);
        if slot_no >= self.max {
            return Err(self.corrupt(
                "live list entry",
                slot_no,
                "not a slot number of the object",
            ));
        }
        if !self.is_live(slot_no) {
            return Err(self.corrupt("live list entry", slot_no, "names a free slot"));
        }
        let at = self.slot_u32(slot_no, slot::LIVE_POS).load(Relaxed);
        if at != pos {
            return Err(self.corrupt(
                "live_pos",
                at,
                "does not point back at the slot's live list entry",
            ));
        }
        Ok(slot_no)
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

    /// Sets the `ByteLength` of a counter block and zeroes the rest of its stride (its values
    /// and shard lines; done once per block, when it is handed out).
    pub(crate) fn init_block(&self, slot_no: u32) {
        let off = self.block_offset(slot_no);
        // SAFETY: the counter block of a slot below `max` (or slot 0 of a global object) is
        // inside the data region; its first u32 is the ByteLength, 8-aligned.
        unsafe { self.raw.u32_at(off) }.store(self.block_size as u32, Relaxed);
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
    /// Returns the slot and its new generation, or `None` when the object is full. Every index
    /// it uses is checked before anything is written: on [`Corrupt`] the table is unchanged.
    pub(crate) fn add(&self, new: &NewInstance<'_>) -> Result<Option<(u32, u32)>, Corrupt> {
        assert!(
            new.name.len() <= self.max_name_len as usize,
            "the caller checks name lengths"
        );
        let Some(free) = self.peek_free()? else {
            return Ok(None);
        };
        let pos = self.live_count()?;
        if pos >= self.max {
            return Err(self.corrupt(
                "live_count",
                pos,
                "says the object is full while it has a free slot",
            ));
        }
        let slot_no = self.take_free(free);
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
        let owner = new.owner.unwrap_or(ProcessId {
            pid: 0,
            start_time: 0,
        });
        self.slot_u32(slot_no, slot::OWNER_PID)
            .store(owner.pid, Relaxed);
        self.slot_u64(slot_no, slot::OWNER_START)
            .store(owner.start_time, Relaxed);
        if owner.pid != 0 {
            let owned = self.rec_u32(layout::OWNED_COUNT_OFFSET);
            owned.store(owned.load(Relaxed).saturating_add(1), Relaxed);
        }
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
        self.live_entry(pos).store(slot_no, Relaxed);
        self.slot_u32(slot_no, slot::LIVE_POS).store(pos, Relaxed);
        self.rec_u32(layout::LIVE_COUNT_OFFSET)
            .store(pos + 1, Release);
        Ok(Some((slot_no, generation)))
    }

    /// Removes the instance in `slot_no` if it is live with `generation`. Call inside a write
    /// section, holding the optex; children and the parent's count are the caller's
    /// ([`Tables::remove`](super::tree::Tables::remove)). Returns whether it was removed.
    ///
    /// The live count, the slot's live position and the last live entry are checked before
    /// anything is written: on [`Corrupt`] the table is unchanged.
    pub(crate) fn remove(&self, slot_no: u32, generation: u32) -> Result<bool, Corrupt> {
        if self.live_generation(slot_no) != Some(generation) {
            return Ok(false);
        }
        let count = self.live_count()?;
        let pos = self.slot_u32(slot_no, slot::LIVE_POS).load(Relaxed);
        if pos >= count {
            return Err(self.corrupt(
                "live_pos",
                pos,
                "not below the live count, though the slot is live",
            ));
        }
        if self.checked_live_entry(pos)? != slot_no {
            return Err(self.corrupt(
                "live_pos",
                pos,
                "the live list entry there names another slot",
            ));
        }
        let last = self.checked_live_entry(count - 1)?;
        self.fold_into_retired(slot_no);
        if self.owner(slot_no).is_some() {
            let owned = self.rec_u32(layout::OWNED_COUNT_OFFSET);
            owned.store(owned.load(Relaxed).saturating_sub(1), Relaxed);
        }
        self.slot_u32(slot_no, slot::STATE)
            .store(SLOT_FREE, Release);
        self.live_entry(pos).store(last, Relaxed);
        self.slot_u32(last, slot::LIVE_POS).store(pos, Relaxed);
        self.rec_u32(layout::LIVE_COUNT_OFFSET)
            .store(count - 1, Release);
        self.push_free(slot_no);
        Ok(true)
    }

    /// The slot the next add takes, without taking it: the head of the free list, else the
    /// first never-used slot; `None` when the object is full. Either must be a free slot below
    /// the limit, and the free list's next link must be a slot number + 1 (or 0).
    fn peek_free(&self) -> Result<Option<Free>, Corrupt> {
        let first = self.rec_u32(layout::FREE_HEAD_OFFSET).load(Relaxed);
        if first != 0 {
            if first > self.max {
                return Err(self.corrupt("free_head", first, "not a slot number + 1"));
            }
            let slot_no = first - 1;
            if self.is_live(slot_no) {
                return Err(self.corrupt("free_head", first, "names a live slot"));
            }
            let next = self.slot_u32(slot_no, slot::NEXT_FREE).load(Relaxed);
            if next > self.max {
                return Err(self.corrupt("next_free", next, "not a slot number + 1"));
            }
            return Ok(Some(Free::Listed { slot_no, next }));
        }
        let hw = self.rec_u32(layout::HIGH_WATER_OFFSET).load(Relaxed);
        if hw > self.max {
            return Err(self.corrupt("high_water", hw, "above the object's limit"));
        }
        if hw == self.max {
            return Ok(None);
        }
        if self.is_live(hw) {
            return Err(self.corrupt(
                "high_water",
                hw,
                "the slot at the mark, never used, is live",
            ));
        }
        Ok(Some(Free::Unused(hw)))
    }

    /// Takes the slot [`ObjectTable::peek_free`] found.
    fn take_free(&self, free: Free) -> u32 {
        match free {
            Free::Listed { slot_no, next } => {
                self.rec_u32(layout::FREE_HEAD_OFFSET).store(next, Relaxed);
                slot_no
            }
            Free::Unused(slot_no) => {
                self.rec_u32(layout::HIGH_WATER_OFFSET)
                    .store(slot_no + 1, Relaxed);
                slot_no
            }
        }
    }

    /// Puts `slot_no` (below `max`) at the head of the free list.
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
        let mut owned = 0;
        for slot_no in (0..hw).rev() {
            if self.slot_u32(slot_no, slot::STATE).load(Relaxed) == SLOT_LIVE {
                owned += u32::from(self.owner(slot_no).is_some());
                self.live_entry(count).store(slot_no, Relaxed);
                self.slot_u32(slot_no, slot::LIVE_POS).store(count, Relaxed);
                count += 1;
            } else {
                self.slot_u32(slot_no, slot::STATE)
                    .store(SLOT_FREE, Relaxed);
                self.push_free(slot_no);
            }
        }
        self.rec_u32(layout::OWNED_COUNT_OFFSET)
            .store(owned, Relaxed);
        self.rec_u32(layout::LIVE_COUNT_OFFSET)
            .store(count, Release);
    }

    /// Live instances owned by a process, as the record counts them (a hint: a wrong count
    /// only makes the writer look for dead owners in vain, or not yet).
    pub(crate) fn owned_count(&self) -> u32 {
        self.rec_u32(layout::OWNED_COUNT_OFFSET).load(Relaxed)
    }
}

/// A free slot found by [`ObjectTable::peek_free`].
#[derive(Clone, Copy, Debug)]
enum Free {
    /// The head of the free list, and the link to store as the new head.
    Listed { slot_no: u32, next: u32 },
    /// The first slot never used (the high water mark).
    Unused(u32),
}

/// The offsets of sharded counter `k`'s word in each shard line of the counter block at `block`
/// of object `def` (laid out from a trusted map: see [`crate::layout`]).
pub(crate) fn shard_words(def: &ObjectDef, block: usize, k: usize) -> impl Iterator<Item = usize> {
    let (start, line) = (offsets::shard_start(def), offsets::shard_line(def));
    (0..offsets::shard_slots(def)).map(move |s| block + start + s * line + 8 * k)
}

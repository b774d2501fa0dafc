//! Reading the live block inside one sequence window: [`BlockReader::read_with`], the window
//! loop, and what it hands its closure, [`BlockView`] and its per-object [`InstanceTable`]s,
//! read straight from the mapping, every offset checked.

use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;
use prfdata_wire::utf16;
use zerocopy::IntoBytes;

use super::block_reader::{truncated, watch, BlockReader};
use super::error::{field, ReadError};
use super::recover::{self, Recovery};
use crate::block::fault::Watch;
use crate::block::presence::Probe;
use crate::block::records::{CounterInfo, ObjectInfo};
use crate::layout::{
    slot, BYTE_LENGTH_SIZE, CLOSED_OFFSET, DWORD_SIZE, GENERATION_OFFSET, LARGE_SIZE,
    LIVE_COUNT_OFFSET, LIVE_ENTRY_SIZE, NAME_UNIT_SIZE, OWNED_COUNT_OFFSET, SEQ_OFFSET,
    SLOT_HEADER_SIZE, SLOT_LIVE, SUPERSEDED_OFFSET, WORD,
};

mod total;

/// The read window.
impl BlockReader {
    /// Runs `f` on a [`BlockView`] inside one sequence window, retrying until a window in which
    /// the sequence was even and did not move, for up to `deadline`; returns what `f` returned in
    /// that window (an error too: a consistent block that is invalid stays invalid).
    ///
    /// The deadline counts from the first attempt that had to wait or be repeated: a read whose
    /// first window holds reads no clock (a clock read costs as much as copying a few kilobytes
    /// on some virtual machines), and one that fails takes at most its first attempt plus
    /// `deadline`.
    ///
    /// This is the single-pass interface: `f` reads what it needs straight from the mapping
    /// (every load checked, through atomics) and may write it wherever it likes, e.g. into a
    /// caller's buffer. `f` may run several times: whatever it produced in a window that was
    /// then rejected must be thrown away or overwritten by the next run.
    ///
    /// Each window registers the mapping with the `SIGBUS` handler (see the
    /// [module docs](super)): if the
    /// file is truncated under `f`, `f` reads zeros from then on, and its result is thrown away
    /// for [`ReadError::Truncated`]. If the sequence stays odd for [`BlockReader::DEAD_HOLDER_CHECK`], the
    /// read checks once whether the lock's holder died, and recovers the block if so.
    ///
    /// # Errors
    ///
    /// [`ReadError::Replaced`] if the block's generation changed (the file was rewritten),
    /// [`ReadError::Truncated`] if it was truncated under the read, [`ReadError::OwnerGone`]
    /// if its owner is dead, [`ReadError::Busy`] if no consistent window came in time; and
    /// whatever `f` returns ([`ReadError::Field`] for an invalid live value).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::reader::BlockReader::open("App")?;
    /// // How many instances each object has, all counted in the same consistent state.
    /// let counts = reader.read_with(std::time::Duration::from_millis(5), |view| {
    ///     (0..reader.objects().len()).map(|k| view.live_count(k)).collect::<Result<Vec<_>, _>>()
    /// })?;
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn read_with<T>(
        &self,
        deadline: Duration,
        mut f: impl FnMut(&BlockView<'_>) -> Result<T, ReadError>,
    ) -> Result<T, ReadError> {
        // When the read first had to wait (a window not opened at once, or one to repeat): the
        // deadline counts from there, so a read that succeeds at once reads no clock.
        let mut waited_from: Option<Instant> = None;
        let check_after = BlockReader::DEAD_HOLDER_CHECK.min(deadline / 2);
        let mut attempt = 0u32;
        let pause = Backoff::new();
        // Since when the sequence has been odd at every look, and whether this read has
        // checked the lock's holder yet.
        let mut odd_since: Option<Instant> = None;
        let mut checked_holder = false;
        loop {
            if self.spent.load(Ordering::Relaxed) {
                return Err(truncated(&self.file, self.identity.size));
            }
            let window = watch(&self.raw, false, || {
                let from = *waited_from.get_or_insert_with(Instant::now);
                from.checked_add(deadline).unwrap_or(from)
            })?;
            if self.generation() != Some(self.records.header.generation) {
                return Err(self.end_window(window, ReadError::Replaced));
            }
            if self.ended() {
                return Err(self.end_window(window, ReadError::Replaced));
            }
            if attempt == 0 && !self.owner_alive_lately() {
                return Err(ReadError::OwnerGone);
            }
            let seq = self.seq_load();
            if seq & 1 == 0 {
                odd_since = None;
                fence(Ordering::Acquire);
                let result = f(&BlockView {
                    reader: self,
                    seq,
                    shown: Default::default(),
                    hidden: Default::default(),
                });
                fence(Ordering::Acquire);
                let kept = self.seq_relaxed() == seq;
                // A truncation, even one regrown since, zeroes the generation with the rest:
                // checked after the copy, it vouches for everything the copy read before.
                if window.faulted() || self.generation() != Some(self.records.header.generation) {
                    return Err(self.end_window(window, ReadError::Replaced));
                }
                if kept {
                    return result;
                }
            } else {
                let now = Instant::now();
                let since = *odd_since.get_or_insert(now);
                if !checked_holder && now.saturating_duration_since(since) >= check_after {
                    checked_holder = true;
                    drop(window);
                    if self.recover_dead_holder() {
                        continue; // recovered: read again at once
                    }
                }
            }
            attempt += 1;
            if waited_from.get_or_insert_with(Instant::now).elapsed() >= deadline {
                return Err(ReadError::Busy(deadline));
            }
            backoff(&pause);
        }
    }

    /// Ends a window that read something it must not keep: if the mapping faulted, the reader is
    /// spent and the error is [`ReadError::Truncated`], else `error`.
    #[cold]
    fn end_window(&self, window: Watch<'_>, error: ReadError) -> ReadError {
        if window.faulted() {
            self.spent.store(true, Ordering::Relaxed);
            return truncated(&self.file, self.identity.size);
        }
        error
    }

    /// Recovers the block if the lock's holder died inside a write section
    /// ([`super::recover`]); `true` if it did.
    #[cold]
    fn recover_dead_holder(&self) -> bool {
        let layouts: Vec<_> = self
            .records
            .objects
            .iter()
            .map(ObjectInfo::table_layout)
            .collect();
        matches!(
            recover::dead_holder(&self.app, &self.path, self.identity, &layouts),
            Ok(Recovery::Recovered)
        )
    }

    /// Whether the block says it ended: its last member out closed it (or the activation that
    /// replaced it, every process of it gone), or, a run-time block, a newer layout was
    /// published over its path. Either way the path may hold another block: open it again.
    /// Two loads from the mapping, no system call while the block runs: a reader that keeps a
    /// block open across reads asks this before trusting it (a read of an ended block ends
    /// with [`ReadError::Replaced`] all the same). A block truncated under the question has
    /// ended. Any process of the user can write the `closed` word, so while it is set the
    /// block counts as ended only if its path holds another file or none, or no process of
    /// the app holds it ([`BlockReader::is_replaced`], [`BlockReader::owner_alive`]): a stray
    /// write does not end the reads of a live block.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut reader = prfdata::reader::BlockReader::open("App")?;
    /// if reader.has_ended() {
    ///     reader = prfdata::reader::BlockReader::open("App")?;
    /// }
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn has_ended(&self) -> bool {
        if self.spent.load(Ordering::Relaxed) {
            return true;
        }
        let Ok(window) = watch(&self.raw, false, || {
            Instant::now() + BlockReader::DEAD_HOLDER_CHECK
        }) else {
            return false;
        };
        let ended = self.ended();
        if window.faulted() {
            self.spent.store(true, Ordering::Relaxed);
            return true;
        }
        ended
    }

    /// [`BlockReader::has_ended`] inside a read window.
    #[inline]
    fn ended(&self) -> bool {
        self.raw.load_u32(SUPERSEDED_OFFSET).is_some_and(|s| s != 0)
            || (self.raw.load_u32(CLOSED_OFFSET).is_some_and(|c| c != 0) && self.closed_for_real())
    }

    /// Whether a set `closed` word means it: the last member out sets it and then removes the
    /// path; an activation that finds every process of a stale block gone sets it and removes
    /// the path. A block still at its path with a process holding it is live, whatever the word
    /// says (the next process that joins it clears the word).
    #[cold]
    fn closed_for_real(&self) -> bool {
        self.is_replaced() || !self.owner_alive()
    }

    /// The block's generation as mapped now (zero once the mapping faulted).
    #[inline]
    fn generation(&self) -> Option<u64> {
        self.raw.load_u64(GENERATION_OFFSET)
    }

    #[inline]
    fn seq_load(&self) -> u64 {
        // SAFETY: SEQ_OFFSET + 8 <= HEADER_SIZE <= mapping length (checked at open), 8-aligned.
        unsafe { self.raw.u64_at(SEQ_OFFSET) }.load(Ordering::Acquire)
    }

    #[inline]
    fn seq_relaxed(&self) -> u64 {
        // SAFETY: as in `seq_load`.
        unsafe { self.raw.u64_at(SEQ_OFFSET) }.load(Ordering::Relaxed)
    }
}

/// A child's link to its parent, as its slot stores it: the parent's object index, slot and
/// generation. It was checked to name an object with instances and a slot below its limit;
/// whether that slot is live with that generation now is for [`BlockView::parent_position`] (or
/// the other instances of the window) to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParentLink {
    /// The parent's object index (into [`BlockReader::objects`]).
    pub object: u32,
    /// The parent's slot.
    pub slot: u32,
    /// The parent's generation when the child was added: a slot reused by another instance has
    /// another one.
    pub generation: u32,
}

/// An instance as a [`BlockView`] reads it from its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveInstance {
    /// Its slot.
    pub slot: u32,
    /// The slot's generation (a new one each time the slot is given to an instance).
    pub generation: u32,
    /// Its unique id, if it was given one (the slot and perflib's `UniqueID` say
    /// `PERF_NO_UNIQUE_ID`, -1, for none).
    pub unique_id: Option<i32>,
    /// Its parent, if it has one (checked to name an instanced object and a slot below its
    /// limit; [`BlockView::parent_position`] says whether it is live).
    pub parent: Option<ParentLink>,
    /// Name length in UTF-16 units, NUL not counted (checked against the object's limit).
    pub name_len: u32,
}

/// The live block during one sequence window of [`BlockReader::read_with`].
///
/// Every method loads from the mapping through relaxed atomics, checks each offset against the
/// mapping and each value against the validated records, and returns [`ReadError::Field`] naming
/// the offset of a value that cannot be right. Values read in one window are consistent with
/// each other only if the window is kept (the sequence did not move); `read_with` decides that.
/// Object indexes are indexes into [`BlockReader::objects`].
#[derive(Debug)]
pub struct BlockView<'a> {
    pub(super) reader: &'a BlockReader,
    pub(super) seq: u64,
    /// Per object with process-owned instances, once asked: each live-list position's shown
    /// position ([`InstanceTable`] numbering), `u32::MAX` for an instance hidden because its
    /// owner died. For [`BlockView::parent_position`].
    pub(super) shown: std::cell::RefCell<std::collections::HashMap<u32, Vec<u32>>>,
    /// Per object with process-owned instances, once asked: which listed instances are hidden
    /// (their owner died), so that every [`BlockView::instances`] of one window agrees (a
    /// provider sizes, then writes, from two tables of the same window).
    pub(super) hidden: std::cell::RefCell<std::collections::HashMap<u32, Hidden>>,
}

/// The listed instances of one object hidden in a window because their owner died.
#[derive(Clone, Debug, Default)]
pub(super) struct Hidden {
    /// The live-list positions shown, when some listed instances are hidden; `None`: all.
    visible: Option<Vec<u32>>,
    /// The slots of listed instances whose owner died.
    dead: Vec<u32>,
}

impl<'a> BlockView<'a> {
    /// The reader this view reads through.
    #[inline]
    pub fn reader(&self) -> &'a BlockReader {
        self.reader
    }

    /// The (even) sequence value of this window: two kept windows with the same value saw the
    /// same instance tables.
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Live instances of object `obj` (0 for an object without instances).
    ///
    /// # Panics
    ///
    /// If `obj` is not an object index of the reader.
    #[inline]
    pub fn live_count(&self, obj: usize) -> Result<u32, ReadError> {
        let o = &self.reader.records.objects[obj];
        if !o.instanced {
            return Ok(0);
        }
        let at = o.record_offset + LIVE_COUNT_OFFSET as u64;
        let count = self.reader.u32(at, "live count")?;
        if count > o.max_instances {
            return Err(field(at, "live count", count));
        }
        Ok(count)
    }

    /// The live instances of object `obj`, which must have instances.
    ///
    /// The object's three regions (live list, slots, counter blocks) are checked against the
    /// mapping here, once, so that each instance then costs only a check of its slot number
    /// against the object's limit.
    ///
    /// # Panics
    ///
    /// If `obj` is not an object index of the reader.
    #[inline]
    pub fn instances(&self, obj: usize) -> Result<InstanceTable<'a>, ReadError> {
        let o = &self.reader.records.objects[obj];
        let count = self.live_count(obj)?;
        let len = self.reader.raw.len() as u64;
        let max = u64::from(o.max_instances);
        let fits = |start: u64, bytes: u64| start.checked_add(bytes).is_some_and(|e| e <= len);
        let (entry, unit, word) = (LIVE_ENTRY_SIZE as u64, NAME_UNIT_SIZE as u64, WORD as u64);
        let name_room = (unit * u64::from(o.max_name_len)).next_multiple_of(word);
        if !o.instanced
            || !o.live_offset.is_multiple_of(entry)
            || !fits(o.live_offset, entry * max)
            || !o.slots_offset.is_multiple_of(word)
            || !o.slot_size.is_multiple_of(word)
            || o.slot_size < SLOT_HEADER_SIZE as u64 + name_room
            || !fits(o.slots_offset, max * o.slot_size)
            || !o.data_offset.is_multiple_of(word)
            || !o.block_stride.is_multiple_of(word)
            || o.block_stride < u64::from(o.counter_block_size)
            // The blocks and the retired accumulator after them.
            || !fits(o.data_offset, (max + 1) * o.block_stride)
        {
            return Err(field(o.record_offset, "object regions", o.record_offset));
        }
        let mut table = InstanceTable {
            reader: self.reader,
            info: o,
            count,
            visible: None,
            dead: Vec::new(),
            shown: count,
        };
        // The writer's count of owned instances: with none, nothing is hidden (one load, and
        // nothing to remember: no map filled and freed at every read).
        let owned = self
            .reader
            .u32(o.record_offset + OWNED_COUNT_OFFSET as u64, "owned count")?;
        let hidden = if owned == 0 {
            Hidden::default()
        } else {
            let memo = self.hidden.borrow().get(&(obj as u32)).cloned();
            match memo {
                Some(h) => h,
                None => {
                    let h = table.dead_owners(self.seq)?;
                    self.hidden.borrow_mut().insert(obj as u32, h.clone());
                    h
                }
            }
        };
        if let Some(v) = &hidden.visible {
            table.shown = v.len() as u32;
        }
        table.visible = hidden.visible;
        table.dead = hidden.dead;
        Ok(table)
    }

    /// The position of a parent instance (as in [`LiveInstance::parent`]) in its object's
    /// [`InstanceTable`], or `None` if that slot is not live now, holds another generation (the
    /// parent went and another instance took its slot), or is hidden because its owner process
    /// died.
    pub fn parent_position(&self, link: ParentLink) -> Option<u32> {
        let o = self.reader.records.objects.get(link.object as usize)?;
        if !o.instanced || link.slot >= o.max_instances {
            return None;
        }
        let count = self.live_count(link.object as usize).ok()?;
        let slot_at = o.slots_offset + u64::from(link.slot) * o.slot_size;
        let state = self.reader.u32(slot_at + slot::STATE as u64, "").ok()?;
        let generation = self
            .reader
            .u32(slot_at + slot::GENERATION as u64, "")
            .ok()?;
        let pos = self.reader.u32(slot_at + slot::LIVE_POS as u64, "").ok()?;
        if state != SLOT_LIVE || generation != link.generation || pos >= count {
            return None;
        }
        // The slot says where it is listed; the list must agree. (pos < count <= max: the
        // entry is inside the live list.)
        let listed = self
            .reader
            .u32(o.live_offset + u64::from(pos) * LIVE_ENTRY_SIZE as u64, "")
            .ok()?;
        if listed != link.slot {
            return None;
        }
        // Instances hidden because their owner died shift the positions after them.
        let owned = self
            .reader
            .u32(o.record_offset + OWNED_COUNT_OFFSET as u64, "")
            .ok()?;
        if owned == 0 {
            return Some(pos);
        }
        let mut shown = self.shown.borrow_mut();
        if let std::collections::hash_map::Entry::Vacant(entry) = shown.entry(link.object) {
            let table = self.instances(link.object as usize).ok()?;
            let mut map = vec![u32::MAX; count as usize];
            for p in 0..table.shown {
                let listed = table.visible.as_ref().map_or(p, |v| v[p as usize]);
                if let Some(m) = map.get_mut(listed as usize) {
                    *m = p;
                }
            }
            entry.insert(map);
        }
        shown
            .get(&link.object)
            .and_then(|m| m.get(pos as usize))
            .copied()
            .filter(|&p| p != u32::MAX)
    }

    /// The value of counter `counter` (its position among object `obj`'s counters) of object
    /// `obj`, which has no instances: a DWORD sign-extended from 32 bits, a LARGE as it is.
    ///
    /// # Errors
    ///
    /// [`ReadError::Field`] if the object has instances, `counter` is not one of its counters,
    /// or the counter is not a number (text).
    ///
    /// # Panics
    ///
    /// If `obj` is not an object index of the reader.
    pub fn global_value(&self, obj: usize, counter: usize) -> Result<i64, ReadError> {
        let o = &self.reader.records.objects[obj];
        if o.instanced {
            return Err(field(
                o.record_offset,
                "global value of an instanced object",
                1u32,
            ));
        }
        self.reader.value_at(o, o.data_offset, counter)
    }

    /// Writes the counter block of object `obj`, which has no instances, into `out`, as
    /// [`InstanceTable::copy_counter_block`] does for an instance (its text and sums as
    /// stored: see [`ObjectInfo::fixups`]).
    ///
    /// # Panics
    ///
    /// If `obj` is not an object index of the reader, or `out` is not exactly
    /// [`ObjectInfo::counter_block_size`] long.
    #[inline]
    pub fn copy_global_block(&self, obj: usize, out: &mut [u8]) -> Result<(), ReadError> {
        let o = &self.reader.records.objects[obj];
        assert_eq!(
            out.len(),
            o.counter_block_size as usize,
            "one counter block"
        );
        if o.instanced {
            return Err(field(
                o.record_offset,
                "global block of an instanced object",
                1u32,
            ));
        }
        let copied = usize::try_from(o.data_offset)
            .ok()
            .and_then(|a| self.reader.raw.copy_words_to(a, out));
        if copied.is_none() {
            return Err(field(o.data_offset, "counter block", o.counter_block_size));
        }
        self.reader.add_shards(o, o.data_offset, out)?;
        set_byte_length(o, out);
        Ok(())
    }
}

/// The live instances of one object in a [`BlockView`]'s window, from
/// [`BlockView::instances`]: its regions checked against the mapping once, each instance
/// checked against the object's limits.
///
/// The positions it numbers are those of the instances shown: the live list without the
/// instances whose owner process died ([`InstanceSpec::process_owned`](crate::InstanceSpec::process_owned);
/// they are reclaimed by the app's next writer, and until then their values count in the
/// object's retired share), then, for an object that asks for one, the synthesised `_Total`
/// instance, last (see [`crate::map::Aggregate`] for how each counter is totalled).
#[derive(Debug)]
pub struct InstanceTable<'a> {
    reader: &'a BlockReader,
    info: &'a ObjectInfo,
    /// The live count read when the table was made.
    count: u32,
    /// The live-list positions shown, when some listed instances are hidden; `None`: all.
    visible: Option<Vec<u32>>,
    /// The slots of listed instances whose owner died.
    dead: Vec<u32>,
    /// Instances shown, `_Total` not counted.
    shown: u32,
}

/// `_Total`, the name readers give the synthesised total instance, in UTF-16 units.
const TOTAL_UNITS: [u16; 6] = [
    b'_' as u16,
    b'T' as u16,
    b'o' as u16,
    b't' as u16,
    b'a' as u16,
    b'l' as u16,
];

impl InstanceTable<'_> {
    /// Instances shown: the live ones whose owner (if any) is running, and `_Total` if the
    /// object asks for it.
    #[inline]
    pub fn len(&self) -> u32 {
        self.shown + u32::from(self.info.total)
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether position `pos` is the synthesised `_Total` instance.
    #[inline]
    pub fn is_total(&self, pos: u32) -> bool {
        self.info.total && pos == self.shown
    }

    /// Whether `inst` is the synthesised `_Total` instance.
    #[inline]
    fn is_total_inst(&self, inst: &LiveInstance) -> bool {
        self.info.total && inst.slot == self.info.max_instances
    }

    /// The listed instances whose owner died (one pass over the live list; each owner costs
    /// one probe of its presence lock, or none while a finding stands, see `super::owners`),
    /// for [`BlockView::instances`].
    /// `seq` is the window's sequence value (the owner cache's read window).
    /// Only asked when the writer's count of owned instances is not 0 (with none, nothing is
    /// asked: a count written outside prfdata can only show a dead owner's instance, as before
    /// reclamation).
    fn dead_owners(&self, seq: u64) -> Result<Hidden, ReadError> {
        let mut hidden = Hidden::default();
        // Each owner asked once per window, however many instances it owns.
        let mut asked = std::collections::HashMap::new();
        for pos in 0..self.count {
            let (slot_no, slot_at) = self.listed(pos)?;
            // SAFETY: `slot_at` from `listed`; OWNER_PID is a 4-aligned header field.
            let pid = unsafe { self.slot_u32(slot_at, slot::OWNER_PID) };
            let alive = pid == 0 || {
                let at = slot_at + slot::OWNER_START;
                let start_time = self
                    .reader
                    .raw
                    .load_u64(at)
                    .ok_or_else(|| field(at as u64, "owner start time", pid))?;
                let owner = crate::process::ProcessId { pid, start_time };
                *asked.entry(owner).or_insert_with(|| {
                    let probe = Probe(&self.reader.file);
                    let trusted = self.reader.liveness_interval;
                    self.reader.owners.is_alive(probe, owner, seq, trusted)
                })
            };
            if alive {
                if let Some(v) = hidden.visible.as_mut() {
                    v.push(pos);
                }
            } else {
                hidden.dead.push(slot_no);
                hidden.visible.get_or_insert_with(|| (0..pos).collect());
            }
        }
        Ok(hidden)
    }

    /// The slot number at shown position `pos` (not `_Total`) and the slot's offset.
    #[inline]
    fn slot_of(&self, pos: u32) -> Result<(u32, usize), ReadError> {
        if pos >= self.shown {
            let at = self.info.live_offset + u64::from(pos) * LIVE_ENTRY_SIZE as u64;
            return Err(field(at, "instance position", pos));
        }
        let listed = match &self.visible {
            Some(v) => v[pos as usize],
            None => pos,
        };
        self.listed(listed)
    }

    /// The slot number at live-list position `pos` and the slot's offset.
    #[inline]
    fn listed(&self, pos: u32) -> Result<(u32, usize), ReadError> {
        let o = self.info;
        // In u64, `pos` any u32: no overflow (the offset is below 2^31, 4 * pos below 2^34).
        let at = o.live_offset + u64::from(pos) * LIVE_ENTRY_SIZE as u64;
        if pos >= self.count {
            return Err(field(at, "live list position", pos));
        }
        // SAFETY: `pos < count <= max_instances`, and `BlockView::instances` checked that the
        // live list (`4 * max_instances` bytes at the 4-aligned `live_offset`) is inside the
        // mapping; so the `u32` at `at` is in bounds and 4-aligned.
        let slot_no = unsafe { self.reader.raw.u32_at(at as usize) }.load(Ordering::Relaxed);
        if slot_no >= o.max_instances {
            return Err(field(at, "live list entry", slot_no));
        }
        Ok((
            slot_no,
            (o.slots_offset + u64::from(slot_no) * o.slot_size) as usize,
        ))
    }

    /// The relaxed load of the slot header field at `field` of the slot at `slot_at`.
    ///
    /// # Safety
    ///
    /// `slot_at` comes from [`InstanceTable::slot_of`] and `field < SLOT_HEADER_SIZE` is a
    /// multiple of 4.
    #[inline]
    unsafe fn slot_u32(&self, slot_at: usize, field: usize) -> u32 {
        // SAFETY: `slot_of` checked `slot_no < max_instances`, and `BlockView::instances` that
        // the `max_instances` slots of `slot_size >= SLOT_HEADER_SIZE` bytes (a multiple of 8)
        // at the 8-aligned `slots_offset` are inside the mapping: the 4-aligned `u32` at
        // `slot_at + field` is in bounds.
        unsafe { self.reader.raw.u32_at(slot_at + field) }.load(Ordering::Relaxed)
    }

    /// The name length of the instance at live-list position `pos`: all that sizing an
    /// instance needs.
    #[inline]
    pub fn name_len(&self, pos: u32) -> Result<u32, ReadError> {
        if self.is_total(pos) {
            return Ok(TOTAL_UNITS.len() as u32);
        }
        let (_, slot_at) = self.slot_of(pos)?;
        // SAFETY: `slot_at` from `slot_of`; NAME_LEN is a 4-aligned header field.
        let len = unsafe { self.slot_u32(slot_at, slot::NAME_LEN) };
        if len > self.info.max_name_len {
            return Err(field((slot_at + slot::NAME_LEN) as u64, "name length", len));
        }
        Ok(len)
    }

    /// The parent link of the instance at live-list position `pos`: all that closing a
    /// selection of objects over their parents needs.
    #[inline]
    pub fn parent(&self, pos: u32) -> Result<Option<ParentLink>, ReadError> {
        if self.is_total(pos) {
            return Ok(None);
        }
        let (_, slot_at) = self.slot_of(pos)?;
        // SAFETY: `slot_at` from `slot_of`; each offset is a 4-aligned header field.
        let (pobj, pslot, pgen) = unsafe {
            (
                self.slot_u32(slot_at, slot::PARENT_OBJECT),
                self.slot_u32(slot_at, slot::PARENT_SLOT),
                self.slot_u32(slot_at, slot::PARENT_GENERATION),
            )
        };
        Ok(self.reader.parent(pobj, pslot, pgen))
    }

    /// The count of live children the writer keeps for the instance at live-list position
    /// `pos`, checked to be no more than the block holds instances.
    #[inline]
    pub fn children(&self, pos: u32) -> Result<u32, ReadError> {
        if self.is_total(pos) {
            return Ok(0);
        }
        let (_, slot_at) = self.slot_of(pos)?;
        // SAFETY: `slot_at` from `slot_of`; CHILDREN is a 4-aligned header field.
        let children = unsafe { self.slot_u32(slot_at, slot::CHILDREN) };
        self.reader
            .check_children((slot_at + slot::CHILDREN) as u64, children)
    }

    /// The instance at live-list position `pos`.
    #[inline]
    pub fn get(&self, pos: u32) -> Result<LiveInstance, ReadError> {
        if self.is_total(pos) {
            // The retired accumulator's block number: no slot has it.
            return Ok(LiveInstance {
                slot: self.info.max_instances,
                generation: 0,
                unique_id: None,
                parent: None,
                name_len: TOTAL_UNITS.len() as u32,
            });
        }
        let (slot_no, slot_at) = self.slot_of(pos)?;
        // SAFETY: `slot_at` from `slot_of`; each offset is a 4-aligned header field.
        let (state, unique_id, pobj, pslot, pgen, name_len, generation) = unsafe {
            (
                self.slot_u32(slot_at, slot::STATE),
                self.slot_u32(slot_at, slot::UNIQUE_ID),
                self.slot_u32(slot_at, slot::PARENT_OBJECT),
                self.slot_u32(slot_at, slot::PARENT_SLOT),
                self.slot_u32(slot_at, slot::PARENT_GENERATION),
                self.slot_u32(slot_at, slot::NAME_LEN),
                self.slot_u32(slot_at, slot::GENERATION),
            )
        };
        if state != SLOT_LIVE {
            // A slot in the live list that is not live: a writer is mid-change (the sequence
            // check will reject this window) or the block is corrupt.
            return Err(field(slot_at as u64, "state of a listed slot", state));
        }
        if name_len > self.info.max_name_len {
            return Err(field(
                (slot_at + slot::NAME_LEN) as u64,
                "name length",
                name_len,
            ));
        }
        Ok(LiveInstance {
            slot: slot_no,
            generation,
            unique_id: Some(unique_id as i32).filter(|id| *id >= 0),
            parent: self.reader.parent(pobj, pslot, pgen),
            name_len,
        })
    }

    /// Writes the UTF-16 name of `inst` into `out` as bytes in memory order, then its NUL and
    /// zeros to the end of `out`. `out` is the name field of a `PERF_INSTANCE_DEFINITION`: the
    /// name and its NUL rounded up to 8 bytes, `(2 * name_len + 2).next_multiple_of(8)`. A lone
    /// surrogate in the name is written as U+FFFD (see the [reader's docs](super)).
    ///
    /// # Panics
    ///
    /// If `out` does not have that length.
    #[inline]
    pub fn copy_name(&self, inst: &LiveInstance, out: &mut [u8]) -> Result<(), ReadError> {
        let o = self.info;
        let bytes = inst.name_len as usize * NAME_UNIT_SIZE;
        // The name, its NUL, padded to a word.
        assert_eq!(
            out.len(),
            (bytes + NAME_UNIT_SIZE).next_multiple_of(WORD),
            "a name field"
        );
        if self.is_total_inst(inst) {
            out.fill(0);
            for (i, unit) in TOTAL_UNITS.iter().take(inst.name_len as usize).enumerate() {
                out[2 * i..2 * i + 2].copy_from_slice(&unit.to_ne_bytes());
            }
            return Ok(());
        }
        if inst.slot >= o.max_instances || inst.name_len > o.max_name_len {
            return Err(field(o.record_offset, "instance of the object", inst.slot));
        }
        let at = (o.slots_offset + u64::from(inst.slot) * o.slot_size) as usize + SLOT_HEADER_SIZE;
        // Whole words, the last one masked to the name's bytes: no `memset` for a few bytes.
        let (name, rest) = out.split_at_mut(bytes.next_multiple_of(WORD));
        let mut surrogates = false;
        for (i, chunk) in name.chunks_exact_mut(WORD).enumerate() {
            // SAFETY: `inst.slot < max_instances` and `name_len <= max_name_len` (checked
            // above); `BlockView::instances` checked that every slot lies inside the mapping,
            // is 8-aligned, and holds SLOT_HEADER_SIZE bytes then the longest name rounded up
            // to 8: the word at `at + WORD * i < at + bytes.next_multiple_of(WORD)` is in bounds and
            // 8-aligned.
            let word = unsafe { self.reader.raw.u64_at(at + WORD * i) }.load(Ordering::Relaxed);
            let keep = bytes - WORD * i; // name bytes in this word and after
            let word = if keep >= WORD {
                word
            } else {
                word & first_bytes(keep)
            };
            surrogates |= utf16::has_surrogate(word);
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        if surrogates {
            utf16::make_well_formed(&mut name[..bytes]);
        }
        // The NUL when the name fills its last word: one more zero word.
        if let Some(word) = rest.first_chunk_mut::<WORD>() {
            *word = [0; WORD];
        }
        Ok(())
    }

    /// The value of counter `counter` (its position among the object's counters) of `inst`: a
    /// DWORD sign-extended from 32 bits, a LARGE as it is.
    ///
    /// # Errors
    ///
    /// [`ReadError::Field`] if `inst` is not an instance of this table's object, `counter` is
    /// not one of its counters, or the counter is not a number (text).
    ///
    /// # Examples
    ///
    /// See the [module docs](super).
    pub fn value(&self, inst: &LiveInstance, counter: usize) -> Result<i64, ReadError> {
        let o = self.info;
        if self.is_total_inst(inst) {
            let mut block = vec![0u8; o.counter_block_size as usize];
            self.total_block(&mut block)?;
            o.fixups.apply(&mut block);
            let info = o
                .counters
                .clone()
                .nth(counter)
                .and_then(|i| self.reader.records.counters.get(i))
                .ok_or_else(|| field(o.record_offset, "counter of the object", counter as u64))?;
            let at = info.block_offset as usize;
            return match info.size {
                DWORD_SIZE => Ok(i64::from(i32::from_ne_bytes(word_at(&block, at)))),
                LARGE_SIZE => Ok(i64::from_ne_bytes(word_at(&block, at))),
                size => Err(field(
                    u64::from(info.block_offset),
                    "counter that is not a number",
                    size,
                )),
            };
        }
        if inst.slot >= o.max_instances {
            return Err(field(o.record_offset, "instance of the object", inst.slot));
        }
        // slot < max_instances <= 2^20 and the stride < 2^21: no overflow in u64.
        let block = o.data_offset + u64::from(inst.slot) * o.block_stride;
        self.reader.value_at(o, block, counter)
    }

    /// Writes the counter block of `inst` into `out`, which must be exactly
    /// [`ObjectInfo::counter_block_size`] long: each 8-byte word whole, sharded counters with
    /// their shard lines added, the ByteLength word set to that size (the writer's own value is
    /// not trusted); its text and sums as stored, for [`ObjectInfo::fixups`] to make them wire
    /// format.
    ///
    /// # Panics
    ///
    /// If `out` has the wrong length.
    #[inline(always)]
    pub fn copy_counter_block(&self, inst: &LiveInstance, out: &mut [u8]) -> Result<(), ReadError> {
        let o = self.info;
        assert_eq!(
            out.len(),
            o.counter_block_size as usize,
            "one counter block"
        );
        // The common case inline, with no call per instance: a slot below the limit (so not
        // `_Total`, whose block number is the limit) of an object with no sharded counter.
        if inst.slot < o.max_instances && o.plain {
            let at = o.data_offset as usize + inst.slot as usize * o.block_stride as usize;
            // SAFETY: as in `copy_counter_block_checked`: `inst.slot < max_instances` (just
            // tested), and `BlockView::instances` checked that the `max_instances` blocks
            // `block_stride` bytes apart (a multiple of 8, at least `counter_block_size`, itself
            // a multiple of 8, checked at open) at the 8-aligned `data_offset` are inside the
            // mapping: the `out.len() == counter_block_size` bytes at `at` are in bounds and
            // 8-aligned, a multiple of 8 long.
            unsafe { self.reader.raw.load_words_to(at, out) };
            // The ByteLength word: the validated size.
            out[..BYTE_LENGTH_SIZE].copy_from_slice(&o.counter_block_size.to_le_bytes());
            return Ok(());
        }
        self.copy_counter_block_checked(inst, out)
    }

    /// Writes, for each `(slot, prefix_len)` of `entries` in turn, the next `prefix_len` bytes
    /// of `prefixes` and then the counter block of the instance in `slot` (as
    /// [`InstanceTable::copy_counter_block`] writes it), one after another from the start of
    /// `out`; returns the bytes written.
    ///
    /// This is the perflib layout of an object's instances (each PERF_INSTANCE_DEFINITION with
    /// its name, then its PERF_COUNTER_BLOCK) when the definitions were serialised before, as a
    /// provider does while the instances stay the same: one call for all of them, the sizes
    /// checked once.
    ///
    /// # Errors
    ///
    /// [`ReadError::Inconsistent`] if `out` is too short, or `prefixes` shorter than the prefix
    /// lengths add up to (nothing is written then); [`ReadError::Field`] if a slot is not one
    /// of this object's (what came before it is written).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::reader::BlockReader::open("App")?;
    /// let block = reader.objects()[0].counter_block_size as usize;
    /// let written = reader.read_with(std::time::Duration::from_millis(5), |view| {
    ///     let table = view.instances(0)?;
    ///     // Slots 0 and 3, each after a 16-byte header of the caller's.
    ///     let headers = [0u8; 32];
    ///     let mut out = vec![0u8; 32 + 2 * block];
    ///     table.copy_blocks_after(&[(0, 16), (3, 16)], &headers, &mut out)
    /// })?;
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn copy_blocks_after(
        &self,
        entries: &[(u32, u32)],
        prefixes: &[u8],
        out: &mut [u8],
    ) -> Result<usize, ReadError> {
        let o = self.info;
        let block = o.counter_block_size as usize;
        // One pass over the entries, with no early exit (LLVM vectorises it): the prefixes'
        // total. Slots are checked as they are copied.
        let prefix_total: u64 = entries.iter().map(|&(_, p)| u64::from(p)).sum();
        let total = entries
            .len()
            .checked_mul(block)
            .zip(usize::try_from(prefix_total).ok())
            .and_then(|(b, p)| b.checked_add(p));
        if prefix_total > prefixes.len() as u64 || total.is_none_or(|t| t > out.len()) {
            return Err(ReadError::Inconsistent);
        }
        // A plain object's instances up to the first entry whose slot is not below the limit
        // (`_Total`, or an invalid one), then, from there, one at a time.
        let (mut done, mut pos, mut h) = (0, 0, 0);
        if o.plain {
            (done, pos, h) = self.copy_plain_blocks_after(entries, prefixes, out);
        }
        for &(slot, prefix) in &entries[done..] {
            let prefix = prefix as usize;
            out[pos..pos + prefix].copy_from_slice(&prefixes[h..h + prefix]);
            pos += prefix;
            h += prefix;
            let inst = LiveInstance {
                slot,
                generation: 0,
                unique_id: None,
                parent: None,
                name_len: 0,
            };
            self.copy_counter_block(&inst, &mut out[pos..pos + block])?;
            pos += block;
        }
        Ok(pos)
    }

    /// [`InstanceTable::copy_blocks_after`] for a plain object (no sharded counter), with
    /// `out` and `prefixes` checked long enough: a loop with no check per instance but its
    /// slot's, the copy of a thousand instances within a few tenths of a `memcpy` of the same
    /// bytes. Stops before the first entry whose slot is not below the instance limit; returns
    /// how many entries it wrote, and where in `out` and in `prefixes` the next one goes.
    #[inline(never)]
    fn copy_plain_blocks_after(
        &self,
        entries: &[(u32, u32)],
        prefixes: &[u8],
        out: &mut [u8],
    ) -> (usize, usize, usize) {
        let o = self.info;
        let block = o.counter_block_size as usize;
        let (data, stride) = (o.data_offset as usize, o.block_stride as usize);
        debug_assert!(
            entries.iter().map(|&(_, p)| p as usize).sum::<usize>() <= prefixes.len()
                && entries
                    .iter()
                    .map(|&(_, p)| p as usize + block)
                    .sum::<usize>()
                    <= out.len()
        );
        use crate::sys::wide_copy::{load_aligned_wide, load_words_atomic, load_words_wide};
        let src = Blocks {
            // SAFETY: `data_offset` is inside the mapping (checked at open).
            first: unsafe { self.reader.raw.base().cast_const().add(data) },
            stride,
            len: block,
            slots: o.max_instances,
        };
        // How each block is loaded, chosen once for all of them: AVX asked once, and when
        // every block starts 16-aligned (the mapping is page-aligned), no alignment step.
        // Each `load` is only called by `copy_plain`, with a block inside the mapping,
        // 8-aligned, a multiple of 8 long, only ever written atomically, and as many writable
        // bytes at `dst`, apart from the mapping.
        // SAFETY (the three `copy_plain` calls): the caller checked the sizes (see above);
        // `BlockView::instances` checked that the `max_instances` blocks `block_stride` bytes
        // apart (a multiple of 8, at least `counter_block_size`, itself a multiple of 8,
        // checked at open) from the 8-aligned `data_offset` are inside the mapping: `src`
        // describes them.
        if !crate::sys::wide_copy::wide_loads() {
            let load = |from: *const u8, dst: *mut u8, n: usize| {
                // SAFETY: what `copy_plain` gives `load`, said above.
                unsafe { load_words_atomic(from, std::slice::from_raw_parts_mut(dst, n)) }
            };
            // SAFETY: see above.
            unsafe { copy_plain(&src, entries, prefixes, out, load) }
        } else if data.is_multiple_of(16) && stride.is_multiple_of(16) {
            let load = |from: *const u8, dst: *mut u8, n: usize| {
                // SAFETY: what `copy_plain` gives `load`, said above; AVX was checked and
                // every block is 16-aligned (`data` and `stride` are multiples of 16, the
                // mapping is page-aligned).
                unsafe { load_aligned_wide(from, dst, n) }
            };
            // SAFETY: see above.
            unsafe { copy_plain(&src, entries, prefixes, out, load) }
        } else {
            let load = |from: *const u8, dst: *mut u8, n: usize| {
                // SAFETY: what `copy_plain` gives `load`, said above; AVX was checked.
                unsafe { load_words_wide(from, std::slice::from_raw_parts_mut(dst, n)) }
            };
            // SAFETY: see above.
            unsafe { copy_plain(&src, entries, prefixes, out, load) }
        }
    }

    /// [`InstanceTable::copy_counter_block`] for `_Total`, an invalid slot, or an object whose
    /// counter blocks have shards, text or sums. `out` has the block's length.
    #[inline(never)]
    fn copy_counter_block_checked(
        &self,
        inst: &LiveInstance,
        out: &mut [u8],
    ) -> Result<(), ReadError> {
        let o = self.info;
        if self.is_total_inst(inst) {
            return self.total_block(out);
        }
        if inst.slot >= o.max_instances {
            return Err(field(o.record_offset, "instance of the object", inst.slot));
        }
        let at = o.data_offset as usize + inst.slot as usize * o.block_stride as usize;
        // The whole block in one bulk copy (each 8-byte word whole, wide loads where the
        // processor guarantees that), then its shard lines added.
        // SAFETY: `inst.slot < max_instances` (checked above), and `BlockView::instances`
        // checked that the `max_instances` blocks `block_stride` bytes apart (a multiple of 8, at
        // least `counter_block_size`, itself a multiple of 8, checked at open) at the 8-aligned
        // `data_offset` are inside the mapping: the block of `counter_block_size` bytes at `at`
        // is in bounds, 8-aligned, a multiple of 8 long (`out.len() == counter_block_size`).
        unsafe { self.reader.raw.load_words_to(at, out) };
        if !o.sharded.is_empty() {
            self.reader.add_shards(o, at as u64, out)?;
        }
        set_byte_length(o, out);
        Ok(())
    }

    /// Appends the UTF-16 name of `inst` to `out` (no NUL), lone surrogates replaced by U+FFFD
    /// as in [`InstanceTable::copy_name`].
    ///
    /// # Errors
    ///
    /// [`ReadError::Field`] if `inst` is not an instance of this table's object.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::reader::BlockReader::open("App")?;
    /// // The names of the first object's instances, all from one consistent window.
    /// let names = reader.read_with(std::time::Duration::from_millis(5), |view| {
    ///     let table = view.instances(0)?;
    ///     let mut names = Vec::new();
    ///     for pos in 0..table.len() {
    ///         let mut units = Vec::new();
    ///         table.name_units(&table.get(pos)?, &mut units)?;
    ///         names.push(String::from_utf16_lossy(&units));
    ///     }
    ///     Ok(names)
    /// })?;
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn name_units(&self, inst: &LiveInstance, out: &mut Vec<u16>) -> Result<(), ReadError> {
        let o = self.info;
        if self.is_total_inst(inst) {
            out.extend_from_slice(&TOTAL_UNITS);
            return Ok(());
        }
        if inst.slot >= o.max_instances || inst.name_len > o.max_name_len {
            return Err(field(o.record_offset, "instance of the object", inst.slot));
        }
        // slot < max and name_len <= max_name_len: inside the slot, checked by `instances`.
        let at = o.slots_offset + u64::from(inst.slot) * o.slot_size + SLOT_HEADER_SIZE as u64;
        let start = out.len();
        usize::try_from(at)
            .ok()
            .and_then(|a| self.reader.raw.copy_u16s(a, inst.name_len as usize, out))
            .ok_or_else(|| field(at, "instance name", at))?;
        utf16::make_units_well_formed(&mut out[start..]);
        Ok(())
    }
}

/// The `N` bytes at `at` of a copied counter block (inside it: checked at open).
fn word_at<const N: usize>(block: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    if let Some(b) = block.get(at..at + N) {
        out.copy_from_slice(b);
    }
    out
}

/// Adds each of `words` to the 8-byte value in its place in `dst` (a copied block's bytes, any
/// alignment), wrapping as counters do; stops at the shorter of the two.
#[inline]
fn add_words(dst: &mut [u8], words: &[u64]) {
    let (values, _) = dst.as_chunks_mut::<WORD>();
    for (value, w) in values.iter_mut().zip(words) {
        *value = u64::from_ne_bytes(*value).wrapping_add(*w).to_ne_bytes();
    }
}

/// Sets the ByteLength word of a counter block copied from the mapping to the validated size
/// (the writer's own value is not trusted): the one fix-up a copy makes in the same pass; the
/// rest is [`ObjectInfo::fixups`]'s, applied by whoever serialises the copy.
#[inline]
fn set_byte_length(o: &ObjectInfo, out: &mut [u8]) {
    out[..BYTE_LENGTH_SIZE].copy_from_slice(&o.counter_block_size.to_le_bytes());
}

/// The mask of the first `n` bytes (in memory order, `n < 8`) of a native `u64`.
#[inline]
fn first_bytes(n: usize) -> u64 {
    let bits = (1u64 << (8 * n)) - 1;
    if cfg!(target_endian = "little") {
        bits
    } else {
        bits << (64 - 8 * n)
    }
}

/// Loads and checks shared by the view and its tables.
impl BlockReader {
    /// Adds the shard lines of the counter block at `block` to each sharded counter's value in
    /// `out`, a copy of that counter block ([`LAYOUT_VERSION`](crate::layout::LAYOUT_VERSION)
    /// 8): every consumer sees the sum. A sharded histogram's buckets are added line by line as
    /// slices.
    fn add_shards(&self, o: &ObjectInfo, block: u64, out: &mut [u8]) -> Result<(), ReadError> {
        let Some(shards) = o.shards else {
            return Ok(());
        };
        // A run's words, copied out of one line (allocated for the first long run only).
        let mut words: Vec<u64> = Vec::new();
        for s in 0..shards.slots {
            // block < 2^30, start + slots * line <= stride <= MAX_BLOCK_STRIDE: no overflow.
            let line = block + shards.start + s * shards.line;
            for run in &o.sharded {
                // Checked at open: the run's words inside the line and inside the block.
                let at = line + WORD as u64 * u64::from(run.word);
                let (offset, n) = (run.offset as usize, run.words as usize);
                let Some(value) = out.get_mut(offset..offset + WORD * n) else {
                    continue;
                };
                let loaded = usize::try_from(at).ok().and_then(|a| {
                    if n == 1 {
                        let v = self.raw.load_u64(a)?;
                        add_words(value, &[v]);
                    } else {
                        words.resize(n, 0);
                        self.raw.copy_words_to(a, words.as_mut_bytes())?;
                        add_words(value, &words);
                    }
                    Some(())
                });
                loaded.ok_or_else(|| field(line, "shard line", s))?;
            }
        }
        Ok(())
    }

    /// The value of counter `info` of object `o` (a sum, or of an object with sharded counters)
    /// in the counter block at `block`, read from a whole copy of the block: shards added, then
    /// the object's fix-ups (sums computed from the summed parts).
    #[cold]
    fn value_in_copy(
        &self,
        o: &ObjectInfo,
        block: u64,
        info: &CounterInfo,
    ) -> Result<i64, ReadError> {
        let mut copy = vec![0u8; o.counter_block_size as usize];
        usize::try_from(block)
            .ok()
            .and_then(|a| self.raw.copy_words_to(a, &mut copy))
            .ok_or_else(|| field(block, "counter block", o.counter_block_size))?;
        self.add_shards(o, block, &mut copy)?;
        o.fixups.apply(&mut copy);
        let at = info.block_offset as usize;
        match info.size {
            DWORD_SIZE => Ok(i64::from(i32::from_ne_bytes(word_at(&copy, at)))),
            LARGE_SIZE => Ok(i64::from_ne_bytes(word_at(&copy, at))),
            size => Err(field(
                u64::from(info.block_offset),
                "counter that is not a number",
                size,
            )),
        }
    }

    /// The value of counter `counter` of object `o` in the counter block at `block`.
    fn value_at(&self, o: &ObjectInfo, block: u64, counter: usize) -> Result<i64, ReadError> {
        let info: &CounterInfo = o
            .counters
            .clone()
            .nth(counter)
            .and_then(|i| self.records.counters.get(i))
            .ok_or_else(|| field(o.record_offset, "counter of the object", counter as u64))?;
        if !o.sharded.is_empty() || info.sum_parts().is_some() || o.histograms {
            return self.value_in_copy(o, block, info);
        }
        // Checked at open: the value lies inside the counter block, aligned to its size.
        let at = block + u64::from(info.block_offset);
        match info.size {
            DWORD_SIZE => Ok(i64::from(self.u32(at, "counter value")? as i32)),
            LARGE_SIZE => usize::try_from(at)
                .ok()
                .and_then(|a| self.raw.load_u64(a))
                .map(|v| v as i64)
                .ok_or_else(|| field(at, "counter value", at)),
            size => Err(field(at, "counter that is not a number", size)),
        }
    }

    /// The relaxed load of the `u32` at `off`, or [`ReadError::Field`] naming `what` if it lies
    /// outside the mapping or is misaligned.
    #[inline]
    pub(super) fn u32(&self, off: u64, what: &'static str) -> Result<u32, ReadError> {
        usize::try_from(off)
            .ok()
            .and_then(|o| self.raw.load_u32(o))
            // `ok_or_else`: this runs for every field of every instance, and a `ReadError` made
            // eagerly has to be dropped again (a call: it has drop glue) on the success path.
            .ok_or_else(|| field(off, what, off))
    }

    /// A slot's parent fields as a link, if they name a slot of an instanced object.
    #[inline]
    pub(super) fn parent(&self, pobj: u32, pslot: u32, pgen: u32) -> Option<ParentLink> {
        let object = pobj.checked_sub(1)?;
        let o = self.records.objects.get(object as usize)?;
        (pslot < o.max_instances).then_some(ParentLink {
            object,
            slot: pslot,
            generation: pgen,
        })
    }

    /// `children`, read at `at`, if no more than the block's instances.
    #[inline]
    pub(super) fn check_children(&self, at: u64, children: u32) -> Result<u32, ReadError> {
        if u64::from(children) > self.records.capacity {
            return Err(field(at, "children count", children));
        }
        Ok(children)
    }
}

/// Spin briefly, then yield (crossbeam-utils' `Backoff::snooze`), then sleep: a writer's
/// section lasts microseconds, `lock_ctrs` may last longer.
fn backoff(pause: &Backoff) {
    if pause.is_completed() {
        std::thread::sleep(Duration::from_micros(200));
    } else {
        pause.snooze();
    }
}

/// The counter blocks of a plain object, as [`copy_plain`] reads them.
struct Blocks {
    /// Slot 0's block, in the mapping.
    first: *const u8,
    /// Bytes from one slot's block to the next.
    stride: usize,
    /// Bytes in a block (ByteLength's validated value).
    len: usize,
    /// How many slots have a block (the object's instance limit).
    slots: u32,
}

/// [`InstanceTable::copy_blocks_after`]'s loop for a plain object: each entry's prefix, then
/// its slot's block copied by `load(block, dst, len)` and its ByteLength set, up to the first
/// entry whose slot has no block in `src`; returns how many entries it wrote, the bytes written
/// and the prefix bytes used. Everything it needs is in locals, none read through a reference
/// per instance (such a reload, from the stack, can 4K-alias the stores into `out` and wait
/// for them: the loop ran about 10% slower that way).
///
/// # Safety
///
/// - the prefix lengths of `entries` add up to at most `prefixes.len()` and, each with a
///   block of `src.len` bytes, to at most `out.len()`;
/// - the `src.slots` blocks `src.stride` bytes apart from `src.first` are inside a live
///   mapping, each 8-aligned, `src.len` bytes (a multiple of 8, at least [`BYTE_LENGTH_SIZE`]);
/// - `load` copies the block it is given to `dst`, writing nothing else.
#[inline(always)]
unsafe fn copy_plain(
    src: &Blocks,
    entries: &[(u32, u32)],
    prefixes: &[u8],
    out: &mut [u8],
    load: impl Fn(*const u8, *mut u8, usize),
) -> (usize, usize, usize) {
    const WIDE: usize = 64;
    let Blocks {
        first,
        stride,
        len: block,
        slots,
    } = *src;
    // ByteLength, as written into every copy: the validated size, which `block` is.
    let byte_length = (block as u32).to_le_bytes();
    // Pointers that move, and what the loop compares them with, all in registers: the prefix
    // is copied 64 bytes at once when its length is in `least..=64` (its bytes past it then
    // land in the block, which is written after it) and 64 bytes of `prefixes` are left.
    let least = WIDE.saturating_sub(block);
    let (out_start, pre_start) = (out.as_mut_ptr(), prefixes.as_ptr());
    let wide_until = match prefixes.len().checked_sub(WIDE) {
        Some(n) => pre_start.addr() + n,
        None => 0,
    };
    let (mut dst, mut from) = (out_start, pre_start);
    let mut done = entries.len();
    let mut it = entries.iter();
    while let Some(&(slot, prefix)) = it.next() {
        if slot >= slots {
            done = entries.len() - it.len() - 1;
            break;
        }
        let prefix = prefix as usize;
        // SAFETY (the function's contract):
        // - before entry k, `from` is `prefixes` plus the prefixes before it, and `dst` is
        //   `out` plus those and k blocks, so the `prefix` bytes at `from` and the `prefix +
        //   block` bytes at `dst` are in bounds; the 64-byte copy is taken only when 64 bytes
        //   are left in `prefixes` from `from` and `prefix + block >= 64` (so 64 in `out` from
        //   `dst`), its bytes past `prefix` overwritten by the block;
        // - the slot is below `slots` (tested above): its block is inside the mapping, and
        //   `out`'s `block` bytes after the prefix are ours to write: `load` is given both.
        unsafe {
            if prefix.wrapping_sub(least) <= WIDE - least && from.addr() <= wide_until {
                dst.cast::<[u8; WIDE]>()
                    .write_unaligned(from.cast::<[u8; WIDE]>().read_unaligned());
            } else {
                copy_exact_raw(from, dst, prefix);
            }
            from = from.add(prefix);
            dst = dst.add(prefix);
            load(first.add(slot as usize * stride), dst, block);
            dst.cast::<[u8; BYTE_LENGTH_SIZE]>()
                .write_unaligned(byte_length);
            dst = dst.add(block);
        }
    }
    // Where the loop stopped: entries written, and the bytes of `out` and `prefixes` used.
    (
        done,
        dst.addr() - out_start.addr(),
        from.addr() - pre_start.addr(),
    )
}

/// `n` bytes from `src` to `dst`, out of line.
///
/// # Safety
///
/// `src` has `n` readable bytes, `dst` `n` writable ones, not overlapping.
#[cold]
#[inline(never)]
unsafe fn copy_exact_raw(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) }
}

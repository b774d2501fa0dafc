//! Reading a block another process publishes: read-only, validated, consistent.
//!
//! Everything in a block is untrusted input: the records are copied out once and checked field by
//! field (an error names the offset), every later load is bounds-checked against the mapping, and
//! the file's size is checked before each read so that a truncated file is reported instead of
//! faulting (`SIGBUS`). Instance tables are read through the block's sequence counter: a copy is
//! kept only if the sequence was even and unchanged around it, with a bounded number of retries,
//! so a reader never sees a half-made instance and never waits on the writer's lock.
//!
//! Two ways to read: [`BlockReader::read`] copies everything into a [`Snapshot`];
//! [`BlockReader::read_with`] runs a closure inside one sequence window on a [`BlockView`] (and
//! its per-object [`InstanceTable`]s), which reads just what the closure asks for straight from
//! the mapping, so that a provider can serialise in one pass. Both keep a result only from a
//! window in which the sequence was even and did not move.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use zerocopy::FromBytes;

use super::create::{block_path, open_block};
use super::layout::*;
use super::raw::RawBlock;
use crate::map::validate::{MAX_INSTANCES, MAX_INSTANCE_NAME};
use crate::sys::shm;
use crate::winperf;

/// The most objects a block may declare.
pub const MAX_OBJECTS: u32 = 4096;
/// The most counters a block may declare.
pub const MAX_COUNTERS: u32 = 65536;
/// The largest counter block accepted.
pub const MAX_COUNTER_BLOCK: u32 = 1 << 20;
/// How long [`BlockReader::read`] keeps retrying while writers change the block: well under the
/// 50 ms a provider's Collect may take in all.
pub const DEFAULT_READ_DEADLINE: Duration = Duration::from_millis(20);

/// What is wrong with a block, or why it could not be read now.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The block could not be opened.
    #[error(transparent)]
    Open(#[from] crate::Error),
    /// I/O on the block failed.
    #[error("I/O error on the block {path}: {source}")]
    Io {
        /// The block's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The block is shorter than its header or than its header says.
    #[error("the block is {actual} bytes long, expected at least {expected}")]
    Truncated {
        /// Bytes present.
        actual: u64,
        /// Bytes needed.
        expected: u64,
    },
    /// The first bytes are not a prfdata block.
    #[error("not a prfdata block: bad magic at offset 0")]
    BadMagic,
    /// A layout version this build does not read.
    #[error("block layout version {found} at offset 8; this build reads version {LAYOUT_VERSION}")]
    Version {
        /// The version found.
        found: u32,
    },
    /// A field with a value that cannot be right.
    #[error("invalid block: {what} at offset {offset} is {value}")]
    Field {
        /// Offset of the field in the block.
        offset: u64,
        /// What the field is.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// The process that activated the block is gone (killed: it could not remove its block), so
    /// the values are frozen.
    #[error("the app that published this block has exited without removing it")]
    OwnerGone,
    /// The writer kept changing the instance tables (or held `lock_ctrs`) for the whole
    /// deadline.
    #[error("the block stayed busy for {0:?} (a writer holds it, or died holding it)")]
    Busy(Duration),
    /// The file was replaced, resized or rewritten since it was opened: reopen it.
    #[error("the block was replaced or resized since it was opened")]
    Replaced,
    /// The instance tables changed inside one sequence window without the sequence moving (a
    /// writer outside the protocol, or a corrupt block): what was read once no longer holds.
    #[error("the instance tables of the block changed without its sequence counter moving")]
    Inconsistent,
}

impl ReadError {
    /// A short name of the kind of error, the same for every occurrence (for logging each kind
    /// once).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::block::reader::ReadError;
    /// assert_eq!(ReadError::Busy(std::time::Duration::from_millis(3)).kind(), "busy");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            ReadError::Open(_) => "open",
            ReadError::Io { .. } => "io",
            ReadError::Truncated { .. } => "truncated",
            ReadError::BadMagic => "magic",
            ReadError::Version { .. } => "version",
            ReadError::Field { what, .. } => what,
            ReadError::OwnerGone => "owner gone",
            ReadError::Busy(_) => "busy",
            ReadError::Replaced => "replaced",
            ReadError::Inconsistent => "inconsistent",
        }
    }
}

/// A validated object record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Symbolic offset (name index = First Counter + this).
    pub name_offset: u32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
    /// Default counter index, or -1.
    pub default_counter: i32,
    /// Indexes of the object's counters in [`BlockReader::counters`].
    pub counters: Range<usize>,
    /// Whether it has instances.
    pub instanced: bool,
    /// Whether only "Costly" queries collect it.
    pub costly: bool,
    /// Instance limit (0 without instances).
    pub max_instances: u32,
    /// Longest instance name, UTF-16 units.
    pub max_name_len: u32,
    /// Bytes of one counter block.
    pub counter_block_size: u32,
    record_offset: u64,
    slot_size: u64,
    live_offset: u64,
    slots_offset: u64,
    data_offset: u64,
}

/// A validated counter record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    /// Symbolic offset, or `None` for a base.
    pub name_offset: Option<u32>,
    /// The winperf.h type.
    pub counter_type: u32,
    /// Bytes of the value.
    pub size: u32,
    /// Offset inside the counter block.
    pub block_offset: u32,
    /// `DefaultScale`.
    pub default_scale: i32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
}

/// A child's link to its parent, as its slot stores it: the parent's object index, slot and
/// generation. It was checked to name an object with instances and a slot below its limit;
/// whether that slot is live with that generation now is for [`BlockView::parent_position`] (or
/// the snapshot's other instances) to say.
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

/// One instance in a [`Snapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceSnapshot {
    /// Its slot.
    pub slot: u32,
    /// The slot's generation (a new one each time the slot is given to an instance).
    pub generation: u32,
    /// Unique id or -1.
    pub unique_id: i32,
    /// Its parent, if it has one.
    pub parent: Option<ParentLink>,
    /// Its count of live children, as the writer keeps it (checked to be no more than the
    /// block's instance capacity).
    pub children: u32,
    name: Range<usize>,
    data: Range<usize>,
}

/// One object in a [`Snapshot`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectSnapshot {
    /// The live instances, in live-list order (empty for an object without instances).
    pub instances: Vec<InstanceSnapshot>,
    global: Range<usize>,
}

/// A consistent copy of a block's instances and counter values.
///
/// Reuse one across reads: [`BlockReader::read`] clears and refills it without reallocating.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// One entry per object of the block.
    pub objects: Vec<ObjectSnapshot>,
    names: Vec<u16>,
    data: Vec<u8>,
}

impl Snapshot {
    /// An instance's name, UTF-16 without the NUL.
    #[inline]
    pub fn name(&self, inst: &InstanceSnapshot) -> &[u16] {
        &self.names[inst.name.clone()]
    }

    /// An instance's counter block: the `PERF_COUNTER_BLOCK` bytes, ByteLength first.
    #[inline]
    pub fn instance_block(&self, inst: &InstanceSnapshot) -> &[u8] {
        &self.data[inst.data.clone()]
    }

    /// The counter block of an object without instances.
    #[inline]
    pub fn global_block(&self, obj: &ObjectSnapshot) -> &[u8] {
        &self.data[obj.global.clone()]
    }

    fn clear(&mut self) {
        self.objects.clear();
        self.names.clear();
        self.data.clear();
    }
}

/// Reads a value of `size` bytes at `offset` of a counter block: the value the counter had when
/// the snapshot was taken, sign-extended from 32 bits for DWORD counters.
///
/// # Examples
///
/// ```
/// let block = [16u8, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0];
/// assert_eq!(prfdata::block::reader::counter_value(&block, 8, 4), Some(-2));
/// ```
pub fn counter_value(block: &[u8], offset: u32, size: u32) -> Option<i64> {
    let at = offset as usize;
    match size {
        4 => Some(i64::from(i32::from_le_bytes(
            block.get(at..at + 4)?.try_into().ok()?,
        ))),
        8 => Some(i64::from_le_bytes(block.get(at..at + 8)?.try_into().ok()?)),
        _ => None,
    }
}

/// An instance as a [`BlockView`] reads it from its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveInstance {
    /// Its slot.
    pub slot: u32,
    /// Unique id or -1.
    pub unique_id: i32,
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
    reader: &'a BlockReader,
    seq: u64,
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
        let o = &self.reader.objects[obj];
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
        let o = &self.reader.objects[obj];
        let count = self.live_count(obj)?;
        let len = self.reader.raw.len() as u64;
        let max = u64::from(o.max_instances);
        let fits = |start: u64, bytes: u64| start.checked_add(bytes).is_some_and(|e| e <= len);
        let name_room = (2 * u64::from(o.max_name_len)).next_multiple_of(8);
        if !o.instanced
            || !o.live_offset.is_multiple_of(4)
            || !fits(o.live_offset, 4 * max)
            || !o.slots_offset.is_multiple_of(8)
            || !o.slot_size.is_multiple_of(8)
            || o.slot_size < SLOT_HEADER_SIZE as u64 + name_room
            || !fits(o.slots_offset, max * o.slot_size)
            || !o.data_offset.is_multiple_of(8)
            || !o.counter_block_size.is_multiple_of(8)
            || !fits(o.data_offset, max * u64::from(o.counter_block_size))
        {
            return Err(field(o.record_offset, "object regions", o.record_offset));
        }
        Ok(InstanceTable {
            reader: self.reader,
            info: o,
            count,
        })
    }

    /// The live-list position of a parent instance (as in [`LiveInstance::parent`]), or `None`
    /// if that slot is not live now, or holds another generation (the parent went and another
    /// instance took its slot).
    pub fn parent_position(&self, link: ParentLink) -> Option<u32> {
        let o = self.reader.objects.get(link.object as usize)?;
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
        // The slot says where it is listed; the list must agree.
        let listed = self.reader.u32(o.live_offset + u64::from(pos) * 4, "");
        (state == SLOT_LIVE
            && generation == link.generation
            && pos < count
            && listed.ok() == Some(link.slot))
        .then_some(pos)
    }

    /// Writes the counter block of object `obj`, which has no instances, into `out`, as
    /// [`InstanceTable::copy_counter_block`] does for an instance.
    ///
    /// # Panics
    ///
    /// If `obj` is not an object index of the reader, or `out` is not exactly
    /// [`ObjectInfo::counter_block_size`] long.
    #[inline]
    pub fn copy_global_block(&self, obj: usize, out: &mut [u8]) -> Result<(), ReadError> {
        let o = &self.reader.objects[obj];
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
        out[..4].copy_from_slice(&o.counter_block_size.to_le_bytes());
        Ok(())
    }
}

/// The live instances of one object in a [`BlockView`]'s window, from
/// [`BlockView::instances`]: its regions checked against the mapping once, each instance
/// checked against the object's limits.
#[derive(Debug)]
pub struct InstanceTable<'a> {
    reader: &'a BlockReader,
    info: &'a ObjectInfo,
    count: u32,
}

impl InstanceTable<'_> {
    /// Live instances (the live count read when the table was made).
    #[inline]
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The slot number at live-list position `pos` and the slot's offset.
    #[inline]
    fn slot_of(&self, pos: u32) -> Result<(u32, usize), ReadError> {
        let o = self.info;
        let at = o.live_offset + u64::from(pos) * 4;
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
        let (_, slot_at) = self.slot_of(pos)?;
        // SAFETY: `slot_at` from `slot_of`; CHILDREN is a 4-aligned header field.
        let children = unsafe { self.slot_u32(slot_at, slot::CHILDREN) };
        self.reader
            .check_children((slot_at + slot::CHILDREN) as u64, children)
    }

    /// The instance at live-list position `pos`.
    #[inline]
    pub fn get(&self, pos: u32) -> Result<LiveInstance, ReadError> {
        let (slot_no, slot_at) = self.slot_of(pos)?;
        // SAFETY: `slot_at` from `slot_of`; each offset is a 4-aligned header field.
        let (state, unique_id, pobj, pslot, pgen, name_len) = unsafe {
            (
                self.slot_u32(slot_at, slot::STATE),
                self.slot_u32(slot_at, slot::UNIQUE_ID),
                self.slot_u32(slot_at, slot::PARENT_OBJECT),
                self.slot_u32(slot_at, slot::PARENT_SLOT),
                self.slot_u32(slot_at, slot::PARENT_GENERATION),
                self.slot_u32(slot_at, slot::NAME_LEN),
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
            unique_id: unique_id as i32,
            parent: self.reader.parent(pobj, pslot, pgen),
            name_len,
        })
    }

    /// Writes the UTF-16 name of `inst` into `out` as bytes in memory order, then its NUL and
    /// zeros to the end of `out`. `out` is the name field of a `PERF_INSTANCE_DEFINITION`: the
    /// name and its NUL rounded up to 8 bytes, `(2 * name_len + 2).next_multiple_of(8)`.
    ///
    /// # Panics
    ///
    /// If `out` does not have that length.
    #[inline]
    pub fn copy_name(&self, inst: &LiveInstance, out: &mut [u8]) -> Result<(), ReadError> {
        let o = self.info;
        let bytes = inst.name_len as usize * 2;
        assert_eq!(out.len(), (bytes + 2).next_multiple_of(8), "a name field");
        if inst.slot >= o.max_instances || inst.name_len > o.max_name_len {
            return Err(field(o.record_offset, "instance of the object", inst.slot));
        }
        let at = (o.slots_offset + u64::from(inst.slot) * o.slot_size) as usize + SLOT_HEADER_SIZE;
        // Whole words, the last one masked to the name's bytes: no `memset` for a few bytes.
        let (name, rest) = out.split_at_mut(bytes.next_multiple_of(8));
        for (i, chunk) in name.chunks_exact_mut(8).enumerate() {
            // SAFETY: `inst.slot < max_instances` and `name_len <= max_name_len` (checked
            // above); `BlockView::instances` checked that every slot lies inside the mapping,
            // is 8-aligned, and holds SLOT_HEADER_SIZE bytes then the longest name rounded up
            // to 8: the word at `at + 8 * i < at + bytes.next_multiple_of(8)` is in bounds and
            // 8-aligned.
            let word = unsafe { self.reader.raw.u64_at(at + 8 * i) }.load(Ordering::Relaxed);
            let keep = bytes - 8 * i; // name bytes in this word and after
            let word = if keep >= 8 {
                word
            } else {
                word & first_bytes(keep)
            };
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        // The NUL when the name fills its last word: one more zero word.
        if let Some(word) = rest.first_chunk_mut::<8>() {
            *word = [0; 8];
        }
        Ok(())
    }

    /// Writes the counter block of `inst` into `out`, which must be exactly
    /// [`ObjectInfo::counter_block_size`] long; its ByteLength word is set to that size (the
    /// writer's own value is not trusted).
    ///
    /// # Panics
    ///
    /// If `out` has the wrong length.
    #[inline]
    pub fn copy_counter_block(&self, inst: &LiveInstance, out: &mut [u8]) -> Result<(), ReadError> {
        let o = self.info;
        let stride = o.counter_block_size as usize;
        assert_eq!(out.len(), stride, "one counter block");
        if inst.slot >= o.max_instances {
            return Err(field(o.record_offset, "instance of the object", inst.slot));
        }
        let at = o.data_offset as usize + inst.slot as usize * stride;
        for (i, chunk) in out.chunks_exact_mut(8).enumerate() {
            // SAFETY: `inst.slot < max_instances` (checked above), and `BlockView::instances`
            // checked that the `max_instances` blocks of `counter_block_size` bytes (a multiple
            // of 8, checked at open) at the 8-aligned `data_offset` are inside the mapping: the
            // word at `at + 8 * i < at + stride` is in bounds and 8-aligned.
            let word = unsafe { self.reader.raw.u64_at(at + 8 * i) }.load(Ordering::Relaxed);
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        out[..4].copy_from_slice(&o.counter_block_size.to_le_bytes());
        Ok(())
    }
}

/// A block opened read-only, with its records validated.
///
/// # Examples
///
/// ```no_run
/// use prfdata::block::reader::{BlockReader, Snapshot};
/// let reader = BlockReader::open("PrfDataDemo")?;
/// let mut snap = Snapshot::default();
/// reader.read(&mut snap)?;
/// for (info, obj) in reader.objects().iter().zip(&snap.objects) {
///     println!("object +{}: {} instances", info.name_offset, obj.instances.len());
/// }
/// # Ok::<(), prfdata::block::reader::ReadError>(())
/// ```
#[derive(Debug)]
pub struct BlockReader {
    file: File,
    raw: RawBlock,
    path: PathBuf,
    identity: shm::FileIdentity,
    header: BlockHeader,
    objects: Vec<ObjectInfo>,
    counters: Vec<CounterInfo>,
    /// The most instances the block can hold (all objects' limits together): no instance can
    /// have more children.
    capacity: u64,
}

impl BlockReader {
    /// Opens the block of `app` in [`shm_dir`](super::shm_dir).
    ///
    /// # Errors
    ///
    /// [`ReadError::Open`] with [`Error::NotActive`](crate::Error::NotActive) when the app is
    /// not running; any other [`ReadError`] when the block is invalid.
    ///
    /// # Examples
    ///
    /// See [`BlockReader`].
    pub fn open(app: &str) -> Result<BlockReader, ReadError> {
        let path = block_path(app)?;
        Self::open_path(app, &path)
    }

    /// Opens the block at `path`.
    ///
    /// # Errors
    ///
    /// As [`BlockReader::open`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let r = prfdata::block::reader::BlockReader::open_path("App", "/dev/shm/x/App.blk".as_ref())?;
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn open_path(app: &str, path: &Path) -> Result<BlockReader, ReadError> {
        let file = open_block(app, path, false)?;
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let identity = shm::identity(&file).map_err(io)?;
        if identity.size < HEADER_SIZE as u64 {
            return Err(ReadError::Truncated {
                actual: identity.size,
                expected: HEADER_SIZE as u64,
            });
        }
        let len = usize::try_from(identity.size).map_err(|_| ReadError::Field {
            offset: 16,
            what: "total size",
            value: identity.size,
        })?;
        let raw = RawBlock::map(&file, len, false).map_err(io)?;
        let (header, objects, counters) = parse_records(&raw, identity.size)?;
        let capacity = objects.iter().map(|o| u64::from(o.max_instances)).sum();
        Ok(BlockReader {
            file,
            raw,
            path: path.to_path_buf(),
            identity,
            header,
            objects,
            counters,
            capacity,
        })
    }

    /// The block's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header as it was when the block was opened.
    pub fn header(&self) -> &BlockHeader {
        &self.header
    }

    /// The objects.
    pub fn objects(&self) -> &[ObjectInfo] {
        &self.objects
    }

    /// All counters, in object order; an object's are `counters()[obj.counters.clone()]`.
    pub fn counters(&self) -> &[CounterInfo] {
        &self.counters
    }

    /// Whether the block at the path is no longer the one opened (the app restarted or quit), or
    /// the file changed size: reopen it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut reader = prfdata::block::reader::BlockReader::open("App")?;
    /// if reader.is_replaced() {
    ///     reader = prfdata::block::reader::BlockReader::open("App")?;
    /// }
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn is_replaced(&self) -> bool {
        let same_path = matches!(shm::path_identity(&self.path),
            Ok(Some((dev, ino))) if dev == self.identity.dev && ino == self.identity.ino);
        let same_size = shm::identity(&self.file).is_ok_and(|id| id.size == self.identity.size);
        !(same_path && same_size)
    }

    /// Whether the process that activated the block still holds it (its `flock`, which the kernel
    /// releases however the process ends).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::block::reader::BlockReader::open("App")?;
    /// if !reader.owner_alive() {
    ///     println!("the app was killed; its counters are frozen");
    /// }
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn owner_alive(&self) -> bool {
        shm::owner_holds_lock(&self.file).unwrap_or(false)
    }

    /// Copies a consistent snapshot into `snap`, retrying for up to [`DEFAULT_READ_DEADLINE`].
    ///
    /// # Errors
    ///
    /// [`ReadError::Replaced`] if the file changed size or generation, [`ReadError::Busy`] if no
    /// consistent copy could be made in time, [`ReadError::Field`] for an invalid live value.
    ///
    /// # Examples
    ///
    /// See [`BlockReader`].
    pub fn read(&self, snap: &mut Snapshot) -> Result<(), ReadError> {
        self.read_within(snap, DEFAULT_READ_DEADLINE)
    }

    /// [`BlockReader::read`] with another deadline.
    ///
    /// # Errors
    ///
    /// As [`BlockReader::read`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::block::reader::BlockReader::open("App")?;
    /// # let mut snap = Default::default();
    /// reader.read_within(&mut snap, std::time::Duration::from_millis(5))?;
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn read_within(&self, snap: &mut Snapshot, deadline: Duration) -> Result<(), ReadError> {
        let copied = self.read_with(deadline, |_| self.copy(snap));
        if copied.is_err() {
            snap.clear();
        }
        copied
    }

    /// Runs `f` on a [`BlockView`] inside one sequence window, retrying until a window in which
    /// the sequence was even and did not move, for up to `deadline`; returns what `f` returned in
    /// that window (an error too: a consistent block that is invalid stays invalid).
    ///
    /// This is the single-pass interface: `f` reads what it needs straight from the mapping
    /// (every load checked, through atomics) and may write it wherever it likes, e.g. into a
    /// caller's buffer. `f` may run several times: whatever it produced in a window that was
    /// then rejected must be thrown away or overwritten by the next run.
    ///
    /// # Errors
    ///
    /// As [`BlockReader::read`], plus whatever `f` returns.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::block::reader::BlockReader::open("App")?;
    /// // How many instances each object has, all counted in the same consistent state.
    /// let counts = reader.read_with(std::time::Duration::from_millis(5), |view| {
    ///     (0..reader.objects().len()).map(|k| view.live_count(k)).collect::<Result<Vec<_>, _>>()
    /// })?;
    /// # Ok::<(), prfdata::block::reader::ReadError>(())
    /// ```
    pub fn read_with<T>(
        &self,
        deadline: Duration,
        mut f: impl FnMut(&BlockView<'_>) -> Result<T, ReadError>,
    ) -> Result<T, ReadError> {
        let start = Instant::now();
        let mut attempt = 0u32;
        loop {
            // Truncation would turn the next load into SIGBUS: check the size first.
            let size = shm::identity(&self.file).map(|id| id.size).unwrap_or(0);
            if size != self.identity.size {
                return Err(ReadError::Replaced);
            }
            if self.raw.load_u64(GENERATION_OFFSET) != Some(self.header.generation) {
                return Err(ReadError::Replaced);
            }
            if attempt == 0 && !self.owner_alive() {
                return Err(ReadError::OwnerGone);
            }
            let seq = self.seq_load();
            if seq & 1 == 0 {
                fence(Ordering::Acquire);
                let result = f(&BlockView { reader: self, seq });
                fence(Ordering::Acquire);
                if self.seq_relaxed() == seq {
                    return result;
                }
            }
            attempt += 1;
            if start.elapsed() >= deadline {
                return Err(ReadError::Busy(deadline));
            }
            backoff(attempt);
        }
    }

    fn seq_load(&self) -> u64 {
        // SAFETY: SEQ_OFFSET + 8 <= HEADER_SIZE <= mapping length (checked at open), 8-aligned.
        unsafe { self.raw.u64_at(SEQ_OFFSET) }.load(Ordering::Acquire)
    }

    fn seq_relaxed(&self) -> u64 {
        // SAFETY: as in `seq_load`.
        unsafe { self.raw.u64_at(SEQ_OFFSET) }.load(Ordering::Relaxed)
    }

    /// One copy attempt; the caller checks the sequence around it. Values may be inconsistent
    /// (that is what the sequence check catches) but every load is bounds-checked.
    fn copy(&self, snap: &mut Snapshot) -> Result<(), ReadError> {
        snap.clear();
        for obj in &self.objects {
            let mut out = ObjectSnapshot::default();
            if !obj.instanced {
                let start = snap.data.len();
                self.words(
                    obj.data_offset,
                    obj.counter_block_size.into(),
                    &mut snap.data,
                )?;
                out.global = start..snap.data.len();
                snap.objects.push(out);
                continue;
            }
            let live_count =
                self.u32(obj.record_offset + LIVE_COUNT_OFFSET as u64, "live count")?;
            if live_count > obj.max_instances {
                return Err(field(
                    obj.record_offset + LIVE_COUNT_OFFSET as u64,
                    "live count",
                    live_count,
                ));
            }
            out.instances.reserve(live_count as usize);
            for pos in 0..u64::from(live_count) {
                let at = obj.live_offset + pos * 4;
                let slot_no = self.u32(at, "live list entry")?;
                if slot_no >= obj.max_instances {
                    return Err(field(at, "live list entry", slot_no));
                }
                let slot_at = obj.slots_offset + u64::from(slot_no) * obj.slot_size;
                let state = self.u32(slot_at + slot::STATE as u64, "slot state")?;
                if state != SLOT_LIVE {
                    // A slot in the live list that is not live: a writer is mid-change (the
                    // sequence check will reject this copy) or the block is corrupt.
                    return Err(field(slot_at, "state of a listed slot", state));
                }
                let name_len = self.u32(slot_at + slot::NAME_LEN as u64, "name length")?;
                if name_len > obj.max_name_len {
                    return Err(field(
                        slot_at + slot::NAME_LEN as u64,
                        "name length",
                        name_len,
                    ));
                }
                let unique_id = self.u32(slot_at + slot::UNIQUE_ID as u64, "unique id")? as i32;
                let generation = self.u32(slot_at + slot::GENERATION as u64, "generation")?;
                let pobj = self.u32(slot_at + slot::PARENT_OBJECT as u64, "parent object")?;
                let pslot = self.u32(slot_at + slot::PARENT_SLOT as u64, "parent slot")?;
                let pgen = self.u32(
                    slot_at + slot::PARENT_GENERATION as u64,
                    "parent generation",
                )?;
                let parent = self.parent(pobj, pslot, pgen);
                let at = slot_at + slot::CHILDREN as u64;
                let children = self.check_children(at, self.u32(at, "children")?)?;
                let name_start = snap.names.len();
                let name_at = slot_at + SLOT_HEADER_SIZE as u64;
                self.utf16(name_at, name_len, &mut snap.names)?;
                let data_start = snap.data.len();
                let block_at =
                    obj.data_offset + u64::from(slot_no) * u64::from(obj.counter_block_size);
                self.words(block_at, obj.counter_block_size.into(), &mut snap.data)?;
                out.instances.push(InstanceSnapshot {
                    slot: slot_no,
                    generation,
                    unique_id,
                    parent,
                    children,
                    name: name_start..snap.names.len(),
                    data: data_start..snap.data.len(),
                });
            }
            snap.objects.push(out);
        }
        Ok(())
    }

    /// A slot's parent fields as a link, if they name a slot of an instanced object.
    #[inline]
    fn parent(&self, pobj: u32, pslot: u32, pgen: u32) -> Option<ParentLink> {
        let object = pobj.checked_sub(1)?;
        let o = self.objects.get(object as usize)?;
        (pslot < o.max_instances).then_some(ParentLink {
            object,
            slot: pslot,
            generation: pgen,
        })
    }

    /// `children`, read at `at`, if no more than the block's instances.
    #[inline]
    fn check_children(&self, at: u64, children: u32) -> Result<u32, ReadError> {
        if u64::from(children) > self.capacity {
            return Err(field(at, "children count", children));
        }
        Ok(children)
    }

    #[inline]
    fn u32(&self, off: u64, what: &'static str) -> Result<u32, ReadError> {
        usize::try_from(off)
            .ok()
            .and_then(|o| self.raw.load_u32(o))
            // `ok_or_else`: this runs for every field of every instance, and a `ReadError` made
            // eagerly has to be dropped again (a call: it has drop glue) on the success path.
            .ok_or_else(|| field(off, what, off))
    }

    fn words(&self, off: u64, len: u64, out: &mut Vec<u8>) -> Result<(), ReadError> {
        let start = out.len();
        let ok = usize::try_from(off)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| self.raw.copy_words(o, l, out));
        if ok.is_none() {
            return Err(ReadError::Field {
                offset: off,
                what: "counter block",
                value: len,
            });
        }
        // The ByteLength word is the writer's to set; report the validated length instead.
        if let Some(first) = out.get_mut(start..start + 4) {
            first.copy_from_slice(&(len as u32).to_le_bytes());
        }
        Ok(())
    }

    fn utf16(&self, off: u64, len: u32, out: &mut Vec<u16>) -> Result<(), ReadError> {
        usize::try_from(off)
            .ok()
            .and_then(|o| self.raw.copy_u16s(o, len as usize, out))
            .ok_or_else(|| field(off, "instance name", off))
    }
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

/// Offset of [`BlockHeader::generation`].
const GENERATION_OFFSET: usize = core::mem::offset_of!(BlockHeader, generation);
/// Offset of [`BlockHeader::timer_freq`].
const TIMER_FREQ_OFFSET: usize = core::mem::offset_of!(BlockHeader, timer_freq);

fn field(offset: u64, what: &'static str, value: impl Into<u64>) -> ReadError {
    ReadError::Field {
        offset,
        what,
        value: value.into(),
    }
}

/// Spin briefly, then yield, then sleep: a writer's section lasts microseconds, `lock_ctrs` may
/// last longer.
fn backoff(attempt: u32) {
    match attempt {
        0..=3 => std::hint::spin_loop(),
        4..=10 => std::thread::yield_now(),
        _ => std::thread::sleep(Duration::from_micros(200)),
    }
}

type Records = (BlockHeader, Vec<ObjectInfo>, Vec<CounterInfo>);

/// Copies the header and records out of the block and validates every field.
fn parse_records(raw: &RawBlock, file_size: u64) -> Result<Records, ReadError> {
    let head = raw
        .snapshot_bytes(0, HEADER_SIZE)
        .ok_or(ReadError::Truncated {
            actual: file_size,
            expected: HEADER_SIZE as u64,
        })?;
    let header = BlockHeader::read_from_bytes(&head).map_err(|_| ReadError::BadMagic)?;
    if header.magic != MAGIC {
        return Err(ReadError::BadMagic);
    }
    if header.layout_version != LAYOUT_VERSION {
        return Err(ReadError::Version {
            found: header.layout_version,
        });
    }
    if header.header_size != HEADER_SIZE as u32 {
        return Err(field(12, "header size", header.header_size));
    }
    if header.total_size != file_size {
        return Err(ReadError::Truncated {
            actual: file_size,
            expected: header.total_size,
        });
    }
    if header.num_objects == 0 || header.num_objects > MAX_OBJECTS {
        return Err(field(28, "object count", header.num_objects));
    }
    if header.num_counters > MAX_COUNTERS {
        return Err(field(40, "counter count", header.num_counters));
    }
    if header.timer_freq != crate::clock::OBJECT_FREQUENCY as u64 {
        return Err(field(
            TIMER_FREQ_OFFSET as u64,
            "object timer frequency",
            header.timer_freq,
        ));
    }
    if header.objects_offset != HEADER_SIZE as u32 {
        return Err(field(44, "objects offset", header.objects_offset));
    }
    let counters_at =
        HEADER_SIZE as u64 + u64::from(header.num_objects) * OBJECT_RECORD_SIZE as u64;
    if u64::from(header.counters_offset) != counters_at {
        return Err(field(48, "counters offset", header.counters_offset));
    }
    let records_end = counters_at + u64::from(header.num_counters) * COUNTER_RECORD_SIZE as u64;
    if records_end > file_size {
        return Err(ReadError::Truncated {
            actual: file_size,
            expected: records_end,
        });
    }
    let recs = raw
        .snapshot_bytes(HEADER_SIZE, align_up(records_end as usize, 8) - HEADER_SIZE)
        .ok_or(ReadError::Truncated {
            actual: file_size,
            expected: records_end,
        })?;

    let mut counters = Vec::with_capacity(header.num_counters as usize);
    for i in 0..header.num_counters as usize {
        let at = counters_at as usize - HEADER_SIZE + i * COUNTER_RECORD_SIZE;
        let rec = CounterRecord::read_from_bytes(&recs[at..at + COUNTER_RECORD_SIZE])
            .map_err(|_| field(at as u64, "counter record", 0u32))?;
        let off = (at + HEADER_SIZE) as u64;
        // Numbers have the size their type says; text (PERF_COUNTER_TEXT) an even size up to
        // MAX_INSTANCE_NAME units, 8-aligned as the writer places it.
        let is_text = rec.counter_type == winperf::PERF_COUNTER_TEXT;
        let size_ok = match winperf::counter_size(rec.counter_type) {
            Some(n) => n == rec.size,
            None => {
                is_text && rec.size > 0 && rec.size % 2 == 0 && rec.size <= 2 * MAX_INSTANCE_NAME
            }
        };
        if !size_ok || rec.counter_type & winperf::PERF_COUNTER_HISTOGRAM_TYPE != 0 {
            return Err(field(off + 4, "counter type / size", rec.counter_type));
        }
        let align = if is_text { 8 } else { rec.size };
        if rec.size > 0
            && (rec.block_offset < COUNTER_BLOCK_HEADER as u32 || rec.block_offset % align != 0)
        {
            return Err(field(off + 12, "counter offset", rec.block_offset));
        }
        let is_base = winperf::is_base(rec.counter_type);
        let name_offset = (rec.name_offset != NO_NAME).then_some(rec.name_offset);
        if is_base == name_offset.is_some() || name_offset.is_some_and(|n| n % 2 != 0) {
            return Err(field(off, "counter name offset", rec.name_offset));
        }
        counters.push(CounterInfo {
            name_offset,
            counter_type: rec.counter_type,
            size: rec.size,
            block_offset: rec.block_offset,
            default_scale: rec.default_scale,
            detail_level: rec.detail_level,
        });
    }

    let mut objects = Vec::with_capacity(header.num_objects as usize);
    for i in 0..header.num_objects as usize {
        let at = i * OBJECT_RECORD_SIZE;
        let rec = ObjectRecord::read_from_bytes(&recs[at..at + OBJECT_RECORD_SIZE])
            .map_err(|_| field(at as u64, "object record", 0u32))?;
        objects.push(check_object(
            &rec,
            (HEADER_SIZE + at) as u64,
            &counters,
            file_size,
        )?);
    }
    Ok((header, objects, counters))
}

fn check_object(
    rec: &ObjectRecord,
    off: u64,
    counters: &[CounterInfo],
    file_size: u64,
) -> Result<ObjectInfo, ReadError> {
    let first = rec.first_counter as usize;
    let end = first
        .checked_add(rec.num_counters as usize)
        .filter(|&e| e <= counters.len());
    let Some(end) = end.filter(|&e| e > first) else {
        return Err(field(off + 12, "object's counter count", rec.num_counters));
    };
    if !rec.name_offset.is_multiple_of(2) {
        return Err(field(off, "object name offset", rec.name_offset));
    }
    if rec.flags & !(OBJECT_INSTANCED | OBJECT_COSTLY) != 0 {
        return Err(field(off + 20, "object flags", rec.flags));
    }
    if rec.default_counter < -1 || rec.default_counter >= rec.num_counters as i32 {
        return Err(field(
            off + 8,
            "default counter",
            rec.default_counter as u32,
        ));
    }
    let stride = rec.counter_block_size;
    if stride < COUNTER_BLOCK_HEADER as u32
        || !stride.is_multiple_of(8)
        || stride > MAX_COUNTER_BLOCK
    {
        return Err(field(off + 32, "counter block size", stride));
    }
    for (i, c) in counters[first..end].iter().enumerate() {
        // In u64: an offset near u32::MAX must be refused, not wrap (or panic in debug builds).
        if u64::from(c.block_offset) + u64::from(c.size) > u64::from(stride) {
            let at = HEADER_SIZE as u64; // counters follow the objects; name the object's field
            return Err(field(
                at + ((first + i) * COUNTER_RECORD_SIZE) as u64,
                "counter beyond its block",
                c.block_offset,
            ));
        }
    }
    let instanced = rec.flags & OBJECT_INSTANCED != 0;
    let (max, name_len, slot_size) = if instanced {
        if rec.max_instances == 0 || rec.max_instances > MAX_INSTANCES {
            return Err(field(off + 24, "instance limit", rec.max_instances));
        }
        if rec.max_name_len == 0 || rec.max_name_len > MAX_INSTANCE_NAME {
            return Err(field(off + 28, "instance name limit", rec.max_name_len));
        }
        let min_slot = SLOT_HEADER_SIZE as u32 + 2 * rec.max_name_len;
        if rec.slot_size < min_slot
            || !rec.slot_size.is_multiple_of(8)
            || rec.slot_size > min_slot + 64
        {
            return Err(field(off + 36, "slot size", rec.slot_size));
        }
        (rec.max_instances, rec.max_name_len, rec.slot_size)
    } else {
        (0, 0, 0)
    };
    let n = u64::from(max);
    let blocks = if instanced { n } else { 1 };
    let region_ok = |start: u64, len: u64, align: u64| {
        start.is_multiple_of(align) && start.checked_add(len).is_some_and(|e| e <= file_size)
    };
    if !region_ok(rec.live_offset, n * 4, 8) {
        return Err(field(off + 40, "live list offset", rec.live_offset));
    }
    if !region_ok(rec.slots_offset, n * u64::from(slot_size), 8) {
        return Err(field(off + 48, "slots offset", rec.slots_offset));
    }
    if !region_ok(rec.data_offset, blocks * u64::from(stride), 8) {
        return Err(field(off + 56, "data offset", rec.data_offset));
    }
    Ok(ObjectInfo {
        name_offset: rec.name_offset,
        detail_level: rec.detail_level,
        default_counter: rec.default_counter,
        counters: first..end,
        instanced,
        costly: rec.flags & OBJECT_COSTLY != 0,
        max_instances: max,
        max_name_len: name_len,
        counter_block_size: stride,
        record_offset: off,
        slot_size: u64::from(slot_size),
        live_offset: rec.live_offset,
        slots_offset: rec.slots_offset,
        data_offset: rec.data_offset,
    })
}

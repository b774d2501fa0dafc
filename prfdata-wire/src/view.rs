//! A zero-copy view of PERF_DATA_BLOCK bytes: the decoder's one pass of checks, then objects,
//! counter definitions, instances and values read in place, names decoded only when asked for.
//!
//! [`DataView::parse`] checks the whole block once, exactly as [`crate::snapshot`] always has
//! (every offset, length, count, name and text value, with the same [`DecodeError`] at the
//! same offset) and keeps only where things are: one `Vec` of counter-definition offsets and
//! one of instance offsets for the whole block, one entry per object. Nothing is allocated per
//! instance or per counter value. The structures are read through zerocopy views of
//! [`crate::winperf`]'s little-endian, unaligned `PERF_OBJECT_TYPE` and the rest: a view
//! is a reference into the input, valid at any alignment (a Windows provider's objects are
//! only DWORD-aligned), and a field read is one load.
//!
//! A [`DataSnapshot`](crate::snapshot::DataSnapshot) is this view owned: the bytes kept with the same index, its objects
//! read in place ([`crate::snapshot::decode_owned`], [`DataSnapshot::from_block`](crate::snapshot::DataSnapshot::from_block), or
//! [`DataView::to_snapshot`] with a copy of the bytes); reading the view directly is for hot
//! paths that touch values, not names (a bench).
//!
//! ```text
//! DataView ─ objects() ─▶ ObjectView ─ counters()  ─▶ CounterView (a PERF_COUNTER_DEFINITION)
//!                                    ├ instances() ─▶ InstanceView ─ values() ─▶ BlockView
//!                                    └ values()    ─▶ BlockView (an object without instances)
//! BlockView::int(&CounterView) → the raw integer; BlockView::raw(&CounterView) → RawValue
//! BlockView::ints(&ValuePlan)  → every raw integer in turn (ObjectView::plan, once per object)
//! ```
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::build::DataBlockWriter;
//! use prfdata_wire::view::DataView;
//!
//! // The sample object: counters "#1850" (RAWCOUNT) and a fraction with its base; instances
//! // "alpha" and "beta".
//! let out = prfdata_testkit::sample::sample_object(1848);
//! let bytes = DataBlockWriter::new("box", 0).objects(&out, 1).finish();
//! let view = DataView::parse(&bytes)?;
//! let object = view.object(0).unwrap();
//! let first = object.counter(0).unwrap();
//! let values: Vec<Option<i64>> = object.instances().map(|i| i.values().int(&first)).collect();
//! assert_eq!(values, [Some(7), Some(0xFFFF_FFFF)]);
//! assert_eq!(object.instance(0).unwrap().name(), "alpha");
//! assert_eq!(view.to_snapshot(), prfdata_wire::snapshot::decode(&bytes)?);
//! # Ok::<(), prfdata_wire::error::DecodeError>(())
//! ```

use std::borrow::Cow;
use std::ops::Range;

use crate::winperf::{
    self, PerfCounterBlock, PerfCounterDefinition, PerfDataBlock, PerfInstanceDefinition,
    PerfObjectType, PERF_NO_INSTANCES, PERF_TEXT_ASCII, PERF_TYPE_MASK, PERF_TYPE_TEXT,
};
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use crate::error::DecodeError;
use crate::utf16::{ascii_lossy, check_utf16, utf16_lossy};

pub use crate::build::SIGNATURE;
// The structures' sizes: the least `HeaderLength`, `TotalByteLength` and `ByteLength`.
pub(crate) use crate::build::{COUNTER_DEFINITION, INSTANCE_DEFINITION, OBJECT_HEADER};
/// `PERF_COUNTER_BLOCK`'s size: the least `ByteLength`.
const COUNTER_BLOCK: usize = core::mem::size_of::<PerfCounterBlock>();

// ---------------------------------------------------------------------------------------------
// Checked reads.
// ---------------------------------------------------------------------------------------------

/// A view of the `T` at `offset`, which must end by `limit` (≤ `bytes.len()`).
#[inline]
fn view<'a, T: FromBytes + KnownLayout + Immutable + Unaligned>(
    bytes: &'a [u8],
    offset: usize,
    limit: usize,
    what: &'static str,
) -> Result<&'a T, DecodeError> {
    let need = core::mem::size_of::<T>();
    let available = limit.saturating_sub(offset);
    let truncated = || DecodeError::Truncated {
        offset,
        what,
        need: need as u64,
        available: available as u64,
    };
    if available < need {
        return Err(truncated());
    }
    let raw = bytes.get(offset..offset + need).ok_or_else(truncated)?;
    T::ref_from_bytes(raw).map_err(|_| truncated())
}

/// A view of the `T` at `offset` that [`view`] has already accepted; `None` only if the bytes
/// changed under a caller that broke that promise (never, with a shared borrow).
#[inline]
fn checked<T: FromBytes + KnownLayout + Immutable + Unaligned>(
    bytes: &[u8],
    offset: usize,
) -> Option<&T> {
    let raw = bytes.get(offset..offset.checked_add(core::mem::size_of::<T>())?)?;
    T::ref_from_bytes(raw).ok()
}

/// `start + len` as an end offset that must not pass `limit`.
#[inline]
fn span(
    start: usize,
    len: u64,
    limit: usize,
    at: usize,
    what: &'static str,
) -> Result<usize, DecodeError> {
    let available = limit.saturating_sub(start) as u64;
    if len > available {
        return Err(DecodeError::Truncated {
            offset: at,
            what,
            need: len,
            available,
        });
    }
    Ok(start + len as usize)
}

fn field(offset: usize, what: &'static str, value: i64, expected: &'static str) -> DecodeError {
    DecodeError::Field {
        offset,
        what,
        value,
        expected,
    }
}
// ---------------------------------------------------------------------------------------------
// The one pass of checks.
// ---------------------------------------------------------------------------------------------

/// Where the walk keeps what it found: offsets for a view, nothing for a check.
pub trait Record {
    /// How many definitions and instances are recorded so far.
    fn counts(&self) -> (usize, usize);
    /// A counter definition at `at`.
    fn definition(&mut self, at: usize);
    /// Room for `n` more instances.
    fn reserve_instances(&mut self, n: usize);
    /// An instance definition at `at`.
    fn instance(&mut self, at: usize);
}

/// [`check_object`]'s: keeps nothing.
impl Record for () {
    #[inline]
    fn counts(&self) -> (usize, usize) {
        (0, 0)
    }
    #[inline]
    fn definition(&mut self, _: usize) {}
    #[inline]
    fn reserve_instances(&mut self, _: usize) {}
    #[inline]
    fn instance(&mut self, _: usize) {}
}

/// [`DataView`]'s: the offsets of every definition and instance, in order.
#[derive(Debug, Clone, Default)]
pub struct Offsets {
    pub(crate) definitions: Vec<usize>,
    pub(crate) instances: Vec<usize>,
}

impl Offsets {
    /// Drops what was recorded after `counts` (a [`Record::counts`]).
    pub fn truncate(&mut self, counts: (usize, usize)) {
        self.definitions.truncate(counts.0);
        self.instances.truncate(counts.1);
    }

    /// Adds `by` to every offset recorded after `counts`: what was recorded in a part of the
    /// bytes now at `by` in a bigger buffer.
    pub fn shift(&mut self, counts: (usize, usize), by: usize) {
        for at in self.definitions[counts.0..]
            .iter_mut()
            .chain(&mut self.instances[counts.1..])
        {
            *at += by;
        }
    }
}

impl Record for Offsets {
    #[inline]
    fn counts(&self) -> (usize, usize) {
        (self.definitions.len(), self.instances.len())
    }
    #[inline]
    fn definition(&mut self, at: usize) {
        self.definitions.push(at);
    }
    #[inline]
    fn reserve_instances(&mut self, n: usize) {
        self.instances.reserve(n);
    }
    #[inline]
    fn instance(&mut self, at: usize) {
        self.instances.push(at);
    }
}

/// One checked object: where it and its parts are.
#[derive(Debug, Clone)]
pub struct ObjectEntry {
    /// Offset of the PERF_OBJECT_TYPE.
    pub offset: usize,
    /// Its counter definitions in [`DataView::definitions`].
    pub(crate) definitions: Range<usize>,
    /// Its instances in [`DataView::instances`].
    pub(crate) instances: Range<usize>,
    /// For an object without instances, the offset of its counter block.
    pub(crate) block: Option<usize>,
}

impl ObjectEntry {
    /// The entry of the same object moved `by` bytes further (see [`Offsets::shift`]).
    pub fn shifted(self, by: usize) -> ObjectEntry {
        ObjectEntry {
            offset: self.offset + by,
            block: self.block.map(|b| b + by),
            ..self
        }
    }
}

/// What the values of every counter block of an object must satisfy, from its definitions.
struct Needs {
    /// The largest `CounterOffset + CounterSize`: a block at least this long holds every value.
    end: u64,
    /// Whether some counter is UTF-16 text, checked in every block.
    utf16_text: bool,
}

/// The `PERF_OBJECT_TYPE` at `offset` with its lengths checked, and where the object ends.
fn check_object_header(
    bytes: &[u8],
    offset: usize,
    limit: usize,
) -> Result<(&PerfObjectType, usize), DecodeError> {
    let limit = limit.min(bytes.len());
    let obj: &PerfObjectType = view(bytes, offset, limit, "PERF_OBJECT_TYPE")?;
    let total = obj.total_byte_length.get() as usize;
    let def_len = obj.definition_length.get() as usize;
    let hdr_len = obj.header_length.get() as usize;
    if total < OBJECT_HEADER {
        return Err(field(
            offset,
            "PERF_OBJECT_TYPE.TotalByteLength",
            total as i64,
            "must be at least 64",
        ));
    }
    let end = span(
        offset,
        total as u64,
        limit,
        offset,
        "PERF_OBJECT_TYPE (TotalByteLength)",
    )?;
    if hdr_len < OBJECT_HEADER || hdr_len > def_len {
        return Err(field(
            offset + 8,
            "PERF_OBJECT_TYPE.HeaderLength",
            hdr_len as i64,
            "must be at least 64 and at most DefinitionLength",
        ));
    }
    if def_len > total {
        return Err(field(
            offset + 4,
            "PERF_OBJECT_TYPE.DefinitionLength",
            def_len as i64,
            "must be at most TotalByteLength",
        ));
    }
    Ok((obj, end))
}

/// The `num_counters` counter definitions from `at` to `defs_end`, each `ByteLength` long,
/// recorded in `rec`: what every counter block must hold.
fn walk_definitions<R: Record>(
    bytes: &[u8],
    mut at: usize,
    defs_end: usize,
    num_counters: u32,
    rec: &mut R,
) -> Result<Needs, DecodeError> {
    let mut needs = Needs {
        end: 0,
        utf16_text: false,
    };
    for _ in 0..num_counters {
        let def: &PerfCounterDefinition = view(bytes, at, defs_end, "PERF_COUNTER_DEFINITION")?;
        let byte_length = def.byte_length.get();
        if (byte_length as usize) < COUNTER_DEFINITION {
            return Err(field(
                at,
                "PERF_COUNTER_DEFINITION.ByteLength",
                byte_length.into(),
                "must be at least 40",
            ));
        }
        let next = span(
            at,
            byte_length.into(),
            defs_end,
            at,
            "PERF_COUNTER_DEFINITION (ByteLength)",
        )?;
        rec.definition(at);
        let value_end = u64::from(def.counter_offset.get()) + u64::from(def.counter_size.get());
        needs.end = needs.end.max(value_end);
        needs.utf16_text |= is_utf16_text(def.counter_type.get());
        at = next;
    }
    Ok(needs)
}

/// Checks the PERF_OBJECT_TYPE at `offset` (ending by `limit`) and everything in it, recording
/// its definitions and instances in `rec`; returns the entry and the next object's offset.
pub fn walk_object<R: Record>(
    bytes: &[u8],
    offset: usize,
    limit: usize,
    rec: &mut R,
) -> Result<(ObjectEntry, usize), DecodeError> {
    let (definitions_before, instances_before) = rec.counts();
    let (obj, end) = check_object_header(bytes, offset, limit)?;
    let (def_len, hdr_len) = (
        obj.definition_length.get() as usize,
        obj.header_length.get() as usize,
    );
    let defs_end = offset + def_len;
    let num_counters = obj.num_counters.get();
    let needs = walk_definitions(bytes, offset + hdr_len, defs_end, num_counters, rec)?;
    let first_def = offset + hdr_len;

    let instances_start = instances_before;
    let mut instances_end = instances_before;
    let mut block = None;
    let mut at = defs_end;
    let num_instances = obj.num_instances.get();
    if num_instances == PERF_NO_INSTANCES {
        check_block(bytes, at, end, first_def, num_counters, &needs)?;
        block = Some(at);
    } else if num_instances < 0 {
        return Err(field(
            offset + 40,
            "PERF_OBJECT_TYPE.NumInstances",
            num_instances.into(),
            "must be -1 (PERF_NO_INSTANCES) or a count",
        ));
    } else {
        // Each instance takes at least 28 bytes (definition and block), which bounds what an
        // untrusted NumInstances can make us reserve.
        let most = (end - at) / (INSTANCE_DEFINITION + COUNTER_BLOCK);
        rec.reserve_instances((num_instances as usize).min(most));
        let code_page = obj.code_page.get();
        for _ in 0..num_instances {
            let block_at = check_instance(bytes, at, end, code_page)?;
            rec.instance(at);
            at = check_block(bytes, block_at, end, first_def, num_counters, &needs)?;
            instances_end += 1;
        }
    }
    Ok((
        ObjectEntry {
            offset,
            definitions: definitions_before..definitions_before + num_counters as usize,
            instances: instances_start..instances_end,
            block,
        },
        end,
    ))
}

/// Whether a counter type is text in UTF-16 (checked as such in every block).
#[inline]
fn is_utf16_text(counter_type: u32) -> bool {
    counter_type & PERF_TYPE_MASK == PERF_TYPE_TEXT && counter_type & PERF_TEXT_ASCII == 0
}

/// Checks the instance definition at `at` (ending by `limit`) and its name; returns the offset
/// of its counter block.
#[inline]
fn check_instance(
    bytes: &[u8],
    at: usize,
    limit: usize,
    code_page: u32,
) -> Result<usize, DecodeError> {
    let inst: &PerfInstanceDefinition = view(bytes, at, limit, "PERF_INSTANCE_DEFINITION")?;
    let byte_length = inst.byte_length.get();
    if (byte_length as usize) < INSTANCE_DEFINITION {
        return Err(field(
            at,
            "PERF_INSTANCE_DEFINITION.ByteLength",
            byte_length.into(),
            "must be at least 24",
        ));
    }
    let def_end = span(
        at,
        byte_length.into(),
        limit,
        at,
        "PERF_INSTANCE_DEFINITION (ByteLength)",
    )?;
    let name_length = inst.name_length.get();
    if name_length != 0 {
        let name_start = span(
            at,
            inst.name_offset.get().into(),
            def_end,
            at + 16,
            "instance name (NameOffset)",
        )?;
        let name_end = span(
            name_start,
            name_length.into(),
            def_end,
            at + 20,
            "instance name (NameLength)",
        )?;
        if code_page == 0 {
            check_utf16(bytes, name_start, name_end, "instance name")?;
        }
    }
    Ok(def_end)
}

/// Checks the PERF_COUNTER_BLOCK at `at` (ending by `limit`) and the values in it of the
/// `num_counters` definitions from `first_def`; returns the offset after the block.
#[inline]
fn check_block(
    bytes: &[u8],
    at: usize,
    limit: usize,
    first_def: usize,
    num_counters: u32,
    needs: &Needs,
) -> Result<usize, DecodeError> {
    let block: &PerfCounterBlock = view(bytes, at, limit, "PERF_COUNTER_BLOCK")?;
    let byte_length = block.byte_length.get();
    if (byte_length as usize) < COUNTER_BLOCK {
        return Err(field(
            at,
            "PERF_COUNTER_BLOCK.ByteLength",
            byte_length.into(),
            "must be at least 4",
        ));
    }
    let end = span(
        at,
        byte_length.into(),
        limit,
        at,
        "PERF_COUNTER_BLOCK (ByteLength)",
    )?;
    // The usual case: the block holds every value and no value is UTF-16 text, so no value can
    // fail. Else every value in order, as the definitions list them.
    if u64::from(byte_length) < needs.end || needs.utf16_text {
        check_values(bytes, at, end, first_def, num_counters)?;
    }
    Ok(end)
}

/// Checks every value of a counter block (`bytes[at..end]`) in definition order: in the block,
/// and UTF-16 text valid.
#[cold]
fn check_values(
    bytes: &[u8],
    at: usize,
    end: usize,
    first_def: usize,
    num_counters: u32,
) -> Result<(), DecodeError> {
    let mut def_at = first_def;
    for _ in 0..num_counters {
        // Checked by the walk of the definitions.
        let Some(def) = checked::<PerfCounterDefinition>(bytes, def_at) else {
            break;
        };
        def_at += def.byte_length.get() as usize;
        let start = span(
            at,
            def.counter_offset.get().into(),
            end,
            at,
            "counter value (CounterOffset)",
        )?;
        let stop = span(
            start,
            def.counter_size.get().into(),
            end,
            start,
            "counter value (CounterSize)",
        )?;
        if is_utf16_text(def.counter_type.get()) {
            // UTF-16 text: whole units only.
            let text_end = stop - (stop - start) % 2;
            check_utf16(bytes, start, text_end, "text counter")?;
        }
    }
    Ok(())
}

/// Checks the PERF_OBJECT_TYPE at `offset` exactly as [`crate::snapshot::decode_object`] does — it accepts
/// what `decode_object` accepts and fails with the same error otherwise — without building
/// the instances and values; returns the offset of the next object.
///
/// The collector validates every provider's output with this, at a fraction of a decode's
/// cost.
///
/// # Examples
///
/// ```
/// let object = prfdata_testkit::sample::sample_object(1848);
/// assert_eq!(prfdata_wire::view::check_object(&object, 0, object.len())?, object.len());
/// assert!(prfdata_wire::view::check_object(&object[..100], 0, 100).is_err());
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn check_object(bytes: &[u8], offset: usize, limit: usize) -> Result<usize, DecodeError> {
    walk_object(bytes, offset, limit, &mut ()).map(|(_, next)| next)
}

// ---------------------------------------------------------------------------------------------
// The views.
// ---------------------------------------------------------------------------------------------

/// A checked PERF_DATA_BLOCK, read in place (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::DataBlockWriter;
/// use prfdata_wire::view::DataView;
/// let bytes = DataBlockWriter::new("host", 0).finish();
/// let view = DataView::parse(&bytes)?;
/// assert_eq!(view.system_name(), "host");
/// assert_eq!(view.object_count(), 0);
/// assert!(DataView::parse(&bytes[..40]).is_err());
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub struct DataView<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) header: &'a PerfDataBlock,
    /// The system name's bytes.
    pub(crate) name: Range<usize>,
    pub(crate) objects: Cow<'a, [ObjectEntry]>,
    /// Offsets of every object's counter definitions, object after object.
    pub(crate) definitions: Cow<'a, [usize]>,
    /// Offsets of every object's instance definitions, object after object.
    pub(crate) instances: Cow<'a, [usize]>,
}

impl std::fmt::Debug for DataView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataView")
            .field("bytes", &self.bytes.len())
            .field("objects", &self.objects.len())
            .field("instances", &self.instances.len())
            .finish()
    }
}

impl<'a> DataView<'a> {
    /// Checks `bytes` as a whole PERF_DATA_BLOCK (bytes after `TotalByteLength` are ignored)
    /// and returns the view of it.
    ///
    /// # Errors
    ///
    /// The first thing wrong, with its offset: what [`crate::snapshot::decode`] returns for the
    /// same bytes.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        const WHAT: &str = "PERF_DATA_BLOCK";
        let header: &PerfDataBlock = view(bytes, 0, bytes.len(), WHAT)?;
        if header.signature.map(|u| u.get()) != SIGNATURE {
            return Err(DecodeError::Signature { offset: 0 });
        }
        if header.little_endian.get() != 1 {
            return Err(field(
                8,
                "PERF_DATA_BLOCK.LittleEndian",
                header.little_endian.get().into(),
                "must be 1",
            ));
        }
        let total = span(
            0,
            header.total_byte_length.get().into(),
            bytes.len(),
            20,
            "PERF_DATA_BLOCK (TotalByteLength)",
        )?;
        let header_len = header.header_length.get() as usize;
        if header_len < core::mem::size_of::<PerfDataBlock>() || header_len > total {
            return Err(field(
                24,
                "PERF_DATA_BLOCK.HeaderLength",
                header.header_length.get().into(),
                "must be at least 88 and at most TotalByteLength",
            ));
        }
        let name_start = header.system_name_offset.get() as usize;
        if name_start > header_len {
            return Err(field(
                84,
                "PERF_DATA_BLOCK.SystemNameOffset",
                header.system_name_offset.get().into(),
                "must lie inside the header (HeaderLength)",
            ));
        }
        let name_end = span(
            name_start,
            header.system_name_length.get().into(),
            header_len,
            80,
            "system name (SystemNameLength)",
        )?;
        check_utf16(bytes, name_start, name_end, "system name")?;

        let mut offsets = Offsets::default();
        let mut objects = Vec::new();
        let mut offset = header_len;
        for _ in 0..header.num_object_types.get() {
            let (entry, next) = walk_object(bytes, offset, total, &mut offsets)?;
            objects.push(entry);
            offset = next;
        }
        Ok(DataView {
            bytes,
            header,
            name: name_start..name_end,
            objects: Cow::Owned(objects),
            definitions: Cow::Owned(offsets.definitions),
            instances: Cow::Owned(offsets.instances),
        })
    }

    /// `Version`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let bytes = DataBlockWriter::new("h", 0).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// assert_eq!((view.version(), view.revision()), (1, 1));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn version(&self) -> u32 {
        self.header.version.get()
    }

    /// `Revision`. See [`DataView::version`].
    pub fn revision(&self) -> u32 {
        self.header.revision.get()
    }

    /// `TotalByteLength`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let bytes = DataBlockWriter::new("abcd", 0).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// assert_eq!((view.total_byte_length(), view.header_length()), (104, 104));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn total_byte_length(&self) -> u32 {
        self.header.total_byte_length.get()
    }

    /// `HeaderLength`.
    pub fn header_length(&self) -> u32 {
        self.header.header_length.get()
    }

    /// `DefaultObject`: the name index of the default object, or -1.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let bytes = DataBlockWriter::new("h", 0).finish();
    /// assert_eq!(prfdata_wire::view::DataView::parse(&bytes)?.default_object(), -1);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn default_object(&self) -> i32 {
        self.header.default_object.get()
    }

    /// `PerfTime`: the high-resolution clock at collection.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let bytes = DataBlockWriter::new("h", 0).times(Default::default(), 5, 1000, 7).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// assert_eq!((view.perf_time(), view.perf_freq()), (5, 1000));
    /// assert_eq!(view.perf_time_100nsec(), 7);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn perf_time(&self) -> i64 {
        self.header.perf_time.get()
    }

    /// `PerfFreq`: ticks per second of [`perf_time`](Self::perf_time).
    pub fn perf_freq(&self) -> i64 {
        self.header.perf_freq.get()
    }

    /// `PerfTime100nSec`: the collection time in 100 ns units since 1601 (FILETIME).
    pub fn perf_time_100nsec(&self) -> i64 {
        self.header.perf_time_100nsec.get()
    }

    /// The system name, decoded now.
    pub fn system_name(&self) -> String {
        utf16_lossy(self.bytes.get(self.name.clone()).unwrap_or_default())
    }

    /// The number of objects (`NumObjectTypes`).
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// The objects, in order.
    #[inline]
    pub fn objects(&self) -> impl Iterator<Item = ObjectView<'_>> + '_ {
        (0..self.objects.len()).filter_map(|i| self.object(i))
    }

    /// The object at position `index`, if there is one.
    #[inline]
    pub fn object(&self, index: usize) -> Option<ObjectView<'_>> {
        object_view(
            self.bytes,
            &self.objects,
            &self.definitions,
            &self.instances,
            index,
        )
    }
}

/// A PERF_DATA_BLOCK that has passed every check of [`DataView::parse`], kept with where its
/// parts are: [`view`](Self::view) reads it again without a second pass of checks. The
/// collector returns one (the collector's checked Collect): it checked each
/// provider's output as it came, which is what the view's pass would check again.
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::DataBlockWriter;
/// use prfdata_wire::view::CheckedBlock;
/// let out = prfdata_testkit::sample::sample_object(1848);
/// let block = CheckedBlock::parse(DataBlockWriter::new("box", 0).objects(&out, 1).finish())?;
/// let view = block.view();
/// assert_eq!(view.object(0).unwrap().instance(1).unwrap().name(), "beta");
/// assert!(CheckedBlock::parse(vec![0; 40]).is_err());
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CheckedBlock {
    pub(crate) checked: Checked,
    pub(crate) name: Range<usize>,
}

/// Bytes whose objects passed [`walk_object`], with where those objects and their parts are:
/// what a [`CheckedBlock`] and an owned [`DataSnapshot`] keep, read again in place with no
/// new pass of checks ([`Checked::object`]).
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub(crate) bytes: Vec<u8>,
    pub(crate) objects: Vec<ObjectEntry>,
    pub(crate) offsets: Offsets,
}

impl Checked {
    /// The object at position `index`, read in place.
    #[inline]
    pub(crate) fn object(&self, index: usize) -> Option<ObjectView<'_>> {
        object_view(
            &self.bytes,
            &self.objects,
            &self.offsets.definitions,
            &self.offsets.instances,
            index,
        )
    }
}

impl CheckedBlock {
    /// Checks `bytes` as [`DataView::parse`] does and keeps them with what the check found.
    ///
    /// # Errors
    ///
    /// What [`DataView::parse`] returns for the same bytes.
    pub fn parse(bytes: Vec<u8>) -> Result<Self, DecodeError> {
        let view = DataView::parse(&bytes)?;
        let name = view.name.clone();
        let objects = view.objects.into_owned();
        let offsets = Offsets {
            definitions: view.definitions.into_owned(),
            instances: view.instances.into_owned(),
        };
        Ok(CheckedBlock {
            checked: Checked {
                bytes,
                objects,
                offsets,
            },
            name,
        })
    }

    /// A block whose header the caller wrote (with the system name at `name`) and whose
    /// objects it checked with [`walk_object`], recording `objects` and `offsets`.
    pub fn from_checked(
        bytes: Vec<u8>,
        name: Range<usize>,
        objects: Vec<ObjectEntry>,
        offsets: Offsets,
    ) -> Self {
        CheckedBlock {
            checked: Checked {
                bytes,
                objects,
                offsets,
            },
            name,
        }
    }

    /// The checked parts without the header: what an owned snapshot keeps.
    pub(crate) fn into_checked(self) -> Checked {
        self.checked
    }

    /// The view of the block, with no new pass of checks.
    pub fn view(&self) -> DataView<'_> {
        // Both constructors hold a whole header: `parse` checked it, the collector wrote it.
        let c = &self.checked;
        let header = checked::<PerfDataBlock>(&c.bytes, 0)
            .expect("a CheckedBlock starts with a whole PERF_DATA_BLOCK header");
        DataView {
            bytes: &c.bytes,
            header,
            name: self.name.clone(),
            objects: Cow::Borrowed(&c.objects),
            definitions: Cow::Borrowed(&c.offsets.definitions),
            instances: Cow::Borrowed(&c.offsets.instances),
        }
    }

    /// The PERF_DATA_BLOCK's bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let bytes = DataBlockWriter::new("h", 0).finish();
    /// let block = prfdata_wire::view::CheckedBlock::parse(bytes.clone())?;
    /// assert_eq!(block.bytes(), &bytes[..]);
    /// assert_eq!(block.into_bytes(), bytes);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn bytes(&self) -> &[u8] {
        &self.checked.bytes
    }

    /// The PERF_DATA_BLOCK's bytes, kept. See [`CheckedBlock::bytes`].
    pub fn into_bytes(self) -> Vec<u8> {
        self.checked.bytes
    }
}

/// One PERF_OBJECT_TYPE of a [`DataView`].
#[derive(Clone, Copy)]
pub struct ObjectView<'v> {
    pub(crate) bytes: &'v [u8],
    pub(crate) header: &'v PerfObjectType,
    pub(crate) entry: &'v ObjectEntry,
    pub(crate) definitions: &'v [usize],
    pub(crate) instances: &'v [usize],
}

impl std::fmt::Debug for ObjectView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectView")
            .field("offset", &self.entry.offset)
            .field("name_index", &self.name_index())
            .field("counters", &self.definitions.len())
            .field("instances", &self.instances.len())
            .finish()
    }
}

impl<'v> ObjectView<'v> {
    /// Offset of the PERF_OBJECT_TYPE from the start of the input.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap();
    /// assert_eq!(object.offset(), view.header_length() as usize);
    /// assert_eq!((object.name_index(), object.num_instances()), (1848, 2));
    /// assert!(object.has_instances() && object.values().is_none());
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn offset(&self) -> usize {
        self.entry.offset
    }

    /// `ObjectNameTitleIndex`. See [`ObjectView::offset`].
    pub fn name_index(&self) -> u32 {
        self.header.object_name_title_index.get()
    }

    /// `ObjectHelpTitleIndex`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap();
    /// let data = &prfdata_wire::snapshot::decode(&bytes)?.objects[0];
    /// assert_eq!((data.help_index, data.detail_level), (object.help_index(), object.detail_level()));
    /// assert_eq!((data.default_counter, data.code_page), (object.default_counter(), object.code_page()));
    /// assert_eq!((data.perf_time, data.perf_freq), (object.perf_time(), object.perf_freq()));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn help_index(&self) -> u32 {
        self.header.object_help_title_index.get()
    }

    /// `DetailLevel` (`PERF_DETAIL_*`).
    pub fn detail_level(&self) -> u32 {
        self.header.detail_level.get()
    }

    /// `DefaultCounter`: index into the counters, or -1.
    pub fn default_counter(&self) -> i32 {
        self.header.default_counter.get()
    }

    /// `NumInstances` as written: -1 (`PERF_NO_INSTANCES`) or the instance count.
    pub fn num_instances(&self) -> i32 {
        self.header.num_instances.get()
    }

    /// Whether the object has instances (`NumInstances` is not `PERF_NO_INSTANCES`).
    pub fn has_instances(&self) -> bool {
        self.num_instances() != PERF_NO_INSTANCES
    }

    /// `CodePage`: 0 for UTF-16 instance names.
    pub fn code_page(&self) -> u32 {
        self.header.code_page.get()
    }

    /// `PerfTime`: the object's timer, for object-timer counters.
    pub fn perf_time(&self) -> i64 {
        self.header.perf_time.get()
    }

    /// `PerfFreq`.
    pub fn perf_freq(&self) -> i64 {
        self.header.perf_freq.get()
    }

    /// The number of counter definitions.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap();
    /// assert_eq!(object.num_counters(), 3);
    /// assert_eq!(object.counters().filter(|c| c.is_base()).count(), 1);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn num_counters(&self) -> usize {
        self.definitions.len()
    }

    /// The counter definitions, in order.
    #[inline]
    pub fn counters(&self) -> impl Iterator<Item = CounterView<'v>> + 'v {
        let this = *self;
        (0..self.definitions.len()).filter_map(move |i| this.counter(i))
    }

    /// The counter definition at position `index`, if there is one.
    #[inline]
    pub fn counter(&self, index: usize) -> Option<CounterView<'v>> {
        let def: &PerfCounterDefinition = checked(self.bytes, *self.definitions.get(index)?)?;
        let int = IntKind::of(def.counter_type.get(), def.counter_size.get());
        Some(CounterView {
            def,
            index,
            object: *self,
            offset: def.counter_offset.get(),
            int,
            wide_end: match int {
                IntKind::None => usize::MAX,
                IntKind::Dword | IntKind::Large => {
                    (def.counter_offset.get() as usize).saturating_add(8)
                }
            },
            mask: int.mask(),
        })
    }

    /// The number of instances (0 for an object without instances).
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap();
    /// assert_eq!(object.instance_count(), 2);
    /// let names: Vec<String> = object.instances().map(|i| i.name()).collect();
    /// assert_eq!(names, ["alpha", "beta"]);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// The instances, in order.
    #[inline]
    pub fn instances(&self) -> impl Iterator<Item = InstanceView<'v>> + 'v {
        let this = *self;
        (0..self.instances.len()).filter_map(move |i| this.instance(i))
    }

    /// The instance at position `index`, if there is one.
    #[inline]
    pub fn instance(&self, index: usize) -> Option<InstanceView<'v>> {
        let at = *self.instances.get(index)?;
        let def: &PerfInstanceDefinition = checked(self.bytes, at)?;
        let block_at = at.checked_add(def.byte_length.get() as usize)?;
        Some(InstanceView {
            bytes: self.bytes,
            at,
            def,
            code_page: self.code_page(),
            values: block(self.bytes, block_at)?,
        })
    }

    /// The counter block of an object without instances; `None` for one with instances.
    #[inline]
    pub fn values(&self) -> Option<BlockView<'v>> {
        block(self.bytes, self.entry.block?)
    }

    /// The plan for reading this object's values in bulk ([`BlockView::ints`]): made once per
    /// object (one allocation), used for every instance's block.
    pub fn plan(&self) -> ValuePlan {
        let slots: Vec<Slot> = self
            .counters()
            .map(|c| Slot {
                offset: if c.int == IntKind::None { 0 } else { c.offset },
                mask: c.mask,
                int: c.int,
            })
            .collect();
        let end = slots
            .iter()
            .map(|s| (s.offset as usize).saturating_add(8))
            .max()
            .unwrap_or(0);
        let dense = slots.first().map(|s| s.offset as usize).filter(|&first| {
            slots
                .iter()
                .enumerate()
                .all(|(i, s)| s.int == IntKind::Large && s.offset as usize == first + 8 * i)
        });
        ValuePlan { slots, end, dense }
    }
}

/// The object at position `index` of checked parts (a [`DataView`]'s or a [`Checked`]'s).
#[inline]
fn object_view<'v>(
    bytes: &'v [u8],
    objects: &'v [ObjectEntry],
    definitions: &'v [usize],
    instances: &'v [usize],
    index: usize,
) -> Option<ObjectView<'v>> {
    let entry = objects.get(index)?;
    Some(ObjectView {
        bytes,
        header: checked(bytes, entry.offset)?,
        entry,
        definitions: definitions.get(entry.definitions.clone())?,
        instances: instances.get(entry.instances.clone())?,
    })
}

/// The checked counter block at `at`: its whole `ByteLength`.
#[inline]
fn block(bytes: &[u8], at: usize) -> Option<BlockView<'_>> {
    let header: &PerfCounterBlock = checked(bytes, at)?;
    let end = at.checked_add(header.byte_length.get() as usize)?;
    Some(BlockView {
        bytes: bytes.get(at..end)?,
    })
}

/// One PERF_COUNTER_DEFINITION of an [`ObjectView`].
#[derive(Clone, Copy)]
pub struct CounterView<'v> {
    pub(crate) def: &'v PerfCounterDefinition,
    pub(crate) index: usize,
    pub(crate) object: ObjectView<'v>,
    /// `CounterOffset`, read once: what [`BlockView::int`] needs, at hand.
    pub(crate) offset: u32,
    /// How [`BlockView::int`] reads the value.
    int: IntKind,
    /// For an integer, `CounterOffset + 8`: a block at least this long lets [`BlockView::int`]
    /// load 8 bytes and mask them (`mask`), with no branch on the kind. `usize::MAX` for
    /// anything else (the slow path, which says `None`).
    pub(crate) wide_end: usize,
    /// [`IntKind::mask`] of `int`.
    pub(crate) mask: u64,
}

/// How a counter's raw integer is read (winperf.h `PERF_SIZE_*`, text excluded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IntKind {
    /// A DWORD, zero-extended.
    Dword,
    /// A LARGE_INTEGER.
    Large,
    /// Not an integer: text, or another size.
    None,
}

impl IntKind {
    /// The bits of an 8-byte little-endian load that are the value.
    fn mask(self) -> u64 {
        match self {
            IntKind::Dword => 0xFFFF_FFFF,
            IntKind::Large => u64::MAX,
            IntKind::None => 0,
        }
    }

    fn of(counter_type: u32, size: u32) -> IntKind {
        match size {
            _ if counter_type & PERF_TYPE_MASK == PERF_TYPE_TEXT => IntKind::None,
            4 => IntKind::Dword,
            8 => IntKind::Large,
            _ => IntKind::None,
        }
    }
}

impl std::fmt::Debug for CounterView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.to_def(), f)
    }
}

impl CounterView<'_> {
    /// The counter's position among its object's definitions.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let c = view.object(0).unwrap().counter(1).unwrap();
    /// assert_eq!((c.index(), c.base(), c.base_of()), (1, Some(2), None));
    /// assert_eq!(c.to_def(), prfdata_wire::snapshot::decode(&bytes)?.objects[0].counters[1]);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// `CounterNameTitleIndex` (0 for a base).
    pub fn name_index(&self) -> u32 {
        self.def.counter_name_title_index.get()
    }

    /// `CounterType`.
    pub fn counter_type(&self) -> u32 {
        self.def.counter_type.get()
    }

    /// `CounterSize`.
    pub fn size(&self) -> u32 {
        self.def.counter_size.get()
    }

    /// `CounterOffset` within the counter block.
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// Whether the type is a base (the denominator of the counter before it).
    pub fn is_base(&self) -> bool {
        winperf::is_base(self.counter_type())
    }

    /// For a counter that needs a base, the position of that base (the definition right after
    /// it, if it is a base); see [`CounterDef::base`](crate::snapshot::CounterDef::base).
    pub fn base(&self) -> Option<usize> {
        let next = self.object.counter(self.index + 1)?;
        (winperf::required_base(self.counter_type()).is_some() && next.is_base())
            .then_some(self.index + 1)
    }

    /// For a base, the position of the counter before it that it is the base of.
    pub fn base_of(&self) -> Option<usize> {
        let before = self.object.counter(self.index.checked_sub(1)?)?;
        (before.base() == Some(self.index)).then_some(self.index - 1)
    }
}

/// One PERF_INSTANCE_DEFINITION of an [`ObjectView`], with its counter block.
#[derive(Clone, Copy)]
pub struct InstanceView<'v> {
    pub(crate) bytes: &'v [u8],
    pub(crate) at: usize,
    pub(crate) def: &'v PerfInstanceDefinition,
    pub(crate) code_page: u32,
    pub(crate) values: BlockView<'v>,
}

impl std::fmt::Debug for InstanceView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceView")
            .field("offset", &self.at)
            .field("name", &self.name())
            .finish()
    }
}

impl<'v> InstanceView<'v> {
    /// The name as written (without its NUL), decoded now: UTF-16 for code page 0, else 8-bit
    /// text (lossily).
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let beta = view.object(0).unwrap().instance(1).unwrap();
    /// assert_eq!(beta.name(), "beta");
    /// assert_eq!((beta.parent_object_title_index(), beta.parent_object_instance()), (0, 0));
    /// assert_eq!(beta.unique_id(), -1);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn name(&self) -> String {
        let raw = self.name_bytes();
        if self.code_page == 0 {
            utf16_lossy(raw)
        } else {
            ascii_lossy(raw)
        }
    }

    /// The name's bytes (`NameOffset`, `NameLength`), empty if it has none.
    fn name_bytes(&self) -> &'v [u8] {
        let length = self.def.name_length.get() as usize;
        if length == 0 {
            return &[];
        }
        let start = self.at.saturating_add(self.def.name_offset.get() as usize);
        self.bytes
            .get(start..start.saturating_add(length))
            .unwrap_or_default()
    }

    /// `UniqueID`, or -1 (`PERF_NO_UNIQUE_ID`).
    pub fn unique_id(&self) -> i32 {
        self.def.unique_id.get()
    }

    /// `ParentObjectTitleIndex`: the name index of the parent's object, or 0.
    pub fn parent_object_title_index(&self) -> u32 {
        self.def.parent_object_title_index.get()
    }

    /// `ParentObjectInstance`: the parent's position among its object's instances.
    pub fn parent_object_instance(&self) -> u32 {
        self.def.parent_object_instance.get()
    }

    /// The instance's counter block.
    #[inline]
    pub fn values(&self) -> BlockView<'v> {
        self.values
    }
}

/// A checked PERF_COUNTER_BLOCK: every value of its object's definitions lies inside it.
#[derive(Clone, Copy, Debug)]
pub struct BlockView<'v> {
    /// The whole block, `ByteLength` bytes from the PERF_COUNTER_BLOCK.
    pub(crate) bytes: &'v [u8],
}

impl<'v> BlockView<'v> {
    /// The bytes of `counter`'s value (empty only if it has size 0).
    #[inline]
    pub(crate) fn value_bytes(&self, counter: &CounterView<'_>) -> &'v [u8] {
        let start = counter.offset() as usize;
        self.bytes
            .get(start..start.saturating_add(counter.size() as usize))
            .unwrap_or_default()
    }

    /// `counter`'s raw integer: a DWORD zero-extended or a LARGE_INTEGER (see
    /// [`crate::snapshot`]'s sign rules); `None` for text and other sizes. Allocates nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap();
    /// let beta = object.instance(1).unwrap().values();
    /// assert_eq!(beta.int(&object.counter(1).unwrap()), Some(-5));
    /// assert_eq!(beta.raw(&object.counter(1).unwrap()), prfdata_wire::snapshot::RawValue::Int(-5));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    #[inline]
    pub fn int(&self, counter: &CounterView<'_>) -> Option<i64> {
        let start = counter.offset as usize;
        // The usual case: 8 bytes from the value's start lie in the block (a DWORD's other 4
        // are masked off), one load and no branch on the kind.
        if let Some(raw) = self
            .bytes
            .get(..counter.wide_end)
            .and_then(|b| b.last_chunk::<8>())
        {
            return Some((u64::from_le_bytes(*raw) & counter.mask) as i64);
        }
        match counter.int {
            IntKind::Large => {
                let raw: [u8; 8] = self.bytes.get(start..start + 8)?.try_into().ok()?;
                Some(i64::from_le_bytes(raw))
            }
            IntKind::Dword => {
                let raw: [u8; 4] = self.bytes.get(start..start + 4)?.try_into().ok()?;
                Some(u32::from_le_bytes(raw).into())
            }
            IntKind::None => None,
        }
    }

    /// Every value of the block in definition order, read by `plan` (its object's
    /// [`ObjectView::plan`]): what [`BlockView::int`] returns for each counter, with one 8-byte
    /// load and a mask per value when the block is as long as the plan needs (the usual case,
    /// checked once per block) and `int`'s checked reads otherwise. Allocates nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap();
    /// let plan = object.plan();
    /// let beta: Vec<Option<i64>> = object.instance(1).unwrap().values().ints(&plan).collect();
    /// assert_eq!(beta, [Some(0xFFFF_FFFF), Some(-5), Some(1)]);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    #[inline]
    pub fn ints<'p>(&self, plan: &'p ValuePlan) -> Ints<'v, 'p> {
        Ints {
            // The fast path's promise: every slot's 8 bytes lie in `whole`.
            whole: self.bytes.get(..plan.end),
            bytes: self.bytes,
            slots: plan.slots.iter(),
            dense: plan.dense,
        }
    }
}

/// How to read every value of an object's counter blocks: one (offset, mask) slot per counter
/// definition, made once per object by [`ObjectView::plan`] and used by [`BlockView::ints`].
#[derive(Clone, Debug)]
pub struct ValuePlan {
    slots: Vec<Slot>,
    /// The largest `offset + 8` of the slots: a block at least this long holds every slot's
    /// 8-byte load.
    end: usize,
    /// When every counter is a LARGE_INTEGER and each lies right after the one before (the
    /// usual layout, prfdata's), where the first one starts: the values are then one run of
    /// 8-byte words, read with no per-value lookup.
    dense: Option<usize>,
}

/// One counter of a [`ValuePlan`].
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// `CounterOffset`; 0 for a value that is not an integer (its load is masked to nothing).
    offset: u32,
    /// [`IntKind::mask`]: 0 for a value that is not an integer.
    mask: u64,
    /// How the value is read when the block is shorter than the plan's `end`.
    int: IntKind,
}

// Four slots a cache line: the plan of 16 counters is four lines.
const _: () = assert!(core::mem::size_of::<Slot>() == 16);

impl Slot {
    /// The value read with `int`'s checks (a block shorter than the plan's end).
    #[cold]
    fn read_checked(&self, bytes: &[u8]) -> Option<i64> {
        let start = self.offset as usize;
        match self.int {
            IntKind::Large => {
                let raw: [u8; 8] = bytes.get(start..start.checked_add(8)?)?.try_into().ok()?;
                Some(i64::from_le_bytes(raw))
            }
            IntKind::Dword => {
                let raw: [u8; 4] = bytes.get(start..start.checked_add(4)?)?.try_into().ok()?;
                Some(u32::from_le_bytes(raw).into())
            }
            IntKind::None => None,
        }
    }
}

/// The values of one counter block, in definition order: see [`BlockView::ints`].
#[derive(Clone, Debug)]
pub struct Ints<'v, 'p> {
    /// The block's first `plan.end` bytes, if it has them.
    whole: Option<&'v [u8]>,
    /// The whole block.
    bytes: &'v [u8],
    slots: std::slice::Iter<'p, Slot>,
    /// [`ValuePlan::dense`].
    dense: Option<usize>,
}

impl Ints<'_, '_> {
    /// The value of `slot` in `whole` (the block's first `plan.end` bytes).
    #[inline(always)]
    fn read_fast(whole: &[u8], slot: &Slot) -> Option<i64> {
        let start = slot.offset as usize;
        debug_assert!(start + 8 <= whole.len());
        // SAFETY: `whole` is `plan.end` bytes long (`BlockView::ints` took it with `get`), and
        // `ObjectView::plan` made `end` at least every slot's `offset + 8`; the slot comes from
        // that same plan (`Ints` borrows it), so the 8 bytes at `start` lie inside `whole`.
        // `[u8; 8]` has alignment 1, so the read is aligned.
        let raw = unsafe { whole.as_ptr().add(start).cast::<[u8; 8]>().read() };
        // A mask of 0 is a value that is not an integer.
        (slot.mask != 0).then_some((u64::from_le_bytes(raw) & slot.mask) as i64)
    }
}

impl Iterator for Ints<'_, '_> {
    type Item = Option<i64>;

    #[inline]
    fn next(&mut self) -> Option<Option<i64>> {
        let slot = self.slots.next()?;
        Some(match self.whole {
            Some(whole) => Self::read_fast(whole, slot),
            None => slot.read_checked(self.bytes),
        })
    }

    /// The whole block in one loop (`sum`, `collect`, `for_each` and the like come here),
    /// the block's length checked once before it.
    #[inline]
    fn fold<B, F: FnMut(B, Option<i64>) -> B>(self, init: B, mut f: F) -> B {
        // Dense: the slots still to come are one run of words from the next one's offset.
        let run = self
            .dense
            .zip(self.slots.as_slice().first())
            .and_then(|(_, next)| {
                let start = next.offset as usize;
                let words = self.slots.len().checked_mul(8)?;
                self.whole?.get(start..start.checked_add(words)?)
            });
        if let Some(run) = run {
            let (words, _) = run.as_chunks::<8>();
            return words
                .iter()
                .fold(init, |acc, word| f(acc, Some(i64::from_le_bytes(*word))));
        }
        match self.whole {
            Some(whole) => self
                .slots
                .fold(init, |acc, slot| f(acc, Self::read_fast(whole, slot))),
            None => {
                let bytes = self.bytes;
                self.slots
                    .fold(init, |acc, slot| f(acc, slot.read_checked(bytes)))
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl ExactSizeIterator for Ints<'_, '_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::DataBlockWriter;
    use crate::snapshot::RawValue;
    use crate::utf16::{has_no_surrogate, is_utf16};

    /// Real collections (the fuzz corpus: the demo, and the rich map with text counters, objects
    /// without instances and parents) and the sample object in a block.
    fn blocks() -> Vec<Vec<u8>> {
        let sample = DataBlockWriter::new("unit-host", 0)
            .objects(&prfdata_testkit::sample::sample_object(1848), 1)
            .finish();
        vec![
            sample,
            include_bytes!("../../fuzz/corpus/decode/demo-global.raw").to_vec(),
            include_bytes!("../../fuzz/corpus/decode/demo-worker.raw").to_vec(),
            include_bytes!("../../fuzz/corpus/decode/rich-costly.raw").to_vec(),
            include_bytes!("../../fuzz/corpus/decode/rich-global.raw").to_vec(),
        ]
    }

    /// The view's readers agree on `bytes`: the parse, the snapshot that keeps the bytes, a
    /// copy one byte further on, and each object checked alone (same data, same error). What
    /// they read from the real collections is pinned by the golden files (tests/it/golden.rs).
    fn agrees(bytes: &[u8]) -> Result<(), proptest::test_runner::TestCaseError> {
        let view = DataView::parse(bytes).map(|v| v.to_snapshot());
        let owned = crate::snapshot::decode_owned(bytes.to_vec());
        proptest::prop_assert_eq!(&owned, &view);
        let mut shifted = vec![0u8; bytes.len() + 1];
        shifted[1..].copy_from_slice(bytes);
        let moved = DataView::parse(&shifted[1..]).map(|v| v.to_snapshot());
        proptest::prop_assert_eq!(&moved, &view);
        for offset in [0, 88, 96, 104, 112] {
            let limit = bytes.len();
            proptest::prop_assert_eq!(
                crate::snapshot::decode_object(bytes, offset, limit).map(|(_, next)| next),
                check_object(bytes, offset, limit)
            );
        }
        Ok(())
    }

    #[test]
    fn the_utf16_check_agrees_with_std() {
        let cases: [&[u16]; 9] = [
            &[0x61, 0x62],
            &[0xD83D, 0xDE00, 0x61],
            &[0xD83D],
            &[0xDE00],
            &[0xD83D, 0x61],
            &[0xD83D, 0],
            &[0x61, 0, 0xDE00],
            &[0xDBFF, 0xDFFF],
            &[0xFFFF, 0xE000, 0xD7FF],
        ];
        for units in cases {
            let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
            let std = char::decode_utf16(units.iter().copied().take_while(|&u| u != 0))
                .all(|c| c.is_ok());
            assert_eq!(is_utf16(&bytes), std, "{units:x?}");
        }
    }

    /// Every integer value of `view`, read by [`BlockView::int`], is what [`BlockView::raw`]
    /// reads, and `int` is `None` exactly where `raw` is not an integer.
    fn ints_agree(view: &DataView<'_>) {
        for object in view.objects() {
            let counters: Vec<_> = object.counters().collect();
            let blocks = object
                .values()
                .into_iter()
                .chain(object.instances().map(|i| i.values()));
            let plan = object.plan();
            for values in blocks {
                for c in &counters {
                    let raw = match values.raw(c) {
                        RawValue::Int(v) => Some(v),
                        _ => None,
                    };
                    assert_eq!(values.int(c), raw, "counter {}", c.index());
                }
                let one_by_one: Vec<Option<i64>> = counters.iter().map(|c| values.int(c)).collect();
                let bulk: Vec<Option<i64>> = values.ints(&plan).collect();
                assert_eq!(bulk, one_by_one, "ints reads what int reads");
                // `fold` (the one loop, or the run of words of a dense plan), from the start
                // and after each number of values already taken one by one.
                for taken in 0..=counters.len() {
                    let mut ints = values.ints(&plan);
                    let mut read: Vec<Option<i64>> = ints.by_ref().take(taken).collect();
                    read = ints.fold(read, |mut read, v| {
                        read.push(v);
                        read
                    });
                    assert_eq!(read, one_by_one, "fold after {taken}");
                }
            }
        }
    }

    #[test]
    fn the_real_collections_have_dense_plans_and_the_sample_has_not() {
        // `int_reads_what_raw_reads` then covers both of `BlockView::ints`'s fast paths.
        let dense: Vec<bool> = blocks()
            .iter()
            .map(|b| {
                let view = DataView::parse(b).unwrap();
                let any = view.objects().any(|o| o.plan().dense.is_some());
                any
            })
            .collect();
        assert!(!dense[0], "the sample mixes DWORDs and LARGE_INTEGERs");
        assert!(
            dense[1..].iter().any(|&d| d),
            "prfdata lays counters out densely"
        );
    }

    #[test]
    fn int_reads_what_raw_reads() {
        for bytes in blocks() {
            ints_agree(&DataView::parse(&bytes).unwrap());
            // One byte further on: a DWORD's 8-byte load is then unaligned too.
            let mut shifted = vec![0u8; bytes.len() + 1];
            shifted[1..].copy_from_slice(&bytes);
            ints_agree(&DataView::parse(&shifted[1..]).unwrap());
        }
    }

    #[test]
    fn a_dword_last_in_its_block_and_one_followed_by_bytes_read_right() {
        // The sample's first counter is a DWORD inside its block: its 8-byte load takes 4 more
        // bytes, masked off. Then the same block with that DWORD moved to the block's last 4
        // bytes, where no 8-byte load fits (the slow path).
        let bytes = &blocks()[0];
        let view = DataView::parse(bytes).unwrap();
        let object = view.object(0).unwrap();
        let dword = object.counter(0).unwrap();
        assert_eq!(dword.size(), 4);
        let beta = object.instance(1).unwrap().values();
        assert_eq!(beta.int(&dword), Some(0xFFFF_FFFF));
        assert_eq!(beta.int(&object.counter(1).unwrap()), Some(-5));
        let block_len = beta.bytes.len();
        let def_at = object.definitions[0];
        let mut moved = bytes.clone();
        moved[def_at + 36..def_at + 40].copy_from_slice(&(block_len as u32 - 4).to_le_bytes());
        let view = DataView::parse(&moved).unwrap();
        ints_agree(&view);
        let object = view.object(0).unwrap();
        let dword = object.counter(0).unwrap();
        let last = object.instance(1).unwrap().values();
        let tail: [u8; 4] = last.bytes[block_len - 4..].try_into().unwrap();
        assert_eq!(last.int(&dword), Some(u32::from_le_bytes(tail).into()));
    }

    #[test]
    fn a_checked_block_views_what_a_parse_finds() {
        for bytes in blocks() {
            let parsed = DataView::parse(&bytes).unwrap().to_snapshot();
            let block = CheckedBlock::parse(bytes.clone()).unwrap();
            assert_eq!(block.view().to_snapshot(), parsed);
            assert_eq!(block.into_bytes(), bytes);
        }
    }

    #[test]
    fn a_surrogate_in_any_unit_of_a_word_is_found() {
        for len in 0..12 {
            for at in 0..len {
                for high in [0xD8u8, 0xDB, 0xDC, 0xDF] {
                    let mut bytes = vec![0x41u8; len * 2];
                    bytes[at * 2 + 1] = high;
                    assert!(!has_no_surrogate(&bytes), "{len} units, at {at}");
                }
                let mut near = vec![0x41u8; len * 2];
                near[at * 2 + 1] = 0xD7;
                near[at * 2] = 0xFF;
                assert!(has_no_surrogate(&near), "{len} units, D7FF at {at}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn the_surrogate_scan_agrees_with_a_unit_by_unit_one(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![proptest::num::u8::ANY, 0xD8u8..0xE0],
                0..40,
            ),
        ) {
            let each = bytes.chunks_exact(2).all(|u| u[1] & 0xF8 != 0xD8);
            proptest::prop_assert_eq!(has_no_surrogate(&bytes), each);
        }

        #[test]
        fn a_word_overwritten_fails_or_decodes_alike(
            which in 0usize..5,
            at in 0usize..4096,
            value in proptest::num::u32::ANY,
        ) {
            let mut bytes = blocks().swap_remove(which);
            let at = at % (bytes.len() - 3);
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            agrees(&bytes)?;
        }

        #[test]
        fn a_small_word_overwritten_fails_or_decodes_alike(
            which in 0usize..5,
            at in 0usize..1024,
            value in 0u32..300,
        ) {
            // Small values hit lengths and offsets that still fit.
            let mut bytes = blocks().swap_remove(which);
            let at = (at * 4) % (bytes.len() - 3);
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            agrees(&bytes)?;
        }

        #[test]
        fn a_byte_overwritten_fails_or_decodes_alike(
            which in 0usize..5,
            at in 0usize..4096,
            value in proptest::num::u8::ANY,
        ) {
            let mut bytes = blocks().swap_remove(which);
            let at = at % bytes.len();
            bytes[at] = value;
            agrees(&bytes)?;
        }

        #[test]
        fn the_utf16_check_agrees_with_std_on_any_units(
            units in proptest::collection::vec(proptest::num::u16::ANY, 0..12),
        ) {
            let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
            let std = char::decode_utf16(units.iter().copied().take_while(|&u| u != 0))
                .all(|c| c.is_ok());
            proptest::prop_assert_eq!(is_utf16(&bytes), std);
        }
    }
}

//! A zero-copy view of PERF_DATA_BLOCK bytes: the decoder's one pass of checks, then objects,
//! counter definitions, instances and values read in place, names decoded only when asked for.
//!
//! [`DataView::parse`] checks the whole block once, exactly as [`crate::snapshot`] always has
//! (every offset, length, count, name and text value, with the same [`DecodeError`] at the
//! same offset) and keeps only where things are: an [`ObjectRun`], one `Vec` of
//! counter-definition offsets and one of instance offsets for the whole block, one entry per
//! object. Nothing is allocated per instance or per counter value. The views hand out
//! [`crate::winperf`]'s little-endian, unaligned `PERF_OBJECT_TYPE` and the rest as they lie
//! in the input (valid at any alignment: a Windows provider's objects are only
//! DWORD-aligned), so a field read is one load; the views themselves add only what needs
//! computing: names, values, bases and positions.
//!
//! A [`DataSnapshot`](crate::snapshot::DataSnapshot) is this view owned: the bytes kept with
//! the same index, its objects read in place ([`crate::snapshot::decode_owned`], or
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
    PerfObjectType, INSTANCE_DEFINITION, OBJECT_HEADER, PERF_NO_INSTANCES, PERF_TEXT_ASCII,
    PERF_TYPE_MASK, PERF_TYPE_TEXT, SIGNATURE,
};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::DecodeError;
use crate::utf16::{ascii_lossy, check_utf16, utf16_lossy};

/// `PERF_COUNTER_BLOCK`'s size: the least `ByteLength`.
const COUNTER_BLOCK: usize = core::mem::size_of::<PerfCounterBlock>();

/// How the errors name a structure that starts with its own `ByteLength`
/// ([`with_length`]).
struct Named {
    /// The structure.
    what: &'static str,
    /// Its `ByteLength` field.
    field: &'static str,
    /// What `ByteLength` must be.
    least: &'static str,
    /// The bytes `ByteLength` spans.
    span: &'static str,
}

/// The [`Named`] of winperf.h's `$name`, at least `$least` bytes long.
macro_rules! named {
    ($name:literal, $least:literal) => {
        Named {
            what: $name,
            field: concat!($name, ".ByteLength"),
            least: concat!("must be at least ", $least),
            span: concat!($name, " (ByteLength)"),
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Checked reads.
// ---------------------------------------------------------------------------------------------

/// Returns `Err($err)` unless `$cond` holds: the one form of every check below.
macro_rules! ensure {
    ($cond:expr, $err:expr) => {
        if !$cond {
            return Err($err);
        }
    };
}

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
    ensure!(available >= need, truncated());
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

/// The `T` at `at`, ending by `limit`, that starts with its own `ByteLength` (a counter
/// definition, an instance definition, a counter block): that length at least `T`'s size and
/// ending by `limit`. Returns the `T` and the offset `ByteLength` bytes on.
#[inline]
fn with_length<'a, T: FromBytes + IntoBytes + KnownLayout + Immutable + Unaligned>(
    bytes: &'a [u8],
    at: usize,
    limit: usize,
    named: &Named,
) -> Result<(&'a T, usize), DecodeError> {
    let value: &T = view(bytes, at, limit, named.what)?;
    let first = value.as_bytes().first_chunk::<4>().copied();
    let byte_length = u32::from_le_bytes(first.unwrap_or_default());
    let least = byte_length as usize >= core::mem::size_of::<T>();
    ensure!(
        least,
        field(at, named.field, byte_length.into(), named.least)
    );
    Ok((value, span(at, byte_length.into(), limit, at, named.span)?))
}

/// `start + len` as an end offset that must not pass `limit` (an error names `at`).
#[inline]
fn span(
    start: usize,
    len: u64,
    limit: usize,
    at: usize,
    what: &'static str,
) -> Result<usize, DecodeError> {
    let available = limit.saturating_sub(start) as u64;
    ensure!(
        len <= available,
        DecodeError::Truncated {
            offset: at,
            what,
            need: len,
            available,
        }
    );
    Ok(start + len as usize)
}

/// A field at `offset` whose `value` is not what it must be (`expected`).
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

/// Objects checked where they lie, one after another, kept with where their parts are: what
/// [`DataView::parse`] finds in a block, and what the collector finds in each provider's
/// Collect output as it comes ([`ObjectRun::check`]), so that the block it builds from them
/// ([`DataView::from_checked`]) is read with no second pass of checks.
///
/// # Examples
///
/// ```
/// use prfdata_wire::view::ObjectRun;
/// let object = prfdata_testkit::sample::sample_object(1848);
/// let mut run = ObjectRun::default();
/// assert_eq!(run.check(&object, 0, object.len())?, object.len());
/// let names: Vec<String> = run.objects(&object).flat_map(|o| o.instances()).map(|i| i.name()).collect();
/// assert_eq!(names, ["alpha", "beta"]);
/// assert!(run.check(&object[..100], 0, 100).is_err());
/// assert_eq!(run.count(), 1, "a refused object leaves the run as it was");
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ObjectRun {
    objects: Vec<ObjectEntry>,
    /// Offsets of every object's counter definitions, object after object.
    definitions: Vec<usize>,
    /// Offsets of every object's instance definitions, object after object.
    instances: Vec<usize>,
}

/// One checked object of an [`ObjectRun`]: where it and its parts are.
#[derive(Debug, Clone)]
struct ObjectEntry {
    /// Offset of the PERF_OBJECT_TYPE.
    offset: usize,
    /// Its counter definitions in [`ObjectRun::definitions`].
    definitions: Range<usize>,
    /// Its instances in [`ObjectRun::instances`].
    instances: Range<usize>,
    /// For an object without instances, the offset of its counter block.
    block: Option<usize>,
}

/// What the values of every counter block of an object must satisfy, from its definitions.
#[derive(Default)]
struct Needs {
    /// The largest `CounterOffset + CounterSize`: a block at least this long holds every value.
    end: u64,
    /// Whether some counter is UTF-16 text, checked in every block.
    utf16_text: bool,
}

impl ObjectRun {
    /// Checks the PERF_OBJECT_TYPE at `offset` of `bytes` (ending by `limit`) and everything
    /// in it, exactly as [`DataView::parse`] checks each object of a block, and keeps it;
    /// returns the next object's offset (`offset + TotalByteLength`).
    ///
    /// # Errors
    ///
    /// The first thing wrong, with its offset in `bytes`; the run is then left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// let object = prfdata_testkit::sample::sample_object(1848);
    /// let mut run = prfdata_wire::view::ObjectRun::default();
    /// let err = run.check(&object, 0, 63).unwrap_err();
    /// assert_eq!(err.to_string(), "truncated PERF_OBJECT_TYPE at offset 0: needs 64 bytes, 63 available");
    /// assert_eq!(run.count(), 0);
    /// ```
    pub fn check(
        &mut self,
        bytes: &[u8],
        offset: usize,
        limit: usize,
    ) -> Result<usize, DecodeError> {
        let count = self.objects.len();
        let walked = self.walk(bytes, offset, limit);
        if walked.is_err() {
            self.truncate(count);
        }
        walked
    }

    /// The number of objects checked.
    pub fn count(&self) -> usize {
        self.objects.len()
    }

    /// Forgets every object after the first `count`.
    pub fn truncate(&mut self, count: usize) {
        let count = count.min(self.objects.len());
        let ends = self.objects[..count]
            .last()
            .map_or((0, 0), |o| (o.definitions.end, o.instances.end));
        self.objects.truncate(count);
        self.definitions.truncate(ends.0);
        self.instances.truncate(ends.1);
    }

    /// Moves every object after the first `count` `by` bytes further: they were checked in a
    /// part of the bytes that now lies at `by` in a bigger buffer.
    pub fn shift(&mut self, count: usize, by: usize) {
        let Some(first) = self.objects.get(count) else {
            return;
        };
        let (definitions, instances) = (first.definitions.start, first.instances.start);
        for at in self.definitions[definitions..]
            .iter_mut()
            .chain(&mut self.instances[instances..])
        {
            *at += by;
        }
        for object in &mut self.objects[count..] {
            object.offset += by;
            object.block = object.block.map(|b| b + by);
        }
    }

    /// The objects, read in place from `bytes`, the bytes they were checked in.
    pub fn objects<'v>(&'v self, bytes: &'v [u8]) -> impl Iterator<Item = ObjectView<'v>> + 'v {
        (0..self.objects.len()).filter_map(move |i| self.object(bytes, i))
    }

    /// Object `index`, read in place from `bytes` (the bytes it was checked in).
    #[inline]
    pub(crate) fn object<'v>(&'v self, bytes: &'v [u8], index: usize) -> Option<ObjectView<'v>> {
        let entry = self.objects.get(index)?;
        Some(ObjectView {
            bytes,
            header: checked(bytes, entry.offset)?,
            entry,
            definitions: self.definitions.get(entry.definitions.clone())?,
            instances: self.instances.get(entry.instances.clone())?,
        })
    }

    /// [`check`](Self::check) without the rollback: what is kept of a refused object is
    /// left for the caller to drop.
    fn walk(&mut self, bytes: &[u8], offset: usize, limit: usize) -> Result<usize, DecodeError> {
        let (obj, end) = check_object_header(bytes, offset, limit)?;
        let first_def = offset + obj.header_length.get() as usize;
        let defs_end = offset + obj.definition_length.get() as usize;
        let num_counters = obj.num_counters.get();
        let definitions = self.definitions.len();
        let needs = self.walk_definitions(bytes, first_def, defs_end, num_counters)?;
        let instances = self.instances.len();
        let block = match obj.num_instances.get() {
            PERF_NO_INSTANCES => {
                check_block(bytes, defs_end, end, first_def, num_counters, &needs)?;
                Some(defs_end)
            }
            n => {
                ensure!(
                    n >= 0,
                    field(
                        offset + 40,
                        "PERF_OBJECT_TYPE.NumInstances",
                        n.into(),
                        "must be -1 (PERF_NO_INSTANCES) or a count",
                    )
                );
                // Each instance takes at least 28 bytes (definition and block), which bounds
                // what an untrusted NumInstances can make us reserve.
                let most = (end - defs_end) / (INSTANCE_DEFINITION + COUNTER_BLOCK);
                self.instances.reserve((n as usize).min(most));
                let mut at = defs_end;
                for _ in 0..n {
                    let block_at = check_instance(bytes, at, end, obj.code_page.get())?;
                    self.instances.push(at);
                    at = check_block(bytes, block_at, end, first_def, num_counters, &needs)?;
                }
                None
            }
        };
        self.objects.push(ObjectEntry {
            offset,
            definitions: definitions..self.definitions.len(),
            instances: instances..self.instances.len(),
            block,
        });
        Ok(end)
    }

    /// The `num_counters` counter definitions from `at` to `defs_end`, each `ByteLength` long,
    /// kept: what every counter block must hold.
    fn walk_definitions(
        &mut self,
        bytes: &[u8],
        mut at: usize,
        defs_end: usize,
        num_counters: u32,
    ) -> Result<Needs, DecodeError> {
        let mut needs = Needs::default();
        for _ in 0..num_counters {
            let named = named!("PERF_COUNTER_DEFINITION", 40);
            let (def, next) = with_length::<PerfCounterDefinition>(bytes, at, defs_end, &named)?;
            self.definitions.push(at);
            let value_end = u64::from(def.counter_offset.get()) + u64::from(def.counter_size.get());
            needs.end = needs.end.max(value_end);
            needs.utf16_text |= is_utf16_text(def.counter_type.get());
            at = next;
        }
        Ok(needs)
    }
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
    ensure!(
        total >= OBJECT_HEADER,
        field(
            offset,
            "PERF_OBJECT_TYPE.TotalByteLength",
            total as i64,
            "must be at least 64",
        )
    );
    let what = "PERF_OBJECT_TYPE (TotalByteLength)";
    let end = span(offset, total as u64, limit, offset, what)?;
    ensure!(
        hdr_len >= OBJECT_HEADER && hdr_len <= def_len,
        field(
            offset + 8,
            "PERF_OBJECT_TYPE.HeaderLength",
            hdr_len as i64,
            "must be at least 64 and at most DefinitionLength",
        )
    );
    ensure!(
        def_len <= total,
        field(
            offset + 4,
            "PERF_OBJECT_TYPE.DefinitionLength",
            def_len as i64,
            "must be at most TotalByteLength",
        )
    );
    Ok((obj, end))
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
    let named = named!("PERF_INSTANCE_DEFINITION", 24);
    let (inst, def_end) = with_length::<PerfInstanceDefinition>(bytes, at, limit, &named)?;
    let name_length = inst.name_length.get();
    if name_length != 0 {
        let (offset, what) = (inst.name_offset.get(), "instance name (NameOffset)");
        let name_start = span(at, offset.into(), def_end, at + 16, what)?;
        let what = "instance name (NameLength)";
        let name_end = span(name_start, name_length.into(), def_end, at + 20, what)?;
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
    let named = named!("PERF_COUNTER_BLOCK", 4);
    let (_, end) = with_length::<PerfCounterBlock>(bytes, at, limit, &named)?;
    // The usual case: the block holds every value and no value is UTF-16 text, so no value can
    // fail. Else every value in order, as the definitions list them.
    if ((end - at) as u64) < needs.end || needs.utf16_text {
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
        let what = "counter value (CounterOffset)";
        let start = span(at, def.counter_offset.get().into(), end, at, what)?;
        let what = "counter value (CounterSize)";
        let stop = span(start, def.counter_size.get().into(), end, start, what)?;
        if is_utf16_text(def.counter_type.get()) {
            // UTF-16 text: whole units only.
            let text_end = stop - (stop - start) % 2;
            check_utf16(bytes, start, text_end, "text counter")?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The views.
// ---------------------------------------------------------------------------------------------

/// A checked PERF_DATA_BLOCK, read in place (see the [module docs](self)): over borrowed bytes
/// ([`parse`](Self::parse)), or owning them ([`parse_owned`](Self::parse_owned), and the
/// collector's checked Collect, which checked each provider's output as it came:
/// [`from_checked`](Self::from_checked)), read again with no second pass of checks.
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
#[derive(Clone)]
pub struct DataView<'a> {
    pub(crate) bytes: Cow<'a, [u8]>,
    /// The PERF_DATA_BLOCK header.
    header: PerfDataBlock,
    /// The system name's bytes.
    pub(crate) name: Range<usize>,
    pub(crate) run: Cow<'a, ObjectRun>,
}

impl std::fmt::Debug for DataView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataView")
            .field("bytes", &self.bytes.len())
            .field("objects", &self.run.objects.len())
            .field("instances", &self.run.instances.len())
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
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let mut bytes = DataBlockWriter::new("h", 0).finish();
    /// bytes[8] = 0; // LittleEndian
    /// let err = prfdata_wire::view::DataView::parse(&bytes).unwrap_err();
    /// assert_eq!(err.to_string(), "PERF_DATA_BLOCK.LittleEndian at offset 8 is 0: must be 1");
    /// ```
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let header: &PerfDataBlock = view(bytes, 0, bytes.len(), "PERF_DATA_BLOCK")?;
        ensure!(
            header.signature.map(|u| u.get()) == SIGNATURE,
            DecodeError::Signature { offset: 0 }
        );
        let little_endian = header.little_endian.get();
        ensure!(
            little_endian == 1,
            field(
                8,
                "PERF_DATA_BLOCK.LittleEndian",
                little_endian.into(),
                "must be 1"
            )
        );
        let total_len = header.total_byte_length.get().into();
        let what = "PERF_DATA_BLOCK (TotalByteLength)";
        let total = span(0, total_len, bytes.len(), 20, what)?;
        let header_len = header.header_length.get() as usize;
        ensure!(
            header_len >= core::mem::size_of::<PerfDataBlock>() && header_len <= total,
            field(
                24,
                "PERF_DATA_BLOCK.HeaderLength",
                header_len as i64,
                "must be at least 88 and at most TotalByteLength",
            )
        );
        let name_start = header.system_name_offset.get() as usize;
        ensure!(
            name_start <= header_len,
            field(
                84,
                "PERF_DATA_BLOCK.SystemNameOffset",
                name_start as i64,
                "must lie inside the header (HeaderLength)",
            )
        );
        let name_len = header.system_name_length.get().into();
        let what = "system name (SystemNameLength)";
        let name_end = span(name_start, name_len, header_len, 80, what)?;
        check_utf16(bytes, name_start, name_end, "system name")?;

        let mut run = ObjectRun::default();
        let mut offset = header_len;
        for _ in 0..header.num_object_types.get() {
            offset = run.walk(bytes, offset, total)?;
        }
        Ok(DataView {
            bytes: Cow::Borrowed(bytes),
            header: *header,
            name: name_start..name_end,
            run: Cow::Owned(run),
        })
    }

    /// The PERF_DATA_BLOCK header, as checked.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let bytes = DataBlockWriter::new("abcd", 0).times(Default::default(), 5, 1000, 7).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let header = view.header();
    /// assert_eq!((header.version.get(), header.revision.get()), (1, 1));
    /// assert_eq!((header.total_byte_length.get(), header.header_length.get()), (104, 104));
    /// assert_eq!(header.default_object.get(), -1);
    /// assert_eq!((header.perf_time.get(), header.perf_freq.get()), (5, 1000));
    /// assert_eq!(header.perf_time_100nsec.get(), 7);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn header(&self) -> &PerfDataBlock {
        &self.header
    }

    /// The system name, decoded now.
    pub fn system_name(&self) -> String {
        utf16_lossy(self.bytes.get(self.name.clone()).unwrap_or_default())
    }

    /// The number of objects (`NumObjectTypes`).
    pub fn object_count(&self) -> usize {
        self.run.objects.len()
    }

    /// The objects, in order.
    #[inline]
    pub fn objects(&self) -> impl Iterator<Item = ObjectView<'_>> + '_ {
        self.run.objects(&self.bytes)
    }

    /// The object at position `index`, if there is one.
    #[inline]
    pub fn object(&self, index: usize) -> Option<ObjectView<'_>> {
        self.run.object(&self.bytes, index)
    }

    /// The PERF_DATA_BLOCK's bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let bytes = DataBlockWriter::new("h", 0).finish();
    /// let view = prfdata_wire::view::DataView::parse_owned(bytes.clone())?;
    /// assert_eq!(view.bytes(), &bytes[..]);
    /// assert_eq!(view.into_bytes(), bytes);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The PERF_DATA_BLOCK's bytes, kept (a copy if the view borrows them).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes.into_owned()
    }
}

impl DataView<'static> {
    /// [`parse`](DataView::parse), keeping `bytes` in the view.
    ///
    /// # Errors
    ///
    /// What [`parse`](DataView::parse) returns for the same bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::DataBlockWriter;
    /// use prfdata_wire::view::DataView;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let view = DataView::parse_owned(DataBlockWriter::new("box", 0).objects(&out, 1).finish())?;
    /// assert_eq!(view.object(0).unwrap().instance(1).unwrap().name(), "beta");
    /// assert!(DataView::parse_owned(vec![0; 40]).is_err());
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn parse_owned(bytes: Vec<u8>) -> Result<Self, DecodeError> {
        let (name, run) = DataView::parse(&bytes).map(|v| (v.name, v.run.into_owned()))?;
        Ok(DataView::from_checked(bytes, name, run))
    }

    /// A block whose PERF_DATA_BLOCK header the caller wrote (with the system name at `name`)
    /// and whose objects it checked where they lie in `bytes`, as `run`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::DataBlockWriter;
    /// use prfdata_wire::view::{DataView, ObjectRun};
    /// let object = prfdata_testkit::sample::sample_object(1848);
    /// let out = object.clone();
    /// let bytes = DataBlockWriter::new("box", 0).objects(&out, 1).finish();
    /// let header = *DataView::parse(&bytes)?.header();
    /// // The object checked in the provider's output, then moved to where the block holds it.
    /// let mut run = ObjectRun::default();
    /// run.check(&object, 0, object.len())?;
    /// run.shift(0, header.header_length.get() as usize);
    /// let name = header.system_name_offset.get() as usize;
    /// let name = name..name + header.system_name_length.get() as usize;
    /// let view = DataView::from_checked(bytes.clone(), name, run);
    /// assert_eq!(view.system_name(), "box");
    /// assert_eq!(view.to_snapshot(), prfdata_wire::snapshot::decode(&bytes)?);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn from_checked(bytes: Vec<u8>, name: Range<usize>, run: ObjectRun) -> Self {
        let header = PerfDataBlock::read_from_prefix(&bytes)
            .map_or_else(|_| PerfDataBlock::default(), |(h, _)| h);
        DataView {
            bytes: Cow::Owned(bytes),
            header,
            name,
            run: Cow::Owned(run),
        }
    }
}

/// One PERF_OBJECT_TYPE of a [`DataView`].
#[derive(Clone, Copy)]
pub struct ObjectView<'v> {
    bytes: &'v [u8],
    header: &'v PerfObjectType,
    entry: &'v ObjectEntry,
    definitions: &'v [usize],
    instances: &'v [usize],
}

impl std::fmt::Debug for ObjectView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectView")
            .field("offset", &self.entry.offset)
            .field("name_index", &self.header.object_name_title_index.get())
            .field("counters", &self.definitions.len())
            .field("instances", &self.instances.len())
            .finish()
    }
}

impl<'v> ObjectView<'v> {
    /// The PERF_OBJECT_TYPE, as checked.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap().header();
    /// let data = &prfdata_wire::snapshot::decode(&bytes)?.objects[0];
    /// assert_eq!((object.object_name_title_index.get(), object.num_instances.get()), (1848, 2));
    /// assert_eq!((data.help_index, data.detail_level), (object.object_help_title_index.get(), object.detail_level.get()));
    /// assert_eq!((data.default_counter, data.code_page), (object.default_counter.get(), object.code_page.get()));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn header(&self) -> &'v PerfObjectType {
        self.header
    }

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
    /// assert_eq!(object.offset(), view.header().header_length.get() as usize);
    /// assert!(object.values().is_none(), "an object with instances has no block of its own");
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn offset(&self) -> usize {
        self.entry.offset
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
    /// assert_eq!(object.counters().filter(|c| c.base_of().is_some()).count(), 1);
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
        let offset = def.counter_offset.get();
        Some(CounterView {
            def,
            index,
            object: *self,
            offset,
            int,
            wide_end: match int {
                IntKind::None => usize::MAX,
                IntKind::Dword | IntKind::Large => (offset as usize).saturating_add(8),
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
            code_page: self.header.code_page.get(),
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
    def: &'v PerfCounterDefinition,
    index: usize,
    object: ObjectView<'v>,
    /// `CounterOffset`, read once: what [`BlockView::int`] needs, at hand.
    offset: u32,
    /// How [`BlockView::int`] reads the value.
    int: IntKind,
    /// For an integer, `CounterOffset + 8`: a block at least this long lets [`BlockView::int`]
    /// load 8 bytes and mask them (`mask`), with no test of the kind. `usize::MAX` for
    /// anything else (the slow path, which says `None`).
    wide_end: usize,
    /// [`IntKind::mask`] of `int`.
    mask: u64,
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

    /// The value at `start` of `bytes`, read this way; `None` if it does not lie in them.
    fn read(self, bytes: &[u8], start: usize) -> Option<i64> {
        match self {
            IntKind::Large => {
                let raw = bytes.get(start..start.checked_add(8)?)?;
                Some(i64::from_le_bytes(raw.try_into().ok()?))
            }
            IntKind::Dword => {
                let raw = bytes.get(start..start.checked_add(4)?)?;
                Some(u32::from_le_bytes(raw.try_into().ok()?).into())
            }
            IntKind::None => None,
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

impl<'v> CounterView<'v> {
    /// The PERF_COUNTER_DEFINITION, as checked.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let def = view.object(0).unwrap().counter(0).unwrap().def();
    /// assert_eq!((def.counter_name_title_index.get(), def.counter_type.get()), (1850, PERF_COUNTER_RAWCOUNT));
    /// assert_eq!(def.counter_size.get(), 4);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn def(&self) -> &'v PerfCounterDefinition {
        self.def
    }

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

    /// For a counter that needs a base, the position of that base (the definition right after
    /// it, if it is a base); see [`CounterDef::base`](crate::snapshot::CounterDef::base).
    pub fn base(&self) -> Option<usize> {
        let next = self.object.counter(self.index + 1)?;
        (winperf::required_base(self.def.counter_type.get()).is_some()
            && winperf::is_base(next.def.counter_type.get()))
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
    bytes: &'v [u8],
    at: usize,
    def: &'v PerfInstanceDefinition,
    code_page: u32,
    values: BlockView<'v>,
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
    /// The PERF_INSTANCE_DEFINITION, as checked.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("h", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let beta = view.object(0).unwrap().instance(1).unwrap().def();
    /// assert_eq!((beta.parent_object_title_index.get(), beta.parent_object_instance.get()), (0, 0));
    /// assert_eq!(beta.unique_id.get(), -1);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn def(&self) -> &'v PerfInstanceDefinition {
        self.def
    }

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
    /// assert_eq!(view.object(0).unwrap().instance(1).unwrap().name(), "beta");
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
    bytes: &'v [u8],
}

impl<'v> BlockView<'v> {
    /// The bytes of `counter`'s value (empty only if it has size 0).
    #[inline]
    pub(crate) fn value_bytes(&self, counter: &CounterView<'_>) -> &'v [u8] {
        let start = counter.offset as usize;
        self.bytes
            .get(start..start.saturating_add(counter.def.counter_size.get() as usize))
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
        // The usual case: 8 bytes from the value's start lie in the block (a DWORD's other 4
        // are masked off), one load and no test of the kind.
        if let Some(raw) = self
            .bytes
            .get(..counter.wide_end)
            .and_then(|b| b.last_chunk::<8>())
        {
            return Some((u64::from_le_bytes(*raw) & counter.mask) as i64);
        }
        counter.int.read(self.bytes, counter.offset as usize)
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
        self.int.read(bytes, self.offset as usize)
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
        // Each object of a block that parses checks alone where it lies, up to the next one.
        if let Ok(view) = DataView::parse(bytes) {
            let offsets: Vec<usize> = view.objects().map(|o| o.offset()).collect();
            for (k, &at) in offsets.iter().enumerate() {
                let next = ObjectRun::default().check(bytes, at, bytes.len());
                proptest::prop_assert!(next.is_ok(), "object {} at {}: {:?}", k, at, next);
                if let (Ok(next), Some(&following)) = (next, offsets.get(k + 1)) {
                    proptest::prop_assert_eq!(next, following);
                }
            }
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
        assert_eq!(dword.def().counter_size.get(), 4);
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
            let block = DataView::parse_owned(bytes.clone()).unwrap();
            assert_eq!(block.to_snapshot(), parsed);
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

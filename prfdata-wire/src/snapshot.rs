//! PERF_DATA_BLOCK bytes → a typed [`DataSnapshot`]: objects, counter definitions, instances
//! and raw values.
//!
//! The bytes are untrusted input (a file, another process's buffer): every offset and length
//! is checked before it is used, nothing is indexed unchecked, and every error names the byte
//! offset (from the start of the input) where the problem is. The checks are
//! [`crate::view`]'s, in one pass; the snapshot then keeps the bytes and reads them in place
//! (the same view, owned): its objects' header fields and counter definitions are copied,
//! but nothing is built per instance or per value, and an instance's name is decoded when it
//! is asked for. A snapshot therefore costs its bytes and one offset per instance (the view's
//! index), whatever the instances hold; [`decode_owned`] keeps the caller's buffer rather than
//! a copy of it.
//!
//! The layout, from winperf.h (x64 sizes):
//!
//! ```text
//! 0                PERF_DATA_BLOCK (88) + system name (UTF-16, NUL), padded: HeaderLength
//! HeaderLength     PERF_OBJECT_TYPE (HeaderLength, usually 64)     ┐
//!                  PERF_COUNTER_DEFINITION × NumCounters (ByteLength each) │ DefinitionLength
//!                  either PERF_COUNTER_BLOCK + values (NumInstances = -1)  ┘ │
//!                  or per instance: PERF_INSTANCE_DEFINITION + name,        │ TotalByteLength
//!                                   then PERF_COUNTER_BLOCK + values        ┘
//! next object at object start + TotalByteLength, NumObjectTypes times
//! ```
//!
//! # Raw values
//!
//! A value is read at `counter block + CounterOffset` with `CounterSize` bytes, which must lie
//! inside the block's `ByteLength`:
//! - 4 bytes (`PERF_SIZE_DWORD`): the DWORD zero-extended, as perflib's consumers read a DWORD
//!   (`PERF_COUNTER_RAWCOUNT` is unsigned; no winperf.h DWORD type is signed).
//! - 8 bytes (`PERF_SIZE_LARGE`): the LARGE_INTEGER as `i64`, as winperf.h declares it.
//! - 0 bytes (`PERF_SIZE_ZERO`): [`RawValue::Empty`].
//! - text types (`PERF_TYPE_TEXT`): the UTF-16 or ASCII text up to its first NUL.
//! - any other size: the bytes themselves.
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::build::DataBlockWriter;
//! use prfdata_wire::error::DecodeError;
//! use prfdata_wire::snapshot::decode;
//!
//! let bytes = DataBlockWriter::new("host", 0).finish();
//! let snap = decode(&bytes)?;
//! assert_eq!(snap.system_name, "host");
//! assert_eq!(prfdata_wire::snapshot::decode_owned(bytes.clone())?, snap);
//! assert!(snap.objects.is_empty());
//! assert!(matches!(decode(&bytes[..40]), Err(DecodeError::Truncated { offset: 0, .. })));
//! # Ok::<(), DecodeError>(())
//! ```

use std::sync::Arc;

use crate::utf16::{ascii_lossy, utf16_lossy};
use crate::winperf::{
    self, PerfInstanceDefinition, PERF_NO_INSTANCES, PERF_TEXT_ASCII, PERF_TYPE_MASK,
    PERF_TYPE_TEXT,
};

use crate::error::DecodeError;
use crate::view::{BlockView, CounterView, DataView, InstanceView, ObjectView};

/// A whole collection: the PERF_DATA_BLOCK header and its objects.
///
/// The header fields, the objects' header fields and their counter definitions are owned
/// copies; the instances and values stay where they are, in the collection's bytes, which the
/// snapshot keeps (shared by its objects, and by a clone): nothing is allocated per instance
/// or per value, and an instance's name is decoded when asked for (see the
/// [module docs](self)).
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::DataBlockWriter;
/// let bytes = DataBlockWriter::new("h", 0).times(Default::default(), 5, 1000, 7).finish();
/// let snap = prfdata_wire::snapshot::decode(&bytes)?;
/// assert_eq!((snap.perf_time, snap.perf_freq, snap.perf_time_100nsec), (5, 1000, 7));
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataSnapshot {
    /// `Version`.
    pub version: u32,
    /// `Revision`.
    pub revision: u32,
    /// `TotalByteLength`.
    pub total_byte_length: u32,
    /// `HeaderLength`.
    pub header_length: u32,
    /// `DefaultObject`: the name index of the default object, or -1.
    pub default_object: i32,
    /// `SystemTime` (UTC).
    pub system_time: SystemTimeFields,
    /// `PerfTime`: the high-resolution clock at collection.
    pub perf_time: i64,
    /// `PerfFreq`: ticks per second of `perf_time`.
    pub perf_freq: i64,
    /// `PerfTime100nSec`: the collection time in 100 ns units since 1601 (FILETIME).
    pub perf_time_100nsec: i64,
    /// The system name.
    pub system_name: String,
    /// The objects, in order.
    pub objects: Vec<ObjectData>,
}

impl DataSnapshot {
    /// `head` (a [`DataView::to_definitions`] of `checked`) with its objects' instances and
    /// values read in place from `checked`.
    pub(crate) fn in_place(mut head: DataSnapshot, checked: DataView<'static>) -> Self {
        let checked = Arc::new(checked);
        for (object, definition) in head.objects.iter_mut().enumerate() {
            let checked = Arc::clone(&checked);
            let kept = None;
            definition.data = Some(InPlace {
                checked,
                object,
                kept,
            });
        }
        head
    }

    /// The parent of `instance` as PDH finds it: the instance at `ParentObjectInstance` of the
    /// first object whose name index is `ParentObjectTitleIndex`, in this collection; `None`
    /// for an instance without a parent or one whose parent is not here.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// let alpha = snap.objects[0].instance(0).unwrap();
    /// assert!(snap.parent(&alpha).is_none());
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn parent(&self, instance: &Instance<'_>) -> Option<Instance<'_>> {
        let title = instance.def().parent_object_title_index.get();
        if title == 0 {
            return None;
        }
        self.objects
            .iter()
            .find(|o| o.name_index == title)?
            .instance(instance.parent_object_instance() as usize)
    }
}

/// winperf.h `SYSTEMTIME`, as decoded.
///
/// # Examples
///
/// ```
/// let t = prfdata_wire::snapshot::SystemTimeFields::default();
/// assert_eq!(t.to_string(), "0000-00-00 00:00:00.000");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[allow(missing_docs)]
pub struct SystemTimeFields {
    pub year: u16,
    pub month: u16,
    pub day_of_week: u16,
    pub day: u16,
    pub hour: u16,
    pub minute: u16,
    pub second: u16,
    pub milliseconds: u16,
}

impl std::fmt::Display for SystemTimeFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.milliseconds
        )
    }
}

impl From<winperf::SystemTime> for SystemTimeFields {
    fn from(t: winperf::SystemTime) -> Self {
        Self {
            year: t.year.get(),
            month: t.month.get(),
            day_of_week: t.day_of_week.get(),
            day: t.day.get(),
            hour: t.hour.get(),
            minute: t.minute.get(),
            second: t.second.get(),
            milliseconds: t.milliseconds.get(),
        }
    }
}

/// One PERF_OBJECT_TYPE with its counters and data: the header fields and counter definitions
/// owned, the instances and values read in place ([`ObjectData::instance`],
/// [`ObjectData::values`]).
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PERF_NO_INSTANCES;
/// let mut obj = prfdata_wire::snapshot::ObjectData::default();
/// obj.num_instances = PERF_NO_INSTANCES;
/// assert!(!obj.has_instances() && obj.instance_count() == 0 && obj.values().is_none());
/// ```
#[derive(Clone, Default)]
pub struct ObjectData {
    /// Offset of the PERF_OBJECT_TYPE from the start of the input.
    pub offset: usize,
    /// `ObjectNameTitleIndex`.
    pub name_index: u32,
    /// `ObjectHelpTitleIndex`.
    pub help_index: u32,
    /// `DetailLevel` (`PERF_DETAIL_*`).
    pub detail_level: u32,
    /// `DefaultCounter`: index into `counters`, or -1.
    pub default_counter: i32,
    /// `NumInstances` as written: -1 (`PERF_NO_INSTANCES`) or the instance count.
    pub num_instances: i32,
    /// `CodePage`: 0 for UTF-16 instance names.
    pub code_page: u32,
    /// `PerfTime`: the object's timer, for object-timer counters.
    pub perf_time: i64,
    /// `PerfFreq`.
    pub perf_freq: i64,
    /// The counter definitions, in order.
    pub counters: Vec<CounterDef>,
    /// Where the instances and values are; `None` for definitions only.
    data: Option<InPlace>,
}

/// The instances and values of an [`ObjectData`], in the collection's bytes.
#[derive(Clone)]
struct InPlace {
    checked: Arc<DataView<'static>>,
    /// The object's position in `checked`.
    object: usize,
    /// After [`ObjectData::keep_instances`]: the instances kept, in order, each with the
    /// parent position it now has; `None` for every instance as written.
    kept: Option<Arc<[Kept]>>,
}

/// One instance kept by [`ObjectData::keep_instances`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kept {
    /// Its position among the object's instances as written.
    instance: u32,
    /// Its `ParentObjectInstance` now.
    parent_object_instance: u32,
}

impl ObjectData {
    /// Whether the object has instances (`NumInstances` is not `PERF_NO_INSTANCES`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut obj = prfdata_wire::snapshot::ObjectData::default();
    /// obj.num_instances = 0;
    /// assert!(obj.has_instances());
    /// ```
    pub fn has_instances(&self) -> bool {
        self.num_instances != PERF_NO_INSTANCES
    }

    /// The object read in place, if it has data.
    #[inline]
    fn view(&self) -> Option<ObjectView<'_>> {
        let data = self.data.as_ref()?;
        data.checked.object(data.object)
    }

    /// The number of instances (0 for an object without instances).
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// let object = &snap.objects[0];
    /// assert_eq!(object.instance_count(), 2);
    /// let names: Vec<String> = object.instances().map(|i| i.name()).collect();
    /// assert_eq!(names, ["alpha", "beta"]);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn instance_count(&self) -> usize {
        match &self.data {
            None => 0,
            Some(InPlace { kept: Some(k), .. }) => k.len(),
            Some(_) => self.view().map_or(0, |v| v.instance_count()),
        }
    }

    /// The instance at position `index`, if there is one.
    #[inline]
    pub fn instance(&self, index: usize) -> Option<Instance<'_>> {
        let kept = self.data.as_ref()?.kept.as_deref();
        Instance::at(self.view()?, kept, index)
    }

    /// The instances, in order.
    pub fn instances(&self) -> impl Iterator<Item = Instance<'_>> + '_ {
        let kept = self.data.as_ref().and_then(|d| d.kept.as_deref());
        let object = self.view();
        (0..self.instance_count()).filter_map(move |i| Instance::at(object?, kept, i))
    }

    /// The values of an object without instances, one per counter; `None` for an object with
    /// instances.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// assert!(snap.objects[0].values().is_none());
    /// assert_eq!(snap.objects[0].instance(1).unwrap().values().int(1), Some(-5));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn values(&self) -> Option<Values<'_>> {
        let object = self.view()?;
        Some(Values {
            block: object.values()?,
            object,
        })
    }

    /// Keeps only the instances `kept` names, in its order: each a current position and the
    /// `ParentObjectInstance` it has from now on. What the collector's merge does to the objects
    /// it appends. `num_instances` is left to the caller.
    pub fn keep_instances(&mut self, kept: impl IntoIterator<Item = (usize, u32)>) {
        let Some(data) = self.data.as_mut() else {
            return;
        };
        let before = data.kept.clone();
        let kept: Arc<[Kept]> = kept
            .into_iter()
            .filter_map(|(i, parent_object_instance)| {
                let instance = match &before {
                    Some(k) => k.get(i)?.instance,
                    None => u32::try_from(i).ok()?,
                };
                Some(Kept {
                    instance,
                    parent_object_instance,
                })
            })
            .collect();
        data.kept = Some(kept);
    }

    /// The owned copy of every instance (names decoded, values read): for tests and small
    /// objects; a large one is better read through [`ObjectData::instances`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// assert_eq!(snap.objects[0].instance_data()[0].name, "alpha");
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn instance_data(&self) -> Vec<InstanceData> {
        self.instances().map(|i| i.to_data()).collect()
    }
}

impl std::fmt::Debug for ObjectData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectData")
            .field("offset", &self.offset)
            .field("name_index", &self.name_index)
            .field("help_index", &self.help_index)
            .field("detail_level", &self.detail_level)
            .field("default_counter", &self.default_counter)
            .field("num_instances", &self.num_instances)
            .field("code_page", &self.code_page)
            .field("perf_time", &self.perf_time)
            .field("perf_freq", &self.perf_freq)
            .field("counters", &self.counters)
            .field("values", &self.values().map(|v| v.to_vec()))
            .field("instances", &self.instance_data())
            .finish()
    }
}

/// Equal when everything a consumer reads is equal: header fields, definitions, and every
/// instance's fields, name and values (wherever the bytes are).
impl PartialEq for ObjectData {
    fn eq(&self, other: &Self) -> bool {
        self.offset == other.offset
            && self.name_index == other.name_index
            && self.help_index == other.help_index
            && self.detail_level == other.detail_level
            && self.default_counter == other.default_counter
            && self.num_instances == other.num_instances
            && self.code_page == other.code_page
            && self.perf_time == other.perf_time
            && self.perf_freq == other.perf_freq
            && self.counters == other.counters
            && self.values().map(|v| v.to_vec()) == other.values().map(|v| v.to_vec())
            && self.instance_count() == other.instance_count()
            && self
                .instances()
                .zip(other.instances())
                .all(|(a, b)| a.to_data() == b.to_data())
    }
}

impl Eq for ObjectData {}

/// One instance of an [`ObjectData`], read in place.
#[derive(Clone, Copy)]
pub struct Instance<'a> {
    view: InstanceView<'a>,
    object: ObjectView<'a>,
    /// The parent position [`ObjectData::keep_instances`] gave it, if any.
    parent: Option<u32>,
}

impl std::fmt::Debug for Instance<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.to_data(), f)
    }
}

impl<'a> Instance<'a> {
    /// Instance `index` of `object`, through `kept` if the object's instances were edited.
    #[inline]
    fn at(object: ObjectView<'a>, kept: Option<&[Kept]>, index: usize) -> Option<Self> {
        let (at, parent) = match kept {
            Some(kept) => {
                let k = kept.get(index)?;
                (k.instance as usize, Some(k.parent_object_instance))
            }
            None => (index, None),
        };
        Some(Instance {
            view: object.instance(at)?,
            object,
            parent,
        })
    }

    /// The name as written (without its NUL), decoded now: UTF-16 for code page 0, else 8-bit
    /// text (lossily).
    pub fn name(&self) -> String {
        self.view.name()
    }

    /// The name PDH gives the instance itself: its name, or its unique id when it has no name
    /// (and an id).
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// assert_eq!(snap.objects[0].instance(0).unwrap().own_name(), "alpha");
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn own_name(&self) -> String {
        let name = self.name();
        let id = self.def().unique_id.get();
        if name.is_empty() && id >= 0 {
            id.to_string()
        } else {
            name
        }
    }

    /// The PERF_INSTANCE_DEFINITION as written (`UniqueID`, `ParentObjectTitleIndex`; its
    /// `ParentObjectInstance` is [`parent_object_instance`](Self::parent_object_instance)'s
    /// unless [`ObjectData::keep_instances`] gave it another).
    pub fn def(&self) -> &'a PerfInstanceDefinition {
        self.view.def()
    }

    /// `ParentObjectInstance`: the parent's position among its object's instances.
    pub fn parent_object_instance(&self) -> u32 {
        self.parent
            .unwrap_or_else(|| self.view.def().parent_object_instance.get())
    }

    /// The instance's values, one per counter.
    #[inline]
    pub fn values(&self) -> Values<'a> {
        Values {
            block: self.view.values(),
            object: self.object,
        }
    }

    /// The instance as owned data.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// use prfdata_wire::snapshot::RawValue;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// let beta = snap.objects[0].instance(1).unwrap().to_data();
    /// assert_eq!((beta.name.as_str(), beta.unique_id), ("beta", -1));
    /// assert_eq!((beta.parent_object_title_index, beta.parent_object_instance), (0, 0));
    /// assert_eq!(beta.values, [RawValue::Int(0xFFFF_FFFF), RawValue::Int(-5), RawValue::Int(1)]);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn to_data(&self) -> InstanceData {
        InstanceData {
            name: self.name(),
            unique_id: self.def().unique_id.get(),
            parent_object_title_index: self.def().parent_object_title_index.get(),
            parent_object_instance: self.parent_object_instance(),
            values: self.values().to_vec(),
        }
    }
}

/// The values of one counter block (an instance's, or an object's without instances), one per
/// counter definition, read in place.
#[derive(Clone, Copy)]
pub struct Values<'a> {
    block: BlockView<'a>,
    object: ObjectView<'a>,
}

impl std::fmt::Debug for Values<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> Values<'a> {
    /// The number of values: the object's counter definitions.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// let values = snap.objects[0].instance(0).unwrap().values();
    /// assert_eq!(values.len(), 3);
    /// assert!(!values.is_empty());
    /// assert_eq!(values.get(0), Some(prfdata_wire::snapshot::RawValue::Int(7)));
    /// assert_eq!(values.get(3), None);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.object.num_counters()
    }

    /// Whether the object has no counters. See [`Values::len`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw value of counter `counter` (see the [module docs](self)); `None` past the last.
    pub fn get(&self, counter: usize) -> Option<RawValue> {
        Some(self.block.raw(&self.object.counter(counter)?))
    }

    /// The raw integer of counter `counter`: a DWORD zero-extended or a LARGE_INTEGER; `None`
    /// for text, other sizes, or past the last counter. Allocates nothing.
    #[inline]
    pub fn int(&self, counter: usize) -> Option<i64> {
        self.block.int(&self.object.counter(counter)?)
    }

    /// Every raw value, in definition order.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let snap = prfdata_wire::snapshot::decode(&DataBlockWriter::new("h", 0).objects(&out, 1).finish())?;
    /// let values: Vec<_> = snap.objects[0].instance(0).unwrap().values().iter().collect();
    /// assert_eq!(values, snap.objects[0].instance(0).unwrap().values().to_vec());
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = RawValue> + 'a {
        let block = self.block;
        self.object.counters().map(move |c| block.raw(&c))
    }

    /// Every raw value, in definition order, as owned data.
    pub fn to_vec(&self) -> Vec<RawValue> {
        self.iter().collect()
    }
}

/// One PERF_COUNTER_DEFINITION.
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::PERF_AVERAGE_BASE;
/// let def = prfdata_wire::snapshot::CounterDef { counter_type: PERF_AVERAGE_BASE, ..Default::default() };
/// assert_eq!(def.type_name(), "PERF_AVERAGE_BASE");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CounterDef {
    /// `CounterNameTitleIndex` (0 for a base).
    pub name_index: u32,
    /// `CounterHelpTitleIndex`.
    pub help_index: u32,
    /// `DefaultScale`: the power of ten charts scale the value by.
    pub default_scale: i32,
    /// `DetailLevel`.
    pub detail_level: u32,
    /// `CounterType`.
    pub counter_type: u32,
    /// `CounterSize`.
    pub size: u32,
    /// `CounterOffset` within the counter block.
    pub offset: u32,
    /// Whether the type is a base (the denominator of the counter before it).
    pub is_base: bool,
    /// For a counter that needs a base (winperf.h: the definition right after it), the index
    /// of that base in the object's `counters`; `None` if it needs none or it is missing.
    pub base: Option<usize>,
    /// For a base, the index of the counter before it that it is the base of.
    pub base_of: Option<usize>,
}

impl CounterDef {
    /// The winperf.h name of the counter type, or its value in hexadecimal.
    ///
    /// # Examples
    ///
    /// ```
    /// let def = prfdata_wire::snapshot::CounterDef { counter_type: 0x1234, ..Default::default() };
    /// assert_eq!(def.type_name(), "0x00001234");
    /// ```
    pub fn type_name(&self) -> String {
        winperf::counter_type_name(self.counter_type)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{:#010x}", self.counter_type))
    }
}

/// One PERF_INSTANCE_DEFINITION with its values, as owned data: what [`Instance::to_data`]
/// returns, and what the collector's object builder writes.
///
/// # Examples
///
/// ```
/// let inst = prfdata_wire::snapshot::InstanceData::default();
/// assert!(inst.name.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct InstanceData {
    /// The name as written (without its NUL).
    pub name: String,
    /// `UniqueID`, or -1 (`PERF_NO_UNIQUE_ID`).
    pub unique_id: i32,
    /// `ParentObjectTitleIndex`: the name index of the parent's object, or 0.
    pub parent_object_title_index: u32,
    /// `ParentObjectInstance`: the parent's position among its object's instances.
    pub parent_object_instance: u32,
    /// One value per counter definition.
    pub values: Vec<RawValue>,
}

/// A counter's raw value (see the module docs for the sign rules).
///
/// # Examples
///
/// ```
/// use prfdata_wire::snapshot::RawValue;
/// assert_eq!(RawValue::Int(7).as_i64(), Some(7));
/// assert_eq!(RawValue::Empty.as_i64(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
pub enum RawValue {
    /// A DWORD (zero-extended) or a LARGE_INTEGER.
    Int(i64),
    /// A text counter.
    Text(String),
    /// A value of an unusual size, as bytes.
    Bytes(Vec<u8>),
    /// A counter of size zero (`PERF_COUNTER_NODATA`).
    Empty,
}

impl RawValue {
    /// The value as an integer, if it is one.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata_wire::snapshot::RawValue::Text("x".into()).as_i64(), None);
    /// ```
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::Int(v) => Some(v),
            _ => None,
        }
    }
}

impl std::fmt::Display for RawValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(v) => write!(f, "{v}"),
            Self::Text(t) => write!(f, "{t:?}"),
            Self::Bytes(b) => {
                f.write_str("0x")?;
                b.iter().try_for_each(|x| write!(f, "{x:02x}"))
            }
            Self::Empty => f.write_str("-"),
        }
    }
}

/// Decodes a whole PERF_DATA_BLOCK. Bytes after `TotalByteLength` are ignored.
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::DataBlockWriter;
/// let bytes = DataBlockWriter::new("box", 0).finish();
/// let snap = prfdata_wire::snapshot::decode(&bytes)?;
/// assert_eq!(snap.total_byte_length as usize, bytes.len());
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn decode(bytes: &[u8]) -> Result<DataSnapshot, DecodeError> {
    DataView::parse(bytes).map(|view| view.to_snapshot())
}

/// [`decode`] that keeps `bytes` in the snapshot instead of a copy of them: a collection
/// costs its bytes once.
///
/// # Errors
///
/// What [`decode`] returns for the same bytes.
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::DataBlockWriter;
/// let bytes = DataBlockWriter::new("box", 0).finish();
/// let snap = prfdata_wire::snapshot::decode_owned(bytes)?;
/// assert_eq!(snap.system_name, "box");
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn decode_owned(bytes: Vec<u8>) -> Result<DataSnapshot, DecodeError> {
    let view = DataView::parse_owned(bytes)?;
    Ok(DataSnapshot::in_place(view.to_definitions(), view))
}

// ---------------------------------------------------------------------------------------------
// The view's owned copies.
// ---------------------------------------------------------------------------------------------

impl<'a> DataView<'a> {
    /// `SystemTime` (UTC).
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// use prfdata_wire::winperf::{SystemTime, U16};
    /// let time = SystemTime { year: U16::new(2026), month: U16::new(11), ..Default::default() };
    /// let bytes = DataBlockWriter::new("h", 0).times(time, 0, 1, 0).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// assert_eq!((view.system_time().year, view.system_time().month), (2026, 11));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn system_time(&self) -> SystemTimeFields {
        self.header().system_time.into()
    }

    /// The whole collection as owned data: what [`crate::snapshot::decode`] returns.
    pub fn to_snapshot(&self) -> DataSnapshot {
        let end = (self.header().total_byte_length.get() as usize).min(self.bytes.len());
        let (bytes, run) = (self.bytes[..end].to_vec(), self.run.clone().into_owned());
        let checked = DataView::from_checked(bytes, self.name.clone(), run);
        DataSnapshot::in_place(self.to_definitions(), checked)
    }

    /// The collection's header fields and each object's [`ObjectView::to_definition`]: no
    /// values or instances, so its cost does not grow with the instances.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("box", 0).objects(&out, 1).finish();
    /// let outline = prfdata_wire::view::DataView::parse(&bytes)?.to_definitions();
    /// assert_eq!(outline.system_name, "box");
    /// assert_eq!(outline.objects[0].instance_count(), 0);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn to_definitions(&self) -> DataSnapshot {
        let h = self.header();
        DataSnapshot {
            version: h.version.get(),
            revision: h.revision.get(),
            total_byte_length: h.total_byte_length.get(),
            header_length: h.header_length.get(),
            default_object: h.default_object.get(),
            system_time: self.system_time(),
            perf_time: h.perf_time.get(),
            perf_freq: h.perf_freq.get(),
            perf_time_100nsec: h.perf_time_100nsec.get(),
            system_name: self.system_name(),
            objects: self.objects().map(|o| o.to_definition()).collect(),
        }
    }
}

impl ObjectView<'_> {
    /// The object's header fields and counter definitions as owned data, without its values
    /// and instances ([`ObjectData::instance_count`] 0, [`ObjectData::values`] `None`,
    /// [`ObjectData::num_instances`] as written): what a catalog of objects and counters
    /// needs, at a cost that does not grow with the instances.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata_wire::build::DataBlockWriter;
    /// let out = prfdata_testkit::sample::sample_object(1848);
    /// let bytes = DataBlockWriter::new("box", 0).objects(&out, 1).finish();
    /// let view = prfdata_wire::view::DataView::parse(&bytes)?;
    /// let object = view.object(0).unwrap().to_definition();
    /// assert_eq!((object.counters.len(), object.num_instances), (3, 2));
    /// assert!(object.has_instances() && object.instance_count() == 0);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn to_definition(&self) -> ObjectData {
        let h = self.header();
        ObjectData {
            offset: self.offset(),
            name_index: h.object_name_title_index.get(),
            help_index: h.object_help_title_index.get(),
            detail_level: h.detail_level.get(),
            default_counter: h.default_counter.get(),
            num_instances: h.num_instances.get(),
            code_page: h.code_page.get(),
            perf_time: h.perf_time.get(),
            perf_freq: h.perf_freq.get(),
            counters: self.counters().map(|c| c.to_def()).collect(),
            ..ObjectData::default()
        }
    }
}

impl CounterView<'_> {
    /// The definition as owned data.
    pub fn to_def(&self) -> CounterDef {
        let d = self.def();
        CounterDef {
            name_index: d.counter_name_title_index.get(),
            help_index: d.counter_help_title_index.get(),
            default_scale: d.default_scale.get(),
            detail_level: d.detail_level.get(),
            counter_type: d.counter_type.get(),
            size: d.counter_size.get(),
            offset: d.counter_offset.get(),
            is_base: winperf::is_base(d.counter_type.get()),
            base: self.base(),
            base_of: self.base_of(),
        }
    }
}

impl BlockView<'_> {
    /// `counter`'s raw value, as [`crate::snapshot`] decodes it (text and odd sizes allocate).
    pub fn raw(&self, counter: &CounterView<'_>) -> RawValue {
        let raw = self.value_bytes(counter);
        let counter_type = counter.def().counter_type.get();
        if counter_type & PERF_TYPE_MASK == PERF_TYPE_TEXT {
            return RawValue::Text(if counter_type & PERF_TEXT_ASCII != 0 {
                ascii_lossy(raw)
            } else {
                utf16_lossy(raw)
            });
        }
        match *raw {
            [] => RawValue::Empty,
            [a, b, c, d] => RawValue::Int(u32::from_le_bytes([a, b, c, d]).into()),
            [a, b, c, d, e, f, g, h] => RawValue::Int(i64::from_le_bytes([a, b, c, d, e, f, g, h])),
            _ => RawValue::Bytes(raw.to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::DataBlockWriter;
    use crate::view::ObjectRun;
    use prfdata_testkit::sample::sample_object;

    fn sample_block() -> Vec<u8> {
        DataBlockWriter::new("unit-host", 0)
            .objects(&sample_object(1848), 1)
            .finish()
    }

    #[test]
    fn decodes_the_sample_object() {
        let snap = decode(&sample_block()).unwrap();
        assert_eq!(snap.objects.len(), 1);
        let obj = &snap.objects[0];
        assert_eq!(obj.name_index, 1848);
        assert_eq!(obj.counters.len(), 3);
        assert_eq!(obj.counters[1].base, Some(2));
        assert_eq!(obj.counters[2].base_of, Some(1));
        assert!(obj.counters[2].is_base);
        assert_eq!(obj.instance_count(), 2);
        assert_eq!(obj.instance(0).unwrap().name(), "alpha");
        assert_eq!(
            obj.instance(1).unwrap().values().get(0),
            Some(RawValue::Int(0xFFFF_FFFF))
        );
        assert_eq!(
            obj.instance(1).unwrap().values().get(1),
            Some(RawValue::Int(-5))
        );
    }

    #[test]
    fn every_truncation_is_an_error_naming_an_offset_inside_the_input() {
        let bytes = sample_block();
        for len in 0..bytes.len() {
            // A shorter TotalByteLength or a cut buffer: both must be refused.
            let err = decode(&bytes[..len]).unwrap_err();
            assert!(err.offset() <= len, "len {len}: {err}");
        }
    }

    #[test]
    fn a_counter_offset_past_its_block_names_the_block() {
        let mut bytes = sample_block();
        let snap = decode(&bytes).unwrap();
        // CounterOffset of the first definition: object + 64 + 36.
        let at = snap.objects[0].offset + 64 + 36;
        bytes[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
        let err = decode(&bytes).unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::Truncated {
                    what: "counter value (CounterOffset)",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_bad_signature_is_refused() {
        let mut bytes = sample_block();
        bytes[0] = b'X';
        assert_eq!(decode(&bytes), Err(DecodeError::Signature { offset: 0 }));
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn overwriting_a_field_of_a_valid_block_never_panics(
            at in 0usize..200,
            value in proptest::num::u32::ANY,
        ) {
            let mut bytes = sample_block();
            let at = (at * 4) % (bytes.len() - 3);
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            if let Err(e) = decode(&bytes) {
                proptest::prop_assert!(e.offset() <= bytes.len());
            }
        }

        #[test]
        fn an_object_refused_leaves_the_run_as_it_was(
            at in 0usize..400,
            value in proptest::num::u32::ANY,
            cut in 0usize..400,
        ) {
            let good = sample_object(1848);
            let mut object = good.clone();
            let at = (at * 4) % (object.len() - 3);
            object[at..at + 4].copy_from_slice(&value.to_le_bytes());
            let limit = object.len() - cut % object.len();
            let mut run = ObjectRun::default();
            proptest::prop_assert_eq!(run.check(&good, 0, good.len()), Ok(good.len()));
            let names = |run: &ObjectRun| -> Vec<String> {
                run.objects(&good).flat_map(|o| o.instances()).map(|i| i.name()).collect()
            };
            let before = names(&run);
            match run.check(&object, 0, limit) {
                Ok(next) => {
                    proptest::prop_assert!(next <= limit);
                    proptest::prop_assert_eq!(run.count(), 2);
                }
                Err(e) => {
                    proptest::prop_assert!(e.offset() <= limit);
                    proptest::prop_assert_eq!(run.count(), 1);
                    proptest::prop_assert_eq!(names(&run), before);
                    // What was kept of the refused object went with it: the next one goes on
                    // from the first.
                    proptest::prop_assert_eq!(run.check(&good, 0, good.len()), Ok(good.len()));
                    proptest::prop_assert_eq!(run.objects(&good).count(), 2);
                }
            }
        }

        #[test]
        fn corrupting_a_valid_block_never_panics(
            at in 0usize..400,
            value in proptest::num::u8::ANY,
        ) {
            let mut bytes = sample_block();
            let at = at % bytes.len();
            bytes[at] = value;
            let _ = decode(&bytes);
        }
    }
}

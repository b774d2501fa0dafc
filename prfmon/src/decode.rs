//! PERF_DATA_BLOCK bytes → a typed [`DataSnapshot`]: objects, counter definitions, instances
//! and raw values.
//!
//! The bytes are untrusted input (a file, another process's buffer): every offset and length
//! is checked before it is used, nothing is indexed unchecked, and every error names the byte
//! offset (from the start of the input) where the problem is. The checks are
//! [`crate::view`]'s: [`decode`] is a [`DataView`] copied out into owned data; a consumer that
//! only reads values can use the view and allocate nothing per instance.
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
//! use prfmon::datablock::{build_data_block, CollectionTimes};
//! use prfmon::decode::{decode, DecodeError};
//!
//! let bytes = build_data_block("host", &CollectionTimes::now(), &[]);
//! let snap = decode(&bytes)?;
//! assert_eq!(snap.system_name, "host");
//! assert!(snap.objects.is_empty());
//! assert!(matches!(decode(&bytes[..40]), Err(DecodeError::Truncated { offset: 0, .. })));
//! # Ok::<(), DecodeError>(())
//! ```

use prfdata::winperf::{self, PERF_NO_INSTANCES};
use serde::Serialize;

use crate::view::DataView;

/// `"PERF"` in UTF-16, the signature of a PERF_DATA_BLOCK.
pub const SIGNATURE: [u16; 4] = [b'P' as u16, b'E' as u16, b'R' as u16, b'F' as u16];

/// Something wrong in PERF_DATA_BLOCK bytes, with the offset where it is.
///
/// # Examples
///
/// ```
/// let err = prfmon::decode::decode(&[0u8; 100]).unwrap_err();
/// assert_eq!(err.offset(), 0);
/// assert!(err.to_string().contains("offset 0"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A structure does not fit in the bytes that remain for it.
    #[error("truncated {what} at offset {offset}: needs {need} bytes, {available} available")]
    Truncated {
        /// Where the structure starts.
        offset: usize,
        /// Which structure.
        what: &'static str,
        /// Bytes it needs.
        need: u64,
        /// Bytes there are (up to the end of its container).
        available: u64,
    },
    /// The block does not start with `"PERF"` in UTF-16.
    #[error("no PERF_DATA_BLOCK at offset {offset}: the signature is not \"PERF\" in UTF-16")]
    Signature {
        /// Where the signature is.
        offset: usize,
    },
    /// A field has a value the format does not allow.
    #[error("{what} at offset {offset} is {value}: {expected}")]
    Field {
        /// Where the field is.
        offset: usize,
        /// The structure and field, e.g. `PERF_OBJECT_TYPE.HeaderLength`.
        what: &'static str,
        /// The value found.
        value: i64,
        /// What the format requires.
        expected: &'static str,
    },
    /// A name is not valid UTF-16.
    #[error("{what} at offset {offset} is not valid UTF-16")]
    Utf16 {
        /// Where the name starts.
        offset: usize,
        /// Which name.
        what: &'static str,
    },
}

impl DecodeError {
    /// The offset, from the start of the input, where the problem is.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = prfmon::decode::DecodeError::Signature { offset: 0 };
    /// assert_eq!(err.offset(), 0);
    /// ```
    pub fn offset(&self) -> usize {
        match *self {
            Self::Truncated { offset, .. }
            | Self::Signature { offset }
            | Self::Field { offset, .. }
            | Self::Utf16 { offset, .. } => offset,
        }
    }
}

/// A whole collection: the PERF_DATA_BLOCK header and its objects.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes};
/// let times = CollectionTimes::now();
/// let snap = prfmon::decode::decode(&build_data_block("h", &times, &[]))?;
/// assert_eq!(snap.perf_time, times.perf_time);
/// assert_eq!(snap.perf_freq, prfdata::clock::PERF_FREQUENCY);
/// # Ok::<(), prfmon::decode::DecodeError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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

/// winperf.h `SYSTEMTIME`, as decoded.
///
/// # Examples
///
/// ```
/// let t = prfmon::decode::SystemTimeFields::default();
/// assert_eq!(t.to_string(), "0000-00-00 00:00:00.000");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
            year: t.year,
            month: t.month,
            day_of_week: t.day_of_week,
            day: t.day,
            hour: t.hour,
            minute: t.minute,
            second: t.second,
            milliseconds: t.milliseconds,
        }
    }
}

/// One PERF_OBJECT_TYPE with its counters and data.
///
/// # Examples
///
/// ```
/// use prfdata::winperf::PERF_NO_INSTANCES;
/// let obj = prfmon::decode::ObjectData { num_instances: PERF_NO_INSTANCES, ..Default::default() };
/// assert!(!obj.has_instances() && obj.instances.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
    /// The values of an object without instances, one per counter (empty if it has instances).
    pub values: Vec<RawValue>,
    /// The instances (empty if the object has none).
    pub instances: Vec<InstanceData>,
}

impl ObjectData {
    /// Whether the object has instances (`NumInstances` is not `PERF_NO_INSTANCES`).
    ///
    /// # Examples
    ///
    /// ```
    /// let obj = prfmon::decode::ObjectData { num_instances: 0, ..Default::default() };
    /// assert!(obj.has_instances());
    /// ```
    pub fn has_instances(&self) -> bool {
        self.num_instances != PERF_NO_INSTANCES
    }
}

/// One PERF_COUNTER_DEFINITION.
///
/// # Examples
///
/// ```
/// use prfdata::winperf::PERF_AVERAGE_BASE;
/// let def = prfmon::decode::CounterDef { counter_type: PERF_AVERAGE_BASE, ..Default::default() };
/// assert_eq!(def.type_name(), "PERF_AVERAGE_BASE");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
    /// let def = prfmon::decode::CounterDef { counter_type: 0x1234, ..Default::default() };
    /// assert_eq!(def.type_name(), "0x00001234");
    /// ```
    pub fn type_name(&self) -> String {
        winperf::counter_type_name(self.counter_type)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{:#010x}", self.counter_type))
    }
}

/// One PERF_INSTANCE_DEFINITION with its values.
///
/// # Examples
///
/// ```
/// let inst = prfmon::decode::InstanceData::default();
/// assert!(inst.name.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
/// use prfmon::decode::RawValue;
/// assert_eq!(RawValue::Int(7).as_i64(), Some(7));
/// assert_eq!(RawValue::Empty.as_i64(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
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
    /// assert_eq!(prfmon::decode::RawValue::Text("x".into()).as_i64(), None);
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
/// use prfmon::datablock::{build_data_block, CollectionTimes};
/// let bytes = build_data_block("box", &CollectionTimes::now(), &[]);
/// let snap = prfmon::decode::decode(&bytes)?;
/// assert_eq!(snap.total_byte_length as usize, bytes.len());
/// # Ok::<(), prfmon::decode::DecodeError>(())
/// ```
pub fn decode(bytes: &[u8]) -> Result<DataSnapshot, DecodeError> {
    DataView::parse(bytes).map(|view| view.to_snapshot())
}

/// Decodes the PERF_OBJECT_TYPE at `offset`, which must end by `limit`; returns it and the
/// offset of the next object (`offset + TotalByteLength`).
///
/// Used on whole blocks by [`decode`] and on a provider's raw Collect output by the
/// collector's validation.
///
/// # Examples
///
/// ```
/// // 64 zero bytes: HeaderLength 0 is refused.
/// let err = prfmon::decode::decode_object(&[0u8; 64], 0, 64).unwrap_err();
/// assert!(err.to_string().contains("TotalByteLength"));
/// ```
pub fn decode_object(
    bytes: &[u8],
    offset: usize,
    limit: usize,
) -> Result<(ObjectData, usize), DecodeError> {
    crate::view::decode_object(bytes, offset, limit)
}

/// Checks the PERF_OBJECT_TYPE at `offset` exactly as [`decode_object`] does — it accepts
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
/// assert_eq!(prfmon::decode::check_object(&object, 0, object.len())?, object.len());
/// assert!(prfmon::decode::check_object(&object[..100], 0, 100).is_err());
/// # Ok::<(), prfmon::decode::DecodeError>(())
/// ```
pub fn check_object(bytes: &[u8], offset: usize, limit: usize) -> Result<usize, DecodeError> {
    crate::view::check_object(bytes, offset, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    use prfdata_testkit::sample::sample_object;

    fn sample_block() -> Vec<u8> {
        build_data_block(
            "unit-host",
            &CollectionTimes::now(),
            &[ProviderOutput {
                bytes: sample_object(1848),
                num_objects: 1,
            }],
        )
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
        assert_eq!(obj.instances.len(), 2);
        assert_eq!(obj.instances[0].name, "alpha");
        assert_eq!(obj.instances[1].values[0], RawValue::Int(0xFFFF_FFFF));
        assert_eq!(obj.instances[1].values[1], RawValue::Int(-5));
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
        fn checking_an_object_agrees_with_decoding_it(
            at in 0usize..400,
            value in proptest::num::u32::ANY,
            cut in 0usize..400,
        ) {
            let mut object = sample_object(1848);
            let at = (at * 4) % (object.len() - 3);
            object[at..at + 4].copy_from_slice(&value.to_le_bytes());
            let limit = object.len() - cut % object.len();
            proptest::prop_assert_eq!(
                check_object(&object, 0, limit),
                decode_object(&object, 0, limit).map(|(_, next)| next)
            );
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

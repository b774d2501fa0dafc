//! Writing the perflib wire format: the one writer of its headers, with their lengths and
//! alignment, for the provider's serializer, the collector and every test that builds bytes.
//!
//! ```text
//! PERF_DATA_BLOCK (88)        DataBlockWriter: the system name after it, UTF-16 + NUL,
//!                             zero-padded to 8 → HeaderLength; then the objects, each 8-aligned
//! PERF_OBJECT_TYPE (64)       PerfObjectType::new: DefinitionLength = 64 + 40 × counters
//! PERF_COUNTER_DEFINITION (40) × counters
//! either PERF_COUNTER_BLOCK   (no instances: NumInstances = PERF_NO_INSTANCES)
//! or per instance: PERF_INSTANCE_DEFINITION (24) + name (UTF-16, NUL, padded to 8:
//!                  instance_size) + PERF_COUNTER_BLOCK (ByteLength a multiple of 8)
//! ```
//!
//! [`CounterBlockFixups`] turns a counter block copied out of an app's block into wire format.
//! With the `view` feature, `ObjectBuilder` writes a whole object from owned parts.
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::build::DataBlockWriter;
//! use prfdata_wire::winperf::instance_size;
//! // "box\0" (8 bytes) after the 88-byte header: already a multiple of 8.
//! let bytes = DataBlockWriter::new("box", 0).finish();
//! assert_eq!(bytes.len(), 96);
//! assert_eq!(&bytes[..8], b"P\0E\0R\0F\0");
//! // 24 + "alpha\0" (12 bytes) = 36, padded to 40.
//! assert_eq!(instance_size(5), 40);
//! ```

use core::ops::Range;

use zerocopy::IntoBytes;

use crate::winperf::{
    instance_size, PerfCounterDefinition, PerfDataBlock, PerfInstanceDefinition, PerfObjectType,
    SystemTime, COUNTER_DEFINITION, I32, I64, INSTANCE_DEFINITION, OBJECT_HEADER,
    PERF_DETAIL_NOVICE, PERF_NO_INSTANCES, SIGNATURE, U16, U32,
};

impl PerfObjectType {
    /// The header of an object with `num_counters` counters, its name and help indexes
    /// `name_index` and `help_index`: novice detail, no default counter, no instances, no
    /// clock. `TotalByteLength`, the instance count and the clock are set when they are known.
    ///
    /// # Examples
    ///
    /// ```
    /// let head = prfdata_wire::winperf::PerfObjectType::new(10, 11, 2);
    /// assert_eq!(head.definition_length.get(), 64 + 2 * 40);
    /// ```
    pub fn new(name_index: u32, help_index: u32, num_counters: usize) -> Self {
        PerfObjectType {
            definition_length: U32::new((OBJECT_HEADER + COUNTER_DEFINITION * num_counters) as u32),
            header_length: U32::new(OBJECT_HEADER as u32),
            object_name_title_index: U32::new(name_index),
            object_help_title_index: U32::new(help_index),
            detail_level: U32::new(PERF_DETAIL_NOVICE),
            num_counters: U32::new(num_counters as u32),
            default_counter: I32::new(-1),
            num_instances: I32::new(PERF_NO_INSTANCES),
            ..Default::default()
        }
    }
}

impl PerfCounterDefinition {
    /// The definition of a counter of `counter_type`, `size` bytes at `offset` in its counter
    /// block: novice detail, scale 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::winperf::{PerfCounterDefinition, PERF_COUNTER_RAWCOUNT};
    /// let def = PerfCounterDefinition::new(12, 13, PERF_COUNTER_RAWCOUNT, 4, 8);
    /// assert_eq!((def.byte_length.get(), def.counter_offset.get()), (40, 8));
    /// ```
    pub fn new(
        name_index: u32,
        help_index: u32,
        counter_type: u32,
        size: u32,
        offset: u32,
    ) -> Self {
        PerfCounterDefinition {
            byte_length: U32::new(COUNTER_DEFINITION as u32),
            counter_name_title_index: U32::new(name_index),
            counter_help_title_index: U32::new(help_index),
            detail_level: U32::new(PERF_DETAIL_NOVICE),
            counter_type: U32::new(counter_type),
            counter_size: U32::new(size),
            counter_offset: U32::new(offset),
            ..Default::default()
        }
    }
}

impl PerfInstanceDefinition {
    /// The definition of an instance whose name (`name_units` UTF-16 units, its NUL not
    /// counted) follows it: `ByteLength` is [`instance_size`]; `parent` is its parent's object
    /// index and position, `(0, 0)` for none.
    ///
    /// # Examples
    ///
    /// ```
    /// let def = prfdata_wire::winperf::PerfInstanceDefinition::named(5, -1, (0, 0));
    /// assert_eq!((def.byte_length.get(), def.name_length.get()), (40, 12));
    /// ```
    pub fn named(name_units: usize, unique_id: i32, parent: (u32, u32)) -> Self {
        PerfInstanceDefinition {
            byte_length: U32::new(instance_size(name_units) as u32),
            parent_object_title_index: U32::new(parent.0),
            parent_object_instance: U32::new(parent.1),
            unique_id: I32::new(unique_id),
            name_offset: U32::new(INSTANCE_DEFINITION as u32),
            name_length: U32::new(((name_units + 1) * 2) as u32),
        }
    }
}

/// Appends an instance definition and its name (NUL, padding) to `out`.
pub fn push_instance(out: &mut Vec<u8>, name: &str, unique_id: i32, parent: (u32, u32)) {
    let (start, units) = (out.len(), name.encode_utf16().count());
    out.extend_from_slice(PerfInstanceDefinition::named(units, unique_id, parent).as_bytes());
    out.extend(name.encode_utf16().flat_map(u16::to_le_bytes));
    out.resize(start + instance_size(units), 0);
}

/// A PERF_DATA_BLOCK being written: its header (written by [`DataBlockWriter::finish`]), the
/// system name, then the objects appended.
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::DataBlockWriter;
/// let object = prfdata_testkit::sample::sample_object(1848);
/// let block = DataBlockWriter::new("box", object.len()).objects(&object, 1).finish();
/// assert_eq!(block.len(), 96 + object.len());
/// let snap = prfdata_wire::snapshot::decode(&block)?;
/// assert_eq!(snap.default_object, 1848);
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct DataBlockWriter {
    out: Vec<u8>,
    header: PerfDataBlock,
    /// Whether `DefaultObject` was taken from an object appended.
    has_default: bool,
}

impl DataBlockWriter {
    /// A block for machine `system_name`, with room for `room` bytes of objects.
    pub fn new(system_name: &str, room: usize) -> Self {
        const HEADER: usize = size_of::<PerfDataBlock>();
        let name_len = system_name.encode_utf16().count().saturating_add(1) * 2;
        let header_length = (HEADER + name_len).next_multiple_of(8);
        let mut out = Vec::with_capacity(header_length + room);
        out.resize(HEADER, 0);
        out.extend(
            system_name
                .encode_utf16()
                .chain([0])
                .flat_map(u16::to_le_bytes),
        );
        out.resize(header_length, 0);
        let header = PerfDataBlock {
            signature: SIGNATURE.map(U16::new),
            little_endian: U32::new(1),
            version: U32::new(1),
            revision: U32::new(1),
            header_length: U32::new(header_length as u32),
            default_object: I32::new(-1),
            system_name_length: U32::new(name_len as u32),
            system_name_offset: U32::new(HEADER as u32),
            ..Default::default()
        };
        DataBlockWriter {
            out,
            header,
            has_default: false,
        }
    }

    /// Sets the collection's times: `SystemTime` (UTC), `PerfTime` with its `PerfFreq`, and
    /// `PerfTime100nSec` (FILETIME).
    pub fn times(
        mut self,
        system_time: SystemTime,
        perf_time: i64,
        perf_freq: i64,
        perf_time_100nsec: i64,
    ) -> Self {
        self.header.system_time = system_time;
        self.header.perf_time = I64::new(perf_time);
        self.header.perf_freq = I64::new(perf_freq);
        self.header.perf_time_100nsec = I64::new(perf_time_100nsec);
        self
    }

    /// Appends `count` whole objects (one provider's output, each a multiple of 8 bytes):
    /// `DefaultObject` is the name index of the first object appended.
    pub fn objects(mut self, bytes: &[u8], count: u32) -> Self {
        if !self.has_default && count > 0 && bytes.len() >= 16 {
            let index = [bytes[12], bytes[13], bytes[14], bytes[15]];
            self.header.default_object = I32::new(i32::from_le_bytes(index));
            self.has_default = true;
        }
        self.out.extend_from_slice(bytes);
        let n = self.header.num_object_types.get() + count;
        self.header.num_object_types = U32::new(n);
        self
    }

    /// The bytes so far, for objects written in place; [`DataBlockWriter::counts`] then says
    /// how many.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Sets `NumObjectTypes` and `DefaultObject`, for objects written through
    /// [`DataBlockWriter::buffer`].
    pub fn counts(mut self, num_objects: u32, default_object: i32) -> Self {
        self.header.num_object_types = U32::new(num_objects);
        self.header.default_object = I32::new(default_object);
        self
    }

    /// Where the system name is (UTF-16 with its NUL).
    pub fn system_name(&self) -> Range<usize> {
        let at = self.header.system_name_offset.get() as usize;
        at..at + self.header.system_name_length.get() as usize
    }

    /// The block, its header written: `TotalByteLength` is its length.
    pub fn finish(mut self) -> Vec<u8> {
        let total = u32::try_from(self.out.len()).unwrap_or(u32::MAX);
        self.header.total_byte_length = U32::new(total);
        self.out[..size_of::<PerfDataBlock>()].copy_from_slice(self.header.as_bytes());
        self.out
    }
}

mod fixups;
pub use fixups::CounterBlockFixups;

#[cfg(feature = "view")]
mod object;
#[cfg(feature = "view")]
pub use object::ObjectBuilder;

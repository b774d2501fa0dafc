//! A PERF_OBJECT_TYPE written from owned parts: [`ObjectBuilder`].

use zerocopy::IntoBytes;

use super::push_instance;
use crate::snapshot::{InstanceData, RawValue};
use crate::winperf::{
    PerfCounterBlock, PerfCounterDefinition, PerfObjectType, COUNTER_BLOCK_HEADER,
    COUNTER_DEFINITION, I32, I64, OBJECT_HEADER, PERF_NO_INSTANCES, PERF_TEXT_ASCII,
    PERF_TYPE_MASK, PERF_TYPE_TEXT, U32,
};

/// Writing a PERF_OBJECT_TYPE from owned parts: what a provider's Collect returns, for
/// examples and tests of the consumer side (a collection with parents, duplicate names, text
/// or odd sizes, without a provider) and for anything else that builds one in memory.
///
/// Each counter's value lies at the next offset of its size (after the 8-byte
/// PERF_COUNTER_BLOCK) unless [`ObjectBuilder::offset`] places it, the block padded to 8. A
/// [`RawValue::Int`] is written at the counter's size (a DWORD's low 32 bits),
/// [`RawValue::Text`] as UTF-16 (8-bit for `PERF_TEXT_ASCII`), cut or NUL-padded to the size,
/// [`RawValue::Bytes`] as they are; anything missing is zero.
///
/// # Examples
///
/// ```
/// use prfdata_wire::winperf::{PERF_COUNTER_COUNTER, PERF_COUNTER_RAWCOUNT};
/// use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
/// use prfdata_wire::snapshot::{InstanceData, RawValue};
///
/// let pools = ObjectBuilder::new(10)
///     .counter(12, PERF_COUNTER_RAWCOUNT, 4)
///     .instance(InstanceData { name: "a".into(), unique_id: -1, values: vec![RawValue::Int(3)], ..Default::default() });
/// let service = ObjectBuilder::new(20)
///     .counter(22, PERF_COUNTER_COUNTER, 8)
///     .values(vec![RawValue::Int(41)]);
/// let bytes = DataBlockWriter::new("box", 0).objects(&pools.build(), 1).objects(&service.build(), 1).finish();
/// let snap = prfdata_wire::snapshot::decode(&bytes)?;
/// assert_eq!(snap.objects[0].instance(0).unwrap().values().int(0), Some(3));
/// assert_eq!(snap.objects[1].values().unwrap().int(0), Some(41));
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ObjectBuilder {
    header: PerfObjectType,
    counters: Vec<PerfCounterDefinition>,
    /// `None`: an object without instances.
    instances: Option<Vec<InstanceData>>,
    values: Vec<RawValue>,
}

impl ObjectBuilder {
    /// An object with name index `name_index` (help `name_index + 1`), novice detail, no
    /// counters and no instances, its clock at 0 ticks of 1 Hz.
    pub fn new(name_index: u32) -> Self {
        ObjectBuilder {
            header: PerfObjectType {
                perf_freq: I64::new(1),
                ..PerfObjectType::new(name_index, name_index + 1, 0)
            },
            counters: Vec::new(),
            instances: None,
            values: Vec::new(),
        }
    }

    /// Adds a counter of `counter_type`, `size` bytes, name index `name_index` (help
    /// `name_index + 1`; none for a counter without a name, 0), after the ones before it.
    pub fn counter(mut self, name_index: u32, counter_type: u32, size: u32) -> Self {
        let offset = self.block_end().next_multiple_of(size.clamp(1, 8));
        let help = if name_index == 0 { 0 } else { name_index + 1 };
        let def = PerfCounterDefinition::new(name_index, help, counter_type, size, offset);
        self.counters.push(def);
        self
    }

    /// Places the last counter's value at `offset` in the counter block (the next counters
    /// follow it).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
    /// let b = ObjectBuilder::new(10).counter(12, prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT, 4).offset(4);
    /// let out = DataBlockWriter::new("h", 0).objects(&b.build(), 1).finish();
    /// assert_eq!(prfdata_wire::snapshot::decode(&out)?.objects[0].counters[0].offset, 4);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn offset(mut self, offset: u32) -> Self {
        if let Some(last) = self.counters.last_mut() {
            last.counter_offset = offset.into();
        }
        self
    }

    /// Sets the last counter's `DetailLevel`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
    /// use prfdata_wire::winperf::{PERF_COUNTER_RAWCOUNT, PERF_DETAIL_EXPERT};
    /// let b = ObjectBuilder::new(10).counter(12, PERF_COUNTER_RAWCOUNT, 4).detail(PERF_DETAIL_EXPERT);
    /// let out = DataBlockWriter::new("h", 0).objects(&b.build(), 1).finish();
    /// assert_eq!(prfdata_wire::snapshot::decode(&out)?.objects[0].counters[0].detail_level, PERF_DETAIL_EXPERT);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn detail(mut self, detail_level: u32) -> Self {
        if let Some(last) = self.counters.last_mut() {
            last.detail_level = detail_level.into();
        }
        self
    }

    /// Sets the last counter's `DefaultScale`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
    /// let b = ObjectBuilder::new(10).counter(12, prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT, 4).scale(-2);
    /// let out = DataBlockWriter::new("h", 0).objects(&b.build(), 1).finish();
    /// assert_eq!(prfdata_wire::snapshot::decode(&out)?.objects[0].counters[0].default_scale, -2);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn scale(mut self, default_scale: i32) -> Self {
        if let Some(last) = self.counters.last_mut() {
            last.default_scale = default_scale.into();
        }
        self
    }

    /// Sets the object's own clock (`PerfTime`, `PerfFreq`).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
    /// let b = ObjectBuilder::new(10).clock(5, 1000);
    /// let out = DataBlockWriter::new("h", 0).objects(&b.build(), 1).finish();
    /// let snap = prfdata_wire::snapshot::decode(&out)?;
    /// assert_eq!((snap.objects[0].perf_time, snap.objects[0].perf_freq), (5, 1000));
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn clock(mut self, perf_time: i64, perf_freq: i64) -> Self {
        self.header.perf_time = perf_time.into();
        self.header.perf_freq = perf_freq.into();
        self
    }

    /// Adds an instance (the object then has instances).
    pub fn instance(mut self, instance: InstanceData) -> Self {
        self.instances.get_or_insert_with(Vec::new).push(instance);
        self
    }

    /// Makes it an object with instances, none yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_wire::build::{DataBlockWriter, ObjectBuilder};
    /// let b = ObjectBuilder::new(10).with_instances();
    /// let out = DataBlockWriter::new("h", 0).objects(&b.build(), 1).finish();
    /// let snap = prfdata_wire::snapshot::decode(&out)?;
    /// assert!(snap.objects[0].has_instances() && snap.objects[0].instance_count() == 0);
    /// # Ok::<(), prfdata_wire::error::DecodeError>(())
    /// ```
    pub fn with_instances(mut self) -> Self {
        self.instances.get_or_insert_with(Vec::new);
        self
    }

    /// The values of an object without instances.
    pub fn values(mut self, values: Vec<RawValue>) -> Self {
        self.values = values;
        self
    }

    /// The end of the last value in a counter block.
    fn block_end(&self) -> u32 {
        self.counters
            .iter()
            .map(|c| c.counter_offset.get() + c.counter_size.get())
            .max()
            .unwrap_or(COUNTER_BLOCK_HEADER)
            .max(COUNTER_BLOCK_HEADER)
    }

    /// A PERF_COUNTER_BLOCK holding `values`.
    fn block(&self, values: &[RawValue]) -> Vec<u8> {
        let length = self.block_end().next_multiple_of(8);
        let mut out = vec![0u8; length as usize];
        out[..4].copy_from_slice(
            PerfCounterBlock {
                byte_length: U32::new(length),
            }
            .as_bytes(),
        );
        for (def, value) in self.counters.iter().zip(values) {
            let at = def.counter_offset.get() as usize;
            let slot = &mut out[at..at + def.counter_size.get() as usize];
            let bytes: Vec<u8> = match value {
                RawValue::Int(v) => v.to_le_bytes().to_vec(),
                RawValue::Text(t) if is_ascii_text(def.counter_type.get()) => t.as_bytes().to_vec(),
                RawValue::Text(t) => t.encode_utf16().flat_map(u16::to_le_bytes).collect(),
                RawValue::Bytes(b) => b.clone(),
                RawValue::Empty => Vec::new(),
            };
            let n = bytes.len().min(slot.len());
            slot[..n].copy_from_slice(&bytes[..n]);
        }
        out
    }

    /// The object's bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let bytes = prfdata_wire::build::ObjectBuilder::new(10).build();
    /// assert_eq!(bytes.len(), 64 + 8);
    /// ```
    pub fn build(&self) -> Vec<u8> {
        let mut body = Vec::new();
        match &self.instances {
            None => body.extend(self.block(&self.values)),
            Some(instances) => {
                for inst in instances {
                    let parent = (inst.parent_object_title_index, inst.parent_object_instance);
                    push_instance(&mut body, &inst.name, inst.unique_id, parent);
                    body.extend(self.block(&inst.values));
                }
            }
        }
        let definition_length = OBJECT_HEADER + COUNTER_DEFINITION * self.counters.len();
        let header = PerfObjectType {
            total_byte_length: U32::new((definition_length + body.len()) as u32),
            definition_length: U32::new(definition_length as u32),
            num_counters: U32::new(self.counters.len() as u32),
            num_instances: I32::new(
                self.instances
                    .as_ref()
                    .map_or(PERF_NO_INSTANCES, |i| i.len() as i32),
            ),
            default_counter: I32::new(if self.counters.is_empty() { -1 } else { 0 }),
            ..self.header
        };
        let mut out = header.as_bytes().to_vec();
        for def in &self.counters {
            out.extend_from_slice(def.as_bytes());
        }
        out.extend(body);
        out
    }
}

/// Whether a text counter's text is 8-bit (`PERF_TEXT_ASCII`).
fn is_ascii_text(counter_type: u32) -> bool {
    counter_type & PERF_TYPE_MASK == PERF_TYPE_TEXT && counter_type & PERF_TEXT_ASCII != 0
}

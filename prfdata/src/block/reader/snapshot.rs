//! [`Snapshot`]: a consistent copy of a whole block, made through the same [`BlockView`] the
//! single-pass readers use (one read path).

use std::ops::Range;

use super::{BlockView, ParentLink, ReadError};

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
/// Reuse one across reads: [`BlockReader::read`](super::BlockReader::read) clears and refills it without reallocating.
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

    pub(super) fn clear(&mut self) {
        self.objects.clear();
        self.names.clear();
        self.data.clear();
    }

    /// Copies every object of `view`'s block into `self` (cleared first): one attempt, which
    /// [`BlockReader::read_within`](super::BlockReader::read_within) keeps only if the window
    /// is.
    pub(super) fn fill(&mut self, view: &BlockView<'_>) -> Result<(), ReadError> {
        self.clear();
        for (k, info) in view.reader().objects().iter().enumerate() {
            let mut out = ObjectSnapshot::default();
            let stride = info.counter_block_size as usize;
            if !info.instanced {
                let start = self.data.len();
                self.data.resize(start + stride, 0);
                view.copy_global_block(k, &mut self.data[start..])?;
                out.global = start..self.data.len();
                self.objects.push(out);
                continue;
            }
            let table = view.instances(k)?;
            out.instances.reserve(table.len() as usize);
            for pos in 0..table.len() {
                let inst = table.get(pos)?;
                let children = table.children(pos)?;
                let name_start = self.names.len();
                table.name_units(&inst, &mut self.names)?;
                let data_start = self.data.len();
                self.data.resize(data_start + stride, 0);
                table.copy_counter_block(&inst, &mut self.data[data_start..])?;
                out.instances.push(InstanceSnapshot {
                    slot: inst.slot,
                    generation: inst.generation,
                    unique_id: inst.unique_id,
                    parent: inst.parent,
                    children,
                    name: name_start..self.names.len(),
                    data: data_start..self.data.len(),
                });
            }
            self.objects.push(out);
        }
        Ok(())
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
    let at = usize::try_from(offset).ok()?;
    match size {
        4 => Some(i64::from(i32::from_le_bytes(
            block.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))),
        8 => Some(i64::from_le_bytes(
            block.get(at..at.checked_add(8)?)?.try_into().ok()?,
        )),
        _ => None,
    }
}

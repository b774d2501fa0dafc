//! The synthesised `_Total` instance of an object (see [`crate::map::Aggregate`]): each stored
//! numeric counter aggregated over the instances shown, from whole copies of their counter
//! blocks (shard lines added), so that a histogram's thousand buckets are added as slices, not
//! loaded one checked word at a time.

use zerocopy::IntoBytes;

use super::{add_words, set_byte_length, word_at, InstanceTable};
use crate::block::records::AggPlan;
use crate::layout::{AGG_LIVE, AGG_MAX, AGG_MIN, AGG_SUM, DWORD_SIZE, WORD};
use crate::reader::error::{field, ReadError};

impl InstanceTable<'_> {
    /// Writes the `_Total` counter block into `out` (one counter block long): each counter
    /// aggregated over the instances shown by its rule, plus, for `sum` counters, the retired
    /// share (the retired accumulator and the instances whose owner died but are not reclaimed
    /// yet); text empty. Sums (`PSTF_COMPLEX`) are computed again from the totalled parts by
    /// [`ObjectInfo::fixups`](crate::reader::ObjectInfo::fixups), histograms' counts from their
    /// totalled buckets.
    ///
    /// # Errors
    ///
    /// [`ReadError::Field`] if a live list entry names no slot of the object.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let reader = prfdata::reader::BlockReader::open("App")?;
    /// let object = &reader.objects()[0];
    /// let mut total = vec![0u8; object.counter_block_size as usize];
    /// reader.read_with(std::time::Duration::from_millis(5), |view| {
    ///     view.instances(0)?.total_block(&mut total)
    /// })?;
    /// # Ok::<(), prfdata::reader::ReadError>(())
    /// ```
    pub fn total_block(&self, out: &mut [u8]) -> Result<(), ReadError> {
        let o = self.info;
        assert_eq!(
            out.len(),
            o.counter_block_size as usize,
            "one counter block"
        );
        let mut totals = Totals {
            words: vec![0; out.len() / WORD],
            values: vec![None; o.aggregates.len()],
        };
        // One copy reused for every block: a multiple of 8 bytes (checked at open).
        let mut copy = vec![0u64; out.len() / WORD];
        // The retired accumulator (block number `max_instances`), then the dead owners'.
        let retired = std::iter::once(o.max_instances).chain(self.dead.iter().copied());
        for block in retired {
            self.copy_with_shards(block, &mut copy)?;
            totals.add(&o.aggregates, &copy, Share::Retired);
        }
        for pos in 0..self.shown {
            let (slot, _) = self.slot_of(pos)?;
            self.copy_with_shards(slot, &mut copy)?;
            totals.add(&o.aggregates, &copy, Share::Shown);
        }
        out.fill(0);
        totals.write(&o.aggregates, out);
        set_byte_length(o, out);
        Ok(())
    }

    /// Copies counter block number `block` (a slot below the limit, or the retired accumulator
    /// at the limit) into `copy`, its shard lines added.
    fn copy_with_shards(&self, block: u32, copy: &mut [u64]) -> Result<(), ReadError> {
        let o = self.info;
        // block <= max_instances <= 2^20 and the stride < 2^21: no overflow in u64; the region
        // of `max_instances + 1` blocks was checked by `BlockView::instances`.
        let at = o.data_offset + u64::from(block) * o.block_stride;
        let bytes = copy.as_mut_bytes();
        usize::try_from(at)
            .ok()
            .and_then(|a| self.reader.raw.copy_words_to(a, bytes))
            .ok_or_else(|| field(at, "counter block", block))?;
        self.reader.add_shards(o, at, bytes)
    }
}

/// Which blocks a counter's total takes a share of: the retired ones count for `sum` counters
/// only.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Share {
    Retired,
    Shown,
}

/// The running totals of one `_Total` block.
struct Totals {
    /// The 8-byte sums (`sum` and `live` rules), each at its word's place in the block.
    words: Vec<u64>,
    /// Per plan, the others: a DWORD's sum (its low 32 bits are what is written), the minimum,
    /// the maximum or the last value.
    values: Vec<Option<i64>>,
}

impl Totals {
    /// Adds the share of the counter block `copy` to each plan's total.
    fn add(&mut self, plans: &[AggPlan], copy: &[u64], share: Share) {
        for (k, plan) in plans.iter().enumerate() {
            if share == Share::Retired && plan.rule != AGG_SUM {
                continue;
            }
            let summed = matches!(plan.rule, AGG_SUM | AGG_LIVE);
            if summed && plan.size != DWORD_SIZE {
                // Checked at open: the plan's words lie inside the block, 8-aligned.
                let (w, n) = (plan.offset as usize / WORD, plan.words as usize);
                if let (Some(total), Some(share)) =
                    (self.words.get_mut(w..w + n), copy.get(w..w + n))
                {
                    add_words(total.as_mut_bytes(), share);
                }
                continue;
            }
            let v = value(copy, plan);
            let t = &mut self.values[k];
            *t = Some(match (plan.rule, *t) {
                (_, None) => v,
                (AGG_SUM | AGG_LIVE, Some(t)) => t.wrapping_add(v),
                (AGG_MIN, Some(t)) => t.min(v),
                (AGG_MAX, Some(t)) => t.max(v),
                _ => v, // AGG_LAST
            });
        }
    }

    /// Writes each plan's total at its place in `out`, a zeroed counter block.
    fn write(&self, plans: &[AggPlan], out: &mut [u8]) {
        for (k, plan) in plans.iter().enumerate() {
            let at = plan.offset as usize;
            // Checked at open: each value lies inside the block, aligned to its size.
            if plan.size == DWORD_SIZE {
                let v = self.values[k].unwrap_or(0) as u32;
                out[at..at + 4].copy_from_slice(&v.to_ne_bytes());
            } else if matches!(plan.rule, AGG_SUM | AGG_LIVE) {
                let (w, n) = (at / WORD, plan.words as usize);
                out[at..at + WORD * n].copy_from_slice(self.words[w..w + n].as_bytes());
            } else {
                let v = self.values[k].unwrap_or(0);
                out[at..at + WORD].copy_from_slice(&v.to_ne_bytes());
            }
        }
    }
}

/// The value of a one-value plan in the counter block `copy`: a DWORD sign-extended.
fn value(copy: &[u64], plan: &AggPlan) -> i64 {
    let (bytes, at) = (copy.as_bytes(), plan.offset as usize);
    if plan.size == DWORD_SIZE {
        i64::from(i32::from_ne_bytes(word_at(bytes, at)))
    } else {
        i64::from_ne_bytes(word_at(bytes, at))
    }
}

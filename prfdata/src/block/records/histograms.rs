//! The histograms of a block's records, checked when the block is opened: each
//! `PERF_PRFDATA_HISTOGRAM` counter record's descriptor (in the descriptor region after the
//! counter records), its size, the sum and base before it, its aggregation and its shard words.
//! What a copy of a counter block then needs (the descriptor written, the count computed) is a
//! [`CounterBlockFixups`] histogram fix-up.
//!
//! ```text
//! counter records   … | sum (PERF_AVERAGE_BULK) | base (PERF_AVERAGE_BASE) | buckets | …
//!                                                           histogram: offset ──┐
//! descriptor region (8-aligned, before the members table)  D words  ◄───────────┘
//! counter block     … | sum u64 | base u32 | D words (zero) | n bucket words | …
//! ```

use std::mem::offset_of;

use prfdata_rules::histogram::{Descriptor, MAX_DESCRIPTOR_WORDS};
use prfdata_wire::build::CounterBlockFixups;

use super::CounterInfo;
use crate::layout::{CounterRecord, AGG_SUM, COUNTER_RECORD_SIZE, WORD};
use crate::reader::error::{field, ReadError};
use crate::winperf;

/// Where the block's descriptor region lies (from the end of the counter records, 8-aligned,
/// to the members table) and its words as read when the block was opened.
#[derive(Debug)]
pub(crate) struct Region {
    /// The region's offset in the block.
    pub(crate) start: u64,
    /// Its words, little-endian as the writer stored them, read once.
    pub(crate) words: Vec<u64>,
}

/// One histogram of an object, checked: what a copy of its counter blocks needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Offset of the value (the descriptor's first word) in the counter block.
    pub(crate) value: u32,
    /// The descriptor's words, as the record's geometry encodes them.
    pub(crate) descriptor: Vec<u64>,
    /// Buckets, one `u64` each after the descriptor.
    pub(crate) buckets: u32,
    /// Offset of the base (the count mod 2^32) in the counter block.
    pub(crate) base: u32,
    /// The first of the buckets' words in the shard lines, if they are sharded.
    pub(crate) shard: Option<u32>,
}

impl Plan {
    /// Offset of bucket `j` in the counter block (inside it: checked at open).
    pub(crate) fn bucket(&self, j: u32) -> u32 {
        self.value + WORD as u32 * (self.descriptor.len() as u32 + j)
    }

    /// Adds the histogram's fix-up to `fixups`.
    pub(crate) fn add_to(&self, fixups: &mut CounterBlockFixups) {
        fixups.histogram(self.value, self.descriptor.clone(), self.buckets, self.base);
    }
}

/// Checks the histograms among an object's counters (`own`, their records at `records_at`)
/// against the descriptor region and the object's shard line of `line_words` words (0 without
/// one); returns their plans.
pub(crate) fn check(
    own: &[CounterInfo],
    records_at: u64,
    region: &Region,
    line_words: u64,
) -> Result<Vec<Plan>, ReadError> {
    let mut plans = Vec::new();
    for (i, c) in own.iter().enumerate() {
        let at = records_at + (i * COUNTER_RECORD_SIZE) as u64;
        let descriptor_at = at + offset_of!(CounterRecord, histogram) as u64;
        if c.counter_type != winperf::PERF_PRFDATA_HISTOGRAM {
            let none = c.histogram == 0;
            ensure(
                none,
                descriptor_at,
                "histogram descriptor offset",
                c.histogram,
            )?;
            continue;
        }
        let descriptor = descriptor(c, region, descriptor_at)?;
        let n = c.size / WORD as u32 - descriptor.len() as u32;
        // The sum and the base right before it, in the same object.
        let pair = i
            .checked_sub(2)
            .map(|s| (&own[s], &own[s + 1]))
            .filter(|(sum, base)| {
                sum.counter_type == winperf::PERF_AVERAGE_BULK
                    && sum.sum_parts().is_none()
                    && sum.aggregate.is_some_and(|a| a.code() == AGG_SUM)
                    && base.counter_type == winperf::PERF_AVERAGE_BASE
            });
        let Some((_, base)) = pair else {
            return Err(field(at, "histogram's sum and base", c.counter_type));
        };
        let type_at = at + offset_of!(CounterRecord, counter_type) as u64;
        let rule = c.aggregate.map(|a| a.code());
        ensure(
            rule == Some(AGG_SUM),
            type_at,
            "histogram aggregation",
            rule.unwrap_or(0),
        )?;
        if let Some(k) = c.shard {
            let inside = u64::from(k) + u64::from(n) <= line_words;
            let shard_at = at + offset_of!(CounterRecord, shard) as u64;
            ensure(inside, shard_at, "histogram shard words", k)?;
        }
        plans.push(Plan {
            value: c.block_offset,
            descriptor,
            buckets: n,
            base: base.block_offset,
            shard: c.shard,
        });
    }
    Ok(plans)
}

/// The descriptor of histogram record `c` (its descriptor offset field at `at`): inside the
/// region, 8-aligned, decoding to a geometry whose descriptor is exactly these words and whose
/// buckets with it make the record's size.
fn descriptor(c: &CounterInfo, region: &Region, at: u64) -> Result<Vec<u64>, ReadError> {
    let bad = || field(at, "histogram descriptor", c.histogram);
    let start = u64::from(c.histogram);
    let words = start
        .checked_sub(region.start)
        .filter(|d| start != 0 && d.is_multiple_of(WORD as u64))
        .and_then(|d| region.words.get((d / WORD as u64) as usize..))
        .ok_or_else(bad)?;
    // The value as decode sees it: the descriptor words the region holds (at most the most a
    // descriptor takes), then zeros for the counts, `size / 8` words in all.
    let value_words = (c.size / WORD as u32) as usize;
    if !c.size.is_multiple_of(WORD as u32) || !c.block_offset.is_multiple_of(WORD as u32) {
        return Err(field(at, "histogram size", c.size));
    }
    let mut value = vec![0u64; value_words];
    let held = words.len().min(MAX_DESCRIPTOR_WORDS).min(value_words);
    value[..held].copy_from_slice(&words[..held]);
    let (geometry, d) = Descriptor::decode(&value).map_err(|_| bad())?;
    // Canonical and inside the region: the words are the geometry's own descriptor.
    let own = Descriptor::of(&geometry);
    if d > held || own.words() != &words[..d] {
        return Err(bad());
    }
    Ok(own.words().to_vec())
}

/// `Ok` if `ok`, else the refusal of the field at `at` holding `value`.
fn ensure(ok: bool, at: u64, what: &'static str, value: impl Into<u64>) -> Result<(), ReadError> {
    if ok {
        Ok(())
    } else {
        Err(field(at, what, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_rules::histogram::{Explicit, Geometry, LogLinear, Unit};

    /// Where the records of the test object start, and the descriptor region.
    const RECORDS: u64 = 1024;
    const REGION: u64 = 4096;

    fn geometry() -> Geometry {
        Geometry::LogLinear(LogLinear::new(Unit::Microseconds, 10, 10_000, 3).unwrap())
    }

    /// A sum at 8, a base at 16, the histogram of `g` at 24 (its descriptor at `REGION + 8`),
    /// its buckets sharded from word `shard`; and the region holding the descriptor.
    fn object(g: &Geometry, shard: Option<u32>) -> (Vec<CounterInfo>, Region) {
        let d = Descriptor::of(g);
        let size = 8 * (d.words().len() + g.buckets()) as u32;
        let own = vec![
            CounterInfo::checked(winperf::PERF_AVERAGE_BULK, (8, 8), Some(0), 0),
            CounterInfo::checked(winperf::PERF_AVERAGE_BASE, (4, 16), None, 0),
            CounterInfo::checked(
                winperf::PERF_PRFDATA_HISTOGRAM,
                (size, 24),
                shard,
                REGION as u32 + 8,
            ),
        ];
        let mut words = vec![0xdead];
        words.extend_from_slice(d.words());
        (
            own,
            Region {
                start: REGION,
                words,
            },
        )
    }

    /// Offset of field `field` of record `i`.
    fn record(i: usize, field: usize) -> u64 {
        RECORDS + (i * COUNTER_RECORD_SIZE + field) as u64
    }

    /// The offset a refusal names.
    fn refused(r: Result<Vec<Plan>, ReadError>) -> u64 {
        match r {
            Err(ReadError::Field { offset, .. }) => offset,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_histogram_gives_its_descriptor_buckets_base_and_shard_words() {
        let g = geometry();
        let (own, region) = object(&g, Some(1));
        let n = g.buckets() as u32;
        let plans = check(&own, RECORDS, &region, 1 + u64::from(n)).unwrap();
        assert_eq!(
            plans,
            [Plan {
                value: 24,
                descriptor: Descriptor::of(&g).words().to_vec(),
                buckets: n,
                base: 16,
                shard: Some(1),
            }]
        );
        assert_eq!(
            plans[0].bucket(0),
            24 + 16,
            "after the two descriptor words"
        );
    }

    #[test]
    fn explicit_bounds_are_read_from_the_region() {
        let g = Geometry::Explicit(Explicit::new(Unit::Bytes, &[64, 1024, 65536]).unwrap());
        let (own, region) = object(&g, None);
        let plans = check(&own, RECORDS, &region, 0).unwrap();
        assert_eq!(plans[0].descriptor.len(), 5);
        assert_eq!(plans[0].buckets, 4);
    }

    #[test]
    fn a_descriptor_outside_the_region_or_misaligned_is_refused_at_its_offset() {
        let at = record(2, offset_of!(CounterRecord, histogram));
        for offset in [
            0,
            8,
            REGION as u32 - 8,
            REGION as u32 + 12,
            REGION as u32 + 24,
            u32::MAX,
        ] {
            let (mut own, region) = object(&geometry(), None);
            own[2].histogram = offset;
            assert_eq!(refused(check(&own, RECORDS, &region, 0)), at, "{offset}");
        }
    }

    #[test]
    fn a_corrupt_descriptor_word_is_refused() {
        let at = record(2, offset_of!(CounterRecord, histogram));
        for (word, value) in [(1, 0x4749), (1, 0), (2, 1 << 40), (2, 0)] {
            let (own, mut region) = object(&geometry(), None);
            region.words[word] ^= value | 1;
            assert_eq!(refused(check(&own, RECORDS, &region, 0)), at, "{word}");
        }
    }

    #[test]
    fn a_size_that_is_not_the_descriptor_and_buckets_is_refused() {
        let at = record(2, offset_of!(CounterRecord, histogram));
        for delta in [8i64, -8, 4] {
            let (mut own, region) = object(&geometry(), None);
            own[2].size = (i64::from(own[2].size) + delta) as u32;
            assert_eq!(refused(check(&own, RECORDS, &region, 0)), at, "{delta}");
        }
    }

    #[test]
    fn a_histogram_without_its_sum_and_base_before_it_is_refused() {
        let (own, region) = object(&geometry(), None);
        assert_eq!(refused(check(&own[1..], RECORDS, &region, 0)), record(1, 0));
        let mut swapped = own.clone();
        swapped.swap(0, 1);
        assert_eq!(refused(check(&swapped, RECORDS, &region, 0)), record(2, 0));
        let mut not_summed = own.clone();
        not_summed[0].aggregate = Some(crate::map::Aggregate::Max);
        assert_eq!(
            refused(check(&not_summed, RECORDS, &region, 0)),
            record(2, 0)
        );
    }

    #[test]
    fn buckets_that_do_not_aggregate_as_a_sum_are_refused() {
        let (mut own, region) = object(&geometry(), None);
        own[2].aggregate = Some(crate::map::Aggregate::Last);
        let at = record(2, offset_of!(CounterRecord, counter_type));
        assert_eq!(refused(check(&own, RECORDS, &region, 0)), at);
    }

    #[test]
    fn sharded_buckets_past_the_shard_line_are_refused() {
        let g = geometry();
        let (own, region) = object(&g, Some(1));
        let at = record(2, offset_of!(CounterRecord, shard));
        let n = g.buckets() as u64;
        assert_eq!(refused(check(&own, RECORDS, &region, n)), at);
    }

    #[test]
    fn another_counter_naming_a_descriptor_is_refused() {
        let (mut own, region) = object(&geometry(), None);
        own[0].histogram = REGION as u32 + 8;
        let at = record(0, offset_of!(CounterRecord, histogram));
        assert_eq!(refused(check(&own, RECORDS, &region, 0)), at);
    }
}

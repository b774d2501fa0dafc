//! Every limit of a map and of a block, once. A map past one does not compile (the map macro
//! points at the token, prfdata's `const` validation checks the whole map again); a block past
//! one is refused by prfdata's reader.
//!
//! # Examples
//!
//! ```
//! use prfdata_rules::limits::{MAX_SHARDED, MAX_SUM_PARTS};
//!
//! assert_eq!(MAX_SUM_PARTS, 8);
//! assert_eq!(MAX_SHARDED, 64);
//! ```

/// The longest app name, in bytes: what the block header's `app_name` field holds. It names the
/// block file and the `Services` key, so it is also prfdata-untrusted's app-name limit.
pub const MAX_APP_NAME: usize = 64;
/// The most objects a block may declare.
pub const MAX_OBJECTS: u32 = 4096;
/// The most counters a block may declare, all objects together.
pub const MAX_COUNTERS: u32 = 65536;
/// The largest counter block (one instance's counters), in bytes: 1 MiB.
pub const MAX_COUNTER_BLOCK: u32 = 1 << 20;
/// The most instances one object may declare: keeps a block's size well inside `u32` offsets.
pub const MAX_INSTANCES: u32 = 1 << 20;
/// The longest instance name perflib accepts (winperf.h `PERF_MAX_INSTANCE_NAME`), in UTF-16
/// code units; also the most room a text counter may have.
pub const MAX_INSTANCE_NAME: u32 = 1024;
/// The most counters a sum adds: `MAXCOMPLEXSUBSTAT` of the Windows 95 System Monitor's
/// stat-server interface (perf.h), where a complex stat sums at most that many stats.
pub const MAX_SUM_PARTS: usize = 8;
/// The most sharded counters an object may declare.
pub const MAX_SHARDED: u32 = 64;
/// The longest shard line, in bytes: 64 KiB, 8192 words. A sharded counter takes one word of
/// each line, a `sharded: true` histogram one per bucket, so an object's sharded counters and
/// sharded histograms together take at most this many bytes per line.
pub const MAX_SHARD_LINE: u32 = 64 * 1024;
/// Shard slots per object with sharded counters: threads that update its sharded counters
/// without a locked instruction at once (more share the counter's own value with atomic adds).
pub const SHARD_SLOTS: u32 = 16;
/// The most buckets a histogram may have, underflow and overflow included: 32 KiB of counts per
/// copy. Enough for 1 % from 1 µs to 60 s (3304 buckets); 1 % from 1 ns to 1000 s (4330) is
/// refused.
pub const MAX_HISTOGRAM_BUCKETS: u32 = 4096;
/// The most explicit bounds a histogram may give (`buckets: [..]`): its index compares a value
/// with each, so they stay few; log-linear buckets serve more.
pub const MAX_EXPLICIT_BOUNDS: usize = 64;
/// The largest block prfdata creates or opens: 1 GiB.
pub const MAX_BLOCK_SIZE: u64 = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits fit the block's `u32` offsets together: the largest counter block with every
    /// shard line, times the most instances, stays addressable by `u64` sizes and the cap is
    /// below `u32::MAX`, so a block within it is addressed by `u32` offsets.
    #[test]
    fn the_limits_fit_a_block_of_u32_offsets() {
        assert!(MAX_BLOCK_SIZE < u64::from(u32::MAX));
        let shard_lines = u64::from(SHARD_SLOTS) * u64::from(MAX_SHARD_LINE);
        assert!(u64::from(MAX_SHARDED) * 8 <= u64::from(MAX_SHARD_LINE));
        // A sharded histogram of the most buckets fits a line beside the most sharded counters.
        assert!(u64::from(MAX_HISTOGRAM_BUCKETS + MAX_SHARDED) * 8 <= u64::from(MAX_SHARD_LINE));
        let stride = u64::from(MAX_COUNTER_BLOCK) + shard_lines;
        assert!(stride.checked_mul(u64::from(MAX_INSTANCES)).is_some());
        // A text counter's room is counted in the instance-name unit and must fit its block.
        assert!(u64::from(MAX_INSTANCE_NAME) * 2 <= u64::from(MAX_COUNTER_BLOCK));
        // The app name fits a file name with the `.blk` suffix and temporary names beside it.
        assert!(MAX_APP_NAME + ".blk.tmp.4294967295".len() <= 255);
    }
}

//! The raw layout of a shared counter block: records, offsets, and their computation from a map.
//!
//! A block describes itself, so one generic provider library serves every application (CPrfData
//! compiled the map into each application's DLL instead):
//!
//! ```text
//! offset 0    BlockHeader (256 bytes)    magic, layout version, sizes, owner pid + start time,
//!                                        generation, the consistency sequence, the Optex
//!        256  ObjectRecord × objects     128 bytes each: definitions + instance bookkeeping
//!             CounterRecord × counters   64 bytes each, in object order
//!             descriptors                u64 × D per histogram, in counter order: the
//!                                        descriptor of each PERF_PRFDATA_HISTOGRAM record
//!                                        (`CounterRecord::histogram`, LAYOUT_VERSION 11)
//!             (padding to 64)
//!             MemberEntry × MAX_MEMBERS  16 bytes each: the attached processes (LAYOUT_VERSION 7)
//!             per object, each region 64-aligned:
//!               live list   u32 × max     slot numbers of live instances, dense
//!               slots       SlotHeader (64 bytes) + UTF-16 name, × max
//!               shard owners u64 × SHARD_SLOTS, only with sharded counters (LAYOUT_VERSION 8)
//!               data        counter block × (max + 1) (or × 1 without instances): the
//!                           last one is the retired accumulator (LAYOUT_VERSION 6), one
//!                           every `block_stride` bytes (LAYOUT_VERSION 8):
//!
//!   block_stride (a multiple of CACHE_LINE unless the object is `packed`)
//!   ├─ counter block (counter_block_size)   the PERF_COUNTER_BLOCK a provider copies
//!   ├─ padding to shard_start (CACHE_LINE-aligned)
//!   ├─ shard line 0 .. SHARD_SLOTS-1        shard_line bytes each: one u64 per sharded counter,
//!   │                                       n per `sharded: true` histogram (LAYOUT_VERSION 11)
//!   └─ padding to the stride
//! ```
//!
//! Cache lines (LAYOUT_VERSION 8): an instanced object's counter blocks are `CACHE_LINE` (128)
//! bytes apart at least, so two threads updating two instances never share a line (the
//! reasoning of crossbeam-utils' `CachePadded`: on x86-64 the adjacent-line prefetcher pairs
//! 64-byte lines). A map's `packed: true` keeps the dense stride (the block size rounded to 8).
//! A *sharded* counter (`CounterRecord::shard`) is the sum of its value in the counter block
//! and of one u64 in each shard line; a thread that owns shard slot `s` (its owner word, in the
//! shard owners region, holds the thread's process) adds to line `s` with a plain load and
//! store; readers add the lines up.
//!
//! A *histogram* (LAYOUT_VERSION 11) is three consecutive counters of one object: its sum (a
//! named `PERF_AVERAGE_BULK`, always sharded), its count (a `PERF_AVERAGE_BASE` the app never
//! writes: readers store the count of each copy in it) and its buckets (an unnamed
//! [`PERF_PRFDATA_HISTOGRAM`](crate::winperf::PERF_PRFDATA_HISTOGRAM)). The buckets' value is D
//! descriptor words (prfdata-rules' `histogram::Descriptor`), zero in the block and written by
//! readers into each copy from the descriptor region, then n bucket counts the app adds to:
//!
//! ```text
//!   counter block   … | sum u64 | base u32 | pad | descriptor: D × u64, zero | n × u64 buckets | …
//!   descriptors     the D words of each histogram, at CounterRecord::histogram
//!   shard line      … | the sum's word | the n bucket words (only with `sharded: true`) | …
//! ```
//!
//! A counter block is laid out as perflib's `PERF_COUNTER_BLOCK`: a `u32` ByteLength (padded to
//! 8 bytes), then each counter at its `CounterOffset`, aligned to its size, so that 64-bit values
//! are 8-aligned, one instance's counters are contiguous, and a provider copies blocks as they are.
//!
//! Every field that changes after creation is reached as an atomic through its offset (the
//! `*_OFFSET` constants below); the rest is written once, before the block is published.
//! Everything here is also read by other processes, which treat it as untrusted input.

use core::mem::{offset_of, size_of};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The block's magic: the first eight bytes of every block.
pub const MAGIC: [u8; 8] = *b"PRFDATA\0";
/// The layout version this crate writes and reads; a block of another version is refused.
///
/// `CHANGELOG.md` at the repository's root says what each version changed.
pub const LAYOUT_VERSION: u32 = 11;
/// Size of [`BlockHeader`].
pub const HEADER_SIZE: usize = 256;
/// Size of [`ObjectRecord`].
pub const OBJECT_RECORD_SIZE: usize = 128;
/// Size of [`CounterRecord`].
pub const COUNTER_RECORD_SIZE: usize = 64;
/// Size of [`SlotHeader`], before the instance name.
pub const SLOT_HEADER_SIZE: usize = 64;
/// Bytes before the first counter of a counter block: ByteLength and padding to 8.
pub const COUNTER_BLOCK_HEADER: usize = 8;
/// Bytes of one live-list entry: a slot number (`u32`).
pub const LIVE_ENTRY_SIZE: usize = size_of::<u32>();
/// Bytes of one UTF-16 code unit of an instance name or a text counter.
pub const NAME_UNIT_SIZE: usize = size_of::<u16>();
/// The word blocks are laid out and copied in: slots, names (padded), counter blocks and 64-bit
/// values are multiples of it and aligned to it, so a reader copies them as whole `u64`s.
pub const WORD: usize = size_of::<u64>();
/// Bytes of a counter block's ByteLength field (a `u32` at offset 0, perflib's
/// `PERF_COUNTER_BLOCK`).
pub const BYTE_LENGTH_SIZE: usize = size_of::<u32>();
/// Bytes of a DWORD counter's value (`PERF_SIZE_DWORD`).
pub const DWORD_SIZE: u32 = size_of::<u32>() as u32;
/// Bytes of a LARGE counter's value (`PERF_SIZE_LARGE`).
pub const LARGE_SIZE: u32 = size_of::<u64>() as u32;
/// Alignment of every region: a cache line, so the regions of different objects never share one.
pub const REGION_ALIGN: usize = 64;
/// The cache line instances are padded to: 128 bytes, as crossbeam-utils' `CachePadded` on
/// x86-64 and aarch64 (Intel's adjacent-line prefetcher fetches 64-byte lines in pairs, Intel
/// 64 and IA-32 Optimization Reference Manual, 2.5.5.4; Apple's M-series lines are 128 bytes).
/// The same on every target, as a shared layout must be.
pub const CACHE_LINE: usize = 128;
/// The largest distance between two counter blocks: a counter block, padding and
/// [`SHARD_SLOTS`] shard lines of [`MAX_SHARD_LINE`] bytes.
pub const MAX_BLOCK_STRIDE: u32 =
    MAX_COUNTER_BLOCK + 2 * CACHE_LINE as u32 + SHARD_SLOTS * MAX_SHARD_LINE;

// Limits: what a block may declare, from prfdata-rules (the map macro checks the same). A map
// past one of them does not compile (the map's validation, `map::validate`); a block
// past one is refused by the reader. [`MAX_BLOCK_SIZE`], the largest block prfdata creates or
// opens, also caps a file at a block's path: a larger one is not a block
// ([`Error::TooLarge`](crate::Error::TooLarge)) and is never mapped. Activation reserves every
// page of a block in its tmpfs (so that a full `/dev/shm` fails the activation rather than the
// app later), so a block costs its whole size in memory from the start: a counter block of 64
// bytes for each of 1024 instances with 64-unit names takes about 260 KiB, far below the cap.
pub use prfdata_rules::limits::{
    MAX_APP_NAME, MAX_BLOCK_SIZE, MAX_COUNTERS, MAX_COUNTER_BLOCK, MAX_INSTANCES,
    MAX_INSTANCE_NAME, MAX_OBJECTS, MAX_SHARD_LINE, MAX_SUM_PARTS, SHARD_SLOTS,
};

/// `CounterRecord::name_offset` of a base counter, which has no name of its own.
pub const NO_NAME: u32 = u32::MAX;

/// `ObjectRecord::flags`: the object has instances.
pub const OBJECT_INSTANCED: u32 = 1;
/// `ObjectRecord::flags`: the object is only collected by a "Costly" query.
pub const OBJECT_COSTLY: u32 = 2;
/// `ObjectRecord::flags`: readers show a synthesised `_Total` instance, last ([`LAYOUT_VERSION`]
/// 6).
pub const OBJECT_TOTAL: u32 = 4;

/// `CounterRecord::aggregate`: no aggregation (text counters): `_Total` shows zeros.
pub const AGG_NONE: u32 = 0;
/// `CounterRecord::aggregate`: `_Total` is the sum of the live instances plus the retired
/// accumulator, into which every departed instance's value is folded (counts, timers).
pub const AGG_SUM: u32 = 1;
/// `CounterRecord::aggregate`: `_Total` is the sum of the live instances (gauges): a departed
/// instance's share is dropped.
pub const AGG_LIVE: u32 = 2;
/// `CounterRecord::aggregate`: `_Total` is the smallest value of a live instance.
pub const AGG_MIN: u32 = 3;
/// `CounterRecord::aggregate`: `_Total` is the largest value of a live instance.
pub const AGG_MAX: u32 = 4;
/// `CounterRecord::aggregate`: `_Total` is the value of the live instance listed last.
pub const AGG_LAST: u32 = 5;

/// The most processes attached to one block at a time (the members table's length): a process
/// past it is refused ([`Error::TooManyProcesses`](crate::Error::TooManyProcesses)). 256 entries
/// of 16 bytes: one 4 KiB page per block.
pub const MAX_MEMBERS: u32 = 256;
/// Size of [`MemberEntry`].
pub const MEMBER_ENTRY_SIZE: usize = 16;

/// One entry of the members table: a process attached to the block ([`LAYOUT_VERSION`] 7).
///
/// ```text
///  0 pid (0: free)   4 reserved, zero   8 start_time (u64)
/// ```
///
/// Written and cleared only under the block's optex. Joining writes `start_time` first, then
/// `pid`; leaving clears `pid` first: a process killed half-way leaves a free entry or a whole
/// one, never a pid with another process's start time. The table is a list for people and
/// tools, not a proof: an entry is only a claim, alive while its process's presence lock
/// ([`PRESENCE_BASE`]) is held, and no process decides from it whether it is the last member
/// or whether to adopt the block (the block's `flock` does, [`LAYOUT_VERSION`] 10). Pids are as
/// each member's own pid namespace numbers it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MemberEntry {
    /// The member's pid, 0 for a free entry.
    pub pid: u32,
    /// Reserved, zero.
    pub _reserved: u32,
    /// The member's start time (clock ticks since boot, `crate::process::ProcessId`).
    pub start_time: u64,
}

/// Offset of [`MemberEntry::pid`].
pub const MEMBER_PID_OFFSET: usize = offset_of!(MemberEntry, pid);
/// Offset of [`MemberEntry::start_time`].
pub const MEMBER_START_OFFSET: usize = offset_of!(MemberEntry, start_time);

/// Where the presence locks of a block's processes lie in its file: byte `PRESENCE_BASE +
/// (start_tag << 30 | pid)` is the one of the process `pid` whose start time has the tag
/// `start_tag` (`crate::process::start_tag`), as the optex's state word names its owner
/// ([`LAYOUT_VERSION`] 10). Far past the end of any block ([`MAX_BLOCK_SIZE`]): the bytes are
/// never written, only locked.
///
/// ```text
///  0                     total_size            2^62 = PRESENCE_BASE                  2^63
///  | the block           |   (nothing)         | one byte per (start tag, pid)       |
///                                              |  <- shared OFD lock: "I am here"     |
/// ```
///
/// Each process that opens a block to write it (a member, a forked child writing through its
/// parent's handle, a reader repairing it) holds a shared open-file-description lock
/// (`F_OFD_SETLK`, `F_RDLCK`) on its byte, through a file description of its own, for as long as
/// it may hold the block's optex, own an instance or a shard slot. The kernel drops the lock
/// when the process dies, however it dies, and a probe (`F_OFD_GETLK`, which takes nothing)
/// sees it from any process and any pid namespace: the byte is locked exactly while the
/// process it names is there.
pub const PRESENCE_BASE: u64 = 1 << 62;
/// Bits of a presence byte's key that hold the pid: those of the optex's owner field (Linux
/// pids are below `PID_MAX_LIMIT`, 2^22, include/linux/threads.h).
pub const PRESENCE_PID_BITS: u32 = 30;

/// The presence byte ([`PRESENCE_BASE`]) of the process `pid` with start tag `start_tag`.
///
/// # Examples
///
/// ```
/// use prfdata::layout::{presence_offset, PRESENCE_BASE};
/// assert_eq!(presence_offset(7, 0), PRESENCE_BASE + 7);
/// assert_eq!(presence_offset(7, 1), PRESENCE_BASE + (1 << 30) + 7);
/// assert!(presence_offset(u32::MAX, u32::MAX) < 1 << 63);
/// ```
pub const fn presence_offset(pid: u32, start_tag: u32) -> u64 {
    let pid = pid as u64 & ((1 << PRESENCE_PID_BITS) - 1);
    PRESENCE_BASE + ((start_tag as u64) << PRESENCE_PID_BITS | pid)
}

/// `SlotHeader::state` of a free slot.
pub const SLOT_FREE: u32 = 0;
/// `SlotHeader::state` of a live instance: written last when adding, first when removing.
pub const SLOT_LIVE: u32 = 1;

/// The block header (256 bytes at offset 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct BlockHeader {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`LAYOUT_VERSION`].
    pub layout_version: u32,
    /// [`HEADER_SIZE`].
    pub header_size: u32,
    /// Bytes of the whole block; the file is exactly this long.
    pub total_size: u64,
    /// Pid of the process that published the block (its first member; the members table lists
    /// every process attached now, and the block outlives this one).
    pub owner_pid: u32,
    /// Number of object records.
    pub num_objects: u32,
    /// Start time of the owner process (clock ticks since boot), to tell a reused pid.
    pub owner_start_time: u64,
    /// Number of counter records.
    pub num_counters: u32,
    /// Offset of the first object record.
    pub objects_offset: u32,
    /// Offset of the first counter record.
    pub counters_offset: u32,
    /// Explicit padding.
    pub _pad0: u32,
    /// Ticks per second of the object timer (`PERF_OBJECT_TIMER` counters, each object's
    /// PerfTime): [`filetime::OBJECT_FREQUENCY`](prfdata_wire::filetime::OBJECT_FREQUENCY), the wall clock in
    /// FILETIME units, as NT's Process object. Readers refuse any other value.
    pub timer_freq: u64,
    /// The consistency sequence (atomic): odd while a writer holding the optex changes the
    /// instance tables or holds `lock_ctrs`; readers retry when it is odd or has moved.
    pub seq: u64,
    /// A number unique to this activation: a reader that sees it change knows the block was
    /// replaced under it.
    pub generation: u64,
    /// The app name, UTF-8, NUL-padded.
    pub app_name: [u8; 64],
    /// The fingerprint of the map's names (`MapDef::fingerprint`): install records the same
    /// number in the registry, and a provider serves no data for a block whose fingerprint is
    /// not the one installed ([`LAYOUT_VERSION`] 4).
    pub map_fingerprint: u64,
    /// Nonzero once a newer layout of the block was published over its path (atomic; run-time
    /// objects, `crate::dynamic`): the processes that write it reopen the path. Written under
    /// the optex, after the last value was copied to the new block ([`LAYOUT_VERSION`] 4).
    pub superseded: u32,
    /// Explicit padding.
    pub _pad1: u32,
    /// On-demand counters (the Windows 95 stat servers' `PSTF_FUNCPTR`): the request generation
    /// (atomic, a futex word). A collector that wants fresh on-demand values and finds no request
    /// pending (`od_request == od_served`) increments it and wakes the app's servicing thread,
    /// which sleeps on it. The only word of the block a reader writes.
    pub od_request: u32,
    /// The generation of the last request the app served (atomic, a futex word): the app
    /// stores the request it read once every closure's value is in its counter, then wakes the
    /// collectors waiting on it.
    pub od_served: u32,
    /// The objects whose on-demand counters are requested (atomic): bit `i % 64` for object
    /// `i`. A collector sets its objects' bits before it raises or shares a request; the app
    /// takes the mask (swapping in 0) with each request it serves and runs the closures of
    /// those objects only. Objects 64 apart share a bit (both are served).
    pub od_objects: u64,
    /// Offset of the members table ([`MemberEntry`] × [`max_members`](BlockHeader::max_members)):
    /// right after the counter records, 64-aligned ([`LAYOUT_VERSION`] 7).
    pub members_offset: u32,
    /// Entries of the members table: [`MAX_MEMBERS`].
    pub max_members: u32,
    /// Nonzero once the last member decided to remove the block (atomic, written under the
    /// optex): a process that joins after that finds it set and opens the path again
    /// ([`LAYOUT_VERSION`] 7).
    pub closed: u32,
    /// Reserved, zero.
    pub _reserved: u32,
    /// The [`Optex`](crate::Optex) guarding layout changes (atomic, 64 bytes).
    pub optex: [u8; 64],
}

/// Offset of [`BlockHeader::seq`].
pub const SEQ_OFFSET: usize = offset_of!(BlockHeader, seq);
/// Offset of [`BlockHeader::generation`].
pub const GENERATION_OFFSET: usize = offset_of!(BlockHeader, generation);
/// Offset of [`BlockHeader::superseded`].
pub const SUPERSEDED_OFFSET: usize = offset_of!(BlockHeader, superseded);
/// Offset of [`BlockHeader::closed`].
pub const CLOSED_OFFSET: usize = offset_of!(BlockHeader, closed);
/// Offset of [`BlockHeader::optex`].
pub const OPTEX_OFFSET: usize = offset_of!(BlockHeader, optex);
/// Offset of [`BlockHeader::od_request`].
pub const OD_REQUEST_OFFSET: usize = offset_of!(BlockHeader, od_request);
/// Offset of [`BlockHeader::od_served`].
pub const OD_SERVED_OFFSET: usize = offset_of!(BlockHeader, od_served);
/// Offset of [`BlockHeader::od_objects`].
pub const OD_OBJECTS_OFFSET: usize = offset_of!(BlockHeader, od_objects);

/// One object's record (128 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ObjectRecord {
    /// Symbolic offset: name index = First Counter + this, help index = First Help + this.
    pub name_offset: u32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
    /// Index of the default counter, or -1.
    pub default_counter: i32,
    /// Number of counters (their records are consecutive).
    pub num_counters: u32,
    /// Index of the object's first counter record.
    pub first_counter: u32,
    /// [`OBJECT_INSTANCED`] | [`OBJECT_COSTLY`].
    pub flags: u32,
    /// Most live instances (0 without instances).
    pub max_instances: u32,
    /// Longest instance name in UTF-16 units (0 without instances).
    pub max_name_len: u32,
    /// Bytes of one counter block (a multiple of 8).
    pub counter_block_size: u32,
    /// Bytes of one slot (a multiple of 8).
    pub slot_size: u32,
    /// Offset of the live list.
    pub live_offset: u64,
    /// Offset of the slots.
    pub slots_offset: u64,
    /// Offset of the counter data.
    pub data_offset: u64,
    /// Live instances (atomic): the length of the live list.
    pub live_count: u32,
    /// Head of the free list (atomic): slot number + 1, 0 when empty.
    pub free_head: u32,
    /// Slots ever used (atomic): slots at or above it are free and untouched.
    pub high_water: u32,
    /// Explicit padding.
    pub _pad: u32,
    /// Live instances owned by a process (atomic; kept by the writer under the optex, derived
    /// again by the repair after a dead writer): the writer looks for dead owners only while it
    /// is nonzero ([`LAYOUT_VERSION`] 6).
    pub owned_count: u32,
    /// Explicit padding.
    pub _pad2: u32,
    /// Bytes from one counter block to the next ([`LAYOUT_VERSION`] 8): at least
    /// `counter_block_size`, a multiple of 8; a multiple of [`CACHE_LINE`] for an instanced object
    /// the map does not pack, and for any object with sharded counters.
    pub block_stride: u32,
    /// Offset of shard line 0 inside each stride (0 without sharded counters).
    pub shard_start: u32,
    /// Bytes of one shard line: 8 per sharded counter, rounded up to [`CACHE_LINE`] (0 without
    /// sharded counters).
    pub shard_line: u32,
    /// Shard slots: lines per counter block and owner words ([`SHARD_SLOTS`], or 0 without
    /// sharded counters).
    pub shard_slots: u32,
    /// Offset of the shard owner words (`shard_slots` u64s, atomic): 0 for a free slot, else the
    /// owning process (pid in the low half, the low half of its start time in the high half).
    pub shard_owners: u64,
    /// Reserved, zero.
    pub _reserved: [u8; 16],
}

/// Offset of [`ObjectRecord::live_count`] inside the record.
pub const LIVE_COUNT_OFFSET: usize = offset_of!(ObjectRecord, live_count);
/// Offset of [`ObjectRecord::free_head`] inside the record.
pub const FREE_HEAD_OFFSET: usize = offset_of!(ObjectRecord, free_head);
/// Offset of [`ObjectRecord::high_water`] inside the record.
pub const HIGH_WATER_OFFSET: usize = offset_of!(ObjectRecord, high_water);
/// Offset of [`ObjectRecord::owned_count`] inside the record.
pub const OWNED_COUNT_OFFSET: usize = offset_of!(ObjectRecord, owned_count);

/// One counter's record (64 bytes).
///
/// ```text
///  0 name_offset   4 counter_type  8 size         12 block_offset
/// 16 default_scale 20 detail_level 24 stat_flags   28 factor
/// 32 parts: u16 × 8 (indexes among the object's counters)   48 part_count
/// 52 aggregate     56 shard         60 histogram
/// ```
///
/// `stat_flags` holds the Windows 95 stat servers' `PSTF_FUNCPTR` (on demand), `PSTF_COMPLEX` (a
/// sum of `parts[..part_count]`, which the reader computes; the app never writes its value) and
/// `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE` (with `factor`, applied to displayed values
/// only) ([`LAYOUT_VERSION`] 4).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CounterRecord {
    /// Symbolic offset, or [`NO_NAME`] for a base.
    pub name_offset: u32,
    /// The winperf.h counter type.
    pub counter_type: u32,
    /// Bytes of the value.
    pub size: u32,
    /// Offset of the value inside the counter block (`CounterOffset`).
    pub block_offset: u32,
    /// `DefaultScale`.
    pub default_scale: i32,
    /// `PERF_DETAIL_*`.
    pub detail_level: u32,
    /// The Windows 95 stat servers' `PSTF_*` flags: [`STAT_FLAGS`] says which a block may hold.
    pub stat_flags: u32,
    /// The scale factor of `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`, else 0.
    pub factor: u32,
    /// With `PSTF_COMPLEX`: the summed counters, as indexes among the object's counters.
    pub parts: [u16; MAX_SUM_PARTS],
    /// With `PSTF_COMPLEX`: how many of `parts` are used (1 to [`MAX_SUM_PARTS`]), else 0.
    pub part_count: u32,
    /// How departed instances and `_Total` aggregate this counter: `AGG_*` ([`LAYOUT_VERSION`]
    /// 6).
    pub aggregate: u32,
    /// A sharded counter ([`LAYOUT_VERSION`] 8): 1 + the index of its first u64 in the object's
    /// shard lines; 0 for any other counter. Its value is the counter block's plus every
    /// line's. A counter takes one word of each line, a `sharded: true` histogram's buckets
    /// one per bucket, consecutive from that index ([`LAYOUT_VERSION`] 11); the descriptor
    /// words are never sharded.
    pub shard: u32,
    /// For a [`PERF_PRFDATA_HISTOGRAM`](crate::winperf::PERF_PRFDATA_HISTOGRAM) counter: the
    /// offset from the start of the block of its descriptor, D little-endian u64s in the
    /// descriptor region after the counter records, 8-aligned; 0 for every other counter
    /// ([`LAYOUT_VERSION`] 11).
    pub histogram: u32,
}

// The Windows 95 System Monitor's `MAXCOMPLEXSUBSTAT` is the rules' sum limit.
const _: () = assert!(MAX_SUM_PARTS == crate::winperf::MAXCOMPLEXSUBSTAT);
/// The `PSTF_*` flags a [`CounterRecord`] may hold; a reader refuses others.
pub const STAT_FLAGS: u32 = crate::winperf::PSTF_FUNCPTR
    | crate::winperf::PSTF_COMPLEX
    | crate::winperf::PSTF_FACTOR_MULTIPLY
    | crate::winperf::PSTF_FACTOR_DIVIDE;

/// The fixed part of an instance slot (64 bytes); the UTF-16 name follows, padded to 8.
/// Every field is reached atomically.
///
/// ```text
///  0 state              4 live_pos           8 next_free         12 unique_id
/// 16 parent_object     20 parent_slot       24 name_len          28 generation
/// 32 parent_generation 36 children          40 owner_pid          44 reserved, zero
/// 48 owner_start (u64)                       56 reserved, zero (8 bytes)
/// ```
///
/// A process-owned instance ([`LAYOUT_VERSION`] 6) records its owner, pid and start time
/// (`crate::process::ProcessId`); `owner_pid` 0 is an instance no process owns. Both are written
/// before the slot's state turns LIVE and never change while it is live.
///
/// A child names its parent by object, slot *and* generation: a slot reused by another instance
/// has another generation, so a stale link never resolves to the wrong parent. `children` counts
/// the live instances whose parent link names this slot and generation; the writer keeps it
/// (adding and removing children, inside the write section) and recomputes it when it recovers
/// the block from a writer that died ([`LAYOUT_VERSION`] 3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SlotHeader {
    /// [`SLOT_FREE`] or [`SLOT_LIVE`].
    pub state: u32,
    /// Position in the live list while live.
    pub live_pos: u32,
    /// Next free slot + 1 while free (0: end of list).
    pub next_free: u32,
    /// Unique id, or `PERF_NO_UNIQUE_ID` (-1).
    pub unique_id: i32,
    /// Parent object index + 1, or 0 without a parent.
    pub parent_object: u32,
    /// Parent slot number.
    pub parent_slot: u32,
    /// Name length in UTF-16 units, NUL not counted.
    pub name_len: u32,
    /// Incremented each time the slot is given to a new instance.
    pub generation: u32,
    /// The parent's [`generation`](SlotHeader::generation) when this instance was added (0
    /// without a parent).
    pub parent_generation: u32,
    /// Live instances whose parent is this one.
    pub children: u32,
    /// The owner's pid for a process-owned instance, else 0.
    pub owner_pid: u32,
    /// Reserved, zero.
    pub _reserved0: u32,
    /// The owner's start time (clock ticks since boot) for a process-owned instance, else 0.
    pub owner_start: u64,
    /// Reserved, zero.
    pub _reserved: [u32; 2],
}

/// Offsets of the [`SlotHeader`] fields.
pub mod slot {
    use super::*;
    /// [`SlotHeader::state`].
    pub const STATE: usize = offset_of!(SlotHeader, state);
    /// [`SlotHeader::live_pos`].
    pub const LIVE_POS: usize = offset_of!(SlotHeader, live_pos);
    /// [`SlotHeader::next_free`].
    pub const NEXT_FREE: usize = offset_of!(SlotHeader, next_free);
    /// [`SlotHeader::unique_id`].
    pub const UNIQUE_ID: usize = offset_of!(SlotHeader, unique_id);
    /// [`SlotHeader::parent_object`].
    pub const PARENT_OBJECT: usize = offset_of!(SlotHeader, parent_object);
    /// [`SlotHeader::parent_slot`].
    pub const PARENT_SLOT: usize = offset_of!(SlotHeader, parent_slot);
    /// [`SlotHeader::name_len`].
    pub const NAME_LEN: usize = offset_of!(SlotHeader, name_len);
    /// [`SlotHeader::generation`].
    pub const GENERATION: usize = offset_of!(SlotHeader, generation);
    /// [`SlotHeader::parent_generation`].
    pub const PARENT_GENERATION: usize = offset_of!(SlotHeader, parent_generation);
    /// [`SlotHeader::children`].
    pub const CHILDREN: usize = offset_of!(SlotHeader, children);
    /// [`SlotHeader::owner_pid`].
    pub const OWNER_PID: usize = offset_of!(SlotHeader, owner_pid);
    /// [`SlotHeader::owner_start`].
    pub const OWNER_START: usize = offset_of!(SlotHeader, owner_start);
}

const _: () = {
    assert!(size_of::<BlockHeader>() == HEADER_SIZE);
    assert!(OPTEX_OFFSET.is_multiple_of(64));
    assert!(SEQ_OFFSET.is_multiple_of(8));
    assert!(size_of::<ObjectRecord>() == OBJECT_RECORD_SIZE);
    assert!(LIVE_COUNT_OFFSET == 64);
    assert!(size_of::<CounterRecord>() == COUNTER_RECORD_SIZE);
    // LAYOUT_VERSION 8 (fuzz/upgrade-blocks-v8.py writes the stride at this offset).
    assert!(offset_of!(ObjectRecord, block_stride) == 88);
    assert!(offset_of!(ObjectRecord, shard_owners) == 104);
    assert!(offset_of!(CounterRecord, shard) == 56);
    assert!(offset_of!(CounterRecord, histogram) == 60);
    assert!(MAX_BLOCK_STRIDE as u64 * (MAX_INSTANCES as u64 + 1) < 1 << 42);
    assert!(OD_REQUEST_OFFSET.is_multiple_of(4) && OD_SERVED_OFFSET == OD_REQUEST_OFFSET + 4);
    assert!(OD_OBJECTS_OFFSET.is_multiple_of(8) && OD_OBJECTS_OFFSET + 8 <= HEADER_SIZE);
    assert!(MAX_SUM_PARTS <= u16::MAX as usize && (MAX_COUNTERS - 1) as usize <= u16::MAX as usize);
    assert!(size_of::<SlotHeader>() == SLOT_HEADER_SIZE);
    assert!(size_of::<MemberEntry>() == MEMBER_ENTRY_SIZE && MEMBER_START_OFFSET == 8);
    assert!((MAX_MEMBERS as usize * MEMBER_ENTRY_SIZE).is_multiple_of(REGION_ALIGN));
    assert!(CLOSED_OFFSET.is_multiple_of(4));
    assert!(slot::GENERATION == 28 && slot::PARENT_GENERATION == 32 && slot::CHILDREN == 36);
    assert!(slot::OWNER_PID == 40 && slot::OWNER_START == 48);
    assert!(SLOT_HEADER_SIZE.is_multiple_of(8));
    assert!(PRESENCE_BASE > MAX_BLOCK_SIZE && PRESENCE_PID_BITS + 32 == 62);
    assert!(size_of::<[u8; MAX_APP_NAME]>() == 64);
};

/// Rounds `n` up to a multiple of `align` (a power of two): how every region and record is
/// placed (the offsets of a map's block are computed with it in [`crate::map`]).
pub const fn align_up(n: usize, align: usize) -> usize {
    (n + align - 1) & !(align - 1)
}

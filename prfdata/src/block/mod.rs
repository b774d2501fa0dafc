//! The shared counter block as the writer makes it, and the parts the reader shares with it.
//!
//! The one description of the block (`#[repr(C)]` records, named offsets, limits) is
//! [`crate::layout`], below this module.
//! - `open`: where blocks live ([`crate::shm_dir`], [`crate::block_path`]) and the opening of an
//!   existing block the writer and the reader share.
//! - `raw`: a mapping reached only through atomics; `fault`: surviving a block truncated under a
//!   read (the `SIGBUS` handler and the table of mappings being read).
//! - `create`: the writer's side: records built from a map, the file created, published,
//!   joined, adopted, removed by its last member; `members`: the table of the processes
//!   attached to a block; `presence`: the locks that tell which processes are there, across
//!   pid namespaces.
//! - `records`: the header and records a reader checks at open (with `records/histograms.rs`,
//!   the histograms among them: descriptor, sum, base, buckets).

pub(crate) mod answer;
pub(crate) mod create;
pub(crate) mod fault;
pub(crate) mod members;
pub(crate) mod open;
pub(crate) mod presence;
pub(crate) mod raw;
pub(crate) mod records;

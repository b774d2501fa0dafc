//! Reading a block another process publishes: read-only, validated, consistent, and safe
//! whatever happens to the block meanwhile. What a provider library (and any tool) uses.
//!
//! One way to read: [`BlockReader::open`] maps a block and validates its records once;
//! [`BlockReader::read_with`] then runs a closure inside one sequence window on a [`BlockView`]
//! (and its per-object [`InstanceTable`]s), which reads just what the closure asks for straight
//! from the mapping, so that a provider serialises in one pass. A result is kept only from a
//! window in which the block's sequence counter was even and did not move, so a reader never
//! sees a half-made instance and never waits on the writer's lock.
//!
//! Everything in a block is untrusted input: the records are copied out once and checked field
//! by field against the limits of the one layout description the writer uses (an error names
//! the offset, and no value read from the block can overflow an arithmetic), and every later
//! load is bounds-checked against the mapping.
//!
//! - [`BlockReader`] (`block_reader.rs`): open, validate, is the block still the one opened.
//! - [`BlockReader::read_with`], [`BlockView`], [`InstanceTable`] (`view.rs`): the window.
//! - [`ObjectInfo`], [`CounterInfo`] (`records.rs`): the validated records.
//! - [`ReadError`] (`error.rs`): what is wrong with a block, or why it could not be read now.
//! - `recover.rs`: taking over a block whose lock holder died (see the table below).
//!
//! # What a reader survives
//!
//! | what happens to the block | what the reader does |
//! |---|---|
//! | truncated, or truncated and regrown, under a read | the `SIGBUS` is caught (see below): [`ReadError::Truncated`], the reader is spent ([`BlockReader::is_replaced`]) |
//! | replaced (another file renamed over the path) | [`BlockReader::is_replaced`]; a new reader reads the new file |
//! | a FIFO, socket, directory or symlink at the path | refused at open without blocking (`O_NOFOLLOW \| O_NONBLOCK`, then `fstat`: a regular file owned by this user, mode 0600) |
//! | a file larger than [`BlockReader::MAX_BLOCK_SIZE`] | [`Error::TooLarge`](crate::Error::TooLarge), never mapped |
//! | any byte changed to anything | [`ReadError::Field`] naming the offset, or the values as written; lone surrogates in names and text served as U+FFFD |
//! | a process killed holding the lock inside a write section | the reader takes the lock over through the optex's dead-owner path and repairs the tables as a writer would, within [`BlockReader::DEAD_HOLDER_CHECK`] of the sequence staying odd |
//! | every member of the block killed (the activating process alone gone is not enough) | [`ReadError::OwnerGone`] |
//!
//! A load from a page of a block truncated under the read would raise `SIGBUS` and kill the
//! reader; no size check can close that race. Each read window therefore registers its mapping
//! with a process-wide `SIGBUS` handler, installed at the first open and chained to any handler
//! installed before, which maps zero pages over the faulting mapping; the read then reports
//! [`ReadError::Truncated`]. The design, and why it is sound, is documented once, in the source
//! of the private module `block/fault.rs`.
//!
//! # Examples
//!
//! ```
//! use std::sync::atomic::Ordering::Relaxed;
//! use prfdata::reader::BlockReader;
//!
//! prfdata::prfdata_map! {
//!     pub mod app {
//!         app: "ReaderModuleDoc",
//!         object WORKER = 0 {
//!             name: "Worker", help: "One worker.", detail: Novice, default: none,
//!             instances: { max: 4, name_len: 16 }, costly: false,
//!             counters {
//!                 JOBS = 2: RawCount { name: "Jobs", help: "Jobs done.", detail: Novice, scale: 0 },
//!             }
//!         }
//!     }
//! }
//! # std::env::set_var("PRFDATA_SHM_DIR", std::env::temp_dir());
//! let prf = app::PrfData::activate()?; // the app
//! let w = prf.add_instance(app::WORKER, "w1")?;
//! prf.get_ctr32(app::JOBS, w).store(3, Relaxed);
//!
//! let reader = BlockReader::open("ReaderModuleDoc")?; // a provider
//! let workers = reader.read_with(BlockReader::DEFAULT_READ_DEADLINE, |view| {
//!     let table = view.instances(0)?;
//!     let mut out = Vec::new();
//!     for pos in 0..table.len() {
//!         let inst = table.get(pos)?;
//!         let mut name = Vec::new();
//!         table.name_units(&inst, &mut name)?;
//!         out.push((String::from_utf16_lossy(&name), table.value(&inst, 0)?));
//!     }
//!     Ok(out)
//! })?;
//! assert_eq!(workers, [("w1".to_string(), 3)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod block_reader;
pub(crate) mod error;
mod on_demand;
mod owners;
mod recover;
mod view;

pub use crate::block::records::{CounterInfo, ObjectInfo};
pub use block_reader::BlockReader;
pub use error::ReadError;
pub use on_demand::Refresh;
pub use view::{BlockView, InstanceTable, LiveInstance, ParentLink};

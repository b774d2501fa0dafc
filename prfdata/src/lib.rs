//! Publish performance counters through shared memory at the cost of one atomic memory operation.
//!
//! `prfdata` is a Rust take on Jeffrey Richter's CPrfData (MSJ, August 1998), faithful to the NT
//! extensible-counter protocol: an application declares a performance data map, activates a
//! named shared-memory block laid out from it, adds and removes instances, and updates counters
//! through [`PrfData::get_ctr32`] / [`PrfData::get_ctr64`]; a perflib provider library reads the
//! same block through [`reader`] and serialises it.
//!
//! # Index
//!
//! **Declaring counters**
//! - [`prfdata_map!`]: the performance data map (objects, counters, types, detail levels), with
//!   defaults and computed offsets, checked at compile time (a procedural macro, crate
//!   `prfdata-macros`).
//! - [`counter_type`]: one marker type per winperf.h counter type, with its width.
//! - [`map`]: the map's definitions, typed ids and validation.
//!
//! **Publishing counters** (the app)
//! - [`PrfData`]: an activated block: instances ([`InstanceId`], [`InstanceSpec`], the
//!   [`Instance`] guard), live counters ([`PrfData::get_ctr32`] /
//!   [`PrfData::get_ctr64`]), [`ShardedCtr`] ([`PrfData::sharded`]: a counter spread over per-thread
//!   cache lines), [`CtrsGuard`] (`lock_ctrs`); [`Error`] says what went wrong and what to do;
//!   [`Departure`] ([`PrfData::close`]): whether leaving removed the block or left it to others.
//! - [`Optex`]: the cross-process lock that guards layout changes ([`optex`]); [`ProcessId`]
//!   ([`process`]): the identity (pid + start time) it records its owner by.
//! - [`clock`]: the clocks timer counters are measured against.
//! - [`shm_dir`], [`block_path`]: where blocks live (`PRFDATA_SHM_DIR`, else the user's
//!   runtime folder `$XDG_RUNTIME_DIR/prfdata` or `/run/user/<uid>/prfdata`, else
//!   `/dev/shm/prfdata-<uid>`).
//!
//! **Watch notifications** (the Windows 95 stat servers' `PMSG_START_STAT` / `PMSG_STOP_STAT`)
//! - [`watch`]: the lease table beside each block; the app asks [`PrfData::watch`] ([`watch::Watching`]:
//!   `is_watched`, `on_change`, `events`); collectors hold
//!   [`watch::Lease`]s through [`watch::WatchTable`].
//!
//! **Reading counters** (providers, tools)
//! - [`reader`]: a block another process publishes, read-only and validated, through one read
//!   path ([`reader::BlockReader::read_with`]).
//! - The perflib wire structures and counter-type bit fields are the crate `prfdata-wire`'s
//!   (`prfdata_wire::winperf`).
//!
//! **Run-time statistics** (feature `install`)
//! - `dynamic`: objects and counters added and removed after activation
//!   (`prf.dynamic()`: `add_object`, `add_counter`, `DynCounter`), in a second block laid out again on
//!   each change, their names registered at run time.
//!
//! **Installing** (feature `install`, off by default)
//! - `install`: a map's names and help into the counter-name registry and its provider
//!   registered (`PrfData::install` / `PrfData::uninstall`), through the `prfdata-registry`
//!   crate, which holds the registry, lodctr and unlodctr.
//!
//! # Inside
//!
//! Modules depend one way, from the platform up: the layers are drawn once, in the
//! repository's ARCHITECTURE.md ("Inside prfdata: one direction"), and a test checks the
//! imports against them.
//!
//! Shared memory is reached only through atomics (`block/raw.rs`); every `unsafe` block says why
//! it is sound. Messages go through the [`log`](https://docs.rs/log) facade (prfdata logs one
//! thing: an [`Instance`] guard whose removal failed when dropped); the program decides where
//! they go.
//!
//! # Cargo features
//!
//! - `install`: `PrfData::install` / `uninstall` and the `install` module (adds
//!   `prfdata-registry`, and with it serde and toml).
//! - `layout`: `prfdata::layout`, the raw block layout, for tests and fuzzers that write blocks
//!   by hand. Not covered by semver.
//!
//! # Examples
//!
//! ```
//! use std::sync::atomic::Ordering::Relaxed;
//!
//! prfdata::prfdata_map! {
//!     pub mod app {
//!         app: "PrfDataCrateDoc",
//!         object JOBS = 0 {
//!             name: "Jobs", help: "Jobs processed.", detail: Novice, default: DONE,
//!             instances: none, costly: false,
//!             counters {
//!                 DONE = 2: CounterCounter { name: "Jobs/sec", help: "Jobs done per second.", detail: Novice, scale: 0 },
//!             }
//!         }
//!     }
//! }
//! # std::env::set_var("PRFDATA_SHM_DIR", std::env::temp_dir());
//! let prf = app::PrfData::activate()?;
//! prf.get_ctr32(app::DONE, ()).fetch_add(1, Relaxed);
//! # Ok::<(), prfdata::Error>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(not(target_endian = "little"))]
compile_error!("prfdata's shared block and the perflib wire format are little-endian");

mod block;
pub mod clock;
pub mod counter_type;
#[cfg(feature = "install")]
pub mod dynamic;
#[cfg(feature = "install")]
pub mod install;
/// The raw block layout: the `#[repr(C)]` records, their named offsets and the limits. Public
/// only with the feature `layout` (off by default), for tests and fuzzers that write blocks by
/// hand (with [`map::offsets`], where a map's objects lie in its block); publishing and reading
/// counters never need it (readers get what they need of the format from [`reader`]). Not
/// covered by semver.
#[cfg(feature = "layout")]
pub mod layout;
#[cfg(not(feature = "layout"))]
pub(crate) mod layout;
pub mod map;
pub mod optex;
pub mod process;
pub mod reader;
pub mod watch;
// winperf.h's counter types, from the wire-format crate (not re-exported: one path to them).
use prfdata_wire::winperf;

mod error;
mod histogram;
mod instances;
mod on_demand;
mod prfdata;
mod shard;
mod sys;
mod text;
mod write_lock;

pub use crate::map::InstanceId;
pub use crate::prfdata::{CtrsGuard, InstanceSpec, PrfData};
pub use block::create::Departure;
pub use block::open::{block_path, shm_dir};
pub use error::Error;
pub use histogram::{HistogramCtr, HistogramTimer, TimeUnit};
pub use instances::{Instance, Instances};
pub use on_demand::OnDemand;
pub use optex::{Optex, OptexGuard};
pub use process::ProcessId;
pub use shard::ShardedCtr;
pub use text::TextCtrs;

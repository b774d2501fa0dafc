//! Publish performance counters through shared memory at the cost of one atomic memory operation.
//!
//! `prfdata` is a Rust take on Jeffrey Richter's CPrfData (MSJ, August 1998), faithful to the NT
//! extensible-counter protocol: an application declares a performance data map, installs it into
//! the counter-name registry, activates a named shared-memory block laid out from the map, adds
//! and removes instances, and updates counters through [`PrfData::get_ctr32`] /
//! [`PrfData::get_ctr64`]. A perflib provider library maps the same block and serialises it.
//!
//! # Index
//!
//! **Declaring counters**
//! - [`prfdata_map!`]: the performance data map (objects, counters, types, detail levels).
//! - [`counter_type`]: one marker type per winperf.h counter type, with its width.
//! - [`map`]: the map's definitions, typed ids and validation.
//!
//! **Publishing counters**
//! - [`PrfData`]: an activated block: instances ([`InstanceId`]) and live counters.
//! - [`Optex`]: the cross-process lock that guards layout changes.
//! - [`clock`]: the clock timer counters are measured against.
//!
//! **Reading counters (providers, tools)**
//! - [`block`]: the self-describing block layout and its validated reader, which survives a
//!   block truncated, replaced or corrupted under it and recovers a lock whose holder died.
//! - [`winperf`]: the perflib wire structures and counter-type bit fields.
//! - [`registry`]: the counter-name registry, lodctr and unlodctr.
//! - [`install`]: Install / Uninstall a map (its .INI, .h and provider registration).
//! - [`process`]: process identity (pid + start time) for liveness checks.
//!
//! **Input from elsewhere**
//! - [`untrusted`]: files another process could have placed, opened without blocking or
//!   following a planted link, regular files under a size cap only; names that become paths or
//!   registry keys, checked.
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
//! prf.get_global_ctr32(app::DONE).fetch_add(1, Relaxed);
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
pub mod install;
/// The raw block layout (feature `layout`, off by default): the `#[repr(C)]` records, their
/// named offsets and the limits, and where a map's objects lie in its block. For tests and
/// fuzzers that write blocks by hand; publishing and reading counters never need it (readers
/// get what they need of the format from [`reader`]). Not covered by semver.
#[cfg(feature = "layout")]
pub mod layout {
    pub use crate::block::layout::*;
    pub use crate::map::offsets::{
        counter_block_size, counter_offset, counters_offset, data_offset, object_base,
        object_regions, regions_offset, slot_size, total_size, ObjectRegions,
    };
}
pub mod map;
pub mod optex;
pub mod process;
pub mod reader;
pub mod winperf;

mod error;
mod instances;
mod prfdata;
mod sys;
mod write_lock;

pub use crate::prfdata::{CtrsGuard, InstanceId, InstanceSpec, PrfData};
pub use error::Error;
pub use block::open::{block_path, shm_dir};
pub use optex::{Optex, OptexGuard};
pub use process::ProcessId;

//! The shared counter block: its layout, its creation by the app, and its validated reading.
//!
//! - [`layout`]: the raw `#[repr(C)]` records and the offsets computed from a map.
//! - [`reader`]: [`BlockReader`](reader::BlockReader), the read-only, validated view providers
//!   and tools use: a [`Snapshot`](reader::Snapshot) copy, or single-pass reads inside one
//!   sequence window ([`BlockReader::read_with`](reader::BlockReader::read_with),
//!   [`BlockView`](reader::BlockView), [`InstanceTable`](reader::InstanceTable)).
//! - `fault` (private): the reader's survival of a block truncated under it (a `SIGBUS`
//!   handler and the table of mappings being read); `recover` (private): a reader's recovery
//!   of a block whose lock holder died.
//! - [`shm_dir`] / [`block_path`]: where blocks live (`PRFDATA_SHM_DIR`, else
//!   `/dev/shm/prfdata-<uid>`).

pub(crate) mod create;
pub(crate) mod fault;
pub mod layout;
pub(crate) mod raw;
pub mod reader;
pub(crate) mod recover;

pub use create::{block_path, shm_dir};

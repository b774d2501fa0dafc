//! The shared counter block: its layout, its creation by the app, and its validated reading.
//!
//! - [`layout`]: the raw `#[repr(C)]` records and the offsets computed from a map.
//! - [`reader`]: [`BlockReader`](reader::BlockReader), the read-only, validated view providers
//!   and tools use: a [`Snapshot`](reader::Snapshot) copy, or single-pass reads inside one
//!   sequence window ([`BlockReader::read_with`](reader::BlockReader::read_with),
//!   [`BlockView`](reader::BlockView), [`InstanceTable`](reader::InstanceTable)).
//! - [`shm_dir`] / [`block_path`]: where blocks live (`PRFDATA_SHM_DIR`, else
//!   `/dev/shm/prfdata-<uid>`).

pub(crate) mod create;
pub mod layout;
pub(crate) mod raw;
pub mod reader;

pub use create::{block_path, shm_dir};

//! Platform code, chosen once here so that call sites carry no `cfg`.
//!
//! Linux is the backend implemented today; a Windows backend (named file mappings, a keyed
//! event or `WaitOnAddress` for the optex, the real registry) slots in beside it with the same
//! function names.

#[cfg_attr(target_os = "linux", path = "linux/mod.rs")]
#[cfg_attr(not(target_os = "linux"), path = "unsupported.rs")]
mod imp;

#[allow(unused_imports)]
pub(crate) use imp::*;

/// Bulk copies out of shared memory with the widest untorn loads (per architecture).
pub(crate) mod wide_copy;

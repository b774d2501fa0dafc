//! prfdata's limits that a map must respect, mirrored here so that the macro can point at the
//! token that breaks one. A unit test in prfdata compares them with its own (through
//! [`crate::__limits`]), and the map's `const` validation checks them again.

/// The longest app name (prfdata `map::validate::MAX_APP_NAME`).
pub(crate) const MAX_APP_NAME: usize = 64;
/// The longest instance name, in UTF-16 units (winperf.h `PERF_MAX_INSTANCE_NAME`).
pub(crate) const MAX_INSTANCE_NAME: u64 = 1024;
/// The most instances one object may declare (prfdata `map::validate::MAX_INSTANCES`).
pub(crate) const MAX_INSTANCES: u64 = 1 << 20;

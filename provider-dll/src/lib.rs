//! The perflib provider library for prfdata blocks.
//!
//! This crate builds `libprfdata_provider.so`. It will export `OpenPerformanceData`,
//! `CollectPerformanceData` and `ClosePerformanceData` (issue 4). Until then it exports nothing,
//! so a collector that loads it finds no entry points and reports that clearly.

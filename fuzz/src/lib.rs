//! The harnesses behind prfdata's fuzz targets: everything prfdata and prfmon read from
//! elsewhere, fed hostile input, with the properties each reader promises checked on the way.
//!
//! Each target in `fuzz_targets/` is a thin `fuzz_target!` over one function here, so the
//! checks read as ordinary code and a crash input can be replayed by hand.
//!
//! # Index
//!
//! | target | input | harness | what must hold |
//! |---|---|---|---|
//! | `block_reader` | a block file, raw bytes | [`reader::check_block`] | open, read, every view call: typed errors, no panic, no fault |
//! | `block_fields` | edits of real blocks ([`mutation::BlockInput`]) | [`reader::check_block`], [`provider::check_collect`] | as above, deep inside valid blocks |
//! | `provider_collect` | a block file, raw bytes | [`provider::check_collect`] | Collect's output passes the collector's checks and decodes, for every query and buffer size; ERROR_MORE_DATA exactly when the buffer is short, writing nothing |
//! | `decode` | a PERF_DATA_BLOCK (`prfmon query --raw`) | [`consumers::check_data_block`] | decode; the table, JSON, catalog and a PDH sampler over what it decoded |
//! | `lodctr_ini` | a counter .INI file (and its symbol file) | [`registry::check_ini`] | lodctr then unlodctr on a hive; the hive still encodes and decodes |
//! | `registry_store` | `registry.toml` | [`registry::check_store`] | the file reader and `decode_hive`; encode / decode round trip; Perflib names and services read back |
//! | `pdh_path` | a counter path | [`consumers::check_path`] | parse; display and parse again is the same path; resolve against a real collection |
//!
//! Support: [`env`] (one scratch folder per process, the registry and block folder the
//! provider reads), [`maps`] (the demo's map and a map using every feature, and real blocks
//! built from them), [`block_file`] (bytes placed as an app's live block).
//!
//! A property that does not hold is a panic naming it; libFuzzer reports the input. Run one
//! target locally with `cargo +nightly fuzz run block_reader` from the repository root (see
//! docs/testing.md, "Fuzzing").

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod block_file;
pub mod consumers;
pub mod env;
pub mod maps;
pub mod mutation;
pub mod provider;
pub mod reader;
pub mod registry;

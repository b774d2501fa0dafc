//! prfdata's integration tests, in one binary (one module per feature; `common` holds what they
//! share). The compile-fail tests (trybuild) are their own binary, `tests/compile_fail.rs`.
//!
//! Tests that need another process re-execute this binary with `--exact <module>::child_entry`
//! (see `common::spawn_child`).

mod block;
mod block_files;
mod common;
mod copy_blocks;
mod corrupt_block;
mod counters;
mod dynamic;
mod fork;
mod fuzz_found;
mod histogram;
mod hostile_names;
mod hostile_reader;
mod install;
mod instance_guard;
mod instances;
mod lifecycle;
mod lock_reentry;
mod map_histogram;
mod map_macro;
mod map_validation;
mod names_fit;
mod no_space;
mod optex;
mod owned;
mod parents;
mod public_api;
mod sharded;
mod sigbus;
mod stale_temp;
mod stats;
mod watch;

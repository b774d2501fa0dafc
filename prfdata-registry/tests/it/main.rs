//! prfdata-registry's integration tests, in one binary (one module per feature).
//!
//! Tests that kill an update re-execute this binary with `--exact <module>::child_entry` and a
//! fault point (feature `fault-injection`, enabled by this crate's dev-dependencies).

mod install;
mod loadperf;
mod lodctr;
mod lodctr_encodings;
mod lodctr_spec;
mod registry_service;
mod registry_store;
mod runtime_names;

//! The provider library's integration tests, in one binary: the real cdylib loaded with
//! `dlopen`, serving real blocks of apps this binary runs as child processes (one module per
//! feature; `common` holds the library loader, the test maps and the helpers).

mod common;
mod dynamic;
mod histogram;
mod hostile_block;
mod logging;
mod names_fit;
mod owned;
mod parents;
mod provider;
mod query_rule;
mod reuse;
mod stats;

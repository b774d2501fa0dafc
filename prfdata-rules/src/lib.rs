//! The rules a prfdata map obeys, written once. The map macro (`prfdata-macros`) checks a map
//! with them at the token a mistake is about, prfdata checks a [`MapDef`] with them again in a
//! `const` and when a block is opened, and `prfdata-untrusted` takes its app-name limit from
//! here.
//!
//! - [`limits`]: every limit of a map and of a block (objects, counters, instances, names, sums,
//!   sharded counters, the block's size);
//! - [`counter_types`]: the counter types a map may name, each marker name with its winperf.h
//!   type and whether it is, or needs, a base;
//! - [`app`]: the app-name rule;
//! - [`map`]: an object's rules (app name, offset parity, language ids, instance limits) as
//!   `const fn`s, each with one message;
//! - [`counter`]: a counter's rules (its base, on demand, sums, sharded, aggregation, unit);
//! - [`histogram`]: a histogram's buckets (log-linear with a stated error, or explicit bounds),
//!   their index and edges, and the descriptor that carries them in perflib data.
//!
//! The crate depends on nothing, so the macro and the app compile nothing more for it.
//!
//! # Examples
//!
//! ```
//! use prfdata_rules::{counter_types, limits, valid_app_name};
//!
//! assert!(valid_app_name("MyApp"));
//! assert!(!valid_app_name(&"a".repeat(limits::MAX_APP_NAME + 1)));
//! assert_eq!(counter_types::marker("RawCount"), 0x0001_0000); // PERF_COUNTER_RAWCOUNT
//! ```
//!
//! [`MapDef`]: https://docs.rs/prfdata/latest/prfdata/map/struct.MapDef.html

#![cfg_attr(not(test), no_std)]

pub mod app;
pub mod counter;
pub mod counter_types;
pub mod histogram;
pub mod limits;
pub mod map;

pub use app::valid_app_name;
pub use limits::*;

/// `const` string equality (`==` on `str` is not `const`): how the rules, and prfdata's map
/// checks, compare names at compile time.
///
/// # Examples
///
/// ```
/// const SAME: bool = prfdata_rules::str_eq("009", "009");
/// assert!(SAME && !prfdata_rules::str_eq("009", "00C"));
/// ```
pub const fn str_eq(a: &str, b: &str) -> bool {
    bytes_eq(a.as_bytes(), b.as_bytes(), false)
}

/// Byte-wise equality, ASCII letters compared without case if `ignore_case`.
const fn bytes_eq(a: &[u8], b: &[u8], ignore_case: bool) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        let same = if ignore_case {
            a[i].eq_ignore_ascii_case(&b[i])
        } else {
            a[i] == b[i]
        };
        if !same {
            return false;
        }
        i += 1;
    }
    true
}

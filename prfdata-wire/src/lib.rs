//! The perflib wire format, defined once for everything that writes or reads it: prfdata's
//! block records, the provider's serializer, the collector's checks and every consumer.
//!
//! - [`build`]: the one writer of the wire format's headers (`PERF_DATA_BLOCK` and the
//!   rest), with their lengths and alignment; with `view`, whole objects from owned parts.
//! - [`filetime`]: FILETIME, the unit of the object timer and of elapsed-time start times.
//! - [`utf16`]: lone surrogates replaced in UTF-16 text.
//! - [`winperf`]: winperf.h's counter-type bit fields, the composed counter types and what a
//!   type asks of its value, and the wire structures (`PERF_DATA_BLOCK` and the rest) as they
//!   lie in the bytes: little endian, at any alignment.
//! - [`utf16`]: UTF-16 text: the lone surrogates a block's reader replaces (and, with `view`, the
//!   checks of wire text).
//!
//! With the `view` feature (what a collector reads with; an app through prfdata does without):
//! - `view`: PERF_DATA_BLOCK bytes, untrusted, checked in one pass and then read in place.
//! - `snapshot`: the view owned: the bytes kept and read in place, header fields and counter
//!   definitions copied (`Serialize` with the `serde` feature).
//! - `error`: what is wrong in the bytes, and where.
//!
//! The modules import in one direction: snapshot → view → error (and the UTF-16 checks).

pub mod build;
pub mod filetime;
pub mod utf16;
pub mod winperf;

#[cfg(feature = "view")]
pub mod error;
#[cfg(feature = "view")]
pub mod snapshot;
#[cfg(feature = "view")]
pub mod view;

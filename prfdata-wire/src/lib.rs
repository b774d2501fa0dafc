//! The perflib wire format, defined once for everything that writes or reads it: prfdata's
//! block records, the provider's serializer, the collector's checks and every consumer.
//!
//! - [`filetime`]: FILETIME, the unit of the object timer and of elapsed-time start times.
//! - [`winperf`]: winperf.h's counter-type bit fields, the composed counter types and what a
//!   type asks of its value, and the wire structures (`PERF_DATA_BLOCK` and the rest) as they
//!   lie in the bytes: little endian, at any alignment.

pub mod filetime;
pub mod winperf;

//! The counter types a map may name: each marker type of `prfdata::counter_type`, with its
//! composed winperf.h type and what it asks of its neighbours (a fraction, average, multi or
//! precision counter is read against the base counter right after it).
//!
//! prfdata declares each marker with `TYPE = marker("RawCount")` and checks at compile time
//! that the value is winperf.h's composition and that the base a row names is the one
//! winperf.h's classification requires; the map macro checks a map against this table.
//!
//! # Examples
//!
//! ```
//! use prfdata_rules::counter_types::{find, Kind};
//!
//! let timer = find("AverageTimer").unwrap();
//! assert_eq!(timer.ty, 0x3002_0400); // PERF_AVERAGE_TIMER
//! assert!(matches!(timer.kind, Kind::NeedsBase { suggest: "AverageBase", .. }));
//! ```

use crate::str_eq;

/// What a counter type asks of its neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A counter with a value of its own and no base.
    Plain,
    /// A counter whose value is read against the base counter right after it, of the winperf.h
    /// type `base_type` (two marker types share `PERF_LARGE_RAW_BASE`); `suggest` is the marker
    /// type to propose.
    NeedsBase {
        /// The composed winperf.h type of the base.
        base_type: u32,
        /// The marker type of that base to suggest.
        suggest: &'static str,
    },
    /// A base counter of the winperf.h type `base_type`: no name, help or offset of its own.
    Base {
        /// Its composed winperf.h type.
        base_type: u32,
    },
}

/// One marker type: its name, its composed winperf.h type and its [`Kind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterType {
    /// The marker type's name (`RawCount`).
    pub name: &'static str,
    /// The composed winperf.h counter type (`PERF_COUNTER_RAWCOUNT`).
    pub ty: u32,
    /// What it asks of its neighbours.
    pub kind: Kind,
}

const fn plain(name: &'static str, ty: u32) -> CounterType {
    CounterType {
        name,
        ty,
        kind: Kind::Plain,
    }
}

const fn needs(name: &'static str, ty: u32, base_type: u32, suggest: &'static str) -> CounterType {
    CounterType {
        name,
        ty,
        kind: Kind::NeedsBase { base_type, suggest },
    }
}

const fn base(name: &'static str, ty: u32) -> CounterType {
    CounterType {
        name,
        ty,
        kind: Kind::Base { base_type: ty },
    }
}

// The bases, by their composed winperf.h values.
const MULTI: u32 = 0x4203_0500; // PERF_COUNTER_MULTI_BASE
const RAW: u32 = 0x4003_0403; // PERF_RAW_BASE
const LARGE_RAW: u32 = 0x4003_0500; // PERF_LARGE_RAW_BASE
const SAMPLE: u32 = 0x4003_0401; // PERF_SAMPLE_BASE
const AVERAGE: u32 = 0x4003_0402; // PERF_AVERAGE_BASE
/// `PERF_COUNTER_TEXT`: every text marker's type (their room differs).
const TEXT: u32 = 0x0000_0B00;

/// Every marker type, in `prfdata::counter_type`'s order, with winperf.h's composed values.
pub const ALL: &[CounterType] = &[
    plain("RawCount", 0x0001_0000),         // PERF_COUNTER_RAWCOUNT
    plain("RawCountHex", 0x0000_0000),      // PERF_COUNTER_RAWCOUNT_HEX
    plain("LargeRawCount", 0x0001_0100),    // PERF_COUNTER_LARGE_RAWCOUNT
    plain("LargeRawCountHex", 0x0000_0100), // PERF_COUNTER_LARGE_RAWCOUNT_HEX
    plain("CounterCounter", 0x1041_0400),   // PERF_COUNTER_COUNTER
    plain("SampleCounter", 0x0041_0400),    // PERF_SAMPLE_COUNTER
    plain("BulkCount", 0x1041_0500),        // PERF_COUNTER_BULK_COUNT
    plain("CounterDelta", 0x0040_0400),     // PERF_COUNTER_DELTA
    plain("LargeDelta", 0x0040_0500),       // PERF_COUNTER_LARGE_DELTA
    plain("QueueLen", 0x0045_0400),         // PERF_COUNTER_QUEUELEN_TYPE
    plain("LargeQueueLen", 0x0045_0500),    // PERF_COUNTER_LARGE_QUEUELEN_TYPE
    plain("QueueLen100Ns", 0x0055_0500),    // PERF_COUNTER_100NS_QUEUELEN_TYPE
    plain("ObjTimeQueueLen", 0x0065_0500),  // PERF_COUNTER_OBJ_TIME_QUEUELEN_TYPE
    plain("CounterTimer", 0x2041_0500),     // PERF_COUNTER_TIMER
    plain("CounterTimerInv", 0x2141_0500),  // PERF_COUNTER_TIMER_INV
    plain("Timer100Ns", 0x2051_0500),       // PERF_100NSEC_TIMER
    plain("Timer100NsInv", 0x2151_0500),    // PERF_100NSEC_TIMER_INV
    plain("ObjTimeTimer", 0x2061_0500),     // PERF_OBJ_TIME_TIMER
    needs("MultiTimer", 0x2241_0500, MULTI, "MultiBase"), // PERF_COUNTER_MULTI_TIMER
    needs("MultiTimerInv", 0x2341_0500, MULTI, "MultiBase"), // PERF_COUNTER_MULTI_TIMER_INV
    needs("MultiTimer100Ns", 0x2251_0500, MULTI, "MultiBase"), // PERF_100NSEC_MULTI_TIMER
    needs("MultiTimer100NsInv", 0x2351_0500, MULTI, "MultiBase"), // PERF_100NSEC_MULTI_TIMER_INV
    base("MultiBase", MULTI),
    needs("RawFraction", 0x2002_0400, RAW, "RawBase"), // PERF_RAW_FRACTION
    base("RawBase", RAW),
    needs("LargeRawFraction", 0x2002_0500, LARGE_RAW, "LargeRawBase"), // PERF_LARGE_RAW_FRACTION
    base("LargeRawBase", LARGE_RAW),
    needs("SampleFraction", 0x20C2_0400, SAMPLE, "SampleBase"), // PERF_SAMPLE_FRACTION
    base("SampleBase", SAMPLE),
    needs("AverageTimer", 0x3002_0400, AVERAGE, "AverageBase"), // PERF_AVERAGE_TIMER
    needs("AverageBulk", 0x4002_0500, AVERAGE, "AverageBase"),  // PERF_AVERAGE_BULK
    base("AverageBase", AVERAGE),
    // winperf.h: `#define PERF_PRECISION_TIMESTAMP PERF_LARGE_RAW_BASE`.
    needs(
        "PrecisionSystemTimer",
        0x2047_0500,
        LARGE_RAW,
        "PrecisionTimestamp",
    ), // PERF_PRECISION_SYSTEM_TIMER
    needs(
        "Precision100NsTimer",
        0x2057_0500,
        LARGE_RAW,
        "PrecisionTimestamp",
    ), // PERF_PRECISION_100NS_TIMER
    needs(
        "PrecisionObjectTimer",
        0x2067_0500,
        LARGE_RAW,
        "PrecisionTimestamp",
    ), // PERF_PRECISION_OBJECT_TIMER
    base("PrecisionTimestamp", LARGE_RAW),
    plain("ElapsedTime", 0x3024_0500), // PERF_ELAPSED_TIME
    plain("NoData", 0x4000_0200),      // PERF_COUNTER_NODATA
    plain("Text16", TEXT),
    plain("Text32", TEXT),
    plain("Text64", TEXT),
    plain("Text128", TEXT),
];

/// The marker type called `name`.
///
/// # Examples
///
/// ```
/// assert!(prfdata_rules::counter_types::find("RawCont").is_none());
/// ```
pub const fn find(name: &str) -> Option<&'static CounterType> {
    let mut i = 0;
    while i < ALL.len() {
        if str_eq(ALL[i].name, name) {
            return Some(&ALL[i]);
        }
        i += 1;
    }
    None
}

/// The composed winperf.h type of the marker called `name`. In a `const`, an unknown name fails
/// to compile.
///
/// # Panics
///
/// If no marker type is called `name`.
///
/// # Examples
///
/// ```
/// use prfdata_rules::counter_types::marker;
///
/// const AVERAGE_BASE: u32 = marker("AverageBase");
/// assert_eq!(AVERAGE_BASE, 0x4003_0402); // PERF_AVERAGE_BASE
/// ```
pub const fn marker(name: &str) -> u32 {
    match find(name) {
        Some(t) => t.ty,
        None => panic!("no counter type of that name in prfdata_rules::counter_types::ALL"),
    }
}

/// The marker types that need a base of the winperf.h type `base_type`, for messages ("serves
/// AverageTimer or AverageBulk").
///
/// # Examples
///
/// ```
/// use prfdata_rules::counter_types::{marker, served_by};
///
/// let served: Vec<&str> = served_by(marker("AverageBase")).collect();
/// assert_eq!(served, ["AverageTimer", "AverageBulk"]);
/// ```
pub fn served_by(base_type: u32) -> impl Iterator<Item = &'static str> {
    ALL.iter()
        .filter(move |t| matches!(t.kind, Kind::NeedsBase { base_type: b, .. } if b == base_type))
        .map(|t| t.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter that needs a base suggests a base row of the type it needs, and every base
    /// serves at least one counter.
    #[test]
    fn every_needed_base_is_a_base_of_the_table_and_every_base_serves() {
        for t in ALL {
            match t.kind {
                Kind::NeedsBase { base_type, suggest } => {
                    let base = find(suggest).unwrap_or_else(|| panic!("{}: {suggest}", t.name));
                    assert_eq!(base.kind, Kind::Base { base_type }, "{}", t.name);
                }
                Kind::Base { base_type } => {
                    assert_eq!(base_type, t.ty, "{}", t.name);
                    assert!(served_by(base_type).next().is_some(), "{}", t.name);
                }
                Kind::Plain => {}
            }
        }
    }

    /// Names are unique (a map names a type by it), and `find` / `marker` reach every row.
    #[test]
    fn every_row_is_found_by_its_unique_name() {
        for (i, t) in ALL.iter().enumerate() {
            assert!(ALL[..i].iter().all(|u| u.name != t.name), "{}", t.name);
            assert_eq!(find(t.name), Some(t));
            assert_eq!(marker(t.name), t.ty);
        }
        assert_eq!(find("rawcount"), None, "names are case-sensitive");
    }
}

//! The counter types a map may name: the marker types of `prfdata::counter_type`, with what the
//! macro must know of each to check a map (is it a base, which base must follow it).
//!
//! prfdata's own table (`prfdata::counter_type`) is the truth; a unit test there compares it
//! with this one through [`crate::__counter_type_table`], and the map's `const` validation
//! checks the composed winperf.h values again, so a drift cannot produce a wrong block.

/// What a counter type asks of its neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A counter with a value of its own and no base.
    Plain,
    /// A counter whose value is read against the base counter right after it. The base is
    /// named by its winperf.h type (two marker types share `PERF_LARGE_RAW_BASE`) and by the
    /// marker type to suggest.
    NeedsBase {
        base_type: &'static str,
        suggest: &'static str,
    },
    /// A base counter: no name, help or symbolic offset of its own.
    Base { base_type: &'static str },
}

/// One marker type of `prfdata::counter_type`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CounterType {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
}

const fn plain(name: &'static str) -> CounterType {
    CounterType {
        name,
        kind: Kind::Plain,
    }
}

const fn needs(name: &'static str, base_type: &'static str, suggest: &'static str) -> CounterType {
    CounterType {
        name,
        kind: Kind::NeedsBase { base_type, suggest },
    }
}

const fn base(name: &'static str, base_type: &'static str) -> CounterType {
    CounterType {
        name,
        kind: Kind::Base { base_type },
    }
}

const MULTI: &str = "PERF_COUNTER_MULTI_BASE";
const RAW: &str = "PERF_RAW_BASE";
const LARGE_RAW: &str = "PERF_LARGE_RAW_BASE";
const SAMPLE: &str = "PERF_SAMPLE_BASE";
const AVERAGE: &str = "PERF_AVERAGE_BASE";

/// Every marker type, in `prfdata::counter_type`'s order.
pub(crate) const ALL: &[CounterType] = &[
    plain("RawCount"),
    plain("RawCountHex"),
    plain("LargeRawCount"),
    plain("LargeRawCountHex"),
    plain("CounterCounter"),
    plain("SampleCounter"),
    plain("BulkCount"),
    plain("CounterDelta"),
    plain("LargeDelta"),
    plain("QueueLen"),
    plain("LargeQueueLen"),
    plain("QueueLen100Ns"),
    plain("ObjTimeQueueLen"),
    plain("CounterTimer"),
    plain("CounterTimerInv"),
    plain("Timer100Ns"),
    plain("Timer100NsInv"),
    plain("ObjTimeTimer"),
    needs("MultiTimer", MULTI, "MultiBase"),
    needs("MultiTimerInv", MULTI, "MultiBase"),
    needs("MultiTimer100Ns", MULTI, "MultiBase"),
    needs("MultiTimer100NsInv", MULTI, "MultiBase"),
    base("MultiBase", MULTI),
    needs("RawFraction", RAW, "RawBase"),
    base("RawBase", RAW),
    needs("LargeRawFraction", LARGE_RAW, "LargeRawBase"),
    base("LargeRawBase", LARGE_RAW),
    needs("SampleFraction", SAMPLE, "SampleBase"),
    base("SampleBase", SAMPLE),
    needs("AverageTimer", AVERAGE, "AverageBase"),
    needs("AverageBulk", AVERAGE, "AverageBase"),
    base("AverageBase", AVERAGE),
    // winperf.h: `#define PERF_PRECISION_TIMESTAMP PERF_LARGE_RAW_BASE`.
    needs("PrecisionSystemTimer", LARGE_RAW, "PrecisionTimestamp"),
    needs("Precision100NsTimer", LARGE_RAW, "PrecisionTimestamp"),
    needs("PrecisionObjectTimer", LARGE_RAW, "PrecisionTimestamp"),
    base("PrecisionTimestamp", LARGE_RAW),
    plain("ElapsedTime"),
    plain("NoData"),
    plain("Text16"),
    plain("Text32"),
    plain("Text64"),
    plain("Text128"),
];

/// The marker type called `name`.
pub(crate) fn find(name: &str) -> Option<&'static CounterType> {
    ALL.iter().find(|t| t.name == name)
}

/// The counter types that need the base `base_type`, for messages ("serves AverageTimer or
/// AverageBulk").
pub(crate) fn served_by(base_type: &str) -> Vec<&'static str> {
    ALL.iter()
        .filter(|t| matches!(t.kind, Kind::NeedsBase { base_type: b, .. } if b == base_type))
        .map(|t| t.name)
        .collect()
}

//! What the Performance Data Helper (PDH) adds on top of raw perflib data: formatted values and
//! counter paths.
//!
//! Both modules are pure (no I/O, no collector types): they take plain values and return plain
//! values, so `typeperf`, `watch` and `serve` can share them whatever the collector looks like.
//!
//! - [`formula`]: a counter's displayable value from one or two raw samples, exactly as
//!   `PdhGetFormattedCounterValue` computes it for every winperf.h counter type
//!   ([`format()`], [`RawSample`], [`FormatOptions`], [`NoValue`]), with DefaultScale
//!   ([`scaled`]) and the display unit ([`unit()`]).
//! - [`histogram`]: a percentile of a histogram over the interval between two samples of its
//!   bucket counts ([`percentile()`], [`Percentile`]).
//! - [`path`]: `\\HOST\Object(Parent/Instance#2)\Counter` paths: parse and print
//!   ([`CounterPath`], [`parse`]), PDH instance indexes ([`pdh_instance_names`]) and wildcard
//!   expansion against what is available, with near matches when nothing matches ([`expand`]).
//!
//! # Examples
//!
//! ```
//! use prfmon::pdh::{self, FormatOptions, RawSample};
//! use prfdata_wire::winperf::PERF_COUNTER_COUNTER;
//!
//! // Which counters does the path name?
//! let path = pdh::parse(r"\PrfData Demo Service\Jobs/sec")?;
//! let available = [pdh::Available::new("PrfData Demo Service", "Jobs/sec", None)];
//! let matches = pdh::expand(&path, &available)?;
//! assert_eq!(matches[0].path.to_string(), r"\PrfData Demo Service\Jobs/sec");
//!
//! // Its value from two samples one second apart (10 MHz clock): 500 jobs → 500/s.
//! let t0 = RawSample::new(PERF_COUNTER_COUNTER, 1_000).with_time(0, 10_000_000);
//! let t1 = RawSample::new(PERF_COUNTER_COUNTER, 1_500).with_time(10_000_000, 10_000_000);
//! assert_eq!(pdh::format(Some(&t0), &t1, FormatOptions::default())?, 500.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod formula;
pub mod histogram;
pub mod path;

pub use formula::{
    format, needs_two_samples, scaled, unit, Clock, FormatOptions, HistogramFault, NoValue,
    RawSample,
};
pub use histogram::{percentile, Percentile, PercentileError};
pub use path::{
    expand, parse, pdh_instance_names, Available, CounterPath, InstanceName, InstanceSel, Match,
    PathError, Pattern,
};

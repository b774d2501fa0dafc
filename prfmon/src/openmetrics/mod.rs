//! The values of every object, counter and instance in base units, in the OpenMetrics text
//! format, as `prfmon serve` exposes them at `/metrics` for Prometheus (the HTTP server is the
//! binary's).
//!
//! # Index
//!
//! - [`exposition`]: a collection as metric families, encoded with `prometheus-client`.
//! - [`naming`]: metric names from object and counter names, and collisions.
//! - [`kind`]: which counter types are counters and which gauges, and the unit of each.
//! - `histogram`: a prfdata histogram (three counter definitions) as one `histogram` family.
//!
//! # What is exported
//!
//! Each scrape of `prfmon serve`'s `/metrics` makes one collection (`Global` by default) and
//! exports every counter's value as perflib returns it, in base units: no PDH formula is
//! applied, so that Prometheus can compute rates and ratios over any window
//! (`rate(x_total[1m])`, `rate(x_seconds_total[1m]) / rate(x_base_total[1m])`, `x / x_base`).
//! A time is exported in seconds, whatever clock it was counted in, and its name ends in
//! `_seconds` (with a `# UNIT` line); an elapsed time is the start as Unix time,
//! `<counter>_start_time_seconds`, so `time() - x_start_time_seconds` is the uptime; counts,
//! fractions, bases and queue lengths are exported as they are. The table is
//! [`kind::unit_of`].
//!
//! **Scale factors and declared units.** A scale factor (`factor: / 1024`, the Windows 95 stat
//! servers' `PSTF_FACTOR_*`) is part of the *displayed* value (watch, typeperf, the PerfStats
//! view apply it); `/metrics` exports base units, so it never applies one. A count whose map
//! declares the unit of its raw value (`unit: bytes` or `unit: seconds`, recorded by install in
//! `Performance\Units`, [`crate::units`]) is exported raw in that unit, and its family is named for it:
//! the counter name's own unit word goes and the unit's takes its place ("Queued payload KiB"
//! with `factor: / 1024, unit: bytes` is `..._queued_payload_bytes`, in bytes, with a
//! `# UNIT` line); HELP is the explain text as written. A counter with a factor and no declared
//! unit is exported raw, its name as the counter's (with no unit word added): its unit is the
//! one of its raw value, which only the map can state.
//!
//! **Histograms.** A prfdata histogram (its `PERF_AVERAGE_BULK` sum, `PERF_AVERAGE_BASE` count
//! and `PERF_PRFDATA_HISTOGRAM` buckets, [`crate::histogram`]) is one family of type
//! `histogram`, named for the sum's counter: `_bucket{le="..."}` cumulative with `+Inf` last,
//! `_sum`, `_count`; the sum and base are not families of their own. A time histogram is
//! exported in seconds (`_seconds`: `le` and `_sum` in seconds), a byte histogram in bytes
//! (`_bytes`), a count as recorded. Each `le` is the bucket's inclusive upper edge, so
//! `histogram_quantile(0.99, rate(x_seconds_bucket[5m]))` works as for any Prometheus
//! histogram, within the map's stated error; every bucket is a series (hundreds per histogram
//! and instance at `error: 2%`). A histogram whose copy does not decode has no data: that
//! series is left out of the scrape, and the reason logged.
//!
//! **Costly objects** are not in a `Global` collection (perflib collects them only when
//! `Costly` is asked for). `/metrics?query=Costly` collects them; point a second scrape job at
//! it, with `params: { query: [Costly] }` and a longer `scrape_interval`. `query` also takes
//! object name indexes (`query=1848+1860`). Either also returns the objects the returned
//! instances' parents are in (as NT's providers do, so that parent links and the `parent` label
//! resolve): a non-costly parent object then comes in both jobs, told apart by Prometheus's `job`
//! label; keep it out of the costly job with a `metric_relabel_configs` `drop` if a query sums
//! over jobs.
//!
//! ```text
//! scrape_configs:
//!   - job_name: prfdata
//!     static_configs: [{ targets: ['127.0.0.1:9358'] }]
//!   - job_name: prfdata-costly
//!     scrape_interval: 1m
//!     params: { query: [Costly] }
//!     static_configs: [{ targets: ['127.0.0.1:9358'] }]
//! ```
//!
//! **Labels**: `perf_instance` (the instance name as PDH gives it, without the parent, `#n`
//! for the second and later instances of one name under one parent; absent for an object
//! without instances; [`exposition::INSTANCE_LABEL`]), `parent` (the parent instance's name,
//! when the parent object is in the collection), `app` (the service whose provider returned
//! the object, from
//! [`Collector::collect_with_services`](crate::collector::Collector::collect_with_services)).
//! The instance label is not called `instance`: Prometheus attaches its own `instance` label
//! (the target) to every series, and would keep the exporter's as `exported_instance`.
//!
//! **HELP** is the counter's explain text in the language of `--lang`, followed by
//! `[\Object\Counter, PERF_TYPE]`; a base's HELP names its counter.
//!
//! # Metric names
//!
//! `prfdata_<object>_<counter>`, each part lowercased with `%` → `percent`, `/` → `per`,
//! `#` → `num`, every run of other characters → one `_`, and the word `sec` → `second`; an
//! object whose name begins with "PrfData" does not repeat the prefix; a counter family's
//! samples end in `_total`; a time ends in `_seconds`, an elapsed time in
//! `_start_time_seconds`; a count with a declared unit ends in the unit (`_bytes`) instead of
//! its own unit word (`_kib`); a base is `<its counter's name, without _seconds>_base`. Collisions are resolved by appending
//! the object and counter name indexes. The full rule is in [`naming`]. For example
//! `\PrfData Demo Service\Jobs/sec` is `prfdata_demo_service_jobs_per_second_total`.
//!
//! # Types
//!
//! A counter type is exported as an OpenMetrics `counter` when PDH computes its displayed
//! value from the difference of two samples, and as a `gauge` when PDH shows one sample:
//!
//! | winperf.h type                                              | TYPE      |
//! |-------------------------------------------------------------|-----------|
//! | `PERF_COUNTER_COUNTER`, `PERF_SAMPLE_COUNTER`, `PERF_COUNTER_BULK_COUNT` (rates) | counter |
//! | `PERF_COUNTER_TIMER(_INV)`, `PERF_100NSEC_TIMER(_INV)`, `PERF_OBJ_TIME_TIMER` | counter |
//! | `PERF_COUNTER_MULTI_TIMER(_INV)`, `PERF_100NSEC_MULTI_TIMER(_INV)` | counter |
//! | `PERF_COUNTER_QUEUELEN_TYPE`, `_LARGE_`, `_100NS_`, `_OBJ_TIME_QUEUELEN_TYPE` (accumulated length × time) | counter |
//! | `PERF_AVERAGE_TIMER`, `PERF_AVERAGE_BULK` and their `PERF_AVERAGE_BASE` | counter |
//! | `PERF_SAMPLE_FRACTION` and its `PERF_SAMPLE_BASE`           | counter   |
//! | `PERF_COUNTER_DELTA`, `PERF_COUNTER_LARGE_DELTA`            | counter   |
//! | `PERF_PRECISION_SYSTEM_TIMER`, `_100NS_TIMER`, `_OBJECT_TIMER` and their `PERF_PRECISION_TIMESTAMP` | counter |
//! | `PERF_COUNTER_RAWCOUNT`, `PERF_COUNTER_LARGE_RAWCOUNT` and their `_HEX` forms | gauge |
//! | `PERF_RAW_FRACTION`, `PERF_LARGE_RAW_FRACTION` and their `PERF_RAW_BASE` / `PERF_LARGE_RAW_BASE` | gauge |
//! | `PERF_ELAPSED_TIME` (the start time, as Unix time in seconds) | gauge  |
//! | `PERF_COUNTER_MULTI_BASE` (the number of things timed)      | gauge     |
//! | `PERF_AVERAGE_BULK`, `PERF_AVERAGE_BASE`, `PERF_PRFDATA_HISTOGRAM` of a histogram | histogram (one family) |
//! | `PERF_COUNTER_TEXT`, `PERF_COUNTER_NODATA`                  | not exported |
//! | a type winperf.h does not define                            | counter if it has `PERF_DELTA_COUNTER` or `PERF_DELTA_BASE`, else gauge |
//!
//! `PERF_PRECISION_TIMESTAMP` is the same constant as `PERF_LARGE_RAW_BASE`; it is a counter
//! when it follows a precision timer. A counter's value is written as unsigned (a LARGE
//! counter is a ULONGLONG; a DWORD one is zero-extended), a gauge's as signed. DWORD counters
//! wrap at 2³²; Prometheus' `rate` takes a wrap for a counter reset.
//!
//! # Examples
//!
//! ```
//! // The names and types of a typical counter and its base.
//! use prfdata_wire::winperf::{PERF_AVERAGE_BASE, PERF_AVERAGE_TIMER};
//! use prfmon::openmetrics::{kind::metric_kind, kind::MetricKind, naming::metric_stem};
//! assert_eq!(metric_stem("PrfData Demo Service", "Avg. job latency"), "prfdata_demo_service_avg_job_latency");
//! assert_eq!(metric_kind(PERF_AVERAGE_TIMER, None), Some(MetricKind::Counter));
//! assert_eq!(metric_kind(PERF_AVERAGE_BASE, Some(PERF_AVERAGE_TIMER)), Some(MetricKind::Counter));
//! // The timer's ticks are exported in seconds: `prfdata_demo_service_avg_job_latency_seconds`.
//! use prfmon::openmetrics::kind::{unit_of, Clock, MetricUnit};
//! assert_eq!(unit_of(PERF_AVERAGE_TIMER, None), MetricUnit::Seconds(Clock::System));
//! ```

pub mod exposition;
mod histogram;

pub use histogram::BucketLimit;
pub mod kind;
pub mod naming;

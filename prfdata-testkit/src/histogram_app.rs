//! An app with two histograms, for the histogram benchmarks and `prfmon serve`'s end-to-end
//! test: one object without instances, "Histogram Test", whose histograms "Latency" and
//! "Latency sharded" (`sharded: true`) have the same geometry: 1 µs .. 10 s in microseconds
//! within 2 % (p = 6, 1166 buckets).
//!
//! # Examples
//!
//! ```
//! use prfdata_testkit::histogram_app::app;
//! let dir = tempfile::tempdir()?;
//! let prf = app::PrfData::activate_in(dir.path())?;
//! prf.histogram(app::LATENCY, ()).record(420);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

prfdata::prfdata_map! {
    /// The app's map: one object, two histograms of the same geometry, one sharded.
    pub mod app {
        app: "PrfDataHistogramTest",
        object LAT {
            name: "Histogram Test", help: "The histogram test app.",
            counters {
                LATENCY: Histogram { name: "Latency", help: "Microseconds per request.",
                    unit: us, range: 1us..10s, error: 2% },
                LATENCY_SHARDED: Histogram { name: "Latency sharded",
                    help: "Microseconds per request, recorded in the threads' shard lines.",
                    unit: us, range: 1us..10s, error: 2%, sharded: true },
            }
        }
    }
}

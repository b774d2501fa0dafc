//! What an app says when it adds an object or a counter at run time.

use crate::map::DetailLevel;

/// An object added at run time ([`Dynamic::add_object`](crate::dynamic::Dynamic::add_object)): one set
/// of counters, without instances (the Windows 95 stat servers' statistics are single values).
///
/// # Examples
///
/// ```
/// use prfdata::dynamic::ObjectSpec;
/// let spec = ObjectSpec::new("Plug-in", "Counters of a plug-in loaded at run time.");
/// assert!(!spec.costly);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectSpec<'a> {
    /// The English (009) name.
    pub name: &'a str,
    /// The English explain text.
    pub help: &'a str,
    /// Detail level.
    pub detail: DetailLevel,
    /// Whether only a "Costly" query collects it.
    pub costly: bool,
}

impl<'a> ObjectSpec<'a> {
    /// A novice-level, not costly object.
    pub fn new(name: &'a str, help: &'a str) -> Self {
        ObjectSpec {
            name,
            help,
            detail: DetailLevel::Novice,
            costly: false,
        }
    }
}

/// A counter added at run time to a run-time object
/// ([`Dynamic::add_counter`](crate::dynamic::Dynamic::add_counter)).
///
/// `counter_type` is a winperf.h type whose value is a DWORD or a LARGE number and that needs no
/// base counter (`PERF_COUNTER_RAWCOUNT`, `PERF_COUNTER_LARGE_RAWCOUNT`, `PERF_COUNTER_COUNTER`,
/// `PERF_COUNTER_BULK_COUNT`, ...); others are refused ([`Error::Map`](crate::Error::Map)). A
/// histogram (`PERF_PRFDATA_HISTOGRAM`) is declared in the map, with its geometry: here it is
/// refused with [`MapError::BadHistogram`](crate::map::MapError::BadHistogram)
/// ([`HistogramProblem::RunTime`](crate::map::HistogramProblem::RunTime)).
///
/// # Examples
///
/// ```
/// use prfdata::dynamic::CounterSpec;
/// let spec = CounterSpec::new("Calls", "Calls so far.", prfdata_wire::winperf::PERF_COUNTER_LARGE_RAWCOUNT);
/// assert_eq!(spec.default_scale, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSpec<'a> {
    /// The English (009) name.
    pub name: &'a str,
    /// The English explain text.
    pub help: &'a str,
    /// The winperf.h counter type.
    pub counter_type: u32,
    /// Detail level.
    pub detail: DetailLevel,
    /// `DefaultScale`: the power of ten monitors scale the value by.
    pub default_scale: i32,
}

impl<'a> CounterSpec<'a> {
    /// A novice-level counter of type `counter_type`, scale 0.
    pub fn new(name: &'a str, help: &'a str, counter_type: u32) -> Self {
        CounterSpec {
            name,
            help,
            counter_type,
            detail: DetailLevel::Novice,
            default_scale: 0,
        }
    }
}

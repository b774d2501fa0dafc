//! The performance data map: what an application publishes, declared once at compile time.
//!
//! CPrfData declared its map with `PRFDATA_MAP_BEGIN` / `PRFDATA_MAP_OBJ` / `PRFDATA_MAP_CTR` /
//! `PRFDATA_MAP_END`; here [`prfdata_map!`](crate::prfdata_map) (syntax, defaults and the
//! mistakes it reports are in its docs) generates a module holding:
//!
//! - `MAP`: a [`MapDef`] (objects, counters, texts, detail levels, scales, instance limits),
//!   validated at compile time ([`MapError::assert_valid`]);
//! - `Map`: the marker type that implements [`PerfDataMap`], so [`PrfData<Map>`](crate::PrfData)
//!   only accepts ids from this map;
//! - `PrfData`: an alias of `PrfData<Map>`;
//! - one unit struct per object (implementing [`Object`]) and one [`CtrId`] constant per counter,
//!   typed with the counter's width and object.
//!
//! Each object and named counter has a *symbolic offset* (an even number, as the lodctr design
//! specification requires): the name index it gets in the registry is First Counter + offset, its
//! help index First Help + offset. The macro numbers them in declaration order when the map leaves
//! them out. Base counters carry no name (their name and help indexes are 0 on the wire).
//!
//! # Examples
//!
//! ```
//! prfdata::prfdata_map! {
//!     pub mod my_map {
//!         app: "MapDocExample",
//!         object SERVER {
//!             name: "My Server", help: "Requests served by my server.", default: REQUESTS,
//!             counters {
//!                 REQUESTS: CounterCounter { name: "Requests/sec", help: name },
//!             }
//!         }
//!     }
//! }
//! assert_eq!(my_map::MAP.app, "MapDocExample");
//! assert_eq!(my_map::MAP.objects[0].counters[0].symbol, "REQUESTS");
//! assert_eq!(my_map::MAP.objects[0].counters[0].offset, Some(2));
//! ```

mod aggregate;
mod fingerprint;
mod histogram_rules;
mod ids;
mod macros;
/// Where a map's objects, slots and counters lie in its block (public with the feature
/// `layout`, for tests and fuzzers that write blocks by hand; not covered by semver).
#[cfg(feature = "layout")]
pub mod offsets;
#[cfg(not(feature = "layout"))]
pub(crate) mod offsets;
pub(crate) mod validate;

pub(crate) use aggregate::rule_code;
pub use aggregate::Aggregate;
pub use histogram_rules::HistogramProblem;
pub(crate) use ids::data_offset;
pub use ids::{CtrId, Global, InstanceId, Instanced, Object, PerfDataMap, Scope};
/// The proc macro behind [`prfdata_map!`](crate::prfdata_map), which passes it `$crate`.
#[doc(hidden)]
pub use prfdata_macros::prfdata_map as __prfdata_map;
/// prfdata-rules' histogram geometry, which the code [`prfdata_map!`](crate::prfdata_map)
/// generates builds a histogram's in `const`.
#[doc(hidden)]
pub use prfdata_rules::histogram as __histogram;
#[cfg(feature = "install")]
pub(crate) use validate::validate;
pub(crate) use validate::validate_at_run_time;
pub use validate::MapError;

use crate::winperf;
use prfdata_rules::histogram::{Descriptor, Geometry};

/// How much a counter or object is meant for: perflib's detail levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DetailLevel {
    /// `PERF_DETAIL_NOVICE` (100): anyone can understand it.
    Novice,
    /// `PERF_DETAIL_ADVANCED` (200): for the advanced user.
    Advanced,
    /// `PERF_DETAIL_EXPERT` (300): for the expert user.
    Expert,
    /// `PERF_DETAIL_WIZARD` (400): for the system designer.
    Wizard,
}

impl DetailLevel {
    /// The winperf.h value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata::map::DetailLevel::Expert.to_winperf(), 300);
    /// ```
    pub const fn to_winperf(self) -> u32 {
        match self {
            DetailLevel::Novice => winperf::PERF_DETAIL_NOVICE,
            DetailLevel::Advanced => winperf::PERF_DETAIL_ADVANCED,
            DetailLevel::Expert => winperf::PERF_DETAIL_EXPERT,
            DetailLevel::Wizard => winperf::PERF_DETAIL_WIZARD,
        }
    }

    /// The level for a winperf.h value, if it is one of the four.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::map::DetailLevel;
    /// assert_eq!(DetailLevel::from_winperf(200), Some(DetailLevel::Advanced));
    /// assert_eq!(DetailLevel::from_winperf(7), None);
    /// ```
    pub const fn from_winperf(value: u32) -> Option<DetailLevel> {
        match value {
            winperf::PERF_DETAIL_NOVICE => Some(DetailLevel::Novice),
            winperf::PERF_DETAIL_ADVANCED => Some(DetailLevel::Advanced),
            winperf::PERF_DETAIL_EXPERT => Some(DetailLevel::Expert),
            winperf::PERF_DETAIL_WIZARD => Some(DetailLevel::Wizard),
            _ => None,
        }
    }
}

/// A name and explain text in one language (`"009"` is English, `"00C"` French, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Text {
    /// The perflib language id: three hexadecimal digits, as the registry's `Perflib\009`.
    pub lang: &'static str,
    /// The name shown in monitors.
    pub name: &'static str,
    /// The explain text.
    pub help: &'static str,
}

/// Whether an object has instances, and how many it can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instances {
    /// One set of counters for the whole object (`NumInstances` = `PERF_NO_INSTANCES`).
    None,
    /// Up to `max` instances, each named with up to `max_name_len` UTF-16 code units.
    Max {
        /// The most instances that can be live at once.
        max: u32,
        /// The longest instance name, in UTF-16 code units (the terminating NUL not counted).
        max_name_len: u32,
    },
}

/// One counter of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterDef {
    /// The programmatic symbol (as in the symbol .h file).
    pub symbol: &'static str,
    /// The symbolic offset, or `None` for a base counter (which has no name of its own).
    pub offset: Option<u32>,
    /// Name and explain text per language; the first is 009 (English). Empty for a base.
    pub texts: &'static [Text],
    /// Detail level.
    pub detail: DetailLevel,
    /// Power of ten monitors scale the value by in charts.
    pub default_scale: i32,
    /// The composed winperf.h counter type.
    pub counter_type: u32,
    /// For a `PERF_COUNTER_TEXT` counter: its room in UTF-16 code units, the terminating NUL
    /// included (see [`counter_type::Text`](crate::counter_type::Text)); 0 otherwise.
    pub text_len: u32,
    /// The integer displayed values are multiplied or divided by (the Windows 95 stat servers'
    /// `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`), besides `default_scale`; `None` for 1.
    pub factor: Option<Factor>,
    /// The unit the raw value is in, one of `bytes` or `seconds` (`unit: bytes` in a map; the
    /// rule is `prfdata_rules::counter::unit`), for a count whose type gives no unit: install
    /// records it in `Services\<app>\Performance\Units`, and `prfmon serve` names the
    /// counter's family for it and exports the raw value. `None`: no unit declared.
    pub unit: Option<&'static str>,
    /// Where the value comes from: the app's stores, a closure run on request, or a sum.
    pub source: Source,
    /// How departed instances and `_Total` aggregate it (`aggregate:` in a map); `None` takes
    /// the default of its type ([`Aggregate::default_for`]); a base follows its counter.
    pub aggregate: Option<Aggregate>,
}

/// An integer scale factor (the Windows 95 stat servers' `pst0_ScaleFactor` with
/// `PSTF_FACTOR_MULTIPLY` or `PSTF_FACTOR_DIVIDE`): monitors multiply or divide the *displayed*
/// value by it, never the raw value. Declared in a map as `factor: * 4096` or `factor: / 1024`.
///
/// # Examples
///
/// ```
/// use prfdata::map::Factor;
/// assert_eq!(Factor::Multiply(4096).apply(2.0), 8192.0);
/// assert_eq!(Factor::Divide(1024).apply(2048.0), 2.0);
/// assert_eq!("/1024".parse::<Factor>(), Ok(Factor::Divide(1024)));
/// assert_eq!(Factor::Multiply(4096).to_string(), "*4096");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Factor {
    /// `PSTF_FACTOR_MULTIPLY`: the displayed value is the value times this.
    Multiply(u32),
    /// `PSTF_FACTOR_DIVIDE`: the displayed value is the value divided by this.
    Divide(u32),
}

impl Factor {
    /// The factor applied to a displayed value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata::map::Factor::Divide(4).apply(10.0), 2.5);
    /// ```
    pub fn apply(self, value: f64) -> f64 {
        match self {
            Factor::Multiply(n) => value * f64::from(n),
            Factor::Divide(n) => value / f64::from(n),
        }
    }

    /// The factor a block's counter record describes (its stat flags and factor fields), if
    /// it describes one: exactly one of the two flags and a factor of at least 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::map::Factor;
    /// use prfdata_wire::winperf::PSTF_FACTOR_DIVIDE;
    /// assert_eq!(Factor::from_flags(PSTF_FACTOR_DIVIDE, 8), Some(Factor::Divide(8)));
    /// assert_eq!(Factor::from_flags(0, 8), None);
    /// ```
    pub const fn from_flags(flags: u32, factor: u32) -> Option<Factor> {
        let mul = flags & winperf::PSTF_FACTOR_MULTIPLY != 0;
        let div = flags & winperf::PSTF_FACTOR_DIVIDE != 0;
        match (mul, div) {
            _ if factor == 0 => None,
            (true, false) => Some(Factor::Multiply(factor)),
            (false, true) => Some(Factor::Divide(factor)),
            _ => None,
        }
    }

    /// The stat flag (`PSTF_FACTOR_MULTIPLY` or `PSTF_FACTOR_DIVIDE`) and the factor.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::map::Factor;
    /// assert_eq!(Factor::Multiply(3).to_flags(), (prfdata_wire::winperf::PSTF_FACTOR_MULTIPLY, 3));
    /// ```
    pub const fn to_flags(self) -> (u32, u32) {
        match self {
            Factor::Multiply(n) => (winperf::PSTF_FACTOR_MULTIPLY, n),
            Factor::Divide(n) => (winperf::PSTF_FACTOR_DIVIDE, n),
        }
    }
}

impl core::fmt::Display for Factor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Factor::Multiply(n) => write!(f, "*{n}"),
            Factor::Divide(n) => write!(f, "/{n}"),
        }
    }
}

impl core::str::FromStr for Factor {
    type Err = FactorParseError;

    /// `*N` or `/N` (spaces allowed around the operator), N a positive `u32`.
    fn from_str(s: &str) -> Result<Factor, FactorParseError> {
        let s = s.trim();
        let bad = || FactorParseError(s.to_owned());
        let (op, n) = s.split_at_checked(1).ok_or_else(bad)?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        match (op, n) {
            (_, 0) => Err(bad()),
            ("*", n) => Ok(Factor::Multiply(n)),
            ("/", n) => Ok(Factor::Divide(n)),
            _ => Err(bad()),
        }
    }
}

/// A scale factor that is not `*N` or `/N` with N a positive `u32` (what [`Factor`]'s
/// `FromStr` refused, as given).
///
/// # Examples
///
/// ```
/// let err = "x3".parse::<prfdata::map::Factor>().unwrap_err();
/// assert!(err.to_string().contains("x3"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a scale factor: write `*N` or `/N` with N a positive integer")]
pub struct FactorParseError(pub String);

/// Where a counter's value comes from.
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! {
///     pub mod m {
///         app: "SourceDoc",
///         object IO {
///             name: "IO", help: "I/O.",
///             counters {
///                 READS: RawCount { name: "Reads", help: name },
///                 WRITES: RawCount { name: "Writes", help: name },
///                 TOTAL: RawCount { name: "Total", help: name, sum: [READS, WRITES] },
///                 OPEN: RawCount { name: "Open", help: name, on_demand: true },
///             }
///         }
///     }
/// }
/// use prfdata::map::Source;
/// let c = m::MAP.objects[0].counters;
/// assert_eq!(c[0].source, Source::Stored);
/// assert_eq!(c[2].source, Source::SumOf(&[0, 1]));
/// assert_eq!(c[3].source, Source::OnDemand);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The app stores the value (the ordinary counter).
    Stored,
    /// The Windows 95 stat servers' `PSTF_FUNCPTR`: the app computes the value when a collector
    /// asks, through a closure registered with [`OnDemand::serve`](crate::OnDemand::serve); a
    /// collector that gets no answer within the service's bound serves the last value.
    OnDemand,
    /// The Windows 95 stat servers' `PSTF_COMPLEX`: the sum of these counters of the same object
    /// (indexes among its counters, at most 8, prfdata-rules' `MAX_SUM_PARTS`), computed by the
    /// reader at each read (in 64 bits, then truncated to the counter's width), so that every
    /// consumer sees an ordinary counter. The app never writes it.
    SumOf(&'static [usize]),
    /// A sharded counter (`sharded: true` in a map; 64-bit counts and timers): its value is
    /// spread over per-thread cache-line slots of the counter block, which readers add up, so
    /// that threads updating it at once never share a line. Updated through
    /// [`PrfData::sharded`](crate::PrfData::sharded) (a relaxed load and store of the thread's
    /// own slot); an update through
    /// [`get_ctr64`](crate::PrfData::get_ctr64) still counts.
    Sharded,
    /// A histogram's buckets (a `Histogram` counter in a map): the third of the three counters
    /// a histogram declares, of type
    /// [`PERF_PRFDATA_HISTOGRAM`](crate::winperf::PERF_PRFDATA_HISTOGRAM), after its sum (a
    /// named `PERF_AVERAGE_BULK`, [`Source::Sharded`]) and its count
    /// ([`Source::HistogramCount`]). Its value is the geometry's descriptor words (never written
    /// by the app; readers fill them in each copy) and one u64 per bucket, which the app adds
    /// to; [`CounterDef::value_size`] is `8 × (descriptor words + buckets)`.
    Histogram {
        /// The buckets: prfdata-rules' log-linear or explicit geometry.
        geometry: &'static Geometry,
        /// `sharded: true`: the buckets also have one word each in every shard line, which
        /// readers add to the counter block's.
        sharded: bool,
    },
    /// A histogram's count: the `PERF_AVERAGE_BASE` between its sum and its buckets. The app
    /// never writes it; readers store the sum of the buckets (mod 2^32) in each copy, so that
    /// NT tools show the sum and count as an average.
    HistogramCount,
}

impl CounterDef {
    /// Bytes of the value in a counter block: from the type's size field, `2 × text_len` for
    /// text, or `8 × (descriptor words + buckets)` for a histogram's buckets
    /// ([`Source::Histogram`]). `None` for a size this crate cannot place.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::map::{CounterDef, DetailLevel};
    /// let text = CounterDef { symbol: "T", offset: Some(2), texts: &[], detail: DetailLevel::Novice,
    ///     default_scale: 0, counter_type: prfdata_wire::winperf::PERF_COUNTER_TEXT, text_len: 32,
    ///     factor: None, unit: None, source: prfdata::map::Source::Stored, aggregate: None, };
    /// assert_eq!(text.value_size(), Some(64));
    /// ```
    pub const fn value_size(&self) -> Option<u32> {
        match (crate::winperf::counter_size(self.counter_type), self.source) {
            (Some(n), _) => Some(n),
            (None, _)
                if self.counter_type == crate::winperf::PERF_COUNTER_TEXT && self.text_len > 0 =>
            {
                self.text_len.checked_mul(2)
            }
            (None, Source::Histogram { geometry, .. })
                if self.counter_type == crate::winperf::PERF_PRFDATA_HISTOGRAM =>
            {
                let words = Descriptor::of(geometry).words().len() + geometry.buckets();
                Some(words as u32 * 8)
            }
            (None, _) => None,
        }
    }
}

/// One object of the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectDef {
    /// The programmatic symbol.
    pub symbol: &'static str,
    /// The symbolic offset (even).
    pub offset: u32,
    /// Name and explain text per language; the first is 009 (English).
    pub texts: &'static [Text],
    /// Detail level.
    pub detail: DetailLevel,
    /// Index into `counters` of the default counter, or `None`.
    pub default_counter: Option<usize>,
    /// Instances, or none.
    pub instances: Instances,
    /// Whether the object is only collected on a "Costly" query.
    pub costly: bool,
    /// Whether readers show a synthesised `_Total` instance (`total: true` in a map).
    pub total: bool,
    /// Whether the counter blocks of its instances are packed densely (`packed: true` in a map)
    /// rather than each on its own 128-byte cache line (the default: two threads updating two
    /// instances never share a line). Packed: a block costs its size rounded up to 8 bytes per
    /// instance; padded, rounded up to 128.
    pub packed: bool,
    /// The counters, each base right after the counter it belongs to.
    pub counters: &'static [CounterDef],
}

/// A whole performance data map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapDef {
    /// The application name: the driver name under `Services` and the block's name.
    pub app: &'static str,
    /// The objects.
    pub objects: &'static [ObjectDef],
}

impl MapDef {
    /// The fingerprint of the names this map installs: FNV-1a over the app name and every
    /// object's and named counter's symbolic offset and texts, in order (counter types and
    /// limits do not count). Install records it in the registry and activation in the block, so
    /// that an app rebuilt with other names but not reinstalled is caught at `activate` and by
    /// the provider.
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod a { app: "FingerprintDoc", object O = 0 { name: "O",
    ///   help: "o", detail: Novice, default: none, instances: none, costly: false, counters {
    ///   C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// prfdata::prfdata_map! { pub mod b { app: "FingerprintDoc", object O = 0 { name: "O",
    ///   help: "o", detail: Novice, default: none, instances: none, costly: false, counters {
    ///   C = 4: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// assert_ne!(a::MAP.fingerprint(), b::MAP.fingerprint(), "an offset moved");
    /// assert_eq!(a::MAP.fingerprint(), a::MAP.fingerprint());
    /// ```
    pub fn fingerprint(&self) -> u64 {
        fingerprint::fingerprint(self)
    }

    /// The highest symbolic offset the map names: installed, its names run from First Counter
    /// to First Counter + this (help texts from First Help likewise).
    ///
    /// # Examples
    ///
    /// ```
    /// prfdata::prfdata_map! { pub mod m { app: "HighestOffsetDoc", object O = 0 { name: "O",
    ///   help: "o", detail: Novice, default: none, instances: none, costly: false, counters {
    ///   C = 6: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
    /// assert_eq!(m::MAP.highest_offset(), 6);
    /// ```
    pub fn highest_offset(&self) -> u32 {
        fingerprint::highest_offset(self)
    }

    /// The index of the object with this symbol. Usable in constants.
    ///
    /// # Panics
    ///
    /// If there is no such object (at compile time when used in a constant).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::map::{MapDef, ObjectDef, DetailLevel, Instances};
    /// const MAP: MapDef = MapDef { app: "x", objects: &[ObjectDef {
    ///     symbol: "OBJ", offset: 0, texts: &[], detail: DetailLevel::Novice,
    ///     default_counter: None, instances: Instances::None, costly: false, total: false, packed: false, counters: &[] }] };
    /// const OBJ: usize = MAP.object_index("OBJ");
    /// assert_eq!(OBJ, 0);
    /// ```
    pub const fn object_index(&self, symbol: &str) -> usize {
        let mut i = 0;
        while i < self.objects.len() {
            if str_eq(self.objects[i].symbol, symbol) {
                return i;
            }
            i += 1;
        }
        panic!("prfdata map: no object with this symbol")
    }
}

impl ObjectDef {
    /// The index of the counter with this symbol. Usable in constants.
    ///
    /// # Panics
    ///
    /// If there is no such counter (at compile time when used in a constant).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::map::{ObjectDef, CounterDef, DetailLevel, Instances};
    /// const CTR: CounterDef = CounterDef { symbol: "C", offset: Some(2), texts: &[],
    ///     detail: DetailLevel::Novice, default_scale: 0,
    ///     counter_type: prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT, text_len: 0,
    ///     factor: None, unit: None, source: prfdata::map::Source::Stored, aggregate: None, };
    /// const OBJ: ObjectDef = ObjectDef { symbol: "OBJ", offset: 0, texts: &[],
    ///     detail: DetailLevel::Novice, default_counter: None, instances: Instances::None,
    ///     costly: false, total: false, packed: false, counters: &[CTR] };
    /// assert_eq!(OBJ.counter_index("C"), 0);
    /// ```
    pub const fn counter_index(&self, symbol: &str) -> usize {
        let mut i = 0;
        while i < self.counters.len() {
            if str_eq(self.counters[i].symbol, symbol) {
                return i;
            }
            i += 1;
        }
        panic!("prfdata map: no counter with this symbol in the object")
    }

    /// Whether the object has instances.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata::map::{ObjectDef, DetailLevel, Instances};
    /// let obj = ObjectDef { symbol: "OBJ", offset: 0, texts: &[], detail: DetailLevel::Novice,
    ///     default_counter: None, instances: Instances::Max { max: 4, max_name_len: 8 },
    ///     costly: false, total: false, packed: false, counters: &[] };
    /// assert!(obj.has_instances());
    /// ```
    pub const fn has_instances(&self) -> bool {
        matches!(self.instances, Instances::Max { .. })
    }

    /// The English (009) name, or the symbol when the map gives no text.
    ///
    /// # Examples
    ///
    /// ```
    /// # use prfdata::map::{ObjectDef, DetailLevel, Instances, Text};
    /// let obj = ObjectDef { symbol: "OBJ", offset: 0,
    ///     texts: &[Text { lang: "009", name: "Object", help: "An object." }],
    ///     detail: DetailLevel::Novice, default_counter: None, instances: Instances::None,
    ///     costly: false, total: false, packed: false, counters: &[] };
    /// assert_eq!(obj.name(), "Object");
    /// ```
    pub fn name(&self) -> &'static str {
        self.texts.first().map_or(self.symbol, |t| t.name)
    }
}

/// `const` string equality (`==` on `str` is not `const`).
pub(crate) use prfdata_rules::str_eq;

//! The collector and consumer behind the `prfmon` command: what perflib does for
//! `RegQueryValueEx(HKEY_PERFORMANCE_DATA, ...)`, and reading what it returns.
//!
//! This is the library; the command's argument parsing, terminal chart (`watch`) and HTTP
//! server (`serve`) are the binary's, behind the `cli` feature (on by default). A program
//! that only collects and reads depends on `prfmon = { default-features = false }` and
//! compiles no clap, ratatui or HTTP server. The library logs through the [`log`] facade
//! (a provider disabled or skipped, a duplicate object): the program chooses where messages
//! go; the `prfmon` binary writes them to stderr.
//!
//! # Index
//!
//! **Collecting (perflib's role)**
//! - [`collector`]: [`Collector`](collector::Collector) walks the services' Performance keys,
//!   loads providers, calls Open / Collect / Close and disables providers that misbehave.
//!   - [`collector::host`], [`collector::perfhost`], [`collector::protocol`]: the provider host
//!     process (perfhost.exe's role) and the pipe protocol to it.
//!   - [`collector::library`]: a provider library and its trio, called with winperf.h's
//!     signatures; loaded with `dlopen`, or privately with `dlmopen`.
//!   - [`collector::copies`]: which copy of a library each in-process service gets (one
//!     state per service).
//!   - [`collector::validate`]: the checks every Collect output passes, and the reasons a
//!     provider is disabled; [`collector::realign`]: DWORD-aligned objects moved to 8-byte
//!     boundaries.
//!   - [`collector::host_user`]: the less privileged user provider hosts run as
//!     (`--host-user`).
//! - [`trust`]: which provider libraries and registries the collector trusts (owner and
//!   mode checks on the file and every folder above it, as OpenSSH's StrictModes).
//! - [`datablock`]: the PERF_DATA_BLOCK that heads a collection (its times, the host's name,
//!   each provider's output), written by `prfdata_wire::build`.
//! - [`session`]: one machine's collections and facts (names, factors, apps' ranges, disabled
//!   services) from one registry read: the [`Collector`](collector::Collector) or
//!   `remote::Remote` (another machine's `prfmon serve`, with the `remote` feature, on by
//!   default), the facts kept current while a consumer runs.
//!
//! **Reading a collection**
//! - `prfdata_wire::snapshot` and `prfdata_wire::view`: PERF_DATA_BLOCK bytes, as untrusted
//!   input, checked in one pass, then read in place (`DataView`) or kept and read in place
//!   (`DataSnapshot`), nothing allocated per instance or value.
//! - [`catalog`]: the objects and counters on offer, with Name / Description / Differentiate.
//! - [`merge`]: a `Global` collection and one by index (or `Costly`) as one view, each object
//!   once, parent links re-pointed.
//! - [`names`]: names and explain texts from `Perflib\<lang>`; PDH-style instance names;
//!   [`namesakes`]: instances of one name numbered and found with a word per instance.
//! - [`factor`]: the Windows 95 stat servers' integer scale factors, from the registry, for
//!   displayed values; [`units`]: the units counters declare for their raw values.
//! - [`histogram`]: a decoded object's histograms (geometry, bucket counts, sum) from the
//!   definitions prfdata publishes for one.
//! - [`report`]: a collection as a table or as JSON.
//!
//! **Sampling over time**
//! - [`sampler`]: counter paths resolved against each collection and formatted from the
//!   previous and current raw samples, as a PDH query does.
//! - [`typeperf`]: typeperf's PDH-CSV / PDH-TSV log format and `-q` listing.
//!
//! **Watching (the Windows 95 stat servers' start/stop notifications)**
//! - [`lease`]: the watch leases a collector holds on the apps' objects and counters it shows.
//! - [`perfstats`]: the Windows 95 System Monitor's registry view (KB Q174631): `PerfStats\Enum`
//!   and `HKEY_DYN_DATA\PerfStats\{StartStat, StatData, StopStat}`.
//!
//! **Values and paths as PDH sees them**
//! - [`pdh`]: formatted values from raw samples ([`pdh::formula`]) and counter paths in PDH
//!   syntax ([`pdh::path`]).
//!
//! **Exporting**
//! - [`openmetrics`]: a collection in the OpenMetrics text format for Prometheus (what
//!   `prfmon serve` answers at `/metrics`): raw values, names, types and labels
//!   ([`openmetrics::exposition`], [`openmetrics::naming`], [`openmetrics::kind`]).
//!
//! # Examples
//!
//! ```
//! use prfdata_registry::FileRegistry;
//! use prfmon::collector::{Collector, CollectorOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let registry = FileRegistry::open(dir.path())?;
//! let names = prfmon::names::Names::load(&registry, "009")?;
//! let mut collector = Collector::open(registry, CollectorOptions::default())?;
//! let collection = collector.collect_with_services("Global");
//! let snapshot = prfdata_wire::snapshot::decode_owned(collection.bytes)?;
//! prfmon::report::write_table(&mut std::io::stdout(), &snapshot, &names, &collection.services)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod absence;
pub mod catalog;
pub mod collector;
pub mod datablock;
pub mod factor;
pub mod histogram;
pub mod lease;
pub mod merge;
pub mod names;
pub mod namesakes;
pub mod openmetrics;
pub mod pdh;
pub mod perfstats;
#[cfg(feature = "remote")]
pub mod remote;
pub mod report;
pub mod sampler;
pub mod session;
pub mod trust;
pub mod typeperf;
pub mod units;

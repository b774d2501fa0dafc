//! `prfdata_map!`: CPrfData's `PRFDATA_MAP_BEGIN` / `OBJ` / `CTR` / `END`, checked at compile time.

/// Declares a performance data map: the app name, its objects and their counters.
///
/// The macro generates a module holding `MAP` (the [`MapDef`](crate::map::MapDef)), `Map` (the
/// marker type for [`PrfData<Map>`](crate::PrfData)), `PrfData` (an alias of `PrfData<Map>`), one
/// unit struct per object and one [`CtrId`](crate::map::CtrId) constant per counter, typed with
/// the counter's width and object.
///
/// # Syntax
///
/// ```text
/// prfdata_map! {
///     /// docs of the module (any attributes)
///     pub mod NAME {
///         app: "AppName",
///         /// docs of the object (optional)
///         object SYMBOL = OFFSET {                 // `= OFFSET` optional
///             name: "...",                         // required
///             help: "..." | name,                  // required; `help: name` = the name
///             lang "00C" { name: "...", help: "..." },    // zero or more
///             detail: Novice | Advanced | Expert | Wizard, // default Novice
///             default: COUNTER_SYMBOL | none,      // default none
///             instances: none | { max: N, name_len: N },  // default none
///             costly: false | true,                // default false
///             total: false | true,                 // default false (a `_Total` instance)
///             packed: false | true,                // default false (128-byte instance stride)
///             counters {
///                 /// docs of the counter (optional)
///                 SYMBOL = OFFSET: CounterType {   // `= OFFSET` optional
///                     name: "...", help: "..." | name,            // required
///                     lang "00C" { name: "...", help: "..." },    // zero or more
///                     detail: Novice,              // default: the object's
///                     scale: 0,                    // default 0
///                     factor: * N | / N,           // default none (Windows 95 scale factor)
///                     unit: bytes | seconds,       // default none (the raw value's unit)
///                     on_demand: false | true,     // default false (Windows 95 PSTF_FUNCPTR)
///                     sum: [COUNTER, ...],         // default none (Windows 95 PSTF_COMPLEX)
///                     aggregate: sum | live | min | max | last, // default: by type
///                     sharded: false | true,       // default false (per-thread slots)
///                 },
///                 BASE_SYMBOL: BaseType,           // right after the counter it serves
///                 SYMBOL = OFFSET: Histogram {     // a histogram (see below)
///                     name: "...", help: "..." | name, detail, scale, lang  // as above
///                     unit: ns | us | ms | s | bytes | count,            // required
///                     range: LO..HI, error: E%,    // log-linear buckets, or
///                     buckets: [B1, B2, ...],      // explicit bounds (at most 64)
///                     sharded: false | true,       // default false (buckets in the slots too)
///                 },
///             }
///         }
///         // more objects
///     }
/// }
/// ```
///
/// Fields come in any order, separated by commas. `CounterType` is a type of
/// [`counter_type`](crate::counter_type). `max` and `name_len` may be constants of the
/// enclosing module.
///
/// **Help text** is never made up: give it, or say `help: name` to show the name as the help.
///
/// **Symbolic offsets** (the lodctr design specification: the name's index is First Counter +
/// offset, the help's the odd index after it) are computed when `= N` is left out, as the symbol .h
/// file of lodctr numbers them: each object and named counter, in declaration order, takes the
/// previous one's offset + 2, the first 0. An explicit offset is kept and must be even and unused;
/// the symbols after it continue from it (as C enumerators do), so an explicit offset that lands on
/// one given or computed before is a duplicate, reported at the later symbol. Base counters
/// have no offset (no name of their own). Changing the order of a map with computed offsets
/// changes the offsets: that is harmless, since installing a map writes its names again.
///
/// **Defaults**: an object is Novice, not costly, without instances or default counter; a
/// counter takes its object's detail level and scale 0; a base counter is Novice (a detail
/// filter never drops it while keeping the counter it serves).
///
/// **The Windows 95 stat-server extras** ([`Factor`](crate::map::Factor),
/// [`Source`](crate::map::Source)):
/// - `factor: * 4096` or `factor: / 1024`: monitors multiply or divide the *displayed* value by
///   this integer, besides `scale` (raw values are never changed). It is kept in the block's
///   counter record and, at install, in `Services\<app>\Performance\Factors`, where consumers
///   look it up by counter name index (perflib's counter definition has no field for it).
/// - `unit: bytes` or `unit: seconds`: the unit the *raw* value is in, for a count whose type
///   gives none (not text or a time, whose type says seconds). Install records it in
///   `Services\<app>\Performance\Units`; `prfmon serve` exports the raw value in it and names
///   the family for it (`"Queued payload KiB"` with `factor: / 1024, unit: bytes` is
///   `..._queued_payload_bytes`, in bytes). It is part of the map's fingerprint, as names and
///   factors are.
/// - `on_demand: true`: the app computes the value when a collector asks, with a closure given
///   to [`OnDemand::serve`](crate::OnDemand::serve); objects without instances only.
/// - `sum: [A, B, ...]`: the sum of 1 to 8 other counters of the object, of the same width,
///   computed by the reader at every read (the app never writes it; a 32-bit sum wraps at 2^32
///   as a 32-bit counter would). Sums do not nest.
///
/// **Worker processes and totals** ([`Aggregate`](crate::map::Aggregate)):
/// - `total: true` (objects with instances): every reader shows a synthesised instance named
///   `_Total`, last, computed at each read from the live instances and the object's retired
///   share.
/// - `aggregate: sum | live | min | max | last`: how `_Total` and departed instances (removed,
///   or reclaimed after their owner process died, see
///   [`InstanceSpec::process_owned`](crate::InstanceSpec::process_owned)) aggregate the
///   counter. `sum` folds a departed instance into the object's retired accumulator (counts and
///   timers never go backwards); `live` sums the live instances only (gauges); `min`, `max`,
///   `last` take one live value. Left out, the counter's type decides (the table is in
///   [`Aggregate`](crate::map::Aggregate)'s module docs); a base follows the counter it serves.
///
/// **Cache lines** (layout version 8):
/// - Each instance's counter block starts on its own 128-byte cache line (the stride is the
///   block rounded up to 128 bytes), so threads updating different instances never share a
///   line. `packed: true` keeps the dense stride (the block rounded up to 8 bytes) where
///   memory matters more: 16 instead of 128 bytes per instance for one 64-bit counter.
/// - `sharded: true` (64-bit counts and timers, not on demand or a sum): the value is spread
///   over 16 per-thread cache-line slots after each counter block, updated through
///   [`PrfData::sharded`](crate::PrfData::sharded) with no locked instruction and added up by
///   every reader. It costs 16 × 128 bytes per counter block (up to 16 sharded counters share
///   those lines), whatever `packed` says.
///
/// **Histograms** (layout version 11): `range: 10us..10s, error: 2%` lays out log-linear
/// buckets whose width is at most 2^-p of their lower edge (p from the error: 1.56 % here), with
/// an underflow bucket below `LO` and an overflow bucket above `HI`; `buckets: [1ms, 5ms]`
/// counts the values up to each bound and one bucket above the last (Prometheus' `le`). Values
/// are written with a suffix of the unit's kind (`ns`, `us`, `ms`, `s`; none for `bytes` and
/// `count`) and must be whole in the unit. A histogram expands to three counters: `SYMBOL` (its
/// sum, a `PERF_AVERAGE_BULK` with the name, always in the threads' shard lines), `SYMBOL_COUNT`
/// (a `PERF_AVERAGE_BASE` the readers fill with the count) and `SYMBOL_BUCKETS` (the
/// descriptor and buckets, [`Source::Histogram`](crate::map::Source::Histogram)); NT tools show
/// the first two as an average. Its one id, `SYMBOL`, names the buckets and is typed
/// [`TimeHistogram`](crate::counter_type::TimeHistogram) for a unit of time, else
/// [`Histogram`](crate::counter_type::Histogram): `get_ctr32`, `get_ctr64` and `sharded` do
/// not take it. A histogram is never on demand, a sum, a sum's part or scaled by a factor, and
/// aggregates as a sum.
///
/// # Errors at compile time
///
/// A mistake in the map fails to compile with a message at the token it is about: an odd or
/// duplicate offset, a duplicate symbol (objects and counters share the module) or one the
/// macro generates (`MAP`, `Map`, `PrfData`), an unknown counter type (with the nearest names),
/// a fraction, average, multi or precision counter not followed by its base, a base without its
/// counter or with an offset or texts, an unknown or repeated field (with the nearest names), a
/// missing name, help or `counters`, a bad language id, instance limits out of range, a default
/// counter that is not one of the object's, a bad app name, a sum of more than 8 counters or of
/// a counter that is not one of the object's (or is itself, a base or a sum), a sum's part of
/// another width, an on-demand counter of an object with instances, a factor of 0, an unknown
/// aggregation rule or one that cannot mean anything for the counter's type (any on text,
/// `min`/`max`/`last` on a counter read against a base, `sum`/`live` on an elapsed time), an
/// unknown unit (with the nearest names) or a unit on text or a time, `total: true` on an object without instances, a
/// histogram's range, error, bounds or unit that cannot be laid out (at the token, with the
/// bucket count it would take), or sharded buckets past the shard line. The map is
/// then validated again in
/// a `const` ([`MapError::assert_valid`](crate::map::MapError::assert_valid)), which also checks
/// the size of the block laid out from it. `prfdata/tests/ui` shows each message.
///
/// # Examples
///
/// The shortest map: every field that has a default left out, offsets computed.
///
/// ```
/// prfdata::prfdata_map! {
///     pub mod jobs {
///         app: "MacroDocJobs",
///         object JOBS {
///             name: "Jobs", help: "Jobs processed.",
///             counters {
///                 DONE: CounterCounter { name: "Jobs/sec", help: name },
///                 LATENCY: AverageTimer { name: "Avg. job time", help: "Seconds per job." },
///                 LATENCY_BASE: AverageBase,
///             }
///         }
///     }
/// }
///
/// assert_eq!(jobs::MAP.objects[0].offset, 0);
/// assert_eq!(jobs::MAP.objects[0].counters[0].offset, Some(2));
/// assert_eq!(jobs::MAP.objects[0].counters[1].offset, Some(4));
/// assert_eq!(jobs::MAP.objects[0].counters[2].offset, None);
/// assert_eq!(jobs::MAP.objects[0].counters[0].texts[0].help, "Jobs/sec");
/// ```
///
/// Every field written out:
///
/// ```
/// prfdata::prfdata_map! {
///     /// The counters of a small web server.
///     pub mod web {
///         app: "MacroDocWeb",
///         object SERVER = 0 {
///             name: "Web Server", help: "The whole server.",
///             lang "00C" { name: "Serveur Web", help: "Le serveur entier." },
///             detail: Novice, default: REQUESTS, instances: none, costly: false,
///             counters {
///                 REQUESTS = 2: CounterCounter {
///                     name: "Requests/sec", help: "Requests completed per second.",
///                     detail: Novice, scale: 0,
///                 },
///                 LATENCY = 4: AverageTimer {
///                     name: "Avg. latency", help: "Seconds per request.",
///                     detail: Advanced, scale: 3,
///                 },
///                 LATENCY_BASE: AverageBase,
///             }
///         }
///         object CONNECTION = 6 {
///             name: "Web Connection", help: "One client connection.",
///             detail: Advanced, default: none,
///             instances: { max: 256, name_len: 64 }, costly: false,
///             counters {
///                 BYTES = 8: BulkCount {
///                     name: "Bytes/sec", help: "Bytes sent per second.",
///                     detail: Advanced, scale: -3,
///                 },
///             }
///         }
///     }
/// }
///
/// assert_eq!(web::MAP.objects.len(), 2);
/// assert_eq!(web::MAP.objects[0].counters[2].symbol, "LATENCY_BASE");
/// assert_eq!(web::MAP.objects[0].texts[1].name, "Serveur Web");
/// assert_eq!(web::BYTES.offset(), 8);
/// ```
///
/// A mistake points at its token:
///
/// ```compile_fail
/// prfdata::prfdata_map! {
///     pub mod m {
///         app: "MacroDocBad",
///         object O {
///             name: "O", help: name,
///             counters { C: RawCont { name: "C", help: name } } // unknown type: did you mean `RawCount`?
///         }
///     }
/// }
/// ```
#[macro_export]
macro_rules! prfdata_map {
    ($($map:tt)*) => {
        // The proc macro gets prfdata's path first: it names prfdata's items through it.
        $crate::map::__prfdata_map! { $crate; $($map)* }
    };
}

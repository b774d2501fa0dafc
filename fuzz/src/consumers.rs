//! What reads a collection after the decoder: `prfmon decode`'s input, the consumers of a
//! decoded collection, and PDH counter paths resolved against one.
//!
//! - [`check_data_block`]: bytes as `prfmon decode FILE` reads them ([`prfdata_wire::snapshot::decode`]);
//!   a block that decodes goes to [`check_snapshot`], and its view's bulk value read
//!   (`BlockView::ints`) must read what `BlockView::int` does.
//! - [`check_snapshot`]: everything the CLI does with a decoded collection: the table and JSON
//!   reports, `list`'s catalog, `/metrics` (OpenMetrics and text), `typeperf -q`'s listing,
//!   and two samples of a PDH sampler over every object's counters (wildcards), and of a
//!   log's columns made from the same paths. No panic, and every offered counter resolves
//!   back to itself.
//! - [`check_path`]: a counter path as `typeperf` and `watch` take it
//!   ([`prfmon::pdh::parse`]): a path that parses prints as text that parses to the same path,
//!   and resolves against a real collection of the demo (or fails with a typed error).

use std::sync::OnceLock;

use prfdata_wire::snapshot::{decode, DataSnapshot, ObjectData, Values};
use prfmon::names::Names;
use prfmon::pdh::{self, CounterPath, FormatOptions};
use prfmon::sampler::{check, offers, resolve, Columns, Sampler};

/// The names of the fuzz registry (the demo's and the fuzz map's), in English.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_fuzz::consumers::names().name(1848), "PrfData Demo Service");
/// ```
pub fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| {
        let env = crate::env::get();
        let reg = prfdata_registry::FileRegistry::open(&env.registry)
            .unwrap_or_else(|e| panic!("registry: {e}"));
        Names::load(&reg, "009").unwrap_or_else(|e| panic!("names: {e}"))
    })
}

/// Decodes `bytes` as a PERF_DATA_BLOCK and, if it decodes, runs [`check_snapshot`].
///
/// # Panics
///
/// When a consumer panics or a property of the module docs does not hold.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::consumers::check_data_block(b"PERF\x01\0\0\0");
/// ```
pub fn check_data_block(bytes: &[u8]) {
    // The view's bulk value read agrees with its value-by-value one.
    if let Ok(view) = prfdata_wire::view::DataView::parse(bytes) {
        for object in view.objects() {
            let counters: Vec<_> = object.counters().collect();
            let plan = object.plan();
            let blocks = object
                .values()
                .into_iter()
                .chain(object.instances().map(|i| i.values()));
            for values in blocks {
                let one_by_one: Vec<Option<i64>> = counters.iter().map(|c| values.int(c)).collect();
                let bulk = values.ints(&plan).fold(Vec::new(), |mut read, v| {
                    read.push(v);
                    read
                });
                assert_eq!(
                    bulk, one_by_one,
                    "BlockView::ints reads what BlockView::int reads"
                );
            }
        }
    }
    match decode(bytes) {
        Ok(snapshot) => check_snapshot(&snapshot),
        Err(e) => {
            let _ = (e.to_string(), e.offset());
        }
    }
}

/// Runs every consumer of a decoded collection over `snapshot` (see the module docs).
///
/// # Panics
///
/// When a consumer panics or an offered counter does not resolve to itself.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::consumers::check_snapshot(&prfdata_wire::snapshot::DataSnapshot::default());
/// ```
pub fn check_snapshot(snapshot: &DataSnapshot) {
    let names = names();
    let services: Vec<String> = snapshot.objects.iter().map(|_| "Fuzz".into()).collect();
    let _ = prfmon::report::table_with_services(snapshot, names, &services);
    let report = prfmon::report::JsonReport::new(snapshot, names).services(&services);
    let _ = report.write_to(&mut std::io::sink());
    let _ = prfmon::catalog::catalog(std::slice::from_ref(snapshot), names, u32::MAX);
    let exposition = prfmon::openmetrics::exposition::Exposition::new(snapshot, &services, names);
    let _ = (exposition.encode(), exposition.encode_text());

    check_histograms(snapshot);
    let offered = offers(snapshot, names);
    let _ = prfmon::typeperf::query_paths(snapshot, names, None, true, |_| Ok::<(), ()>(()));
    // Each counter offered resolves to itself (the first few: the names repeat).
    for offer in offered.iter().take(16) {
        let path = offer.available.path();
        match resolve(std::slice::from_ref(&path), snapshot, names) {
            Ok(found) => assert!(
                found
                    .iter()
                    .any(|p| p.counter == path.counter && p.object == path.object),
                "{path} resolves to {found:?}"
            ),
            Err(e) => panic!("{path}, offered, does not resolve: {e}"),
        }
    }
    // Every object's counters through a sampler, twice (the second sample formats rates).
    let mut requests: Vec<CounterPath> = Vec::new();
    for offer in &offered {
        let a = &offer.available;
        let text = match a.instance {
            Some(_) => format!(r"\{}(*)\*", a.object),
            None => format!(r"\{}\*", a.object),
        };
        if let Ok(path) = pdh::parse(&text) {
            if !requests.contains(&path) {
                requests.push(path);
            }
        }
    }
    let mut sampler = Sampler::new(requests.clone(), FormatOptions::default());
    for _ in 0..2 {
        let sample = sampler.sample(snapshot, names);
        let _ = sample.wall_time();
    }
    // The same requests as a log's columns: one value per column, every sample.
    if check(&requests, snapshot, names).is_ok() {
        let mut count = 0;
        let columns = Columns::new(&requests, snapshot, names, FormatOptions::default(), |_| {
            count += 1;
            Ok::<(), ()>(())
        });
        if let Ok(mut columns) = columns {
            assert_eq!(columns.len(), count);
            for _ in 0..2 {
                assert_eq!(
                    columns.sample(snapshot, names, &Default::default()).len(),
                    count
                );
            }
        }
    }
}

/// Every histogram of `snapshot` whose copy reads: its counts fit the geometry and a
/// percentile of them lies inside the buckets that hold values (a copy that does not read is
/// "no data" with its reason, never a number). Each histogram's p99 path resolves and samples.
///
/// # Panics
///
/// When a percentile of a histogram that reads falls outside its non-empty buckets, or is
/// missing although it counted something.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::consumers::check_histograms(&prfdata_wire::snapshot::DataSnapshot::default());
/// ```
pub fn check_histograms(snapshot: &DataSnapshot) {
    let p99: prfmon::pdh::Percentile = "p99".parse().unwrap_or_else(|e| panic!("p99: {e}"));
    for object in &snapshot.objects {
        for values in counter_blocks(object) {
            for (_, view) in prfmon::histogram::histograms(object, values) {
                let Ok(view) = view else { continue };
                let g = &view.geometry;
                assert_eq!(view.buckets.len(), g.buckets(), "one count per bucket");
                let used: Vec<usize> = (0..g.buckets()).filter(|&i| view.buckets[i] > 0).collect();
                let (Some(&first), Some(&last)) = (used.first(), used.last()) else {
                    continue;
                };
                let value = view
                    .percentile_since_start(p99)
                    .unwrap_or_else(|e| panic!("p99 of {:?} counts: {e:?}", view.buckets));
                assert!(
                    value >= g.lower(first) as f64 && value <= g.upper(last) as f64,
                    "p99 {value} outside the non-empty buckets {first}..={last}"
                );
            }
        }
    }
}

/// Every counter block of `object`: its own (without instances), then each instance's.
pub fn counter_blocks(object: &ObjectData) -> impl Iterator<Item = Values<'_>> + '_ {
    object
        .values()
        .into_iter()
        .chain(object.instances().map(|i| i.values()))
}

/// The demo at work, collected: the snapshot [`check_path`] resolves paths against (the
/// committed `decode` corpus file `demo-global.raw`, a real `prfmon query --raw` file).
///
/// # Examples
///
/// ```
/// assert!(!prfdata_fuzz::consumers::demo_collection().objects.is_empty());
/// ```
pub fn demo_collection() -> &'static DataSnapshot {
    static SNAPSHOT: OnceLock<DataSnapshot> = OnceLock::new();
    SNAPSHOT.get_or_init(|| {
        decode(include_bytes!("../corpus/decode/demo-global.raw"))
            .unwrap_or_else(|e| panic!("the committed demo collection: {e}"))
    })
}

/// Parses `text` as a counter path; one that parses must print as a path that parses back the
/// same, and is resolved and sampled against [`demo_collection`].
///
/// # Panics
///
/// When parsing or resolving panics, or the printed path does not parse back the same.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::consumers::check_path(r"\PrfData Demo Worker(fast/*#1)\% Busy");
/// prfdata_fuzz::consumers::check_path(r"\\(");
/// ```
pub fn check_path(text: &str) {
    let path = match pdh::parse(text) {
        Ok(p) => p,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let printed = path.to_string();
    match pdh::parse(&printed) {
        Ok(again) => assert_eq!(again, path, "{text:?} printed as {printed:?}"),
        Err(e) => panic!("{text:?} parsed, but its printed form {printed:?} does not: {e}"),
    }
    let _ = path.is_wildcard();
    let snapshot = demo_collection();
    let names = names();
    if let Err(e) = resolve(std::slice::from_ref(&path), snapshot, names) {
        let _ = e.to_string();
    }
    let mut sampler = Sampler::new(vec![path], FormatOptions::default());
    for _ in 0..2 {
        let sample = sampler.sample(snapshot, names);
        let _ = (sample.readings.len(), sample.unmatched.len());
    }
}

//! Group `collect`: what a perflib collection of a big app costs, against copying its bytes.
//!
//! | id                   | one iteration                                                    |
//! |----------------------|------------------------------------------------------------------|
//! | `provider_1000x16`   | `CollectPerformanceData("Global")` of the dlopen'ed provider      |
//! |                      | library on an app with 1,000 instances × 16 counters              |
//! | `memcpy_same_bytes`  | copying as many bytes as that Collect returns: the floor          |
//! | `decode_1000x16`     | prfmon decoding that Collect's output in its PERF_DATA_BLOCK     |
//! |                      | (`prfdata_wire::view::DataView::parse`: every check) and reading every |
//! |                      | counter value of every instance (the real work of a consumer)    |
//! | `end_to_end_1000x16` | prfmon's collector (in process): Collect through the dlopen'ed   |
//! |                      | provider into a checked PERF_DATA_BLOCK, then read as above       |
//! | `provider_1000x16_packed` | `provider_1000x16` on an object with `packed: true`: counter |
//! |                      | blocks 136 bytes apart instead of 256                             |
//! | `provider_100000x16` | `provider_1000x16` with 100,000 instances: linear means at most  |
//! |                      | about 100 times `provider_1000x16`                                |
//! | `memcpy_100000x16_bytes` | copying as many bytes as that Collect returns: how much the  |
//! |                      | floor itself grows once the bytes outgrow the caches              |
//! | `provider_1000_histogram` | `provider_1000x16` on an app whose 1,000 instances each hold |
//! |                      | one histogram (1us..10s within 2 %: 1,166 buckets) and a count:   |
//! |                      | the descriptor, the count summed from the buckets, `_Total`'s sums |
//! | `memcpy_1000_histogram_bytes` | copying as many bytes as that Collect returns: its floor |
//!
//! The fixture ([`Fixture`]) is what all four share: a registry and a shm folder of their own,
//! the app installed there and running (its block activated, 1,000 instances with non-zero
//! counters), and the provider library loaded from beside this benchmark binary and opened for
//! the app, as perflib loads it. The collector's benchmarks take the same fixture: each id is one
//! `bench_*` function called from [`collect`].
use std::ffi::c_void;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use libloading::{Library, Symbol};
use prfdata::install::{install_in, InstallOptions};
use prfdata_registry::FileRegistry;

/// A map of one object of up to `$max` instances and 16 64-bit counters each.
macro_rules! collect_map {
    ($(#[$doc:meta])* $m:ident, $app:tt, $object:tt, $max:tt $(, $opt:ident: $val:tt)*) => {
        prfdata::prfdata_map! {
            $(#[$doc])*
            pub mod $m {
                app: $app,
                object WORKER = 0 {
                    name: $object, help: "A worker of the collect benchmark.",
                    detail: Novice, default: C00, instances: { max: $max, name_len: 32 },
                    costly: false, $($opt: $val,)*
                    counters {
                        C00 = 2: LargeRawCount { name: "Counter 00", help: "c", detail: Novice, scale: 0 },
                        C01 = 4: LargeRawCount { name: "Counter 01", help: "c", detail: Novice, scale: 0 },
                        C02 = 6: LargeRawCount { name: "Counter 02", help: "c", detail: Novice, scale: 0 },
                        C03 = 8: LargeRawCount { name: "Counter 03", help: "c", detail: Novice, scale: 0 },
                        C04 = 10: LargeRawCount { name: "Counter 04", help: "c", detail: Novice, scale: 0 },
                        C05 = 12: LargeRawCount { name: "Counter 05", help: "c", detail: Novice, scale: 0 },
                        C06 = 14: LargeRawCount { name: "Counter 06", help: "c", detail: Novice, scale: 0 },
                        C07 = 16: LargeRawCount { name: "Counter 07", help: "c", detail: Novice, scale: 0 },
                        C08 = 18: LargeRawCount { name: "Counter 08", help: "c", detail: Novice, scale: 0 },
                        C09 = 20: LargeRawCount { name: "Counter 09", help: "c", detail: Novice, scale: 0 },
                        C10 = 22: LargeRawCount { name: "Counter 10", help: "c", detail: Novice, scale: 0 },
                        C11 = 24: LargeRawCount { name: "Counter 11", help: "c", detail: Novice, scale: 0 },
                        C12 = 26: LargeRawCount { name: "Counter 12", help: "c", detail: Novice, scale: 0 },
                        C13 = 28: LargeRawCount { name: "Counter 13", help: "c", detail: Novice, scale: 0 },
                        C14 = 30: LargeRawCount { name: "Counter 14", help: "c", detail: Novice, scale: 0 },
                        C15 = 32: LargeRawCount { name: "Counter 15", help: "c", detail: Novice, scale: 0 },
                    }
                }
            }
        }
    };
}

collect_map!(
    /// An app with one object of up to 1,024 instances and 16 64-bit counters each.
    bench_map, "PrfDataBenchCollect", "Bench Collect Worker", 1024
);
collect_map!(
    /// `bench_map` with its counter blocks packed densely (`packed: true`).
    packed_map, "PrfDataBenchCollectPacked", "Bench Collect Packed Worker", 1024, packed: true
);
collect_map!(
    /// `bench_map` with room for 100,000 instances.
    big_map, "PrfDataBenchCollectBig", "Bench Collect Big Worker", 100000
);

prfdata::prfdata_map! {
    /// An app with one object of up to 1,024 instances, each a count and a latency histogram.
    pub mod hist_map {
        app: "PrfDataBenchCollectHist",
        object WORKER = 0 {
            name: "Bench Collect Histogram Worker", help: "A worker of the collect benchmark.",
            detail: Novice, default: JOBS, instances: { max: 1024, name_len: 32 },
            costly: false, total: true,
            counters {
                JOBS = 2: LargeRawCount { name: "Jobs", help: "j", detail: Novice, scale: 0 },
                LATENCY = 4: Histogram { name: "Latency", help: "l", unit: us,
                    range: 1us..10s, error: 2% },
            }
        }
    }
}

/// Instances the app runs with.
const INSTANCES: usize = 1_000;
/// Instances the big app runs with.
const BIG_INSTANCES: usize = 100_000;

/// Adds `$n` instances of `$m::WORKER` to `$prf`, every counter non-zero.
macro_rules! fill {
    ($m:ident, $prf:expr, $n:expr) => {{
        let counters = [
            $m::C00,
            $m::C01,
            $m::C02,
            $m::C03,
            $m::C04,
            $m::C05,
            $m::C06,
            $m::C07,
            $m::C08,
            $m::C09,
            $m::C10,
            $m::C11,
            $m::C12,
            $m::C13,
            $m::C14,
            $m::C15,
        ];
        for i in 0..$n {
            let inst = $prf
                .add_instance($m::WORKER, &format!("worker {i:04}"))
                .expect("room for every instance");
            for (k, ctr) in counters.iter().enumerate() {
                $prf.get_ctr64(*ctr, inst)
                    .store((i * 16 + k) as i64, Relaxed);
            }
        }
    }};
}

/// Win32 `ERROR_SUCCESS`.
const ERROR_SUCCESS: u32 = 0;

type OpenFn = unsafe extern "system" fn(*const u16) -> u32;
type CollectFn = unsafe extern "system" fn(*const u16, *mut *mut c_void, *mut u32, *mut u32) -> u32;
type CloseFn = unsafe extern "system" fn() -> u32;

/// The provider library, loaded and opened for the app, as perflib drives it.
struct Provider {
    collect: CollectFn,
    close: CloseFn,
    /// Keeps the library mapped while the function pointers above are in use.
    _lib: Library,
}

impl Provider {
    /// Loads `path` and opens it for `app`.
    fn open(path: &Path, app: &str) -> Provider {
        // SAFETY: our own provider library, whose initialisers are Rust's only.
        let lib = unsafe { Library::new(path) }
            .unwrap_or_else(|e| panic!("dlopen {}: {e}", path.display()));
        // SAFETY: the three symbols have the perflib signatures (`provider-dll/src/lib.rs`); the
        // function pointers are only called while `_lib` keeps the library loaded.
        let (open, collect, close) = unsafe {
            let open: Symbol<OpenFn> = lib.get(b"OpenPerformanceData").expect("Open");
            let collect: Symbol<CollectFn> = lib.get(b"CollectPerformanceData").expect("Collect");
            let close: Symbol<CloseFn> = lib.get(b"ClosePerformanceData").expect("Close");
            (*open, *collect, *close)
        };
        let names: Vec<u16> = app.encode_utf16().chain([0, 0]).collect();
        // SAFETY: `names` is a UTF-16 multi-string ending in two NULs.
        let status = unsafe { open(names.as_ptr()) };
        assert_eq!(status, ERROR_SUCCESS, "OpenPerformanceData");
        Provider {
            collect,
            close,
            _lib: lib,
        }
    }

    /// Collects `query` (a NUL-terminated UTF-16 string) into `buf`; returns the bytes written.
    #[inline]
    fn collect_into(&self, query: &[u16], buf: &mut [u8]) -> usize {
        assert_eq!(query.last(), Some(&0), "a NUL-terminated query");
        let mut ptr: *mut c_void = buf.as_mut_ptr().cast();
        let mut bytes = u32::try_from(buf.len()).expect("a buffer under 4 GiB");
        let mut objects = 0;
        // SAFETY: perflib's contract: the query is NUL-terminated, `ptr` has `bytes` writable
        // bytes that nothing else touches during the call, and the three out-pointers are valid.
        let status = unsafe { (self.collect)(query.as_ptr(), &mut ptr, &mut bytes, &mut objects) };
        assert_eq!(status, ERROR_SUCCESS, "CollectPerformanceData");
        assert_eq!(objects, 1, "the app's one object was collected");
        bytes as usize
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        // SAFETY: one Close for our one successful Open, while the library is still loaded.
        unsafe { (self.close)() };
    }
}

/// The running, installed app and the provider opened for it.
struct Fixture {
    root: PathBuf,
    provider: Provider,
    /// The running app's block (kept alive: the provider reads it).
    _prf: Box<dyn std::any::Any>,
}

impl Fixture {
    /// `bench_map` with [`INSTANCES`] instances.
    fn new() -> Fixture {
        let (root, shm, library) = Fixture::install("small", &bench_map::MAP);
        let prf = bench_map::PrfData::activate_in(&shm).expect("activate the app's block");
        fill!(bench_map, prf, INSTANCES);
        Fixture {
            provider: Provider::open(&library, bench_map::MAP.app),
            root,
            _prf: Box::new(prf),
        }
    }

    /// `packed_map` with [`INSTANCES`] instances.
    fn packed() -> Fixture {
        let (root, shm, library) = Fixture::install("packed", &packed_map::MAP);
        let prf = packed_map::PrfData::activate_in(&shm).expect("activate the app's block");
        fill!(packed_map, prf, INSTANCES);
        Fixture {
            provider: Provider::open(&library, packed_map::MAP.app),
            root,
            _prf: Box::new(prf),
        }
    }

    /// `big_map` with [`BIG_INSTANCES`] instances.
    fn big() -> Fixture {
        let (root, shm, library) = Fixture::install("big", &big_map::MAP);
        let prf = big_map::PrfData::activate_in(&shm).expect("activate the app's block");
        fill!(big_map, prf, BIG_INSTANCES);
        Fixture {
            provider: Provider::open(&library, big_map::MAP.app),
            root,
            _prf: Box::new(prf),
        }
    }

    /// `hist_map` with [`INSTANCES`] instances, each with 64 values recorded.
    fn histograms() -> Fixture {
        let (root, shm, library) = Fixture::install("histogram", &hist_map::MAP);
        let prf = hist_map::PrfData::activate_in(&shm).expect("activate the app's block");
        for i in 0..INSTANCES {
            let inst = prf
                .add_instance(hist_map::WORKER, &format!("worker {i:04}"))
                .expect("room for every instance");
            prf.get_ctr64(hist_map::JOBS, inst).store(64, Relaxed);
            let latency = prf.histogram(hist_map::LATENCY, inst);
            for k in 0..64u64 {
                latency.record((k * 7919 + i as u64 * 104_729) % 10_000_000);
            }
        }
        Fixture {
            provider: Provider::open(&library, hist_map::MAP.app),
            root,
            _prf: Box::new(prf),
        }
    }

    /// A registry and a shm folder of their own (named by `tag`), `map` installed there;
    /// returns the root, the shm folder and the provider library.
    fn install(tag: &str, map: &'static prfdata::map::MapDef) -> (PathBuf, PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!(
            "prfdata-bench-collect-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let shm = root.join("shm");
        std::fs::create_dir_all(&shm).expect("create the shm folder");
        // The provider reads both, in this process, when it is opened.
        std::env::set_var("PRFDATA_REGISTRY", root.join("registry"));
        std::env::set_var("PRFDATA_SHM_DIR", &shm);
        let library = provider_path();
        let registry = FileRegistry::open(root.join("registry")).expect("open the registry");
        install_in(
            &registry,
            map,
            &InstallOptions {
                library: library.clone(),
                ini_dir: root.join("ini"),
                replace: true,
            },
        )
        .expect("install the benchmark app");
        (root, shm, library)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `libprfdata_provider.so` as `cargo bench` builds it: in `deps/`, beside this binary.
fn provider_path() -> PathBuf {
    prfdata_testkit::provider_library()
}

/// `provider_1000x16`; returns what one Collect wrote, for the benchmarks that follow.
fn bench_provider(group: &mut BenchmarkGroup<'_, WallTime>, fx: &Fixture) -> Vec<u8> {
    let query: Vec<u16> = "Global".encode_utf16().chain([0]).collect();
    // Twice what it needs: Collect never returns ERROR_MORE_DATA here.
    let mut buf = vec![0u8; 1 << 20];
    let bytes = fx.provider.collect_into(&query, &mut buf);
    buf.truncate(bytes);
    let mut out = vec![0u8; 2 * bytes];
    group.bench_function("provider_1000x16", |b| {
        b.iter(|| {
            fx.provider
                .collect_into(black_box(&query), black_box(&mut out))
        })
    });
    buf
}

/// `memcpy_same_bytes`: the floor for `provider_1000x16`.
fn bench_memcpy(group: &mut BenchmarkGroup<'_, WallTime>, collected: &[u8]) {
    let (mut out, at) = unaliased(collected);
    group.bench_function("memcpy_same_bytes", |b| {
        b.iter(|| {
            black_box(&mut out[at..at + collected.len()]).copy_from_slice(black_box(collected))
        })
    });
}

/// A destination for a copy of `src` that does not 4K-alias it: its address is half a page
/// away from `src`'s modulo 4096, so a load of the copy never waits on a store 4096 bytes
/// apart (a copy from and to two fresh allocations, both page-aligned plus malloc's header,
/// otherwise lands at the same page offset in some runs and not in others, and takes up to
/// twice as long when it does). Returns the buffer and where in it the copy goes.
fn unaliased(src: &[u8]) -> (Vec<u8>, usize) {
    let out = vec![0u8; src.len() + 4096];
    let want = (src.as_ptr() as usize + 2048) % 4096;
    let at = (want + 4096 - out.as_ptr() as usize % 4096) % 4096;
    (out, at)
}

/// Every counter value of every instance (and of every object without instances) in `view`,
/// summed: what a consumer of the collection reads, so that a decode is measured with its use.
fn touch_every_value(view: &prfdata_wire::view::DataView<'_>) -> i64 {
    let mut sum = 0i64;
    for object in view.objects() {
        // One plan per object: each value is then one load (`BlockView::ints`).
        let plan = object.plan();
        let blocks = object
            .values()
            .into_iter()
            .chain(object.instances().map(|i| i.values()));
        for values in blocks {
            sum = values
                .ints(&plan)
                .fold(sum, |sum, v| sum.wrapping_add(v.unwrap_or(0)));
        }
    }
    sum
}

/// `decode_1000x16`: prfmon's decoder on the provider's output inside a PERF_DATA_BLOCK, as the
/// collector returns it: the zero-copy view (every check of the decoder), then every counter
/// value read ([`touch_every_value`]).
fn bench_decode(group: &mut BenchmarkGroup<'_, WallTime>, collected: &[u8]) {
    let block = prfmon::datablock::build_data_block(
        "bench",
        &prfmon::datablock::CollectionTimes::now(),
        &[prfmon::datablock::ProviderOutput {
            bytes: collected.to_vec(),
            num_objects: 1,
        }],
    );
    let snap = prfdata_wire::snapshot::decode(&block).expect("the collection decodes");
    assert_eq!(snap.objects[0].instance_count(), INSTANCES);
    let view = prfdata_wire::view::DataView::parse(&block).expect("the collection decodes");
    let expected: i64 = snap.objects[0]
        .instances()
        .flat_map(|i| i.values().iter().filter_map(|v| v.as_i64()))
        .sum();
    assert_eq!(touch_every_value(&view), expected, "every value is read");
    group.bench_function("decode_1000x16", |b| {
        b.iter(|| {
            prfdata_wire::view::DataView::parse(black_box(&block)).map(|v| touch_every_value(&v))
        })
    });
}

/// `end_to_end_1000x16`: the collector, as `prfmon query --in-process` runs it: Collect through
/// the dlopen'ed provider (found through the registry), the PERF_DATA_BLOCK, checked as each
/// provider's output comes (`Collector::collect_checked`: the checks of `DataView::parse`, once),
/// then every value read through its view, as `decode_1000x16` does.
fn bench_end_to_end(group: &mut BenchmarkGroup<'_, WallTime>, fx: &Fixture) {
    use prfmon::collector::{Collector, CollectorOptions, Isolation};
    let registry = FileRegistry::open(fx.root.join("registry")).expect("open the registry");
    let options = CollectorOptions {
        isolation: Isolation::InProcess,
        ..Default::default()
    };
    let mut collector = Collector::open(registry, options).expect("open the collector");
    let first = prfdata_wire::snapshot::decode(&collector.collect("Global")).expect("decodes");
    assert_eq!(
        first.objects[0].instance_count(),
        INSTANCES,
        "the collector reaches the app"
    );
    let checked = collector.collect_checked("Global");
    let reparsed = prfdata_wire::view::DataView::parse(checked.bytes()).expect("decodes");
    assert_eq!(
        checked.to_snapshot(),
        reparsed.to_snapshot(),
        "the checked view is the parsed one"
    );
    group.bench_function("end_to_end_1000x16", |b| {
        b.iter(|| {
            let block = collector.collect_checked(black_box("Global"));
            touch_every_value(&block)
        })
    });
}

/// `provider_1000x16_packed`: `provider_1000x16` on an object whose counter blocks are packed
/// densely (136 bytes apart instead of 256).
fn bench_provider_packed(group: &mut BenchmarkGroup<'_, WallTime>, fx: &Fixture) {
    let query: Vec<u16> = "Global".encode_utf16().chain([0]).collect();
    let mut out = vec![0u8; 1 << 20];
    group.bench_function("provider_1000x16_packed", |b| {
        b.iter(|| {
            fx.provider
                .collect_into(black_box(&query), black_box(&mut out))
        })
    });
}

/// One Collect of `Global` from `fx`'s provider under `ids.0` (`what` it returns, for the log),
/// and under `ids.1` its floor: a copy of as many bytes (its own growth, for an answer that no
/// longer fits the caches that hold a small one's).
fn bench_provider_and_floor(
    group: &mut BenchmarkGroup<'_, WallTime>,
    fx: &Fixture,
    (provider, floor): (&str, &str),
    what: &str,
) {
    let query: Vec<u16> = "Global".encode_utf16().chain([0]).collect();
    let mut out = vec![0u8; 64 << 20];
    let bytes = fx.provider.collect_into(&query, &mut out);
    eprintln!("collect: one Collect of {what} returns {bytes} bytes");
    group.bench_function(provider, |b| {
        b.iter(|| {
            fx.provider
                .collect_into(black_box(&query), black_box(&mut out))
        })
    });
    let collected = out[..bytes].to_vec();
    let (mut copy, at) = unaliased(&collected);
    group.bench_function(floor, |b| {
        b.iter(|| {
            black_box(&mut copy[at..at + collected.len()]).copy_from_slice(black_box(&collected))
        })
    });
}

fn collect(c: &mut Criterion) {
    let fx = Fixture::new();
    let mut group = c.benchmark_group("collect");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let collected = bench_provider(&mut group, &fx);
    eprintln!(
        "collect: one Collect of {INSTANCES} instances x 16 counters returns {} bytes",
        collected.len()
    );
    bench_memcpy(&mut group, &collected);
    bench_decode(&mut group, &collected);
    bench_end_to_end(&mut group, &fx);
    // One app served at a time: the small app's provider is closed before the next one opens.
    drop(fx);
    let packed = Fixture::packed();
    bench_provider_packed(&mut group, &packed);
    drop(packed);
    let histograms = Fixture::histograms();
    let ids = ("provider_1000_histogram", "memcpy_1000_histogram_bytes");
    let what = format!("{INSTANCES} instances x one histogram");
    bench_provider_and_floor(&mut group, &histograms, ids, &what);
    drop(histograms);
    let big = Fixture::big();
    let ids = ("provider_100000x16", "memcpy_100000x16_bytes");
    let what = format!("{BIG_INSTANCES} instances x 16 counters");
    bench_provider_and_floor(&mut group, &big, ids, &what);
    group.finish();
}

criterion_group!(benches, collect);
criterion_main!(benches);

//! Group `runtime_counters`: adding one run-time counter (`Dynamic::add_counter`, feature
//! `install`), with few and with many run-time counters already there.
//!
//! | id           | one iteration (timed)                                            |
//! |--------------|------------------------------------------------------------------|
//! | `add_at_0`   | `add_counter` on a run-time object with no other counter          |
//! | `add_at_500` | the same with 500 run-time counters there                         |
//! | `add_at_1000` | the same with 1000 run-time counters there (the slope)          |
//! | `add_500_in_one_call` | `add_counters` with 500 specs, on an object with none       |
//!
//! An add past the first few is staged (published with others later, `prfdata::dynamic`,
//! "Adds published in batches") unless the staged ones would exceed an eighth of the published
//! ones; each iteration's add is removed (a publication, untimed), so `add_at_500` and
//! `add_at_1000` time a staged add and `add_at_0` one published at once. What an add costs
//! over a run of them, its share of the publications included, is what the `run_of_100_at_*`
//! functions of the same group time:
//!
//! | id           | one iteration (timed)                                            |
//! |--------------|------------------------------------------------------------------|
//! | `run_of_100_at_0` | 100 single `add_counter` calls and the `publish_runtime` after them, on an object with no counter |
//! | `run_of_100_at_500` | the same with 500 run-time counters there                  |
//! | `run_of_100_at_1000` | the same with 1000 run-time counters there                |
//!
//! Group `runtime_registry`: the registry's part of an add alone
//! (`prfdata_registry::register_runtime_names` on the same registry, the names made beforehand).
//!
//! | id           | one iteration (timed)                                            |
//! |--------------|------------------------------------------------------------------|
//! | `register_at_0` | the names of a run-time object and one counter, where the object had none |
//! | `register_at_500` | the same with 500 counters' names there                       |
//! | `register_at_1000` | the same with 1000 counters' names there                     |
//!
//! An add registers the names (one registry update: a record appended to the registry's
//! journal, the store written again only when the journal outgrows it; then the app's `.INI`
//! and `.h` rewritten) and lays the run-time block out again with every value copied. What is added is removed after each timed add, untimed, so every
//! iteration starts from the same state. The registry and the blocks are on tmpfs
//! (`/dev/shm` when there is one): the figures are the work an add does, not the disk's fsync.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use prfdata::dynamic::{CounterSpec, DynObject, ObjectSpec};
use prfdata_registry::install::{CounterNames, Text};
use prfdata_registry::{register_runtime_names, FileRegistry};
use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;

prfdata::prfdata_map! {
    /// The installed map: one object; the benchmark's counters are added at run time.
    pub mod bench_map {
        app: "PrfDataBenchRuntime",
        object SERVICE {
            name: "Bench Runtime Service", help: "The run-time counters benchmark.",
            counters {
                UP: RawCount { name: "Up", help: "u" },
            }
        }
    }
}

fn work_dir() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("prfdata-bench-runtime-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the benchmark's folder");
    dir
}

/// The names of `count` counters.
fn names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("Existing {i}")).collect()
}

/// Specs of counters named `names`.
fn specs(names: &[String]) -> Vec<CounterSpec<'_>> {
    names
        .iter()
        .map(|n| CounterSpec::new(n, "A counter already there.", PERF_COUNTER_RAWCOUNT))
        .collect()
}

/// `count` run-time counters of `obj`, added in one change.
fn fill(prf: &bench_map::PrfData, obj: DynObject, count: usize) {
    // The handles go; the counters stay (they are removed with the object).
    prf.dynamic()
        .add_counters(obj, &specs(&names(count)))
        .expect("add the existing counters");
}

/// The installed map's highest offset: the run-time names go above it.
const INSTALLED_HIGHEST: u32 = 2;

/// The names prfdata registers for a run-time object with `count` counters: the object's at
/// the first offset above the installed map's, then each counter's.
fn runtime_names(count: usize) -> Vec<CounterNames> {
    let one = |symbol: String, offset: u32, name: String| CounterNames {
        symbol,
        offset,
        texts: vec![Text::new("009", name, "A run-time name.")],
        factor: None,
        unit: None,
    };
    let first = INSTALLED_HIGHEST + 2;
    std::iter::once(one("PLUGIN".into(), first, "Bench Plug-in".into()))
        .chain(
            (0..count as u32)
                .map(|i| one(format!("C{i}"), first + 2 + 2 * i, format!("Existing {i}"))),
        )
        .collect()
}

/// Group `runtime_registry` (module docs), on the registry in `root` where the map is
/// installed and has no run-time names.
fn runtime_registry(c: &mut Criterion, root: &std::path::Path) {
    let registry = FileRegistry::open(root).expect("open the benchmark's registry");
    let app = bench_map::MAP.app;
    let mut group = c.benchmark_group("runtime_registry");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for existing in [0, 500, 1000] {
        let (before, after) = (runtime_names(existing), runtime_names(existing + 1));
        register_runtime_names(&registry, app, INSTALLED_HIGHEST, &before, Some(1))
            .expect("register the existing names");
        group.bench_function(format!("register_at_{existing}"), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    register_runtime_names(&registry, app, INSTALLED_HIGHEST, &after, Some(1))
                        .expect("register one more");
                    timed += start.elapsed();
                    register_runtime_names(&registry, app, INSTALLED_HIGHEST, &before, Some(1))
                        .expect("remove it again");
                }
                timed
            })
        });
    }
    group.finish();
    register_runtime_names(&registry, app, INSTALLED_HIGHEST, &[], None)
        .expect("remove the run-time names");
}

/// How many single adds one iteration of `runtime_single_adds` makes.
const RUN: usize = 100;

/// The `run_of_100_at_*` functions (module docs), in `group`.
fn runtime_single_adds(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    prf: &bench_map::PrfData,
) {
    let run: Vec<String> = (0..RUN).map(|i| format!("Run {i}")).collect();
    let run = specs(&run);
    for existing in [0, 500, 1000] {
        group.bench_function(format!("run_of_100_at_{existing}"), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let obj = prf
                        .dynamic()
                        .add_object(&ObjectSpec::new("Bench Plug-in", "Run-time counters."))
                        .expect("add the object");
                    fill(prf, obj, existing);
                    let start = Instant::now();
                    for spec in &run {
                        prf.dynamic().add_counter(obj, spec).expect("add a counter");
                    }
                    prf.dynamic()
                        .publish_runtime()
                        .expect("publish the staged counters");
                    timed += start.elapsed();
                    prf.dynamic().remove_object(obj).expect("remove the object");
                }
                timed
            })
        });
    }
}

fn runtime_counters(c: &mut Criterion) {
    let dir = work_dir();
    std::env::set_var("PRFDATA_REGISTRY", dir.join("registry"));
    bench_map::PrfData::install(&prfdata::install::InstallOptions {
        library: prfdata_testkit::provider_library(),
        ini_dir: dir.join("ini"),
        replace: true,
    })
    .expect("install the benchmark map");
    let prf = bench_map::PrfData::activate_in(&dir.join("shm")).expect("activate");

    let mut group = c.benchmark_group("runtime_counters");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    let spec = CounterSpec::new(
        "Added",
        "The counter each iteration adds.",
        PERF_COUNTER_RAWCOUNT,
    );
    for existing in [0, 500, 1000] {
        let obj = prf
            .dynamic()
            .add_object(&ObjectSpec::new("Bench Plug-in", "Run-time counters."))
            .expect("add the object");
        fill(&prf, obj, existing);
        group.bench_function(format!("add_at_{existing}"), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let added = prf
                        .dynamic()
                        .add_counter(obj, &spec)
                        .expect("add a counter");
                    timed += start.elapsed();
                    prf.dynamic()
                        .remove_counter(&added)
                        .expect("remove it again");
                }
                timed
            })
        });
        prf.dynamic().remove_object(obj).expect("remove the object");
    }
    runtime_single_adds(&mut group, &prf);
    let names = names(500);
    let many = specs(&names);
    let plugin = ObjectSpec::new("Bench Plug-in", "Run-time counters.");
    group.bench_function("add_500_in_one_call", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let obj = prf.dynamic().add_object(&plugin).expect("add the object");
                let start = Instant::now();
                prf.dynamic()
                    .add_counters(obj, &many)
                    .expect("add the counters");
                timed += start.elapsed();
                prf.dynamic().remove_object(obj).expect("remove the object");
            }
            timed
        })
    });
    group.finish();

    drop(prf);
    runtime_registry(c, &dir.join("registry"));
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, runtime_counters);
criterion_main!(benches);

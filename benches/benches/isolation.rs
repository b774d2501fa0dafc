//! Group `isolation`: what each further service costs the collector, in each isolation mode.
//!
//! Every service gets its own copy of its provider library's state (perflib's Collect has no
//! service handle): its own provider host process by default, or in process a plain `dlopen`
//! for the first service of a file and a `dlmopen` namespace for every further one. This group
//! measures what that costs.
//!
//! | id               | one iteration                                                          |
//! |------------------|------------------------------------------------------------------------|
//! | `host/N`         | `Collector::collect("Global")`, N services, a provider host process each |
//! | `in_process/N`   | the same in process: one `dlopen` copy and N − 1 `dlmopen` namespaces    |
//!
//! N = 1, 4, 8 services sharing one `libprfdata_provider.so` path, each serving its own app
//! (one object, 16 instances × 4 64-bit counters, blocks published by this process). Before
//! timing, the setup prints the memory (from `/proc/<pid>/smaps_rollup`): each provider
//! host's RSS and PSS with 8 services, and the collector process's RSS and PSS growth from 1
//! to 8 in-process services, per further service; and how long opening 8 services takes.
//!
//! The hosts are the `prfmon` binary of the same profile: build it first
//! (`cargo build --release -p prfmon`), then `cargo bench -p prfdata-benches --bench
//! isolation`; without it the `host` ids are left out, with a message.
use std::any::Any;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use prfdata::install::{install_in, InstallOptions};
use prfdata_registry::{paths, update, FileRegistry, Value};
use prfmon::collector::{default_host_exe, Collector, CollectorOptions, Isolation};

/// One app of this benchmark: `$module` with app name `$app`.
macro_rules! bench_app {
    ($module:ident, $app:literal) => {
        prfdata::prfdata_map! {
            /// One app of the isolation benchmark: 16 workers × 4 counters.
            pub mod $module {
                app: $app,
                object WORKER = 0 {
                    name: "Bench Isolation Worker", help: "A worker.",
                    detail: Novice, default: C0, instances: { max: 16, name_len: 16 }, costly: false,
                    counters {
                        C0 = 2: LargeRawCount { name: "Counter 0", help: "c", detail: Novice, scale: 0 },
                        C1 = 4: LargeRawCount { name: "Counter 1", help: "c", detail: Novice, scale: 0 },
                        C2 = 6: LargeRawCount { name: "Counter 2", help: "c", detail: Novice, scale: 0 },
                        C3 = 8: LargeRawCount { name: "Counter 3", help: "c", detail: Novice, scale: 0 },
                    }
                }
            }
        }
    };
}

bench_app!(app0, "PrfDataBenchIso0");
bench_app!(app1, "PrfDataBenchIso1");
bench_app!(app2, "PrfDataBenchIso2");
bench_app!(app3, "PrfDataBenchIso3");
bench_app!(app4, "PrfDataBenchIso4");
bench_app!(app5, "PrfDataBenchIso5");
bench_app!(app6, "PrfDataBenchIso6");
bench_app!(app7, "PrfDataBenchIso7");

/// The services (apps) installed; the benchmarks enable the first N.
const APPS: usize = 8;
/// The service counts measured.
const COUNTS: [usize; 3] = [1, 4, 8];

/// The apps installed in a registry of their own and running (blocks kept alive).
struct Fixture {
    root: PathBuf,
    registry: FileRegistry,
    _apps: Vec<Box<dyn Any>>,
}

impl Fixture {
    fn new() -> Fixture {
        let root =
            std::env::temp_dir().join(format!("prfdata-bench-isolation-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let shm = root.join("shm");
        std::fs::create_dir_all(&shm).expect("create the shm folder");
        // The provider reads both, in process and in its hosts (which inherit them).
        std::env::set_var("PRFDATA_REGISTRY", root.join("registry"));
        std::env::set_var("PRFDATA_SHM_DIR", &shm);
        let registry = FileRegistry::open(root.join("registry")).expect("open the registry");
        let options = InstallOptions {
            library: provider_path(),
            ini_dir: root.join("ini"),
            replace: true,
        };
        let mut apps: Vec<Box<dyn Any>> = Vec::new();
        macro_rules! start {
            ($($m:ident),*) => {$(
                install_in(&registry, &$m::MAP, &options).expect("install a benchmark app");
                let prf = $m::PrfData::activate_in(&shm).expect("activate a benchmark app");
                for i in 0..16 {
                    let inst = prf.add_instance($m::WORKER, &format!("worker {i}")).expect("room");
                    for (k, c) in [$m::C0, $m::C1, $m::C2, $m::C3].into_iter().enumerate() {
                        prf.get_ctr64(c, inst).store((16 * i + k) as i64, Relaxed);
                    }
                }
                apps.push(Box::new(prf));
            )*};
        }
        start!(app0, app1, app2, app3, app4, app5, app6, app7);
        Fixture {
            root,
            registry,
            _apps: apps,
        }
    }

    /// Enables the first `n` services and disables the others.
    fn enable_first(&self, n: usize) {
        let services = [
            app0::MAP.app,
            app1::MAP.app,
            app2::MAP.app,
            app3::MAP.app,
            app4::MAP.app,
            app5::MAP.app,
            app6::MAP.app,
            app7::MAP.app,
        ];
        update(&self.registry, |hive| {
            for (i, service) in services.iter().enumerate() {
                let off = u32::from(i >= n);
                hive.set_value(
                    &paths::performance(service),
                    "Disable Performance Counters",
                    Value::Dword(off),
                )?;
            }
            Ok::<(), prfdata_registry::RegistryError>(())
        })
        .expect("enable the services");
    }

    /// A collector over the first `n` services, checked to collect each app once.
    fn collector(&self, n: usize, isolation: Isolation) -> Collector<FileRegistry> {
        self.enable_first(n);
        let options = CollectorOptions {
            isolation,
            ..Default::default()
        };
        let mut collector = Collector::open(self.registry.clone(), options).expect("collector");
        let collection = collector.collect_with_services("Global");
        let snap = prfdata_wire::snapshot::decode(&collection.bytes).expect("decodes");
        assert_eq!(
            snap.objects.len(),
            n,
            "{isolation:?}: one object per service"
        );
        assert!(snap.objects.iter().all(|o| o.instance_count() == 16));
        let mut services = collection.services.clone();
        services.dedup();
        assert_eq!(
            services.len(),
            n,
            "{isolation:?}: each from its own service"
        );
        collector
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

/// `Rss` and `Pss` of a process, in KiB, from `/proc/<pid>/smaps_rollup`.
fn memory_kib(pid: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(Path::new("/proc").join(pid).join("smaps_rollup"))
        .unwrap_or_default();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("Rss:"), field("Pss:"))
}

/// The pids of this process's children named `prfmon` (its provider hosts).
fn host_pids() -> Vec<String> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`: the comm may hold spaces, so split after its `)`.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            stat.contains("(prfmon)") && after.split_whitespace().nth(1) == Some(me.as_str())
        })
        .collect()
}

/// Prints the memory figures of the module docs (the hosts' only if `hosts` can run).
fn report_memory(fx: &Fixture, hosts: bool) {
    if hosts {
        report_host_memory(fx);
    }
    report_namespace_memory(fx);
}

/// The provider hosts' memory, with 8 services.
fn report_host_memory(fx: &Fixture) {
    let started = std::time::Instant::now();
    let hosts = fx.collector(APPS, Isolation::HostProcess);
    eprintln!(
        "isolation: opening {APPS} services in provider hosts (and a first collection): {:?}",
        started.elapsed()
    );
    let pids = host_pids();
    assert_eq!(pids.len(), APPS, "one provider host per service");
    let per_host: Vec<(u64, u64)> = pids.iter().map(|p| memory_kib(p)).collect();
    let (rss, pss): (Vec<u64>, Vec<u64>) = per_host.into_iter().unzip();
    eprintln!(
        "isolation: {APPS} provider hosts: RSS {:?} KiB, PSS {:?} KiB (mean {} / {} KiB)",
        rss,
        pss,
        rss.iter().sum::<u64>() / APPS as u64,
        pss.iter().sum::<u64>() / APPS as u64
    );
    hosts.close();
}

/// The collector's growth from 1 to 8 in-process services.
fn report_namespace_memory(fx: &Fixture) {
    let one = fx.collector(1, Isolation::InProcess);
    let before = memory_kib("self");
    let started = std::time::Instant::now();
    let eight = fx.collector(APPS, Isolation::InProcess);
    eprintln!(
        "isolation: opening {APPS} services in process (and a first collection): {:?}",
        started.elapsed()
    );
    let after = memory_kib("self");
    let extra = (APPS - 1) as u64;
    eprintln!(
        "isolation: in process, 1 -> {APPS} services: RSS +{} KiB, PSS +{} KiB: \
         {} / {} KiB per further service (namespace)",
        after.0.saturating_sub(before.0),
        after.1.saturating_sub(before.1),
        after.0.saturating_sub(before.0) / extra,
        after.1.saturating_sub(before.1) / extra
    );
    eight.close();
    one.close();
}

fn isolation(c: &mut Criterion) {
    let host = default_host_exe();
    let hosts = host.is_file();
    if !hosts {
        eprintln!(
            "isolation: {} is not built, so the host ids are left out: run \
             `cargo build --release -p prfmon` first",
            host.display()
        );
    }
    let fx = Fixture::new();
    report_memory(&fx, hosts);
    let mut group = c.benchmark_group("isolation");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let modes = [
        ("host", Isolation::HostProcess),
        ("in_process", Isolation::InProcess),
    ];
    for (mode, isolation) in modes.into_iter().skip(usize::from(!hosts)) {
        for n in COUNTS {
            let mut collector = fx.collector(n, isolation);
            group.bench_function(BenchmarkId::new(mode, n), |b| {
                b.iter(|| collector.collect(black_box("Global")).len())
            });
            collector.close();
        }
    }
    group.finish();
}

criterion_group!(benches, isolation);
criterion_main!(benches);

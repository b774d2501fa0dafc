//! Adding run-time counters one at a time, in one process: what N `add_counter` calls (and the
//! `publish_runtime` that lays out what they left staged) cost in wall time, CPU time
//! (`getrusage`) and resident memory (`VmRSS`), the time of each tenth of them (a cost per add
//! that grows with the counters there shows as growing tenths), and how many run-time block
//! generations they laid out.
//!
//! ```sh
//! cargo run --release -p prfdata-benches --example runtime_adds -- 500 [FOLDER]
//! ```
//!
//! The registry and the blocks go in a new folder under FOLDER (default `/dev/shm`, or the
//! temporary folder where there is none), removed at the end. Prints one `key value` line per
//! figure.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use prfdata::dynamic::{CounterSpec, ObjectSpec};
use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;

prfdata::prfdata_map! {
    /// The installed map: one object; the counters are added at run time.
    pub mod adds_map {
        app: "PrfDataRuntimeAdds",
        object SERVICE {
            name: "Runtime Adds Service", help: "The run-time adds loop.",
            counters {
                UP: RawCount { name: "Up", help: "u" },
            }
        }
    }
}

/// This process's user plus system CPU time.
fn cpu() -> Duration {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value it is given and reads
    // nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// This process's resident memory, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(500);
    let base = args.next().map(PathBuf::from).unwrap_or_else(|| {
        let shm = PathBuf::from("/dev/shm");
        if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        }
    });
    let dir = base.join(format!("prfdata-runtime-adds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the folder");
    std::env::set_var("PRFDATA_REGISTRY", dir.join("registry"));
    adds_map::PrfData::install(&prfdata::install::InstallOptions {
        library: prfdata_testkit::provider_library(),
        ini_dir: dir.join("ini"),
        replace: true,
    })
    .expect("install the map");
    let prf = adds_map::PrfData::activate_in(&dir.join("shm")).expect("activate");
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Adds", "Run-time counters."))
        .expect("add the object");

    let names: Vec<String> = (0..count).map(|i| format!("Counter {i}")).collect();
    let (rss, cpu_start, start) = (rss_kib(), cpu(), Instant::now());
    let mut tenths = Vec::new();
    let mut tenth = Instant::now();
    let mut handles = Vec::with_capacity(count);
    for (i, name) in names.iter().enumerate() {
        let spec = CounterSpec::new(name, "A run-time counter.", PERF_COUNTER_RAWCOUNT);
        handles.push(
            prf.dynamic()
                .add_counter(obj, &spec)
                .expect("add a counter"),
        );
        if (i + 1) % (count / 10).max(1) == 0 {
            tenths.push(tenth.elapsed().as_millis());
            tenth = Instant::now();
        }
    }
    prf.dynamic()
        .publish_runtime()
        .expect("publish the staged counters");
    let (wall, cpu_used) = (start.elapsed(), cpu() - cpu_start);
    println!("adds {count}");
    println!("generations {}", prf.dynamic().runtime_publications());
    println!("wall_ms {}", wall.as_millis());
    println!("cpu_ms {}", cpu_used.as_millis());
    println!("rss_growth_kib {}", rss_kib().saturating_sub(rss));
    println!(
        "tenths_ms {}",
        tenths
            .iter()
            .map(u128::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    drop(handles);
    drop(prf);
    let _ = std::fs::remove_dir_all(&dir);
}

//! Run-time objects and counters (`prfdata::dynamic`): the run-time block's file, values kept
//! across re-layouts, and the refusals.

use prfdata::dynamic::{CounterSpec, ObjectSpec};
use prfdata::winperf::{PERF_AVERAGE_TIMER, PERF_COUNTER_LARGE_RAWCOUNT, PERF_COUNTER_RAWCOUNT};
use prfdata::Error;

prfdata::prfdata_map! {
    pub mod rt {
        app: "PrfDataRunTime",
        object BASE = 0 {
            name: "Base", help: "b", detail: Novice, default: none, instances: none, costly: false,
            counters {
                C = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 },
            }
        }
    }
}

#[test]
fn run_time_counters_keep_their_values_across_layouts_and_their_block_goes_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let dyn_path = dir.path().join("PrfDataRunTime.dyn.blk");
    let prf = rt::PrfData::activate_in(dir.path()).unwrap();
    let obj = prf.add_object(&ObjectSpec::new("Plugin", "p")).unwrap();
    assert!(
        !dyn_path.exists(),
        "an object without counters is not laid out"
    );
    let big = prf
        .add_counter(
            obj,
            &CounterSpec::new("Big", "b", PERF_COUNTER_LARGE_RAWCOUNT),
        )
        .unwrap();
    big.store(1 << 40).unwrap();
    let small = prf
        .add_counter(obj, &CounterSpec::new("Small", "s", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    small.fetch_add(-5).unwrap();
    let other = prf.add_object(&ObjectSpec::new("Other", "o")).unwrap();
    let third = prf
        .add_counter(
            other,
            &CounterSpec::new("Third", "t", PERF_COUNTER_RAWCOUNT),
        )
        .unwrap();
    third.store(3).unwrap();
    assert_eq!((big.load().unwrap(), small.load().unwrap()), (1 << 40, -5));
    assert!(dyn_path.exists());

    prf.remove_object(obj).unwrap();
    assert!(matches!(
        big.load(),
        Err(Error::NoSuchStatistic { offset, .. }) if offset == big.offset()
    ));
    assert_eq!(third.load().unwrap(), 3, "the other object's value kept");
    assert!(matches!(
        prf.remove_object(obj),
        Err(Error::NoSuchStatistic { .. })
    ));

    prf.remove_object(other).unwrap();
    assert!(!dyn_path.exists(), "nothing left to publish");
    let again = prf.add_object(&ObjectSpec::new("Again", "a")).unwrap();
    assert!(again.offset() > third.offset(), "offsets are never reused");
    prf.add_counter(again, &CounterSpec::new("A", "a", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    assert!(dyn_path.exists());
    drop(prf);
    assert!(!dyn_path.exists(), "removed with the app's block");
}

#[test]
fn run_time_statistics_are_refused_where_they_cannot_be() {
    let dir = tempfile::tempdir().unwrap();
    let prf = rt::PrfData::activate_in(dir.path()).unwrap();
    let obj = prf.add_object(&ObjectSpec::new("Plugin", "p")).unwrap();
    // A type that needs a base counter after it.
    let err = prf
        .add_counter(obj, &CounterSpec::new("Avg", "a", PERF_AVERAGE_TIMER))
        .unwrap_err();
    assert!(matches!(err, Error::Map(_)), "{err}");
    let ok = prf
        .add_counter(obj, &CounterSpec::new("Ok", "o", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    assert_eq!(
        ok.offset(),
        obj.offset() + 2,
        "the refused counter took no offset"
    );

    let attached = rt::PrfData::attach_in(dir.path()).unwrap();
    assert!(matches!(
        attached.add_object(&ObjectSpec::new("No", "n")),
        Err(Error::NotOwner { .. })
    ));
    attached.dyn_counter(ok.offset()).unwrap().store(4).unwrap();
    assert_eq!(ok.load().unwrap(), 4);
    assert!(
        matches!(
            attached.dyn_counter(obj.offset()),
            Err(Error::NoSuchStatistic { .. })
        ),
        "an object is not a counter"
    );
}

/// Child: adds a run-time counter, says so, and waits to be killed.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if crate::common::role().as_deref() != Some("runtime") {
        return;
    }
    let prf = rt::PrfData::activate().unwrap();
    let obj = prf.add_object(&ObjectSpec::new("Plugin", "p")).unwrap();
    prf.add_counter(obj, &CounterSpec::new("C", "c", PERF_COUNTER_RAWCOUNT))
        .unwrap()
        .store(5)
        .unwrap();
    std::fs::write(crate::common::child_dir().join("ready"), b"").unwrap();
    std::thread::sleep(std::time::Duration::from_secs(60));
}

/// Regression: a killed app's run-time block stayed, and was served beside the next
/// activation's statistics as if they were its own.
#[test]
fn a_killed_apps_run_time_block_is_removed_by_the_next_activation() {
    let dir = tempfile::tempdir().unwrap();
    let dyn_path = dir.path().join("PrfDataRunTime.dyn.blk");
    let mut child = crate::common::spawn_child("dynamic::child_entry", "runtime", dir.path(), &[]);
    assert!(crate::common::wait_until(
        std::time::Duration::from_secs(30),
        || dir.path().join("ready").exists()
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(dyn_path.exists(), "SIGKILL leaves it");
    let prf = rt::PrfData::activate_in(dir.path()).unwrap();
    assert!(!dyn_path.exists(), "the next activation removes it");
    drop(prf);
}

/// A run-time block is read by attached processes as untrusted input: garbage at its path is
/// refused with an error, never mapped into counters.
#[test]
fn an_attached_process_refuses_a_corrupt_run_time_block() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let prf = rt::PrfData::activate_in(dir.path()).unwrap();
    let obj = prf.add_object(&ObjectSpec::new("Plugin", "p")).unwrap();
    let ctr = prf
        .add_counter(obj, &CounterSpec::new("C", "c", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    let path = dir.path().join("PrfDataRunTime.dyn.blk");
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    // Another file of the same size, its header's magic intact and the rest scribbled on.
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[16..] {
        *b = 0xA5;
    }
    assert_eq!(bytes.len(), len);
    let fake = dir.path().join("fake");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&fake)
        .unwrap();
    std::fs::write(&fake, &bytes).unwrap();
    std::fs::rename(&fake, &path).unwrap();

    let attached = rt::PrfData::attach_in(dir.path()).unwrap();
    let err = attached.dyn_counter(ctr.offset()).unwrap_err();
    assert!(matches!(err, Error::MapMismatch { .. }), "{err}");
    drop(prf);
}

/// How many run-time counters the cost test adds, one at a time.
const COST_COUNTERS: usize = 500;

/// This process's resident memory, in KiB (`VmRSS` of `/proc/self/status`).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// Child: installs the map in its registry (`PRFDATA_REGISTRY`), adds [`COST_COUNTERS`]
/// run-time counters one at a time, then as many in one `add_counters`, and reports in
/// `<shm dir>/cost` the registry store writes each way cost and its resident memory before,
/// half-way through and after the single adds.
#[test]
#[ignore = "entry point for child processes"]
fn cost_child() {
    if crate::common::role().as_deref() != Some("runtime-cost") {
        return;
    }
    let dir = crate::common::child_dir();
    rt::PrfData::install(&prfdata::install::InstallOptions {
        library: "/nonexistent/libprovider.so".into(),
        ini_dir: dir.join("ini"),
        replace: true,
    })
    .unwrap();
    let prf = rt::PrfData::activate().unwrap();
    let obj = prf.add_object(&ObjectSpec::new("Plugin", "p")).unwrap();
    let writes = prfdata_registry::store_writes();
    let mut rss = vec![rss_kib()];
    let mut counters = Vec::with_capacity(COST_COUNTERS);
    for i in 0..COST_COUNTERS {
        let name = format!("Counter {i}");
        let spec = CounterSpec::new(&name, "A run-time counter.", PERF_COUNTER_RAWCOUNT);
        counters.push(prf.add_counter(obj, &spec).unwrap());
        if i + 1 == COST_COUNTERS / 2 {
            rss.push(rss_kib());
        }
    }
    rss.push(rss_kib());
    let writes = prfdata_registry::store_writes() - writes;
    let names: Vec<String> = (0..COST_COUNTERS).map(|i| format!("More {i}")).collect();
    let specs: Vec<_> = names
        .iter()
        .map(|n| CounterSpec::new(n, "Added at once.", PERF_COUNTER_RAWCOUNT))
        .collect();
    let batch = prfdata_registry::store_writes();
    counters.extend(prf.add_counters(obj, &specs).unwrap());
    let batch = prfdata_registry::store_writes() - batch;
    assert_eq!(counters.len(), 2 * COST_COUNTERS);
    let report = format!("{writes} {batch} {} {} {}", rss[0], rss[1], rss[2]);
    std::fs::write(dir.join("cost"), report).unwrap();
}

/// Regression: every run-time counter added rewrote every definition and leaked it (the map a
/// layout is made from), 35 MB for 500 counters, and read the registry store twice. Adding
/// them one at a time now writes the store once each, `add_counters` once for all, and memory
/// grows in proportion to the counters (the second half of the adds costs about what the first
/// did).
#[test]
fn run_time_counters_cost_one_store_write_each_and_memory_in_proportion() {
    // On tmpfs when there is one: the test counts writes, it does not time the disk.
    let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let registry = dir.path().join("registry");
    let child = crate::common::spawn_child(
        "dynamic::cost_child",
        "runtime-cost",
        dir.path(),
        &[("PRFDATA_REGISTRY", registry.display().to_string())],
    );
    crate::common::wait_ok(child, std::time::Duration::from_secs(600));
    let report = std::fs::read_to_string(dir.path().join("cost")).unwrap();
    let n: Vec<u64> = report
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let (writes, batch) = (n[0], n[1]);
    let (first_half, second_half) = (n[3].saturating_sub(n[2]), n[4].saturating_sub(n[3]));
    assert_eq!(
        writes, COST_COUNTERS as u64,
        "one store write per counter added"
    );
    assert_eq!(
        batch, 1,
        "one store write for all the counters of add_counters"
    );
    // What 500 counters need (their definitions, handles and index) is well under 1 MiB; the
    // bounds leave room for the allocator's and the parsed store's slack.
    assert!(
        first_half + second_half < 8 * 1024,
        "{COST_COUNTERS} counters took {} KiB",
        first_half + second_half
    );
    assert!(
        second_half <= 2 * first_half + 2048,
        "memory grew faster than the counters: {first_half} KiB for the first half of the \
         adds, {second_half} KiB for the second"
    );
}

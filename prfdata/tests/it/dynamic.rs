//! Run-time objects and counters (`prfdata::dynamic`): the run-time block's file, values kept
//! across re-layouts, and the refusals.

use prfdata::dynamic::{CounterSpec, ObjectSpec};
use prfdata::Error;
use prfdata_wire::winperf::{
    PERF_AVERAGE_TIMER, PERF_COUNTER_LARGE_RAWCOUNT, PERF_COUNTER_RAWCOUNT, PERF_PRFDATA_HISTOGRAM,
};

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
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Plugin", "p"))
        .unwrap();
    assert!(
        !dyn_path.exists(),
        "an object without counters is not laid out"
    );
    let big = prf
        .dynamic()
        .add_counter(
            obj,
            &CounterSpec::new("Big", "b", PERF_COUNTER_LARGE_RAWCOUNT),
        )
        .unwrap();
    big.store(1 << 40).unwrap();
    let small = prf
        .dynamic()
        .add_counter(obj, &CounterSpec::new("Small", "s", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    small.fetch_add(-5).unwrap();
    let other = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Other", "o"))
        .unwrap();
    let third = prf
        .dynamic()
        .add_counter(
            other,
            &CounterSpec::new("Third", "t", PERF_COUNTER_RAWCOUNT),
        )
        .unwrap();
    third.store(3).unwrap();
    assert_eq!((big.load().unwrap(), small.load().unwrap()), (1 << 40, -5));
    assert!(dyn_path.exists());

    prf.dynamic().remove_object(obj).unwrap();
    assert!(matches!(
        big.load(),
        Err(Error::NoSuchStatistic { offset, .. }) if offset == big.offset()
    ));
    assert_eq!(third.load().unwrap(), 3, "the other object's value kept");
    assert!(matches!(
        prf.dynamic().remove_object(obj),
        Err(Error::NoSuchStatistic { .. })
    ));

    prf.dynamic().remove_object(other).unwrap();
    assert!(!dyn_path.exists(), "nothing left to publish");
    let again = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Again", "a"))
        .unwrap();
    assert!(again.offset() > third.offset(), "offsets are never reused");
    prf.dynamic()
        .add_counter(again, &CounterSpec::new("A", "a", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    assert!(dyn_path.exists());
    drop(prf);
    assert!(!dyn_path.exists(), "removed with the app's block");
}

/// Counters added one at a time past the first few are staged, not laid out at once: each is
/// usable through its handle at once, its value written before the publication is in the
/// block after it, an attached process and the block's file see it within `PUBLISH_DELAY`
/// without any call (the publishing thread), and a staged counter can be removed.
#[test]
fn staged_run_time_counters_keep_their_values_and_are_published_within_the_delay() {
    const ADDS: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let prf = rt::PrfData::activate_in(dir.path()).unwrap();
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Plugin", "p"))
        .unwrap();
    let names: Vec<String> = (0..ADDS).map(|i| format!("Staged {i}")).collect();
    let before = prf.dynamic().runtime_publications();
    let mut counters = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let ty = if i % 2 == 0 {
            PERF_COUNTER_RAWCOUNT
        } else {
            PERF_COUNTER_LARGE_RAWCOUNT
        };
        let ctr = prf
            .dynamic()
            .add_counter(obj, &CounterSpec::new(name, "s", ty))
            .unwrap();
        ctr.store(i as i64 * 10).unwrap();
        assert_eq!(ctr.fetch_add(1).unwrap(), i as i64 * 10);
        counters.push(ctr);
    }
    let generations = prf.dynamic().runtime_publications() - before;
    assert!(
        generations < ADDS as u64,
        "{ADDS} single adds laid out {generations} generations: none was staged"
    );
    // One more add that is staged (the next one is, unless the publishing thread published
    // what was staged meanwhile): the publishing thread lays it out within the delay, with no
    // call; bounded wait, generous for a loaded machine.
    let mut extra = 0;
    let last = loop {
        let published = prf.dynamic().runtime_publications();
        let name = format!("Extra {extra}");
        let ctr = prf
            .dynamic()
            .add_counter(obj, &CounterSpec::new(&name, "s", PERF_COUNTER_RAWCOUNT))
            .unwrap();
        ctr.store((ADDS as i64 - 1) * 10 + 1).unwrap();
        if prf.dynamic().runtime_publications() == published {
            break (ctr, published);
        }
        extra += 1;
        assert!(extra < 16, "no add was staged");
    };
    let (last, published) = last;
    let attached = rt::PrfData::attach_in(dir.path()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let seen = loop {
        match attached.dynamic().dyn_counter(last.offset()) {
            Ok(ctr) => break ctr,
            Err(Error::NoSuchStatistic { .. }) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the staged counter was never published"
                );
                std::thread::sleep(prfdata::dynamic::PUBLISH_DELAY / 5);
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(seen.load().unwrap(), (ADDS as i64 - 1) * 10 + 1);
    assert!(
        prf.dynamic().runtime_publications() > published,
        "published by the publishing thread"
    );
    for (i, ctr) in counters.iter().enumerate() {
        assert_eq!(ctr.load().unwrap(), i as i64 * 10 + 1, "counter {i}");
    }
    // A staged counter removed, and another one left staged, published explicitly.
    let gone = prf
        .dynamic()
        .add_counter(obj, &CounterSpec::new("Gone", "g", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    gone.store(5).unwrap();
    let kept = prf
        .dynamic()
        .add_counter(obj, &CounterSpec::new("Kept", "k", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    kept.store(7).unwrap();
    prf.dynamic().remove_counter(&gone).unwrap();
    assert!(matches!(gone.load(), Err(Error::NoSuchStatistic { .. })));
    prf.dynamic().publish_runtime().unwrap();
    assert_eq!(
        attached
            .dynamic()
            .dyn_counter(kept.offset())
            .unwrap()
            .load()
            .unwrap(),
        7
    );
    assert!(attached.dynamic().dyn_counter(gone.offset()).is_err());
    assert!(matches!(
        attached.dynamic().publish_runtime(),
        Err(Error::NotOwner { .. })
    ));
}

#[test]
fn run_time_statistics_are_refused_where_they_cannot_be() {
    let dir = tempfile::tempdir().unwrap();
    let prf = rt::PrfData::activate_in(dir.path()).unwrap();
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Plugin", "p"))
        .unwrap();
    // A type that needs a base counter after it.
    let err = prf
        .dynamic()
        .add_counter(obj, &CounterSpec::new("Avg", "a", PERF_AVERAGE_TIMER))
        .unwrap_err();
    assert!(matches!(err, Error::Map(_)), "{err}");
    // A histogram: declared in the map, with its geometry, never added at run time.
    let err = prf
        .dynamic()
        .add_counter(obj, &CounterSpec::new("Hist", "h", PERF_PRFDATA_HISTOGRAM))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Map(prfdata::map::MapError::BadHistogram {
                problem: prfdata::map::HistogramProblem::RunTime,
                ..
            })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("run time"), "{err}");
    let ok = prf
        .dynamic()
        .add_counter(obj, &CounterSpec::new("Ok", "o", PERF_COUNTER_RAWCOUNT))
        .unwrap();
    assert_eq!(
        ok.offset(),
        obj.offset() + 2,
        "the refused counter took no offset"
    );

    let attached = rt::PrfData::attach_in(dir.path()).unwrap();
    assert!(matches!(
        attached.dynamic().add_object(&ObjectSpec::new("No", "n")),
        Err(Error::NotOwner { .. })
    ));
    attached
        .dynamic()
        .dyn_counter(ok.offset())
        .unwrap()
        .store(4)
        .unwrap();
    assert_eq!(ok.load().unwrap(), 4);
    assert!(
        matches!(
            attached.dynamic().dyn_counter(obj.offset()),
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
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Plugin", "p"))
        .unwrap();
    prf.dynamic()
        .add_counter(obj, &CounterSpec::new("C", "c", PERF_COUNTER_RAWCOUNT))
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
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Plugin", "p"))
        .unwrap();
    let ctr = prf
        .dynamic()
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
    let err = attached.dynamic().dyn_counter(ctr.offset()).unwrap_err();
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

/// The registry's journal, `registry.log`, beside its store.
fn log_len(registry: &std::path::Path) -> u64 {
    std::fs::metadata(registry.join("registry.log")).map_or(0, |m| m.len())
}

/// Child: installs the map in its registry (`PRFDATA_REGISTRY`), adds [`COST_COUNTERS`]
/// run-time counters one at a time, then as many in one `add_counters`, and reports in
/// `<shm dir>/cost` (one `name value` per line) the run-time block generations and registry
/// commits the single adds cost (staged adds published at the end included), the registry
/// store writes each way cost, its resident memory before, half-way through and after the
/// single adds, and the bytes the registry's journal grew by when the 10th add and when one
/// more counter after the 500 were published.
#[test]
#[ignore = "entry point for child processes"]
fn cost_child() {
    if crate::common::role().as_deref() != Some("runtime-cost") {
        return;
    }
    let dir = crate::common::child_dir();
    let registry = std::path::PathBuf::from(std::env::var_os("PRFDATA_REGISTRY").unwrap());
    rt::PrfData::install(&prfdata::install::InstallOptions {
        // Nothing loads the provider here: any existing file will do.
        library: std::env::current_exe().unwrap(),
        ini_dir: dir.join("ini"),
        replace: true,
    })
    .unwrap();
    let prf = rt::PrfData::activate().unwrap();
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Plugin", "p"))
        .unwrap();
    let commits = || prfdata_registry::store_writes() + prfdata_registry::log_appends();
    let (writes, appends, generations) = (
        prfdata_registry::store_writes(),
        prfdata_registry::log_appends(),
        prf.dynamic().runtime_publications(),
    );
    let mut rss = vec![rss_kib()];
    let mut growth_10 = 0;
    let mut counters = Vec::with_capacity(COST_COUNTERS);
    for i in 0..COST_COUNTERS {
        let name = format!("Counter {i}");
        let spec = CounterSpec::new(&name, "A run-time counter.", PERF_COUNTER_RAWCOUNT);
        let (len, rewrites) = (log_len(&registry), prfdata_registry::store_writes());
        counters.push(prf.dynamic().add_counter(obj, &spec).unwrap());
        // What the 10th add appended to the journal (published at once: few counters yet).
        if i == 9 && prfdata_registry::store_writes() == rewrites {
            growth_10 = log_len(&registry).saturating_sub(len);
        }
        if i + 1 == COST_COUNTERS / 2 {
            rss.push(rss_kib());
        }
    }
    prf.dynamic().publish_runtime().unwrap();
    rss.push(rss_kib());
    let generations = prf.dynamic().runtime_publications() - generations;
    let writes = prfdata_registry::store_writes() - writes;
    let appends = prfdata_registry::log_appends() - appends;
    // One more counter, staged, then published alone: what its journal record takes.
    // Measured before the add: the publishing thread may publish it before `publish_runtime`.
    let spec = CounterSpec::new("Counter last", "A run-time counter.", PERF_COUNTER_RAWCOUNT);
    let (len, rewrites) = (log_len(&registry), prfdata_registry::store_writes());
    counters.push(prf.dynamic().add_counter(obj, &spec).unwrap());
    prf.dynamic().publish_runtime().unwrap();
    let growth_last = if prfdata_registry::store_writes() == rewrites {
        log_len(&registry).saturating_sub(len)
    } else {
        0
    };
    let names: Vec<String> = (0..COST_COUNTERS).map(|i| format!("More {i}")).collect();
    let specs: Vec<_> = names
        .iter()
        .map(|n| CounterSpec::new(n, "Added at once.", PERF_COUNTER_RAWCOUNT))
        .collect();
    let batch = commits();
    counters.extend(prf.dynamic().add_counters(obj, &specs).unwrap());
    let batch = commits() - batch;
    assert_eq!(counters.len(), 2 * COST_COUNTERS + 1);
    let report = [
        ("generations", generations),
        ("writes", writes),
        ("appends", appends),
        ("batch", batch),
        ("rss0", rss[0]),
        ("rss1", rss[1]),
        ("rss2", rss[2]),
        ("growth_10", growth_10),
        ("growth_last", growth_last),
    ]
    .map(|(name, value)| format!("{name} {value}\n"))
    .concat();
    std::fs::write(dir.join("cost"), report).unwrap();
}

/// Regression: every run-time counter added rewrote every definition and leaked it (the map a
/// layout is made from), 35 MB for 500 counters, and read the registry store twice; then each
/// add still rewrote the whole registry store, work that grew with the counters already
/// there; then each add still laid out a new run-time block and made a registry commit with
/// every run-time name, so that n single adds cost work in n². Adds are now staged while the
/// staged ones are a small fraction of the published ones: 500 single adds publish a number of
/// block generations that grows with the logarithm of 500 (each one registry commit, of which
/// a bounded few rewrite the store), the journal records as many bytes for the 501st counter
/// as for the 10th; `add_counters` commits once for all; memory grows in proportion to the
/// counters.
#[test]
fn single_run_time_adds_publish_logarithmically_many_generations_memory_in_proportion() {
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
    let n: std::collections::HashMap<&str, u64> = report
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    // Published at once while there are few (under 8), then in batches of one eighth of what
    // is published: about 8 + log(500 / 8) / log(9 / 8) = 43 generations (fewer: the batches
    // round up), a few more when the publishing thread's deadline came first on a slow
    // machine. One per add was 500.
    let bound = 16 + 8 * u64::from(COST_COUNTERS.ilog2());
    assert!(
        n["generations"] <= bound,
        "{COST_COUNTERS} single adds laid out {} run-time block generations (at most {bound})",
        n["generations"]
    );
    assert_eq!(
        n["writes"] + n["appends"],
        n["generations"],
        "one registry commit per run-time block generation: {n:?}"
    );
    // The journal is folded into the store when it outgrows it: the store doubles (at least)
    // between rewrites, so the commits rewrite it a handful of times.
    assert!(
        n["writes"] <= 8,
        "{COST_COUNTERS} adds rewrote the whole store {} times",
        n["writes"]
    );
    assert_eq!(
        n["batch"], 1,
        "one registry commit for all the counters of add_counters"
    );
    // What a commit of one more name appends: the name, the app's range and fingerprint, and
    // a sequence number, a few bytes longer for "Counter last" than for "Counter 9".
    assert!(n["growth_10"] > 0 && n["growth_last"] > 0, "{n:?}");
    assert!(
        n["growth_last"] <= n["growth_10"] + 16,
        "publishing one more counter appended {} bytes at the 10th counter and {} after the \
         {COST_COUNTERS}th",
        n["growth_10"],
        n["growth_last"]
    );
    let (first_half, second_half) = (
        n["rss1"].saturating_sub(n["rss0"]),
        n["rss2"].saturating_sub(n["rss1"]),
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

prfdata::prfdata_map! {
    pub mod rt_two {
        app: "PrfDataRunTimeTwo",
        object BASE = 0 {
            name: "Base Two", help: "b", detail: Novice, default: none, instances: none, costly: false,
            counters {
                C = 2: RawCount { name: "C Two", help: "c", detail: Novice, scale: 0 },
            }
        }
    }
}

/// How many run-time counters each of the two concurrent apps adds, one at a time.
const CONCURRENT_ADDS: usize = 150;

/// The name of the `i`th run-time counter the app `prefix` adds.
fn concurrent_name(prefix: &str, i: usize) -> String {
    format!("{prefix} Counter {i}")
}

/// Installs `M`'s map in the registry (`PRFDATA_REGISTRY`), adds [`CONCURRENT_ADDS`] counters
/// one at a time, says `added-<prefix>` in `dir`, and stays (its names registered) until the
/// parent says `checked`.
fn add_concurrently<M: prfdata::map::PerfDataMap>(prefix: &str) {
    let dir = crate::common::child_dir();
    prfdata::PrfData::<M>::install(&prfdata::install::InstallOptions {
        // Nothing loads the provider here: any existing file will do.
        library: std::env::current_exe().unwrap(),
        ini_dir: dir.join(format!("ini-{prefix}")),
        replace: true,
    })
    .unwrap();
    let prf = prfdata::PrfData::<M>::activate().unwrap();
    let obj = prf
        .dynamic()
        .add_object(&ObjectSpec::new(&format!("{prefix} Plugin"), "p"))
        .unwrap();
    for i in 0..CONCURRENT_ADDS {
        let name = concurrent_name(prefix, i);
        let spec = CounterSpec::new(&name, "A run-time counter.", PERF_COUNTER_RAWCOUNT);
        prf.dynamic().add_counter(obj, &spec).unwrap();
    }
    // Staged adds reach the registry within `PUBLISH_DELAY`, or now.
    prf.dynamic().publish_runtime().unwrap();
    std::fs::write(dir.join(format!("added-{prefix}")), "").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !dir.join("checked").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the parent never checked"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Child: one of the two apps of
/// [`two_apps_adding_run_time_counters_at_once_lose_no_name`].
#[test]
#[ignore = "entry point for child processes"]
fn concurrent_child() {
    match crate::common::role().as_deref() {
        Some("concurrent-a") => add_concurrently::<rt::Map>("A"),
        Some("concurrent-b") => add_concurrently::<rt_two::Map>("B"),
        _ => {}
    }
}

/// Two processes (two apps) install themselves and add run-time counters one at a time into
/// one registry at the same time: each add is a journal record appended under the registry's
/// lock by whichever process holds it, each writer reusing the tree it last committed only
/// while no other committed since. Every name of both is in the registry afterwards.
#[test]
fn two_apps_adding_run_time_counters_at_once_lose_no_name() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let registry = dir.path().join("registry");
    let env = [("PRFDATA_REGISTRY", registry.display().to_string())];
    // Killed and reaped when dropped, also when the test fails.
    let mut children: Vec<crate::common::ChildProcess> = ["concurrent-a", "concurrent-b"]
        .map(|role| crate::common::spawn_child("dynamic::concurrent_child", role, dir.path(), &env))
        .into();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    for prefix in ["A", "B"] {
        while !dir.path().join(format!("added-{prefix}")).exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "app {prefix} did not finish adding"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let reg = prfdata_registry::FileRegistry::open(&registry).unwrap();
    let hive = prfdata_registry::Registry::snapshot(&reg).unwrap();
    let names: std::collections::BTreeSet<String> =
        prfdata_registry::perflib::counter_text(&hive, "009")
            .unwrap()
            .counter
            .into_values()
            .collect();
    std::fs::write(dir.path().join("checked"), "").unwrap();
    while let Some(child) = children.pop() {
        crate::common::wait_ok(child, std::time::Duration::from_secs(120));
    }
    for prefix in ["A", "B"] {
        let missing: Vec<String> = (0..CONCURRENT_ADDS)
            .map(|i| concurrent_name(prefix, i))
            .filter(|n| !names.contains(n))
            .collect();
        assert!(missing.is_empty(), "app {prefix} lost {missing:?}");
        assert!(names.contains(&format!("{prefix} Plugin")));
    }
}

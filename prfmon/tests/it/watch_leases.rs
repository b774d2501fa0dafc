//! Watch leases held by real collectors (the Windows 95 stat servers' start/stop notifications) and
//! KB Q174631's PerfStats sequence through real `prfmon reg query` processes, against a real app
//! (in this process, so the test sees what the app is told) and the real provider.

use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use prfdata::watch::{Lease, WatchEvent};

use crate::common::finish;
use crate::sampling_app::{tp, App};

/// How long the app may take to be told a collector started watching (the collector starts,
/// loads the provider and collects once first).
const START_WAIT: Duration = Duration::from_secs(60);

/// The next event about a counter for which `is` holds, within `limit`.
fn next_event(
    events: &Receiver<WatchEvent>,
    limit: Duration,
    is: impl Fn(&WatchEvent) -> bool,
) -> WatchEvent {
    let start = Instant::now();
    loop {
        let left = limit.saturating_sub(start.elapsed());
        let e = events
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no awaited watch event within {limit:?}: {e}"));
        if is(&e) {
            return e;
        }
    }
}

/// Waits (bounded) until `cond` holds.
fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn typeperf_holds_a_lease_on_what_it_logs_and_it_lapses_after_sigkill() {
    let app = App::start();
    let events = app.prf.watch().events();
    assert!(!app.prf.watch().is_watched(tp::QUEUE));
    let mut typeperf = app
        .command(&["typeperf", r"\TP Service\Queue length", "-si", "0.25"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn prfmon typeperf");
    let start = next_event(&events, START_WAIT, |e| e.is_for(tp::QUEUE));
    assert!(start.is_start(), "{start:?}");
    assert!(app.prf.watch().is_watched(tp::QUEUE));
    assert!(app.prf.watch().is_object_watched(tp::SERVICE));
    assert!(
        !app.prf.watch().is_watched(tp::JOBS),
        "only what typeperf logs"
    );
    assert!(!app.prf.watch().is_object_watched(tp::WORKER));

    typeperf.kill().expect("SIGKILL typeperf");
    typeperf.wait().expect("reap typeperf");
    let stop = next_event(&events, Lease::TTL * 4, |e| e.is_for(tp::QUEUE));
    assert!(!stop.is_start(), "{stop:?}");
    assert!(!app.prf.watch().is_watched(tp::QUEUE));
}

/// A collector in a pid namespace of its own (a sidecar container sharing the block folder):
/// the app, which cannot see its pid, still counts its lease while it runs, and drops it once
/// it is killed.
#[test]
fn a_collector_in_its_own_pid_namespace_holds_its_lease_until_killed() {
    let app = App::start();
    let events = app.prf.watch().events();
    let command = app.command(&["typeperf", r"\TP Service\Queue length", "-si", "0.25"]);
    let mut typeperf = prfdata_testkit::in_new_pid_namespace(&command)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn prfmon typeperf in a pid namespace of its own");
    let start = next_event(&events, START_WAIT, |e| e.is_for(tp::QUEUE));
    assert!(start.is_start(), "{start:?}");
    std::thread::sleep(Duration::from_millis(500)); // the app looks again: still watched
    assert!(app.prf.watch().is_watched(tp::QUEUE));

    typeperf
        .kill()
        .expect("SIGKILL unshare (and typeperf with it)");
    typeperf.wait().expect("reap it");
    let stop = next_event(&events, Lease::TTL * 4, |e| e.is_for(tp::QUEUE));
    assert!(!stop.is_start(), "{stop:?}");
    assert!(!app.prf.watch().is_watched(tp::QUEUE));
}

#[test]
fn two_collectors_count_twice_and_the_stop_comes_after_the_last() {
    let app = App::start();
    let events = app.prf.watch().events();
    let table = prfdata::watch::WatchTable::open_in(&app.shm, "SamplingTest").expect("table");
    let spawn = || {
        app.command(&["typeperf", r"\TP Worker(*)\Done", "-si", "0.25"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn prfmon typeperf")
    };
    let mut first = spawn();
    let mut second = spawn();
    // Name offset 8 is Done.
    eventually("two leases on Done", START_WAIT, || table.watchers(8) == 2);
    assert!(next_event(&events, START_WAIT, |e| e.is_for(tp::DONE)).is_start());
    first.kill().expect("kill");
    first.wait().expect("reap");
    eventually("one lease left", Lease::TTL * 4, || table.watchers(8) == 1);
    assert!(
        app.prf.watch().is_watched(tp::DONE),
        "the second typeperf still watches"
    );
    second.kill().expect("kill");
    second.wait().expect("reap");
    let stop = next_event(&events, Lease::TTL * 4, |e| e.is_for(tp::DONE));
    assert!(!stop.is_start(), "{stop:?}");
}

#[test]
fn serve_holds_leases_on_everything_it_exports() {
    let app = App::start();
    let events = app.prf.watch().events();
    let mut serve = app
        .command(&["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn prfmon serve");
    eventually("serve watching every counter", START_WAIT, || {
        app.prf.watch().is_watched(tp::QUEUE)
            && app.prf.watch().is_watched(tp::JOBS)
            && app.prf.watch().is_watched(tp::DONE)
            && app.prf.watch().is_watched(tp::SCANS)
    });
    serve.kill().expect("kill serve");
    serve.wait().expect("reap serve");
    eventually("serve's leases lapsed", Lease::TTL * 4, || {
        !app.prf.watch().is_watched(tp::QUEUE) && !app.prf.watch().is_watched(tp::SCANS)
    });
    let mut stopped = 0;
    while let Ok(e) = events.try_recv() {
        if !e.is_start() && e.stat().1.is_some() {
            stopped += 1;
        }
    }
    assert!(stopped >= 4, "a Stop per counter: {stopped}");
}

const ENUM: &str = r"HKLM\System\CurrentControlSet\Control\PerfStats\Enum";

/// KB Q174631, steps 1 to 7, each call a `prfmon reg query` process as a Windows 95 program's
/// `RegEnumKeyEx` / `RegQueryValueEx` would be.
#[test]
fn kb_q174631_steps_through_reg_query_start_read_and_stop_a_stat() {
    let app = App::start();
    let events = app.prf.watch().events();
    let reg = |args: &[&str]| {
        let mut all = vec!["reg", "query"];
        all.extend_from_slice(args);
        let run = finish(
            app.command(&all)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn prfmon reg query"),
        );
        assert_eq!(run.code, 0, "reg query {args:?}: {}", run.stderr);
        run.stdout
    };

    // Step 1: the objects.
    let objects = reg(&[ENUM]);
    let full_enum = ENUM.replace("HKLM", "HKEY_LOCAL_MACHINE");
    for key in ["TPService", "TPWorker", "TPDebug"] {
        assert!(
            objects.contains(&format!(r"{full_enum}\{key}")),
            "{objects}"
        );
    }
    // Step 2: an object's Name.
    let name = reg(&[&format!(r"{ENUM}\TPService"), "/v", "Name"]);
    assert!(name.contains("Name    REG_SZ    TP Service"), "{name}");
    // Step 3: its counters.
    let counters = reg(&[&format!(r"{ENUM}\TPService")]);
    assert!(counters.contains(r"\TPService\Queuelength"), "{counters}");
    assert!(counters.contains(r"\TPService\Jobssec"), "{counters}");
    // Step 4: a counter's Name, Description and Differentiate.
    let queue = reg(&[&format!(r"{ENUM}\TPService\Queuelength")]);
    assert!(queue.contains("Name    REG_SZ    Queue length"), "{queue}");
    assert!(
        queue.contains("Description    REG_SZ    Jobs waiting."),
        "{queue}"
    );
    assert!(
        queue.contains("Differentiate    REG_SZ    FALSE"),
        "{queue}"
    );
    let jobs = reg(&[&format!(r"{ENUM}\TPService\Jobssec"), "/v", "Differentiate"]);
    assert!(jobs.contains("Differentiate    REG_SZ    TRUE"), "{jobs}");
    let all = reg(&[ENUM, "/s"]);
    assert!(all.contains(r"\TPWorker\Done"), "{all}");

    // Step 5: start the collection of TPService\Queuelength: the app is told.
    assert!(!app.prf.watch().is_watched(tp::QUEUE));
    reg(&[
        r"HKEY_DYN_DATA\PerfStats\StartStat",
        "/v",
        r"TPService\Queuelength",
    ]);
    let start = next_event(&events, START_WAIT, |e| e.is_for(tp::QUEUE));
    assert!(start.is_start(), "{start:?}");

    // Step 6: the value, a 4-byte REG_BINARY: 42.
    let data = reg(&[
        r"HKEY_DYN_DATA\PerfStats\StatData",
        "/v",
        r"TPService\Queuelength",
    ]);
    assert!(
        data.contains(r"TPService\Queuelength    REG_BINARY    2A000000"),
        "{data}"
    );
    app.prf
        .get_ctr32(tp::QUEUE, ())
        .store(7, std::sync::atomic::Ordering::Relaxed);
    let data = reg(&[
        r"HKEY_DYN_DATA\PerfStats\StatData",
        "/v",
        r"tpservice\QUEUELENGTH",
    ]);
    assert!(data.contains("REG_BINARY    07000000"), "{data}");
    assert!(
        app.prf.watch().is_watched(tp::QUEUE),
        "still watched between the reads"
    );

    // Step 7: stop: the app is told.
    reg(&[
        r"HKEY_DYN_DATA\PerfStats\StopStat",
        "/v",
        r"TPService\Queuelength",
    ]);
    let stop = next_event(&events, START_WAIT, |e| e.is_for(tp::QUEUE));
    assert!(!stop.is_start(), "{stop:?}");
    assert!(!app.prf.watch().is_watched(tp::QUEUE));
}

#[test]
fn perfstats_errors_are_reg_errors() {
    let app = App::start();
    let run = finish(
        app.command(&[
            "reg",
            "query",
            r"HKEY_DYN_DATA\PerfStats\StatData",
            "/v",
            r"No\Such",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn"),
    );
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("unable to find"), "{}", run.stderr);
    let run = finish(
        app.command(&["reg", "query", r"HKEY_DYN_DATA\PerfStats\Nope"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
}

/// `prfmon list --verbose --json` of `app`: the watchers of object `TP Service` and of its
/// counters `Queue length` and `Jobs/sec`, as the JSON says them.
fn listed_watchers(app: &App) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    let mut command = app.command(&["list", "TP Service", "--verbose", "--json"]);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = finish(command.spawn().expect("spawn prfmon list"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let object = &json[0];
    let counter = |name: &str| {
        object["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map_or(serde_json::Value::Null, |c| c["watchers"].clone())
    };
    (
        object["watchers"].clone(),
        counter("Queue length"),
        counter("Jobs/sec"),
    )
}

#[test]
fn list_verbose_counts_the_collectors_watching_now() {
    let app = App::start();
    assert_eq!(listed_watchers(&app), (0.into(), 0.into(), 0.into()));
    let mut plain = app.command(&["list", "--json"]);
    plain.stdin(Stdio::null()).stdout(Stdio::piped());
    let plain = finish(plain.spawn().expect("spawn prfmon list"));
    assert!(!plain.stdout.contains("watchers"), "{}", plain.stdout);

    let mut typeperf = app
        .command(&["typeperf", r"\TP Service\Queue length", "-si", "0.2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn prfmon typeperf");
    eventually("list says typeperf watches", START_WAIT, || {
        listed_watchers(&app) == (1.into(), 1.into(), 0.into())
    });
    typeperf.kill().expect("SIGKILL typeperf");
    typeperf.wait().expect("reap typeperf");
    eventually(
        "list says nobody watches",
        Lease::TTL + Duration::from_secs(5),
        || listed_watchers(&app) == (0.into(), 0.into(), 0.into()),
    );
}

//! `/metrics` values are in the unit their names and HELP state: a time counter of every clock
//! (the system's, 100 ns, the object's) exported in seconds and named `_seconds`, an elapsed
//! time as a Unix start time, counts as they are. An app in this process publishes known raw
//! values; a real `prfmon serve` exports them; `promtool check metrics` accepts the text.

use crate::serve_common::{get, promtool_check, request, require_tool, samples, Setup};

use std::sync::atomic::Ordering::Relaxed;

use prfdata::clock::PERF_FREQUENCY;
use prfdata_testkit::Sandbox;

prfdata::prfdata_map! {
    pub mod units_app {
        app: "UnitsApp",
        object TIMES = 0 {
            name: "Units Times", help: "One counter of each clock.",
            detail: Novice, default: BUSY, instances: none, costly: false,
            counters {
                BUSY = 2: CounterTimer { name: "Busy", help: "Seconds busy.", detail: Novice, scale: 0 },
                WAIT = 4: Timer100Ns { name: "Wait", help: "Seconds waiting.", detail: Novice, scale: 0 },
                OWN = 6: ObjTimeTimer { name: "Own time", help: "Seconds by the object's clock.", detail: Novice, scale: 0 },
                LATENCY = 8: AverageTimer { name: "Avg. latency", help: "Average seconds per job.", detail: Novice, scale: 0 },
                LATENCY_BASE: AverageBase,
                STARTED = 10: ElapsedTime { name: "Uptime", help: "Seconds since the start.", detail: Novice, scale: 0 },
                JOBS = 12: RawCount { name: "Jobs", help: "Jobs waiting.", detail: Novice, scale: 0 },
            }
        }
    }
}

/// Seconds from 1601-01-01 (FILETIME's epoch) to 1970-01-01.
const FILETIME_TO_UNIX: i64 = 11_644_473_600;

/// The start time the app publishes, as Unix time.
const STARTED_UNIX: i64 = 1_700_000_000;

#[test]
#[cfg_attr(
    not(prfmon_tests_prometheus),
    ignore = "needs promtool (apt-get install prometheus)"
)]
fn values_are_in_the_unit_the_name_states() {
    let promtool = require_tool("promtool");
    let sandbox = Sandbox::new();
    sandbox.install(&units_app::MAP);
    let prf = units_app::PrfData::activate_in(&sandbox.shm).expect("activate the app");
    // 3 s of the system clock, 2 s in 100 ns units, 5 s of the object's clock (FILETIME, 10^7
    // a second), 12 s over 4 jobs, a start in 2023, 7 jobs.
    prf.get_ctr64(units_app::BUSY, ())
        .store(3 * PERF_FREQUENCY, Relaxed);
    prf.get_ctr64(units_app::WAIT, ())
        .store(20_000_000, Relaxed);
    prf.get_ctr64(units_app::OWN, ()).store(50_000_000, Relaxed);
    prf.get_ctr32(units_app::LATENCY, ())
        .store(12 * PERF_FREQUENCY as i32, Relaxed);
    prf.get_ctr32(units_app::LATENCY_BASE, ()).store(4, Relaxed);
    prf.get_ctr64(units_app::STARTED, ())
        .store((STARTED_UNIX + FILETIME_TO_UNIX) * 10_000_000, Relaxed);
    prf.get_ctr32(units_app::JOBS, ()).store(7, Relaxed);

    let setup = Setup { sandbox };
    let (_serve, addr, log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("listening");
    let r = get(addr, "/metrics");
    assert_eq!(r.status, 200, "{r:?}");
    let s = samples(&r.body);
    let value = |series: &str| -> f64 {
        s.get(series)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "{series} in\n{}\nserve log:\n{}",
                    r.body,
                    log.lock().unwrap()
                )
            })
    };
    let app = "{app=\"UnitsApp\"}";
    assert_eq!(
        value(&format!("prfdata_units_times_busy_seconds_total{app}")),
        3.0
    );
    assert_eq!(
        value(&format!("prfdata_units_times_wait_seconds_total{app}")),
        2.0
    );
    assert_eq!(
        value(&format!("prfdata_units_times_own_time_seconds_total{app}")),
        5.0
    );
    assert_eq!(
        value(&format!(
            "prfdata_units_times_avg_latency_seconds_total{app}"
        )),
        12.0
    );
    assert_eq!(
        value(&format!("prfdata_units_times_avg_latency_base_total{app}")),
        4.0
    );
    assert_eq!(value(&format!("prfdata_units_times_jobs{app}")), 7.0);
    let started = value(&format!(
        "prfdata_units_times_uptime_start_time_seconds{app}"
    ));
    assert!(
        (started - STARTED_UNIX as f64).abs() < 1.0,
        "start {started}\n{}",
        r.body
    );
    // No raw clock families: the values carry their unit.
    assert!(!r.body.contains("_perf_freq"), "{}", r.body);
    let lines = [
        "# TYPE prfdata_units_times_busy_seconds counter",
        "# UNIT prfdata_units_times_busy_seconds seconds",
        "# TYPE prfdata_units_times_uptime_start_time_seconds gauge",
    ];
    has_lines_and_passes_promtool(&promtool, addr, &r.body, &lines);
}

/// `body` (the OpenMetrics text of `/metrics` at `addr`) has each of `lines`, and `promtool
/// check metrics` accepts the classic text of another scrape.
fn has_lines_and_passes_promtool(
    promtool: &std::path::Path,
    addr: std::net::SocketAddr,
    body: &str,
    lines: &[&str],
) {
    for line in lines {
        assert!(body.contains(line), "{line} in\n{body}");
    }
    let classic = request(addr, "GET", "/metrics", "*/*");
    let (ok, said) = promtool_check(promtool, &classic.body);
    assert!(ok, "promtool check metrics: {said}\n{}", classic.body);
}

prfdata::prfdata_map! {
    pub mod bytes_app {
        app: "UnitsBytesApp",
        object HEAP = 0 {
            name: "Units Heap", help: "Memory queued.",
            detail: Novice, default: PAYLOAD, instances: none, costly: false,
            counters {
                PAYLOAD = 2: LargeRawCount {
                    name: "Queued payload KiB", help: "Payload queued, shown in KiB.",
                    factor: / 1024, unit: bytes,
                },
            }
        }
    }
}

/// One rule for a scale factor: it is part of the displayed value (typeperf and watch show
/// 2048 bytes in a `/ 1024` counter as 2), and `/metrics`, which exports base units, names the
/// family for the unit the map declares and exports the bytes.
#[test]
#[cfg_attr(
    not(all(prfmon_tests_prometheus, prfmon_tests_tmux)),
    ignore = "needs promtool and tmux (apt-get install prometheus tmux)"
)]
fn one_factor_rule_for_typeperf_watch_and_metrics() {
    let promtool = require_tool("promtool");
    let sandbox = Sandbox::new();
    sandbox.install(&bytes_app::MAP);
    let prf = bytes_app::PrfData::activate_in(&sandbox.shm).expect("activate the app");
    prf.get_ctr64(bytes_app::PAYLOAD, ()).store(2048, Relaxed);

    // typeperf: the displayed value.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_prfmon"));
    sandbox
        .apply_env(&mut cmd)
        .args(["typeperf", r"\Units Heap\Queued payload KiB", "-sc", "1"])
        .env("TZ", "UTC")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let run = crate::common::finish(cmd.spawn().expect("spawn prfmon typeperf"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let row = run.stdout.lines().nth(1).unwrap_or_default();
    assert!(row.ends_with(",\"2.000000\""), "{}", run.stdout);

    // watch: the displayed value in the legend, while it runs.
    let pane = crate::watch::Pane::start_with(
        &crate::sampling_app::shell_env(&sandbox),
        r"'\Units Heap\Queued payload KiB' --interval 0.2 --frames 100 --no-scale",
    );
    let legend = |s: &str| {
        s.lines()
            .find(|l| l.contains("Queued payload"))
            .map(str::to_owned)
    };
    let screen = pane.wait_for("the legend row with the value", |s| {
        legend(s).is_some_and(|l| l.contains("2.000"))
    });
    assert!(!screen.contains("2048"), "{screen}");
    pane.keys(&["q"]);
    pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));

    // /metrics: the bytes, named for them; HELP as written.
    let setup = Setup { sandbox };
    let (_serve, addr, log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("listening");
    let r = get(addr, "/metrics");
    assert_eq!(r.status, 200, "{r:?}");
    let s = samples(&r.body);
    let series = "prfdata_units_heap_queued_payload_bytes{app=\"UnitsBytesApp\"}";
    assert_eq!(
        s.get(series).map(String::as_str),
        Some("2048"),
        "{series} in\n{}\nserve log:\n{}",
        r.body,
        log.lock().unwrap()
    );
    assert!(!r.body.contains("_kib"), "{}", r.body);
    let lines = [
        "# HELP prfdata_units_heap_queued_payload_bytes Payload queued, shown in KiB.",
        "# TYPE prfdata_units_heap_queued_payload_bytes gauge",
        "# UNIT prfdata_units_heap_queued_payload_bytes bytes",
    ];
    has_lines_and_passes_promtool(&promtool, addr, &r.body, &lines);
}

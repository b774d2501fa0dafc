//! `prfmon typeperf` through the real binary, against a real app publishing counters through the
//! real provider: the PDH-CSV header and paths, `-sc` samples, values the app set, a rate the
//! app produced, `-o` files, `-f TSV`, `-q` / `-qx`, instances that go, and paths that match
//! nothing.

use crate::common;
use crate::sampling_app;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::finish;
use sampling_app::{tp, App};

/// Parses a typeperf log (CSV or TSV) into rows of fields.
fn rows(text: &str, delimiter: u8) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.expect("a CSV record").iter().map(str::to_owned).collect())
        .collect()
}

fn stamp(field: &str) -> chrono::NaiveDateTime {
    chrono::NaiveDateTime::parse_from_str(field, "%m/%d/%Y %H:%M:%S%.3f")
        .unwrap_or_else(|e| panic!("time stamp `{field}`: {e}"))
}

#[test]
fn csv_header_paths_samples_and_values_match_the_app() {
    let app = App::start();
    // Jobs at about 2000/s: 20 every 10 ms, from another thread while typeperf samples.
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let stop = Arc::clone(&stop);
        let prf = tp::PrfData::attach_in(&app.shm).expect("attach to the app");
        std::thread::spawn(move || {
            let jobs = prf.get_ctr32(tp::JOBS, ());
            let start = Instant::now();
            let mut added = 0;
            while !stop.load(Relaxed) {
                jobs.fetch_add(20, Relaxed);
                added += 20;
                std::thread::sleep(Duration::from_millis(10));
            }
            f64::from(added) / start.elapsed().as_secs_f64()
        })
    };
    let run = finish(app.spawn(&[
        "typeperf",
        r"\TP Service\Queue length",
        r"\TP Service\Jobs/sec",
        r"\TP Worker(*)\Done",
        "-si",
        "0.5",
        "-sc",
        "4",
    ]));
    stop.store(true, Relaxed);
    let actual_rate = worker.join().expect("the job thread");
    assert_eq!(run.code, 0, "{}", run.stderr);

    let host = prfmon::datablock::host_name();
    let table = rows(&run.stdout, b',');
    assert_eq!(table.len(), 5, "a header and -sc 4 rows:\n{}", run.stdout);
    assert_eq!(
        table[0],
        [
            "(PDH-CSV 4.0) (Coordinated Universal Time)(0)".to_owned(),
            format!(r"\\{host}\TP Service\Queue length"),
            format!(r"\\{host}\TP Service\Jobs/sec"),
            format!(r"\\{host}\TP Worker(w1)\Done"),
            format!(r"\\{host}\TP Worker(w2)\Done"),
        ]
    );
    // Every field quoted, as typeperf writes them.
    let first_line = run.stdout.lines().next().unwrap_or_default();
    assert!(first_line.starts_with("\"(PDH-CSV 4.0) (") && first_line.ends_with("\\Done\""));

    // Raw counts appear exactly, with typeperf's six decimals; the first rate has no value.
    assert_eq!(table[1][1..], ["42.000000", " ", "7.000000", "9.000000"]);
    let mut last = stamp(&table[1][0]);
    let mut rates = Vec::new();
    for row in &table[2..] {
        assert_eq!(row[1], "42.000000");
        assert_eq!((row[3].as_str(), row[4].as_str()), ("7.000000", "9.000000"));
        let rate: f64 = row[2].parse().expect("a rate");
        assert!(rate > 0.0, "{rate}");
        rates.push(rate);
        let t = stamp(&row[0]);
        let gap = (t - last).num_milliseconds();
        assert!(
            (300..=1500).contains(&gap),
            "samples 0.5 s apart, got {gap} ms"
        );
        last = t;
    }
    // The thread aims at 2000 jobs/s; a loaded machine sleeps longer, so compare with what it
    // really did. Unscaled, although Jobs/sec has DefaultScale -1: logs hold the true value.
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!(
        (0.6 * actual_rate..=1.4 * actual_rate).contains(&mean),
        "typeperf's rate {mean} /s against the {actual_rate} /s the app produced ({rates:?})"
    );
}

#[test]
fn output_file_in_tsv_is_the_pdh_text_log() {
    let app = App::start();
    let out = app.path("log.tsv");
    let out_arg = out.display().to_string();
    let run = finish(app.spawn(&[
        "typeperf",
        r"\tp service\queue length",
        "-O",
        &out_arg,
        "-f",
        "TSV",
        "-sc",
        "2",
        "-si",
        "0.2",
    ]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "the log goes to the file: {}",
        run.stdout
    );
    let text = std::fs::read_to_string(&out).expect("the log file");
    let host = prfmon::datablock::host_name();
    let lines: Vec<&str> = text.split_inclusive("\r\n").collect();
    assert_eq!(lines.len(), 3, "{text:?}");
    assert!(
        lines.iter().all(|l| l.ends_with("\r\n")),
        "CRLF rows: {text:?}"
    );
    assert_eq!(
        lines[0],
        format!(
            "\"(PDH-TSV 4.0) (Coordinated Universal Time)(0)\"\t\"\\\\{host}\\TP Service\\Queue length\"\r\n"
        )
    );
    // pdh.dll's %.20g: 42, not 42.000000.
    let table = rows(&text, b'\t');
    assert_eq!(table[1][1], "42");
    assert_eq!(table[2][1], "42");
}

#[test]
#[cfg_attr(
    not(prfmon_tests_tz),
    ignore = "needs the tz database (apt-get install tzdata)"
)]
fn the_header_names_the_zone_and_its_bias_in_minutes_west() {
    let zone = std::path::Path::new("/usr/share/zoneinfo/Asia/Kolkata");
    assert!(
        zone.is_file(),
        "{} is missing, so this test cannot run: install tzdata, or rebuild without it \
         (`cargo clean -p prfmon`) so that the test is reported ignored",
        zone.display()
    );
    let app = App::start();
    let out = app
        .command(&["typeperf", r"\TP Service\Queue length", "-sc", "1"])
        .env("TZ", "Asia/Kolkata")
        .output()
        .expect("run prfmon");
    let text = String::from_utf8_lossy(&out.stdout);
    // India is UTC+5:30 all year: bias −330, as Windows writes "(India Standard Time)(-330)".
    assert!(
        text.starts_with("\"(PDH-CSV 4.0) (Asia/Kolkata)(-330)\","),
        "{text}"
    );
}

#[test]
fn query_lists_counters_and_instances() {
    let app = App::start();
    let q = finish(app.spawn(&["typeperf", "-q"]));
    assert_eq!(q.code, 0, "{}", q.stderr);
    let listed: Vec<&str> = q.stdout.lines().collect();
    assert_eq!(
        listed,
        [
            r"\TP Service\Queue length",
            r"\TP Service\Jobs/sec",
            r"\TP Worker(*)\Done",
            r"\TP Debug\Scans"
        ]
    );

    let qx = finish(app.spawn(&["typeperf", "-qx", "tp worker"]));
    assert_eq!(qx.code, 0, "{}", qx.stderr);
    assert_eq!(
        qx.stdout.lines().collect::<Vec<_>>(),
        [r"\TP Worker(w1)\Done", r"\TP Worker(w2)\Done"]
    );

    let none = finish(app.spawn(&["typeperf", "-q", "No Such Object"]));
    assert_ne!(none.code, 0);
    assert!(
        none.stderr.contains(r#"no object named "No Such Object""#),
        "{}",
        none.stderr
    );
    let misspelt = finish(app.spawn(&["typeperf", "-q", "TP Servce"]));
    assert_ne!(misspelt.code, 0);
    assert!(
        misspelt
            .stderr
            .contains(r#"no object named "TP Servce"; did you mean "TP Service"?"#),
        "{}",
        misspelt.stderr
    );
    let counter = finish(app.spawn(&["typeperf", "-q", "Jobs/sec"]));
    assert_ne!(counter.code, 0);
    assert!(
        counter.stderr.contains(
            r#""Jobs/sec" is a counter of object "TP Service": prfmon typeperf -q "TP Service""#
        ),
        "{}",
        counter.stderr
    );
}

#[test]
fn costly_objects_are_collected_when_a_path_names_them() {
    let app = App::start();
    let global = finish(app.spawn(&["query", "Global"]));
    assert!(
        global.stdout.contains("TP Service") && !global.stdout.contains("TP Debug"),
        "the costly object is not in Global:\n{}",
        global.stdout
    );
    let run = finish(app.spawn(&[
        "typeperf",
        r"\TP Debug\Scans",
        r"\TP Service\Queue length",
        "-sc",
        "2",
        "-si",
        "0.1",
    ]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let table = rows(&run.stdout, b',');
    assert_eq!(table.len(), 3, "{}", run.stdout);
    assert!(table[0][1].ends_with(r"\TP Debug\Scans"), "{:?}", table[0]);
    assert_eq!(table[1][1..], ["1234.000000", "42.000000"]);
    assert_eq!(table[2][1..], ["1234.000000", "42.000000"]);
}

/// A well-formed path that matches nothing is not an error: it is said on stderr with its near
/// matches and keeps an empty column (its app may be installed later); with `-sc`, a path that
/// matched nothing in any sample makes the exit status 1, naming it. A wildcard that matches
/// nothing gets no column (the header is fixed at the first sample). A malformed path is an
/// error before anything is written.
#[test]
fn a_path_that_matches_nothing_waits_with_near_matches_and_fails_at_the_end() {
    let app = App::start();
    let run = finish(app.spawn(&[
        "typeperf",
        r"\TP Servce\Queue lenght",
        r"\TP Worker(*)\Dome",
        r"\TP Service\Queue length",
        "-sc",
        "2",
        "-si",
        "0.1",
    ]));
    assert_eq!(run.code, 1, "{}", run.stderr);
    let host = prfmon::datablock::host_name();
    let table = rows(&run.stdout, b',');
    assert_eq!(table.len(), 3, "{}", run.stdout);
    assert_eq!(
        table[0][1..],
        [
            format!(r"\\{host}\TP Servce\Queue lenght"),
            format!(r"\\{host}\TP Service\Queue length"),
        ]
    );
    assert_eq!(table[1][1..], [" ", "42.000000"]);
    assert_eq!(table[2][1..], [" ", "42.000000"]);
    assert!(
        run.stderr.contains(
            r"not found now: \TP Servce\Queue lenght (did you mean \TP Service\Queue length, "
        ) && run.stderr.contains("?); waiting for it"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(r"not found now: \TP Worker(*)\Dome (did you mean \TP Worker(*)\Done?); a wildcard's columns are fixed"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            r"\TP Servce\Queue lenght, \TP Worker(*)\Dome matched no counter in 2 samples"
        ),
        "{}",
        run.stderr
    );

    let bad = finish(app.spawn(&["typeperf", r"TP Service\Queue length"]));
    assert_ne!(bad.code, 0);
    assert!(bad.stdout.is_empty(), "{}", bad.stdout);
    assert!(
        bad.stderr.contains(r"must start with `\`"),
        "{}",
        bad.stderr
    );

    let bin = finish(app.spawn(&["typeperf", r"\TP Service\Queue length", "-f", "BIN"]));
    assert_ne!(bin.code, 0);
    assert!(bin.stderr.contains("not supported"), "{}", bin.stderr);
}

/// Regression: a path naming another machine was answered with this machine's data
/// under the other machine's name. Since remote monitoring, such a path is collected
/// on that machine's `prfmon serve`; none answers here, so it is an error naming the host.
#[test]
fn a_path_naming_another_machine_is_refused_not_answered_with_local_data() {
    let app = App::start();
    let remote = finish(app.spawn(&[
        "typeperf",
        r"\\db-remote-7\TP Service\Queue length",
        "-sc",
        "1",
    ]));
    assert_ne!(remote.code, 0, "{}", remote.stdout);
    assert!(remote.stdout.is_empty(), "{}", remote.stdout);
    assert!(
        remote.stderr.contains("cannot reach db-remote-7:9358"),
        "{}",
        remote.stderr
    );

    // This machine by name (any case), or localhost, is still this machine.
    let host = prfmon::datablock::host_name();
    for machine in [host.to_uppercase(), "localhost".to_owned()] {
        let path = format!(r"\\{machine}\TP Service\Queue length");
        let local = finish(app.spawn(&["typeperf", &path, "-sc", "1"]));
        assert_eq!(local.code, 0, "{path}: {}", local.stderr);
        let table = rows(&local.stdout, b',');
        assert_eq!(table.len(), 2, "{}", local.stdout);
        assert_eq!(table[1][1], "42.000000", "{}", local.stdout);
    }
}

#[test]
fn an_instance_that_goes_leaves_blanks_in_its_column() {
    let app = App::start();
    let out = app.path("log.csv");
    let out_arg = out.display().to_string();
    let child = app.spawn(&[
        "typeperf",
        r"\TP Worker(*)\Done",
        "-o",
        &out_arg,
        "-si",
        "0.3",
        "-sc",
        "8",
    ]);
    // Wait (bounded) for two sample rows, then remove w2.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&out).map_or(0, |t| t.lines().count()) < 3 {
        assert!(Instant::now() < deadline, "typeperf wrote no samples");
        std::thread::sleep(Duration::from_millis(20));
    }
    let w2 = app
        .prf
        .instances()
        .list(tp::WORKER)
        .expect("list the workers")
        .into_iter()
        .find(|i| app.prf.instances().name(*i).as_deref() == Some("w2"))
        .expect("w2");
    app.prf.remove_instance(w2).expect("remove w2");
    let run = finish(child);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&out).expect("the log");
    let table = rows(&text, b',');
    assert_eq!(table.len(), 9, "{text}");
    assert_eq!(table[1][1..], ["7", "9"]);
    let last = &table[8];
    assert_eq!(last[1..], ["7", " "], "{text}");
}

/// typeperf's `-cf FILE`: one counter path per line, blank lines and `#` comments skipped,
/// logged as if named on the command line; a line that is not a counter path is refused with
/// the file and the line.
#[test]
fn counter_file_lists_the_paths() {
    let app = App::start();
    let list = app.path("counters.txt");
    std::fs::write(
        &list,
        "# what the dashboard shows\n\n\\TP Service\\Queue length\r\n   \n  \\TP Worker(w2)\\Done  \n",
    )
    .expect("write the counter file");
    let list_arg = list.display().to_string();
    let run = finish(app.spawn(&["typeperf", "-cf", &list_arg, "-sc", "1"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let host = prfmon::datablock::host_name();
    let table = rows(&run.stdout, b',');
    assert_eq!(table.len(), 2, "{}", run.stdout);
    assert_eq!(
        table[0][1..],
        [
            format!(r"\\{host}\TP Service\Queue length"),
            format!(r"\\{host}\TP Worker(w2)\Done"),
        ]
    );
    assert_eq!(table[1][1..], ["42.000000", "9.000000"]);

    std::fs::write(&list, "\\TP Service\\Queue length\n# fine\nQueue length\n").expect("write");
    let bad = finish(app.spawn(&["typeperf", "-CF", &list_arg, "-sc", "1"]));
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert!(
        bad.stderr.contains(&format!("{list_arg}, line 3")) && bad.stderr.contains("Queue length"),
        "{}",
        bad.stderr
    );
    let fifo = app.path("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let fifo_arg = fifo.display().to_string();
    let refused = finish(app.spawn(&["typeperf", "-cf", &fifo_arg, "-sc", "1"]));
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains(&fifo_arg) && refused.stderr.contains("not a regular file"),
        "{}",
        refused.stderr
    );
}

/// `-o FILE` never overwrites a file that is there unless `-y` says so, as typeperf asks
/// before it overwrites.
#[test]
fn an_existing_output_file_is_kept_without_y() {
    let app = App::start();
    let out = app.path("out.csv");
    std::fs::write(&out, "keep me\n").expect("write the old file");
    let out_arg = out.display().to_string();
    let path = r"\TP Service\Queue length";
    let run = finish(app.spawn(&["typeperf", path, "-o", &out_arg, "-sc", "1"]));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("{out_arg} exists: add -y to overwrite it")),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&out).expect("the old file"),
        "keep me\n"
    );

    let run = finish(app.spawn(&["typeperf", path, "-o", &out_arg, "-sc", "1", "-y"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let table = rows(&std::fs::read_to_string(&out).expect("the log"), b',');
    assert_eq!(table.len(), 2, "{table:?}");
    assert_eq!(table[1][1], "42");
}

prfdata::prfdata_map! {
    pub mod factor_app {
        app: "TpFactorApp",
        object HEAP = 0 {
            name: "TP Heap", help: "Memory.",
            detail: Novice, default: BYTES, instances: none, costly: false,
            counters {
                BYTES = 2: LargeRawCount { name: "Heap KiB", help: "Bytes, shown as KiB.", factor: / 1024 },
            }
        }
    }
}

/// One factor rule: a scale factor is part of the displayed value, so typeperf's log shows
/// what watch and the PerfStats view show (2048 bytes in a `/ 1024` counter: 2).
#[test]
fn typeperf_applies_the_scale_factor_as_watch_does() {
    let sandbox = prfdata_testkit::Sandbox::new();
    sandbox.install(&factor_app::MAP);
    let prf = factor_app::PrfData::activate_in(&sandbox.shm).expect("activate the app");
    prf.get_ctr64(factor_app::BYTES, ())
        .store(2048, std::sync::atomic::Ordering::Relaxed);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_prfmon"));
    sandbox
        .apply_env(&mut cmd)
        .args(["typeperf", r"\TP Heap\Heap KiB", "-sc", "1"])
        .env("TZ", "UTC")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let run = finish(cmd.spawn().expect("spawn prfmon"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let table = rows(&run.stdout, b',');
    assert_eq!(table[1][1], "2.000000", "{}", run.stdout);
}

//! `PERF_ELAPSED_TIME` follows NT's Process object, as consumers such as windows_exporter and
//! PDH assume: the object's PerfTime is the wall clock as a FILETIME (100 ns units since
//! 1601-01-01), its PerfFreq 10,000,000, and the counter holds the start time in the same units.
//!
//! The consumer here is written from winperf.h alone: it parses the PERF_DATA_BLOCK that
//! `prfmon query --raw` saved, byte offset by byte offset, and computes what windows_exporter
//! computes. A real app process publishes a job started at a known time.

use crate::prfdata_app;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prfdata::InstanceSpec;

prfdata::prfdata_map! {
    /// A service with an uptime, and jobs with their own elapsed time.
    pub mod et {
        app: "ElapsedTimeTest",
        object SERVICE = 0 {
            name: "ET Service", help: "The service.",
            detail: Novice, default: UPTIME, instances: none, costly: false,
            counters {
                UPTIME = 2: ElapsedTime { name: "Uptime", help: "Seconds since the service started.", detail: Novice, scale: 0 },
            }
        }
        object JOB = 4 {
            name: "ET Job", help: "A job.",
            detail: Novice, default: AGE, instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                DONE = 6: RawCount { name: "Done", help: "d", detail: Novice, scale: 0 },
                AGE = 8: ElapsedTime { name: "Elapsed Time", help: "Seconds since the job started.", detail: Novice, scale: 0 },
            }
        }
    }
}

/// How far back the app dates its job's start: an instance older than the process.
const JOB_AGE: Duration = Duration::from_secs(3600);

/// The app: the service started now, a job an hour ago; writes both start times (Unix
/// nanoseconds) into its ready file.
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    if std::env::var_os(prfdata_app::APP_ROLE).is_none() {
        return;
    }
    let prf = et::PrfData::activate().expect("the app activates");
    let started = SystemTime::now();
    prf.set_elapsed_start(et::UPTIME, (), started);
    let job = prf
        .add_instance(et::JOB, InstanceSpec::named("nightly"))
        .unwrap();
    let job_started = started - JOB_AGE;
    prf.set_elapsed_start(et::AGE, job, job_started);
    let nanos = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_nanos();
    prfdata_app::app_ready(format!("{} {}", nanos(started), nanos(job_started)).as_bytes());
    std::thread::sleep(Duration::from_secs(60));
}

// ---------------------------------------------------------------------------------------------
// A consumer written from winperf.h.
// ---------------------------------------------------------------------------------------------

/// winperf.h `PERF_ELAPSED_TIME`: PERF_SIZE_LARGE | PERF_TYPE_COUNTER | PERF_COUNTER_ELAPSED |
/// PERF_OBJECT_TIMER | PERF_DISPLAY_SECONDS.
const PERF_ELAPSED_TIME: u32 = 0x3024_0500;
/// FILETIME of 1970-01-01: 11,644,473,600 s after 1601-01-01, in 100 ns units.
const WINDOWS_EPOCH: i64 = 116_444_736_000_000_000;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// One `PERF_ELAPSED_TIME` reading: the counter's value and its object's clock.
#[derive(Debug, Clone, Copy)]
struct Elapsed {
    value: i64,
    object_perf_time: i64,
    object_perf_freq: i64,
}

/// Every `PERF_ELAPSED_TIME` value in a PERF_DATA_BLOCK, by object name index (one per
/// instance, or one for an object without instances). Offsets from winperf.h (64-bit):
///
/// ```text
/// PERF_DATA_BLOCK          24 HeaderLength  28 NumObjectTypes
/// PERF_OBJECT_TYPE          0 TotalByteLength  4 DefinitionLength  8 HeaderLength
///                          12 ObjectNameTitleIndex  32 NumCounters  40 NumInstances
///                          48 PerfTime (LARGE_INTEGER)  56 PerfFreq
/// PERF_COUNTER_DEFINITION   0 ByteLength  28 CounterType  32 CounterSize  36 CounterOffset
/// PERF_INSTANCE_DEFINITION  0 ByteLength, then the instance's PERF_COUNTER_BLOCK
/// PERF_COUNTER_BLOCK        0 ByteLength
/// ```
fn elapsed_values(block: &[u8]) -> BTreeMap<u32, Vec<Elapsed>> {
    assert_eq!(
        &block[..8],
        "PERF"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect::<Vec<_>>()
    );
    let mut out: BTreeMap<u32, Vec<Elapsed>> = BTreeMap::new();
    let mut at = u32_at(block, 24) as usize;
    for _ in 0..u32_at(block, 28) {
        let obj = &block[at..at + u32_at(block, at) as usize];
        let (def_len, head_len) = (u32_at(obj, 4) as usize, u32_at(obj, 8) as usize);
        let title = u32_at(obj, 12);
        let num_instances = u32_at(obj, 40) as i32;
        let (perf_time, perf_freq) = (i64_at(obj, 48), i64_at(obj, 56));
        let mut offsets = Vec::new();
        let mut def = head_len;
        for _ in 0..u32_at(obj, 32) {
            if u32_at(obj, def + 28) == PERF_ELAPSED_TIME {
                assert_eq!(u32_at(obj, def + 32), 8, "a LARGE_INTEGER");
                offsets.push(u32_at(obj, def + 36) as usize);
            }
            def += u32_at(obj, def) as usize;
        }
        let mut blocks = Vec::new();
        let mut pos = def_len;
        if num_instances == -1 {
            blocks.push(pos);
        } else {
            for _ in 0..num_instances {
                pos += u32_at(obj, pos) as usize; // the instance definition and its name
                blocks.push(pos);
                pos += u32_at(obj, pos) as usize; // its counter block
            }
        }
        for b in blocks {
            for &o in &offsets {
                out.entry(title).or_default().push(Elapsed {
                    value: i64_at(obj, b + o),
                    object_perf_time: perf_time,
                    object_perf_freq: perf_freq,
                });
            }
        }
        at += obj.len();
    }
    out
}

/// Seconds since the Unix epoch of a FILETIME, as windows_exporter turns a process's
/// "Elapsed Time" value into its start time.
fn filetime_to_unix(filetime: i64) -> f64 {
    (filetime - WINDOWS_EPOCH) as f64 / 1e7
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Regression: PerfTime and the demo's start times were CLOCK_MONOTONIC ticks, so a consumer
/// that reads them as FILETIMEs (as NT's Process object has them) saw 1601 instead of now.
#[test]
fn elapsed_time_is_a_filetime_start_against_the_filetime_object_clock() {
    let installed = prfdata_app::install(&et::MAP);
    let app = prfdata_app::spawn_app(&installed, &prfdata_testkit::test_path!("app_child"));
    let starts: Vec<u128> = String::from_utf8_lossy(&app.ready)
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let (service_start, job_start) = (starts[0] as f64 / 1e9, starts[1] as f64 / 1e9);
    // Let the service age a little; the job is an hour old.
    std::thread::sleep(Duration::from_millis(1500));

    let raw = installed.dir.path().join("block.bin");
    let (service, job) = (installed.first_counter, installed.first_counter + 4);
    let before = unix(SystemTime::now());
    let run = prfdata_app::prfmon_for(
        &installed,
        &[
            "query",
            &format!("{service} {job}"),
            "--raw",
            raw.to_str().unwrap(),
        ],
    );
    let after = unix(SystemTime::now());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let values = elapsed_values(&std::fs::read(&raw).unwrap());

    for (title, start) in [(service, service_start), (job, job_start)] {
        let [e] = values[&title][..] else {
            panic!("one elapsed time in object {title}: {values:?}");
        };
        assert_eq!(e.object_perf_freq, 10_000_000, "PerfFreq is FILETIME's");
        // The object's clock is the wall clock at collection.
        let now = filetime_to_unix(e.object_perf_time);
        assert!(
            before - 1.0 <= now && now <= after + 1.0,
            "object {title}: PerfTime is {now} s since 1970, collected between {before} and {after}"
        );
        // The value is the start time, as windows_exporter reads it.
        let start_seen = filetime_to_unix(e.value);
        assert!(
            (start_seen - start).abs() < 1.0,
            "object {title}: started at {start}, the counter says {start_seen}"
        );
        // PDH's (PerfTime - N) / PerfFreq is the real age of the instance.
        let elapsed = (e.object_perf_time - e.value) as f64 / e.object_perf_freq as f64;
        let (youngest, oldest) = (before - start, after - start);
        assert!(
            youngest - 1.0 <= elapsed && elapsed <= oldest + 1.0,
            "object {title}: elapsed {elapsed} s, real age between {youngest} and {oldest} s"
        );
    }

    // prfmon's own formula agrees: typeperf shows the job's age in seconds.
    let path = r"\ET Job(nightly)\Elapsed Time";
    let before = unix(SystemTime::now());
    let run = prfdata_app::prfmon_for(&installed, &["typeperf", path, "-sc", "1"]);
    let after = unix(SystemTime::now());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let last = run.stdout.lines().last().expect("a sample row");
    let shown: f64 = last
        .rsplit(',')
        .next()
        .and_then(|v| v.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("a value in {last}"));
    assert!(
        before - job_start - 1.0 <= shown && shown <= after - job_start + 1.0,
        "typeperf shows {shown} s for a job started at {job_start} (between {before} and {after})"
    );
    drop(app);
}

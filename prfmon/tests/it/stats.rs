//! The Windows 95 stat-server extras as the `prfmon` command shows them, against a real app child
//! and the real provider: scale factors in `list` and the JSON of `query` and `list` (values
//! stay raw, in `--raw` too), a sum served as an ordinary counter, an on-demand counter
//! computed by the app when `prfmon` collects.

use std::time::Duration;

use super::prfdata_app::{self, Installed};

prfdata::prfdata_map! {
    pub mod st {
        app: "PrfmonStatsApp",
        object SRV = 0 {
            name: "Stats Server", help: "A stat server.",
            counters {
                PAGES = 2: LargeRawCount { name: "Resident bytes", help: "Pages, shown as bytes.", factor: * 4096 },
                BYTES = 4: LargeRawCount { name: "Heap KiB", help: "Bytes, shown as KiB.", factor: / 1024 },
                READS = 6: RawCount { name: "Reads", help: name },
                WRITES = 8: RawCount { name: "Writes", help: name },
                TOTAL = 10: RawCount { name: "Reads and writes", help: name, sum: [READS, WRITES] },
                ASKED = 12: RawCount { name: "Times asked", help: "Computed on request.", on_demand: true },
            }
        }
    }
}

/// The app: publishes known values, counts the requests it serves, then waits to be killed.
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    if std::env::var_os(prfdata_app::APP_ROLE).is_none() {
        return;
    }
    use std::sync::atomic::Ordering::Relaxed;
    let prf = st::PrfData::activate().expect("the app activates");
    prf.get_ctr64(st::PAGES, ()).store(3, Relaxed);
    prf.get_ctr64(st::BYTES, ()).store(8192, Relaxed);
    prf.get_ctr32(st::READS, ()).store(40, Relaxed);
    prf.get_ctr32(st::WRITES, ()).store(2, Relaxed);
    let mut asked = 0;
    prf.on_demand()
        .serve(st::ASKED, move || {
            asked += 1;
            asked
        })
        .expect("register");
    prfdata_app::app_ready(b"up");
    std::thread::sleep(Duration::from_secs(60));
}

fn setup() -> (Installed, prfdata_app::AppProcess) {
    let installed = prfdata_app::install(&st::MAP);
    // A generous on-demand bound: the test checks the value was computed, not the timing.
    let reg = installed.open();
    prfdata_registry::update(&reg, |hive| {
        hive.set_value(
            &prfdata_registry::paths::performance("PrfmonStatsApp"),
            prfdata_registry::stats::ON_DEMAND_TIMEOUT,
            prfdata_registry::Value::Dword(5_000),
        )
    })
    .unwrap();
    let app = prfdata_app::spawn_app(&installed, &prfdata_testkit::test_path!("app_child"));
    (installed, app)
}

#[test]
fn query_json_carries_factors_and_raw_values_and_serves_sums_and_on_demand_values() {
    let (installed, _app) = setup();
    let first = installed.first_counter;
    let raw = installed.dir.path().join("block.bin");
    let run = prfdata_app::prfmon_for(
        &installed,
        &["query", "--json", "--raw", raw.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let obj = &v["objects"][0];
    let counter = |offset: u32| {
        let counters = obj["counters"].as_array().unwrap();
        let k = counters
            .iter()
            .position(|c| c["index"] == first + offset)
            .unwrap_or_else(|| panic!("counter +{offset} in {obj}"));
        (counters[k].clone(), obj["values"][k].clone())
    };
    let (pages, pages_value) = counter(2);
    assert_eq!(pages["factor"], "*4096");
    assert_eq!(pages_value, 3, "the value stays raw");
    let (bytes, bytes_value) = counter(4);
    assert_eq!(bytes["factor"], "/1024");
    assert_eq!(bytes_value, 8192);
    let (reads, _) = counter(6);
    assert!(reads.get("factor").is_none(), "no factor: no field");
    assert_eq!(counter(10).1, 42, "the sum, served as an ordinary counter");
    assert_eq!(
        counter(12).1,
        1,
        "computed on request, once for this collect"
    );

    // The raw PERF_DATA_BLOCK decodes to the same raw values: no factor applied there.
    let decoded = prfdata_wire::snapshot::decode(&std::fs::read(&raw).unwrap()).unwrap();
    let o = &decoded.objects[0];
    let k = o
        .counters
        .iter()
        .position(|c| c.name_index == first + 2)
        .unwrap();
    assert_eq!(o.values().unwrap().int(k), Some(3));

    let again = prfdata_app::prfmon_for(&installed, &["query", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    let counters = v["objects"][0]["counters"].as_array().unwrap();
    let k = counters
        .iter()
        .position(|c| c["index"] == first + 12)
        .unwrap();
    assert_eq!(v["objects"][0]["values"][k], 2, "fresh: computed again");
}

#[test]
fn list_shows_each_counters_factor() {
    let (installed, _app) = setup();
    let run = prfdata_app::prfmon_for(&installed, &["list", "Stats Server"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("Counter: Resident bytes (")
            && run.stdout.contains("    Factor: *4096\n")
            && run.stdout.contains("    Factor: /1024\n"),
        "{}",
        run.stdout
    );
    assert_eq!(run.stdout.matches("Factor:").count(), 2, "{}", run.stdout);
    let json = prfdata_app::prfmon_for(&installed, &["list", "Stats Server", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let counters = v[0]["counters"].as_array().unwrap();
    let factor_of = |name: &str| {
        counters
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["factor"].clone())
            .unwrap_or_else(|| panic!("{name} listed"))
    };
    assert_eq!(factor_of("Resident bytes"), "*4096");
    assert_eq!(factor_of("Heap KiB"), "/1024");
    assert_eq!(factor_of("Reads"), serde_json::Value::Null);
}

/// The Windows 95 stat-server interface applies a stat's scale factor to the value its stat server
/// hands out: the PerfStats view's `StatData` (KB Q174631) carries it, while `query --json` above
/// stays raw.
#[test]
fn perfstats_stat_data_applies_the_scale_factor() {
    let (installed, _app) = setup();
    let stat = |name: &str| {
        let run = prfdata_app::prfmon_for(
            &installed,
            &[
                "reg",
                "query",
                r"HKEY_DYN_DATA\PerfStats\StatData",
                "/v",
                &format!(r"StatsServer\{name}"),
            ],
        );
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        run.stdout
    };
    // 3 pages * 4096 = 12288 = 0x3000; 8192 bytes / 1024 = 8 KiB; 40 reads, no factor.
    let pages = stat("Residentbytes");
    assert!(pages.contains("REG_BINARY    00300000"), "{pages}");
    let kib = stat("HeapKiB");
    assert!(kib.contains("REG_BINARY    08000000"), "{kib}");
    let reads = stat("Reads");
    assert!(reads.contains("REG_BINARY    28000000"), "{reads}");
}

/// A remote machine's scale factors reach the consumer: `list --computer` against a real
/// `prfmon serve`, from a client whose own registry is empty, shows them as `list` does there.
#[test]
fn a_remote_machines_factors_are_shown_through_its_serve() {
    use std::io::{BufRead, BufReader};
    let (installed, _app) = setup();
    let mut command = std::process::Command::new(super::common::PRFMON);
    installed
        .apply_env(&mut command)
        .args(["serve", "--listen", "127.0.0.1:0", "--log-to", "stderr"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("spawn prfmon serve");
    let stderr = child.stderr.take().expect("serve's stderr");
    let _serve = prfdata_testkit::ChildGuard::new(child, "prfmon serve");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("prfmon serve: listening on http://") {
                let _ = tx.send(rest.trim_end_matches("/metrics").to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(super::common::TEST_WAIT)
        .expect("serve says where it listens");
    let empty = tempfile::tempdir().unwrap();
    let run = super::common::prfmon(
        &empty.path().join("registry"),
        &["list", "Stats Server", "--computer", &addr],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("    Factor: *4096\n") && run.stdout.contains("    Factor: /1024\n"),
        "{}",
        run.stdout
    );
}

//! End to end with a real Prometheus server (Debian's `prometheus` package): it scrapes
//! `prfmon serve` every second while a test app's counter grows, and its HTTP API shows the
//! counter increasing, with the app's labels. `prfmon serve` requires a bearer token
//! (`--token-file`), which Prometheus sends from the same file (`authorization:
//! credentials_file:`). A build without the binary reports the test ignored, with the reason.

use crate::serve_common;

use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use serve_common::*;

/// The whole test's bound, from Prometheus' start to the last query.
const OVERALL: Duration = Duration::from_secs(40);

const REQUESTS: &str = "prfdata_serve_test_service_requests_per_second_total";

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// `%`-encodes a PromQL expression for a URL query.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// The result vector of an instant query, or `None` if Prometheus is not answering yet.
fn query(prometheus: SocketAddr, expr: &str) -> Option<Vec<Value>> {
    let r = try_get(prometheus, &format!("/api/v1/query?query={}", encode(expr)))?;
    if r.status != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&r.body).ok()?;
    if v["status"] != "success" {
        return None;
    }
    v["data"]["result"].as_array().cloned()
}

/// Polls `f` every 250 ms until it gives `Some`, failing the test with `report()` at
/// `deadline`.
fn until<T>(
    deadline: Instant,
    what: &str,
    report: &dyn Fn() -> String,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            report()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn value_of(series: &Value) -> Option<f64> {
    series["value"][1].as_str()?.parse().ok()
}

#[test]
#[cfg_attr(
    not(prfmon_tests_prometheus),
    ignore = "needs prometheus (apt-get install prometheus)"
)]
fn prometheus_scrapes_serve_and_sees_the_apps_counters_increase() {
    let prometheus_bin = require_tool("prometheus");
    let setup = setup();
    let _app = setup.start_app("ticking");
    let token_file = setup.dir.path().join("token");
    std::fs::write(&token_file, "prometheus-scrape-token-0123456789\n").expect("token file");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
        .expect("chmod 600 the token file");
    let token_arg = token_file.display().to_string();
    let (_serve, serve_addr, serve_log) =
        setup.start_serve(&["--listen", "127.0.0.1:0", "--token-file", &token_arg]);
    let serve_addr = serve_addr.expect("prfmon serve listening");
    // Without the token, no metrics.
    assert_eq!(get(serve_addr, "/metrics").status, 401);

    let web = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let config = setup.dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: prfmon\n    authorization:\n      credentials_file: '{}'\n\
             \x20   static_configs:\n      - targets: ['{serve_addr}']\n",
            token_file.display()
        ),
    )
    .expect("write the Prometheus config");
    let log = std::fs::File::create(setup.dir.path().join("prometheus.log")).expect("log file");
    let child = Command::new(&prometheus_bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            setup.dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    let _prometheus = Guard::new(child, "prometheus");
    let deadline = Instant::now() + OVERALL;
    let report = || {
        format!(
            "prometheus log:\n{}\nprfmon serve log:\n{}",
            std::fs::read_to_string(setup.dir.path().join("prometheus.log")).unwrap_or_default(),
            serve_log.lock().map(|l| l.clone()).unwrap_or_default()
        )
    };

    // Prometheus scraped the target successfully...
    until(deadline, "up == 1", &report, || {
        query(web, "up{job=\"prfmon\"} == 1").filter(|r| r.len() == 1)
    });

    // ... stored the app's counter with its labels (Prometheus' own `instance` is the target;
    // none here, as the service object has no instances) ...
    let first = until(deadline, REQUESTS, &report, || {
        let r = query(web, &format!("{REQUESTS}{{app=\"ServeTestApp\"}}"))?;
        let series = r.first()?;
        assert_eq!(series["metric"]["job"], "prfmon");
        assert_eq!(series["metric"]["instance"], serve_addr.to_string());
        value_of(series)
    });
    // ... and sees it increase between two evaluations, and through `increase()`.
    let later = until(deadline, "a larger value", &report, || {
        let r = query(web, REQUESTS)?;
        value_of(r.first()?).filter(|&v| v > first)
    });
    assert!(later > first);
    until(deadline, "increase() > 0", &report, || {
        query(web, &format!("increase({REQUESTS}[5s]) > 0")).filter(|r| !r.is_empty())
    });

    // Instance and parent labels arrive as the exporter wrote them (`perf_instance` does not
    // collide with Prometheus' target label, so nothing is renamed `exported_instance`),
    // with the exact values, and the rate / ratio pair works.
    let worker = until(deadline, "a worker series", &report, || {
        let r = query(
            web,
            "prfdata_serve_test_worker_jobs_done{perf_instance=\"w1\",parent=\"pool B\"}",
        )?;
        value_of(r.first()?)
    });
    assert_eq!(worker, (1u64 << 40) as f64);
    let renamed = until(deadline, "a query for exported_instance", &report, || {
        query(web, "{exported_instance!=\"\"}")
    });
    assert!(
        renamed.is_empty(),
        "series with an `exported_instance` label: {renamed:?}\n{}",
        report()
    );
    let ratio = until(deadline, "latency / base", &report, || {
        let r = query(
            web,
            "prfdata_serve_test_service_avg_latency_seconds_total / prfdata_serve_test_service_avg_latency_base_total",
        )?;
        value_of(r.first()?)
    });
    // The average in seconds: the timer's ticks are exported in seconds.
    let seconds = f64::from(LATENCY) / prfdata::clock::PERF_FREQUENCY as f64;
    let want = seconds / f64::from(LATENCY_BASE);
    assert!((ratio - want).abs() < want * 1e-9, "{ratio} against {want}");

    // The TYPE made it through: Prometheus' metadata API knows the counter as a counter.
    let meta = until(deadline, "metadata", &report, || {
        try_get(
            web,
            "/api/v1/metadata?metric=prfdata_serve_test_service_requests_per_second",
        )
    });
    assert!(
        meta.body.contains("\"type\":\"counter\""),
        "{}\n{}",
        meta.body,
        report()
    );
}

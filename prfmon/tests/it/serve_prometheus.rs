//! End to end with a real Prometheus server (Debian's `prometheus` package): it scrapes
//! `prfmon serve` every second while a test app's counter grows, and its HTTP API shows the
//! counter increasing, with the app's labels; and a histogram's `histogram_quantile` agrees
//! with the exact percentiles of the values an app recorded, also with its buckets merged to
//! fit `--histogram-bucket-limit`. `prfmon serve` requires a bearer
//! token (`--token-file`), which Prometheus sends from the same file (`authorization:
//! credentials_file:`). A build without the binary reports the test ignored, with the reason.

use crate::serve_common;

use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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

/// `prfmon serve` with a bearer token and a Prometheus scraping it every second, both stopped
/// when dropped.
struct Scraping {
    _serve: Guard,
    _prometheus: Guard,
    /// Where `prfmon serve` listens.
    serve: SocketAddr,
    /// Prometheus' web address (its HTTP API).
    web: SocketAddr,
    /// `prfmon serve`'s stderr so far.
    serve_log: std::sync::Arc<std::sync::Mutex<String>>,
    /// Prometheus' log file.
    prometheus_log: PathBuf,
}

impl Scraping {
    /// Starts `prfmon serve` on `setup`'s registry and a Prometheus (`prometheus_bin`) that
    /// scrapes it, its configuration and TSDB in `setup`'s folder.
    fn start(setup: &Setup, prometheus_bin: &Path) -> Scraping {
        Scraping::start_with(setup, prometheus_bin, &[])
    }

    /// [`Scraping::start`] with more arguments for `prfmon serve`.
    fn start_with(setup: &Setup, prometheus_bin: &Path, serve_args: &[&str]) -> Scraping {
        let token_file = setup.dir.path().join("token");
        std::fs::write(&token_file, "prometheus-scrape-token-0123456789\n").expect("token file");
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
            .expect("chmod 600 the token file");
        let token_arg = token_file.display().to_string();
        let mut args = vec!["--listen", "127.0.0.1:0", "--token-file", &token_arg];
        args.extend_from_slice(serve_args);
        let (serve_guard, serve_addr, serve_log) = setup.start_serve(&args);
        let serve = serve_addr.expect("prfmon serve listening");
        // Without the token, no metrics.
        assert_eq!(get(serve, "/metrics").status, 401);

        let web = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let config = setup.dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: prfmon\n    authorization:\n      credentials_file: '{}'\n\
                 \x20   static_configs:\n      - targets: ['{serve}']\n",
                token_file.display()
            ),
        )
        .expect("write the Prometheus config");
        let prometheus_log = setup.dir.path().join("prometheus.log");
        let log = std::fs::File::create(&prometheus_log).expect("log file");
        let child = Command::new(prometheus_bin)
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
        Scraping {
            _serve: serve_guard,
            _prometheus: Guard::new(child, "prometheus"),
            serve,
            web,
            serve_log,
            prometheus_log,
        }
    }

    /// Both logs, for a failure's message.
    fn report(&self) -> String {
        format!(
            "prometheus log:\n{}\nprfmon serve log:\n{}",
            std::fs::read_to_string(&self.prometheus_log).unwrap_or_default(),
            self.serve_log.lock().map(|l| l.clone()).unwrap_or_default()
        )
    }
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
    let scraping = Scraping::start(&setup, &prometheus_bin);
    let (web, serve_addr) = (scraping.web, scraping.serve);
    let deadline = Instant::now() + OVERALL;
    let report = || scraping.report();

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

/// How many values the histogram app records.
pub(crate) const RECORDS: usize = 200_000;

/// The exported names of the histogram app's two histograms (`prfdata_testkit::histogram_app`).
const HISTOGRAMS: [&str; 2] = [
    "prfdata_histogram_test_latency_seconds",
    "prfdata_histogram_test_latency_sharded_seconds",
];

/// The values the histogram app records, in microseconds: log-normal around 2 ms (shape 0.8),
/// the same every run.
pub(crate) fn histogram_values() -> Vec<u64> {
    let mut mix = prfdata_testkit::values::Mix(0x2545_f491_4f6c_dd1d);
    (0..RECORDS)
        .map(|_| mix.log_normal(2000.0, 0.8).clamp(1.0, 1e7) as u64)
        .collect()
}

/// The file whose existence tells the histogram app to record: beside the block folder.
pub(crate) fn go_file(shm: &Path) -> PathBuf {
    shm.with_file_name("histogram-go")
}

/// The histogram app (the test binary re-executed, see `Setup::start_app`): publishes two empty
/// histograms, then, once the test creates [`go_file`], records [`histogram_values`] into each
/// in one burst, and idles (each wait bounded).
pub fn run_histogram_app() {
    use prfdata_testkit::histogram_app::app::{PrfData, LATENCY, LATENCY_SHARDED};
    let prf = PrfData::activate().expect("the histogram app activates");
    let (plain, sharded) = (
        prf.histogram(LATENCY, ()),
        prf.histogram(LATENCY_SHARDED, ()),
    );
    println!("ready");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let shm = std::env::var_os("PRFDATA_SHM_DIR").expect("the sandbox's block folder");
    let go = go_file(Path::new(&shm));
    let end = Instant::now() + Duration::from_secs(120);
    while !go.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    for v in histogram_values() {
        plain.record(v);
        sharded.record(v);
    }
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The exact percentile `q` of `sorted` by nearest rank: the value at rank ⌈q·n⌉.
pub(crate) fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Prometheus keeps a histogram's buckets as the exposition wrote them: over a window that
/// starts with every bucket at 0 (two scrapes of the empty histogram, then one burst of
/// values), `rate` scales every bucket by the same factor, so `histogram_quantile` is the
/// quantile of the values recorded, interpolated inside one bucket: within the bucket's width,
/// at most 2^-6 of its lower edge for `error: 2%`, of the exact nearest-rank percentile.
#[test]
#[cfg_attr(
    not(prfmon_tests_prometheus),
    ignore = "needs prometheus (apt-get install prometheus)"
)]
fn histogram_quantile_agrees_with_the_true_percentiles() {
    check_quantiles(&[], 1);
}

/// With `--histogram-bucket-limit 300`, the app's 1,166-bucket histograms are exposed in groups
/// of 4 buckets (292 series each), and `histogram_quantile` is within 4 buckets' width.
#[test]
#[cfg_attr(
    not(prfmon_tests_prometheus),
    ignore = "needs prometheus (apt-get install prometheus)"
)]
fn a_bucket_limit_keeps_histogram_quantile_within_the_merged_buckets_width() {
    check_quantiles(&["--histogram-bucket-limit", "300"], 4);
}

/// A real Prometheus scrapes `prfmon serve serve_args` while the histogram app records
/// [`RECORDS`] log-normal values: each histogram has `1166 / group` bucket series (rounded
/// up), and its p50, p90 and p99 by `histogram_quantile` are within `group` buckets' relative
/// width (2^-6 each: `error: 2%`) of the exact ones.
fn check_quantiles(serve_args: &[&str], group: usize) {
    let prometheus_bin = require_tool("prometheus");
    let setup = setup();
    setup.install(&prfdata_testkit::histogram_app::app::MAP);
    let _app = setup.start_app("histogram");
    let scraping = Scraping::start_with(&setup, &prometheus_bin, serve_args);
    let web = scraping.web;
    let deadline = Instant::now() + OVERALL;
    let report = || scraping.report();
    for name in HISTOGRAMS {
        until(
            deadline,
            "two scrapes of the empty histogram",
            &report,
            || {
                let expr = format!("count_over_time({name}_count[1m]) >= 2");
                query(web, &expr).filter(|r| r.len() == 1)
            },
        );
        let r = query(web, &format!("count({name}_bucket)")).expect("the bucket series");
        let series = r.first().and_then(value_of).expect("a count of series");
        assert_eq!(
            series,
            1166usize.div_ceil(group) as f64,
            "{name}_bucket series"
        );
    }
    std::fs::write(go_file(&setup.shm), "").expect("tell the app to record");
    let mut sorted = histogram_values();
    sorted.sort_unstable();
    let sum: u64 = sorted.iter().sum();
    for name in HISTOGRAMS {
        until(deadline, "every value counted", &report, || {
            let r = query(web, &format!("{name}_count"))?;
            value_of(r.first()?).filter(|&n| n == RECORDS as f64)
        });
        let r = query(web, &format!("{name}_sum")).expect("the sum");
        let seconds = value_of(&r[0]).expect("a sum");
        assert!(
            (seconds - sum as f64 / 1e6).abs() < 1e-6,
            "{name}_sum {seconds}"
        );
        for q in [0.5, 0.9, 0.99] {
            let expr = format!("histogram_quantile({q}, rate({name}_bucket[30s]))");
            let got = until(deadline, &expr, &report, || {
                value_of(query(web, &expr)?.first()?)
            });
            let exact = nearest_rank(&sorted, q) as f64 / 1e6;
            let error = (got - exact).abs() / exact;
            assert!(
                error <= group as f64 / 64.0,
                "{expr} = {got}, exact {exact}: {:.3}% off",
                error * 100.0
            );
        }
    }
}

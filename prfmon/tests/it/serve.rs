//! `prfmon serve` as a process: the exact values of a real app, labels, types, costly
//! objects, concurrent scrapes, 404 / 405 / 400, the loopback default, and `promtool check
//! metrics` on the output (ignored, with the reason, by a build without Prometheus' tools).

use crate::serve_common;

use serve_common::*;

const SVC: &str = "prfdata_serve_test_service";
const APP: &str = "app=\"ServeTestApp\"";

#[test]
fn metrics_carry_the_apps_raw_values_exactly_with_types_help_and_labels() {
    let setup = setup();
    let _app = setup.start_app("static");
    let (_serve, addr, log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("listening");
    let r = get(addr, "/metrics");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.head
            .to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{}",
        r.head
    );
    let text = r.body;
    assert!(text.ends_with("# EOF\n"), "{text}");
    let s = samples(&text);
    let want = [
        (
            format!("{SVC}_requests_per_second_total{{{APP}}}"),
            FIXED_REQUESTS.to_string(),
        ),
        (
            format!("{SVC}_avg_latency_seconds_total{{{APP}}}"),
            (f64::from(LATENCY) / prfdata::clock::PERF_FREQUENCY as f64).to_string(),
        ),
        (
            format!("{SVC}_avg_latency_base_total{{{APP}}}"),
            LATENCY_BASE.to_string(),
        ),
        (format!("{SVC}_queue_length{{{APP}}}"), QUEUE.to_string()),
        (
            format!("prfdata_serve_test_pool_size{{{APP},perf_instance=\"pool A\"}}"),
            "2".into(),
        ),
        (
            format!("prfdata_serve_test_pool_size{{{APP},perf_instance=\"pool B\"}}"),
            "1".into(),
        ),
        (
            format!(
                "prfdata_serve_test_worker_jobs_done{{{APP},parent=\"pool A\",perf_instance=\"w1\"}}"
            ),
            "5".into(),
        ),
        (
            format!(
                "prfdata_serve_test_worker_jobs_done{{{APP},parent=\"pool A\",perf_instance=\"w2\"}}"
            ),
            "6".into(),
        ),
        (
            format!(
                "prfdata_serve_test_worker_jobs_done{{{APP},parent=\"pool B\",perf_instance=\"w1\"}}"
            ),
            (1i64 << 40).to_string(),
        ),
    ];
    for (series, value) in &want {
        assert_eq!(
            s.get(series),
            Some(value),
            "{series} in\n{text}\nserve log:\n{}",
            log.lock().unwrap()
        );
    }
    assert_eq!(s.len(), want.len(), "no other series:\n{text}");
    for line in [
        format!("# TYPE {SVC}_requests_per_second counter"),
        format!("# TYPE {SVC}_avg_latency_base counter"),
        format!("# TYPE {SVC}_avg_latency_seconds counter"),
        format!("# UNIT {SVC}_avg_latency_seconds seconds"),
        format!("# TYPE {SVC}_queue_length gauge"),
        format!("# HELP {SVC}_queue_length Requests waiting right now. [Serve Test Service\\\\Queue length, PERF_COUNTER_RAWCOUNT]"),
        "# TYPE prfdata_serve_test_worker_jobs_done gauge".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    assert!(
        !text.contains("scans"),
        "costly objects are not in a Global scrape"
    );

    // What `curl` and `promtool` get: the classic text format, the same series and values.
    let classic = request(addr, "GET", "/metrics", "*/*");
    assert_eq!(classic.status, 200);
    assert!(
        classic
            .head
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{}",
        classic.head
    );
    assert!(!classic.body.contains("# EOF"));
    assert!(classic
        .body
        .lines()
        .any(|l| l == format!("# TYPE {SVC}_requests_per_second_total counter")));
    assert_eq!(samples(&classic.body), s);
}

#[test]
#[cfg_attr(
    not(prfmon_tests_prometheus),
    ignore = "needs promtool (apt-get install prometheus)"
)]
fn promtool_accepts_the_classic_text() {
    let promtool = require_tool("promtool");
    let setup = setup();
    let _app = setup.start_app("static");
    let (_serve, addr, _log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let classic = request(addr.expect("listening"), "GET", "/metrics", "*/*");
    assert_eq!(classic.status, 200, "{classic:?}");
    let (ok, said) = promtool_check(&promtool, &classic.body);
    assert!(ok, "promtool check metrics: {said}\n{}", classic.body);
}

#[test]
fn costly_objects_come_with_query_costly_and_bad_queries_are_400() {
    let setup = setup();
    let _app = setup.start_app("static");
    let (_serve, addr, _log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("listening");
    let r = get(addr, "/metrics?query=Costly");
    assert_eq!(r.status, 200);
    let s = samples(&r.body);
    assert_eq!(
        s.get(&format!("prfdata_serve_test_debug_scans{{{APP}}}")),
        Some(&SCANS.to_string()),
        "{}",
        r.body
    );
    assert_eq!(get(addr, "/metrics?query=Foreign%20box").status, 400);
    assert_eq!(get(addr, "/metrics?query=%zz").status, 400);
}

#[test]
fn unknown_paths_are_404_and_other_methods_405() {
    let setup = setup();
    let (_serve, addr, _log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("listening");
    for path in ["/nothing", "/metrics/", "/metricsx", "/favicon.ico"] {
        assert_eq!(get(addr, path).status, 404, "{path}");
    }
    let post = http(addr, "POST", "/metrics");
    assert_eq!(post.status, 405);
    assert!(
        post.head.to_ascii_lowercase().contains("allow: get, head"),
        "{}",
        post.head
    );
    assert_eq!(get(addr, "/").status, 200);
    let head = http(addr, "HEAD", "/metrics");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
}

#[test]
fn concurrent_scrapes_all_get_complete_valid_output() {
    const SCRAPERS: usize = 8;
    const REPEATS: usize = 5;
    let setup = setup();
    let _app = setup.start_app("ticking");
    let (_serve, addr, _log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("listening");
    let threads: Vec<_> = (0..SCRAPERS)
        .map(|_| {
            std::thread::spawn(move || {
                (0..REPEATS)
                    .map(|_| {
                        let r = get(addr, "/metrics");
                        assert_eq!(r.status, 200);
                        assert!(r.body.ends_with("# EOF\n"));
                        let s = samples(&r.body);
                        let v: u64 = s[&format!("{SVC}_requests_per_second_total{{{APP}}}")]
                            .parse()
                            .expect("a number");
                        assert_eq!(
                            s[&format!("{SVC}_queue_length{{{APP}}}")],
                            QUEUE.to_string()
                        );
                        v
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    for t in threads {
        let values = t.join().expect("a scraper thread");
        assert!(
            values.windows(2).all(|w| w[0] <= w[1]),
            "a counter never goes back: {values:?}"
        );
    }
}

#[test]
fn serve_listens_on_loopback_by_default() {
    let setup = setup();
    let (_serve, addr, log) = setup.start_serve(&[]);
    match addr {
        Ok(addr) => {
            assert_eq!(addr, "127.0.0.1:9358".parse().unwrap());
            assert_eq!(get(addr, "/nothing").status, 404);
        }
        // Another server holds the port on this machine: the attempt still names loopback.
        Err(line) => assert!(
            line.contains("127.0.0.1:9358"),
            "{line}\n{}",
            log.lock().unwrap()
        ),
    }
}

/// `prfmon serve` reads the registry store once, as it starts: the names, scale factors, apps'
/// name ranges (of the watch leases it holds) and disabled services all come from that read,
/// and a scrape reads none while the registry does not change (one `stat` tells). The
/// registry traces each read with its number and process; the provider hosts' own reads are
/// theirs, not the server's.
#[test]
fn serve_reads_the_registry_once_not_per_scrape() {
    let setup = setup();
    let _app = setup.start_app("static");
    let args = ["--listen", "127.0.0.1:0", "--log-to", "stderr"];
    let envs = [("PRFMON_LOG", "trace"), ("PRFDATA_PROVIDER_LOG", "off")];
    let (serve, addr, log) = setup.start_serve_with(&args, None, &envs);
    let addr = addr.expect("listening");
    for _ in 0..3 {
        let r = get(addr, "/metrics");
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r.body.contains(APP), "{r:?}");
    }
    // The leases are renewed meanwhile (every second), and the log has caught up.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(get(addr, "/metrics").status, 200);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mine = format!(" in process {}: ", serve.id());
    let log = log.lock().unwrap().clone();
    let reads = log
        .lines()
        .filter(|l| l.contains("registry store read") && l.contains(&mine))
        .count();
    assert_eq!(reads, 1, "{log}");
}

//! Shared by the `serve` tests: a test app installed with the real provider, run as a child
//! process (the test binary re-executed), `prfmon serve` started on a free loopback port, a
//! small HTTP/1.0 GET client and a reader for the OpenMetrics lines.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use prfdata::InstanceSpec;
use prfdata_testkit::Sandbox;

prfdata::prfdata_map! {
    pub mod serve_app {
        app: "ServeTestApp",
        object SERVICE = 0 {
            name: "Serve Test Service", help: "The test service as a whole.",
            detail: Novice, default: REQUESTS, instances: none, costly: false,
            counters {
                REQUESTS = 2: CounterCounter { name: "Requests/sec", help: "Requests served per second.", detail: Novice, scale: 0 },
                LATENCY = 4: AverageTimer { name: "Avg. latency", help: "Average seconds per request.", detail: Advanced, scale: 3 },
                LATENCY_BASE: AverageBase,
                QUEUE = 6: RawCount { name: "Queue length", help: "Requests waiting right now.", detail: Novice, scale: 0 },
            }
        }
        object POOL = 8 {
            name: "Serve Test Pool", help: "A pool of workers.",
            detail: Novice, default: SIZE, instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                SIZE = 10: RawCount { name: "Size", help: "Workers in the pool.", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 12 {
            name: "Serve Test Worker", help: "One worker.",
            detail: Novice, default: DONE, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                DONE = 14: LargeRawCount { name: "Jobs done", help: "Jobs this worker completed.", detail: Novice, scale: 0 },
            }
        }
        object DEBUG = 16 {
            name: "Serve Test Debug", help: "Expensive to collect.",
            detail: Wizard, default: none, instances: none, costly: true,
            counters {
                SCANS = 18: LargeRawCount { name: "Scans", help: "Scans made.", detail: Wizard, scale: 0 },
            }
        }
    }
}

/// The bound on every wait in these tests.
pub const WAIT: Duration = Duration::from_secs(30);

/// The env var that makes the test binary run the app instead of the tests.
pub const APP_ENV: &str = "PRFMON_SERVE_TEST_APP";

/// The app's counter values: fixed ones, and `REQUESTS` that grows by 1 every 20 ms when
/// ticking.
pub const QUEUE: i32 = 42;
pub const LATENCY: i32 = 300;
pub const LATENCY_BASE: i32 = 3;
pub const POOL_SIZES: [(&str, i32); 2] = [("pool A", 2), ("pool B", 1)];
/// (worker, pool index, jobs done)
pub const WORKERS: [(&str, usize, i64); 3] = [("w1", 0, 5), ("w2", 0, 6), ("w1", 1, 1 << 40)];
pub const SCANS: i64 = 77;
pub const FIXED_REQUESTS: i32 = 11;

/// The entry point of the app child (see [`Setup::start_app`]); a no-op in a normal run.
#[test]
fn app_entry() {
    maybe_run_app();
}

/// When this process is the app child, runs the app and exits.
pub fn maybe_run_app() {
    let Ok(mode) = std::env::var(APP_ENV) else {
        return;
    };
    run_app(&mode);
    std::process::exit(0);
}

fn run_app(mode: &str) {
    use std::sync::atomic::Ordering::Relaxed;
    if mode == "histogram" {
        return crate::serve_prometheus::run_histogram_app();
    }
    let prf = serve_app::PrfData::activate().expect("the test app activates");
    prf.get_ctr32(serve_app::REQUESTS, ())
        .store(FIXED_REQUESTS, Relaxed);
    prf.get_ctr32(serve_app::LATENCY, ())
        .store(LATENCY, Relaxed);
    prf.get_ctr32(serve_app::LATENCY_BASE, ())
        .store(LATENCY_BASE, Relaxed);
    prf.get_ctr32(serve_app::QUEUE, ()).store(QUEUE, Relaxed);
    prf.get_ctr64(serve_app::SCANS, ()).store(SCANS, Relaxed);
    let mut pools = Vec::new();
    for (name, size) in POOL_SIZES {
        let pool = prf.add_instance(serve_app::POOL, name).expect("pool");
        prf.get_ctr32(serve_app::SIZE, pool).store(size, Relaxed);
        pools.push(pool);
    }
    for (name, pool, done) in WORKERS {
        let w = prf
            .add_instance(
                serve_app::WORKER,
                InstanceSpec::named(name).parent(pools[pool]),
            )
            .expect("worker");
        prf.get_ctr64(serve_app::DONE, w).store(done, Relaxed);
    }
    // Ready: the parent waits for this line.
    println!("ready");
    let _ = std::io::stdout().flush();
    // Bounded: the app ends by itself if nobody kills it.
    let end = Instant::now() + Duration::from_secs(120);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
        if mode == "ticking" {
            prf.get_ctr32(serve_app::REQUESTS, ()).fetch_add(1, Relaxed);
        }
    }
}

/// A child process stopped when dropped (SIGTERM first, so that `prfmon serve` closes its
/// providers; SIGKILL after a bounded wait).
pub use prfdata_testkit::ChildGuard as Guard;

/// A temp folder with a registry where the test app is installed with the real provider.
pub struct Setup {
    pub sandbox: Sandbox,
}

impl std::ops::Deref for Setup {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

pub fn setup() -> Setup {
    let sandbox = Sandbox::new();
    sandbox.install(&serve_app::MAP);
    Setup { sandbox }
}

impl Setup {
    fn env(&self, cmd: &mut Command) {
        self.sandbox.apply_env(cmd);
    }

    /// Starts the app (`static`, `ticking`, or `histogram`: the histogram app of
    /// `serve_prometheus`) and waits until it has published.
    pub fn start_app(&self, mode: &str) -> Guard {
        // Only `app_entry` runs in the child, and `maybe_run_app` takes over in it.
        let mut cmd = prfdata_testkit::self_command(&prfdata_testkit::test_path!("app_entry"));
        cmd.env(APP_ENV, mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        self.env(&mut cmd);
        let mut child = cmd.spawn().expect("spawn the test app");
        let stdout = child.stdout.take().expect("app stdout");
        let guard = Guard::new(child, "the test app");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.trim_end().ends_with("ready") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(WAIT)
            .expect("the test app got ready in time");
        guard
    }

    /// Starts `prfmon serve args...`; returns it with the address it printed.
    pub fn start_serve(
        &self,
        args: &[&str],
    ) -> (Guard, Result<SocketAddr, String>, Arc<Mutex<String>>) {
        self.start_serve_limited(args, None)
    }

    /// [`Setup::start_serve`] with its open-files limit (`RLIMIT_NOFILE`, soft and hard) set
    /// to `nofile` before it runs, as `prlimit --nofile=N` would.
    pub fn start_serve_limited(
        &self,
        args: &[&str],
        nofile: Option<u64>,
    ) -> (Guard, Result<SocketAddr, String>, Arc<Mutex<String>>) {
        self.start_serve_with(args, nofile, &[])
    }

    /// [`Setup::start_serve_limited`] with more environment variables (`envs`).
    pub fn start_serve_with(
        &self,
        args: &[&str],
        nofile: Option<u64>,
        envs: &[(&str, &str)],
    ) -> (Guard, Result<SocketAddr, String>, Arc<Mutex<String>>) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_prfmon"));
        cmd.arg("serve")
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        self.env(&mut cmd);
        if let Some(n) = nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: the closure runs in the forked child before exec and makes one system
            // call (setrlimit), which is async-signal-safe; it allocates nothing, takes no lock.
            unsafe {
                cmd.pre_exec(move || {
                    let limit = rustix::process::Rlimit {
                        current: Some(n),
                        maximum: Some(n),
                    };
                    rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = cmd.spawn().expect("spawn prfmon serve");
        let stderr = child.stderr.take().expect("serve stderr");
        let guard = Guard::new(child, "prfmon serve");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let log2 = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let rest = line
                    .strip_prefix("prfmon serve: listening on http://")
                    .or_else(|| line.strip_prefix("prfmon serve: listening on https://"));
                if let Some(rest) = rest {
                    let addr = rest.trim_end_matches("/metrics").to_owned();
                    let _ = tx.send(Ok(addr));
                } else if line.starts_with("prfmon serve: cannot listen") {
                    let _ = tx.send(Err(line.clone()));
                }
                if let Ok(mut l) = log2.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
            }
        });
        let addr = match rx.recv_timeout(WAIT) {
            Ok(Ok(a)) => Ok(a.parse().expect("a socket address")),
            Ok(Err(e)) => Err(e),
            Err(_) => panic!(
                "prfmon serve printed no address in time; stderr: {}",
                log.lock().map(|l| l.clone()).unwrap_or_default()
            ),
        };
        (guard, addr, log)
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Http {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// One HTTP/1.0 request (no chunked answers, the connection closes), bounded by [`WAIT`].
pub fn http(addr: SocketAddr, method: &str, target: &str) -> Http {
    request(addr, method, target, OPENMETRICS_ACCEPT)
}

/// What Prometheus 2.x sends as `Accept`.
pub const OPENMETRICS_ACCEPT: &str =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// One HTTP/1.0 request with this `Accept`.
pub fn request(addr: SocketAddr, method: &str, target: &str, accept: &str) -> Http {
    try_request(addr, method, target, accept)
        .unwrap_or_else(|e| panic!("{method} http://{addr}{target}: {e}"))
}

/// A GET that gives `None` when the server is not (yet) answering.
pub fn try_get(addr: SocketAddr, target: &str) -> Option<Http> {
    try_request(addr, "GET", target, "*/*").ok()
}

fn try_request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    accept: &str,
) -> std::io::Result<Http> {
    try_request_with(addr, method, target, &[("Accept", accept)])
}

/// One HTTP/1.0 request with these extra header lines, bounded by [`WAIT`].
pub fn request_with(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Http {
    try_request_with(addr, method, target, headers)
        .unwrap_or_else(|e| panic!("{method} http://{addr}{target}: {e}"))
}

fn try_request_with(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Http> {
    exchange(
        TcpStream::connect_timeout(&addr, WAIT)?,
        method,
        target,
        headers,
    )
}

/// One HTTP/1.0 request on `stream` (connected), bounded by [`WAIT`].
pub fn exchange(
    mut stream: TcpStream,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Http> {
    stream.set_read_timeout(Some(WAIT))?;
    stream.set_write_timeout(Some(WAIT))?;
    let addr = stream.peer_addr()?;
    let mut head = format!("{method} {target} HTTP/1.0\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok(Http {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    })
}

pub fn get(addr: SocketAddr, target: &str) -> Http {
    http(addr, "GET", target)
}

/// The samples of an OpenMetrics text: `name{k="v",...}` (labels sorted) → value text.
/// Strict enough for these tests: every non-comment line must be `series value`.
pub fn samples(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let key = match series.split_once('{') {
            Some((name, labels)) => {
                let labels = labels
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("bad labels in {line:?}"));
                let mut pairs: Vec<&str> = split_labels(labels);
                pairs.sort();
                format!("{name}{{{}}}", pairs.join(","))
            }
            None => series.to_owned(),
        };
        assert!(
            out.insert(key, value.to_owned()).is_none(),
            "duplicate series {series}"
        );
    }
    out
}

/// Splits `k="v",k2="v2"` at the commas outside quotes.
fn split_labels(labels: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in labels.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&labels[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < labels.len() {
        parts.push(&labels[start..]);
    }
    parts
}

/// The Prometheus tool `name` (`prometheus`, `promtool`) from `PATH`. Its absence fails the
/// test: a build without it reports the test ignored (`cfg(prfmon_tests_prometheus)`, see
/// `prfmon/build.rs`), so it runs only where the build found it, or with `--include-ignored`.
pub fn require_tool(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not on PATH, so this test cannot run: install it (apt-get install \
                 --no-install-recommends prometheus), or rebuild without it (`cargo clean -p \
                 prfmon`) so that the test is reported ignored"
            )
        })
}

/// Runs `promtool check metrics` on `text`; returns (success, what it printed).
pub fn promtool_check(promtool: &Path, text: &str) -> (bool, String) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promtool");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).expect("feed promtool");
    }
    let end = Instant::now() + WAIT;
    while matches!(child.try_wait(), Ok(None)) {
        if Instant::now() > end {
            let _ = child.kill();
            panic!("promtool did not finish in {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("promtool output");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The resident memory of process `pid`, in KiB (VmRSS); 0 once it is gone.
pub fn vm_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|l| {
                l.strip_prefix("VmRSS:")
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// The peak resident memory of `pid` while it runs, sampled every 20 ms.
pub struct RssWatch {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssWatch {
    pub fn start(pid: u32) -> Self {
        let peak = Arc::new(AtomicU64::new(vm_rss_kib(pid)));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (Arc::clone(&peak), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(vm_rss_kib(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Self {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for RssWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

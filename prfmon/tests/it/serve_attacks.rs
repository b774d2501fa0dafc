//! `prfmon serve` under attack, as a peer without the token could mount it: an idle-connection
//! flood, open-files exhaustion, an endless header line, a 10 MB query string, a slowloris
//! header, a client that pipelines requests and never reads the answers, and all of them at
//! once. Each test runs the real `prfmon serve` (under `RLIMIT_NOFILE` 1,024 or 128, as
//! `prlimit --nofile` sets it) with a real app, and attacks it over real TCP sockets while an
//! honest client asks for `/metrics`; the server's resident memory is read from
//! `/proc/<pid>/status` (VmRSS).

use crate::serve_common::*;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The bound on the server's resident memory under every attack at once; docs/serve.md and
/// BENCHMARKS.md name the same figure.
const RSS_BOUND_KIB: u64 = 64 * 1024;

/// What one endless header line or one 10 MB query string may add to the server's resident
/// memory.
const GROWTH_BOUND_KIB: u64 = 8 * 1024;

/// How long an honest `/metrics` may take while the server is attacked.
const HONEST_WAIT: Duration = Duration::from_secs(10);

/// How long a slowloris header may be kept open: the server's header timeout and a margin.
const SLOWLORIS_LIMIT: Duration = Duration::from_secs(20);

/// This test process opens more sockets than a default 1,024 soft limit allows: raise it to
/// the hard limit (at most 65,536).
fn raise_own_nofile() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    let want = limit.maximum.unwrap_or(65_536).min(65_536);
    if limit.current.is_some_and(|c| c < want) {
        limit.current = Some(want);
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// The app and `prfmon serve` in front of it.
struct Target {
    serve: Guard,
    addr: SocketAddr,
    log: Arc<Mutex<String>>,
    _app: Guard,
    _setup: Setup,
}

impl Target {
    fn start(nofile: Option<u64>, extra: &[&str]) -> Self {
        raise_own_nofile();
        let setup = setup();
        let app = setup.start_app("static");
        let mut args = vec!["--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let (serve, addr, log) = setup.start_serve_limited(&args, nofile);
        let addr = addr.unwrap_or_else(|e| panic!("serve did not start: {e}"));
        let target = Self {
            serve,
            addr,
            log,
            _app: app,
            _setup: setup,
        };
        // One scrape first: the resident memory of a working server is the baseline.
        assert_eq!(honest_get(addr, "/metrics"), Ok(200), "{}", target.log());
        target
    }

    fn pid(&self) -> u32 {
        self.serve.id()
    }

    fn rss(&self) -> u64 {
        vm_rss_kib(self.pid())
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn assert_alive(&mut self) {
        let status = self.serve.child().try_wait().expect("try_wait");
        assert!(status.is_none(), "serve exited: {status:?}; {}", self.log());
    }
}

/// One honest request on its own connection, answered within [`HONEST_WAIT`]: its status.
fn honest_get(addr: SocketAddr, target: &str) -> Result<u16, String> {
    let start = Instant::now();
    let run = || -> std::io::Result<u16> {
        let mut s = TcpStream::connect_timeout(&addr, HONEST_WAIT)?;
        s.set_read_timeout(Some(HONEST_WAIT))?;
        s.set_write_timeout(Some(HONEST_WAIT))?;
        let head = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(head.as_bytes())?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        Ok(status_of(&raw))
    };
    let status = run().map_err(|e| format!("after {:?}: {e}", start.elapsed()))?;
    if start.elapsed() > HONEST_WAIT {
        return Err(format!("answered {status} after {:?}", start.elapsed()));
    }
    Ok(status)
}

/// The status code of an HTTP answer (0 if none).
fn status_of(raw: &[u8]) -> u16 {
    String::from_utf8_lossy(raw)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Up to `n` idle connections (nothing sent), as many as connect within 20 s (a connection
/// the server's backlog does not take within a second is given up).
fn idle_flood(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let start = Instant::now();
    let mut out = Vec::with_capacity(n);
    while out.len() < n && start.elapsed() < Duration::from_secs(20) {
        if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            out.push(s);
        }
    }
    out
}

/// Sends `head`, then `filler` in 64 KiB chunks up to `total` bytes, then `tail`, while a
/// reader collects what the server answers; stops writing when the server stops taking bytes.
/// Returns the answer's status (0 if none) and how many bytes were sent.
fn stream_until_answered(addr: SocketAddr, head: &[u8], total: usize, tail: &[u8]) -> (u16, usize) {
    let mut s = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    s.set_write_timeout(Some(Duration::from_secs(2)))
        .expect("write timeout");
    let mut r = s.try_clone().expect("clone");
    r.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    let reader = std::thread::spawn(move || {
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&buf[..n]);
        }
        raw
    });
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0;
    let mut ok = s.write_all(head).is_ok();
    while ok && sent < total {
        ok = s.write_all(&chunk).is_ok();
        sent += chunk.len();
    }
    if ok {
        let _ = s.write_all(tail);
    }
    let raw = reader.join().expect("the reader");
    let _ = s.shutdown(Shutdown::Both);
    (status_of(&raw), sent)
}

/// A connection that sends a request head one byte every 500 ms, never finishing it: `true`
/// once the server closed it, `false` if it is still open after `limit`.
fn slowloris(addr: SocketAddr, limit: Duration, stop: &AtomicBool) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, WAIT) else {
        return true;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ")
        .is_err()
    {
        return true;
    }
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    while start.elapsed() < limit && !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
        if s.write_all(b"a").is_err() {
            return true;
        }
    }
    false
}

/// A connection that pipelines `/metrics` requests as fast as the server takes them and never
/// reads an answer; kept open until `stop`.
fn pipeliner(addr: SocketAddr, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(mut s) = TcpStream::connect_timeout(&addr, WAIT) else {
            return;
        };
        let _ = s.set_write_timeout(Some(Duration::from_millis(500)));
        let request = b"GET /metrics HTTP/1.1\r\nHost: pipeliner\r\n\r\n".repeat(100);
        let start = Instant::now();
        for _ in 0..400 {
            if stop.load(Ordering::Relaxed) || s.write_all(&request).is_err() {
                break;
            }
        }
        // Blocked or done: hold the connection, unread, until told to stop.
        while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
    })
}

/// `n` honest scrapes, each on its own connection and within [`HONEST_WAIT`].
fn assert_honest_scrapes(target: &Target, n: usize, during: &str) {
    for i in 0..n {
        assert_eq!(
            honest_get(target.addr, "/metrics"),
            Ok(200),
            "honest scrape {i} during {during}; serve log: {}",
            target.log()
        );
    }
}

#[test]
fn an_idle_flood_of_1000_connections_does_not_keep_an_honest_client_out() {
    let mut t = Target::start(Some(1024), &[]);
    let flood = idle_flood(t.addr, 1000);
    assert!(
        flood.len() >= 1000,
        "only {} of 1,000 connections were opened; {}",
        flood.len(),
        t.log()
    );
    std::thread::sleep(Duration::from_millis(500));
    t.assert_alive();
    assert_honest_scrapes(&t, 3, &format!("{} idle connections", flood.len()));
    drop(flood);
}

#[test]
fn accept_recovers_after_open_files_run_out() {
    // An operator's cap above what 128 open files allow: accept hits EMFILE.
    let mut t = Target::start(Some(128), &["--max-connections", "1000"]);
    let flood = idle_flood(t.addr, 300);
    std::thread::sleep(Duration::from_millis(500));
    t.assert_alive();
    drop(flood);
    std::thread::sleep(Duration::from_millis(500));
    assert_honest_scrapes(&t, 3, "recovery after 300 connections closed");
    t.assert_alive();
    let accept_lines = t
        .log()
        .lines()
        .filter(|l| l.contains("cannot accept"))
        .count();
    assert!(
        (1..=4).contains(&accept_lines),
        "accept errors happened and were logged once: {}",
        t.log()
    );
}

#[test]
fn an_endless_header_line_gets_431_and_memory_stays_bounded() {
    let t = Target::start(None, &[]);
    let before = t.rss();
    let rss = RssWatch::start(t.pid());
    let (status, sent) = stream_until_answered(
        t.addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Endless: ",
        32 << 20,
        b"\r\n\r\n",
    );
    assert_eq!(status, 431, "sent {sent} bytes; {}", t.log());
    let growth = rss.peak().saturating_sub(before);
    eprintln!("RSS {before} KiB, grew by {growth} KiB");
    assert!(growth < GROWTH_BOUND_KIB, "RSS grew by {growth} KiB");
    assert_honest_scrapes(&t, 1, "after an endless header");
}

#[test]
fn a_10_mb_query_string_gets_414_and_memory_stays_bounded() {
    let t = Target::start(None, &[]);
    let before = t.rss();
    let rss = RssWatch::start(t.pid());
    let (status, sent) = stream_until_answered(
        t.addr,
        b"GET /metrics?query=",
        10 << 20,
        b" HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(status, 414, "sent {sent} bytes; {}", t.log());
    let growth = rss.peak().saturating_sub(before);
    eprintln!("RSS {before} KiB, grew by {growth} KiB");
    assert!(growth < GROWTH_BOUND_KIB, "RSS grew by {growth} KiB");
    assert_honest_scrapes(&t, 1, "after a 10 MB query string");
}

/// `n` connections that each send a request line and nothing more (a head begun, never
/// finished), opened one after another.
fn partial_heads(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .filter_map(|_| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
            s.write_all(b"GET /metrics HTTP/1.1\r\n").ok()?;
            Some(s)
        })
        .collect()
}

#[test]
fn a_flood_of_partial_heads_at_the_cap_does_not_keep_an_honest_client_out() {
    let mut t = Target::start(None, &["--max-connections", "16"]);
    let heads = partial_heads(t.addr, 26);
    assert_eq!(heads.len(), 26, "the partial heads connected; {}", t.log());
    std::thread::sleep(Duration::from_millis(500));
    t.assert_alive();
    assert_honest_scrapes(&t, 3, "26 partial heads at a cap of 16 connections");
    drop(heads);
}

#[test]
fn a_slowloris_header_is_cut_off() {
    let t = Target::start(None, &[]);
    let start = Instant::now();
    let closed = slowloris(t.addr, SLOWLORIS_LIMIT, &AtomicBool::new(false));
    assert!(
        closed,
        "a header sent one byte every 500 ms was still open after {:?}",
        start.elapsed()
    );
}

#[test]
fn a_pipelining_client_that_never_reads_stalls_only_itself() {
    let t = Target::start(None, &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let pipeliners: Vec<_> = (0..8)
        .map(|_| pipeliner(t.addr, Arc::clone(&stop)))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    assert_honest_scrapes(&t, 3, "8 pipelining clients that never read");
    stop.store(true, Ordering::Relaxed);
    for p in pipeliners {
        let _ = p.join();
    }
}

#[test]
fn all_attacks_at_once_leave_the_honest_client_answered_and_memory_bounded() {
    let mut t = Target::start(Some(1024), &[]);
    let rss = RssWatch::start(t.pid());
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..8 {
        let (addr, stop) = (t.addr, Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            slowloris(addr, SLOWLORIS_LIMIT, &stop);
        }));
    }
    for _ in 0..8 {
        threads.push(pipeliner(t.addr, Arc::clone(&stop)));
    }
    for _ in 0..2 {
        let addr = t.addr;
        threads.push(std::thread::spawn(move || {
            stream_until_answered(addr, b"GET / HTTP/1.1\r\nX-Endless: ", 32 << 20, b"");
        }));
    }
    let addr = t.addr;
    threads.push(std::thread::spawn(move || {
        stream_until_answered(addr, b"GET /?q=", 10 << 20, b" HTTP/1.1\r\n\r\n");
    }));
    let flood = idle_flood(t.addr, 1000);
    std::thread::sleep(Duration::from_secs(1));
    t.assert_alive();
    assert_honest_scrapes(&t, 5, "every attack at once");
    stop.store(true, Ordering::Relaxed);
    drop(flood);
    for th in threads {
        let _ = th.join();
    }
    let peak = rss.peak();
    eprintln!("peak RSS under every attack at once: {peak} KiB");
    assert!(
        peak < RSS_BOUND_KIB,
        "peak RSS {peak} KiB under every attack at once, bound {RSS_BOUND_KIB} KiB"
    );
}

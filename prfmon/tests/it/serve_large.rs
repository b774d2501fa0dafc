//! `prfmon serve` with a `/metrics` of about 11 MB (an app with 60,000 instances; 27 MB for the
//! answer deadline), more than the kernel's socket buffers take (the clients keep a small
//! receive buffer): clients that do not read it, or read it slowly, hold their answers open.
//! They must stall only themselves (an honest scrape is still answered in time, however many
//! they are), an answer must end within the server's answer deadline however its client reads,
//! and the server's resident memory must stay within the bound docs/serve.md names for scrapes in
//! flight.

use crate::serve_common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prfdata_testkit::{ready, Sandbox};

/// Instances of the wide app: about 11 MB of `/metrics` text.
const INSTANCES: u32 = 60_000;

/// Instances of the wide app for the answer deadline: about 27 MB of `/metrics` text, more
/// than a client reading with [`SLOW_PAUSE`] takes in the 60 s the server gives an answer.
const DEADLINE_INSTANCES: u32 = 150_000;

/// The pause of the client of the answer deadline after each 64 KiB read: 384 KiB/s,
/// fast enough that the server's writes never wait 10 s (its write timeout).
const SLOW_PAUSE: Duration = Duration::from_millis(166);

/// The clients' receive buffer (`SO_RCVBUF`, which also stops the kernel from growing it).
const RECEIVE_BUFFER: usize = 64 * 1024;

/// The env var that makes the test binary run the wide app.
const WIDE_APP_ENV: &str = "PRFMON_SERVE_WIDE_APP";

/// How long an honest scrape may take while other clients hold large answers: far more than
/// the collections queued before it take in a debug build (about 2 s each), less than the
/// 40 s a slow reader takes to read its answer.
const HONEST_WAIT: Duration = Duration::from_secs(30);

/// The scrapes `prfmon serve` works on at once, and the memory it may hold besides them:
/// docs/serve.md's bound on resident memory is `BASE_KIB + SCRAPES x (the /perfdata size + the
/// /metrics size)`.
const SCRAPES: u64 = 8;
const BASE_KIB: u64 = 64 * 1024;

prfdata::prfdata_map! {
    pub mod wide {
        app: "ServeWideApp",
        object SESSION = 0 {
            name: "Serve Wide Session", help: "One of many sessions.",
            instances: { max: 150000, name_len: 32 },
            counters {
                BYTES = 2: RawCount { name: "Session bytes", help: "Bytes the session moved." },
                PACKETS = 4: RawCount { name: "Session packets", help: "Packets the session moved." },
            }
        }
    }
}

/// The app child: every instance added, then ready.
#[test]
#[ignore = "entry point for the app child process"]
fn wide_app_entry() {
    let Some(instances) = std::env::var(WIDE_APP_ENV)
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
    else {
        return;
    };
    use std::sync::atomic::Ordering::Relaxed;
    let prf = wide::PrfData::activate().expect("activate the wide app");
    for i in 0..instances {
        let inst = prf
            .add_instance(wide::SESSION, &format!("session {i:05}"))
            .expect("add an instance");
        prf.get_ctr32(wide::BYTES, inst).store(i as i32, Relaxed);
        prf.get_ctr32(wide::PACKETS, inst).store(7, Relaxed);
    }
    let shm = std::env::var_os("PRFDATA_SHM_DIR").expect("PRFDATA_SHM_DIR");
    ready::publish(&std::path::Path::new(&shm).join("ready"), b"").expect("say ready");
    // Bounded: the app ends by itself if nobody kills it.
    std::thread::sleep(Duration::from_secs(300));
}

/// The wide app and `prfmon serve` in front of it.
struct Wide {
    serve: Guard,
    addr: SocketAddr,
    log: Arc<std::sync::Mutex<String>>,
    /// The size of `/metrics` (classic text).
    payload: usize,
    /// The size of `/perfdata` (the collection).
    collection: usize,
    _app: Guard,
    _setup: Setup,
}

impl Wide {
    /// The app with `instances` sessions, and serve.
    fn start(instances: u32) -> Self {
        let sandbox = Sandbox::new();
        sandbox.install(&wide::MAP);
        let mut command =
            prfdata_testkit::self_command(&prfdata_testkit::test_path!("wide_app_entry"));
        sandbox
            .apply_env(&mut command)
            .env(WIDE_APP_ENV, instances.to_string())
            .stdout(Stdio::null());
        let app = Guard::new(command.spawn().expect("spawn the wide app"), "the wide app");
        ready::wait(&sandbox.shm.join("ready"), WAIT);
        let setup = Setup { sandbox };
        let (serve, addr, log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
        let addr = addr.unwrap_or_else(|e| panic!("serve did not start: {e}"));
        let start = Instant::now();
        let first = get_metrics(addr).unwrap_or_else(|e| panic!("the first scrape: {e}"));
        eprintln!(
            "/metrics: {} bytes in {:?} with nothing else going on",
            first,
            start.elapsed()
        );
        assert!(
            first > 8 << 20,
            "/metrics is {first} bytes: too small for this test"
        );
        let collection = get_whole(addr, "/perfdata").unwrap_or_else(|e| panic!("/perfdata: {e}"));
        Self {
            serve,
            addr,
            log,
            payload: first,
            collection,
            _app: app,
            _setup: setup,
        }
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// One scrape of `/metrics`, read whole within [`HONEST_WAIT`]: the body's size, or why not.
fn get_metrics(addr: SocketAddr) -> Result<usize, String> {
    get_whole(addr, "/metrics")
}

/// [`get_metrics`] again a second after each 503 (as its `Retry-After` says), as long as
/// [`HONEST_WAIT`] has not passed.
fn get_metrics_retrying(addr: SocketAddr) -> Result<usize, String> {
    let start = Instant::now();
    loop {
        match get_metrics(addr) {
            Err(e) if e.contains(" 503 ") && start.elapsed() < HONEST_WAIT => {
                eprintln!("503 after {:?}, retrying", start.elapsed());
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(e) => return Err(format!("{e} ({:?} since the first try)", start.elapsed())),
            Ok(size) => return Ok(size),
        }
    }
}

/// One GET of `target`, read whole within [`HONEST_WAIT`]: the body's size, or why not.
fn get_whole(addr: SocketAddr, target: &str) -> Result<usize, String> {
    let start = Instant::now();
    let run = || -> std::io::Result<Vec<u8>> {
        let mut s = TcpStream::connect_timeout(&addr, HONEST_WAIT)?;
        s.set_read_timeout(Some(HONEST_WAIT))?;
        s.write_all(format!("GET {target} HTTP/1.0\r\n\r\n").as_bytes())?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        Ok(raw)
    };
    let raw = run().map_err(|e| format!("after {:?}: {e}", start.elapsed()))?;
    if start.elapsed() > HONEST_WAIT {
        return Err(format!("answered after {:?}", start.elapsed()));
    }
    let text = String::from_utf8_lossy(&raw);
    match text.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.0 200") => Ok(body.len()),
        _ => Err(format!(
            "not a 200: {:?}",
            text.chars().take(200).collect::<String>()
        )),
    }
}

/// A connection to `addr` with a receive buffer of [`RECEIVE_BUFFER`].
fn connect_small(addr: SocketAddr) -> std::io::Result<TcpStream> {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = rustix::net::socket(family, SocketType::STREAM, None)?;
    sockopt::set_socket_recv_buffer_size(&fd, RECEIVE_BUFFER)?;
    rustix::net::connect(&fd, &addr)?;
    Ok(TcpStream::from(fd))
}

/// A connection that asks for `/metrics` and returns once the answer has begun to arrive
/// (nothing of it read), or after `limit`.
fn unread_scrape(addr: SocketAddr, limit: Duration) -> Option<TcpStream> {
    let s = connect_small(addr).ok()?;
    (&s).write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    let _ = s.peek(&mut [0u8; 1]);
    Some(s)
}

/// A client that asks for `/metrics`, then reads it at 256 KiB/s (64 KiB every 250 ms: the
/// server's writes go through every few seconds, so no write waits long) until `stop`.
fn slow_reader(addr: SocketAddr, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(mut s) = connect_small(addr) else {
            return;
        };
        if s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .is_err()
        {
            return;
        }
        let _ = s.set_read_timeout(Some(WAIT));
        let mut buf = vec![0u8; 64 * 1024];
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(250));
            if matches!(s.read(&mut buf), Ok(0) | Err(_)) {
                return;
            }
        }
    })
}

#[test]
fn clients_that_read_a_large_answer_slowly_stall_only_themselves() {
    let t = Wide::start(INSTANCES);
    let stop = Arc::new(AtomicBool::new(false));
    // One more than the most threads serve answers with.
    let readers: Vec<_> = (0..5)
        .map(|_| slow_reader(t.addr, Arc::clone(&stop)))
        .collect();
    // Their requests are in before the honest one.
    std::thread::sleep(Duration::from_secs(2));
    let start = Instant::now();
    let honest = get_metrics(t.addr);
    eprintln!(
        "honest /metrics beside 5 slow readers: {:?}",
        start.elapsed()
    );
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let _ = r.join();
    }
    assert_eq!(
        honest,
        Ok(t.payload),
        "an honest scrape beside 5 slow readers; serve log: {}",
        t.log()
    );
}

#[test]
fn many_clients_that_do_not_read_a_large_answer_keep_memory_bounded_and_stall_only_themselves() {
    let t = Wide::start(INSTANCES);
    let before = vm_rss_kib(t.serve.id());
    let rss = RssWatch::start(t.serve.id());
    let held: Vec<_> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..60)
            // Long enough for every request to be collected one after another.
            .map(|_| scope.spawn(|| unread_scrape(t.addr, Duration::from_secs(150))))
            .collect();
        threads.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    // The answers in flight are held; let the server settle with them.
    std::thread::sleep(Duration::from_secs(3));
    // They hold every place, but only until someone else wants one.
    let start = Instant::now();
    let honest = get_metrics_retrying(t.addr);
    eprintln!("honest /metrics beside them: {:?}", start.elapsed());
    let peak = rss.peak();
    let bound = BASE_KIB + SCRAPES * ((t.payload + t.collection) as u64 / 1024);
    eprintln!(
        "VmRSS {before} KiB before, peak {peak} KiB with {} clients not reading a {}-byte \
         /metrics ({}-byte /perfdata); bound {bound} KiB",
        held.len(),
        t.payload,
        t.collection
    );
    drop(held);
    assert_eq!(
        honest,
        Ok(t.payload),
        "an honest scrape beside 60 clients that do not read; serve log: {}",
        t.log()
    );
    assert!(
        peak < bound,
        "peak VmRSS {peak} KiB past the bound {bound} KiB; serve log: {}",
        t.log()
    );
}

#[test]
fn an_answer_read_slowly_is_cut_at_the_answer_deadline() {
    let t = Wide::start(DEADLINE_INSTANCES);
    let mut s = connect_small(t.addr).expect("connect");
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").expect("send");
    s.set_read_timeout(Some(WAIT)).expect("read timeout");
    let start = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0;
    while start.elapsed() < Duration::from_secs(150) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
        std::thread::sleep(SLOW_PAUSE);
    }
    let took = start.elapsed();
    eprintln!(
        "read {read} bytes of a {}-byte /metrics in {took:?}, then the server closed",
        t.payload
    );
    assert!(
        read < t.payload,
        "the whole answer was read in {took:?}: no deadline cut it"
    );
    assert!(
        took > Duration::from_secs(50),
        "cut after {took:?}, before the 60 s answer deadline: by another timeout; {}",
        t.log()
    );
}

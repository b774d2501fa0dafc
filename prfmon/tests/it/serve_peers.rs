//! What a remote peer may do through `prfmon serve`'s `/reg` PerfStats keys (the Windows 95
//! "HOWTO: access the performance registry" `StartStat` / `StatData` / `StopStat`): a server
//! without a token is read-only; watches need the token or `--allow-remote-watch`; a peer holds
//! a bounded number of leases and ends only its own; serve leaves most of an app's watch table
//! to local consumers; writes are POST; error bodies name apps, never local paths. Real `prfmon
//! serve` processes, a real app and its watch table, real sockets from several loopback
//! addresses (127.0.0.2, 127.0.0.3, ...: each is a peer).

use crate::serve_common::*;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use prfdata::watch::WatchTable;

const TOKEN: &str = "0123456789abcdef-prfmon-peer-token";

/// The stat of the serve test app used here, as the PerfStats Enum view names it, and its name
/// offset in the app's watch table.
const STAT: &str = r"ServeTestService\Queuelength";
const STAT_OFFSET: u32 = 6;

/// The leases one peer may hold, and serve's share of one app's table (docs/serve.md's figures).
const PER_PEER: usize = 4;
const SHARE: usize = 16;

fn token_file(dir: &Path) -> PathBuf {
    let file = dir.join("token");
    std::fs::write(&file, TOKEN).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

/// The app, serve in front of it with `args`, and the app's watch table.
struct Peers {
    setup: Setup,
    addr: SocketAddr,
    table: WatchTable,
    log: std::sync::Arc<std::sync::Mutex<String>>,
    _serve: Guard,
    _app: Guard,
}

impl Peers {
    fn start(args: &[&str]) -> Self {
        let setup = setup();
        let app = setup.start_app("static");
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let (serve, addr, log) = setup.start_serve(&all);
        let addr = addr.unwrap_or_else(|e| panic!("serve did not start: {e}"));
        let table = WatchTable::open_in(&setup.shm, "ServeTestApp").expect("the app's table");
        let peers = Self {
            setup,
            addr,
            table,
            log,
            _serve: serve,
            _app: app,
        };
        // Serve's own lease on everything it exports.
        peers.wait_watchers(1);
        peers
    }

    fn with_token() -> (Self, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let file = token_file(dir.path());
        (Self::start(&["--token-file", file.to_str().unwrap()]), dir)
    }

    fn watchers(&self) -> usize {
        self.table.watchers(STAT_OFFSET)
    }

    fn wait_watchers(&self, n: usize) {
        let start = Instant::now();
        while self.watchers() != n {
            assert!(
                start.elapsed() < WAIT,
                "{} watchers of the stat, expected {n}; serve log: {}",
                self.watchers(),
                self.log.lock().map(|l| l.clone()).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `method /reg?key=HKEY_DYN_DATA\PerfStats\<op>&v=<stat>` from loopback address
    /// `127.0.0.<peer>`.
    fn op(&self, peer: u8, method: &str, op: &str, stat: &str, token: Option<&str>) -> Http {
        let key = format!(r"HKEY_DYN_DATA\PerfStats\{op}");
        let target = format!(
            "/reg?key={}&v={}",
            prfmon::remote::encode_component(&key),
            prfmon::remote::encode_component(stat)
        );
        request_from(
            Ipv4Addr::new(127, 0, 0, peer),
            self.addr,
            method,
            &target,
            token,
        )
    }
}

/// One HTTP/1.0 request from a socket bound to `source`, bounded by [`WAIT`].
fn request_from(
    source: Ipv4Addr,
    addr: SocketAddr,
    method: &str,
    target: &str,
    token: Option<&str>,
) -> Http {
    use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).expect("socket");
    bind(&fd, &SocketAddr::V4(SocketAddrV4::new(source, 0))).expect("bind the peer address");
    connect(&fd, &addr).expect("connect");
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Length", "0")];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b));
    }
    exchange(TcpStream::from(fd), method, target, &headers)
        .unwrap_or_else(|e| panic!("{method} {target} from {source}: {e}"))
}

#[test]
fn an_anonymous_start_stat_is_refused_by_a_read_only_server() {
    let p = Peers::start(&[]);
    let r = p.op(2, "POST", "StartStat", STAT, None);
    assert_eq!(r.status, 403, "{r:?}");
    assert!(r.body.contains("read-only"), "{r:?}");
    assert!(r.body.contains("--token-file"), "{r:?}");
    assert!(r.body.contains("--allow-remote-watch"), "{r:?}");
    // Reads still work, and nothing was leased.
    let data = p.op(2, "GET", "StatData", STAT, None);
    assert_eq!(data.status, 200, "{data:?}");
    assert_eq!(p.watchers(), 1);
}

#[test]
fn with_the_token_or_the_flag_a_peer_starts_and_stops_a_watch() {
    let (p, _dir) = Peers::with_token();
    let r = p.op(2, "POST", "StartStat", STAT, Some(TOKEN));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body.contains(&format!("{STAT}    REG_BINARY    ")),
        "{r:?}"
    );
    p.wait_watchers(2);
    let r = p.op(2, "POST", "StopStat", STAT, Some(TOKEN));
    assert_eq!(r.status, 200, "{r:?}");
    p.wait_watchers(1);

    let open = Peers::start(&["--allow-remote-watch"]);
    let r = open.op(2, "POST", "StartStat", STAT, None);
    assert_eq!(r.status, 200, "{r:?}");
    open.wait_watchers(2);
}

#[test]
fn a_get_on_start_stat_or_stop_stat_is_405_allowing_post() {
    let (p, _dir) = Peers::with_token();
    for op in ["StartStat", "StopStat"] {
        let r = p.op(2, "GET", op, STAT, Some(TOKEN));
        assert_eq!(r.status, 405, "{op}: {r:?}");
        assert!(
            r.head.to_ascii_lowercase().contains("allow: post"),
            "{op}: {r:?}"
        );
    }
    assert_eq!(p.watchers(), 1, "a GET starts nothing");
}

#[test]
fn a_peer_holds_a_bounded_number_of_leases() {
    let (p, _dir) = Peers::with_token();
    for i in 0..PER_PEER {
        let r = p.op(2, "POST", "StartStat", STAT, Some(TOKEN));
        assert_eq!(r.status, 200, "lease {i}: {r:?}");
    }
    let r = p.op(2, "POST", "StartStat", STAT, Some(TOKEN));
    assert_eq!(r.status, 429, "{r:?}");
    assert!(r.body.contains(&PER_PEER.to_string()), "{r:?}");
    let other = p.op(3, "POST", "StartStat", STAT, Some(TOKEN));
    assert_eq!(other.status, 200, "another peer: {other:?}");
    p.wait_watchers(1 + PER_PEER + 1);
}

#[test]
fn local_typeperf_gets_a_lease_when_peers_took_serves_share() {
    let p = Peers::start(&["--allow-remote-watch"]);
    let mut peer = 2;
    for _ in 0..SHARE / PER_PEER {
        for _ in 0..PER_PEER {
            let r = p.op(peer, "POST", "StartStat", STAT, None);
            assert_eq!(r.status, 200, "peer {peer}: {r:?}");
        }
        peer += 1;
    }
    let r = p.op(peer, "POST", "StartStat", STAT, None);
    assert_eq!(r.status, 503, "past serve's share: {r:?}");
    assert!(r.body.contains("ServeTestApp"), "{r:?}");
    p.wait_watchers(1 + SHARE);

    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_prfmon"));
    p.setup
        .sandbox
        .apply_env(&mut cmd)
        .args([
            "typeperf",
            r"\Serve Test Service\Queue length",
            "-si",
            "0.25",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _typeperf = Guard::new(cmd.spawn().expect("spawn typeperf"), "prfmon typeperf");
    p.wait_watchers(1 + SHARE + 1);
}

#[test]
fn stop_stat_ends_only_the_peers_own_leases() {
    let (p, _dir) = Peers::with_token();
    let r = p.op(2, "POST", "StartStat", STAT, Some(TOKEN));
    assert_eq!(r.status, 200, "{r:?}");
    p.wait_watchers(2);
    let r = p.op(3, "POST", "StopStat", STAT, Some(TOKEN));
    assert_eq!(r.status, 403, "another peer's stop: {r:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(p.watchers(), 2, "the lease of peer 2 is still held");
    let r = p.op(2, "POST", "StopStat", STAT, Some(TOKEN));
    assert_eq!(r.status, 200, "{r:?}");
    p.wait_watchers(1);
}

#[test]
fn error_bodies_name_apps_and_never_local_paths() {
    let (p, _dir) = Peers::with_token();
    let paths = [
        p.setup.shm.display().to_string(),
        p.setup.registry.display().to_string(),
        std::env::temp_dir().display().to_string(),
    ];
    let assert_no_path = |what: &str, r: &Http| {
        assert!(r.status >= 400, "{what}: {r:?}");
        for path in &paths {
            assert!(
                !r.body.contains(path.as_str()),
                "{what} names {path}: {r:?}"
            );
        }
    };
    // The app's watch table is gone (moved away): the StartStat fails.
    let watch = p.setup.shm.join("ServeTestApp.watch");
    std::fs::rename(&watch, p.setup.shm.join("moved")).expect("move the table away");
    let r = p.op(2, "POST", "StartStat", STAT, Some(TOKEN));
    assert_no_path("a StartStat without a table", &r);
    assert!(r.body.contains("ServeTestApp"), "{r:?}");
    // The registry file is corrupt: a /reg read fails.
    std::fs::write(p.setup.registry.join("registry.toml"), "[[key]\nnot toml").unwrap();
    let key = prfmon::remote::encode_component(r"HKLM\SOFTWARE");
    let r = request_from(
        Ipv4Addr::LOCALHOST,
        p.addr,
        "GET",
        &format!("/reg?key={key}"),
        Some(TOKEN),
    );
    assert_no_path("a /reg read of a corrupt registry", &r);
    let r = request_from(Ipv4Addr::LOCALHOST, p.addr, "GET", "/factors", Some(TOKEN));
    assert_no_path("/factors of a corrupt registry", &r);
}

//! Remote monitoring: a real app behind a real `prfmon serve`, read by `prfmon` processes
//! whose own registry is empty, so that every value they print came over the wire:
//! `typeperf -s` (a histogram's percentiles too), `\\HOST\...` paths, `query` / `list
//! --computer`, `reg query \\HOST\KEY`;
//! the bearer token; TLS with a CA made in the test; a down and a stalled remote.

use crate::common::{prfmon, Run};
use crate::serve_common;

use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serve_common::*;

const TOKEN: &str = "0123456789abcdef-remote-test-token";

/// A serve test app running behind `prfmon serve` on a free loopback port.
struct RemoteMachine {
    setup: Setup,
    _app: Guard,
    _serve: Guard,
    addr: SocketAddr,
}

fn remote_machine(serve_args: &[&str]) -> RemoteMachine {
    let setup = setup();
    let app = setup.start_app("static");
    let mut args = vec!["--listen", "127.0.0.1:0"];
    args.extend_from_slice(serve_args);
    let (serve, addr, log) = setup.start_serve(&args);
    let addr = addr.unwrap_or_else(|e| panic!("serve did not start: {e}; {log:?}"));
    RemoteMachine {
        setup,
        _app: app,
        _serve: serve,
        addr,
    }
}

/// `prfmon args...` with an empty registry of its own: nothing is local.
fn client(args: &[&str]) -> Run {
    let empty = tempfile::tempdir().unwrap();
    prfmon(&empty.path().join("registry"), args)
}

/// `prfmon args...` on the remote machine's own registry and blocks.
fn local(setup: &Setup, args: &[&str]) -> Run {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_prfmon"));
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    setup.apply_env(&mut cmd);
    prfdata_testkit::finish(cmd.spawn().unwrap(), WAIT)
}

/// The CSV rows of a typeperf log without the header and the timestamp column.
fn csv_values(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').skip(1).map(str::to_owned).collect())
        .collect()
}

fn csv_header(text: &str) -> Vec<String> {
    text.lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(|c| c.trim_matches('"').to_owned())
        .collect()
}

const PATHS: [&str; 2] = [
    r"\Serve Test Service\Queue length",
    r"\Serve Test Worker(*)\Jobs done",
];

#[test]
fn typeperf_s_reads_the_remote_machine_and_its_values_are_the_local_ones() {
    let m = remote_machine(&[]);
    let host = m.addr.to_string();
    let mut args = vec!["typeperf", "-s", &host, "-sc", "1"];
    args.extend_from_slice(&PATHS);
    let remote = client(&args);
    assert_eq!(remote.code, 0, "{remote:?}");
    let mut local_args = vec!["typeperf", "-sc", "1"];
    local_args.extend_from_slice(&PATHS);
    let here = local(&m.setup, &local_args);
    assert_eq!(here.code, 0, "{here:?}");

    let header = csv_header(&remote.stdout);
    assert_eq!(
        header[1..],
        [
            format!(r"\\{host}\Serve Test Service\Queue length"),
            format!(r"\\{host}\Serve Test Worker(pool A/w1)\Jobs done"),
            format!(r"\\{host}\Serve Test Worker(pool A/w2)\Jobs done"),
            format!(r"\\{host}\Serve Test Worker(pool B/w1)\Jobs done"),
        ],
        "{}",
        remote.stdout
    );
    assert_eq!(csv_header(&here.stdout).len(), header.len());
    assert_eq!(csv_values(&remote.stdout), csv_values(&here.stdout));
    assert_eq!(
        csv_values(&remote.stdout)[0][0],
        format!("\"{QUEUE}.000000\"")
    );
}

/// A histogram's percentile paths read over the wire: `typeperf -s` samples the histogram
/// app twice while it records its values in between, and the second row's p50 and p99 are
/// within the stated error (2^-6 of the value, half a bucket) of the exact percentiles.
#[test]
fn typeperf_s_reads_the_percentiles_of_a_remote_histogram() {
    use crate::serve_prometheus::{go_file, histogram_values, nearest_rank};
    use std::io::{BufRead, BufReader};
    let setup = setup();
    setup.install(&prfdata_testkit::histogram_app::app::MAP);
    let _app = setup.start_app("histogram");
    let (_serve, addr, log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let host = addr
        .unwrap_or_else(|e| panic!("serve did not start: {e}; {log:?}"))
        .to_string();
    let empty = tempfile::tempdir().unwrap();
    let args = [
        "typeperf",
        "-s",
        &host,
        "-si",
        "1",
        "-sc",
        "2",
        r"\Histogram Test\Latency:p50",
        r"\Histogram Test\Latency sharded:p99",
    ];
    let mut child = crate::common::spawn(&empty.path().join("registry"), &args, "");
    let stdout = child.stdout.take().expect("typeperf's stdout");
    let guard = Guard::new(child, "prfmon typeperf -s");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = || {
        rx.recv_timeout(WAIT)
            .expect("a line of typeperf within the wait")
    };
    let header = line();
    assert!(header.contains(r"Latency sharded:p99"), "{header}");
    // The first sample has no interval yet; the values are recorded before the second.
    let first = line();
    assert_eq!(
        first.split(',').skip(1).collect::<Vec<_>>(),
        [r#"" ""#; 2],
        "{first}"
    );
    std::fs::write(go_file(&setup.shm), "").expect("tell the app to record");
    let second = line();
    let got: Vec<f64> = second
        .split(',')
        .skip(1)
        .map(|v| v.trim_matches('"').parse().expect("a number"))
        .collect();
    let mut sorted = histogram_values();
    sorted.sort_unstable();
    for (got, q) in got.iter().zip([0.5, 0.99]) {
        let exact = nearest_rank(&sorted, q) as f64;
        let error = (got - exact).abs() / exact;
        assert!(
            error <= 1.0 / 64.0,
            "p{q}: {got} us, exact {exact}: {second}"
        );
    }
    drop(guard);
}

#[test]
fn paths_naming_the_host_query_and_list_reach_it() {
    let m = remote_machine(&[]);
    let host = m.addr.to_string();
    let path = format!(r"\\{host}\Serve Test Service\Queue length");
    let run = client(&["typeperf", &path, "-sc", "1"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!("\"{QUEUE}.000000\"")),
        "{run:?}"
    );

    let query = client(&["query", "--computer", &host, "--json", "Serve Test Service"]);
    assert_eq!(query.code, 0, "{query:?}");
    assert!(query.stdout.contains("ServeTestApp"), "{query:?}");
    assert!(query.stdout.contains(&QUEUE.to_string()), "{query:?}");

    let list = client(&["list", "--computer", &host, "Serve Test Worker"]);
    assert_eq!(list.code, 0, "{list:?}");
    assert!(list.stdout.contains("Counter: Jobs done"), "{list:?}");
    assert!(list.stdout.contains("Service: ServeTestApp"), "{list:?}");

    // Without a remote source the same path is an error naming the host.
    let down = free_port();
    let path = format!(r"\\127.0.0.1:{down}\Serve Test Service\Queue length");
    let run = client(&["typeperf", &path, "-sc", "1"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&format!("127.0.0.1:{down}")), "{run:?}");
}

#[test]
fn reg_query_reads_the_remote_registry() {
    let m = remote_machine(&[]);
    let host = m.addr.to_string();
    let key = prfdata_registry::paths::performance("ServeTestApp");
    let run = client(&["reg", "query", &format!(r"\\{host}\{key}")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains(&format!(r"\\{host}\HKEY_LOCAL_MACHINE\SYSTEM")),
        "{run:?}"
    );
    assert!(run.stdout.contains("Library    REG_"), "{run:?}");
    let here = local(&m.setup, &["reg", "query", &key]);
    assert_eq!(
        run.stdout.replace(&format!(r"\\{host}\"), ""),
        here.stdout,
        "the remote key is the local one"
    );

    let perflib = client(&[
        "reg",
        "query",
        &format!(r"\\{host}\{}", prfdata_registry::paths::PERFLIB),
        "/v",
        "Last Counter",
    ]);
    assert_eq!(perflib.code, 0, "{perflib:?}");
    assert!(
        perflib.stdout.contains("Last Counter    REG_DWORD"),
        "{perflib:?}"
    );

    let missing = client(&[
        "reg",
        "query",
        &format!(r"\\{host}\HKLM\SOFTWARE\NoSuchKey"),
    ]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing
            .stderr
            .contains(prfdata_registry::reg_cli::NOT_FOUND),
        "{missing:?}"
    );
}

/// KB Q174631 step 8: the PerfStats view of the remote machine, the `Enum` keys as its own
/// `reg query` prints them and a `StartStat` / `StatData` / `StopStat` sequence on its apps.
#[test]
fn reg_query_reads_the_remote_perfstats_view() {
    // StartStat and StopStat are writes: a server without a token allows them only so.
    let m = remote_machine(&["--allow-remote-watch"]);
    let host = m.addr.to_string();
    let enum_key = r"HKLM\System\CurrentControlSet\Control\PerfStats\Enum";
    let remote = client(&["reg", "query", &format!(r"\\{host}\{enum_key}"), "/s"]);
    assert_eq!(remote.code, 0, "{remote:?}");
    let here = local(&m.setup, &["reg", "query", enum_key, "/s"]);
    assert_eq!(here.code, 0, "{here:?}");
    assert!(here.stdout.contains("Differentiate    REG_SZ"), "{here:?}");
    assert_eq!(
        remote.stdout.replace(&format!(r"\\{host}\"), ""),
        here.stdout,
        "the remote Enum view is the local one"
    );
    // A stat of the remote's apps, named as the Enum view names it: its first object and counter.
    let mut keys = here
        .stdout
        .lines()
        .filter_map(|l| {
            l.strip_prefix(r"HKEY_LOCAL_MACHINE\System\CurrentControlSet\Control\PerfStats\Enum\")
        })
        .filter(|k| k.contains('\\'));
    let stat = keys
        .next()
        .expect("a counter key in the Enum view")
        .to_owned();
    for op in ["StartStat", "StatData", "StopStat"] {
        let run = client(&[
            "reg",
            "query",
            &format!(r"\\{host}\HKEY_DYN_DATA\PerfStats\{op}"),
            "/v",
            &stat,
        ]);
        assert_eq!(run.code, 0, "{op}: {run:?}");
        assert!(
            run.stdout.contains(&format!(r"{stat}    REG_BINARY    ")),
            "{op}: {run:?}"
        );
    }
    let missing = client(&[
        "reg",
        "query",
        &format!(r"\\{host}\HKEY_DYN_DATA\PerfStats\StatData"),
        "/v",
        r"No\Such",
    ]);
    assert_eq!(missing.code, 1, "{missing:?}");
}

/// A token file holding `TOKEN`, mode 600.
fn token_file(dir: &Path, content: &str) -> PathBuf {
    let file = dir.join("token");
    std::fs::write(&file, content).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

#[test]
fn the_token_is_required_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(dir.path(), TOKEN);
    let m = remote_machine(&["--token-file", token.to_str().unwrap()]);
    let host = m.addr.to_string();
    let path = PATHS[0];

    let without = client(&["typeperf", "-s", &host, path, "-sc", "1"]);
    assert_eq!(without.code, 1, "{without:?}");
    assert!(without.stderr.contains("401"), "{without:?}");
    assert!(without.stderr.contains("--token-file"), "{without:?}");

    let wrong_dir = tempfile::tempdir().unwrap();
    let wrong = token_file(wrong_dir.path(), "another-token-of-enough-length");
    let run = client(&[
        "typeperf",
        "-s",
        &host,
        "--token-file",
        wrong.to_str().unwrap(),
        path,
        "-sc",
        "1",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("401"), "{run:?}");

    let run = client(&[
        "typeperf",
        "-s",
        &host,
        "--token-file",
        token.to_str().unwrap(),
        path,
        "-sc",
        "1",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!("\"{QUEUE}.000000\"")),
        "{run:?}"
    );

    // The client reads its token file with the server's rules.
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = client(&[
        "query",
        "--computer",
        &host,
        "--token-file",
        token.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("chmod 600"), "{run:?}");
}

/// A test CA and a server certificate for 127.0.0.1 signed by it, as PEM files in `dir`:
/// (ca.pem, cert.pem, key.pem).
fn test_ca(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "prfmon test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    };
    (
        write("ca.pem", ca.pem()),
        write("cert.pem", cert.pem()),
        write("key.pem", key.serialize_pem()),
    )
}

#[test]
fn tls_with_a_test_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = test_ca(dir.path());
    let token = token_file(dir.path(), TOKEN);
    let m = remote_machine(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--token-file",
        token.to_str().unwrap(),
    ]);
    let host = m.addr.to_string();
    let path = format!(r"\\{host}\Serve Test Service\Queue length");
    let tls = [
        "--tls-ca",
        ca.to_str().unwrap(),
        "--token-file",
        token.to_str().unwrap(),
    ];
    let mut args = vec!["typeperf", &path, "-sc", "1"];
    args.extend_from_slice(&tls);
    let run = client(&args);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!("\"{QUEUE}.000000\"")),
        "{run:?}"
    );

    let key_path = prfdata_registry::paths::performance("ServeTestApp");
    let mut args = vec!["reg", "query", &key_path, "--computer", &host];
    args.extend_from_slice(&tls);
    let run = client(&args);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Library    REG_"), "{run:?}");

    // Not trusted: Mozilla's roots do not hold the test CA.
    let https = format!("https://{host}");
    let run = client(&[
        "query",
        "--computer",
        &https,
        "--token-file",
        token.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!("cannot reach {host}")),
        "{run:?}"
    );

    // Plain HTTP to a TLS server is not answered as HTTP.
    let run = client(&[
        "query",
        "--computer",
        &host,
        "--token-file",
        token.to_str().unwrap(),
        "--timeout",
        "5",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&host), "{run:?}");
}

#[test]
fn a_bad_key_file_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, _) = test_ca(dir.path());
    let setup = setup();
    let run = local(
        &setup,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            cert.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("cert.pem: no PRIVATE KEY"), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
}

/// A port nothing listens on (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_down_remote_is_an_error_naming_it() {
    let port = free_port();
    let host = format!("127.0.0.1:{port}");
    let run = client(&["typeperf", "-s", &host, PATHS[0], "-sc", "1"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!("cannot reach {host}")),
        "{run:?}"
    );
    let run = client(&["reg", "query", &format!(r"\\{host}\HKLM\SOFTWARE")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!("cannot reach {host}")),
        "{run:?}"
    );
}

#[test]
fn a_stalled_remote_times_out() {
    // Accepts connections (the kernel's backlog) and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    // `client` bounds the run (60 s): a hang fails the test instead of blocking it.
    let run = client(&["query", "--computer", &host, "--timeout", "1"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("{host} did not answer within 1 s")),
        "{run:?}"
    );
    let run = client(&["list", "--computer", &host, "--timeout", "0.5"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("did not answer within 0.5 s"),
        "{run:?}"
    );
    drop(listener);
}

#[test]
fn watch_reads_the_remote_machine_before_taking_the_terminal() {
    let m = remote_machine(&[]);
    let host = m.addr.to_string();
    // The path is resolved against the remote's collection and names: a counter it lacks is
    // refused with the near matches the remote offers, before the terminal is taken.
    let run = client(&[
        "watch",
        "--computer",
        &host,
        r"\Serve Test Service\Queue lenght",
        "--frames",
        "1",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("Queue length"), "{run:?}");

    let down = format!("127.0.0.1:{}", free_port());
    let run = client(&["watch", "--computer", &down, PATHS[0], "--frames", "1"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!("cannot reach {down}")),
        "{run:?}"
    );
}

//! A remote that lies: the real `prfmon` against a hostile server on 127.0.0.1 (see
//! [`crate::hostile_http`]). A huge answer costs the client at most about twice its size,
//! whatever reads it (`list`, `query` as a table or JSON, `typeperf` of one instance or of
//! every one), and so does `decode` of a huge file; an answer over `--max-answer` is refused
//! naming both; redirects are not followed; a body cut short is said to be cut short, with
//! both byte counts.

use crate::hostile_http::{huge_names, many_instances, HostileServer, Reply, HUGE_OBJECT};

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one prfmon run may take before the test fails instead of hanging.
const RUN_WAIT: Duration = Duration::from_secs(120);

/// What a finished run left: its exit code, stderr, how many bytes it printed and the last of
/// them, and its peak resident memory (`ru_maxrss`: VmHWM) in bytes.
#[derive(Debug)]
struct Measured {
    code: i32,
    stderr: String,
    stdout_len: u64,
    /// The last [`TAIL`] bytes of stdout.
    stdout_tail: String,
    peak: u64,
}

/// How much of a run's stdout [`Measured`] keeps (its end: the last rows written).
const TAIL: u64 = 256;

/// The variable that makes this test binary the measuring runner ([`measure_child`]): the
/// folder with the arguments, where the results go.
const MEASURE_DIR: &str = "PRFMON_MEASURE_DIR";

/// Runs `prfmon args...` with an empty registry of its own, its stdout into a file (so that a
/// large output never blocks on a pipe), and measures its peak memory.
///
/// The peak is `ru_maxrss` from `wait4`, which also counts the memory of the process that
/// started prfmon (the kernel keeps the high-water mark of the address space an `exec`
/// replaces, and `Command` spawns with `vfork`). So this test process, which holds the huge
/// answers, does not start prfmon itself: a fresh copy of the test binary does
/// ([`measure_child`]), holding next to nothing.
fn run_measured(args: &[&str]) -> Measured {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("args"), args.join("\0")).unwrap();
    let runner = prfdata_testkit::self_command(&prfdata_testkit::test_path!("measure_child"))
        .env(MEASURE_DIR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the measuring runner");
    let run = prfdata_testkit::finish(runner, RUN_WAIT + Duration::from_secs(10));
    let result = std::fs::read_to_string(dir.path().join("result"))
        .unwrap_or_else(|e| panic!("the runner left no result ({e}): {run:?}"));
    let mut words = result.split_whitespace().map(|w| w.parse::<i64>().unwrap());
    let (code, peak_kib) = (words.next().unwrap(), words.next().unwrap());
    let out = std::fs::read(dir.path().join("out")).unwrap_or_default();
    let tail = out.len().saturating_sub(TAIL as usize);
    Measured {
        code: code as i32,
        stderr: std::fs::read_to_string(dir.path().join("err")).unwrap_or_default(),
        stdout_len: out.len() as u64,
        stdout_tail: String::from_utf8_lossy(&out[tail..]).into_owned(),
        peak: u64::try_from(peak_kib).unwrap_or(0) * 1024,
    }
}

/// The measuring runner: starts prfmon with the arguments in `$PRFMON_MEASURE_DIR/args`,
/// waits for it (killing it after [`RUN_WAIT`]) and writes its exit code and `ru_maxrss`
/// (KiB) to `result`.
#[test]
#[ignore = "entry point for the measuring runner"]
fn measure_child() {
    let Some(dir) = std::env::var_os(MEASURE_DIR).map(std::path::PathBuf::from) else {
        return;
    };
    let args = std::fs::read_to_string(dir.join("args")).unwrap();
    // Reaped by `wait4` below, which gives its resource usage (`Child::wait` does not).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .args(args.split('\0'))
        .env("PRFDATA_REGISTRY", dir.join("registry"))
        .env_remove("PRFDATA_SHM_DIR")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("out")).unwrap())
        .stderr(std::fs::File::create(dir.join("err")).unwrap())
        .spawn()
        .expect("spawn prfmon");
    let pid = child.id() as libc::pid_t;
    let deadline = Instant::now() + RUN_WAIT;
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our child, not yet reaped (`Child` never waited on it); `status`
        // and `usage` are valid for writes.
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(done >= 0, "wait4: {}", std::io::Error::last_os_error());
        if done == pid {
            break (status, usage);
        }
        if Instant::now() > deadline {
            // SAFETY: kill(2) of our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("prfmon {args:?} did not finish within {RUN_WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    std::fs::write(dir.join("result"), format!("{code} {}", usage.ru_maxrss)).unwrap();
}

/// A server that answers `/perfdata` with `block` (one object, from service `Huge`), `/names`
/// with its names and `/factors` with none.
fn huge_server(block: Arc<Vec<u8>>) -> HostileServer {
    HostileServer::start(move |target| {
        if target.starts_with("/perfdata") {
            Reply::perfdata(Arc::clone(&block), 1, "Huge")
        } else if target.starts_with("/names") {
            Reply::json(&huge_names())
        } else if target.starts_with("/factors") {
            Reply::json("{}")
        } else {
            Reply::text("404 Not Found", b"no such thing")
        }
    })
}

/// What a prfmon that read nothing large holds: the binary, its libraries, the allocator's
/// arenas, the names. The bound on a huge answer is twice its size plus this.
const BASE_MEMORY: u64 = 32 << 20;

/// A server that answers `/names` and `/factors` as [`huge_server`] does, and everything else
/// with `reply`.
fn server_answering(reply: Reply) -> HostileServer {
    HostileServer::start(move |target| {
        if target.starts_with("/names") {
            Reply::json(&huge_names())
        } else if target.starts_with("/factors") {
            Reply::json("{}")
        } else {
            reply.clone()
        }
    })
}

/// The instances of the huge answer: 500,000 of 48 bytes, 24 MB that a per-instance copy
/// (a string and a list of values each) would make many times larger.
const HUGE: u32 = 500_000;

/// The last instance's name ([`many_instances`] names them in hexadecimal) and value.
const LAST: &str = "7a11f";

/// Runs `prfmon args...` against a server of the huge answer (`{host}` in an argument is its
/// address), checks that it succeeded within twice the answer plus [`BASE_MEMORY`], and
/// returns the run and the answer's size.
fn run_on_huge_answer(args: &[&str]) -> (Measured, u64) {
    let block = Arc::new(many_instances(HUGE));
    let size = block.len() as u64;
    let server = huge_server(Arc::clone(&block));
    drop(block);
    let host = server.host();
    let args: Vec<String> = args.iter().map(|a| a.replace("{host}", &host)).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_measured(&args);
    assert_eq!(run.code, 0, "{args:?}: {run:?}");
    assert_peak(&args, &run, size);
    (run, size)
}

/// Asserts that `run`'s peak stayed within twice `size` plus [`BASE_MEMORY`].
fn assert_peak(args: &[&str], run: &Measured, size: u64) {
    let bound = 2 * size + BASE_MEMORY;
    eprintln!(
        "prfmon {}: peak {} bytes for a {size}-byte answer ({:.2}x), {} bytes printed",
        args[0],
        run.peak,
        run.peak as f64 / size as f64,
        run.stdout_len
    );
    assert!(
        run.peak <= bound,
        "prfmon {args:?} held {} bytes at its peak for a {size}-byte answer (bound {bound})",
        run.peak
    );
}

#[test]
fn a_huge_answer_costs_at_most_twice_its_size() {
    let block = Arc::new(many_instances(HUGE));
    let size = block.len() as u64;
    let server = huge_server(Arc::clone(&block));
    let host = server.host();
    let run = run_measured(&["list", "--computer", &host]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout_len > 0, "{run:?}");
    assert_peak(&["list"], &run, size);
}

#[test]
fn a_huge_answer_queried_costs_at_most_twice_its_size() {
    let (run, _) = run_on_huge_answer(&["query", "--computer", "{host}"]);
    // The table's last row: the counter of the last instance, with its value.
    let last = format!("{LAST}     {}\n", HUGE - 1);
    assert!(run.stdout_tail.ends_with(&last), "{run:?}");
}

#[test]
fn a_huge_answer_as_json_costs_at_most_twice_its_size() {
    let (run, size) = run_on_huge_answer(&["query", "--computer", "{host}", "--json"]);
    // Keys in alphabetical order: the header's last field closes the document.
    let last = format!("\"total_byte_length\": {size}\n}}\n");
    assert!(run.stdout_tail.ends_with(&last), "{run:?}");
}

#[test]
fn typeperf_of_one_instance_of_a_huge_answer_costs_at_most_twice_its_size() {
    let (run, _) = run_on_huge_answer(&["typeperf", r"\\{host}\Huge(1)\Value", "-sc", "1"]);
    assert!(run.stdout_tail.ends_with("\"1.000000\"\n"), "{run:?}");
}

#[test]
fn typeperf_of_every_instance_of_a_huge_answer_costs_at_most_twice_its_size() {
    let (run, _) = run_on_huge_answer(&["typeperf", r"\\{host}\Huge(*)\Value", "-sc", "1"]);
    let last = format!("\"{}.000000\"\n", HUGE - 1);
    assert!(run.stdout_tail.ends_with(&last), "{run:?}");
    // One column per instance, the last named in the header.
    assert!(run.stdout_len > u64::from(HUGE) * 12, "{run:?}");
}

/// The local check: `prfmon decode` of a huge PERF_DATA_BLOCK file (what `query --raw`
/// writes), with no server.
#[test]
fn decoding_a_huge_file_costs_at_most_twice_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.raw");
    let block = many_instances(HUGE);
    let size = block.len() as u64;
    std::fs::write(&file, &block).unwrap();
    drop(block);
    let path = file.to_str().unwrap();
    let run = run_measured(&["decode", path]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout_tail
            .ends_with(&format!("{LAST}     {}\n", HUGE - 1)),
        "{run:?}"
    );
    assert_peak(&["decode"], &run, size);
}

/// The counter names of the huge names answer: 4 million, 52 MB of JSON, which a map of
/// strings would make about five times larger.
const MANY_NAMES: u32 = 4_000_000;

/// A names answer of `count` counter names at the even indexes from 0, in order: empty (the
/// most entries per byte) but for the huge answer's object and counter.
fn many_names(count: u32) -> String {
    use std::fmt::Write;
    let mut counter = String::with_capacity(count as usize * 14);
    for index in (0..count).map(|i| 2 * i) {
        let name = match index {
            HUGE_OBJECT => "Huge",
            i if i == HUGE_OBJECT + 2 => "Value",
            _ => "",
        };
        let comma = if index == 0 { "" } else { "," };
        write!(counter, r#"{comma}"{index}":"{name}""#).unwrap();
    }
    format!(
        r#"{{"counter":{{{counter}}},"help":{{"{}":"Many instances."}}}}"#,
        HUGE_OBJECT + 1
    )
}

#[test]
fn a_huge_names_answer_costs_at_most_twice_its_size() {
    let names = Reply::json(&many_names(MANY_NAMES));
    let size = names.body.len() as u64;
    let block = Arc::new(many_instances(3));
    let server = HostileServer::start(move |target| {
        if target.starts_with("/perfdata") {
            Reply::perfdata(Arc::clone(&block), 1, "Huge")
        } else if target.starts_with("/names") {
            names.clone()
        } else if target.starts_with("/factors") {
            Reply::json("{}")
        } else {
            Reply::text("404 Not Found", b"no such thing")
        }
    });
    let run = run_measured(&["list", "--computer", &server.host()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout_tail.contains("Huge"), "{run:?}");
    assert_peak(&["list"], &run, size);
}

#[test]
fn an_answer_over_max_answer_is_refused_naming_both() {
    let block = Arc::new(many_instances(100_000));
    let size = block.len();
    let server = huge_server(Arc::clone(&block));
    let host = server.host();
    let run = run_measured(&["query", "--computer", &host, "--max-answer", "1000000"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&size.to_string())
            && run.stderr.contains("1000000")
            && run.stderr.contains("--max-answer"),
        "{run:?}"
    );
    // The same answer under a cap above it is read.
    let cap = (size + 1).to_string();
    let run = run_measured(&["list", "--computer", &host, "--max-answer", &cap]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn names_over_max_answer_are_refused() {
    let names = format!(
        r#"{{"counter":{{"2":"{}"}},"help":{{}}}}"#,
        "x".repeat(200_000)
    );
    let server = HostileServer::start(move |_| Reply::json(&names));
    let host = server.host();
    let run = run_measured(&["list", "--computer", &host, "--max-answer", "100000"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("100000") && run.stderr.contains("--max-answer"),
        "{run:?}"
    );
}

/// A `Content-Length` is a claim: a client on a machine that cannot hold the body it announces
/// (a small VM or container; here an address space capped at 1 GiB, as
/// [`prfmon_capped`](crate::hostile_files::prfmon_capped) runs it) reads the few bytes that
/// come and says the answer was cut short, instead of aborting on a reservation made before
/// they came.
#[test]
fn a_content_length_reserves_nothing_up_front() {
    let claimed = prfmon::remote::DEFAULT_MAX_ANSWER;
    let mut reply = Reply::perfdata(Arc::new(vec![0u8; 100]), 1, "Huge");
    reply.head = reply
        .head
        .replace("Content-Length: 100", &format!("Content-Length: {claimed}"));
    let server = server_answering(reply);
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    let run =
        crate::hostile_files::prfmon_capped(&registry, &["query", "--computer", &server.host()]);
    assert_eq!(
        run.code, 1,
        "killed or aborted instead of an error: {run:?}"
    );
    assert!(
        run.stderr
            .contains(&format!("Content-Length is {claimed} bytes"))
            && run.stderr.contains("sent 100 bytes"),
        "{run:?}"
    );
}

#[test]
fn redirects_are_not_followed_and_named() {
    // Where the redirect points answers as a real server would: following it would succeed.
    let target = huge_server(Arc::new(many_instances(3)));
    let location = format!("http://{}/perfdata?query=Global", target.host());
    for status in [
        "301 Moved Permanently",
        "302 Found",
        "307 Temporary Redirect",
    ] {
        let server = server_answering(Reply::new(
            status,
            &[format!("Location: {location}")],
            Vec::new(),
        ));
        let run = run_measured(&["query", "--computer", &server.host()]);
        assert_eq!(run.code, 1, "{status}: {run:?}");
        assert!(
            run.stderr.contains(&location) && run.stderr.contains(&status[..3]),
            "{status}: {run:?}"
        );
        assert!(run.stderr.contains("redirect"), "{status}: {run:?}");
        eprintln!("{}", run.stderr);
    }
}

#[test]
fn a_body_cut_short_names_both_counts() {
    let block = many_instances(1000);
    let announced = block.len();
    let sent = announced / 2;
    let mut reply = Reply::perfdata(Arc::new(block[..sent].to_vec()), 1, "Huge");
    reply.head = reply.head.replace(
        &format!("Content-Length: {sent}"),
        &format!("Content-Length: {announced}"),
    );
    let server = server_answering(reply);
    let run = run_measured(&["query", "--computer", &server.host()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&announced.to_string()) && run.stderr.contains(&sent.to_string()),
        "{run:?}"
    );
    eprintln!("{}", run.stderr);
    assert!(!run.stderr.contains("cannot reach"), "{run:?}");
    assert!(!run.stderr.contains("is prfmon serve running"), "{run:?}");
}

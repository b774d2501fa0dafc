//! `prfmon typeperf` and `prfmon watch` started before an app is installed, uninstalled or
//! renamed follow it without a restart: a path that names nothing at start waits (an empty
//! column, a series not drawn yet) and gets the app's values once it is installed, goes back
//! to empty values when it is uninstalled, and a path with the app's new names gets values
//! when it is reinstalled under them; over a remote source as well.
//!
//! The app is [`apps_appear`]'s child process (it installs itself with the real provider and
//! activates its block, saying when its install was done); the collectors are the real
//! `prfmon` binary. Each wait is bounded by [`SEEN_WITHIN`] after the registry change; the time
//! it took, from the instant of the change to the time stamp of the first row (the
//! collection's own time) that shows it, is printed.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use prfdata::install::uninstall_in;
use prfdata_testkit::{ChildGuard, Sandbox};

use crate::apps_appear::{
    empty_sandbox, seen, start_app_timed, v1, REQUIRED, SEEN_WITHIN, V1_VALUE, V2_VALUE,
};
use crate::common;
use crate::sampling_app::shell_env;
use crate::watch::Pane;

const OLD_PATH: &str = r"\Appear Service\Appear Value";
const NEW_PATH: &str = r"\Appear Renamed\Renamed Value";

/// One row of a typeperf log: its time stamp and its value fields.
#[derive(Debug, Clone)]
struct Row {
    stamp: SystemTime,
    values: Vec<String>,
}

/// A running `prfmon typeperf` (in UTC), its header and rows read as they come, its stderr
/// kept.
struct Typeperf {
    _child: ChildGuard,
    header: Vec<String>,
    rows: mpsc::Receiver<Row>,
    stderr: Arc<Mutex<String>>,
}

/// The fields of one CSV line.
fn fields(line: &str) -> Vec<String> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes())
        .records()
        .next()
        .and_then(Result::ok)
        .map(|r| r.iter().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A typeperf time stamp (`MM/DD/YYYY HH:MM:SS.mmm`, in UTC here) as a wall-clock instant.
fn stamp(field: &str) -> SystemTime {
    let t = chrono::NaiveDateTime::parse_from_str(field, "%m/%d/%Y %H:%M:%S%.3f")
        .unwrap_or_else(|e| panic!("time stamp `{field}`: {e}"))
        .and_utc();
    let millis = u64::try_from(t.timestamp_millis()).expect("a time after 1970");
    std::time::UNIX_EPOCH + Duration::from_millis(millis)
}

impl Typeperf {
    /// Starts `prfmon typeperf ARGS` against `sandbox` and waits (bounded) for its header.
    fn start(sandbox: &Sandbox, args: &[&str]) -> Typeperf {
        let mut command = Command::new(common::PRFMON);
        sandbox
            .apply_env(&mut command)
            .arg("typeperf")
            .args(args)
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = ChildGuard::new(command.spawn().expect("spawn typeperf"), "typeperf");
        let stdout = child.child().stdout.take().expect("typeperf's stdout");
        let mut err = child.child().stderr.take().expect("typeperf's stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let kept = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut buffer) {
                if let Ok(mut text) = kept.lock() {
                    text.push_str(&String::from_utf8_lossy(&buffer[..n]));
                }
            }
        });
        let (header_tx, header_rx) = mpsc::channel::<Vec<String>>();
        let (tx, rows) = mpsc::channel::<Row>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut f = fields(&line);
                if f.first().is_some_and(|s| s.starts_with("(PDH-CSV")) {
                    let _ = header_tx.send(f);
                    continue;
                }
                if f.is_empty() {
                    continue;
                }
                let values = f.split_off(1);
                if tx
                    .send(Row {
                        stamp: stamp(&f[0]),
                        values,
                    })
                    .is_err()
                {
                    return;
                }
            }
        });
        let header = header_rx
            .recv_timeout(common::RUN_WAIT)
            .unwrap_or_else(|_| {
                panic!(
                    "typeperf wrote no header: {}",
                    stderr.lock().map(|s| s.clone()).unwrap_or_default()
                )
            });
        Typeperf {
            _child: child,
            header,
            rows,
            stderr,
        }
    }

    /// What typeperf wrote on stderr so far.
    fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The first row collected at or after `since` whose values are `want`, waited for at
    /// most [`SEEN_WITHIN`] after `since`; returns it, printing how long after `since` it was
    /// collected.
    fn row_after(&self, what: &str, since: SystemTime, want: &[&str]) -> Row {
        let deadline = Instant::now() + SEEN_WITHIN;
        let mut last = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let row = match self.rows.recv_timeout(left) {
                Ok(row) => row,
                Err(_) => panic!(
                    "{what}: no row with {want:?} within {SEEN_WITHIN:?} (required: within \
                     {REQUIRED:?}); last row {last:?}; stderr: {}",
                    self.stderr()
                ),
            };
            if row.stamp >= since && row.values == want {
                let took = row.stamp.duration_since(since).unwrap_or_default();
                eprintln!(
                    "{what}: in the row collected {took:?} after (required: within {REQUIRED:?})"
                );
                assert!(took < SEEN_WITHIN, "{what}: {took:?}");
                return row;
            }
            last = Some(row);
        }
    }
}

/// `4242` as typeperf writes it on the console.
fn console(value: i32) -> String {
    format!("{value}.000000")
}

#[test]
fn typeperf_started_before_an_app_is_installed_logs_it_and_empties_once_uninstalled() {
    let sandbox = empty_sandbox();
    let registry = sandbox.open();
    let typeperf = Typeperf::start(&sandbox, &[OLD_PATH, "-si", "0.2"]);
    let host = prfmon::datablock::host_name();
    assert_eq!(typeperf.header[1..], [format!(r"\\{host}{OLD_PATH}")]);
    // It waits for the path, with empty values, and says so.
    typeperf.row_after(
        "typeperf: a row before the install",
        SystemTime::now(),
        &[" "],
    );
    let stderr = typeperf.stderr();
    assert!(
        stderr.contains("not found now") && stderr.contains(OLD_PATH),
        "{stderr}"
    );

    let (app, installed) = start_app_timed(&sandbox, "v1", None);
    let value = console(V1_VALUE);
    typeperf.row_after("typeperf: the app installed", installed, &[&value]);

    uninstall_in(&registry, &v1::MAP).expect("uninstall v1");
    let removed = SystemTime::now();
    typeperf.row_after("typeperf: the app uninstalled", removed, &[" "]);
    drop(app);
}

#[test]
fn typeperf_follows_a_rename_the_old_path_empty_the_new_one_logged() {
    let sandbox = empty_sandbox();
    let registry = sandbox.open();
    let (app, _) = start_app_timed(&sandbox, "v1", None);
    let typeperf = Typeperf::start(&sandbox, &[OLD_PATH, NEW_PATH, "-si", "0.2"]);
    let host = prfmon::datablock::host_name();
    assert_eq!(
        typeperf.header[1..],
        [
            format!(r"\\{host}{OLD_PATH}"),
            format!(r"\\{host}{NEW_PATH}")
        ]
    );
    let old = console(V1_VALUE);
    typeperf.row_after("typeperf: v1 sampled", SystemTime::now(), &[&old, " "]);

    uninstall_in(&registry, &v1::MAP).expect("uninstall v1");
    drop(app);
    let (_app, renamed) = start_app_timed(&sandbox, "v2", None);
    let new = console(V2_VALUE);
    typeperf.row_after("typeperf: the app renamed", renamed, &[" ", &new]);
}

#[test]
fn typeperf_over_a_remote_logs_an_app_installed_after_it_started() {
    let sandbox = empty_sandbox();
    let serve = crate::serve_common::Setup { sandbox };
    let (_serve, addr, _log) = serve.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("serve listens").to_string();
    let typeperf = Typeperf::start(
        &serve.sandbox,
        &["--computer", &addr, OLD_PATH, "-si", "0.2"],
    );
    assert_eq!(typeperf.header[1..], [format!(r"\\{addr}{OLD_PATH}")]);
    typeperf.row_after(
        "remote typeperf: before the install",
        SystemTime::now(),
        &[" "],
    );

    let (_app, installed) = start_app_timed(&serve.sandbox, "v1", None);
    let value = console(V1_VALUE);
    typeperf.row_after("remote typeperf: the app installed", installed, &[&value]);
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn watch_started_before_an_app_is_installed_draws_it_and_marks_it_gone_once_uninstalled() {
    let sandbox = empty_sandbox();
    let registry = sandbox.open();
    let pane = Pane::start_with(
        &shell_env(&sandbox),
        &format!("'{OLD_PATH}' --interval 0.25"),
    );
    pane.wait_for("the path waited for", |s| {
        s.contains("Not found now") && s.contains(OLD_PATH)
    });

    let (app, _) = start_app_timed(&sandbox, "v1", None);
    let installed = Instant::now();
    let legend = format!("{}.000", V1_VALUE);
    seen("watch: the app installed", installed, true, || {
        let screen = pane.screen();
        screen.contains(&legend) && screen.contains(OLD_PATH) && !screen.contains("Not found now")
    });

    uninstall_in(&registry, &v1::MAP).expect("uninstall v1");
    let removed = Instant::now();
    seen("watch: the app uninstalled", removed, true, || {
        pane.screen().contains("▸ 1 gone (g shows them)")
    });
    pane.keys(&["q"]);
    pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
    drop(app);
}

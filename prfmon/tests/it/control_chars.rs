//! Control characters from elsewhere never reach the operator's terminal raw: an app (a real
//! child process) whose object and counter names, instance names and text counter carry
//! `ESC ] 0 ; title BEL` (retitle the window), `ESC [ 2 J` (clear the screen), the C1 CSI
//! (U+009B) and DEL; a registry holding them; a remote whose answers and error bodies do.
//! Every command's stdout and stderr show them escaped (`\x1b`, `\u{9b}`); JSON escapes them
//! as JSON does; `typeperf -o FILE` keeps the exact text, as CSV that reads back the same.

use crate::hostile_http::{HostileServer, Reply};
use crate::prfdata_app::{self, prfmon_for, Installed};
use crate::watch::Pane;

use prfdata_registry::{paths, update, FileRegistry, Registry, RegistryError, Value};
use prfdata_untrusted::text::is_control;

prfdata::prfdata_map! {
    /// The app whose names and texts carry control characters.
    pub mod ctl {
        app: "PrfmonCtl",
        object STATUS = 0 {
            name: "Ctl Status", help: "The app's status.",
            detail: Novice, default: none, instances: none, costly: false,
            counters {
                LABEL = 2: Text32 { name: "Label", help: "A label.", detail: Novice, scale: 0 },
                COUNT = 4: RawCount { name: "Count", help: "A count.", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 6 {
            name: "Ctl Worker", help: "One worker.",
            detail: Novice, default: DONE, instances: { max: 4, name_len: 64 }, costly: false,
            counters {
                DONE = 8: RawCount { name: "Done", help: "Jobs done.", detail: Novice, scale: 0 },
            }
        }
    }
}

/// What an app run by another user writes to take over a terminal: retitle the window,
/// clear the screen, a C1 CSI (U+009B) that sets a colour, DEL.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{7f}";
/// [`HOSTILE`] as every terminal output shows it.
const SHOWN: &str = r"\x1b]0;pwned\x07\x1b[2J\u{9b}31m\x7f";
/// [`HOSTILE`] inside JSON text.
const IN_JSON: &str = r"\u001b]0;pwned\u0007\u001b[2J\u009b31m\u007f";
/// What a name carries to forge a line of its own: a newline, a fake row, a tab.
const FORGED: &str = "\nFAKE 999\t";
/// [`FORGED`] as every terminal output shows it.
const FORGED_SHOWN: &str = r"\x0aFAKE 999\x09";

/// The app: a hostile text counter and instance name, then waits to be killed.
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    if std::env::var_os(prfdata_app::APP_ROLE).is_none() {
        return;
    }
    let prf = ctl::PrfData::activate().expect("the app activates");
    prf.text().set(ctl::LABEL, (), HOSTILE);
    let worker = prf
        .add_instance(ctl::WORKER, &format!("w{HOSTILE}"))
        .expect("the instance");
    prf.get_ctr32(ctl::DONE, worker)
        .store(7, std::sync::atomic::Ordering::Relaxed);
    prf.add_instance(ctl::WORKER, &format!("w1{FORGED}"))
        .expect("the instance with a newline");
    prfdata_app::app_ready(b"up");
    std::thread::sleep(std::time::Duration::from_secs(120));
}

/// Renames name `index` of `Perflib\009` to `name`, as a same-user process could.
fn rename(registry: &FileRegistry, index: u32, name: &str) {
    let key = paths::perflib_language("009");
    update(registry, |hive| {
        let Some(Value::MultiSz(mut counter)) = hive.value(&key, "Counter")?.cloned() else {
            panic!("no Counter value");
        };
        let at = counter
            .iter()
            .step_by(2)
            .position(|i| i == &index.to_string())
            .expect("the index");
        counter[2 * at + 1] = name.to_owned();
        hive.set_value(&key, "Counter", Value::MultiSz(counter))?;
        Ok::<(), RegistryError>(())
    })
    .expect("rename");
}

/// The app installed, its object and counter names made hostile, and running.
fn hostile_app() -> (Installed, prfdata_app::AppProcess) {
    let installed = prfdata_app::install(&ctl::MAP);
    let registry = FileRegistry::open(&installed.registry).unwrap();
    let first = installed.first_counter;
    rename(&registry, first, &format!("Ctl Status{HOSTILE}"));
    rename(&registry, first + 2, &format!("Label{HOSTILE}"));
    rename(&registry, first + 4, &format!("Count{FORGED}"));
    assert!(registry.snapshot().is_ok());
    let app = prfdata_app::spawn_app(&installed, &prfdata_testkit::test_path!("app_child"));
    (installed, app)
}

/// `text` (what `what` printed) holds no raw control character but newline and tab.
fn assert_no_raw_control(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| is_control(c)) {
        panic!(
            "{what} printed the raw control character U+{:04X}:\n{text:?}",
            c as u32
        );
    }
}

/// No line of `text` (what `what` printed) is one a name wrote: newlines inside names are
/// escaped, so `FAKE` never starts a line.
fn assert_no_forged_line(what: &str, text: &str) {
    if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("FAKE")) {
        panic!("{what} printed a line a name forged: {line:?} in\n{text}");
    }
}

/// A run printed nothing raw, and its stdout shows `shown`.
fn assert_escaped(what: &str, run: &prfdata_testkit::Run, shown: &str) {
    assert_no_raw_control(&format!("{what} (stdout)"), &run.stdout);
    assert_no_raw_control(&format!("{what} (stderr)"), &run.stderr);
    assert!(run.stdout.contains(shown), "{what}: {shown} not in {run:?}");
}

#[test]
fn query_list_decode_and_reg_query_escape_names_instances_and_texts() {
    let (installed, _app) = hostile_app();
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.blk");
    let query = prfmon_for(&installed, &["query", "--raw", raw.to_str().unwrap()]);
    assert_eq!(query.code, 0, "{query:?}");
    assert_escaped("query", &query, &format!("Ctl Status{SHOWN}"));
    assert_escaped("query", &query, &format!("Label{SHOWN}"));
    assert_escaped("query", &query, &format!("w{SHOWN}"));
    assert_escaped("query", &query, &format!("w1{FORGED_SHOWN}"));
    assert_escaped("query", &query, &format!("Count{FORGED_SHOWN}"));
    assert_no_forged_line("query", &query.stdout);

    let json = prfmon_for(&installed, &["query", "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    assert_escaped("query --json", &json, IN_JSON);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("valid JSON");
    assert!(
        value.to_string().contains(r"\u001b]0;pwned\u0007"),
        "the JSON reads back as the app's text"
    );
    let objects = value["objects"].as_array().unwrap();
    assert!(objects
        .iter()
        .any(|o| o["name"] == format!("Ctl Status{HOSTILE}")));

    let decode = prfmon_for(&installed, &["decode", raw.to_str().unwrap()]);
    assert_eq!(decode.code, 0, "{decode:?}");
    assert_escaped("decode", &decode, &format!("w{SHOWN}"));
    assert_no_forged_line("decode", &decode.stdout);

    let list = prfmon_for(&installed, &["list"]);
    assert_eq!(list.code, 0, "{list:?}");
    assert_escaped("list", &list, &format!("Label{SHOWN}"));
    assert_escaped("list", &list, &format!("Count{FORGED_SHOWN}"));
    assert_no_forged_line("list", &list.stdout);

    let perflib = paths::perflib_language("009");
    let reg = prfmon_for(&installed, &["reg", "query", &perflib, "/v", "Counter"]);
    assert_eq!(reg.code, 0, "{reg:?}");
    assert_escaped("reg query", &reg, &format!("Ctl Status{SHOWN}"));
    assert_escaped("reg query", &reg, &format!("Count{FORGED_SHOWN}"));
    assert_no_forged_line("reg query", &reg.stdout);

    // An error that names what the user typed and the registry holds.
    let missing = prfmon_for(&installed, &["query", &format!("No{HOSTILE}")]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert_no_raw_control("query's error", &missing.stderr);
    assert!(missing.stderr.contains(SHOWN), "{missing:?}");
}

#[test]
fn typeperf_escapes_its_output_and_keeps_the_exact_text_in_its_file() {
    let (installed, _app) = hostile_app();
    let path = r"\Ctl Worker(*)\Done";
    let run = prfmon_for(&installed, &["typeperf", path, "-sc", "1"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_escaped("typeperf", &run, &format!("w{SHOWN}"));
    assert_escaped("typeperf", &run, &format!("w1{FORGED_SHOWN}"));
    assert_no_forged_line("typeperf", &run.stdout);
    let listed = prfmon_for(&installed, &["typeperf", "-qx", "Ctl Worker"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert_escaped("typeperf -qx", &listed, &format!("w1{FORGED_SHOWN}"));
    assert_no_forged_line("typeperf -qx", &listed.stdout);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("log.csv");
    let run = prfmon_for(
        &installed,
        &["typeperf", path, "-sc", "1", "-o", file.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_no_raw_control("typeperf -o (stdout)", &run.stdout);
    assert_no_raw_control("typeperf -o (stderr)", &run.stderr);
    // The file is the log itself: valid CSV whose header reads back as the exact path.
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(&file)
        .unwrap();
    let header = reader.records().next().expect("a header").expect("CSV");
    assert!(
        header
            .iter()
            .any(|h| h.ends_with(&format!(r"\Ctl Worker(w{HOSTILE})\Done"))),
        "{header:?}"
    );
}

#[test]
fn a_remote_reg_query_escapes_answers_and_error_bodies() {
    let server = HostileServer::start(|target| {
        if target.contains("Bad") {
            Reply::text("500 Internal Server Error", HOSTILE.as_bytes())
        } else {
            Reply::text(
                "200 OK",
                format!("HKEY_LOCAL_MACHINE\\{HOSTILE}\n").as_bytes(),
            )
        }
    });
    let host = server.host();
    let empty = tempfile::tempdir().unwrap();
    let registry = empty.path().join("registry");
    let run = crate::common::prfmon(
        &registry,
        &["reg", "query", &format!(r"\\{host}\HKLM\Good")],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_escaped("remote reg query", &run, SHOWN);

    let run = crate::common::prfmon(&registry, &["reg", "query", &format!(r"\\{host}\HKLM\Bad")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_no_raw_control("remote reg query's error", &run.stderr);
    assert!(run.stderr.contains(SHOWN), "{run:?}");
}

#[test]
fn a_log_line_naming_a_hostile_library_path_is_escaped() {
    let (installed, _app) = hostile_app();
    let registry = FileRegistry::open(&installed.registry).unwrap();
    let config = prfdata_registry::ServiceConfig::new(
        format!("/nonexistent/lib{HOSTILE}.so"),
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    prfdata_registry::register_service(&registry, "CtlHostileLib", &config).unwrap();
    let run = prfmon_for(&installed, &["query"]);
    assert_no_raw_control("query (stderr)", &run.stderr);
    assert!(run.stderr.contains(&format!("lib{SHOWN}.so")), "{run:?}");
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn watch_shows_escaped_instance_names_and_keeps_the_pane_title() {
    let (installed, _app) = hostile_app();
    let q = |p: &std::path::Path| format!("'{}'", p.display());
    let env = format!(
        "PRFDATA_REGISTRY={} PRFDATA_SHM_DIR={} TZ=UTC",
        q(&installed.registry),
        q(&installed.shm)
    );
    let pane = Pane::start_with(&env, r"'\Ctl Worker(*)\Done' --interval 0.25");
    let title = pane.tmux(&["display-message", "-p", "#{pane_title}"]);
    let screen = pane.wait_for("the legend with the escaped instance name", |s| {
        // The legend keeps a path's end.
        s.contains("Legend")
            && s.contains(r"\x1b[2J\u{9b}31m\x7f)\Done")
            && s.contains(r"FAKE 999\x09)\Done")
    });
    assert!(!screen.contains("EXITED"), "{screen}");
    assert_no_forged_line("watch", &screen);
    let after = pane.tmux(&["display-message", "-p", "#{pane_title}"]);
    assert!(!after.contains("pwned"), "the pane title became {after:?}");
    assert_eq!(title, after, "the pane title changed");
}

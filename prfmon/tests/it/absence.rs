//! An object that is installed but that no process publishes now is explained by every
//! collecting command, naming the service, the app and what to start: when the app never ran,
//! and when it ran and was killed (its block is left with no live process).

use std::process::Stdio;

use prfdata_testkit::{ready, ChildGuard};

use crate::common::{Run, TEST_WAIT};
use crate::prfdata_app::{self, prfmon_for, Installed};

prfdata::prfdata_map! {
    /// An app that is installed and started only by the test that kills it.
    pub mod idle {
        app: "AbsenceTest",
        object JOBS {
            name: "Absence Jobs", help: name,
            counters {
                DONE: LargeRawCount { name: "Absence Done", help: name },
                RATE: CounterCounter { name: "Absence Jobs/sec", help: name },
            }
        }
    }
}

/// The commands that collect, each asking for the app's object.
const COMMANDS: [&[&str]; 5] = [
    &["query", "Absence Jobs"],
    &["list"],
    &["list", "Absence Jobs"],
    &["typeperf", "-q", "Absence Jobs"],
    &["typeperf", r"\Absence Jobs\Absence Done", "-sc", "1"],
];

/// Runs every command of [`COMMANDS`] and checks that its stderr names the service and says
/// `what` (and what to start).
fn every_command_says(installed: &Installed, what: &str) {
    for args in COMMANDS {
        let run: Run = prfmon_for(installed, args);
        let sub = args[0];
        assert!(
            run.stderr.contains(&format!("prfmon {sub}: "))
                && run.stderr.contains("service AbsenceTest is installed")
                && run.stderr.contains(what)
                && run.stderr.contains("start the app"),
            "{args:?} (exit {}): {}",
            run.code,
            run.stderr
        );
        if args.len() > 1 {
            assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        }
    }
}

#[test]
fn every_command_says_an_installed_app_is_not_running_and_to_start_it() {
    let installed = prfdata_app::install(&idle::MAP);
    every_command_says(
        &installed,
        "no process of app AbsenceTest publishes counters now",
    );
}

/// The app child: activates and waits to be killed.
#[test]
#[ignore = "entry point for child processes"]
fn absence_app_entry() {
    if std::env::var_os(prfdata_app::APP_ROLE).is_none() {
        return;
    }
    let prf = idle::PrfData::activate().expect("activate");
    prfdata_app::app_ready(b"up");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let _ = &prf;
    }
}

#[test]
fn every_command_says_the_app_exited() {
    let installed = prfdata_app::install(&idle::MAP);
    let ready = prfdata_app::ready_file(&installed.shm);
    let mut command =
        prfdata_testkit::self_command(&prfdata_testkit::test_path!("absence_app_entry"));
    installed
        .apply_env(&mut command)
        .env(prfdata_app::APP_ROLE, "1")
        .stdout(Stdio::null());
    let mut app = ChildGuard::new(command.spawn().expect("spawn the app"), "the app");
    ready::wait(&ready, TEST_WAIT);
    app.child().kill().expect("kill the app");
    app.child().wait().expect("reap the app");
    assert!(installed.shm.join("AbsenceTest.blk").exists());
    every_command_says(&installed, "app AbsenceTest exited");
}

/// `query` and `list` given a counter's name as an object, or an object's name misspelt, while
/// the app is installed and no process of it runs: the installed objects (install's `Object
/// List`) say which object the counter belongs to, and are the names near a misspelt one.
#[test]
fn an_idle_app_s_objects_are_told_from_its_counters() {
    let installed = prfdata_app::install(&idle::MAP);
    for sub in ["query", "list"] {
        let run: Run = prfmon_for(&installed, &[sub, "Absence Done"]);
        assert!(
            run.stderr
                .contains(r#""Absence Done" is a counter of object "Absence Jobs""#)
                && run
                    .stderr
                    .contains("no process of app AbsenceTest publishes")
                && run.stderr.contains("start the app"),
            "{sub} (exit {}): {}",
            run.code,
            run.stderr
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
        let run: Run = prfmon_for(&installed, &[sub, "Absence Job"]);
        assert!(
            run.stderr
                .contains(r#"no object named "Absence Job"; did you mean "Absence Jobs"?"#),
            "{sub} (exit {}): {}",
            run.code,
            run.stderr
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
    }
}

/// `watch` in a terminal says in its legend's title, beside the path not found now, that the
/// installed app is not running and to start it (its stderr line is hidden while the chart
/// owns the screen).
#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn watch_says_in_its_legend_that_the_app_is_not_running() {
    let installed = prfdata_app::install(&idle::MAP);
    let env = crate::sampling_app::shell_env(&installed);
    let pane = crate::watch::Pane::start_with(&env, r"'\Absence Jobs\Absence Done' --interval 0.2");
    let screen = pane.wait_for("the path not found now", |s| s.contains("Not found now"));
    assert!(
        screen.contains("AbsenceTest is not running: start the app"),
        "{screen}"
    );
    pane.keys(&["q"]);
    pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
}

/// `query` and `list` of another machine (`--computer`), whose installed services the client
/// does not know: an object no service returned is said with the services that answered
/// there (the `Prfmon-Services` header), not as uninstalled.
#[test]
fn a_remote_absence_names_the_services_that_answered() {
    let setup = crate::serve_common::setup();
    setup.sandbox.install(&idle::MAP);
    let _app = setup.start_app("static");
    let (_serve, addr, log) = setup.start_serve(&["--listen", "127.0.0.1:0"]);
    let addr = addr.unwrap_or_else(|e| panic!("serve did not start: {e}; {log:?}"));
    let empty = tempfile::tempdir().expect("a temp folder");
    let computer = addr.to_string();
    for sub in ["query", "list"] {
        let args = [sub, "--computer", &computer, "Absence Jobs"];
        let run = crate::common::prfmon(&empty.path().join("registry"), &args);
        assert!(
            run.stderr.contains(&format!(
                "no service of {computer} returned it (the services that answered: \
                 ServeTestApp): is its app installed and running there?"
            )),
            "{sub} (exit {}): {}",
            run.code,
            run.stderr
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
    }
}

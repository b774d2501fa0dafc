//! `prfmon watch` as a person uses it: the real binary in an 80×24 tmux pane, against a real
//! app and the real provider; keys typed with `send-keys`, the screen read with
//! `capture-pane`. A build without tmux reports them ignored, with the reason (Debian's `tmux`).
//! The rendering itself is unit-tested with ratatui's `TestBackend` in `src/cli/chart/`.

use crate::common;
use crate::sampling_app;

use common::finish;
use prfdata_testkit::tmux::SCREEN_WAIT;
use sampling_app::{shell_env, tp, App};

/// A tmux pane running `prfmon watch` (`prfdata_testkit::tmux::Pane`, which it derefs to).
pub(crate) struct Pane(prfdata_testkit::tmux::Pane);

impl Pane {
    /// Runs `prfmon watch ARGS` in a new 80×24 pane, against the app's registry and blocks;
    /// when it exits the pane shows `EXITED <code>`.
    fn start(app: &App, args: &str) -> Pane {
        Pane::start_with(&shell_env(app), args)
    }

    /// Runs `ENV prfmon watch ARGS` in a new 80×24 pane (`ENV`: `NAME=value` words for the
    /// shell); when it exits the pane shows `EXITED <code>`.
    pub(crate) fn start_with(env: &str, args: &str) -> Pane {
        Pane(prfdata_testkit::tmux::Pane::start(&format!(
            "{env} '{}' watch {args}; echo \"EXITED $?\"; sleep 120",
            env!("CARGO_BIN_EXE_prfmon")
        )))
    }
}

impl std::ops::Deref for Pane {
    type Target = prfdata_testkit::tmux::Pane;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn the_chart_follows_instances_changes_interval_and_quits_on_q() {
    let app = App::start();
    let pane = Pane::start(
        &app,
        r"'\TP Service\Queue length' '\TP Service\Jobs/sec' '\TP Worker(*)\Done' --interval 0.25",
    );
    let screen = pane.wait_for("the legend with the app's values", |s| {
        s.contains("Legend") && s.contains("42.000") && s.contains(r"Worker(w2)\Done")
    });
    let lines: Vec<&str> = screen.lines().collect();
    assert!(lines.len() <= 24, "{screen}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{screen}");
    assert!(screen.contains("every 250 ms"), "{screen}");
    let jobs = lines
        .iter()
        .find(|l| l.contains(r"\Jobs/sec"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        jobs.contains("0.1"),
        "Jobs/sec's DefaultScale -1 in the legend: {jobs}"
    );
    let w1 = lines
        .iter()
        .find(|l| l.contains(r"Worker(w1)\Done"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(w1.contains("7.000"), "{w1}");

    // w2 goes, w3 comes.
    let w2 = app
        .prf
        .instances()
        .list(tp::WORKER)
        .expect("list the workers")
        .into_iter()
        .find(|i| app.prf.instances().name(*i).as_deref() == Some("w2"))
        .expect("w2");
    app.prf.remove_instance(w2).expect("remove w2");
    let w3 = app.prf.add_instance(tp::WORKER, "w3").expect("add w3");
    app.prf
        .get_ctr32(tp::DONE, w3)
        .store(11, std::sync::atomic::Ordering::Relaxed);
    let screen = pane.wait_for("w2 gone and w3 added", |s| {
        s.contains("▸ 1 gone (g shows them)") && s.contains(r"Worker(w3)\Done")
    });
    assert!(screen.contains("11.000"), "{screen}");
    assert!(
        !screen.contains(r"Worker(w2)"),
        "gone rows folded:\n{screen}"
    );
    pane.keys(&["g"]);
    pane.wait_for("w2 listed as gone", |s| {
        s.contains(r"Worker(w2)\Done (gone)")
    });

    pane.keys(&["+"]);
    pane.wait_for("the longer interval", |s| s.contains("every 500 ms"));
    pane.keys(&["-", "-"]);
    pane.wait_for("the shorter interval", |s| s.contains("every 250 ms"));

    pane.keys(&["q"]);
    let screen = pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
    assert!(
        !screen.contains("Legend"),
        "the chart is gone, the screen restored:\n{screen}"
    );
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn escape_and_ctrl_c_quit_too() {
    let app = App::start();
    for key in ["Escape", "C-c"] {
        let pane = Pane::start(&app, r"'\TP Service\Queue length' --interval 0.25");
        pane.wait_for("the legend", |s| s.contains("42.000"));
        pane.keys(&[key]);
        pane.wait_for(&format!("a clean exit on {key}"), |s| {
            s.contains("EXITED 0")
        });
    }
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn frames_quits_by_itself_after_that_many_samples() {
    let app = App::start();
    let pane = Pane::start(
        &app,
        r"'\TP Worker(*)\Done' --interval 0.1 --frames 5 --no-scale",
    );
    let screen = pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
    assert!(!screen.contains("Legend"), "{screen}");
}

/// A well-formed path that matches nothing waits (its app may be installed later): it is said
/// on stderr with its near matches and listed in the legend as not found now, while the other
/// paths are drawn. A malformed path fails before taking the terminal.
#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn a_path_that_matches_nothing_waits_and_a_malformed_one_fails() {
    let app = App::start();
    let bad = finish(app.spawn(&["watch", r"TP Worker(*)\Done", "--frames", "1"]));
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains(r"must start with `\`") && !bad.stderr.contains("terminal"),
        "{}",
        bad.stderr
    );
    let pane = Pane::start(
        &app,
        r"'\TP Worker(*)\Dome' '\TP Service\Queue length' --interval 0.25",
    );
    pane.wait_for("the other path drawn, this one not found now", |s| {
        s.contains(r"Not found now: \TP Worker(*)\Dome") && s.contains("42.000")
    });
    pane.keys(&["q"]);
    let screen = pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
    assert!(
        screen.contains(r"not found now: \TP Worker(*)\Dome (did you mean \TP Worker(*)\Don"),
        "{screen}"
    );
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn the_chart_holds_a_watch_lease_on_what_it_shows_until_it_quits() {
    let app = App::start();
    let events = app.prf.watch().events();
    let pane = Pane::start(&app, r"'\TP Service\Queue length' --interval 0.25");
    pane.wait_for("the legend", |s| {
        s.contains("Legend") && s.contains("42.000")
    });
    // The object's event and the counter's come in map order: wait for the counter's.
    let queue_event = || loop {
        let e = events
            .recv_timeout(SCREEN_WAIT)
            .expect("the app is told of Queue length");
        if e.is_for(tp::QUEUE) {
            return e;
        }
    };
    let first = queue_event();
    assert!(first.is_for(tp::QUEUE) && first.is_start(), "{first:?}");
    assert!(app.prf.watch().is_watched(tp::QUEUE));
    assert!(
        !app.prf.watch().is_watched(tp::JOBS),
        "only what the chart shows"
    );

    pane.keys(&["q"]);
    pane.wait_for("the exit", |s| s.contains("EXITED 0"));
    // Quitting ends the lease at once (no lapse to wait for).
    let stop = queue_event();
    assert!(stop.is_for(tp::QUEUE) && !stop.is_start(), "{stop:?}");
}

/// The legend row of the screen that names `instance` of `TP Churn`.
fn churn_row<'a>(screen: &'a str, instance: &str) -> Option<&'a str> {
    let name = format!(r"Churn({instance})\Value");
    screen.lines().find(|l| l.contains(&name))
}

/// Instances come and go, more than the legend has rows for: the live ones are listed first,
/// the gone ones collapsed into one row; the keys scroll the legend, chart or hide the selected
/// series, and show the gone ones.
#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn the_legend_scrolls_and_picks_the_charted_series() {
    let app = App::start();
    let add = |name: &str, value: i32| {
        let inst = app
            .prf
            .add_instance(tp::CHURN, name)
            .expect("add an instance");
        app.prf
            .get_ctr32(tp::VALUE, inst)
            .store(value, std::sync::atomic::Ordering::Relaxed);
        inst
    };
    let first: Vec<_> = (1..=20).map(|i| add(&format!("c{i:02}"), i)).collect();
    let pane = Pane::start(&app, r"'\TP Churn(*)\Value' --interval 0.25");
    pane.wait_for("the first instances in the legend", |s| {
        churn_row(s, "c01").is_some()
    });

    for inst in &first[..10] {
        app.prf.remove_instance(*inst).expect("remove an instance");
    }
    for i in 1..=6 {
        add(&format!("d{i:02}"), 100 + i);
    }
    // 16 live rows, then one row for the 10 gone.
    let screen = pane.wait_for("the live rows first, the gone ones collapsed", |s| {
        let header = s
            .lines()
            .position(|l| l.contains("Scale") && l.contains("Counter"));
        header.is_some_and(|h| {
            s.lines()
                .nth(h + 1)
                .is_some_and(|row| row.contains(r"Churn(c11)\Value"))
        }) && s.contains("Legend 1–8 of 17")
    });
    assert!(churn_row(&screen, "c01").is_none(), "{screen}");
    assert!(screen.lines().all(|l| l.chars().count() <= 80), "{screen}");

    pane.keys(&["Down", "Down", "PageDown"]);
    let screen = pane.wait_for("the next page of the legend", |s| {
        s.contains("Legend 9–16 of 17")
    });
    assert!(
        churn_row(&screen, "d01").is_some_and(|r| r.contains('■')),
        "{screen}"
    );
    assert!(churn_row(&screen, "c11").is_none(), "{screen}");

    // Space hides the selected series (the third of this page), `a` charts every live one.
    pane.keys(&["Space"]);
    pane.wait_for("the selected series hidden", |s| {
        churn_row(s, "d01").is_some_and(|r| r.contains('□'))
    });
    pane.keys(&["a"]);
    pane.wait_for("every live series charted", |s| {
        churn_row(s, "d01").is_some_and(|r| r.contains('■'))
    });

    pane.keys(&["End"]);
    pane.wait_for("the collapsed row at the end", |s| {
        s.contains("▸ 10 gone (g shows them)") && s.contains("of 17")
    });
    pane.keys(&["g"]);
    pane.keys(&["End"]);
    let screen = pane.wait_for("the gone series listed", |s| {
        churn_row(s, "c10").is_some_and(|r| r.contains("(gone)")) && s.contains("of 27")
    });
    // The last window: the gone rows from c03 to c10.
    assert!(screen.contains("Legend 20–27 of 27"), "{screen}");
    assert!(
        churn_row(&screen, "c03").is_some_and(|r| r.contains("(gone)")),
        "{screen}"
    );
    assert!(churn_row(&screen, "c02").is_none(), "{screen}");

    pane.keys(&["q"]);
    pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
}

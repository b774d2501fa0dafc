//! What the provider says while `prfmon watch` owns the terminal (here: the watched app was
//! killed, and the provider says its block has no data) never draws over the chart: the
//! provider hosts' stderr goes through prfmon's logger, which holds its lines while the chart
//! is on screen, shows the latest on the chart's status row, and writes them all after the
//! terminal is restored. A provider loaded into prfmon itself (`--in-process`) writes to
//! prfmon's own stderr, which `watch` takes over while the chart is on screen, with the same
//! result.

use crate::serve_common::setup;
use crate::watch::Pane;

use crate::sampling_app::shell_env;

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn an_app_killed_while_watched_leaves_the_chart_whole_and_its_message_on_the_status_row() {
    killed_while_watched("", "");
}

#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn an_in_process_providers_message_goes_to_the_status_row_too() {
    killed_while_watched("PRFDATA_PROVIDER_LOG=warn", "--in-process");
}

/// Watches the test app with `ENV prfmon watch ... ARGS`, kills the app, and checks that the
/// provider's message shows on the status row only, then after the chart.
fn killed_while_watched(env: &str, args: &str) {
    let setup = setup();
    let mut app = setup.start_app("static");
    let pane = Pane::start_with(
        &format!("{} {env}", shell_env(&setup.sandbox)),
        &format!(r"'\Serve Test Service\Queue length' --interval 0.25 {args}"),
    );
    pane.wait_for("the app's value in the legend", |s| {
        s.contains("Legend") && s.contains("42")
    });

    let child = app.child();
    child.kill().expect("kill the app");
    child.wait().expect("reap the app");
    pane.wait_for("the series marked gone", |s| s.contains("1 gone"));
    let screen = pane.wait_for("the provider's message on the status row", |s| {
        s.lines()
            .last()
            .is_some_and(|r| r.starts_with("prfdata-provider: app ServeTestApp: no data"))
    });
    // A few more samples, each of which could say more.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let later = pane.screen();
    for screen in [&screen, &later] {
        let rows: Vec<&str> = screen.lines().collect();
        assert!(
            rows.first()
                .is_some_and(|r| r.starts_with("┌ prfmon watch")),
            "the chart's top border is on row 0:\n{screen}"
        );
        assert_eq!(rows.len(), 24, "the chart fills the pane:\n{screen}");
        assert!(
            rows[22].starts_with('└') && rows[23].starts_with("prfdata-provider"),
            "the legend's bottom border above the status row:\n{screen}"
        );
        assert!(
            rows.iter().all(|r| r.chars().count() <= 80),
            "every row within 80 columns:\n{screen}"
        );
        assert_eq!(
            screen.matches("prfdata-provider").count(),
            1,
            "the provider's message on the status row only:\n{screen}"
        );
    }

    pane.keys(&["q"]);
    let after = pane.wait_for("watch's exit", |s| s.contains("EXITED 0"));
    assert!(
        after.contains("prfdata-provider: app ServeTestApp: no data"),
        "the provider's message, after the chart:\n{after}"
    );
}

/// A panic while the chart is on screen: the terminal is restored and the panic's message
/// reaches the real stderr (not the pipe `watch` reads fd 2 from while drawing), after the
/// messages held until then.
#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn a_panic_while_drawing_restores_the_terminal_and_its_message_reaches_stderr() {
    let setup = setup();
    let _app = setup.start_app("static");
    let pane = Pane::start_with(
        &shell_env(&setup.sandbox),
        r"'\Serve Test Service\Queue length' --interval 0.1 --panic-after 3",
    );
    let screen = pane.wait_for("watch's exit", |s| s.contains("EXITED"));
    assert!(!screen.contains("EXITED 0"), "{screen}");
    assert!(
        screen.contains("--panic-after 3: a panic while the chart is on screen"),
        "the panic's message on the real stderr:\n{screen}"
    );
    assert!(
        !screen.contains("Legend"),
        "the terminal restored:\n{screen}"
    );
}

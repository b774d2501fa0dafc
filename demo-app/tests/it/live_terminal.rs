//! `demo-app live` on a terminal, in a real 80×24 tmux pane: while `prfmon watch` owns the
//! terminal, what the service has to say (here: a second collector takes and drops a lease on
//! "Cache entries scanned") never draws over the chart; it is written to stderr, in order,
//! once the chart is gone and the terminal restored.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prfdata_testkit::tmux::{Pane, SCREEN_WAIT};
use prfdata_testkit::{ChildGuard, Sandbox};

use crate::live::programs;

/// The note the service writes when a collector starts watching "Cache entries scanned".
const LEASE_NOTE: &str = "a monitor watches \"Cache entries scanned\"";
/// The note it writes when the last one stops.
const LAPSE_NOTE: &str = "nobody watches \"Cache entries scanned\"";

/// What is wrong with `screen` as a whole chart, if anything: its top border on row 0, its
/// bottom border on the last row or the one above it (watch's status line), no note of the
/// service inside.
fn broken(screen: &str) -> Option<&'static str> {
    let rows: Vec<&str> = screen.lines().collect();
    if !rows.first().is_some_and(|r| r.starts_with('┌')) {
        Some("row 0 is not the chart's top border")
    } else if !rows.iter().rev().take(2).any(|r| r.starts_with('└')) {
        // The chart's bottom border, then watch's one-row status line.
        Some("neither of the last two rows is the chart's bottom border")
    } else if screen.contains("demo-app") {
        Some("a note of the service is on the chart")
    } else {
        None
    }
}

/// `prfmon typeperf` on "Cache entries scanned" for three samples, a second collector.
fn second_collector(bin: &Path, sandbox: &Sandbox) -> ChildGuard {
    let mut typeperf = Command::new(bin.join("prfmon"));
    sandbox.apply_env(&mut typeperf);
    typeperf
        .args(["typeperf", r"\PrfData Demo Service\Cache entries scanned"])
        .args(["-sc", "3"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = typeperf.spawn().expect("spawn prfmon typeperf");
    ChildGuard::new(child, "prfmon typeperf")
}

/// Captures the screen while `collector` runs and a little after (a few more frames); returns
/// the first capture that is not a whole chart, with what is wrong with it.
fn first_broken_screen(pane: &Pane, collector: &mut ChildGuard) -> Option<(&'static str, String)> {
    let deadline = Instant::now() + SCREEN_WAIT;
    let mut after: Option<Instant> = None;
    while after.is_none_or(|t| t.elapsed() < Duration::from_secs(2)) {
        let screen = pane.screen();
        if let Some(why) = broken(&screen) {
            return Some((why, screen));
        }
        if after.is_none() && collector.child().try_wait().expect("wait").is_some() {
            after = Some(Instant::now());
        }
        assert!(Instant::now() < deadline, "typeperf -sc 3 never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
#[cfg_attr(not(demo_app_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn a_collectors_lease_note_waits_until_the_live_chart_is_gone() {
    let sandbox = Sandbox::new();
    let root = sandbox.dir.path();
    let bin = programs(root);
    let pane = Pane::start(&format!(
        "PRFDATA_REGISTRY='{}' PRFDATA_SHM_DIR='{}' '{}' live --workers 2; \
         echo \"EXITED $?\"; sleep 120",
        sandbox.registry.display(),
        sandbox.shm.display(),
        bin.join("demo-app").display()
    ));
    pane.wait_for("the chart with the service's counters", |s| {
        s.contains("Legend") && s.contains("Jobs/sec") && broken(s).is_none()
    });

    let mut collector = second_collector(&bin, &sandbox);
    if let Some((why, screen)) = first_broken_screen(&pane, &mut collector) {
        panic!("{why}:\n{screen}");
    }

    pane.keys(&["q"]);
    let after = pane.wait_for("demo-app's exit", |s| s.contains("EXITED 0"));
    assert!(
        !after.contains("Legend"),
        "the chart is gone, the screen restored:\n{after}"
    );
    let at = |text: &str| {
        after
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} after the chart:\n{after}"))
    };
    assert!(
        at(LEASE_NOTE) < at(LAPSE_NOTE) && at(LAPSE_NOTE) < at("stopped after"),
        "the notes in the order they came, before the last line:\n{after}"
    );
}

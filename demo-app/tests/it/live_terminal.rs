//! `demo-app live` on a terminal, in a real 80×24 tmux pane: while `prfmon watch` owns the
//! terminal, what the service has to say (here: a second collector takes and drops a lease on
//! "Cache entries scanned") never draws over the chart; it is written to stderr, in order,
//! once the chart is gone and the terminal restored.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prfdata_testkit::{ChildGuard, Sandbox};

use crate::live::programs;

/// The longest the screen may take to show what a step waits for (the build of the first
/// frame loads the provider and collects once).
const SCREEN_WAIT: Duration = Duration::from_secs(30);
/// The note the service writes when a collector starts watching "Cache entries scanned".
const LEASE_NOTE: &str = "a monitor watches \"Cache entries scanned\"";
/// The note it writes when the last one stops.
const LAPSE_NOTE: &str = "nobody watches \"Cache entries scanned\"";

/// A tmux server of its own (socket in a temp folder, no configuration file) running one
/// command in an 80×24 pane; dropping it kills every process of the pane, then the server.
struct Pane {
    socket: String,
    _dir: tempfile::TempDir,
}

impl Pane {
    /// Runs `command` (a shell command line) in a new 80×24 pane.
    fn start(command: &str) -> Pane {
        let tmux = Command::new("tmux").arg("-V").output();
        assert!(
            tmux.as_ref().is_ok_and(|o| o.status.success()),
            "tmux cannot run ({tmux:?}), so this test cannot: install it (apt-get install tmux), \
             or rebuild without it (`cargo clean -p demo-app`) so that the test is reported ignored"
        );
        let dir = tempfile::Builder::new()
            .prefix("demo-app-live-")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("tmux").display().to_string();
        let pane = Pane { socket, _dir: dir };
        let status = Command::new("tmux")
            .args(["-S", &pane.socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "80", "-y", "24", command])
            .env_remove("TMUX")
            .status()
            .expect("run tmux");
        assert!(status.success(), "tmux new-session failed");
        pane
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-S", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Waits (bounded) until the screen satisfies `ok`; returns it.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + SCREEN_WAIT;
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let shells: Vec<i32> = self
            .tmux(&["list-panes", "-a", "-F", "#{pane_pid}"])
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        for pid in shells
            .iter()
            .flat_map(|&p| descendants(p))
            .chain(shells.clone())
        {
            // SAFETY: `kill` has no memory-safety preconditions; the pids are the pane's
            // processes, found a moment ago under the pane's shell.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = self.tmux(&["kill-server"]);
    }
}

/// Every process below `pid` (children, their children, ...), from `/proc/*/stat`.
fn descendants(pid: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((e.file_name().to_str()?.parse().ok()?, ppid))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| p),
        );
        i += 1;
    }
    found.split_off(1)
}

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

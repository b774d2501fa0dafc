//! A program in a real terminal: an 80×24 tmux pane on a tmux server of its own, for tests of
//! what a person sees (`prfmon watch`, `demo-app live`). Keys are typed with `send-keys`, the
//! screen is read with `capture-pane`, and every wait is bounded.
//!
//! The server's socket lives in a temp folder of the pane's own (never `/tmp/tmux-UID`), no
//! configuration file is read, and dropping the pane kills every process under it, then the
//! server, then removes the folder: also when the test fails.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the screen may take to show what a test waits for (the first frame of a chart
/// loads a provider and collects once; these machines are small and shared).
pub const SCREEN_WAIT: Duration = Duration::from_secs(30);

/// One shell command running in an 80×24 pane of a tmux server of its own.
///
/// # Examples
///
/// ```no_run
/// // Needs tmux on PATH.
/// let pane = prfdata_testkit::tmux::Pane::start("echo hello; sleep 60");
/// let screen = pane.wait_for("the greeting", |s| s.contains("hello"));
/// assert!(screen.starts_with("hello"));
/// ```
pub struct Pane {
    socket: String,
    _dir: tempfile::TempDir,
}

impl Pane {
    /// Runs `command` (a shell command line) in a new 80×24 pane.
    ///
    /// # Panics
    ///
    /// If tmux cannot run: a test that needs it was built because the build found it, so its
    /// absence now is a failure, not a pass (rebuild without tmux to have the test reported
    /// ignored).
    pub fn start(command: &str) -> Pane {
        let tmux = Command::new("tmux").arg("-V").output();
        assert!(
            tmux.as_ref().is_ok_and(|o| o.status.success()),
            "tmux cannot run ({tmux:?}), so this test cannot: install it (apt-get install tmux), \
             or rebuild the tests without it so that they are reported ignored"
        );
        let dir = tempfile::Builder::new()
            .prefix("tmux-pane-")
            .tempdir()
            .expect("temp dir for the tmux socket");
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

    /// Runs `tmux ARGS` against this pane's server; returns what it printed.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-S", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen as text, one line per row.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// Types `keys` (tmux key names: `q`, `Down`, `PageDown`, `C-c`, ...).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Waits, at most [`SCREEN_WAIT`], until the screen satisfies `ok`, and returns it; panics
    /// naming `what` and showing the last screen otherwise.
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
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

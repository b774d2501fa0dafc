//! Stopping `prfmon serve` as a terminal or a service manager does: a signal to its whole
//! process group (Ctrl-C sends SIGINT to the foreground group, `timeout` and systemd send
//! SIGTERM to the group). prfmon closes its providers and exits; a provider host is not hit by
//! the signal meant for prfmon, and no provider is disabled for it.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use crate::common::prfmon;
use crate::serve_common::{get, setup, Setup, WAIT};

/// How long prfmon gets to exit after the signal.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// `prfmon serve` as the leader of its own process group (as a shell starts a job), killed
/// with its group (SIGKILL) if the test ends before it does.
struct Job {
    child: Option<Child>,
    pgid: Pid,
    stderr: mpsc::Receiver<String>,
}

impl Job {
    /// Starts `prfmon serve` on a free loopback port; returns the job and the address.
    fn serve(setup: &Setup) -> (Self, std::net::SocketAddr) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_prfmon"));
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        setup.apply_env(&mut cmd);
        let mut child = cmd.spawn().expect("spawn prfmon serve");
        let pgid = Pid::from_raw(child.id() as i32).expect("a process id");
        let stderr = child.stderr.take().expect("serve's stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let job = Self {
            child: Some(child),
            pgid,
            stderr: lines,
        };
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = job
                .stderr
                .recv_timeout(left)
                .expect("prfmon serve printed its address in time");
            if let Some(rest) = line.strip_prefix("prfmon serve: listening on http://") {
                let addr = rest
                    .trim_end_matches("/metrics")
                    .parse()
                    .expect("an address");
                return (job, addr);
            }
        }
    }

    /// Sends `signal` to the whole process group, as a terminal or `timeout` does.
    fn signal_group(&self, signal: Signal) {
        rustix::process::kill_process_group(self.pgid, signal).expect("signal the group");
    }

    /// Waits (bounded) for prfmon to exit; returns its exit code and the rest of its stderr.
    fn wait(&mut self) -> (Option<i32>, String) {
        let child = self.child.as_mut().expect("a running job");
        let deadline = Instant::now() + EXIT_WAIT;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for prfmon serve") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "prfmon serve did not exit within {EXIT_WAIT:?} after the signal"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        self.child = None;
        // The reader thread ends at the pipe's EOF: the rest of the log is in the channel.
        let mut log = String::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            log.push_str(&line);
            log.push('\n');
        }
        (status.code(), log)
    }

    /// The provider hosts prfmon started (its child processes).
    fn hosts(&self) -> Vec<Pid> {
        let parent = self.pgid.as_raw_nonzero().get();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .flatten()
            .filter_map(|entry| {
                let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                // After the command name in parentheses: state, then the parent's pid.
                let ppid: i32 = stat
                    .rsplit(')')
                    .next()?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()?;
                (ppid == parent).then(|| Pid::from_raw(pid)).flatten()
            })
            .collect()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
            let _ = child.wait();
        }
    }
}

/// Who gets the signal that stops serve.
#[derive(Clone, Copy)]
enum Target {
    /// Serve's process group, as a terminal's Ctrl-C or `timeout` sends it.
    Group,
    /// Serve and each of its provider hosts at once, as systemd stops every process of a
    /// service's control group.
    ServeAndHosts,
}

/// Serves the test app, scrapes once (its provider is opened by then), sends `signal` to
/// `target` and checks that serve exited cleanly and disabled nothing.
fn stop_serve_with(signal: Signal, target: Target) {
    let setup = setup();
    let _app = setup.start_app("static");
    let (mut job, addr) = Job::serve(&setup);
    let scrape = get(addr, "/metrics");
    assert!(
        scrape.body.contains("serve_test_service"),
        "the app's counters are served: {}",
        scrape.body
    );

    match target {
        Target::Group => job.signal_group(signal),
        Target::ServeAndHosts => {
            let hosts = job.hosts();
            assert!(!hosts.is_empty(), "serve runs a provider host");
            for host in hosts {
                let _ = rustix::process::kill_process(host, signal);
            }
            rustix::process::kill_process(job.pgid, signal).expect("signal serve");
        }
    }
    let (code, log) = job.wait();

    assert_eq!(code, Some(0), "prfmon serve exits cleanly; its log:\n{log}");
    assert!(!log.contains("disabled"), "{log}");
    let perf = r"HKLM\SYSTEM\CurrentControlSet\Services\ServeTestApp\Performance";
    let q = prfmon(
        &setup.registry,
        &["reg", "query", perf, "/v", "Disable Performance Counters"],
    );
    assert_eq!(
        q.code, 1,
        "no Disable Performance Counters value: {}{}",
        q.stdout, q.stderr
    );
}

#[test]
fn ctrl_c_on_serve_disables_no_provider() {
    stop_serve_with(Signal::INT, Target::Group);
}

#[test]
fn sigterm_to_the_serve_group_disables_no_provider() {
    stop_serve_with(Signal::TERM, Target::Group);
}

#[test]
fn sigterm_to_serve_and_its_hosts_at_once_disables_no_provider() {
    stop_serve_with(Signal::TERM, Target::ServeAndHosts);
}

/// In their own process group, the hosts no longer get the signal that ends prfmon: they
/// still end with it when it is killed outright (their stdin's EOF).
#[test]
fn the_hosts_of_a_killed_serve_exit_too() {
    let setup = setup();
    let _app = setup.start_app("static");
    let (mut job, addr) = Job::serve(&setup);
    assert_eq!(get(addr, "/metrics").status, 200);
    let hosts = job.hosts();
    assert!(!hosts.is_empty(), "serve runs a provider host");

    rustix::process::kill_process(job.pgid, Signal::KILL).expect("kill serve");
    let _ = job.wait();

    // A zombie (exited, not yet reaped by its new parent) counts as gone.
    let alive = |pid: &Pid| {
        std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    prfdata_testkit::wait_until(WAIT, "the provider hosts exited", || {
        (!hosts.iter().any(alive)).then_some(())
    });
}

//! Real child processes, every wait on them bounded.
//!
//! - [`finish`] waits for a child (killing it after the bound) and gives its [`Run`].
//! - [`ChildGuard`] stops a long-running child (an app, a server) when the test ends, even
//!   when the test fails: SIGTERM first, so it can close what it holds, SIGKILL after a bound;
//!   meanwhile it can [`stop`](ChildGuard::stop) the child (`SIGSTOP`) and let it go on.
//! - [`self_command`] re-executes the running test binary to run one test, the entry point of
//!   a child role (an app publishing counters in its own process); [`test_path!`](crate::test_path!) names that
//!   test from the module it is in, as libtest does. The child says it is ready through a file
//!   ([`ready`]). [`in_new_pid_namespace`] runs a command as a container would, in a pid
//!   namespace of its own.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long [`ChildGuard`] waits for a child to end on SIGTERM before it kills it.
pub const TERM_WAIT: Duration = Duration::from_secs(10);

/// What a finished process printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The exit status, or -1 when a signal ended it.
    pub code: i32,
    /// Its standard output, lossily decoded.
    pub stdout: String,
    /// Its standard error, lossily decoded.
    pub stderr: String,
}

/// Waits for `child` to end, at most `limit` (then kills it and panics), and collects what it
/// wrote to piped stdout / stderr.
///
/// The output is read only once the child has ended: a child that fills a pipe (64 KiB) waits
/// for its reader and is then killed at the bound, so give a chatty child a file instead.
///
/// # Examples
///
/// ```
/// use std::process::{Command, Stdio};
/// let child = Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"])
///     .stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
/// let run = prfdata_testkit::finish(child, prfdata_testkit::WAIT);
/// assert_eq!((run.code, run.stdout.as_str(), run.stderr.as_str()), (3, "out\n", "err\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn finish(mut child: Child, limit: Duration) -> Run {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("process {} did not finish within {limit:?}", child.id());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("cannot wait for process {}: {e}", child.id()),
        }
    }
    let out = child
        .wait_with_output()
        .expect("the output of a process that ended");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A child process stopped when dropped: SIGTERM, up to [`TERM_WAIT`] to end, then SIGKILL
/// (saying so on stderr, with the child's name).
///
/// # Examples
///
/// ```
/// use std::process::Command;
/// let guard = prfdata_testkit::ChildGuard::new(Command::new("sleep").arg("600").spawn()?, "sleep");
/// assert!(guard.id() > 0);
/// drop(guard); // SIGTERM ends `sleep` at once
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
    name: String,
}

impl ChildGuard {
    /// Guards `child`, called `name` in messages.
    pub fn new(child: Child, name: impl Into<String>) -> Self {
        Self {
            child: Some(child),
            name: name.into(),
        }
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The child, to take its pipes or wait for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::{Command, Stdio};
    /// let mut guard = prfdata_testkit::ChildGuard::new(
    ///     Command::new("true").stdout(Stdio::piped()).spawn()?, "true");
    /// assert!(guard.child().stdout.take().is_some());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn child(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("a guarded child until the guard drops")
    }

    /// Stops the child (`SIGSTOP`) and waits, at most `limit` (else panics), until every one of
    /// its threads is stopped (state `T` in `/proc/PID/task/*/stat`): after this, nothing the
    /// child was doing goes on, not even a step already under way when the signal came.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::Command;
    /// let guard = prfdata_testkit::ChildGuard::new(Command::new("sleep").arg("600").spawn()?, "sleep");
    /// guard.stop(prfdata_testkit::WAIT);
    /// guard.resume();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop(&self, limit: Duration) {
        self.signal(rustix::process::Signal::STOP);
        let pid = self.id();
        let stopped = || {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                return None;
            };
            let all = tasks.flatten().all(|t| {
                std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('T')
                })
            });
            all.then_some(())
        };
        crate::wait_until(limit, &format!("{} stopped", self.name), stopped);
    }

    /// Lets a child [`stop`](Self::stop)ped go on (`SIGCONT`).
    pub fn resume(&self) {
        self.signal(rustix::process::Signal::CONT);
    }

    fn signal(&self, signal: rustix::process::Signal) {
        if let Some(pid) = i32::try_from(self.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        if let Some(pid) = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            // A stopped child takes the SIGTERM only once it runs again.
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::CONT);
        }
        let end = Instant::now() + TERM_WAIT;
        while Instant::now() < end {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("{} did not stop on SIGTERM: killed", self.name);
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The full libtest name of the test function `name` in the module this is written in: the
/// module path without the crate's name (`serve::app_entry` for `app_entry` in module `serve`
/// of the test binary `it`), which is what [`self_command`] needs to run only that test.
///
/// # Examples
///
/// ```
/// mod serve {
///     pub fn entry() -> String {
///         prfdata_testkit::test_path!("app_entry")
///     }
/// }
/// assert_eq!(serve::entry(), "serve::app_entry");
/// ```
#[macro_export]
macro_rules! test_path {
    ($name:expr) => {
        $crate::process::test_path_in(::std::module_path!(), $name)
    };
}

/// [`test_path!`](crate::test_path!)'s work: `name` under `module_path` less its first segment (the crate).
///
/// # Examples
///
/// ```
/// use prfdata_testkit::process::test_path_in;
/// assert_eq!(test_path_in("it::serve", "app_entry"), "serve::app_entry");
/// assert_eq!(test_path_in("demo", "app_entry"), "app_entry");
/// ```
pub fn test_path_in(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_owned(),
    }
}

/// A command that runs this test binary again, running only the test `test` (a full name,
/// see [`test_path!`](crate::test_path!)), ignored or not, on one thread, output not captured: the usual way to
/// give a test a real second process (an app) without a second program. The child's stdin
/// is `/dev/null`; give it the environment that tells it which role to play.
///
/// # Examples
///
/// ```no_run
/// // In module `end_to_end` of an integration test binary:
/// #[test]
/// #[ignore = "entry point for the app child process"]
/// fn app_child() {
///     if std::env::var_os("MY_APP_ROLE").is_none() {
///         return;
///     }
///     // ... publish counters, say ready, wait to be killed ...
/// }
///
/// let child = prfdata_testkit::self_command(&prfdata_testkit::test_path!("app_child"))
///     .env("MY_APP_ROLE", "1")
///     .spawn()?;
/// let _app = prfdata_testkit::ChildGuard::new(child, "the app");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn self_command(test: &str) -> Command {
    let exe = std::env::current_exe().expect("the path of the running test binary");
    let mut command = Command::new(exe);
    command
        .args([
            "--exact",
            test,
            "--include-ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .stdin(Stdio::null());
    command
}

/// A child tells its parent it is ready through a file that appears whole (written aside,
/// then renamed into place), with what the parent needs to know as its content.
pub mod ready {
    use std::path::Path;
    use std::time::Duration;

    /// Publishes `contents` at `path` in one step (a rename), for [`wait`].
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_testkit::{ready, WAIT};
    /// let dir = tempfile::tempdir()?;
    /// let file = dir.path().join("ready");
    /// ready::publish(&file, b"pid 42")?;
    /// assert_eq!(ready::wait(&file, WAIT), b"pid 42");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn publish(path: &Path, contents: &[u8]) -> std::io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        std::fs::write(&tmp, contents)?;
        std::fs::rename(&tmp, path)
    }

    /// Waits (at most `limit`, else panics) for the file [`publish`] makes, and returns its
    /// contents.
    pub fn wait(path: &Path, limit: Duration) -> Vec<u8> {
        crate::wait_until(limit, &format!("ready file {}", path.display()), || {
            std::fs::read(path).ok()
        })
    }
}

/// `command` run in a pid namespace of its own, as a container runs its processes: util-linux
/// `unshare --pid --fork --mount-proc --kill-child` starts it as process 1 of a new pid
/// namespace with that namespace's `/proc` (so it sees none of the processes outside, and they
/// see it under another pid), and kills it if `unshare` dies. Its program, arguments,
/// environment and folder are `command`'s; set stdout and stderr on the result (stdin is
/// `/dev/null`). `unshare` ignores SIGTERM, so a [`ChildGuard`] over it ends it with SIGKILL
/// after [`TERM_WAIT`]: kill it yourself to end it sooner.
///
/// Panics, saying why, where that is not possible (no `unshare`, or not allowed to create a
/// pid namespace: it needs root, or unprivileged user namespaces): a test that needs one fails
/// with the reason instead of passing without having run.
///
/// # Examples
///
/// ```no_run
/// let mut ps = std::process::Command::new("ps");
/// ps.arg("-e");
/// let out = prfdata_testkit::process::in_new_pid_namespace(&ps).output()?;
/// assert!(String::from_utf8_lossy(&out.stdout).lines().count() <= 3, "only itself");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn in_new_pid_namespace(command: &Command) -> Command {
    const UNSHARE: [&str; 4] = ["--pid", "--fork", "--mount-proc", "--kill-child"];
    let probe = Command::new("unshare")
        .args(UNSHARE)
        .arg("true")
        .stdin(Stdio::null())
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "this test needs a pid namespace of its own, and `unshare {}` failed ({}): {}; run \
             it as root (or where unprivileged user namespaces are allowed)",
            UNSHARE.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("this test needs util-linux `unshare` to make a pid namespace: {e}"),
    }
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(UNSHARE)
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped.stdin(Stdio::null());
    wrapped
}

//! The collector's handle on one provider host process: spawn it, make bounded calls, kill it
//! when a call times out or the host dies.
//!
//! A reader thread turns the host's stdout into a channel of responses, so every wait is a
//! `recv_timeout`: a provider that hangs costs the collector its timeout, never more.

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::host_user::HostUser;
use super::perfhost::{FD_FLAG, HOST_SUBCOMMAND};
use super::protocol::{
    read_response, write_frame, ProtocolError, Request, Response, PROTOCOL_VERSION,
};
use crate::trust::{OpenedLibrary, LIBRARY_FD};

/// How long a host that was asked to exit (its stdin closed) gets before it is killed: Close
/// has run by then, so this only covers the host's own exit (unloading the library).
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Set once this process was asked to stop by a signal (see [`note_stop_signal`]).
static STOP_SIGNALLED: AtomicBool = AtomicBool::new(false);

/// Records that this process was asked to stop by a signal (SIGINT, SIGTERM or SIGHUP), for
/// its signal handler to call. A provider host that dies of one of those signals while the
/// collector closes it afterwards was stopped with the collector (a service manager signals
/// every process of a service at once), not by a fault of its provider: see
/// [`HostProcess::stopped_with_collector`]. Async-signal-safe (one atomic store).
///
/// # Examples
///
/// ```
/// prfmon::collector::host::note_stop_signal();
/// assert!(prfmon::collector::host::stop_signalled());
/// ```
pub fn note_stop_signal() {
    STOP_SIGNALLED.store(true, Ordering::SeqCst);
}

/// Whether [`note_stop_signal`] was called in this process.
pub fn stop_signalled() -> bool {
    STOP_SIGNALLED.load(Ordering::SeqCst)
}

/// The `log` target of a provider host's own output (its stderr: the provider library's
/// messages and the host's), relayed a line at a time by [`HostProcess::spawn`]. A logger
/// writes such a line as it is: it carries its own prefix (`prfdata-provider: `, `prfmon: `).
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::collector::host::HOST_OUTPUT_TARGET, "prfmon::provider-host");
/// ```
pub const HOST_OUTPUT_TARGET: &str = "prfmon::provider-host";

/// The longest line of a host's output relayed as one record; a longer one comes in pieces.
const MAX_OUTPUT_LINE: u64 = 4096;

/// The thread that relays the host's stderr, a line at a time, as `warn` records of target
/// [`HOST_OUTPUT_TARGET`] (so the collector's logger decides where it goes: stderr, the
/// system log, or held while a program draws on the terminal); to this process's stderr when
/// no logger takes warnings. Ends at the pipe's EOF, when the host exits; the channel
/// returned disconnects then.
fn relay_output(stderr: ChildStderr) -> std::io::Result<Receiver<()>> {
    use std::io::{BufRead, Read, Write};
    let mut stderr = std::io::BufReader::new(stderr);
    let (done, ended) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("prfmon-host-output".into())
        .spawn(move || {
            let _done = done;
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut stderr)
                    .take(MAX_OUTPUT_LINE)
                    .read_until(b'\n', &mut line)
                {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches('\n');
                if log::log_enabled!(target: HOST_OUTPUT_TARGET, log::Level::Warn) {
                    log::warn!(target: HOST_OUTPUT_TARGET, "{text}");
                } else {
                    let _ = std::io::stderr().lock().write_all(&line);
                }
            }
        })?;
    Ok(ended)
}

/// How long a reaped host's last lines of output may take to be relayed (a process the host
/// started may hold its stderr open: this bounds the wait for it).
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);

/// A call to a host failed.
///
/// # Examples
///
/// ```
/// use prfmon::collector::host::HostError;
/// let e = HostError::Timeout { timeout: std::time::Duration::from_millis(500) };
/// assert_eq!(e.to_string(), "no answer within 500 ms");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The host executable could not be started (or could not take on its user).
    #[error("cannot start the provider host {}{as_user}: {source}", exe.display())]
    Spawn {
        /// The executable.
        exe: PathBuf,
        /// ` as user NAME (uid N)` when it was to run as a [`HostUser`], else empty.
        as_user: String,
        /// Why.
        source: std::io::Error,
    },
    /// No response in time; the host was killed.
    #[error("no answer within {} ms", timeout.as_millis())]
    Timeout {
        /// The time allowed.
        timeout: Duration,
    },
    /// The host exited or closed its pipe.
    #[error("the provider host {how}")]
    Died {
        /// How it ended, e.g. `was killed by signal 11 (SIGSEGV)`.
        how: String,
    },
    /// The executable is not a provider host speaking this protocol (it did not say Hello).
    #[error("{} is not a prfmon provider host: {reason}", exe.display())]
    NotAHost {
        /// The executable.
        exe: PathBuf,
        /// What it did instead.
        reason: String,
    },
    /// The host could not load the library.
    #[error("{message}")]
    LoadFailed {
        /// dlopen's message.
        message: String,
    },
    /// The host sent something that is not a valid response.
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
}

/// A running provider host.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use prfmon::collector::host::HostProcess;
/// use prfmon::collector::library::EntryNames;
/// use prfmon::collector::protocol::{Request, Response};
///
/// let exe = prfmon::collector::default_host_exe();
/// let policy = prfmon::trust::TrustPolicy::new(Vec::<std::path::PathBuf>::new());
/// let library = policy.open_library("/opt/app/libperf.so".as_ref())?;
/// let mut host = HostProcess::spawn(&exe, &library, None, Duration::from_secs(10))?;
/// let open = Request::Open {
///     slot: 0,
///     names: EntryNames::new(Some("OpenPerformanceData"), "CollectPerformanceData", None),
///     export: Vec::new(),
/// };
/// assert!(matches!(host.call(&open, Duration::from_secs(10))?, Response::Opened { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct HostProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    responses: Receiver<Result<Response, ProtocolError>>,
    /// The buffer size of the outstanding Collect (`None`: the outstanding request is not a
    /// Collect), for the reader thread to hold its data frame to. Set before each request is
    /// sent: one request is outstanding at a time, and a timeout kills the host.
    collect_buffer: Arc<Mutex<Option<u32>>>,
    dead: bool,
    /// How the host ended, once it was found dead and reaped (not when prfmon killed it).
    exit: Option<ExitStatus>,
    /// Disconnects when the host's output is relayed to its end (see [`relay_output`]).
    output: Option<Receiver<()>>,
}

/// The command that starts a host for `library` (its descriptor as fd 3), as `user` when
/// given: see [`HostProcess::spawn`].
fn host_command(exe: &Path, library: &OpenedLibrary, user: Option<&HostUser>) -> Command {
    let fd = library.file().as_raw_fd();
    // Everything the child needs is made here: between fork and exec it may not allocate.
    let credentials: Option<(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)> =
        user.map(|u| (u.uid(), u.gid(), u.groups().to_vec()));
    let mut command = Command::new(exe);
    command
        .arg(HOST_SUBCOMMAND)
        .arg(FD_FLAG)
        .arg(LIBRARY_FD.to_string())
        .arg(library.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a signal meant for the collector's group (a terminal's
        // Ctrl-C, `timeout`'s SIGTERM) does not kill the host in the middle of Close. The
        // host still ends with the collector: at its stdin's EOF, or when its parent changes
        // (see `perfhost`).
        .process_group(0);
    // A `dlopen`ed prfdata provider logs to stderr only when asked (its own copy of `log`
    // is out of reach of this process's logger): ask for its warnings unless told otherwise.
    if std::env::var_os("PRFDATA_PROVIDER_LOG").is_none() {
        command.env("PRFDATA_PROVIDER_LOG", "warn");
    }
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it makes only the system calls dup2, fcntl,
    // setgroups, setgid and setuid, on data made before the fork (`fd`, `credentials`),
    // allocates nothing, and reports failure through `last_os_error` (errno, no
    // allocation), which std turns into the spawn's error.
    unsafe {
        command.pre_exec(move || {
            if fd == LIBRARY_FD {
                // Already in place: only clear its close-on-exec flag.
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, LIBRARY_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some((uid, gid, groups)) = &credentials {
                if libc::setgroups(groups.len(), groups.as_ptr()) == -1
                    || libc::setgid(*gid) == -1
                    || libc::setuid(*uid) == -1
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    };
    command
}

/// The thread that reads the host's responses from `stdout` (the data frame of a Collect
/// held to the buffer size `outstanding` names) into the channel returned.
fn read_responses(
    stdout: ChildStdout,
    outstanding: Arc<Mutex<Option<u32>>>,
) -> std::io::Result<Receiver<Result<Response, ProtocolError>>> {
    // A response and the data frame after it come in one read when they are small.
    let mut stdout = std::io::BufReader::with_capacity(64 * 1024, stdout);
    let (tx, responses) = mpsc::channel();
    std::thread::Builder::new()
        .name("prfmon-host-reader".into())
        .spawn(move || loop {
            let buffer_len = || {
                outstanding
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
            };
            match read_response(&mut stdout, buffer_len) {
                Ok(Some(r)) => {
                    if tx.send(Ok(r)).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        })?;
    Ok(responses)
}

impl HostProcess {
    /// Starts `exe __provider-host --fd 3 LIBRARY` with `library`'s descriptor as its fd 3
    /// (the host loads the file the collector checked, not whatever its path names later),
    /// as `user` when given (supplementary groups, group, then user, set before `exec`), and
    /// waits up to `timeout` for its [`Response::Hello`], then up to `timeout` again for it
    /// to load the library ([`Response::Ready`]). An executable that does not say Hello is
    /// [`HostError::NotAHost`]; a library that cannot be loaded comes back as
    /// [`HostError::LoadFailed`] with dlopen's message; a library whose loading hangs or kills
    /// the host as [`HostError::Timeout`] or [`HostError::Died`].
    pub fn spawn(
        exe: &Path,
        library: &OpenedLibrary,
        user: Option<&HostUser>,
        timeout: Duration,
    ) -> Result<Self, HostError> {
        let as_user = user.map_or_else(String::new, |u| {
            format!(" as user {} (uid {})", u.name(), u.uid())
        });
        let spawn_error = |source| HostError::Spawn {
            exe: exe.to_path_buf(),
            as_user: as_user.clone(),
            source,
        };
        let mut command = host_command(exe, library, user);
        let mut child = command.spawn().map_err(spawn_error)?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            return Err(HostError::Died {
                how: "has no stdout pipe".into(),
            });
        };
        let output = match child.stderr.take() {
            Some(stderr) => Some(relay_output(stderr).map_err(spawn_error)?),
            None => None,
        };
        let collect_buffer = Arc::new(Mutex::new(None));
        let responses = read_responses(stdout, Arc::clone(&collect_buffer)).map_err(spawn_error)?;
        let mut host = Self {
            child,
            stdin,
            responses,
            collect_buffer,
            dead: false,
            exit: None,
            output,
        };
        host.handshake(exe, timeout)?;
        Ok(host)
    }

    /// Waits up to `timeout` for the host's Hello, then up to `timeout` again for Ready (the
    /// library loaded); see [`HostProcess::spawn`].
    fn handshake(&mut self, exe: &Path, timeout: Duration) -> Result<(), HostError> {
        let not_a_host = |reason: String| HostError::NotAHost {
            exe: exe.to_path_buf(),
            reason,
        };
        match self.receive(timeout) {
            Ok(Response::Hello {
                version: PROTOCOL_VERSION,
            }) => {}
            Ok(other) => {
                self.kill();
                return Err(not_a_host(format!("it sent {other:?}")));
            }
            Err(e) => return Err(not_a_host(e.to_string())),
        }
        match self.receive(timeout)? {
            Response::Ready => Ok(()),
            Response::Failed { message } => {
                self.reap();
                Err(HostError::LoadFailed { message })
            }
            other => {
                self.kill();
                Err(HostError::Died {
                    how: format!("sent {other:?} instead of Ready"),
                })
            }
        }
    }

    /// Sends `request` and waits up to `timeout` for its response. On a timeout or a dead
    /// host the host is killed (if needed) and reaped; the handle is then [`dead`](Self::is_dead).
    pub fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, HostError> {
        if self.dead {
            return Err(HostError::Died {
                how: "was already stopped".into(),
            });
        }
        let buffer_len = match request {
            Request::Collect { buffer_len, .. } => Some(*buffer_len),
            Request::Open { .. } | Request::Close { .. } => None,
        };
        *self
            .collect_buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = buffer_len;
        let sent = match self.stdin.as_mut() {
            Some(stdin) => write_frame(stdin, request),
            None => Err(ProtocolError::Truncated),
        };
        if sent.is_err() {
            // A broken pipe: the host is gone. Report how it ended.
            return Err(self.died());
        }
        self.receive(timeout)
    }

    /// Whether the host was killed or found dead.
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// Whether the host was found dead of SIGINT, SIGTERM or SIGHUP after this process was
    /// asked to stop by a signal ([`note_stop_signal`]): it went with the collector, so
    /// closing it is no fault of its provider.
    pub fn stopped_with_collector(&self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        let by_stop_signal = self
            .exit
            .and_then(|s| s.signal())
            .is_some_and(|sig| sig == libc::SIGINT || sig == libc::SIGTERM || sig == libc::SIGHUP);
        by_stop_signal && stop_signalled()
    }

    fn receive(&mut self, timeout: Duration) -> Result<Response, HostError> {
        match self.responses.recv_timeout(timeout) {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => {
                self.kill();
                Err(HostError::Protocol(e))
            }
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                Err(HostError::Timeout { timeout })
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.died()),
        }
    }

    /// The host closed its stdout: wait (bounded) for its exit status and describe it.
    fn died(&mut self) -> HostError {
        let how = self.reap();
        HostError::Died { how }
    }

    /// Waits up to [`EXIT_GRACE`] for the host to exit, killing it after that; returns how
    /// it ended.
    fn reap(&mut self) -> String {
        self.dead = true;
        self.stdin = None;
        let deadline = Instant::now() + EXIT_GRACE;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.exit = Some(status);
                    self.drain_output();
                    return describe_exit(status);
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) | Err(_) => {
                    self.kill();
                    return "closed its pipe and was killed".into();
                }
            }
        }
    }

    /// Kills and reaps the host.
    fn kill(&mut self) {
        self.dead = true;
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.drain_output();
    }

    /// Waits (at most [`OUTPUT_DRAIN`]) until the exited host's last output is relayed, so
    /// that what it said comes before what the collector says about its end.
    fn drain_output(&mut self) {
        if let Some(output) = self.output.take() {
            let _ = output.recv_timeout(OUTPUT_DRAIN);
        }
    }

    /// Asks the host to exit (closes its stdin) and reaps it, killing it after
    /// [`EXIT_GRACE`].
    pub fn shutdown(mut self) {
        if !self.dead {
            self.reap();
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if !self.dead {
            self.reap();
        }
    }
}

/// Describes how a host ended: `exited with status 1`, `was killed by signal 6 (SIGABRT)`.
///
/// # Examples
///
/// ```
/// use std::os::unix::process::ExitStatusExt;
/// let status = std::process::ExitStatus::from_raw(11);
/// assert_eq!(prfmon::collector::host::describe_exit(status), "was killed by signal 11 (SIGSEGV)");
/// ```
pub fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(sig) => {
            let name = match sig {
                4 => " (SIGILL)",
                5 => " (SIGTRAP)",
                6 => " (SIGABRT)",
                7 => " (SIGBUS)",
                8 => " (SIGFPE)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                _ => "",
            };
            format!("was killed by signal {sig}{name}")
        }
        None => format!("ended ({status})"),
    }
}

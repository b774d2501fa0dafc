//! The provider host process: what runs inside `prfmon __provider-host --fd 3 LIBRARY`, as
//! Windows runs untrusted providers inside perfhost.exe.
//!
//! It loads one library (the file open on fd 3, which the collector checked and opened: see
//! [`crate::trust`]; `LIBRARY` only names it in messages; without `--fd`, the file `LIBRARY`
//! names), then answers [`Request`]s from its stdin on its stdout until stdin
//! closes. A provider that hangs, panics, aborts or crashes takes down only this process; the
//! collector sees the pipe close or its timeout expire, kills the host and disables the
//! provider.
//!
//! Before loading the library the host moves the protocol off fds 0 and 1 (onto private
//! duplicates) and points fd 0 at `/dev/null` and fd 1 at stderr, so a provider that reads
//! stdin or prints to stdout cannot corrupt the protocol.
//!
//! What goes wrong in the host is logged through the [`log`] facade: the `prfmon` binary
//! installs its stderr logger before it runs the host, and the host's stderr is the
//! collector's. A provider library has its own copy of `log` (it is a cdylib) and writes its
//! messages itself.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::library::{EntryPoints, ProviderLibrary};
use super::protocol::{
    read_frame, write_collected, write_frame, ProtocolError, Request, Response, PROTOCOL_VERSION,
};

/// The hidden `prfmon` subcommand that runs a host.
pub const HOST_SUBCOMMAND: &str = "__provider-host";

/// The host's option that names the descriptor its library is open on.
pub const FD_FLAG: &str = "--fd";

/// How often the host checks that the collector that started it is still alive.
pub const PARENT_CHECK: std::time::Duration = std::time::Duration::from_millis(250);

/// Ends the host when its parent (the collector) is gone, even while a provider call hangs:
/// the collector closing the pipe is not enough, since a hung provider never reads it again.
///
/// A polling thread rather than `PR_SET_PDEATHSIG`, which fires when the *thread* that
/// spawned the host exits, and a collector may outlive that thread.
fn exit_with_parent() {
    let parent = rustix::process::getppid();
    let _ = std::thread::Builder::new()
        .name("prfmon-host-watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(PARENT_CHECK);
            if rustix::process::getppid() != parent {
                std::process::exit(3);
            }
        });
}

/// Takes the protocol's pipes off fds 0 and 1 and returns them.
fn protocol_pipes() -> std::io::Result<(File, File)> {
    let input = File::from(rustix::io::dup(std::io::stdin())?);
    let output = File::from(rustix::io::dup(std::io::stdout())?);
    let null = File::open("/dev/null")?;
    rustix::stdio::dup2_stdin(&null)?;
    rustix::stdio::dup2_stdout(std::io::stderr())?;
    Ok((input, output))
}

/// Runs the host for `library` until its stdin closes. Exit codes: 0 after a clean end,
/// 1 if the library could not be loaded, 2 on a protocol error, 3 when the collector that
/// started it died (checked every [`PARENT_CHECK`]).
///
/// # Examples
///
/// ```no_run
/// // In prfmon's main, for `prfmon __provider-host LIBRARY`:
/// let code = prfmon::collector::perfhost::run_host(std::path::Path::new("/opt/app/libperf.so"));
/// # let _ = code;
/// ```
pub fn run_host(library: &Path) -> ExitCode {
    run(library, None)
}

/// Runs the host from its command line after the subcommand: `[--fd N] LIBRARY`.
///
/// # Examples
///
/// ```no_run
/// // In prfmon's main, for `prfmon __provider-host --fd 3 /opt/app/libperf.so`:
/// let args = ["--fd", "3", "/opt/app/libperf.so"].map(std::ffi::OsString::from);
/// let code = prfmon::collector::perfhost::run_host_args(args);
/// # let _ = code;
/// ```
pub fn run_host_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    match args.as_slice() {
        [library] => run_host(Path::new(library)),
        [flag, fd, library] if flag == FD_FLAG => match fd.to_str().and_then(|f| f.parse().ok()) {
            Some(fd) => run(Path::new(library), Some(fd)),
            None => usage(),
        },
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    log::error!("usage: prfmon {HOST_SUBCOMMAND} [{FD_FLAG} N] LIBRARY (started by the collector)");
    ExitCode::from(2)
}

fn run(library: &Path, fd: Option<i32>) -> ExitCode {
    match serve(library, fd) {
        Ok(code) => code,
        Err(e) => {
            log::error!("provider host ({}): {e}", library.display());
            ExitCode::from(2)
        }
    }
}

/// Loads `library`: from descriptor `fd` when given, else from its path.
fn load(library: &Path, fd: Option<i32>) -> Result<ProviderLibrary, String> {
    let Some(fd) = fd else {
        // SAFETY: the collector starts a host only for a library that a service's Performance
        // key names as its provider, which is the trust perflib gives a Library value.
        // Whatever the library does wrong happens in this process, which exists to contain it.
        return unsafe { ProviderLibrary::load(library) }.map_err(|e| e.to_string());
    };
    // SAFETY: fcntl(F_GETFD) only asks whether `fd` is open; any integer is allowed.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Err(format!(
            "no provider library is open on descriptor {fd} ({}): {}",
            library.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `fd` is open (checked above) and was passed to this process by the collector
    // for its library; nothing else in this process owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // The loader re-opens the file through /proc/self/fd as this process's user: say so
    // plainly when that user (a --host-user) may not read it.
    if let Err(e) = File::open(format!("/proc/self/fd/{fd}")) {
        return Err(format!(
            "the provider host runs as uid {}, which cannot read provider library {}: {e}; make \
             the library readable by that user (--host-user), or collect without --host-user",
            rustix::process::geteuid().as_raw(),
            library.display()
        ));
    }
    // SAFETY: as for a load from the path (above): the collector checked this file and
    // names it as the service's provider.
    let loaded = unsafe { ProviderLibrary::load_descriptor(owned.as_fd(), library) };
    loaded.map_err(|e| e.to_string())
}

fn serve(library: &Path, fd: Option<i32>) -> Result<ExitCode, ProtocolError> {
    exit_with_parent();
    let (input, output) = protocol_pipes()?;
    let mut input = BufReader::new(input);
    let mut output = BufWriter::new(output);
    write_frame(
        &mut output,
        &Response::Hello {
            version: PROTOCOL_VERSION,
        },
    )?;
    let lib = match load(library, fd) {
        Ok(lib) => Arc::new(lib),
        Err(message) => {
            write_frame(&mut output, &Response::Failed { message })?;
            return Ok(ExitCode::from(1));
        }
    };
    write_frame(&mut output, &Response::Ready)?;
    let mut slots: HashMap<u32, EntryPoints> = HashMap::new();
    // Collect's buffer, kept from one call to the next (a host serves one service).
    let mut buffer: Vec<u64> = Vec::new();
    let unknown = |slot| Response::Failed {
        message: format!("no service is open in slot {slot}"),
    };
    while let Some(request) = read_frame::<Request>(&mut input)? {
        let response = match request {
            // SAFETY: as for the load: the service's Open / Collect / Close values name
            // perflib entry points of this provider.
            Request::Open {
                slot,
                names,
                export,
            } => match unsafe { lib.entry_points(&names) } {
                Ok(entry) => {
                    let status = entry.open(&export);
                    slots.insert(slot, entry);
                    Response::Opened { slot, status }
                }
                Err(e) => Response::Failed {
                    message: e.to_string(),
                },
            },
            Request::Collect {
                slot,
                value,
                buffer_len,
            } => match slots.get(&slot) {
                Some(entry) => {
                    // The output goes out from Collect's buffer as it is, in its own frame.
                    let (raw, data) = entry.collect_in(&value, buffer_len, &mut buffer);
                    write_collected(&mut output, slot, &raw, data)?;
                    continue;
                }
                None => unknown(slot),
            },
            Request::Close { slot } => match slots.remove(&slot) {
                Some(entry) => Response::Closed {
                    slot,
                    status: entry.close(),
                },
                None => unknown(slot),
            },
        };
        write_frame(&mut output, &response)?;
    }
    Ok(ExitCode::SUCCESS)
}

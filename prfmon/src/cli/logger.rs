//! Where the libraries' messages go: the `log` records of `prfmon`'s library, `prfdata` and
//! the registry (a provider disabled, a service skipped, a duplicate object), once per
//! condition, to stderr as `prfmon: <message>` or to the system log (the event log perflib's
//! providers report to).
//!
//! # Once per condition
//!
//! A message is written the first time it is logged; the same message (same level, source and
//! text: the same service with the same problem) again is dropped for the life of the process,
//! so that a provider failing on every Collect of a long `serve` or `typeperf` is reported
//! once, not once per collection ("How a performance DLL interfaces with a monitor": "do not flood
//! the event log"). The memory is bounded ([`MAX_CONDITIONS`]).
//!
//! # Destination
//!
//! `--log-to stderr|syslog` chooses. Without it: the system log for `prfmon serve` (a
//! service, whose stderr nobody reads), stderr for every other command (someone is
//! watching). The system log is the datagram socket `/dev/log` (journald's or rsyslog's;
//! [`SYSLOG_SOCKET_ENV`] names another, for tests), one datagram per message in syslog(3)'s
//! local format, `<PRI>prfmon[PID]: message`, facility `daemon` for serve and `user`
//! otherwise. When no system log listens there, messages go to stderr, saying so once.
//!
//! The choice is passed on in the environment ([`DEST_ENV`], [`PROVIDER_DEST_ENV`]), so that
//! the provider host processes (`prfmon __provider-host`) and a provider library loaded by
//! them or in process write to the same place.
//!
//! A provider host's stderr is a pipe: [`prfmon::collector::host`] relays each line as a
//! record of target [`HOST_OUTPUT_TARGET`], written here as it is (it has its own prefix) and
//! not held back as a repeated condition (the host's library reports each once itself).
//!
//! # While a program draws on the terminal
//!
//! [`hold`] keeps the lines for stderr (up to [`MAX_HELD`]) until its guard drops: `watch`
//! holds them while its chart is on screen and writes them after restoring the terminal.
//!
//! The level is `info` unless `PRFMON_LOG` names another (`off`, `error`, `warn`, `info`,
//! `debug`, `trace`, any case). A provider library is not reached by this logger: a Rust
//! cdylib carries its own copy of `log`, so it writes its own messages at the level
//! `PRFDATA_PROVIDER_LOG` names (see the provider's `logging` module). [`init`] sets that
//! variable to the collector's own level when it is not set, before any thread starts.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use log::{Level, LevelFilter, Log, Metadata, Record};
use prfdata_untrusted::text::{escape_controls, Style};
use prfmon::collector::host::HOST_OUTPUT_TARGET;

/// The environment variable that sets the level.
pub const LEVEL_ENV: &str = "PRFMON_LOG";

/// The level without [`LEVEL_ENV`]: everything the libraries say to an operator.
pub const DEFAULT_LEVEL: LevelFilter = LevelFilter::Info;

/// Where messages go, `stderr` or `syslog`: set by `--log-to` (or its default) for the
/// provider host processes, which inherit it.
pub const DEST_ENV: &str = "PRFMON_LOG_TO";

/// The same choice for a provider library (`prfdata-provider`'s `logging` module).
pub const PROVIDER_DEST_ENV: &str = "PRFDATA_PROVIDER_LOG_TO";

/// The system log's socket, if not `/dev/log` (tests point it at their own receiver).
pub const SYSLOG_SOCKET_ENV: &str = "PRFDATA_SYSLOG_SOCKET";

/// The system log's socket.
pub const DEFAULT_SYSLOG_SOCKET: &str = "/dev/log";

/// How many distinct conditions are remembered; past that the memory starts again (a
/// condition may then be reported once more).
pub const MAX_CONDITIONS: usize = 4096;

/// The longest message sent to the system log, in bytes (longer ones are cut).
const MAX_SYSLOG_MESSAGE: usize = 2048;

/// `syslog(3)` facilities.
const LOG_USER: u8 = 1;
const LOG_DAEMON: u8 = 3;

/// Where messages go.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogTo {
    /// Standard error, `prfmon: <message>`.
    Stderr,
    /// The system log (`/dev/log`: journald, rsyslog).
    Syslog,
}

impl LogTo {
    fn name(self) -> &'static str {
        match self {
            Self::Stderr => "stderr",
            Self::Syslog => "syslog",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "stderr" => Some(Self::Stderr),
            "syslog" => Some(Self::Syslog),
            _ => None,
        }
    }
}

/// The system log connection.
struct Syslog {
    socket: UnixDatagram,
    path: PathBuf,
    facility: u8,
}

impl Syslog {
    fn connect(facility: u8) -> std::io::Result<Self> {
        let path = std::env::var_os(SYSLOG_SOCKET_ENV)
            .map_or_else(|| PathBuf::from(DEFAULT_SYSLOG_SOCKET), PathBuf::from);
        let socket = UnixDatagram::unbound()?;
        socket.connect(&path)?;
        // A stalled log daemon must not stall the collector.
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            path,
            facility,
        })
    }

    /// Sends one message; reconnects once if the log went away (a daemon restarted). A full
    /// queue (the daemon is behind) is `WouldBlock`: the caller writes that message to
    /// stderr instead of waiting.
    fn send(&mut self, level: Level, message: &str) -> std::io::Result<()> {
        let datagram = syslog_datagram(self.facility, level, std::process::id(), message);
        match self.socket.send(datagram.as_bytes()) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Err(e),
            Err(_) => {}
        }
        let socket = UnixDatagram::unbound()?;
        socket.connect(&self.path)?;
        socket.set_nonblocking(true)?;
        self.socket = socket;
        self.socket.send(datagram.as_bytes()).map(|_| ())
    }
}

/// One syslog(3) datagram: `<PRI>prfmon[PID]: message`, the message on one line and cut at
/// [`MAX_SYSLOG_MESSAGE`] bytes.
fn syslog_datagram(facility: u8, level: Level, pid: u32, message: &str) -> String {
    let severity = match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    };
    let mut text: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.len() > MAX_SYSLOG_MESSAGE {
        let mut end = MAX_SYSLOG_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    format!(
        "<{}>prfmon[{pid}]: {text}",
        u16::from(facility) * 8 + severity
    )
}

/// What the logger holds.
struct State {
    syslog: Option<Syslog>,
    /// The conditions reported so far.
    seen: BTreeSet<String>,
    /// While a program draws on the terminal ([`hold`]): the lines for stderr, kept for later.
    held: Option<Vec<String>>,
    /// Lines not kept because [`MAX_HELD`] were held already.
    dropped: usize,
}

/// The most lines [`hold`] keeps; later ones are counted and said as a number.
pub const MAX_HELD: usize = 1000;

impl State {
    /// Writes `line` (a whole line, newline included) to stderr, or keeps it while held.
    fn stderr(&mut self, line: String) {
        match &mut self.held {
            Some(held) if held.len() < MAX_HELD => held.push(line),
            Some(_) => self.dropped += 1,
            None => write_stderr(&line),
        }
    }
}

/// Holds the lines the logger would write to stderr, from [`hold`] until it drops: then they
/// are written, in order, with the number of any left out past [`MAX_HELD`].
#[must_use = "the lines are written when the guard drops"]
pub struct Held(());

/// Keeps the logger's stderr lines (the collector's messages and the provider hosts' output)
/// off the terminal while a program draws on it (`watch`), until the returned guard drops,
/// after the terminal is restored. Messages for the system log go there as they come.
pub fn hold() -> Held {
    let mut state = LOGGER.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.held.get_or_insert_with(Vec::new);
    Held(())
}

/// A line written to fd 2 while [`crate::cli::console`] holds it: kept with the logger's own
/// lines while they are held, else written to stderr; control characters escaped.
pub fn console_line(line: &str) {
    let line = escape_controls(line, Style::Terminal);
    let mut state = LOGGER.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.stderr(format!("{line}\n"));
}

impl Held {
    /// The latest line held (without its newline) and how many came before it, for a status
    /// row; `None` before any came.
    pub fn latest(&self) -> Option<(String, usize)> {
        let state = LOGGER.state.lock().unwrap_or_else(PoisonError::into_inner);
        let held = state.held.as_ref()?;
        let last = held.last()?;
        Some((last.trim_end().to_owned(), held.len() - 1 + state.dropped))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut state = LOGGER.state.lock().unwrap_or_else(PoisonError::into_inner);
        let held = state.held.take().unwrap_or_default();
        for line in &held {
            write_stderr(line);
        }
        let dropped = std::mem::take(&mut state.dropped);
        if dropped > 0 {
            write_stderr(&format!(
                "prfmon: {dropped} more messages came while the terminal was in use (only the first {MAX_HELD} are kept)\n"
            ));
        }
    }
}

/// Writes each new condition to the system log or stderr.
struct Logger {
    state: Mutex<State>,
}

static LOGGER: Logger = Logger {
    state: Mutex::new(State {
        syslog: None,
        seen: BTreeSet::new(),
        held: None,
        dropped: 0,
    }),
};

/// Writes `line` (newline included) to stderr in one write, so that lines of concurrent
/// threads do not interleave; a failed write has nowhere to go.
fn write_stderr(line: &str) {
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

fn stderr_line(message: &str) {
    write_stderr(&format!("prfmon: {message}\n"));
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        // Names and paths from the registry and the blocks: control characters escaped, for
        // the terminal and for the system log alike.
        let message = record.args().to_string();
        let message = escape_controls(&message, Style::Terminal);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // A provider host's output line carries its own prefix, and the host says each
        // condition once itself.
        let host_output = record.target() == HOST_OUTPUT_TARGET;
        let condition = format!("{}|{}|{message}", record.level(), record.target());
        if state.seen.len() >= MAX_CONDITIONS {
            state.seen.clear();
        }
        if !host_output && !state.seen.insert(condition) {
            return;
        }
        if let Some(syslog) = &mut state.syslog {
            match syslog.send(record.level(), &message) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    let path = syslog.path.display().to_string();
                    state.syslog = None;
                    state.stderr(format!(
                        "prfmon: cannot write to the system log at {path} ({e}): messages go \
                         to stderr\n"
                    ));
                }
            }
        }
        let line = if host_output {
            format!("{message}\n")
        } else {
            format!("prfmon: {message}\n")
        };
        state.stderr(line);
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// The level `value` (of [`LEVEL_ENV`]) names, or an error that says what is accepted.
fn parse_level(value: &str) -> Result<LevelFilter, String> {
    value.trim().parse().map_err(|_| {
        format!("{LEVEL_ENV}={value:?} is not a level: use off, error, warn, info, debug or trace")
    })
}

/// Installs the logger, at the level [`LEVEL_ENV`] asks for (else [`DEFAULT_LEVEL`]), writing
/// where [`DEST_ENV`] says (a provider host inherits it), else to stderr until [`route`]. A
/// level that cannot be read is reported and the default used.
pub fn init() {
    let level = match std::env::var(LEVEL_ENV) {
        Ok(value) => parse_level(&value).unwrap_or_else(|e| {
            crate::cli::stdout::errln!("prfmon: {e}; using {DEFAULT_LEVEL}");
            DEFAULT_LEVEL
        }),
        Err(_) => DEFAULT_LEVEL,
    };
    if std::env::var_os(PROVIDER_LEVEL_ENV).is_none() {
        // prfmon's main calls this first, while the process has one thread: nothing reads the
        // environment concurrently.
        std::env::set_var(PROVIDER_LEVEL_ENV, level.as_str());
    }
    // Fails only if a logger is already installed, which then keeps its place.
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
    let inherited = std::env::var(DEST_ENV)
        .ok()
        .and_then(|v| LogTo::from_name(&v));
    if inherited == Some(LogTo::Syslog) {
        set_destination(LogTo::Syslog, LOG_USER);
    }
}

/// Sends messages where `--log-to` (`choice`) says, else to the system log for a service
/// (`service`: `prfmon serve`) and stderr otherwise; passes the choice on to provider hosts
/// and provider libraries. Called once the command line is read, before any thread starts.
pub fn route(choice: Option<LogTo>, service: bool) {
    let inherited = std::env::var(DEST_ENV)
        .ok()
        .and_then(|v| LogTo::from_name(&v));
    let to = choice.or(inherited).unwrap_or(if service {
        LogTo::Syslog
    } else {
        LogTo::Stderr
    });
    let facility = if service { LOG_DAEMON } else { LOG_USER };
    let to = set_destination(to, facility);
    // Still one thread (see `init`).
    std::env::set_var(DEST_ENV, to.name());
    std::env::set_var(PROVIDER_DEST_ENV, to.name());
}

/// Connects to the system log for `LogTo::Syslog`; what was set up.
fn set_destination(to: LogTo, facility: u8) -> LogTo {
    let syslog = match to {
        LogTo::Stderr => None,
        LogTo::Syslog => match Syslog::connect(facility) {
            Ok(s) => Some(s),
            Err(e) => {
                let path = std::env::var_os(SYSLOG_SOCKET_ENV)
                    .map_or_else(|| PathBuf::from(DEFAULT_SYSLOG_SOCKET), PathBuf::from);
                stderr_line(&format!(
                    "no system log at {} ({e}): messages go to stderr",
                    path.display()
                ));
                None
            }
        },
    };
    let set = if syslog.is_some() {
        LogTo::Syslog
    } else {
        LogTo::Stderr
    };
    LOGGER
        .state
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .syslog = syslog;
    set
}

/// The variable a `dlopen`ed prfdata provider reads for its own stderr logger's level.
pub const PROVIDER_LEVEL_ENV: &str = "PRFDATA_PROVIDER_LOG";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_read_in_any_case_and_a_wrong_one_says_what_is_accepted() {
        assert_eq!(parse_level("warn"), Ok(LevelFilter::Warn));
        assert_eq!(parse_level(" DEBUG "), Ok(LevelFilter::Debug));
        assert_eq!(parse_level("off"), Ok(LevelFilter::Off));
        let e = parse_level("loud").unwrap_err();
        assert!(e.contains("PRFMON_LOG") && e.contains("trace"), "{e}");
    }

    #[test]
    fn syslog_datagrams_carry_priority_tag_and_pid_on_one_line() {
        assert_eq!(
            syslog_datagram(LOG_DAEMON, Level::Warn, 42, "service X: bad\nnext"),
            "<28>prfmon[42]: service X: bad next"
        );
        assert_eq!(
            syslog_datagram(LOG_USER, Level::Error, 1, "e"),
            "<11>prfmon[1]: e"
        );
        let long = "é".repeat(MAX_SYSLOG_MESSAGE);
        assert!(syslog_datagram(LOG_USER, Level::Info, 1, &long).len() <= MAX_SYSLOG_MESSAGE + 20);
    }
}

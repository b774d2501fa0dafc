//! What the provider logs, and how a host that loads it with `dlopen` gets to see it.
//!
//! The provider reports through the [`log`] facade, at most once per kind of problem and app
//! while the app is served ("How a performance DLL interfaces with a monitor": "do not flood the
//! event log"):
//!
//! | level | message |
//! |---|---|
//! | `error` | `Open: cannot read the registry: ...`, `Open: app NAME is not installed: ...`, `Open: the provider library PATH reads registry format N at most, but the registry ... has format M: ...` (a stale library: rebuild and reinstall it) |
//! | `warn` | `app NAME: no data: REASON` (not running, killed, busy, corrupt, replaced, ...) |
//!
//! Linked into a Rust program (tests, fuzzers), the program's logger receives these. Loaded as a
//! `cdylib` with `dlopen`, the library has its own copy of `log`, which no logger of the host
//! reaches: with nothing set up, nothing is printed. A host that wants the messages sets
//! [`LOG_ENV`] (`PRFDATA_PROVIDER_LOG`) to a level (`error`, `warn`, `info`, `debug`, `trace`)
//! in the library's environment; at its first Open the library then logs to standard error,
//! each line prefixed `prfdata-provider: `. `prfmon`'s provider host processes set it to
//! `warn` unless it is set already.
//!
//! With [`DEST_ENV`] (`PRFDATA_PROVIDER_LOG_TO`) set to `syslog` (prfmon sets it to its own
//! `--log-to`), the messages go to the system log instead: one datagram each on `/dev/log`
//! (or the socket [`SYSLOG_SOCKET_ENV`] names), in syslog(3)'s local format
//! `<PRI>prfdata-provider[PID]: message`, facility `daemon`. The socket does not block: a
//! message the log cannot take now goes to standard error, as do all of them when no system
//! log listens. (A datagram and a format line are all syslog needs; a syslog crate would add
//! a clock and a host-name lookup to every collector that loads this library.)

use std::io::Write as _;
use std::str::FromStr;
use std::sync::Once;

use prfdata_untrusted::text::{escape_controls, Style};

/// The environment variable that makes a `dlopen`ed provider log to standard error, at the
/// level it names.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_provider::logging::LOG_ENV, "PRFDATA_PROVIDER_LOG");
/// ```
pub const LOG_ENV: &str = "PRFDATA_PROVIDER_LOG";

/// `syslog` sends the messages to the system log instead of standard error.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_provider::logging::DEST_ENV, "PRFDATA_PROVIDER_LOG_TO");
/// ```
pub const DEST_ENV: &str = "PRFDATA_PROVIDER_LOG_TO";

/// The system log's socket, if not `/dev/log`.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_provider::logging::SYSLOG_SOCKET_ENV, "PRFDATA_SYSLOG_SOCKET");
/// ```
pub const SYSLOG_SOCKET_ENV: &str = "PRFDATA_SYSLOG_SOCKET";

/// The system log, connected and non-blocking.
struct Syslog(std::os::unix::net::UnixDatagram);

impl Syslog {
    fn connect() -> Option<Self> {
        let path = std::env::var_os(SYSLOG_SOCKET_ENV).unwrap_or_else(|| "/dev/log".into());
        let socket = std::os::unix::net::UnixDatagram::unbound().ok()?;
        socket.connect(path).ok()?;
        socket.set_nonblocking(true).ok()?;
        Some(Self(socket))
    }

    /// Whether the log took the message.
    fn send(&self, level: log::Level, message: &str) -> bool {
        let severity = match level {
            log::Level::Error => 3,
            log::Level::Warn => 4,
            log::Level::Info => 6,
            log::Level::Debug | log::Level::Trace => 7,
        };
        let text: String = message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(2048)
            .collect();
        // Facility daemon (3).
        let datagram = format!(
            "<{}>prfdata-provider[{}]: {text}",
            3 * 8 + severity,
            std::process::id()
        );
        self.0.send(datagram.as_bytes()).is_ok()
    }
}

/// The system-log logger [`init_from_env`] installs with [`DEST_ENV`]` = syslog`.
struct SyslogLogger(Syslog);

impl log::Log for SyslogLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let message = record.args().to_string();
            let message = escape_controls(&message, Style::Terminal);
            if !self.0.send(record.level(), &message) {
                let line = format!("prfdata-provider: {message}\n");
                let _ = std::io::stderr().lock().write_all(line.as_bytes());
            }
        }
    }

    fn flush(&self) {}
}

/// The logger [`init_from_env`] installs: one line per message on standard error.
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            // One write per line, so that lines of several threads do not interleave.
            let message = record.args().to_string();
            let line = format!(
                "prfdata-provider: {}\n",
                escape_controls(&message, Style::Terminal)
            );
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// Installs the standard-error logger if [`LOG_ENV`] names a level and no logger is installed
/// in this copy of `log` yet; once per process. Called by
/// [`OpenPerformanceData`](crate::OpenPerformanceData).
///
/// # Examples
///
/// ```
/// std::env::set_var(prfdata_provider::logging::LOG_ENV, "warn");
/// prfdata_provider::logging::init_from_env();
/// assert_eq!(log::max_level(), log::LevelFilter::Warn);
/// ```
pub fn init_from_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Some(level) = std::env::var(LOG_ENV)
            .ok()
            .and_then(|v| log::LevelFilter::from_str(v.trim()).ok())
        else {
            return;
        };
        static LOGGER: Stderr = Stderr;
        let syslog = std::env::var(DEST_ENV)
            .is_ok_and(|d| d.trim().eq_ignore_ascii_case("syslog"))
            .then(Syslog::connect)
            .flatten();
        let installed = match syslog {
            // Once per process (`ONCE`): the logger lives as long as the library.
            Some(s) => log::set_boxed_logger(Box::new(SyslogLogger(s))).is_ok(),
            None => log::set_logger(&LOGGER).is_ok(),
        };
        if installed {
            log::set_max_level(level);
        }
    });
}

//! What the provider logs, and how a host that loads it with `dlopen` gets to see it.
//!
//! The provider reports through the [`log`] facade, at most once per kind of problem and app
//! while the app is served (seed 004: "do not flood the event log"):
//!
//! | level | message |
//! |---|---|
//! | `error` | `Open: cannot read the registry: ...`, `Open: app NAME is not installed: ...` |
//! | `warn` | `app NAME: no data: REASON` (not running, killed, busy, corrupt, replaced, ...) |
//!
//! Linked into a Rust program (tests, fuzzers), the program's logger receives these. Loaded as a
//! `cdylib` with `dlopen`, the library has its own copy of `log`, which no logger of the host
//! reaches: with nothing set up, nothing is printed. A host that wants the messages sets
//! [`LOG_ENV`] (`PRFDATA_PROVIDER_LOG`) to a level (`error`, `warn`, `info`, `debug`, `trace`)
//! in the library's environment; at its first Open the library then logs to standard error,
//! each line prefixed `prfdata-provider: `. `prfmon`'s provider host processes set it to
//! `warn` unless it is set already.

use std::io::Write as _;
use std::str::FromStr;
use std::sync::Once;

/// The environment variable that makes a `dlopen`ed provider log to standard error, at the
/// level it names.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_provider::logging::LOG_ENV, "PRFDATA_PROVIDER_LOG");
/// ```
pub const LOG_ENV: &str = "PRFDATA_PROVIDER_LOG";

/// The logger [`init_from_env`] installs: one line per message on standard error.
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            // One write per line, so that lines of several threads do not interleave.
            let line = format!("prfdata-provider: {}\n", record.args());
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
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(level);
        }
    });
}

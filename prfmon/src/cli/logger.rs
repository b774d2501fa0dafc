//! Where the libraries' messages go: the `log` records of `prfmon`'s library, `prfdata` and
//! the registry (a provider disabled, a service skipped, a duplicate object) are written to
//! stderr, one line each, as `prfmon: <message>`.
//!
//! The level is `info` unless `PRFMON_LOG` names another (`off`, `error`, `warn`, `info`,
//! `debug`, `trace`, any case). The provider host process (`prfmon __provider-host`) installs
//! the same logger, so what its side of the collector logs reaches the collector's stderr,
//! which the host inherits.
//!
//! A provider library is not reached by this logger: a Rust cdylib carries its own copy of
//! `log`, so it writes its own messages, to stderr, at the level `PRFDATA_PROVIDER_LOG` names
//! (see the provider's `logging` module). [`init`] sets that variable to the collector's own
//! level when it is not set, before any thread starts, so that a provider loaded in process and
//! every provider host (which inherits the environment) report at the same level.

use std::io::Write;

use log::{LevelFilter, Log, Metadata, Record};

/// The environment variable that sets the level.
pub const LEVEL_ENV: &str = "PRFMON_LOG";

/// The level without [`LEVEL_ENV`]: everything the libraries say to an operator.
pub const DEFAULT_LEVEL: LevelFilter = LevelFilter::Info;

/// Writes each record to stderr as `prfmon: <message>`.
struct StderrLogger;

static LOGGER: StderrLogger = StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        // One write per line, so that lines of concurrent threads (and of provider hosts
        // sharing the collector's stderr) do not interleave; a failed write has nowhere to go.
        let line = format!("prfmon: {}\n", record.args());
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
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

/// Installs the logger, at the level [`LEVEL_ENV`] asks for (else [`DEFAULT_LEVEL`]). A
/// level that cannot be read is reported and the default used.
pub fn init() {
    let level = match std::env::var(LEVEL_ENV) {
        Ok(value) => parse_level(&value).unwrap_or_else(|e| {
            eprintln!("prfmon: {e}; using {DEFAULT_LEVEL}");
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
}

//! Where the demo's notes go: to stderr at once, or, while another program owns the terminal
//! (`live` hands it to `prfmon watch`), held in order and written to stderr when it gives the
//! terminal back, so that no note draws over its screen.
//!
//! Every note of the service goes through [`note!`], and so do the warnings and errors the
//! libraries log (prfdata logs through the `log` facade; [`log_to_notes`]); [`hold`] returns
//! the guard that holds them until it drops.

use std::io::Write;
use std::sync::{Mutex, PoisonError};

/// The most notes held; beyond it they are counted, and the count is written after them.
pub const HELD_LIMIT: usize = 1_000;

/// The notes held while a guard is alive: `None` when notes go to stderr at once.
static HELD: Mutex<Option<Held>> = Mutex::new(None);

/// Notes held, in the order they came, and how many more came than [`HELD_LIMIT`].
#[derive(Default)]
struct Held {
    lines: Vec<String>,
    more: usize,
}

/// Writes a note (`format!` arguments) on stderr, prefixed `demo-app: `, or holds it while a
/// [`Hold`] is alive.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::notes::write(&format!($($arg)*))
    };
}
pub(crate) use note;

/// Writes `text` as a note: see [`note!`].
pub fn write(text: &str) {
    let line = format!("demo-app: {text}");
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    match held.as_mut() {
        Some(h) => h.push(line),
        // Under the lock: a note never slips between held ones being written.
        None => {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    }
}

impl Held {
    /// Holds `line`, or counts it once [`HELD_LIMIT`] lines are held.
    fn push(&mut self, line: String) {
        if self.lines.len() < HELD_LIMIT {
            self.lines.push(line);
        } else {
            self.more += 1;
        }
    }

    /// The lines to write: those held, in order, then how many more came, if any.
    fn into_lines(mut self) -> Vec<String> {
        if self.more > 0 {
            let s = if self.more == 1 { "" } else { "s" };
            self.lines.push(format!(
                "demo-app: ... {} more note{s} not shown",
                self.more
            ));
        }
        self.lines
    }
}

/// The `log` records of Warn and above, written as notes (`warning: ...`, `error: ...`).
struct Logger;

impl log::Log for Logger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let level = match record.level() {
                log::Level::Error => "error",
                _ => "warning",
            };
            write(&format!("{level}: {}", record.args()));
        }
    }

    fn flush(&self) {}
}

/// Writes the libraries' warnings and errors as notes, from now on (once per process).
pub fn log_to_notes() {
    if log::set_logger(&Logger).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
}

/// Holds every note until the guard drops, then writes them to stderr in order (at most
/// [`HELD_LIMIT`], then how many more there were), and notes go to stderr at once again.
#[must_use = "notes are held only while the guard is alive"]
pub struct Hold(());

/// Starts holding notes: see [`Hold`].
pub fn hold() -> Hold {
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    held.get_or_insert_with(Held::default);
    Hold(())
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(h) = held.take() {
            let mut err = std::io::stderr().lock();
            for line in h.into_lines() {
                let _ = writeln!(err, "{line}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_notes_keep_their_order_and_count_those_beyond_the_limit() {
        let mut held = Held::default();
        for i in 0..HELD_LIMIT + 3 {
            held.push(format!("note {i}"));
        }
        let lines = held.into_lines();
        assert_eq!(lines.len(), HELD_LIMIT + 1);
        assert_eq!(lines[0], "note 0");
        assert_eq!(lines[HELD_LIMIT - 1], format!("note {}", HELD_LIMIT - 1));
        assert_eq!(lines[HELD_LIMIT], "demo-app: ... 3 more notes not shown");
    }

    #[test]
    fn a_few_held_notes_are_written_as_they_are() {
        let mut held = Held::default();
        held.push("one".into());
        held.push("two".into());
        assert_eq!(held.into_lines(), ["one", "two"]);
    }
}

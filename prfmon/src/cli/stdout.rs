//! What the subcommands print: standard output that ends quietly on a closed pipe, and both
//! standard output and standard error with control characters made visible.
//!
//! # Control characters
//!
//! Names, instance names, text counters, registry values and a remote's answers come from
//! elsewhere, and may carry terminal control sequences (see [`prfdata_untrusted::text`]).
//! A name, an instance name or a text set into a line is escaped whole where the line is
//! formatted ([`field`]: newline and tab too, so it cannot start a line of its own); then
//! everything written through [`out!`], [`outln!`], [`errln!`] and [`EscapedWriter`] has its
//! control characters but newline and tab escaped (`\x1b`, `\u{9b}`); [`json`] writes JSON
//! with JSON's own escapes, so that it stays valid and reads back the same. Files the user
//! names (`typeperf -o`, `query --raw`) get the exact bytes.
//!
//! # Closed pipes
//!
//! `prfmon ... | head` ends quietly, as coreutils do.
//!
//! Rust ignores SIGPIPE, so a write to a pipe whose reader has gone returns `EPIPE`, and
//! `println!` panics on it. [`out!`] and [`outln!`] write and flush instead, and on `EPIPE` the
//! process ends the way a coreutils program does under the default SIGPIPE action: killed by
//! SIGPIPE, with no message (shells print nothing for it; the status is 128 + 13). Only standard
//! output gets this: SIGPIPE stays ignored everywhere else, so a provider host that dies under a
//! collector's pipe is an error the collector handles, not the collector's death.
//!
//! Any other write error (a full disk) is reported on stderr and exits with status 1.

use std::fmt;
use std::io::Write;

use prfdata_untrusted::text::{escape_controls, escape_field, Style};

/// Writes to standard output (`print!`), ending the process quietly if the reader has gone.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::stdout::write(format_args!($($arg)*)) };
}

/// Writes a line to standard output (`println!`), ending the process quietly if the reader has
/// gone.
macro_rules! outln {
    () => { $crate::cli::stdout::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::stdout::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Writes a line to standard error (`eprintln!`), its control characters escaped.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::stdout::write_err(format_args!($($arg)*)) };
}

pub(crate) use {errln, out, outln};

/// One field from elsewhere (a name, an instance name, a text) as a line shows it: every
/// control character escaped, newline and tab too, so that it never starts a line of its own
/// (see [`escape_field`]). The line is escaped again as a whole when written.
pub fn field(text: &str) -> std::borrow::Cow<'_, str> {
    escape_field(text, Style::Terminal)
}

/// Writes `args` to standard output, control characters escaped, and flushes (see the
/// [module docs](self)).
pub fn write(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let text = escape_controls(&text, Style::Terminal);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        failed(e);
    }
}

/// Writes `args` and a newline to standard error in one write, control characters escaped.
pub fn write_err(args: fmt::Arguments<'_>) {
    let line = format!("{}\n", escape_controls(&args.to_string(), Style::Terminal));
    // Nowhere to report a failed write to stderr.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `value` as pretty JSON whose control characters all use JSON's escapes (`serde_json`
/// leaves DEL and C1 raw), for [`outln!`].
pub fn json(value: &impl serde::Serialize) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    escape_controls(&text, Style::Json).into_owned()
}

/// Writes to standard output through `write`, buffered, control characters escaped in
/// `style`, as it is written (a large output is never held whole); ends as [`write`] does on
/// a closed pipe or a failed write.
pub fn write_with(style: Style, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    let mut out =
        std::io::BufWriter::new(EscapedWriter::with_style(std::io::stdout().lock(), style));
    if let Err(e) = write(&mut out).and_then(|()| out.flush()) {
        failed(e);
    }
}

/// A write to standard output failed: the process ends quietly if the reader has gone, else
/// with the reason and status 1.
fn failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        reader_gone();
    }
    write_err(format_args!("prfmon: cannot write to standard output: {e}"));
    std::process::exit(1);
}

/// A writer that escapes the control characters of what goes through it (for output other
/// code formats, such as typeperf's CSV on standard output). A character split across two
/// writes is held until it is whole.
pub struct EscapedWriter<W: Write> {
    inner: W,
    style: Style,
    /// The start of a UTF-8 sequence the last write ended in.
    pending: Vec<u8>,
}

impl<W: Write> EscapedWriter<W> {
    /// Escapes what is written to `inner` for a terminal.
    pub fn new(inner: W) -> Self {
        Self::with_style(inner, Style::Terminal)
    }

    /// Escapes what is written to `inner` in `style` (JSON's escapes inside JSON text).
    pub fn with_style(inner: W, style: Style) -> Self {
        Self {
            inner,
            style,
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for EscapedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let whole = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            // An incomplete sequence at the end waits for the next write.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let text = String::from_utf8_lossy(&self.pending[..whole]);
        self.inner
            .write_all(escape_controls(&text, self.style).as_bytes())?;
        self.pending.drain(..whole);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Ends the process as the default SIGPIPE action would: the reader of standard output is gone.
pub fn reader_gone() -> ! {
    // SAFETY: `signal` with `SIG_DFL` has no memory-safety preconditions; it only changes this
    // process's disposition of SIGPIPE, which nothing else relies on from here on (the process
    // is ending). `raise` then delivers SIGPIPE to this thread, which ends the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // SIGPIPE was blocked: end with the status a shell shows for it.
    std::process::exit(128 + libc::SIGPIPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_across_writes_is_escaped_whole() {
        let mut out = EscapedWriter::new(Vec::new());
        let csi = "a\u{9b}b\u{1b}".as_bytes();
        out.write_all(&csi[..2]).unwrap();
        out.write_all(&csi[2..]).unwrap();
        assert_eq!(String::from_utf8(out.inner).unwrap(), r"a\u{9b}b\x1b");
    }

    #[test]
    fn json_keeps_its_own_escapes() {
        let text = json(&"\u{1b}\u{9b}\u{7f}");
        assert_eq!(text, r#""\u001b\u009b\u007f""#);
        let back: String = serde_json::from_str(&text).unwrap();
        assert_eq!(back, "\u{1b}\u{9b}\u{7f}");
    }
}

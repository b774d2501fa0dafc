//! Standard output for the subcommands: `prfmon ... | head` ends quietly, as coreutils do.
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

pub(crate) use {out, outln};

/// Writes `args` to standard output and flushes (see the [module docs](self)).
pub fn write(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            reader_gone();
        }
        eprintln!("prfmon: cannot write to standard output: {e}");
        std::process::exit(1);
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

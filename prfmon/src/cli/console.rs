//! While a program draws on the terminal, standard error (fd 2) is its own: [`capture`] points
//! fd 2 at a pipe, and a reader thread hands each line written to it (by a provider library
//! loaded into this process with `--in-process`, by `errln!`, by anything else that writes to
//! fd 2) to the [logger](crate::cli::logger), which holds it with its own lines for the
//! chart's status row and writes them all to the real stderr after the terminal is restored.
//!
//! The [`Console`] guard restores fd 2 when it drops, and so does a panic (a hook chained
//! before the others), so that a panic's message reaches the real stderr.

use std::io::{BufRead, BufReader, PipeReader, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The longest line kept whole; a longer one is cut there (the rest makes further lines).
const MAX_LINE: u64 = 4096;

/// How long restoring waits for the lines still in the pipe.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// The real stderr's descriptor while it is captured, else -1: what [`restore`] (on drop or in
/// the panic hook, whichever comes first) puts back on fd 2.
static SAVED: AtomicI32 = AtomicI32::new(-1);

/// Fd 2 taken over, from [`capture`] until it drops.
#[must_use = "fd 2 is restored when the guard drops"]
pub struct Console {
    /// The real stderr, kept open while captured (closed after [`restore`] put it back).
    _saved: OwnedFd,
    /// Told when the reader thread has read the pipe to its end.
    done: mpsc::Receiver<()>,
}

/// Points fd 2 at a pipe whose lines go to the logger, until the returned guard drops.
pub fn capture() -> std::io::Result<Console> {
    let (reader, writer) = std::io::pipe()?;
    let saved = rustix::io::fcntl_dupfd_cloexec(std::io::stderr().as_fd(), 3)?;
    let (tell, done) = mpsc::channel();
    std::thread::Builder::new()
        .name("stderr capture".into())
        .spawn(move || {
            relay(reader);
            let _ = tell.send(());
        })?;
    rustix::stdio::dup2_stderr(&writer)?;
    SAVED.store(saved.as_raw_fd(), Ordering::SeqCst);
    install_panic_hook();
    // fd 2 is now the pipe's only writer here: at restore, the reader sees its end.
    drop(writer);
    Ok(Console {
        _saved: saved,
        done,
    })
}

/// Hands each line read from `reader` to the logger, until the pipe's end.
fn relay(reader: PipeReader) {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                crate::cli::logger::console_line(text.trim_end_matches(['\n', '\r']));
            }
        }
    }
}

/// Puts the real stderr back on fd 2, once (the guard's drop or a panic, whichever is first).
fn restore() {
    let fd = SAVED.swap(-1, Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: `fd` is the `Console`'s `saved` descriptor, open until the `Console` drops,
        // which restores (and so takes it out of `SAVED`) before closing it.
        let saved = unsafe { BorrowedFd::borrow_raw(fd) };
        let _ = rustix::stdio::dup2_stderr(saved);
    }
}

/// Restores fd 2 before the panic hooks that were there (ratatui's, the default one that
/// prints the message) run.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

impl Drop for Console {
    fn drop(&mut self) {
        restore();
        // The lines still in the pipe go to the logger before its held lines are written (a
        // child process that inherited fd 2 could keep the pipe open: bounded).
        let _ = self.done.recv_timeout(DRAIN_WAIT);
    }
}

//! Process identity on Linux: `getpid`, `/proc/<pid>/stat`, `kill(pid, 0)` and `pthread_atfork`.
//!
//! Everything read from `/proc` is untrusted text: it is parsed without `unwrap`, and anything
//! that does not look like proc(5) says it should is reported as [`StatError::Malformed`].

use std::io;

/// The two fields of `/proc/<pid>/stat` that process identity needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// Field 3, `state`: `R`, `S`, `D`, `Z` (zombie), `X` (dead), `T`, `t`, ...
    pub(crate) state: u8,
    /// Field 22, `starttime`: when the process started, in clock ticks after system boot.
    pub(crate) start_time: u64,
}

impl Stat {
    /// Whether the process has terminated and only its entry remains (`Z` zombie or `X` dead).
    pub(crate) fn is_terminated(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

/// Why `/proc/<pid>/stat` gave no [`Stat`].
#[derive(Debug)]
pub(crate) enum StatError {
    /// There is no process (or thread) with that id.
    NotFound,
    /// The file exists (or may) but could not be read: `/proc` not mounted, permissions, ...
    Unreadable(#[allow(dead_code)] io::Error),
    /// The file was read but is not in the format proc(5) documents.
    Malformed,
}

/// Reads `state` and `starttime` from `/proc/<pid>/stat`.
pub(crate) fn stat(pid: u32) -> Result<Stat, StatError> {
    if pid == 0 {
        return Err(StatError::NotFound);
    }
    match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(bytes) => parse_stat(&bytes).ok_or(StatError::Malformed),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StatError::NotFound),
        // A process that exits while we read its stat file yields ESRCH.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Err(StatError::NotFound),
        Err(e) => Err(StatError::Unreadable(e)),
    }
}

/// The start time of a running (not zombie) process, or `None` if there is none or it cannot be
/// read.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    match stat(pid) {
        Ok(s) if !s.is_terminated() => Some(s.start_time),
        _ => None,
    }
}

/// Parses the content of a `/proc/<pid>/stat` file.
///
/// proc(5): `pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
/// utime stime cutime cstime priority nice num_threads itrealvalue starttime ...`. `comm` is
/// chosen by the process and may contain spaces and `)`, so the fields after it are found from
/// the *last* `)` in the file: `state` is the first field after it (field 3) and `starttime` the
/// twentieth (field 22).
pub(crate) fn parse_stat(bytes: &[u8]) -> Option<Stat> {
    let close = bytes.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(bytes.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let &[state] = state.as_bytes() else {
        return None;
    };
    // `state` was field 3; field 22 is 19 fields further on.
    let start_time = fields.nth(22 - 3 - 1)?.parse::<u64>().ok()?;
    Some(Stat { state, start_time })
}

/// The calling process's start time read in the child of a `fork()`, from its fork handler:
/// `/proc/self/stat` read with `open`, `read` and `close` (async-signal-safe) into a stack
/// buffer, and parsed without allocating. `None` if it cannot be read.
pub(crate) fn own_start_time_in_fork_child() -> Option<u64> {
    let mut buf = [0u8; 1024];
    // SAFETY: the path is a NUL-terminated literal; `open` is async-signal-safe.
    let fd = unsafe {
        libc::open(
            c"/proc/self/stat".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is open; `buf` is valid for `buf.len()` bytes of writes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: `fd` was opened above and is closed once, here.
    unsafe { libc::close(fd) };
    let n = usize::try_from(n).ok()?;
    let stat = parse_stat(buf.get(..n)?)?;
    (!stat.is_terminated()).then_some(stat.start_time)
}

/// The calling process's id (`getpid`).
pub(crate) fn current_pid() -> u32 {
    rustix::process::getpid()
        .as_raw_nonzero()
        .get()
        .unsigned_abs()
}

/// Whether some process (or zombie) with this id exists, asked with `kill(pid, 0)`.
///
/// `EPERM` means it exists but belongs to someone else. Ids that are not valid positive
/// `pid_t` values never exist (and are never passed to `kill`, where 0 and negative values
/// address process groups).
pub(crate) fn pid_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e != rustix::io::Errno::SRCH,
    }
}

/// Registers `handler` to run in the child after every `fork()` of this process.
///
/// Returns whether registration succeeded. Handlers registered from a shared library are
/// removed by glibc when that library is unloaded.
pub(crate) fn on_fork_child(handler: unsafe extern "C" fn()) -> bool {
    // SAFETY: `pthread_atfork` only records the function pointers; `handler` is a valid
    // `extern "C"` function with no arguments, as the prototype requires, and the other two
    // handlers are absent.
    unsafe { libc::pthread_atfork(None, None, Some(handler)) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_plain_stat_line() {
        let line = b"1234 (bash) S 1 1234 1234 34816 1234 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            s,
            Stat {
                state: b'S',
                start_time: 987654
            }
        );
        assert!(!s.is_terminated());
    }

    #[test]
    fn parses_a_comm_with_spaces_and_parentheses() {
        let line =
            b"77 (evil) Z 1 (x) ) R 1 77 77 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            s,
            Stat {
                state: b'R',
                start_time: 4242
            }
        );
    }

    #[test]
    fn recognises_zombies() {
        let line = b"9 (z) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
        assert!(parse_stat(line).unwrap().is_terminated());
    }

    #[test]
    fn rejects_malformed_stat_content() {
        assert_eq!(parse_stat(b""), None);
        assert_eq!(parse_stat(b"12 (no close paren S 1 2 3"), None);
        assert_eq!(parse_stat(b"12 (short) S 1 2 3"), None);
        assert_eq!(
            parse_stat(b"12 (x) SS 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"),
            None
        );
        assert_eq!(
            parse_stat(b"12 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5"),
            None
        );
        assert_eq!(
            parse_stat(b"12 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 \xff"),
            None
        );
    }

    #[test]
    fn reads_our_own_stat() {
        let s = stat(current_pid()).unwrap();
        assert!(!s.is_terminated());
        assert_eq!(start_time(current_pid()), Some(s.start_time));
        assert!(pid_exists(current_pid()));
    }

    #[test]
    fn invalid_pids_do_not_exist() {
        assert!(matches!(stat(0), Err(StatError::NotFound)));
        assert!(!pid_exists(0));
        assert!(!pid_exists(u32::MAX));
        assert!(!pid_exists(1 << 31));
        // Above Linux's PID_MAX_LIMIT (2^22), so no process can have it.
        assert!(matches!(stat((1 << 22) + 1), Err(StatError::NotFound)));
        assert!(!pid_exists((1 << 22) + 1));
    }
}

//! Byte-range locks that belong to an open file description (`fcntl` `F_OFD_SETLK` /
//! `F_OFD_GETLK`, Linux 3.15): what the processes attached to a block hold to say they are
//! there, and what others probe.
//!
//! fcntl(2): "open file description locks ... are associated with an open file description
//! rather than with a process". They conflict with the locks of every *other* open file
//! description, whichever process or pid namespace holds it, and the kernel releases them when
//! the last reference to their description goes (the process died, however it died). Unlike
//! classic POSIX record locks, closing some other descriptor of the file does not drop them.
//! A range may lie past the end of the file (fcntl(2): "it is not an error to lock bytes past
//! the end of the file"); prfdata's ranges always do, so they never touch a byte of the block.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The `struct flock` for `len` bytes (0: to the end of every possible offset) at `start`.
fn range(kind: libc::c_short, start: u64, len: u64) -> io::Result<libc::flock> {
    let overflow = || io::Error::from_raw_os_error(libc::EOVERFLOW);
    // SAFETY: `flock` is a plain C struct of integers, valid when zeroed (OFD locks require
    // `l_pid` to be 0).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = libc::off_t::try_from(start).map_err(|_| overflow())?;
    lock.l_len = libc::off_t::try_from(len).map_err(|_| overflow())?;
    Ok(lock)
}

/// `fcntl(file, cmd, lock)`.
fn fcntl(file: &File, cmd: libc::c_int, lock: &mut libc::flock) -> io::Result<()> {
    // SAFETY: `file` is an open descriptor for the duration of the call; `lock` is a valid,
    // exclusively borrowed `struct flock` that the kernel reads (and, for `F_OFD_GETLK`,
    // writes); `cmd` is one of the OFD lock commands, which take exactly that argument.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), cmd, lock as *mut libc::flock) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Takes a shared (read) lock on `len` bytes at `start` through `file`'s open file
/// description, without waiting. `Ok(false)` if another description holds an exclusive lock
/// there. `file` must be open for reading.
pub(crate) fn lock_shared(file: &File, start: u64, len: u64) -> io::Result<bool> {
    let mut lock = range(libc::F_RDLCK as libc::c_short, start, len)?;
    match fcntl(file, libc::F_OFD_SETLK, &mut lock) {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether an open file description other than `file`'s holds a lock on some of the `len`
/// bytes at `start` (0: to the end): asked with `F_OFD_GETLK`, which takes no lock, so probing
/// never disturbs the holders. Works through a descriptor opened read-only.
pub(crate) fn held_by_others(file: &File, start: u64, len: u64) -> io::Result<bool> {
    let mut lock = range(libc::F_WRLCK as libc::c_short, start, len)?;
    fcntl(file, libc::F_OFD_GETLK, &mut lock)?;
    Ok(lock.l_type != libc::F_UNLCK as libc::c_short)
}

/// A new open file description of the file `file` is open on (read-write), as `/proc/self/fd`
/// reaches it even when its path now names another file or none; else `path` opened again,
/// if it is still the same file. Its locks are its own: they neither count as `file`'s nor go
/// with them.
pub(crate) fn reopen(file: &File, path: &Path) -> io::Result<File> {
    let want = super::shm::identity(file)?;
    let fd = format!("/proc/self/fd/{}", file.as_raw_fd());
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true);
    let opened = options.open(fd).or_else(|_| {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
    })?;
    let got = super::shm::identity(&opened)?;
    if (got.dev, got.ino) != (want.dev, want.ino) {
        return Err(io::Error::other(format!(
            "{} is no longer the file this process has open",
            path.display()
        )));
    }
    Ok(opened)
}

/// [`reopen`] and [`lock_shared`] in the child of a `fork()`, from its fork handler: only
/// async-signal-safe calls (`open`, `fstat`, `fcntl`, `close`) and no allocation. Opens
/// `/proc/self/fd/<fd>` read-write, checks that it is the file `(dev, ino)`, and takes a shared
/// lock on the byte at `at`; returns the new descriptor, or `None` (nothing left open).
pub(crate) fn relock_in_fork_child(fd: i32, (dev, ino): (u64, u64), at: u64) -> Option<i32> {
    // "/proc/self/fd/" and up to 10 digits of a non-negative `int`, NUL-terminated.
    const PREFIX: &[u8] = b"/proc/self/fd/";
    let mut path = [0u8; 32];
    path[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let mut n = u32::try_from(fd).ok()?;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..len].iter().rev().enumerate() {
        path[PREFIX.len() + i] = *d;
    }
    // SAFETY: `path` is NUL-terminated (zero-filled past the digits); `open` has no other
    // precondition and is async-signal-safe.
    let new = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDWR | libc::O_CLOEXEC) };
    if new < 0 {
        return None;
    }
    // SAFETY: `stat` is a plain C struct, valid when zeroed, written by `fstat` on `new`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `new` is open; `st` is a valid out-pointer.
    let same = unsafe { libc::fstat(new, &mut st) } == 0 && (st.st_dev, st.st_ino) == (dev, ino);
    let locked = same
        && range(libc::F_RDLCK as libc::c_short, at, 1).is_ok_and(|mut lock| {
            // SAFETY: `new` is open; `lock` a valid `struct flock` for `F_OFD_SETLK`.
            unsafe { libc::fcntl(new, libc::F_OFD_SETLK, &mut lock as *mut libc::flock) == 0 }
        });
    if !locked {
        // SAFETY: `new` was opened above and is closed once, here.
        unsafe { libc::close(new) };
        return None;
    }
    Some(new)
}

/// A new, empty file in a temp folder (removed with the folder), open read-write: for the tests
/// of what locks files.
#[cfg(test)]
pub(crate) fn scratch_file() -> (tempfile::TempDir, File, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.blk");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    (dir, file, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_lock_past_the_end_is_seen_by_other_descriptions_only() {
        let (_dir, file, path) = scratch_file();
        let other = reopen(&file, &path).unwrap();
        let far = 1 << 62;
        assert!(!held_by_others(&other, far, 1).unwrap());
        assert!(lock_shared(&file, far, 1).unwrap());
        assert!(held_by_others(&other, far, 1).unwrap(), "seen from another");
        assert!(
            held_by_others(&other, far - 10, 0).unwrap(),
            "in a range to the end"
        );
        assert!(
            !held_by_others(&other, far + 1, 1).unwrap(),
            "not beside it"
        );
        assert!(!held_by_others(&file, far, 1).unwrap(), "not its own");
        assert!(lock_shared(&other, far, 1).unwrap(), "shared locks share");
        drop(file);
        let third = std::fs::File::open(&path).unwrap();
        assert!(
            held_by_others(&third, far, 1).unwrap(),
            "the other's lock stays"
        );
        drop(other);
        assert!(
            !held_by_others(&third, far, 1).unwrap(),
            "gone with its description"
        );
    }
}

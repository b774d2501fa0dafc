//! Block files on tmpfs: created owner-only and exclusively, published without replacing, opened
//! without following symlinks, and held with `flock` for as long as their owner lives.

use std::fs::File;
use std::io;
use std::path::Path;

use rustix::fs::{self as rfs, FlockOperation, Mode, OFlags, RenameFlags, CWD};

/// Creates `path` with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600, read-write.
pub(crate) fn create_exclusive(path: &Path) -> io::Result<File> {
    let fd = rfs::open(
        path,
        OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )?;
    Ok(File::from(fd))
}

/// Why [`open_regular`] refused or failed.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// Nothing at the path.
    NotFound,
    /// A symbolic link at the path (never followed).
    Symlink,
    /// Something other than a regular file at the path: its kind, as [`file_kind`] names it.
    NotRegular(&'static str),
    /// Another failure.
    Io(io::Error),
}

/// Opens the regular file at `path` for reading (or reading and writing) without following a
/// symbolic link, without blocking, and without side effects on anything else found there:
/// `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC`, then `fstat`.
///
/// `O_NONBLOCK` is what keeps a FIFO at the path from blocking the open until some writer
/// comes (it has no effect on a regular file's reads and writes); a directory, socket, FIFO or
/// device is then refused by `fstat` (or by the open itself: `EISDIR`, `ENXIO`), named by its
/// kind.
pub(crate) fn open_regular(path: &Path, write: bool) -> Result<(File, FileIdentity), OpenError> {
    let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
    let flags = access | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rfs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => return Err(OpenError::Symlink),
        Err(rustix::io::Errno::NOENT) => return Err(OpenError::NotFound),
        Err(e) => {
            // EISDIR (a directory opened for writing), ENXIO (a socket, a FIFO opened for
            // writing without a reader), ENODEV, ...: name what is there if it is not a file.
            return Err(match rfs::lstat(path) {
                Ok(st) if !is_regular(st.st_mode) => OpenError::NotRegular(file_kind(st.st_mode)),
                _ => OpenError::Io(e.into()),
            });
        }
    };
    let file = File::from(fd);
    let id = identity(&file).map_err(OpenError::Io)?;
    if !id.regular {
        return Err(OpenError::NotRegular(id.kind));
    }
    Ok((file, id))
}

fn is_regular(mode: u32) -> bool {
    rfs::FileType::from_raw_mode(mode) == rfs::FileType::RegularFile
}

/// What a file's mode says it is, in words.
pub(crate) fn file_kind(mode: u32) -> &'static str {
    match rfs::FileType::from_raw_mode(mode) {
        rfs::FileType::RegularFile => "regular file",
        rfs::FileType::Directory => "directory",
        rfs::FileType::Symlink => "symbolic link",
        rfs::FileType::Fifo => "FIFO (named pipe)",
        rfs::FileType::Socket => "socket",
        rfs::FileType::CharacterDevice => "character device",
        rfs::FileType::BlockDevice => "block device",
        _ => "file of unknown type",
    }
}

/// Bytes written per call when [`reserve`] falls back to writing zeros.
const ZERO_CHUNK: usize = 64 * 1024;

/// Gives the first `len` bytes of `file` backing store now (its size becomes at least `len`),
/// so that touching them through a mapping can never fail for want of space (`SIGBUS` on a full
/// tmpfs): `fallocate(2)`, or, on a file system without it, writing zeros, as glibc's
/// `posix_fallocate` does. A full file system or quota fails here, with `ENOSPC` or `EDQUOT`.
pub(crate) fn reserve(file: &File, len: u64) -> io::Result<()> {
    if len == 0 {
        return Ok(()); // fallocate refuses an empty range (EINVAL)
    }
    match rfs::fallocate(file, rfs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::NOSYS) => write_zeros(file, len),
        Err(e) => Err(e.into()),
    }
}

fn write_zeros(file: &File, len: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = vec![0u8; ZERO_CHUNK];
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(ZERO_CHUNK as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// Renames `from` to `to` only if `to` does not exist (`RENAME_NOREPLACE`): a live block is never
/// replaced by a rename.
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    rfs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE)?;
    Ok(())
}

/// Takes the owner's exclusive `flock` without waiting. `Ok(false)` if another open file
/// description holds it: the block's owner is alive. The kernel drops the lock when the owner
/// dies, however it dies.
pub(crate) fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    match rfs::flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Takes a shared `flock` on the file, waiting for an exclusive one to go. A member of a block
/// holds it for its whole life through its own open file description (a publisher converts its
/// exclusive lock to it, which never waits); the kernel drops it when the process dies, however
/// it dies.
pub(crate) fn lock_shared(file: &File) -> io::Result<()> {
    rfs::flock(file, FlockOperation::LockShared)?;
    Ok(())
}

/// Takes a shared `flock` on the file without waiting: `Ok(false)` while another open file
/// description holds it exclusively. On a description that holds it exclusively, a conversion
/// (no other can hold it then, so it always succeeds).
pub(crate) fn try_lock_shared(file: &File) -> io::Result<bool> {
    match rfs::flock(file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What `fstat` says about an open block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    /// Device and inode: the same pair means the same file.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Current length.
    pub size: u64,
    /// Owner.
    pub uid: u32,
    /// Permission bits.
    pub mode: u32,
    /// Whether it is a regular file.
    pub regular: bool,
    /// What it is, in words ([`file_kind`]).
    pub kind: &'static str,
}

/// `fstat` of an open file.
pub(crate) fn identity(file: &File) -> io::Result<FileIdentity> {
    let st = rfs::fstat(file)?;
    Ok(FileIdentity {
        dev: st.st_dev,
        ino: st.st_ino,
        size: u64::try_from(st.st_size).unwrap_or(0),
        uid: st.st_uid,
        mode: st.st_mode & 0o7777,
        regular: is_regular(st.st_mode),
        kind: file_kind(st.st_mode),
    })
}

/// `lstat` of a path: `None` if nothing is there.
pub(crate) fn path_identity(path: &Path) -> io::Result<Option<(u64, u64)>> {
    match rfs::lstat(path) {
        Ok(st) => Ok(Some((st.st_dev, st.st_ino))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The effective uid of this process.
pub(crate) fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserving_sizes_the_file_and_the_zero_fallback_does_the_same() {
        for len in [0u64, 1, 4096, 3 * ZERO_CHUNK as u64 + 17] {
            let a = tempfile::tempfile().unwrap();
            reserve(&a, len).unwrap();
            assert_eq!(a.metadata().unwrap().len(), len);
            let b = tempfile::tempfile().unwrap();
            write_zeros(&b, len).unwrap();
            assert_eq!(b.metadata().unwrap().len(), len);
            let bytes = std::fs::read(format!("/proc/self/fd/{}", {
                use std::os::fd::AsRawFd;
                b.as_raw_fd()
            }))
            .unwrap();
            assert!(bytes.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn kinds_are_named() {
        let dir = tempfile::tempdir().unwrap();
        match open_regular(dir.path(), false) {
            Err(OpenError::NotRegular("directory")) => {}
            other => panic!("{other:?}"),
        }
        match open_regular(&dir.path().join("none"), false) {
            Err(OpenError::NotFound) => {}
            other => panic!("{other:?}"),
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
        match open_regular(&link, false) {
            Err(OpenError::Symlink) => {}
            other => panic!("{other:?}"),
        }
    }
}

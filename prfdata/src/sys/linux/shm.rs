//! Block files on tmpfs: created owner-only and exclusively, published without replacing, opened
//! without following symlinks, and held with `flock` for as long as their owner lives.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FlockOperation, Mode, OFlags, RenameFlags, CWD};

/// The default folder for blocks: `/dev/shm/prfdata-<uid>`, owner-only, so that other users can
/// neither read a block nor plant a file or symlink where one will be created.
pub(crate) fn default_dir() -> io::Result<PathBuf> {
    let uid = rustix::process::geteuid().as_raw();
    let dir = PathBuf::from(format!("/dev/shm/prfdata-{uid}"));
    match rfs::mkdir(&dir, Mode::RWXU) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    // Check what is there now (it may have been made by someone else before us).
    let st = rfs::lstat(&dir)?;
    let is_dir = rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::Directory;
    if !is_dir || st.st_uid != uid || st.st_mode & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory owned by uid {uid} with mode 0700; remove it or set \
                 PRFDATA_SHM_DIR",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}

/// Creates `path` with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600, read-write.
pub(crate) fn create_exclusive(path: &Path) -> io::Result<File> {
    let fd = rfs::open(
        path,
        OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )?;
    Ok(File::from(fd))
}

/// Opens an existing block without following a symlink at `path`.
pub(crate) fn open_nofollow(path: &Path, write: bool) -> io::Result<File> {
    let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
    let fd = rfs::open(
        path,
        access | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
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

/// Whether a process holds the owner's exclusive `flock` on the file: probed with a shared,
/// non-blocking lock that is released at once.
pub(crate) fn owner_holds_lock(file: &File) -> io::Result<bool> {
    match rfs::flock(file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            rfs::flock(file, FlockOperation::Unlock)?;
            Ok(false)
        }
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(true),
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
        regular: rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::RegularFile,
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

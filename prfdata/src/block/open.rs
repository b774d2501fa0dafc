//! Where blocks live and how an existing one is opened: the folder ([`shm_dir`]), an app's path
//! ([`block_path`]), and the opening both the writer (publishing, attaching) and the reader use,
//! which refuses anything but a regular file of ours.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::layout::MAX_BLOCK_SIZE;
use crate::sys::{shm, shm_dir};

/// A block file, as the kernel names it: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BlockKey {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
}

/// The folder blocks live in: `PRFDATA_SHM_DIR` if set, else the user's runtime folder
/// (`$XDG_RUNTIME_DIR/prfdata`, or `/run/user/<uid>/prfdata`) when it has a valid one, else
/// `/dev/shm/prfdata-<uid>` (the rule, and why every process finds the same folder: the
/// `shm_dir` module of `sys/linux`). The app, the provider and `prfmon` all call this.
///
/// # Errors
///
/// [`Error::ShmDirTaken`] if another user owns the default folder; [`Error::ShmDir`] if it
/// cannot be created or is not a private directory of ours.
///
/// # Examples
///
/// ```
/// std::env::set_var("PRFDATA_SHM_DIR", std::env::temp_dir());
/// assert_eq!(prfdata::shm_dir()?, std::env::temp_dir());
/// # Ok::<(), prfdata::Error>(())
/// ```
pub fn shm_dir() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("PRFDATA_SHM_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    shm_dir::default_dir().map_err(|e| match e {
        shm_dir::DirError::Taken { dir, owner } => Error::ShmDirTaken {
            dir,
            owner,
            uid: shm::current_uid(),
        },
        shm_dir::DirError::Unusable { dir, source } => Error::ShmDir { dir, source },
    })
}

/// The path of an app's block: `<shm_dir>/<app>.blk`.
///
/// # Errors
///
/// As [`shm_dir`].
///
/// # Examples
///
/// ```
/// std::env::set_var("PRFDATA_SHM_DIR", "/tmp/blocks");
/// assert_eq!(prfdata::block_path("MyApp")?, std::path::Path::new("/tmp/blocks/MyApp.blk"));
/// # Ok::<(), prfdata::Error>(())
/// ```
pub fn block_path(app: &str) -> Result<PathBuf, Error> {
    prfdata_untrusted::check_name(prfdata_untrusted::NameKind::App, app)?;
    Ok(shm_dir()?.join(format!("{app}.blk")))
}

/// Opens an existing block at `path` without following a symlink and without blocking
/// ([`shm::open_regular`]), refusing anything but a regular file of ours (owned by this user,
/// no access for others) of at most [`MAX_BLOCK_SIZE`] bytes. A FIFO, socket, device or
/// directory at the path is refused by kind, at once.
pub(crate) fn open_block(app: &str, path: &Path, write: bool) -> Result<File, Error> {
    let (file, id) = match shm::open_regular(path, write) {
        Ok(opened) => opened,
        Err(shm::OpenError::Symlink) => {
            return Err(Error::Symlink {
                path: path.to_path_buf(),
            })
        }
        Err(shm::OpenError::NotFound) => {
            return Err(Error::NotActive {
                app: app.to_string(),
                path: path.to_path_buf(),
            })
        }
        Err(shm::OpenError::NotRegular(kind)) => {
            return Err(Error::NotRegular {
                path: path.to_path_buf(),
                kind,
            })
        }
        Err(shm::OpenError::Io(source)) => {
            return Err(Error::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let uid = shm::current_uid();
    if id.uid != uid || id.mode & 0o077 != 0 {
        return Err(Error::NotABlock {
            path: path.to_path_buf(),
            uid,
        });
    }
    if id.size > MAX_BLOCK_SIZE {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            size: id.size,
            max: MAX_BLOCK_SIZE,
        });
    }
    Ok(file)
}

/// Removes `path` if it is still the file we created (not one another process published since).
pub(crate) fn remove_if_same(path: &Path, identity: shm::FileIdentity) {
    if let Ok(Some((dev, ino))) = shm::path_identity(path) {
        if dev == identity.dev && ino == identity.ino {
            let _ = fs::remove_file(path);
        }
    }
}

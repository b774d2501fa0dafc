//! Who may reach the registry: its folder and files are its owner's alone.
//!
//! Every update takes a `flock` on `registry.lock`, and `flock` needs only a descriptor: a user
//! who can open the file, even read-only, can hold the lock and make every install, lodctr,
//! `reg add` and run-time counter of the owner fail after [`LOCK_WAIT`](crate::LOCK_WAIT); and
//! `registry.toml` names every provider library. So:
//!
//! | | made | found open to others, ours | another user's (neither ours nor root's) |
//! |---|---|---|---|
//! | the folder | 0700 (and the folders made on the way) | set to 0700 | refused ([`RegistryError::ForeignOwner`]), unless this process is root |
//! | `registry.toml`, `registry.log` (its journal), `registry.lock` | 0600 (every new store and journal too) | set to 0600 | refused, unless this process is root |
//!
//! What was changed in a registry that held a store is said once, in one `log::warn` naming the
//! folder and each old and new mode; a new registry, made in a folder the user made (0755 by
//! `mkdir`), is made private without a word: nothing was exposed yet. A folder or file of root's is used as it is: another user cannot change it, and a
//! registry root made readable on purpose is root's choice.
//!
//! Root may use any user's registry (a collector reading the names an app's user installed:
//! `PRFDATA_REGISTRY` pointing there, with `--host-user`). It changes no mode in a folder it
//! does not own, and gives what it creates there (the lock file, each new store) to the
//! folder's owner, so the registry stays that user's: readable and lockable by them.

use std::fs::{DirBuilder, File};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use rustix::fs::{self as rfs, Mode, OFlags};

use super::error::RegistryError;

/// Mode bits that let anyone but the owner in.
const OTHERS: u32 = 0o077;
/// The folder's mode.
const FOLDER_MODE: u32 = 0o700;
/// The files' mode.
pub(crate) const FILE_MODE: u32 = 0o600;

/// What to do about a folder of another user.
const FOLDER_FIX: &str = "point PRFDATA_REGISTRY at a folder of your own (unset, it is \
                          $XDG_STATE_HOME/prfdata or ~/.local/state/prfdata), or ask that user or \
                          root to remove this one";
/// What to do about a file of another user in the folder.
const FILE_FIX: &str = "remove it (the folder's owner or root can); it is made again, private \
                        to its user";

/// The changes made to modes, reported together ([`Tightened::report`]).
#[derive(Debug, Default)]
pub(crate) struct Tightened(Vec<String>);

impl Tightened {
    /// Says what was changed, once, naming `root`; nothing if nothing was.
    pub(crate) fn report(self, root: &Path) {
        if !self.0.is_empty() {
            log::warn!(
                "registry {}: other users could reach it; made private to its owner: {}",
                root.display(),
                self.0.join(", ")
            );
        }
    }
}

/// The registry folder's owner: whose the files this process creates there become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Folder {
    uid: u32,
    gid: u32,
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn io<'p>(
    path: &'p Path,
    action: &'static str,
) -> impl FnOnce(rustix::io::Errno) -> RegistryError + 'p {
    move |e| RegistryError::Io {
        path: path.to_path_buf(),
        action,
        source: e.into(),
    }
}

impl Folder {
    /// Creates the folder `root` if needed (0700, with the folders on the way), then checks
    /// whose it is: ours and open to others is set to 0700 (noted in `notes`); another user's
    /// is refused unless this process is root. The folder is named by the user
    /// (`PRFDATA_REGISTRY`) or is their own state folder: a symbolic link is followed.
    pub(crate) fn open(root: &Path, notes: &mut Tightened) -> Result<Folder, RegistryError> {
        DirBuilder::new()
            .recursive(true)
            .mode(FOLDER_MODE)
            .create(root)
            .map_err(|source| RegistryError::Io {
                path: root.to_path_buf(),
                action: "create the folder",
                source,
            })?;
        let dir = rfs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io(root, "open the folder"))?;
        let st = rfs::fstat(&dir).map_err(io(root, "examine the folder"))?;
        let me = euid();
        let mode = st.st_mode & 0o7777;
        if st.st_uid == me {
            if mode & OTHERS != 0 {
                rfs::fchmod(&dir, Mode::from_raw_mode(FOLDER_MODE))
                    .map_err(io(root, "make the folder private"))?;
                notes
                    .0
                    .push(format!("folder {mode:04o} to {FOLDER_MODE:04o}"));
            }
        } else if st.st_uid != 0 && me != 0 {
            return Err(RegistryError::ForeignOwner {
                what: "registry folder",
                path: root.to_path_buf(),
                owner: st.st_uid,
                uid: me,
                fix: FOLDER_FIX,
            });
        }
        Ok(Folder {
            uid: st.st_uid,
            gid: st.st_gid,
        })
    }

    /// Checks an open file of the registry (`what`, at `path`) as [`open`](Self::open) checks
    /// the folder: ours and open to others is set to 0600 (noted); another user's is refused
    /// unless this process is root; one root made in another user's folder is given to them.
    pub(crate) fn file(
        &self,
        file: &File,
        path: &Path,
        what: &'static str,
        notes: &mut Tightened,
    ) -> Result<(), RegistryError> {
        let st = rfs::fstat(file).map_err(io(path, "examine"))?;
        let me = euid();
        let mode = st.st_mode & 0o7777;
        if st.st_uid == me {
            if mode & OTHERS != 0 {
                rfs::fchmod(file, Mode::from_raw_mode(FILE_MODE))
                    .map_err(io(path, "make private"))?;
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                notes
                    .0
                    .push(format!("{name} {mode:04o} to {FILE_MODE:04o}"));
            }
            self.adopt(file, path)
        } else if st.st_uid != 0 && me != 0 {
            Err(RegistryError::ForeignOwner {
                what,
                path: path.to_path_buf(),
                owner: st.st_uid,
                uid: me,
                fix: FILE_FIX,
            })
        } else {
            Ok(())
        }
    }

    /// Gives a file this process made in the folder to the folder's owner, when this process
    /// is root and the folder another user's (see the [module docs](self)); else nothing.
    pub(crate) fn adopt(&self, file: &File, path: &Path) -> Result<(), RegistryError> {
        if euid() != 0 || self.uid == 0 {
            return Ok(());
        }
        rfs::fchown(
            file,
            Some(rustix::process::Uid::from_raw(self.uid)),
            Some(rustix::process::Gid::from_raw(self.gid)),
        )
        .map_err(io(path, "give to the folder's owner"))
    }
}

//! Where a user's blocks live by default: the one rule the app and every reader follow (the
//! provider in a collector or in a provider host, `prfmon`'s watch leases), so that all of them
//! find the same folder. `PRFDATA_SHM_DIR`, when set, overrides it
//! ([`shm_dir`](crate::shm_dir)).
//!
//! For the process's effective uid, the first that applies:
//!
//! 1. `$XDG_RUNTIME_DIR/prfdata`, if `XDG_RUNTIME_DIR` names (by an absolute path) a directory
//!    owned by that uid that no one else may enter (mode 0700): what the XDG Base Directory
//!    Specification requires of the variable, and what systemd-logind makes for each user
//!    (`/run/user/<uid>`, a tmpfs). Nobody else can create anything there.
//! 2. `/run/user/<uid>/prfdata`, if `/run/user/<uid>` is such a directory: the same folder for
//!    the user's processes that did not inherit the variable (a cron job, `sudo -u`, a system
//!    service run as the user while the user has a session), and for a provider host that a
//!    root collector runs as the app's user (`--host-user`): its environment is root's, whose
//!    runtime folder is not the user's and fails the ownership check of step 1.
//! 3. `/dev/shm/prfdata-<uid>`, in the world-writable, sticky `/dev/shm`: another user can take
//!    this name first. Then [`DirError::Taken`] names the owner and what to do (set
//!    `PRFDATA_SHM_DIR`, run in a session with `XDG_RUNTIME_DIR`, or have that user or root
//!    remove it); the user cannot remove it themselves.
//!
//! The `prfdata` folder is created 0700 if missing, and used only if it is a directory of that
//! uid that no one else may enter. An app started with a `XDG_RUNTIME_DIR` other than
//! `/run/user/<uid>` is found only by collectors that have the same variable (or the same
//! `PRFDATA_SHM_DIR`).
//!
//! Like `/dev/shm`, `/run/user/<uid>` is removed by systemd-logind when the user's last session
//! ends (unless the user lingers), as `RemoveIPC=yes` removes the user's files from `/dev/shm`
//! then: an app that must outlive its user's sessions runs as a system user or sets
//! `PRFDATA_SHM_DIR`.

use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode};

/// The variable naming the user's runtime folder (XDG Base Directory Specification).
const RUNTIME_ENV: &str = "XDG_RUNTIME_DIR";
/// Where systemd-logind makes each user's runtime folder: `/run/user/<uid>`.
const SYSTEMD_RUNTIME_BASE: &str = "/run/user";
/// The folder made inside a runtime folder.
const RUNTIME_SUBDIR: &str = "prfdata";
/// The fallback's base: `/dev/shm/prfdata-<uid>`.
const SHM_BASE: &str = "/dev/shm";

/// Why the default folder cannot be used.
#[derive(Debug)]
pub(crate) enum DirError {
    /// Another user owns what is at the folder's path.
    Taken {
        /// The folder.
        dir: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// It is ours but not a private directory, or could not be made.
    Unusable {
        /// The folder.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// The default folder for blocks of the effective uid (see the [module docs](self)), created
/// 0700 if missing.
pub(crate) fn default_dir() -> Result<PathBuf, DirError> {
    let uid = rustix::process::geteuid().as_raw();
    let dir = match runtime_dir(uid) {
        Some(runtime) => runtime.join(RUNTIME_SUBDIR),
        None => Path::new(SHM_BASE).join(format!("prfdata-{uid}")),
    };
    ensure_private_dir(&dir, uid)?;
    Ok(dir)
}

/// Steps 1 and 2 of the rule: the user's runtime folder, if there is a valid one.
fn runtime_dir(uid: u32) -> Option<PathBuf> {
    if let Some(var) = std::env::var_os(RUNTIME_ENV).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(var);
        // The user named it: a link there is followed, then the directory itself checked.
        if dir.is_absolute() && rfs::stat(&dir).is_ok_and(|st| private_dir_of(&st, uid)) {
            return Some(dir);
        }
        log::debug!(
            "{RUNTIME_ENV}={} is not a directory of uid {uid} with mode 0700; not used for \
             blocks",
            dir.display()
        );
    }
    let dir = Path::new(SYSTEMD_RUNTIME_BASE).join(uid.to_string());
    rfs::lstat(&dir)
        .is_ok_and(|st| private_dir_of(&st, uid))
        .then_some(dir)
}

/// Whether `st` is a directory of `uid` that no one else may enter.
fn private_dir_of(st: &rfs::Stat, uid: u32) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Directory
        && st.st_uid == uid
        && st.st_mode & 0o077 == 0
}

/// Makes `dir` (mode 0700) if it is missing, then checks that what is there (never through a
/// link: it may have been made by someone else first) is a private directory of `uid`.
fn ensure_private_dir(dir: &Path, uid: u32) -> Result<(), DirError> {
    let unusable = |source: io::Error| DirError::Unusable {
        dir: dir.to_path_buf(),
        source,
    };
    match rfs::mkdir(dir, Mode::RWXU) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(unusable(e.into())),
    }
    let st = rfs::lstat(dir).map_err(|e| unusable(e.into()))?;
    if st.st_uid != uid {
        return Err(DirError::Taken {
            dir: dir.to_path_buf(),
            owner: st.st_uid,
        });
    }
    if !private_dir_of(&st, uid) {
        return Err(unusable(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "it is a {} with mode {:04o}, not a directory with mode 0700; remove it (it is \
                 yours) and it is made again",
                super::shm::file_kind(st.st_mode),
                st.st_mode & 0o7777
            ),
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn stat(path: &Path) -> rfs::Stat {
        rfs::lstat(path).unwrap()
    }

    #[test]
    fn a_private_folder_is_made_and_accepted_again() {
        let tmp = tempfile::tempdir().unwrap();
        let uid = rustix::process::geteuid().as_raw();
        let dir = tmp.path().join("prfdata");
        ensure_private_dir(&dir, uid).unwrap();
        assert!(private_dir_of(&stat(&dir), uid));
        ensure_private_dir(&dir, uid).unwrap();
    }

    #[test]
    fn a_folder_open_to_others_or_a_file_is_refused_and_one_of_another_uid_is_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let uid = rustix::process::geteuid().as_raw();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        match ensure_private_dir(&open, uid) {
            Err(DirError::Unusable { source, .. }) => {
                let text = source.to_string();
                assert!(
                    text.contains("mode 0755") && text.contains("remove it"),
                    "{text}"
                );
            }
            other => panic!("{other:?}"),
        }
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(
            ensure_private_dir(&file, uid),
            Err(DirError::Unusable { .. })
        ));
        // The same folder seen as another uid's: taken, naming its owner.
        match ensure_private_dir(&open, uid.wrapping_add(1)) {
            Err(DirError::Taken { owner, .. }) => assert_eq!(owner, uid),
            other => panic!("{other:?}"),
        }
    }
}

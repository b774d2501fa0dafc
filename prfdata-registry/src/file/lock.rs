//! The cross-process lock every update holds: a `flock` on `registry.lock` (see the
//! [module docs](super#atomicity-and-locking)).

use std::fs::File;
use std::time::{Duration, Instant};

use super::{FileRegistry, LOCK_WAIT};
use crate::error::RegistryError;
use crate::paths;
use crate::privacy::{Tightened, FILE_MODE};
use prfdata_untrusted::{Symlinks, UntrustedFile};

/// How `registry.lock` is opened: a regular file, never through a link. It stays empty and is
/// never read, so its cap is never used.
const LOCK_RULE: UntrustedFile = UntrustedFile {
    what: "registry lock file",
    max_size: super::MAX_STORE_SIZE,
    limit_name: "prfdata_registry::MAX_STORE_SIZE, 16 MiB",
    symlinks: Symlinks::Refuse,
};

impl FileRegistry {
    /// Opens `registry.lock`, creating it if needed (0600): a regular file, never through a
    /// link, and never waiting on a FIFO; its owner and mode checked (see
    /// [`Folder::file`](crate::privacy::Folder::file)).
    fn open_lock_file(&self, notes: &mut Tightened) -> Result<File, RegistryError> {
        let path = self.root.join(paths::LOCK_FILE);
        let file = LOCK_RULE.open_or_create(&path, FILE_MODE)?;
        self.folder
            .file(&file, &path, "registry lock file", notes)?;
        Ok(file)
    }

    /// Takes the lock if it is free now: `Ok(None)` if another process holds it.
    pub(super) fn try_lock(&self, notes: &mut Tightened) -> Result<Option<File>, RegistryError> {
        let file = self.open_lock_file(notes)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(file)),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => {
                Ok(None)
            }
            Err(e) => Err(RegistryError::Io {
                path: self.root.join(paths::LOCK_FILE),
                action: "lock",
                source: e.into(),
            }),
        }
    }

    /// Takes the lock, waiting at most [`LOCK_WAIT`]; it is held until the file is closed.
    pub(super) fn lock(&self) -> Result<File, RegistryError> {
        let path = self.root.join(paths::LOCK_FILE);
        let io = |action, source| RegistryError::Io {
            path: path.clone(),
            action,
            source,
        };
        let mut notes = Tightened::default();
        let file = self.open_lock_file(&mut notes)?;
        notes.report(&self.root);
        let deadline = Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(1);
        loop {
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(file),
                Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => {}
                Err(e) => return Err(io("lock", e.into())),
            }
            if Instant::now() >= deadline {
                return Err(RegistryError::LockTimeout {
                    path,
                    seconds: LOCK_WAIT.as_secs(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

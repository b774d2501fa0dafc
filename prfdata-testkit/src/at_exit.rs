//! Folders a test process removes when it exits: what a `static` holds (a shared
//! [`Sandbox`](crate::Sandbox), a module's one registry) is never dropped, so its temp folder
//! would outlive every run.
//!
//! Removed at a normal exit (libtest returns from `main` or calls `exit`, whether tests
//! passed or failed); a process killed by a signal leaves its folders.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, PoisonError};

/// The folders to remove.
static FOLDERS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Registers [`remove_all`] with `atexit`, once.
static REGISTER: Once = Once::new();

extern "C" fn remove_all() {
    let folders = std::mem::take(&mut *FOLDERS.lock().unwrap_or_else(PoisonError::into_inner));
    for folder in folders {
        let _ = std::fs::remove_dir_all(folder);
    }
}

/// Removes `folder` (and everything in it) when this process exits normally.
///
/// # Examples
///
/// ```
/// use std::sync::OnceLock;
/// // One sandbox for all tests of a module, gone after the run.
/// fn shared() -> &'static prfdata_testkit::Sandbox {
///     static SHARED: OnceLock<prfdata_testkit::Sandbox> = OnceLock::new();
///     SHARED.get_or_init(|| {
///         let sandbox = prfdata_testkit::Sandbox::new();
///         prfdata_testkit::remove_at_exit(sandbox.dir.path());
///         sandbox
///     })
/// }
/// assert!(shared().shm.is_dir());
/// ```
pub fn remove_at_exit(folder: &Path) {
    REGISTER.call_once(|| {
        // SAFETY: `remove_all` is an `extern "C" fn()` that does not unwind (it takes a list out
        // of a mutex, poisoned or not, and removes folders, ignoring errors) and stays valid for
        // the process lifetime.
        unsafe {
            libc::atexit(remove_all);
        }
    });
    FOLDERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(folder.to_path_buf());
}

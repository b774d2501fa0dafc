//! The process's `PRFDATA_REGISTRY` and `PRFDATA_SHM_DIR`, one test at a time.
//!
//! A provider loaded into the test process (an in-process collector) finds the registry and
//! the blocks through the process's environment, which every test of the binary shares. A
//! test that needs them set holds a [`ProcessEnv`] for as long as it collects: tests that hold
//! one run one after another, each with its own folders, and the variables are put back as
//! they were when it is dropped. Children a test spawns inherit the variables; a child that
//! must not gets its environment explicitly (see [`crate::Sandbox::apply_env`]).

use std::ffi::OsString;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The variables a [`ProcessEnv`] sets.
pub const VARIABLES: [&str; 2] = ["PRFDATA_REGISTRY", "PRFDATA_SHM_DIR"];

/// Held while a test has the variables.
static HOLDER: Mutex<()> = Mutex::new(());

/// This process's `PRFDATA_REGISTRY` and `PRFDATA_SHM_DIR`, set for one test; restored when
/// dropped.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let env = prfdata_testkit::ProcessEnv::set(&dir.path().join("registry"), &dir.path().join("shm"));
/// assert_eq!(std::env::var_os("PRFDATA_SHM_DIR"), Some(dir.path().join("shm").into()));
/// drop(env); // the next test may set its own
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ProcessEnv {
    before: Vec<(&'static str, Option<OsString>)>,
    _held: MutexGuard<'static, ()>,
}

impl ProcessEnv {
    /// Waits until no other test holds the variables, then sets them to `registry` and `shm`.
    pub fn set(registry: &Path, shm: &Path) -> Self {
        // A test that panicked while holding them has dropped its guard (restoring them):
        // the lock's poison says nothing about the variables.
        let held = HOLDER.lock().unwrap_or_else(PoisonError::into_inner);
        let before = VARIABLES
            .iter()
            .map(|name| (*name, std::env::var_os(name)))
            .collect();
        // Only tests that hold the lock change these variables (edition 2021: set_var is
        // safe; std serialises it with its own readers).
        std::env::set_var(VARIABLES[0], registry);
        std::env::set_var(VARIABLES[1], shm);
        Self {
            before,
            _held: held,
        }
    }
}

impl Drop for ProcessEnv {
    fn drop(&mut self) {
        for (name, value) in &self.before {
            match value {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
    }
}

//! The [`Registry`] trait: a hierarchical key store that is read as a consistent snapshot and
//! changed by atomic, serialised read-modify-write updates.
//!
//! Everything above the store (lodctr, services, `reg add`) is written against this trait, so a
//! Windows backend (the real registry, updated in a KTM transaction) is a swap for
//! [`FileRegistry`](super::FileRegistry).

use super::error::RegistryError;
use super::hive::Hive;
use super::stamp::StoreStamp;

/// Whether an update's edit is to be written or thrown away.
///
/// # Examples
///
/// ```
/// use prfdata_registry::Commit;
/// assert_ne!(Commit::Write, Commit::Discard);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Write the edited tree.
    Write,
    /// Keep the store as it was.
    Discard,
}

/// A registry store.
///
/// Implementations guarantee:
/// - [`snapshot`](Registry::snapshot) returns one committed state, never a mix of two.
/// - [`transact`](Registry::transact) holds an exclusive cross-process lock from the read of
///   the current state to the end of the write, so concurrent updates are serialised and none
///   is lost; the write is atomic (a process killed at any point leaves the old state or the
///   new one).
///
/// Most callers use the typed helper [`update`] instead of `transact`.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{update, FileRegistry, Registry, RegistryError, Value};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// update(&reg, |hive| hive.set_value(r"HKLM\SOFTWARE\Demo", "Answer", Value::Dword(42)))?;
/// let hive = reg.snapshot()?;
/// assert_eq!(hive.value(r"HKLM\SOFTWARE\Demo", "Answer")?, Some(&Value::Dword(42)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Registry {
    /// Reads the current committed state.
    fn snapshot(&self) -> Result<Hive, RegistryError>;

    /// Runs `edit` on the current state under the store's exclusive lock, then writes the
    /// result atomically if `edit` returns [`Commit::Write`] and the tree changed.
    fn transact(&self, edit: &mut dyn FnMut(&mut Hive) -> Commit) -> Result<(), RegistryError>;

    /// What tells, cheaply, whether the store changed: a different stamp from one call to the
    /// next means it may have; the same one that it has not. `None` when the store cannot tell
    /// (the default): a reader that depends on it then reads the store once and keeps what it
    /// read.
    fn stamp(&self) -> Option<StoreStamp> {
        None
    }
}

/// Applies `edit` to the registry as one atomic, serialised update. If `edit` returns an error
/// nothing is written and the error is returned.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{update, FileRegistry, Registry, RegistryError, Value};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// let before = reg.snapshot()?;
/// let res: Result<(), RegistryError> = update(&reg, |hive| {
///     hive.set_value(r"HKLM\SOFTWARE\Demo", "x", Value::Dword(1))?;
///     Err(RegistryError::KeyNotFound("made up".into())) // abort: nothing is written
/// });
/// assert!(res.is_err());
/// assert_eq!(reg.snapshot()?, before);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn update<R, T, E>(registry: &R, edit: impl FnOnce(&mut Hive) -> Result<T, E>) -> Result<T, E>
where
    R: Registry + ?Sized,
    E: From<RegistryError>,
{
    let mut edit = Some(edit);
    let mut outcome: Option<Result<T, E>> = None;
    registry.transact(&mut |hive| {
        let Some(f) = edit.take() else {
            return Commit::Discard;
        };
        let result = f(hive);
        let commit = if result.is_ok() {
            Commit::Write
        } else {
            Commit::Discard
        };
        outcome = Some(result);
        commit
    })?;
    // A backend that returns Ok without running the edit breaks the trait's contract; report
    // it rather than pretend the edit happened.
    outcome.unwrap_or_else(|| Err(E::from(RegistryError::EditNotRun)))
}

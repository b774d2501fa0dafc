//! Fault injection (cargo feature `fault-injection`, tests only): an updating process kills
//! itself at a named point, and counts what it wrote. Without the feature there is no hook.

/// The fault-injection variable (feature `fault-injection`, for tests only): set it to a fault
/// point (see the [module docs](super#atomicity-and-locking)) to make the next update in this
/// process kill itself there.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_registry::FAULT_ENV, "PRFDATA_REGISTRY_FAULT");
/// ```
#[cfg(feature = "fault-injection")]
pub const FAULT_ENV: &str = "PRFDATA_REGISTRY_FAULT";

/// How many times this process has written a whole store (feature `fault-injection`, for
/// tests: a test counts the full rewrites an operation costs). A new registry and every fold of
/// the journal into the store count; an update appended to the journal does not (see
/// [`log_appends`]).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{log_appends, store_writes, update, FileRegistry, Value};
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?; // a new registry: one write
/// let (writes, appends) = (store_writes(), log_appends());
/// update(&reg, |hive| hive.set_value(r"HKLM\SOFTWARE\Demo", "X", Value::Dword(1)))?;
/// update(&reg, |hive| hive.set_value(r"HKLM\SOFTWARE\Demo", "X", Value::Dword(1)))?;
/// assert_eq!(store_writes() - writes, 0, "a small update goes to the journal");
/// assert_eq!(log_appends() - appends, 1, "an update that changes nothing writes nothing");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "fault-injection")]
pub fn store_writes() -> u64 {
    counters::STORE_WRITES.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many updates this process has appended to a journal (feature `fault-injection`, for
/// tests; see [`store_writes`]).
#[cfg(feature = "fault-injection")]
pub fn log_appends() -> u64 {
    counters::LOG_APPENDS.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(feature = "fault-injection")]
mod counters {
    use std::sync::atomic::AtomicU64;

    /// The count [`store_writes`](super::store_writes) returns.
    pub(super) static STORE_WRITES: AtomicU64 = AtomicU64::new(0);
    /// The count [`log_appends`](super::log_appends) returns.
    pub(super) static LOG_APPENDS: AtomicU64 = AtomicU64::new(0);
}

/// Counts a whole store written.
#[inline(always)]
pub(super) fn count_store_write() {
    #[cfg(feature = "fault-injection")]
    counters::STORE_WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Counts a record appended to the journal.
#[inline(always)]
pub(super) fn count_log_append() {
    #[cfg(feature = "fault-injection")]
    counters::LOG_APPENDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`FAULT_ENV`] names the fault point `name`.
#[cfg(feature = "fault-injection")]
pub(super) fn fault_point(name: &str) -> bool {
    std::env::var_os(FAULT_ENV).is_some_and(|v| v == name)
}

/// Without the feature `fault-injection` there is no hook: never a fault point.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(super) fn fault_point(_name: &str) -> bool {
    false
}

/// Dies the way a killed process does: no destructors, no flushing, no unlock.
pub(super) fn die() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    std::process::abort()
}

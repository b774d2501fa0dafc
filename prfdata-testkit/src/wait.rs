//! Bounded waits: a test that waits for something that never happens fails, naming it, instead
//! of hanging CI.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The default bound on one wait (a process to end, an app to publish). Generous: these
/// machines are small and shared, and a bound only has to turn a hang into a failure.
pub const WAIT: Duration = Duration::from_secs(60);

/// How often [`wait_until`] looks again.
const POLL: Duration = Duration::from_millis(5);

/// Runs `f` on another thread and returns what it returns; panics if it takes longer than
/// `limit` (the thread is left behind) or if `f` panicked.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let answer = prfdata_testkit::bounded(Duration::from_secs(10), || 6 * 7);
/// assert_eq!(answer, 42);
/// ```
pub fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(RecvTimeoutError::Timeout) => panic!("did not finish within {limit:?}"),
        Err(RecvTimeoutError::Disconnected) => panic!("the bounded work panicked"),
    }
}

/// Calls `check` every few milliseconds until it gives `Some`, and returns that; panics
/// after `limit`, saying that `what` did not happen.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let done = Arc::new(AtomicBool::new(false));
/// let worker = {
///     let done = Arc::clone(&done);
///     std::thread::spawn(move || done.store(true, Ordering::SeqCst))
/// };
/// prfdata_testkit::wait_until(Duration::from_secs(10), "the worker", || {
///     done.load(Ordering::SeqCst).then_some(())
/// });
/// worker.join().unwrap();
/// ```
pub fn wait_until<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(POLL);
    }
}

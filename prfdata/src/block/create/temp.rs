//! The temporary files of activations: `.<app>.<pid>.<n>.tmp`, and their removal when the
//! process that made one was killed before it published it.
//!
//! An activation creates its temporary file, takes its `flock` at once, fills it and renames it
//! to the block's name; only a process killed in between leaves it behind. The next activation
//! in the folder (of any app) removes such a file when both say its creator is gone:
//!
//! - its `flock` is free (the kernel drops a dead process's locks, however it died), and
//! - no process has the pid in its name.
//!
//! The second check covers the instant between another activation's `open` and its `flock`; a
//! file whose creator's pid went to another process meanwhile stays until that process is gone
//! too. Only regular files of ours, owned by this user with no access for others, whose names
//! have exactly this form, are ever removed.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;

use crate::block::open::remove_if_same;
use crate::map::validate::valid_app_name;
use crate::process::{probe, Probe};
use crate::sys::shm;

/// The temporary file name of an activation of `app` by process `pid`; `n` makes it unique.
pub(super) fn name(app: &str, pid: u32, n: u64) -> String {
    format!(".{app}.{pid}.{n}.tmp")
}

/// The pid in a temporary file name made by [`name`], or `None` if `file_name` is not one.
fn creator(file_name: &OsStr) -> Option<u32> {
    let stem = file_name
        .to_str()?
        .strip_prefix('.')?
        .strip_suffix(".tmp")?;
    let mut parts = stem.rsplitn(3, '.');
    let n = parts.next()?;
    let pid = parts.next()?;
    let app = parts.next()?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(n) || !digits(pid) || !valid_app_name(app) {
        return None;
    }
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Removes the temporary files in `dir` whose creators are gone. Best effort: a file that
/// cannot be checked is left alone.
pub(super) fn remove_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = creator(&file_name) else {
            continue;
        };
        if probe(pid) != Probe::Gone {
            continue;
        }
        let path = dir.join(&file_name);
        let Ok((file, id)) = shm::open_regular(&path, false) else {
            continue;
        };
        if id.uid != shm::current_uid() || id.mode & 0o077 != 0 {
            continue;
        }
        // Held while the file is removed: no activation that is still running can own it.
        if shm::try_lock_exclusive(&file).unwrap_or(false) {
            remove_if_same(&path, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_nothing_else_is_taken_for_one() {
        let made = name("My.App-1", 4242, 17);
        assert_eq!(made, ".My.App-1.4242.17.tmp");
        assert_eq!(creator(OsStr::new(&made)), Some(4242));
        for other in [
            "My.App-1.blk",
            ".My.App-1.4242.tmp",
            ".My.App-1.x.17.tmp",
            ".My.App-1.4242.17.tmp.bak",
            "..4242.17.tmp",
            "./a.1.2.tmp",
            ".a.99999999999.2.tmp",
            ".a.1.99999999999999999999999.tmp",
            ".registry.1234.tmp",
        ] {
            assert_eq!(creator(OsStr::new(other)), None, "{other}");
        }
    }
}

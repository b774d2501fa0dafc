//! Bytes placed as an app's live block, as a publishing app leaves it: a regular file, owner
//! only (0600), renamed into place, its owner's `flock` held and a presence lock taken (by this
//! process, through open files of its own: `prfdata::layout::PRESENCE_BASE`) so that readers
//! take it for a running app's block and not a dead one's.
//!
//! Each placement is a new file renamed over the old one, as an app that restarts makes it, so
//! a reader that cached the previous block sees it replaced; and, as the previous app's last
//! process (or the activation that replaces a dead app's block) would, the old block is marked
//! closed first, so that a reader that checks a block's path only now and then (the provider,
//! every 10 ms) still opens the new one at its next read.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rustix::fs::{flock, FlockOperation};

/// A block placed at a path; its owner's locks are held while this lives.
#[derive(Debug)]
pub struct PlacedBlock {
    path: PathBuf,
    _owner: File,
    /// A description of its own holding a presence lock (readers ask for anyone present).
    _presence: File,
}

impl PlacedBlock {
    /// The block's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets the block's `closed` word, as the last process of an app does before it removes its
    /// block (nothing for a file shorter than the header).
    pub fn mark_closed(&self) {
        use std::os::unix::fs::FileExt;
        let long_enough = self
            ._owner
            .metadata()
            .is_ok_and(|m| m.len() >= prfdata::layout::HEADER_SIZE as u64);
        if long_enough {
            let _ = self
                ._owner
                .write_all_at(&1u32.to_ne_bytes(), prfdata::layout::CLOSED_OFFSET as u64);
        }
    }
}

/// Writes `bytes` as the block at `path` (replacing what is there) and holds its owner lock.
///
/// # Panics
///
/// If the scratch folder cannot be written: the harness cannot go on.
///
/// # Examples
///
/// ```
/// let env = prfdata_fuzz::env::get();
/// let placed = prfdata_fuzz::block_file::place(&env.work.join("Doc.blk"), b"not a block");
/// assert_eq!(std::fs::read(placed.path())?, b"not a block");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn place(path: &Path, bytes: &[u8]) -> PlacedBlock {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!("tmp{}", SERIAL.fetch_add(1, Ordering::Relaxed)));
    let fail =
        |what: &str, e: std::io::Error| -> ! { panic!("cannot {what} {}: {e}", tmp.display()) };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .unwrap_or_else(|e| fail("create", e));
    file.write_all(bytes).unwrap_or_else(|e| fail("write", e));
    flock(&file, FlockOperation::LockExclusive).unwrap_or_else(|e| fail("lock", e.into()));
    let presence = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&tmp)
        .unwrap_or_else(|e| fail("open again", e));
    present(&presence).unwrap_or_else(|e| fail("take a presence lock on", e));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| fail("rename", e));
    PlacedBlock {
        path: path.to_path_buf(),
        _owner: file,
        _presence: presence,
    }
}

/// A shared open-file-description lock on the first presence byte (`F_OFD_SETLK`, `F_RDLCK`),
/// as a process of the app holds its own.
fn present(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` is a plain C struct of integers, valid when zeroed.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_RDLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = prfdata::layout::PRESENCE_BASE as libc::off_t;
    lock.l_len = 1;
    // SAFETY: `file` is open; `lock` is a valid `struct flock` for `F_OFD_SETLK`.
    let rc = unsafe {
        libc::fcntl(
            file.as_raw_fd(),
            libc::F_OFD_SETLK,
            &mut lock as *mut libc::flock,
        )
    };
    if rc == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Places `bytes` as the block of the provider's app (`PrfDataFuzz` in `PRFDATA_SHM_DIR`),
/// marking the previous placement closed first and releasing its lock after the new one is in
/// place.
///
/// # Examples
///
/// ```
/// let t = &prfdata_fuzz::env::templates()[2];
/// prfdata_fuzz::block_file::place_app_block(&t.bytes);
/// let env = prfdata_fuzz::env::get();
/// assert!(env.shm.join("PrfDataFuzz.blk").exists());
/// ```
pub fn place_app_block(bytes: &[u8]) {
    static CURRENT: Mutex<Option<PlacedBlock>> = Mutex::new(None);
    let path = crate::env::get()
        .shm
        .join(format!("{}.blk", crate::maps::rich::MAP.app));
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(previous) = current.as_ref() {
        previous.mark_closed();
    }
    *current = Some(place(&path, bytes));
}

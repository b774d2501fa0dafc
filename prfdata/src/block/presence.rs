//! Which processes are attached to a block, as the locks they hold on its file tell it, rather
//! than the block (any process of the user can write it) or a pid (which names a process only
//! in its own pid namespace: a collector in a sidecar container sees none of the app's).
//!
//! Every process that writes a block holds a shared lock on its *presence byte*
//! ([`presence_offset`]: its pid and start tag, past the end of the block) through a file
//! description of its own, opened for it ([`Presence`]). Whether a process is there is then
//! one `F_OFD_GETLK` through a description that holds no such lock ([`Probe`]): the kernel
//! keeps the answer exact whoever asks, from whichever pid namespace, and drops a lock when its
//! process dies, however it dies. What asks: the optex's dead-owner check ([`Probe`] is an
//! [`OwnerCheck`]), the members table's pruning, the writer's and the reader's judgement of
//! process-owned instances, and a reader asking whether any process of the app is left.
//!
//! `fork`: a child inherits its parent's descriptors, and a description's locks live as long as
//! any copy of it. So that a dead parent's presence does not live on in its children, the
//! presence descriptors are kept in a table ([`SLOTS`] entries) whose every descriptor a
//! `pthread_atfork` handler closes in the child; a child that writes the block through an
//! inherited handle takes its own presence first ([`ensure_here`]). Past [`SLOTS`] presences in
//! one process, a presence stays open in children until they drop the handle: its process then
//! looks alive while they live, which only delays a recovery, never wrongs a live process.

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Once;

use crate::layout::{presence_offset, PRESENCE_BASE};
use crate::optex::OwnerCheck;
use crate::process::{start_tag, ProcessId};
use crate::sys::range_lock;

/// Presence descriptors a process keeps where a fork can close them: far more blocks than a
/// process opens (an app's block and its run-time block, per handle).
pub(crate) const SLOTS: usize = 256;

/// A free slot's descriptor.
const FREE: i32 = -1;
/// A slot being filled.
const FILLING: i32 = -2;

/// One presence descriptor: its process and block file.
struct Slot {
    fd: AtomicI32,
    pid: AtomicU32,
    dev: AtomicU64,
    ino: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    fd: AtomicI32::new(FREE),
    pid: AtomicU32::new(0),
    dev: AtomicU64::new(0),
    ino: AtomicU64::new(0),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// Registers the fork handler that closes the table in a child, once.
static REGISTER: Once = Once::new();
/// Whether it is registered (else nothing goes into the table).
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Runs in the child of every `fork()`: the presences in the table are the parent's.
extern "C" fn close_in_child() {
    // Only atomics and `close`: async-signal-safe, as a fork handler must be.
    for slot in &TABLE {
        let fd = slot.fd.swap(FREE, Ordering::Relaxed);
        if fd >= 0 {
            // SAFETY: `fd` was stored by `Presence::take` from a descriptor it owned and is
            // closed only by whoever swaps it out of the slot (here, in the child's copy).
            unsafe { libc::close(fd) };
        }
    }
}

/// The key of a block file: device and inode.
fn file_key(file: &File) -> io::Result<(u64, u64)> {
    let id = crate::sys::shm::identity(file)?;
    Ok((id.dev, id.ino))
}

/// A process's presence on a block file: held from [`Presence::take`] until dropped (by the
/// process that took it; a forked child's copy does nothing).
#[derive(Debug)]
pub(crate) struct Presence {
    held: Held,
    /// The process that took it.
    pid: u32,
}

#[derive(Debug)]
enum Held {
    /// In the table: closed in forked children.
    Slot(usize),
    /// The table was full.
    File(#[allow(dead_code)] File),
}

impl Presence {
    /// Takes `me`'s presence on the block `file` is open on (at `path`): a new description
    /// of the file, with a shared lock on `me`'s presence byte.
    pub(crate) fn take(file: &File, path: &Path, me: ProcessId) -> io::Result<Presence> {
        let own = range_lock::reopen(file, path)?;
        let at = presence_offset(me.pid, start_tag(me.start_time));
        if !range_lock::lock_shared(&own, at, 1)? {
            return Err(io::Error::other("a presence byte is locked exclusively"));
        }
        Ok(Presence {
            held: keep(own, me.pid, file_key(file)?),
            pid: me.pid,
        })
    }

    /// The process that took it.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }
}

/// Puts `own` into the table (or keeps it as it is when the table is full).
fn keep(own: File, pid: u32, (dev, ino): (u64, u64)) -> Held {
    REGISTER.call_once(|| {
        let ok = crate::sys::process::on_fork_child(close_in_child);
        REGISTERED.store(ok, Ordering::Release);
    });
    if !REGISTERED.load(Ordering::Acquire) {
        return Held::File(own);
    }
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .fd
            .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            slot.pid.store(pid, Ordering::Relaxed);
            slot.dev.store(dev, Ordering::Relaxed);
            slot.ino.store(ino, Ordering::Relaxed);
            slot.fd.store(own.into_raw_fd(), Ordering::Release);
            return Held::Slot(i);
        }
    }
    Held::File(own)
}

impl Drop for Presence {
    fn drop(&mut self) {
        if self.pid != crate::sys::process::current_pid() {
            // A forked child's copy: the fork handler closed the child's descriptor, and the
            // slot may hold the child's own presence now.
            return;
        }
        if let Held::Slot(i) = self.held {
            let fd = TABLE[i].fd.swap(FREE, Ordering::AcqRel);
            if fd >= 0 {
                // SAFETY: the slot held a descriptor this process stored and nothing else
                // closes: it was swapped out just now, so it is closed once.
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
    }
}

/// Makes sure this process is present on the block `file` is open on (at `path`), for a
/// forked child writing through a handle its parent opened: takes a presence of its own once,
/// kept until the process exits. Never fails: if no description of its own can be opened, the
/// lock goes on `file`'s own description (shared with the parent: the child then looks alive
/// as long as either lives, which only delays the recovery of a lock it dies holding).
#[cold]
pub(crate) fn ensure_here(file: &File, path: &Path) {
    let me = ProcessId::current();
    let Ok((dev, ino)) = file_key(file) else {
        return;
    };
    let mine = TABLE.iter().any(|s| {
        s.fd.load(Ordering::Acquire) >= 0
            && s.pid.load(Ordering::Relaxed) == me.pid
            && s.dev.load(Ordering::Relaxed) == dev
            && s.ino.load(Ordering::Relaxed) == ino
    });
    if mine {
        return;
    }
    match Presence::take(file, path, me) {
        // Kept for the process's life: never dropped.
        Ok(presence) => std::mem::forget(presence),
        Err(e) => {
            log::warn!(
                "{}: no presence of its own for process {} ({e}); using its parent's file",
                path.display(),
                me.pid
            );
            let at = presence_offset(me.pid, start_tag(me.start_time));
            let _ = range_lock::lock_shared(file, at, 1);
        }
    }
}

/// Asks whether processes are present on a block, through `file`, a description of it that
/// holds no presence lock (a handle's main descriptor, or a reader's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<'a>(pub(crate) &'a File);

impl Probe<'_> {
    /// Whether the process `pid` with start tag `tag` holds its presence; `None` if the kernel
    /// would not say.
    pub(crate) fn present(&self, pid: u32, tag: u32) -> Option<bool> {
        range_lock::held_by_others(self.0, presence_offset(pid, tag), 1).ok()
    }

    /// Whether `id` is there: `false` only when its presence is certainly not held (its own
    /// process is always there).
    pub(crate) fn is_alive(&self, id: ProcessId) -> bool {
        id == ProcessId::current() || self.present(id.pid, start_tag(id.start_time)) != Some(false)
    }

    /// Whether any process holds a presence on the block (`true` when the kernel would not
    /// say).
    pub(crate) fn anyone(&self) -> bool {
        range_lock::held_by_others(self.0, PRESENCE_BASE, 0).unwrap_or(true)
    }
}

impl OwnerCheck for Probe<'_> {
    fn is_dead(&self, pid: u32, tag: u32) -> bool {
        self.present(pid, tag) == Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> (tempfile::TempDir, File, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.blk");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        (dir, file, path)
    }

    #[test]
    fn a_presence_is_seen_through_the_main_descriptor_until_dropped() {
        let (_dir, file, path) = block();
        let me = ProcessId::current();
        let other = ProcessId {
            pid: me.pid,
            start_time: me.start_time + 1,
        };
        let probe = Probe(&file);
        assert!(!probe.anyone());
        assert_eq!(probe.present(me.pid, start_tag(me.start_time)), Some(false));
        let presence = Presence::take(&file, &path, me).unwrap();
        assert!(probe.anyone());
        assert_eq!(probe.present(me.pid, start_tag(me.start_time)), Some(true));
        assert!(
            !probe.is_alive(other),
            "another start time is another process"
        );
        assert!(probe.is_dead(other.pid, start_tag(other.start_time)));
        assert!(!probe.is_dead(me.pid, start_tag(me.start_time)));
        drop(presence);
        assert!(!probe.anyone());
        assert!(
            probe.is_alive(me),
            "this process is always there for itself"
        );
    }

    #[test]
    fn a_forked_child_drops_its_parents_presence_and_takes_its_own() {
        let (_dir, file, path) = block();
        let me = ProcessId::current();
        let presence = Presence::take(&file, &path, me).unwrap();
        let probe = Probe(&file);
        // SAFETY: the child only reads `/proc`, takes locks, makes system calls and atomics,
        // and leaves with `_exit` (no destructors of the parent's state run in it).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let child = ProcessId::current();
            // The fork handler closed the inherited presence: the parent's byte is held by
            // the parent alone; the child has none until it asks.
            let before = probe.present(child.pid, start_tag(child.start_time)) == Some(false);
            ensure_here(&file, &path);
            let after = probe.present(child.pid, start_tag(child.start_time)) == Some(true);
            // SAFETY: `_exit` has no preconditions.
            unsafe { libc::_exit(if before && after { 0 } else { 1 }) }
        }
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` a valid out-pointer.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
        assert!(probe.anyone(), "the parent's presence stays");
        drop(presence);
        assert!(!probe.anyone(), "nothing of the child's is left");
    }
}

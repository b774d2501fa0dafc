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
//! any copy of it. So that a dead parent's presence does not live on in its children, and each
//! child is present under its own name, the presence descriptors are kept in a table ([`SLOTS`]
//! entries) that a `pthread_atfork` handler goes through in the child: it closes the parent's
//! descriptor and takes the child's own presence on the same block (async-signal-safe calls
//! only). A child whose presence could not be taken there takes it before it writes the block
//! ([`ensure_here`]). Past [`SLOTS`] presences in one process, a presence stays open in
//! children until they drop the handle: its process then looks alive while they live, which
//! only delays a recovery, never wrongs a live process.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
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

/// One presence descriptor: its process and block file, and the descriptor of the block it
/// was opened from (for a forked child to open it again).
struct Slot {
    fd: AtomicI32,
    main: AtomicI32,
    pid: AtomicU32,
    dev: AtomicU64,
    ino: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    fd: AtomicI32::new(FREE),
    main: AtomicI32::new(FREE),
    pid: AtomicU32::new(0),
    dev: AtomicU64::new(0),
    ino: AtomicU64::new(0),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// Registers the fork handler that closes the table in a child, once.
static REGISTER: Once = Once::new();
/// Whether it is registered (else nothing goes into the table).
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Runs in the child of every `fork()`: the presences in the table are the parent's. Each is
/// closed, and the child's own taken on the same block in its place. Only atomics and
/// async-signal-safe system calls, as a fork handler must.
extern "C" fn retake_in_child() {
    let pid = crate::sys::process::current_pid();
    let tag = crate::sys::process::own_start_time_in_fork_child().map(start_tag);
    for slot in &TABLE {
        let fd = slot.fd.swap(FILLING, Ordering::Relaxed);
        if fd < 0 {
            // Free, or being filled by a thread of the parent that the child does not have.
            slot.fd.store(FREE, Ordering::Relaxed);
            continue;
        }
        // SAFETY: `fd` was stored by `keep` from a descriptor it owned and is closed only by
        // whoever swaps it out of the slot (here, in the child's copy).
        unsafe { libc::close(fd) };
        let block = (
            slot.dev.load(Ordering::Relaxed),
            slot.ino.load(Ordering::Relaxed),
        );
        let main = slot.main.load(Ordering::Relaxed);
        let own = tag.and_then(|tag| {
            range_lock::relock_in_fork_child(main, block, presence_offset(pid, tag))
        });
        match own {
            Some(own) => {
                slot.pid.store(pid, Ordering::Relaxed);
                slot.fd.store(own, Ordering::Release);
            }
            None => slot.fd.store(FREE, Ordering::Relaxed),
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
            held: keep(own, file, me.pid)?,
            pid: me.pid,
        })
    }

    /// The process that took it.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }
}

/// Puts `own`, `pid`'s presence on the block `main` is open on, into the table (or keeps it
/// as it is when the table is full).
fn keep(own: File, main: &File, pid: u32) -> io::Result<Held> {
    let (dev, ino) = file_key(main)?;
    REGISTER.call_once(|| {
        let ok = crate::sys::process::on_fork_child(retake_in_child);
        REGISTERED.store(ok, Ordering::Release);
    });
    if !REGISTERED.load(Ordering::Acquire) {
        return Ok(Held::File(own));
    }
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .fd
            .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            slot.pid.store(pid, Ordering::Relaxed);
            slot.main.store(main.as_raw_fd(), Ordering::Relaxed);
            slot.dev.store(dev, Ordering::Relaxed);
            slot.ino.store(ino, Ordering::Relaxed);
            slot.fd.store(own.into_raw_fd(), Ordering::Release);
            return Ok(Held::Slot(i));
        }
    }
    Ok(Held::File(own))
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

    // Other tests of this binary may fork while a presence here is held: their children then
    // take presences of their own on these files for a moment, so the checks name their keys
    // (`Probe::present`) rather than ask for anyone (`Probe::anyone`) once something is held.

    use crate::sys::range_lock::scratch_file as block;

    /// A stand-in for another process: this process's pid with another start time.
    fn stand_in(k: u64) -> ProcessId {
        let me = ProcessId::current();
        ProcessId {
            start_time: me.start_time + k,
            ..me
        }
    }

    fn key(id: ProcessId) -> (u32, u32) {
        (id.pid, start_tag(id.start_time))
    }

    #[test]
    fn a_presence_is_seen_through_the_main_descriptor_until_dropped() {
        let (_dir, file, path) = block();
        let other = stand_in(1);
        let probe = Probe(&file);
        assert!(!probe.anyone());
        assert_eq!(probe.present(key(other).0, key(other).1), Some(false));
        assert!(probe.is_dead(key(other).0, key(other).1));
        let presence = Presence::take(&file, &path, other).unwrap();
        assert!(probe.anyone());
        assert_eq!(probe.present(key(other).0, key(other).1), Some(true));
        assert!(probe.is_alive(other));
        assert!(!probe.is_dead(key(other).0, key(other).1));
        assert!(
            !probe.is_alive(stand_in(2)),
            "another start time is another process"
        );
        drop(presence);
        assert_eq!(probe.present(key(other).0, key(other).1), Some(false));
        assert!(
            probe.is_alive(ProcessId::current()),
            "always there for itself"
        );
    }

    /// Forks a child that runs `child` (its exit code: 0 for success) once its fork handlers
    /// ran, then waits for a byte from the parent before it exits. Returns its pid and the
    /// pipe's write end, which [`finish`] takes.
    fn fork_child(child: impl FnOnce() -> bool) -> (i32, [i32; 2]) {
        let (mut go, mut ready) = ([0; 2], [0; 2]);
        // SAFETY: each array is a valid pair of descriptors for `pipe` to fill.
        assert!(unsafe { libc::pipe(go.as_mut_ptr()) == 0 && libc::pipe(ready.as_mut_ptr()) == 0 });
        // SAFETY: the child runs `child` (system calls, atomics, `/proc` reads), blocks in
        // `read` and leaves with `_exit`: no destructor of the parent's state runs in it.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let ok = u8::from(child());
            let mut byte = 0u8;
            // SAFETY: the pipe ends are open in the child; the buffers are valid bytes.
            unsafe {
                libc::write(ready[1], (&ok as *const u8).cast(), 1);
                libc::read(go[0], (&mut byte as *mut u8).cast(), 1);
                libc::_exit(0)
            }
        }
        let mut ok = 0u8;
        // SAFETY: `ready[0]` is the read end; `ok` a valid one-byte buffer.
        assert_eq!(
            unsafe { libc::read(ready[0], (&mut ok as *mut u8).cast(), 1) },
            1
        );
        assert_eq!(ok, 1, "the child's checks");
        // SAFETY: these ends are the parent's to close.
        unsafe {
            libc::close(ready[0]);
            libc::close(ready[1]);
        }
        (pid, go)
    }

    /// Lets the child of [`fork_child`] exit and reaps it.
    fn finish((pid, go): (i32, [i32; 2])) {
        let mut status = 0;
        // SAFETY: `go[1]` is the write end; `pid` our child; `status` a valid out-pointer.
        unsafe {
            libc::write(go[1], [1u8].as_ptr().cast(), 1);
            libc::close(go[0]);
            libc::close(go[1]);
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
    }

    #[test]
    fn a_forked_child_is_present_under_its_own_name_and_not_under_its_parents() {
        let (_dir, file, path) = block();
        let parent = stand_in(3);
        let presence = Presence::take(&file, &path, parent).unwrap();
        let probe = Probe(&file);
        let child = fork_child(|| {
            let me = ProcessId::current();
            let present = probe.present(key(me).0, key(me).1) == Some(true);
            ensure_here(&file, &path); // finds it: nothing more
            present
        });
        assert_eq!(probe.present(key(parent).0, key(parent).1), Some(true));
        drop(presence);
        let parents = probe.present(key(parent).0, key(parent).1);
        finish(child);
        assert_eq!(
            parents,
            Some(false),
            "the child, alive, did not keep its parent's"
        );
    }
}

//! [`FileRegistry`]: the registry kept in a human-readable TOML file and a journal of the
//! updates made since, under a root folder.
//!
//! # On-disk layout
//!
//! ```text
//! <root>/registry.toml     the store: every key, as of journal record `sequence`
//! <root>/registry.log      the journal: the updates committed since, one record each
//! <root>/registry.lock     empty; flock'ed exclusively for the length of every update
//! <root>/registry.toml.tmp.<pid>, registry.log.tmp.<pid>
//!                          a new store or journal being written (removed or renamed over the
//!                          file; a stale one left by a killed process is deleted by the next
//!                          open or update)
//! ```
//!
//! # Who may reach it
//!
//! The folder is 0700 and its files 0600: another user can neither read the store or the
//! journal nor hold the lock. A registry found open to others is made private when its owner
//! opens it, with one message; a folder or file of another user is refused, except by root,
//! which may use any user's registry and leaves it that user's (see
//! [`privacy`](super::privacy)).
//!
//! # Files from elsewhere
//!
//! The folder may be shared with other processes, so its files are opened as untrusted
//! ([`prfdata_untrusted::file`]): `registry.toml`, `registry.log` and `registry.lock` must be
//! regular files, not symbolic links (`O_NOFOLLOW`), and are opened without blocking
//! (`O_NONBLOCK`: a FIFO planted there is refused, not waited on); the store and the journal are
//! read only up to [`MAX_STORE_SIZE`] each, and no update makes the tree larger than a store of
//! that size (a new store over it is never written). A store or journal that does not read is an
//! error naming the file and the line. A temporary file is created with
//! `O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing planted at its name redirects the write. The root
//! folder itself is named by the user (`PRFDATA_REGISTRY`) or is the user's own state folder: a
//! link there is followed, and whom to trust for it is the collector's check.
//!
//! `registry.toml` holds one `[[key]]` table per key, in path order, each with its values in
//! creation order:
//!
//! ```toml
//! format = 2
//! sequence = 41
//!
//! [[key]]
//! path = 'HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib'
//!
//! [[key.value]]
//! name = "Last Counter"
//! type = "REG_DWORD"
//! data = 1846
//! ```
//!
//! `type` is `REG_SZ`, `REG_EXPAND_SZ` (string `data`), `REG_DWORD` (integer `data`) or
//! `REG_MULTI_SZ` (array of strings). A key with no values has no `[[key.value]]` tables.
//! `sequence` (0 when absent; format 1, written before there was a journal, has none) is the
//! last journal record the store includes.
//!
//! # The journal
//!
//! Writing the whole store at every update makes each update cost in proportion to the
//! registry: adding a thousand run-time counters one at a time would rewrite it a thousand
//! times. The Windows registry has the same problem and the same answer: a hive's changes go to
//! its transaction log, the `.LOG` file beside it ("Registry Hives" in the Windows
//! documentation: "a transaction log of changes to the keys and value entries in the hive"),
//! and since Windows 8.1 the hive file itself is brought up to date only from time to time,
//! from the log ("incremental logging" and "reconciliation", *Windows Internals*, 7th edition,
//! part 2, chapter 10).
//!
//! So an update appends one record to `registry.log` ([`journal`]: the update's changes as
//! [`Change`](crate::change::Change)s, a REG_MULTI_SZ edited in place as the splice of the
//! entries that differ) with one fsync, and the store is written again only when the journal
//! would grow past the store's own size (or [`JOURNAL_FLOOR`](writer::JOURNAL_FLOOR) for a
//! small store; [`writer`]): the tree is written as a new store including the last record, then
//! a new journal is started that follows it. Each such fold is paid for by as many bytes of
//! records as it writes, so an update costs its own record, amortized, whatever the size of
//! the registry. A writer keeps the tree it committed and uses it again at its next update
//! when the files show that no other writer committed since (a `stat` of each, the journal's
//! header and last record read back): an update then parses nothing.
//!
//! A reader ([`FileRegistry::snapshot`]) reads the store, then the journal's records after the
//! store's `sequence`, applied in order ([`replay`]).
//!
//! # Atomicity and locking
//!
//! An update takes the flock on `registry.lock` (bounded wait: [`LOCK_WAIT`]), finds the tree
//! (kept, or read), applies the edit, and commits it: it appends its record to the journal and
//! fsyncs it, or it writes the new store to a temp file, fsyncs it, renames it over
//! `registry.toml`, fsyncs the folder, and starts a new journal the same way; then it releases
//! the lock. Readers take no lock. A process killed at any point leaves the old state or the
//! new one, and its flock dies with it:
//!
//! | killed | what the next reader sees |
//! |---|---|
//! | before its record is complete | the old state: a torn last record is not a record (the next writer cuts it off) |
//! | after its record, before the fsync | the new state (the record is in the page cache) |
//! | after the new store's rename, before the new journal | the new state: the old journal's records are all at or below the new store's `sequence` and are not applied again; the next writer starts a new journal |
//!
//! A reader that reads the store before a fold and the journal after it finds a journal that
//! follows a later store, and reads both again; one that finds a damaged record while a writer
//! changes the files reads again too. What a reader sees is always one committed state.
//!
//! The temporary file a killed writer may leave is removed by the next process that opens the
//! registry and finds the lock free, or by the next update (which holds the lock): a live writer
//! holds the lock from before it creates its temporary file until after it renames it, so a
//! temporary file seen while holding the lock is never a live writer's.
//!
//! With the cargo feature `fault-injection` (enabled by the tests only, never by a release build
//! of an app or of prfmon), the environment variable `FAULT_ENV` (`PRFDATA_REGISTRY_FAULT`)
//! makes an updating process SIGKILL itself at a named point, so tests can prove this:
//! `after-lock`; appending a record: `mid-append`, `after-append` (before its fsync); writing a
//! store: `mid-temp-write`, `after-temp-write`, `after-rename` (before the new journal). Without
//! the feature the hook is not compiled in.

mod fault;
mod format;
mod journal;
mod lock;
mod replay;
mod writer;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::error::RegistryError;
use super::hive::Hive;
use super::paths;
use super::perflib;
use super::privacy::{Folder, Tightened};
use super::stamp::StoreStamp;
use super::store::{Commit, Registry};
use prfdata_untrusted::{Symlinks, UntrustedFile};

#[cfg(feature = "fault-injection")]
pub use fault::{log_appends, store_writes, FAULT_ENV};
pub use format::{decode_hive, encode_hive};

/// The longest an update waits for another process's lock before failing with
/// [`RegistryError::LockTimeout`]. An update holds the lock for milliseconds; 30 s only trips
/// when a process is stuck while holding it.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The largest store read or written, in bytes (16 MiB), and the largest journal read. The
/// store is read whole and parsed into memory (the TOML parser and the tree take a few times its
/// size), so a bound keeps a planted or runaway file from exhausting memory; no update makes
/// the tree larger than a store of this size. The number: Windows' own `Perflib\009` `Counter`
/// and `Help` tables on a server with many counter providers are a few MiB of UTF-16 text;
/// 16 MiB holds several times that in this format.
pub const MAX_STORE_SIZE: u64 = 16 * 1024 * 1024;

/// How `registry.toml` is read: see the [module docs](self#files-from-elsewhere).
const STORE_RULE: UntrustedFile = UntrustedFile {
    what: "registry store",
    max_size: MAX_STORE_SIZE,
    limit_name: "prfdata_registry::MAX_STORE_SIZE, 16 MiB",
    symlinks: Symlinks::Refuse,
};

/// How `registry.log` is read and appended to: as the store (the journal is folded into the
/// store before it outgrows it, so the store's cap is its cap too).
const LOG_RULE: UntrustedFile = UntrustedFile {
    what: "registry journal",
    max_size: MAX_STORE_SIZE,
    limit_name: "prfdata_registry::MAX_STORE_SIZE, 16 MiB",
    symlinks: Symlinks::Refuse,
};

/// How many times [`FileRegistry::snapshot`] reads the files again when what it read was
/// inconsistent and a writer changed them meanwhile: each time means another update committed
/// during one read, which takes far longer than an update.
const READ_ATTEMPTS: usize = 8;

/// The registry kept in `registry.toml` and `registry.log` under a root folder (see the
/// module docs).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, FileRegistry, Registry};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// assert!(reg.store_path().exists());
/// let hive = reg.snapshot()?;
/// assert_eq!(perflib::last_counter_help(&hive)?, (1846, 1847));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FileRegistry {
    root: PathBuf,
    /// The folder's owner, whose the files this process makes there become.
    folder: Folder,
    /// The tree this process last committed, for its next update (shared by clones).
    kept: Arc<Mutex<Option<writer::Writer>>>,
}

impl std::fmt::Debug for FileRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRegistry")
            .field("root", &self.root)
            .field("folder", &self.folder)
            .finish_non_exhaustive()
    }
}

impl FileRegistry {
    /// Opens (creating if needed) the registry in `root`. A new registry holds the initial
    /// Perflib state ([`perflib::new_hive`]), in a folder only its owner may reach (0700, files
    /// 0600); one of ours found open to others is made so, with one `log::warn` naming the
    /// folder and each old and new mode. Root may open any user's registry: it changes no mode
    /// there, and gives what it creates there to the folder's owner.
    ///
    /// # Errors
    ///
    /// [`RegistryError::ForeignOwner`] for a folder or file of another user (unless this
    /// process is root); [`RegistryError::Io`] and [`RegistryError::File`] for what cannot be
    /// created or is not a regular file.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let reg = prfdata_registry::FileRegistry::open(dir.path().join("nested/root"))?;
    /// assert!(reg.root().ends_with("nested/root"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(root: impl AsRef<Path>) -> Result<Self, RegistryError> {
        let root = root.as_ref().to_path_buf();
        let mut notes = Tightened::default();
        let folder = Folder::open(&root, &mut notes)?;
        let reg = Self {
            root,
            folder,
            kept: Arc::default(),
        };
        // A new registry in a folder the user made (0755 by mkdir) had nothing to expose yet:
        // it is made private without a word.
        let existed = reg.store_exists()?;
        // A writer killed half-way left its temporary file: remove it if no writer is live
        // (the lock is free). Readers that may not write the folder skip this quietly, but a
        // lock file of another user is an error.
        match reg.try_lock(&mut notes) {
            Ok(Some(_lock)) => reg.remove_stale_temps(),
            Err(e @ RegistryError::ForeignOwner { .. }) => return Err(e),
            _ => {}
        }
        if !existed {
            let _lock = reg.lock()?;
            if !reg.store_exists()? {
                reg.create(&perflib::new_hive())?;
            }
        }
        reg.check_files(&mut notes)?;
        if existed {
            notes.report(&reg.root);
        }
        Ok(reg)
    }

    /// Opens the registry in [`paths::registry_root`].
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::env::set_var("PRFDATA_REGISTRY", dir.path());
    /// let reg = prfdata_registry::FileRegistry::open_default()?;
    /// assert_eq!(reg.root(), dir.path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_default() -> Result<Self, RegistryError> {
        Self::open(paths::registry_root()?)
    }

    /// The root folder.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// assert_eq!(reg.root(), dir.path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The store file, `<root>/registry.toml`.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// assert!(reg.store_path().ends_with("registry.toml"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn store_path(&self) -> PathBuf {
        self.root.join(paths::STORE_FILE)
    }

    /// The journal, `<root>/registry.log`: the updates made since the store was written.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// assert!(reg.log_path().ends_with("registry.log"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn log_path(&self) -> PathBuf {
        self.root.join(paths::LOG_FILE)
    }

    /// Whether `registry.toml` exists (as anything: what it is, is checked when it is read).
    fn store_exists(&self) -> Result<bool, RegistryError> {
        let path = self.store_path();
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(RegistryError::Io {
                path,
                action: "examine",
                source,
            }),
        }
    }

    /// Checks the owner and mode of the store file and the journal (see [`Folder::file`]),
    /// those this process can open: one that cannot read them learns so when it reads.
    fn check_files(&self, notes: &mut Tightened) -> Result<(), RegistryError> {
        for (rule, path) in [(STORE_RULE, self.store_path()), (LOG_RULE, self.log_path())] {
            if let Ok((file, _)) = rule.open(&path) {
                self.folder.file(&file, &path, rule.what, notes)?;
            }
        }
        Ok(())
    }

    /// Removes temp files a killed writer left behind. The caller holds the lock, so no live
    /// writer owns one.
    fn remove_stale_temps(&self) {
        let prefixes = [paths::STORE_FILE, paths::LOG_FILE].map(|f| format!("{f}.tmp."));
        if let Ok(entries) = fs::read_dir(&self.root) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if prefixes.iter().any(|p| name.starts_with(p.as_str())) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
    }
}

impl Registry for FileRegistry {
    /// The store with the journal's later records applied. Read without the lock: when what
    /// it read does not fit together and the files changed meanwhile (a writer folded the
    /// journal between the two reads), it reads them again.
    fn snapshot(&self) -> Result<Hive, RegistryError> {
        let mut attempt = 0;
        loop {
            let before = self.stamp();
            match replay::load(&self.store_path(), &self.log_path()) {
                Ok(loaded) => return Ok(loaded.hive),
                Err(e) => {
                    attempt += 1;
                    if attempt >= READ_ATTEMPTS || self.stamp() == before {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// The store file's and the journal's stamp: every committed update appends to the
    /// journal or renames new files over both.
    fn stamp(&self) -> Option<StoreStamp> {
        StoreStamp::of_registry(&self.root)
    }

    fn transact(&self, edit: &mut dyn FnMut(&mut Hive) -> Commit) -> Result<(), RegistryError> {
        let _lock = self.lock()?;
        if fault::fault_point("after-lock") {
            fault::die();
        }
        self.remove_stale_temps();
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut w = self.writer(kept)?;
        w.hive.track();
        let commit = edit(&mut w.hive);
        let changes = w.hive.take_changes();
        let keep = if changes.is_empty() {
            true
        } else if commit == Commit::Discard {
            // The tree was edited, and the edit is thrown away: read the files next time.
            false
        } else {
            self.commit(&mut w, &changes)?
        };
        if keep {
            *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(w);
        }
        Ok(())
        // `_lock` drops here: closing the file releases the flock.
    }
}

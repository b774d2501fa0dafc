//! [`FileRegistry`]: the registry kept in one human-readable TOML file under a root folder.
//!
//! # On-disk layout
//!
//! ```text
//! <root>/registry.toml     the whole store (all keys), replaced atomically on every change
//! <root>/registry.lock     empty; flock'ed exclusively for the length of every update
//! <root>/registry.toml.tmp.<pid>   a new version being written (removed or renamed over the
//!                          store; a stale one left by a killed process is deleted by the next
//!                          open or update)
//! ```
//!
//! # Who may reach it
//!
//! The folder is 0700 and its files 0600: another user can neither read the store nor hold
//! the lock. A registry found open to others is made private when its owner opens it, with one
//! message; a folder or file of another user is refused, except by root, which may use any
//! user's registry and leaves it that user's (see [`privacy`](super::privacy)).
//!
//! # Files from elsewhere
//!
//! The folder may be shared with other processes, so its files are opened as untrusted
//! ([`prfdata_untrusted::file`]): `registry.toml` and `registry.lock` must be regular files, not
//! symbolic links (`O_NOFOLLOW`), and are opened without blocking (`O_NONBLOCK`: a FIFO planted
//! there is refused, not waited on); the store is read only up to [`MAX_STORE_SIZE`], and a new
//! version over that size is never written. A temporary file is created with
//! `O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing planted at its name redirects the write. The root
//! folder itself is named by the user (`PRFDATA_REGISTRY`) or is the user's own state folder: a
//! link there is followed, and whom to trust for it is the collector's check.
//!
//! `registry.toml` holds one `[[key]]` table per key, in path order, each with its values in
//! creation order:
//!
//! ```toml
//! format = 1
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
//!
//! # Atomicity and locking
//!
//! An update takes the flock on `registry.lock` (bounded wait: [`LOCK_WAIT`]), reads the
//! store, applies the edit, writes the new text to a temp file, fsyncs it, renames it over
//! `registry.toml` and fsyncs the folder, then releases the lock. Readers read
//! `registry.toml` without the lock: rename is atomic, so they see the old file or the new one.
//! A process killed anywhere leaves the old or the new store, and its flock dies with it. The
//! temporary file it may leave is removed by the next process that opens the registry and finds
//! the lock free, or by the next update (which holds the lock): a live writer holds the lock
//! from before it creates its temporary file until after it renames it, so a temporary file seen
//! while holding the lock is never a live writer's.
//!
//! With the cargo feature `fault-injection` (enabled by the tests only, never by a release build
//! of an app or of prfmon), the environment variable `FAULT_ENV` (`PRFDATA_REGISTRY_FAULT`)
//! makes an updating process SIGKILL itself at a named point, so tests can prove this:
//! `after-lock`, `mid-temp-write`, `after-temp-write`, `after-rename`. Without the feature the
//! hook is not compiled in.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::RegistryError;
use super::hive::{normalize_key, Hive};
use super::paths;
use super::perflib;
use super::privacy::{Folder, Tightened, FILE_MODE};
use super::store::{Commit, Registry};
use super::value::{Value, ValueType};
use prfdata_untrusted::create_new;
use prfdata_untrusted::{Symlinks, UntrustedFile};

/// The longest an update waits for another process's lock before failing with
/// [`RegistryError::LockTimeout`]. An update holds the lock for milliseconds; 30 s only trips
/// when a process is stuck while holding it.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The fault-injection variable (feature `fault-injection`, for tests only): set it to a fault
/// point (see the module docs) to make the next update in this process kill itself there.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_registry::FAULT_ENV, "PRFDATA_REGISTRY_FAULT");
/// ```
#[cfg(feature = "fault-injection")]
pub const FAULT_ENV: &str = "PRFDATA_REGISTRY_FAULT";

/// How many times this process has replaced a store (feature `fault-injection`, for tests: a
/// test counts the registry writes an operation costs).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{store_writes, update, FileRegistry, Value};
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?; // a new registry: one write
/// let before = store_writes();
/// update(&reg, |hive| hive.set_value(r"HKLM\SOFTWARE\Demo", "X", Value::Dword(1)))?;
/// update(&reg, |hive| hive.set_value(r"HKLM\SOFTWARE\Demo", "X", Value::Dword(1)))?;
/// assert_eq!(store_writes() - before, 1, "an update that changes nothing writes nothing");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "fault-injection")]
pub fn store_writes() -> u64 {
    STORE_WRITES.load(std::sync::atomic::Ordering::Relaxed)
}

/// The count [`store_writes`] returns.
#[cfg(feature = "fault-injection")]
static STORE_WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The largest store read or written, in bytes (16 MiB). The store is read whole and parsed
/// into memory (the TOML parser and the tree take a few times its size), so a bound keeps a
/// planted or runaway file from exhausting memory. The number: Windows' own `Perflib\009`
/// `Counter` and `Help` tables on a server with many counter providers are a few MiB of UTF-16
/// text; 16 MiB holds several times that in this format.
pub const MAX_STORE_SIZE: u64 = 16 * 1024 * 1024;

/// How `registry.toml` is read: see the [module docs](self#files-from-elsewhere).
const STORE_RULE: UntrustedFile = UntrustedFile {
    what: "registry store",
    max_size: MAX_STORE_SIZE,
    limit_name: "prfdata_registry::MAX_STORE_SIZE, 16 MiB",
    symlinks: Symlinks::Refuse,
};

/// How `registry.lock` is opened: a regular file, never through a link. It stays empty and is
/// never read, so its cap is never used.
const LOCK_RULE: UntrustedFile = UntrustedFile {
    what: "registry lock file",
    max_size: MAX_STORE_SIZE,
    limit_name: "prfdata_registry::MAX_STORE_SIZE, 16 MiB",
    symlinks: Symlinks::Refuse,
};

/// The store format version written in `format =`.
const FORMAT: u32 = 1;

const HEADER: &str = "\
# prfdata counter-name registry (file-backed). One [[key]] per registry key, values in order.
# Change it with `prfmon reg add` / `prfmon reg delete` / `prfmon lodctr`: they lock and
# replace this file atomically. Hand edits are read, but are not locked against those tools.
";

/// The registry kept in `registry.toml` under a root folder (see the module docs).
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
#[derive(Debug, Clone)]
pub struct FileRegistry {
    root: PathBuf,
    /// The folder's owner, whose the files this process makes there become.
    folder: Folder,
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
        let reg = Self { root, folder };
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
                reg.write_store(&perflib::new_hive())?;
            }
        }
        reg.check_store(&mut notes)?;
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

    /// Checks the store file's owner and mode (see [`Folder::file`]), if this process can
    /// open it: one that cannot read it learns so when it reads.
    fn check_store(&self, notes: &mut Tightened) -> Result<(), RegistryError> {
        let path = self.store_path();
        match STORE_RULE.open(&path) {
            Ok((file, _)) => self.folder.file(&file, &path, "registry store", notes),
            Err(_) => Ok(()),
        }
    }

    /// Opens `registry.lock`, creating it if needed (0600): a regular file, never through a
    /// link, and never waiting on a FIFO; its owner and mode checked (see [`Folder::file`]).
    fn open_lock_file(&self, notes: &mut Tightened) -> Result<File, RegistryError> {
        let path = self.root.join(paths::LOCK_FILE);
        let file = LOCK_RULE.open_or_create(&path, FILE_MODE)?;
        self.folder
            .file(&file, &path, "registry lock file", notes)?;
        Ok(file)
    }

    /// Takes the lock if it is free now: `Ok(None)` if another process holds it.
    fn try_lock(&self, notes: &mut Tightened) -> Result<Option<File>, RegistryError> {
        let file = self.open_lock_file(notes)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(file)),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => {
                Ok(None)
            }
            Err(e) => Err(RegistryError::Io {
                path: self.root.join(paths::LOCK_FILE),
                action: "lock",
                source: e.into(),
            }),
        }
    }

    fn lock(&self) -> Result<File, RegistryError> {
        let path = self.root.join(paths::LOCK_FILE);
        let io = |action, source| RegistryError::Io {
            path: path.clone(),
            action,
            source,
        };
        let mut notes = Tightened::default();
        let file = self.open_lock_file(&mut notes)?;
        notes.report(&self.root);
        let deadline = Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(1);
        loop {
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(file),
                Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => {}
                Err(e) => return Err(io("lock", e.into())),
            }
            if Instant::now() >= deadline {
                return Err(RegistryError::LockTimeout {
                    path,
                    seconds: LOCK_WAIT.as_secs(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    fn read_store(&self) -> Result<Hive, RegistryError> {
        let path = self.store_path();
        match STORE_RULE.read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes).map_err(|e| RegistryError::Corrupt {
                    path: path.clone(),
                    line: None,
                    message: format!("not UTF-8 (at byte {})", e.utf8_error().valid_up_to()),
                })?;
                decode_hive(&text, &path)
            }
            Err(e) if e.is_not_found() => Ok(perflib::new_hive()),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the hive atomically. The caller holds the lock.
    fn write_store(&self, hive: &Hive) -> Result<(), RegistryError> {
        let store = self.store_path();
        let text = encode_hive(hive)?;
        if text.len() as u64 > MAX_STORE_SIZE {
            return Err(RegistryError::Encode {
                path: store,
                message: format!(
                    "the new store would be {} bytes, over the {MAX_STORE_SIZE} bytes it may \
                     hold (MAX_STORE_SIZE); nothing was written",
                    text.len()
                ),
            });
        }
        // Never replace the store with something that does not read back as the same tree.
        if decode_hive(&text, &store).ok().as_ref() != Some(hive) {
            return Err(RegistryError::Encode {
                path: store,
                message: "the new contents do not read back as the same keys and values".into(),
            });
        }
        let temp = self
            .root
            .join(format!("{}.tmp.{}", paths::STORE_FILE, std::process::id()));
        let io = |path: &Path, action, source| RegistryError::Io {
            path: path.to_path_buf(),
            action,
            source,
        };
        // No stale temporary file can be at this name: the caller holds the lock and every
        // updater removed them under it; a file planted here is refused, never followed.
        let mut file = create_new(&temp, FILE_MODE).map_err(|e| io(&temp, "create", e))?;
        self.folder.adopt(&file, &temp)?;
        if fault_point("mid-temp-write") {
            let half = &text.as_bytes()[..text.len() / 2];
            let _ = file.write_all(half).and_then(|()| file.sync_all());
            die();
        }
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io(&temp, "write", e))?;
        drop(file);
        if fault_point("after-temp-write") {
            die();
        }
        fs::rename(&temp, &store).map_err(|e| io(&store, "replace", e))?;
        #[cfg(feature = "fault-injection")]
        STORE_WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if fault_point("after-rename") {
            die();
        }
        File::open(&self.root)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| io(&self.root, "sync the folder", e))
    }

    /// Removes temp files a killed writer left behind. The caller holds the lock, so no live
    /// writer owns one.
    fn remove_stale_temps(&self) {
        let prefix = format!("{}.tmp.", paths::STORE_FILE);
        if let Ok(entries) = fs::read_dir(&self.root) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
    }
}

impl Registry for FileRegistry {
    fn snapshot(&self) -> Result<Hive, RegistryError> {
        self.read_store()
    }

    /// The store file's stamp: every committed update renames a new file over it.
    fn stamp(&self) -> Option<crate::StoreStamp> {
        crate::StoreStamp::of(&self.store_path())
    }

    fn transact(&self, edit: &mut dyn FnMut(&mut Hive) -> Commit) -> Result<(), RegistryError> {
        let _lock = self.lock()?;
        if fault_point("after-lock") {
            die();
        }
        self.remove_stale_temps();
        let before = self.read_store()?;
        let mut hive = before.clone();
        if edit(&mut hive) == Commit::Write && hive != before {
            self.write_store(&hive)?;
        }
        Ok(())
        // `_lock` drops here: closing the file releases the flock.
    }
}

/// Whether [`FAULT_ENV`] names the fault point `name`.
#[cfg(feature = "fault-injection")]
fn fault_point(name: &str) -> bool {
    std::env::var_os(FAULT_ENV).is_some_and(|v| v == name)
}

/// Without the feature `fault-injection` there is no hook: never a fault point.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
fn fault_point(_name: &str) -> bool {
    false
}

/// Dies the way a killed process does: no destructors, no flushing, no unlock.
fn die() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    std::process::abort()
}

#[derive(Serialize)]
struct FileOut<'a> {
    format: u32,
    key: Vec<KeyOut<'a>>,
}

#[derive(Serialize)]
struct KeyOut<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    value: Vec<ValueOut<'a>>,
}

#[derive(Serialize)]
struct ValueOut<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
    data: DataOut<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum DataOut<'a> {
    Number(u32),
    Text(&'a str),
    List(&'a [String]),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    format: toml::Spanned<u32>,
    #[serde(default)]
    key: Vec<KeyIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyIn {
    path: toml::Spanned<String>,
    #[serde(default)]
    value: Vec<ValueIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ValueIn {
    name: toml::Spanned<String>,
    #[serde(rename = "type")]
    ty: toml::Spanned<String>,
    data: toml::Spanned<toml::Value>,
}

/// Renders a hive in the store format (see the module docs). Fails only if the TOML writer
/// refuses the data.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{decode_hive, encode_hive, Hive, Value};
///
/// let mut hive = Hive::new();
/// hive.set_value(r"HKLM\SYSTEM\X", "Export", Value::MultiSz(vec!["a".into()]))?;
/// let text = encode_hive(&hive)?;
/// assert!(text.contains(r"path = 'HKLM\SYSTEM\X'"));
/// assert_eq!(decode_hive(&text, "mem.toml")?, hive);
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn encode_hive(hive: &Hive) -> Result<String, RegistryError> {
    let key = hive
        .keys()
        .map(|(path, values)| KeyOut {
            path,
            value: values
                .iter()
                .map(|(name, v)| ValueOut {
                    name,
                    ty: v.value_type().name(),
                    data: match v {
                        Value::Sz(s) | Value::ExpandSz(s) => DataOut::Text(s),
                        Value::Dword(n) => DataOut::Number(*n),
                        Value::MultiSz(list) => DataOut::List(list),
                    },
                })
                .collect(),
        })
        .collect();
    let body = toml::to_string_pretty(&FileOut {
        format: FORMAT,
        key,
    })
    .map_err(|e| RegistryError::Encode {
        path: PathBuf::from(paths::STORE_FILE),
        message: e.to_string(),
    })?;
    Ok(format!("{HEADER}\n{body}"))
}

/// Parses the store format. `path` names the file in errors, which carry the line.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{decode_hive, RegistryError};
///
/// let err = decode_hive("format = 1\n[[key]]\npath = 'HKXX\\Nope'\n", "r.toml").unwrap_err();
/// assert!(matches!(err, RegistryError::Corrupt { line: Some(3), .. }), "{err}");
/// assert!(err.to_string().contains("r.toml"));
/// ```
pub fn decode_hive(text: &str, path: impl AsRef<Path>) -> Result<Hive, RegistryError> {
    let path = path.as_ref();
    let line_of = |offset: usize| {
        Some(
            text.get(..offset)
                .map_or(0, |t| t.bytes().filter(|&b| b == b'\n').count())
                + 1,
        )
    };
    let corrupt = |offset: Option<usize>, message: String| RegistryError::Corrupt {
        path: path.to_path_buf(),
        line: offset.and_then(line_of),
        message,
    };
    let file: FileIn = toml::from_str(text)
        .map_err(|e| corrupt(e.span().map(|s| s.start), e.message().trim().to_owned()))?;
    if *file.format.get_ref() != FORMAT {
        return Err(corrupt(
            Some(file.format.span().start),
            format!(
                "unknown format {} (this build reads {FORMAT})",
                file.format.get_ref()
            ),
        ));
    }
    let mut hive = Hive::new();
    let mut seen = std::collections::HashSet::new();
    for key in file.key {
        let at = Some(key.path.span().start);
        let norm = normalize_key(key.path.get_ref()).map_err(|e| corrupt(at, e.to_string()))?;
        if !norm.contains('\\') {
            return Err(corrupt(at, format!("`{norm}` is a root key")));
        }
        let folded: String = norm.chars().flat_map(char::to_lowercase).collect();
        if !seen.insert(folded) {
            return Err(corrupt(at, format!("key `{norm}` appears twice")));
        }
        hive.create_key(&norm)
            .map_err(|e| corrupt(at, e.to_string()))?;
        let mut names = std::collections::HashSet::new();
        for v in key.value {
            let name = v.name.get_ref();
            let folded: String = name.chars().flat_map(char::to_lowercase).collect();
            if !names.insert(folded) {
                return Err(corrupt(
                    Some(v.name.span().start),
                    format!("value `{name}` appears twice in `{norm}`"),
                ));
            }
            let ty: ValueType =
                v.ty.get_ref()
                    .parse()
                    .map_err(|e: super::value::UnknownValueType| {
                        corrupt(Some(v.ty.span().start), e.to_string())
                    })?;
            let at = Some(v.data.span().start);
            let bad =
                |what: &str| corrupt(at, format!("value `{name}` ({ty}): data must be {what}"));
            let value = match (ty, v.data.get_ref()) {
                (ValueType::Sz, toml::Value::String(s)) => Value::Sz(s.clone()),
                (ValueType::ExpandSz, toml::Value::String(s)) => Value::ExpandSz(s.clone()),
                (ValueType::Dword, toml::Value::Integer(n)) => Value::Dword(
                    u32::try_from(*n).map_err(|_| bad("an integer from 0 to 4294967295"))?,
                ),
                (ValueType::MultiSz, toml::Value::Array(items)) => Value::MultiSz(
                    items
                        .iter()
                        .map(|i| i.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| bad("an array of strings"))?,
                ),
                (ValueType::Sz | ValueType::ExpandSz, _) => return Err(bad("a string")),
                (ValueType::Dword, _) => return Err(bad("an integer")),
                (ValueType::MultiSz, _) => return Err(bad("an array of strings")),
            };
            hive.set_value(&norm, name, value)
                .map_err(|e| corrupt(at, e.to_string()))?;
        }
    }
    Ok(hive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_files_name_the_line() {
        let cases = [
            ("format = 1\n[[key]\n", 2),
            ("format = 1\n[[key]]\npath = 'HKLM\\A'\n[[key.value]]\nname = 'x'\ntype = 'REG_DWORD'\ndata = -1\n", 7),
            ("format = 1\n[[key]]\npath = 'HKLM\\A'\n[[key.value]]\nname = 'x'\ntype = 'REG_BINARY'\ndata = 1\n", 6),
            ("format = 2\n", 1),
            ("format = 1\n[[key]]\npath = 'HKLM\\A'\n[[key]]\npath = 'hklm\\a'\n", 5),
        ];
        for (text, line) in cases {
            match decode_hive(text, "x.toml") {
                Err(RegistryError::Corrupt { line: Some(l), .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn round_trips_every_type() {
        let mut hive = perflib::new_hive();
        let k = r"HKLM\SYSTEM\CurrentControlSet\Services\Weird 'name\Performance";
        hive.set_value(k, "Library", Value::ExpandSz("%HOME%/lib\"x\".so".into()))
            .unwrap();
        hive.set_value(k, "Open", Value::Sz(String::new())).unwrap();
        hive.set_value(k, "Export", Value::MultiSz(vec!["a\nb".into()]))
            .unwrap();
        hive.create_key(r"HKLM\Empty").unwrap();
        let text = encode_hive(&hive).unwrap();
        assert_eq!(decode_hive(&text, "x").unwrap(), hive);
    }
}

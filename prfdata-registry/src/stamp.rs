//! Whether a registry changed, for the price of two `stat`s: [`StoreStamp`].
//!
//! Every committed update of [`FileRegistry`](crate::FileRegistry) either appends a record to
//! the journal `registry.log` (its size grows) or writes a new store file and a new journal and
//! renames them over the old ones (new inodes), so the two files' device, inode, size and
//! modification time change with every committed change. A long-running reader (the provider
//! library, the collector) keeps the stamp it last read the registry at and reads the registry
//! again only when [`Registry::stamp`](crate::Registry::stamp) gives another one.

use std::path::Path;

use crate::paths;

/// One file as `stat` saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// The stamp of what is at `path` now (a link not followed); `None` if nothing is there or
    /// it cannot be `stat`ed.
    pub(crate) fn of(path: &Path) -> Option<FileStamp> {
        std::fs::symlink_metadata(path).ok().map(|m| Self::from(&m))
    }

    /// The stamp of an open file.
    pub(crate) fn of_file(file: &std::fs::File) -> Option<FileStamp> {
        file.metadata().ok().map(|m| Self::from(&m))
    }

    /// The file's size.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}

impl From<&std::fs::Metadata> for FileStamp {
    fn from(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The registry's store file and journal as `stat` saw them.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{update, FileRegistry, Registry, Value};
/// let dir = tempfile::tempdir()?;
/// let registry = FileRegistry::open(dir.path())?;
/// let before = registry.stamp();
/// assert!(before.is_some());
/// assert_eq!(registry.stamp(), before, "nothing changed");
/// let store = std::fs::read(registry.store_path())?;
/// update(&registry, |hive| hive.set_value(r"HKLM\SOFTWARE\Demo", "x", Value::Dword(1)))?;
/// assert_eq!(std::fs::read(registry.store_path())?, store, "a record in the journal only");
/// assert_ne!(registry.stamp(), before, "an update is seen");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreStamp {
    store: FileStamp,
    log: Option<FileStamp>,
}

impl StoreStamp {
    /// The stamp of the registry in the folder `root` now: its store file `registry.toml` and
    /// its journal `registry.log` (which may not exist); `None` if the store cannot be
    /// `stat`ed.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::StoreStamp;
    /// assert!(StoreStamp::of_registry("/nonexistent/registry".as_ref()).is_none());
    /// ```
    pub fn of_registry(root: &Path) -> Option<StoreStamp> {
        Some(StoreStamp {
            store: FileStamp::of(&root.join(paths::STORE_FILE))?,
            log: FileStamp::of(&root.join(paths::LOG_FILE)),
        })
    }
}

//! Whether a registry changed, for the price of one `stat`: [`StoreStamp`].
//!
//! Every update of [`FileRegistry`](crate::FileRegistry) writes a new store file and renames
//! it over the old one, so the store file's device, inode, size and modification time change
//! with every committed change. A long-running reader (the provider library, the collector)
//! keeps the stamp it last read the registry at and reads the registry again only when
//! [`Registry::stamp`](crate::Registry::stamp) gives another one.

use std::path::Path;

/// The registry's store file as `stat` saw it.
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
/// update(&registry, |hive| hive.set_value(r"HKLM\SOFTWARE\Demo", "x", Value::Dword(1)))?;
/// assert_ne!(registry.stamp(), before, "an update is seen");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
}

impl StoreStamp {
    /// The stamp of the file at `path` now; `None` if it cannot be `stat`ed.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::StoreStamp;
    /// assert!(StoreStamp::of("/nonexistent/registry.toml".as_ref()).is_none());
    /// ```
    pub fn of(path: &Path) -> Option<StoreStamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(StoreStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        })
    }
}

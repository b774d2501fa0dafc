//! Which copy of a provider library each in-process service gets, so that every service has
//! its own library state.
//!
//! perflib's V1 interface gives Collect no service handle: a provider keeps what Open was
//! told (for `libprfdata_provider.so`, the apps of the service's `Linkage\Export`) in its
//! globals, and Collect returns whatever those globals say. Two services calling into one
//! loaded copy would each get both services' objects. And a plain `dlopen` gives one copy per
//! *file*: the same path, a symlink to it and a hard link all return the copy already loaded
//! (glibc compares the device and inode).
//!
//! So, per file identity (device and inode after resolving symlinks, or the name as given when
//! the file cannot be examined, e.g. a bare `libfoo.so` found through the loader's search
//! path):
//!
//! | service                                 | gets                                                 |
//! |-----------------------------------------|------------------------------------------------------|
//! | the first one (in this process)         | the plain `dlopen` copy ([`ProviderLibrary::load`])  |
//! | every further one                       | a private copy: `dlmopen(LM_ID_NEWLM)` ([`ProviderLibrary::load_private`]) |
//! | one that already holds a copy           | that copy again (two collectors in one process serving the same service share it, as perflib's providers allow several monitoring processes) |
//!
//! A copy is released (and unloaded) when the last collector holding it closes; the table
//! keeps only weak references. A copy of another file (`cp` of the library) is another
//! identity and starts with a plain `dlopen` of its own.
//!
//! glibc has static TLS room for a fixed number of namespaces (here: about ten per process);
//! past that, the further service cannot be loaded ([`LibraryError::Namespace`]) and the
//! collector skips it with an error that says to use host-process isolation, which has no
//! such limit.
//!
//! # Examples
//!
//! ```no_run
//! use prfmon::collector::copies::load_for_service;
//! use prfmon::collector::library::EntryNames;
//!
//! let lib = "/opt/prfdata/libprfdata_provider.so";
//! // SAFETY: the path names a perflib provider, trusted in this process.
//! let (first, second) = unsafe { (load_for_service(lib, "AppA")?, load_for_service(lib, "AppB")?) };
//! let names = EntryNames::new(Some("OpenPerformanceData"), "CollectPerformanceData", None);
//! // SAFETY: as above.
//! let (a, b) = unsafe { (first.entry_points(&names)?, second.entry_points(&names)?) };
//! a.open(&["AppA".into()]);
//! b.open(&["AppB".into()]); // a different copy: AppA's Collect still returns only AppA
//! # Ok::<(), prfmon::collector::library::LibraryError>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::library::{LibraryError, ProviderLibrary};

/// What makes two library paths the same loaded copy for a plain `dlopen`.
///
/// # Examples
///
/// ```
/// use prfmon::collector::copies::FileIdentity;
/// let dir = tempfile::tempdir()?;
/// let file = dir.path().join("lib.so");
/// std::fs::write(&file, b"")?;
/// std::os::unix::fs::symlink(&file, dir.path().join("link.so"))?;
/// assert_eq!(FileIdentity::of(&file), FileIdentity::of(&dir.path().join("link.so")));
/// assert!(matches!(FileIdentity::of("libnone.so".as_ref()), FileIdentity::Name(_)));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileIdentity {
    /// The file's device and inode, symlinks resolved.
    Inode {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
    },
    /// A file that cannot be examined (a bare name the loader searches for): its name.
    Name(PathBuf),
}

impl FileIdentity {
    /// The identity of the file at `path`.
    ///
    /// # Examples
    ///
    /// See [`FileIdentity`].
    pub fn of(path: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(path) {
            Ok(m) => Self::Inode {
                dev: m.dev(),
                ino: m.ino(),
            },
            Err(_) => Self::Name(path.to_path_buf()),
        }
    }
}

/// A loaded copy and the service it belongs to.
#[derive(Debug)]
struct Holder {
    service: String,
    library: Weak<ProviderLibrary>,
}

impl Holder {
    fn live(&self) -> Option<Arc<ProviderLibrary>> {
        self.library.upgrade()
    }
}

/// The copies of one file.
#[derive(Debug, Default)]
struct Copies {
    /// The plain `dlopen` copy.
    plain: Option<Holder>,
    /// The `dlmopen` copies.
    private: Vec<Holder>,
}

/// Every file's copies in this process.
static COPIES: Mutex<BTreeMap<FileIdentity, Copies>> = Mutex::new(BTreeMap::new());

/// The copy of the library at `path` that `service` uses in this process: the one it holds
/// already, else the plain `dlopen` copy if no other service holds it, else a new private
/// copy (see the [module docs](self)).
///
/// # Errors
///
/// [`LibraryError::Load`] when the library cannot be loaded at all;
/// [`LibraryError::Namespace`] when a private copy cannot be made (glibc's namespaces are
/// used up): the service cannot be collected in process.
///
/// # Safety
///
/// As for [`ProviderLibrary::load`]: `path` must name a perflib provider that is sound to
/// load into this process (several times, in namespaces of their own).
///
/// # Examples
///
/// See the [module docs](self).
pub unsafe fn load_for_service(
    path: impl AsRef<Path>,
    service: &str,
) -> Result<Arc<ProviderLibrary>, LibraryError> {
    let path = path.as_ref();
    let mut table = COPIES.lock().unwrap_or_else(PoisonError::into_inner);
    let copies = table.entry(FileIdentity::of(path)).or_default();
    if copies.plain.as_ref().and_then(Holder::live).is_none() {
        copies.plain = None;
    }
    copies.private.retain(|h| h.live().is_some());
    let mine = copies
        .plain
        .iter()
        .chain(&copies.private)
        .find(|h| h.service == service)
        .and_then(Holder::live);
    if let Some(library) = mine {
        return Ok(library);
    }
    let holder = |library: &Arc<ProviderLibrary>| Holder {
        service: service.to_owned(),
        library: Arc::downgrade(library),
    };
    if copies.plain.is_none() {
        // SAFETY: the caller vouched for the library.
        let library = Arc::new(unsafe { ProviderLibrary::load(path) }?);
        copies.plain = Some(holder(&library));
        return Ok(library);
    }
    // SAFETY: as above.
    let library = Arc::new(unsafe { ProviderLibrary::load_private(path) }?);
    copies.private.push(holder(&library));
    Ok(library)
}

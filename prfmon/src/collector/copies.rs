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
//! | one that already holds a copy           | that copy again: two collectors of one process serving the same service share it, as perflib's providers allow several monitoring processes |
//! | the first one (in this process)         | the plain `dlopen` copy ([`ProviderLibrary::load`])  |
//! | a further one                           | a copy no service uses any more, else a new private copy: `dlmopen(LM_ID_NEWLM)` ([`ProviderLibrary::load_private`]) |
//!
//! A copy of another file (`cp` of the library) is another identity and starts with a plain
//! `dlopen` of its own.
//!
//! Copies are never unloaded: a copy that no collector holds any more (every [`Lease`]
//! dropped, after Close) stays loaded and goes to the next service that needs one, which
//! calls its Open again, as a monitor that closes and reopens `HKEY_PERFORMANCE_DATA` does
//! with one loaded DLL. glibc has static TLS room for a fixed number of namespaces (here:
//! about ten per process), and `dlclose` does not reliably give it back (measured: a process
//! whose seven namespaces of `libprfdata_provider.so` had collected and been closed could make
//! only four more), so reusing copies is what lets a process open collectors again and again.
//! Past the limit, a further service cannot be loaded ([`LibraryError::Namespace`]) and the
//! collector skips it with an error that says to use host-process isolation, which has no
//! such limit.
//!
//! # Examples
//!
//! ```no_run
//! use prfmon::collector::copies::load_for_service;
//! use prfmon::collector::library::EntryNames;
//! use prfmon::trust::TrustPolicy;
//!
//! let policy = TrustPolicy::new(Vec::<std::path::PathBuf>::new());
//! let lib = policy.open_library("/opt/prfdata/libprfdata_provider.so".as_ref())?;
//! // SAFETY: the path names a perflib provider, trusted in this process.
//! let (first, second) = unsafe { (load_for_service(&lib, "AppA")?, load_for_service(&lib, "AppB")?) };
//! assert!(!first.is_private() && second.is_private());
//! let names = EntryNames::new(Some("OpenPerformanceData"), "CollectPerformanceData", None);
//! // SAFETY: as above.
//! let (a, b) = unsafe { (first.library().entry_points(&names)?, second.library().entry_points(&names)?) };
//! a.open(&["AppA".into()]);
//! b.open(&["AppB".into()]); // a different copy: AppA's Collect still returns only AppA
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::library::{LibraryError, ProviderLibrary};
use crate::trust::OpenedLibrary;

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

    /// The identity of an open file (a library the collector checked and opened), or its
    /// name when it cannot be examined.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::collector::copies::FileIdentity;
    /// let dir = tempfile::tempdir()?;
    /// let file = dir.path().join("lib.so");
    /// std::fs::write(&file, b"")?;
    /// let open = std::fs::File::open(&file)?;
    /// assert_eq!(FileIdentity::of_file(&open, &file), FileIdentity::of(&file));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn of_file(file: &std::fs::File, name: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        match file.metadata() {
            Ok(m) => Self::Inode {
                dev: m.dev(),
                ino: m.ino(),
            },
            Err(_) => Self::Name(name.to_path_buf()),
        }
    }
}

/// A loaded copy and the service using it, if any.
#[derive(Debug)]
struct Copy {
    library: Arc<ProviderLibrary>,
    /// The service using it and how many collectors of this process hold it for that service.
    user: Option<(String, usize)>,
}

impl Copy {
    fn new(library: ProviderLibrary) -> Self {
        Self {
            library: Arc::new(library),
            user: None,
        }
    }

    fn used_by(&self, service: &str) -> bool {
        self.user.as_ref().is_some_and(|(s, _)| s == service)
    }
}

/// The copies of one file: the plain `dlopen` one first, then the `dlmopen` ones.
type Copies = Vec<Copy>;

/// Every file's copies in this process.
static COPIES: Mutex<BTreeMap<FileIdentity, Copies>> = Mutex::new(BTreeMap::new());

/// A service's hold on its copy of a library: the copy stays the service's until every lease
/// on it is dropped; then it is free for the next service that needs one.
///
/// # Examples
///
/// See the [module docs](self).
#[derive(Debug)]
pub struct Lease {
    identity: FileIdentity,
    position: usize,
    library: Arc<ProviderLibrary>,
}

impl Lease {
    /// The copy.
    ///
    /// # Examples
    ///
    /// See the [module docs](self).
    pub fn library(&self) -> &Arc<ProviderLibrary> {
        &self.library
    }

    /// Whether this is a private (`dlmopen`) copy rather than the plain `dlopen` one.
    ///
    /// # Examples
    ///
    /// See the [module docs](self).
    pub fn is_private(&self) -> bool {
        self.position > 0
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut table = COPIES.lock().unwrap_or_else(PoisonError::into_inner);
        let copy = table
            .get_mut(&self.identity)
            .and_then(|copies| copies.get_mut(self.position));
        if let Some(copy) = copy {
            if let Some((_, holders)) = &mut copy.user {
                *holders = holders.saturating_sub(1);
                if *holders == 0 {
                    copy.user = None;
                }
            }
        }
    }
}

/// The copy of `library` (checked and opened by the collector, loaded through its descriptor)
/// that `service` uses in this process: the one it holds already, else the plain `dlopen` copy or a private one that no service uses, else a new
/// private copy (see the [module docs](self)).
///
/// # Errors
///
/// [`LibraryError::Load`] when the library cannot be loaded at all;
/// [`LibraryError::Namespace`] when a private copy cannot be made (glibc's namespaces are
/// used up): the service cannot be collected in process.
///
/// # Safety
///
/// As for [`ProviderLibrary::load`]: `library` must be a perflib provider that is sound to
/// load into this process (several times, in namespaces of their own), and to Open again,
/// for another service, after its Close.
///
/// # Examples
///
/// See the [module docs](self).
pub unsafe fn load_for_service(
    library: &OpenedLibrary,
    service: &str,
) -> Result<Lease, LibraryError> {
    let identity = FileIdentity::of_file(library.file(), library.path());
    let mut table = COPIES.lock().unwrap_or_else(PoisonError::into_inner);
    let copies = table.entry(identity.clone()).or_default();
    let found = copies
        .iter()
        .position(|c| c.used_by(service))
        .or_else(|| copies.iter().position(|c| c.user.is_none()));
    let position = match found {
        Some(position) => position,
        None => {
            let library = if copies.is_empty() {
                // SAFETY: the caller vouched for the library.
                unsafe { ProviderLibrary::load_opened(library) }?
            } else {
                // SAFETY: as above.
                unsafe { ProviderLibrary::load_private_opened(library) }?
            };
            copies.push(Copy::new(library));
            copies.len() - 1
        }
    };
    let copy = &mut copies[position];
    match &mut copy.user {
        Some((_, holders)) => *holders += 1,
        None => copy.user = Some((service.to_owned(), 1)),
    }
    Ok(Lease {
        identity,
        position,
        library: Arc::clone(&copy.library),
    })
}

//! A provider library loaded with `dlopen` (libloading) and its Open / Collect / Close trio,
//! called with winperf.h's signatures; used inside the provider host and by the in-process
//! collector.
//!
//! ```text
//! DWORD APIENTRY OpenPerformanceData(LPWSTR lpDeviceNames);
//! DWORD APIENTRY CollectPerformanceData(LPWSTR lpValueName, LPVOID *lppData,
//!                                       LPDWORD lpcbTotalBytes, LPDWORD lpNumObjectTypes);
//! DWORD APIENTRY ClosePerformanceData(void);
//! ```
//!
//! Strings are UTF-16 (`u16`, Windows' `WCHAR`, not Linux's 4-byte `wchar_t`) and
//! NUL-terminated; Open's device names are a REG_MULTI_SZ: each string NUL-terminated and one
//! more NUL at the end, or a NULL pointer when the service has no `Linkage\Export`.
//!
//! # Two ways to load
//!
//! [`ProviderLibrary::load`] is a plain `dlopen`: the process's one copy of the file (`dlopen`
//! returns the copy already loaded when the path, or the file's device and inode behind a
//! symlink or hard link, match one). [`ProviderLibrary::load_private`] is
//! `dlmopen(LM_ID_NEWLM, ...)`: a further, private copy in a new link-map namespace, with its
//! own globals (and its own libc), which is what a second service sharing one provider file
//! needs in process (see [`super::copies`]). glibc reserves static TLS for a fixed number of
//! namespaces; the 11th or 12th `dlmopen` of a process fails with "cannot allocate memory in
//! static TLS block" ([`LibraryError::Namespace`]).

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use zerocopy::IntoBytes;

use crate::trust::OpenedLibrary;

/// `PM_OPEN_PROC`.
pub type OpenFn = unsafe extern "system" fn(*mut u16) -> u32;
/// `PM_COLLECT_PROC`.
pub type CollectFn =
    unsafe extern "system" fn(*mut u16, *mut *mut c_void, *mut u32, *mut u32) -> u32;
/// `PM_CLOSE_PROC`.
pub type CloseFn = unsafe extern "system" fn() -> u32;

/// Bytes of guard after the buffer Collect is given; a provider that changes any of them wrote
/// past the size it was told. 64 bytes (a cache line) catch the usual off-by-some overrun,
/// including one that skips a few bytes; a wild write further away is beyond any guard, which
/// is why providers run in a host process by default.
pub const CANARY_LEN: usize = 64;
/// The guard bytes' value.
pub const CANARY_BYTE: u8 = 0xA5;

/// A provider library could not be used.
///
/// # Examples
///
/// ```
/// use prfmon::collector::library::{LibraryError, ProviderLibrary};
/// // SAFETY: the file does not exist, so no code is run.
/// let err = unsafe { ProviderLibrary::load("/nonexistent/libnothing.so") }.unwrap_err();
/// assert!(matches!(err, LibraryError::Load { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    /// `dlopen` failed.
    #[error("cannot load provider library {}: {source}", path.display())]
    Load {
        /// The library.
        path: PathBuf,
        /// What dlopen said.
        source: libloading::Error,
    },
    /// `dlmopen` could not make a private copy of the library (glibc has static TLS room for
    /// about ten namespaces per process), or it is not available on this platform.
    #[error(
        "cannot load a private copy of provider library {} (dlmopen in a new namespace): \
         {message}; a process has room for about 10 such copies: use host-process isolation \
         (the default; run without --in-process)",
        path.display()
    )]
    Namespace {
        /// The library.
        path: PathBuf,
        /// What dlmopen said.
        message: String,
    },
    /// An export named by the registry is not in the library.
    #[error("provider library {} has no export `{name}` (its {value} value): {source}", path.display())]
    Symbol {
        /// The library.
        path: PathBuf,
        /// `Open`, `Collect` or `Close`.
        value: &'static str,
        /// The export's name.
        name: String,
        /// What dlsym said.
        source: libloading::Error,
    },
}

/// A loaded provider library.
///
/// # Examples
///
/// ```no_run
/// use prfmon::collector::library::{EntryNames, ProviderLibrary};
/// // SAFETY: the path names a perflib provider whose exports have winperf.h's signatures.
/// let lib = std::sync::Arc::new(unsafe { ProviderLibrary::load("/opt/app/libperf.so")? });
/// let names = EntryNames::new(Some("OpenPerformanceData"), "CollectPerformanceData", None);
/// // SAFETY: as above.
/// let provider = unsafe { lib.entry_points(&names)? };
/// assert_eq!(provider.open(&[]), 0);
/// # Ok::<(), prfmon::collector::library::LibraryError>(())
/// ```
#[derive(Debug)]
pub struct ProviderLibrary {
    path: PathBuf,
    lib: libloading::Library,
}

impl ProviderLibrary {
    /// Loads the library at `path` (`dlopen`, `RTLD_NOW`).
    ///
    /// # Safety
    ///
    /// Loading runs the library's initialisers, and everything later called through
    /// [`entry_points`](Self::entry_points) runs its code: `path` must name a perflib provider
    /// that is sound to load into this process.
    ///
    /// # Examples
    ///
    /// ```
    /// // SAFETY: the path does not exist; nothing is loaded.
    /// assert!(unsafe { prfmon::collector::library::ProviderLibrary::load("/nope.so") }.is_err());
    /// ```
    pub unsafe fn load(path: impl AsRef<Path>) -> Result<Self, LibraryError> {
        let path = path.as_ref();
        // SAFETY: the caller guarantees the library is a provider that is sound to load.
        unsafe { Self::load_named(path, path) }
    }

    /// Loads a library the collector checked and opened ([`OpenedLibrary`]) through its
    /// descriptor (`dlopen("/proc/self/fd/N")`): the file loaded is the file checked, whatever
    /// became of its path since. Messages name the library by its registry path.
    ///
    /// # Safety
    ///
    /// As for [`load`](Self::load).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::collector::library::{LibraryError, ProviderLibrary};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("libnot.so"), b"not an ELF file")?;
    /// let policy = prfmon::trust::TrustPolicy::new(Vec::<std::path::PathBuf>::new());
    /// let opened = policy.open_library(&dir.path().join("libnot.so"))?;
    /// // SAFETY: not a library: dlopen refuses it before running anything.
    /// let err = unsafe { ProviderLibrary::load_opened(&opened) }.unwrap_err();
    /// assert!(err.to_string().contains("libnot.so"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn load_opened(library: &OpenedLibrary) -> Result<Self, LibraryError> {
        let load = kept_fd_path(library.file()).map_err(|e| LibraryError::Namespace {
            path: library.path().to_path_buf(),
            message: format!("cannot keep a descriptor of it: {e}"),
        })?;
        // SAFETY: the caller guarantees the library is a provider that is sound to load.
        unsafe { Self::load_named(&load, library.path()) }
    }

    /// Loads the library open on `fd` (`dlopen("/proc/self/fd/N")`), named `name` in
    /// messages: what a provider host does with the descriptor the collector checked and
    /// passed to it.
    ///
    /// # Safety
    ///
    /// As for [`load`](Self::load).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use prfmon::collector::library::ProviderLibrary;
    /// let file = tempfile::tempfile()?;
    /// // SAFETY: an empty file is not a library: dlopen refuses it before running anything.
    /// let err = unsafe { ProviderLibrary::load_descriptor(file.as_fd(), "/opt/libx.so".as_ref()) };
    /// assert!(err.unwrap_err().to_string().contains("/opt/libx.so"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub unsafe fn load_descriptor(
        fd: std::os::fd::BorrowedFd<'_>,
        name: &Path,
    ) -> Result<Self, LibraryError> {
        let file = fd
            .try_clone_to_owned()
            .map(std::fs::File::from)
            .and_then(|f| kept_fd_path(&f));
        let load = file.map_err(|e| LibraryError::Namespace {
            path: name.to_path_buf(),
            message: format!("cannot keep a descriptor of it: {e}"),
        })?;
        // SAFETY: the caller guarantees the library is a provider that is sound to load.
        unsafe { Self::load_named(&load, name) }
    }

    /// `dlopen(load)`, named `name` in messages.
    ///
    /// # Safety
    ///
    /// As for [`load`](Self::load).
    unsafe fn load_named(load: &Path, name: &Path) -> Result<Self, LibraryError> {
        // SAFETY: the caller guarantees the library is a provider that is sound to load.
        let lib =
            unsafe { libloading::Library::new(load) }.map_err(|source| LibraryError::Load {
                path: name.to_path_buf(),
                source,
            })?;
        Ok(Self {
            path: name.to_path_buf(),
            lib,
        })
    }

    /// Loads a private copy of the library at `path` in a new link-map namespace
    /// (`dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL)`): its globals are its own, apart
    /// from those of the copy a plain [`load`](Self::load) gives and of every other private
    /// copy. The library's dependencies (libc included) are loaded again inside the namespace.
    /// Dropping it calls `dlclose`, which glibc does not always follow by unloading the
    /// namespace: [`super::copies`] keeps copies for reuse instead.
    ///
    /// Linux with glibc only; elsewhere, and when glibc runs out of room for namespaces, the
    /// error is [`LibraryError::Namespace`].
    ///
    /// # Safety
    ///
    /// As for [`load`](Self::load): `path` must name a perflib provider that is sound to
    /// load, here into a namespace of its own (it must not share memory it allocates with
    /// this process's copy of libc, which perflib's interface never asks it to do).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::collector::library::{LibraryError, ProviderLibrary};
    /// // SAFETY: the path does not exist; nothing is loaded.
    /// let err = unsafe { ProviderLibrary::load_private("/nope.so") }.unwrap_err();
    /// assert!(matches!(err, LibraryError::Namespace { .. }));
    /// ```
    pub unsafe fn load_private(path: impl AsRef<Path>) -> Result<Self, LibraryError> {
        let path = path.as_ref();
        // SAFETY: the caller guarantees the library is a provider that is sound to load.
        unsafe { Self::load_private_named(path, path) }
    }

    /// [`load_private`](Self::load_private) for a library the collector checked and opened,
    /// through its descriptor, as [`load_opened`](Self::load_opened) does.
    ///
    /// # Safety
    ///
    /// As for [`load_private`](Self::load_private).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::collector::library::{LibraryError, ProviderLibrary};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("libnot.so"), b"not an ELF file")?;
    /// let policy = prfmon::trust::TrustPolicy::new(Vec::<std::path::PathBuf>::new());
    /// let opened = policy.open_library(&dir.path().join("libnot.so"))?;
    /// // SAFETY: not a library: dlmopen refuses it before running anything.
    /// let err = unsafe { ProviderLibrary::load_private_opened(&opened) }.unwrap_err();
    /// assert!(matches!(err, LibraryError::Namespace { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn load_private_opened(library: &OpenedLibrary) -> Result<Self, LibraryError> {
        let load = kept_fd_path(library.file()).map_err(|e| LibraryError::Namespace {
            path: library.path().to_path_buf(),
            message: format!("cannot keep a descriptor of it: {e}"),
        })?;
        // SAFETY: the caller guarantees the library is a provider that is sound to load.
        unsafe { Self::load_private_named(&load, library.path()) }
    }

    /// `dlmopen(LM_ID_NEWLM, load)`, named `name` in messages.
    ///
    /// # Safety
    ///
    /// As for [`load_private`](Self::load_private).
    unsafe fn load_private_named(load: &Path, name: &Path) -> Result<Self, LibraryError> {
        // SAFETY: the caller guarantees the library is a provider that is sound to load.
        let lib =
            unsafe { dlmopen_new_namespace(load) }.map_err(|message| LibraryError::Namespace {
                path: name.to_path_buf(),
                message,
            })?;
        Ok(Self {
            path: name.to_path_buf(),
            lib,
        })
    }

    /// The path it was loaded from.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use prfmon::collector::library::ProviderLibrary;
    /// // SAFETY: a perflib provider.
    /// let lib = unsafe { ProviderLibrary::load("/opt/app/libperf.so")? };
    /// assert!(lib.path().ends_with("libperf.so"));
    /// # Ok::<(), prfmon::collector::library::LibraryError>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Resolves the trio named by a service's `Open`, `Collect` and `Close` values.
    ///
    /// # Safety
    ///
    /// The exports with these names must have winperf.h's signatures ([`OpenFn`],
    /// [`CollectFn`], [`CloseFn`]) and be sound to call as the perflib contract describes
    /// ("How a performance DLL interfaces with a monitor"): they are called through the returned
    /// [`EntryPoints`] without further checks.
    pub unsafe fn entry_points(
        self: &Arc<Self>,
        names: &EntryNames,
    ) -> Result<EntryPoints, LibraryError> {
        let symbol_error = |value, name: &str| {
            let path = self.path.clone();
            let name = name.to_owned();
            move |source| LibraryError::Symbol {
                path,
                value,
                name,
                source,
            }
        };
        // SAFETY (all three): the caller guarantees each named export has the perflib
        // signature given as the type; the fn pointers are kept only inside `EntryPoints`,
        // which holds an `Arc` of the library so they cannot outlive it.
        let open = match &names.open {
            Some(name) => Some(
                *unsafe { self.lib.get::<OpenFn>(name.as_bytes()) }
                    .map_err(symbol_error("Open", name))?,
            ),
            None => None,
        };
        // SAFETY: as above.
        let collect = *unsafe { self.lib.get::<CollectFn>(names.collect.as_bytes()) }
            .map_err(symbol_error("Collect", &names.collect))?;
        let close = match &names.close {
            // SAFETY: as above.
            Some(name) => Some(
                *unsafe { self.lib.get::<CloseFn>(name.as_bytes()) }
                    .map_err(symbol_error("Close", name))?,
            ),
            None => None,
        };
        Ok(EntryPoints {
            _library: Arc::clone(self),
            open,
            collect,
            close,
        })
    }
}

/// Descriptors of the library files this process loaded through `/proc/self/fd/N`, one per
/// file (device and inode), open for the life of the process.
///
/// The loader remembers a loaded object by the name it was given and returns that object for
/// the same name later, before it opens anything; it also keeps objects loaded after
/// `dlclose` (a Rust cdylib with thread-local destructors, a namespace). Were the descriptor
/// closed, its number could name another file, and a later `dlopen("/proc/self/fd/N")` would
/// return the first file's object. So each file's first descriptor is kept, and every later
/// load of that file goes through it: one descriptor per distinct library file, bounded by the
/// number of providers installed.
static KEPT: std::sync::Mutex<std::collections::BTreeMap<(u64, u64), std::fs::File>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// `/proc/self/fd/N` for a kept descriptor of the same file as `file` (see [`KEPT`]).
fn kept_fd_path(file: &std::fs::File) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let metadata = file.metadata()?;
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let fd = match kept.entry((metadata.dev(), metadata.ino())) {
        std::collections::btree_map::Entry::Occupied(e) => e.get().as_raw_fd(),
        std::collections::btree_map::Entry::Vacant(e) => e.insert(file.try_clone()?).as_raw_fd(),
    };
    Ok(PathBuf::from(format!("/proc/self/fd/{fd}")))
}

/// `dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL)`, as a libloading [`Library`]
/// (`dlsym` and `dlclose` work on a namespace's handle as on `dlopen`'s). The one place this
/// module calls the dynamic loader directly; `RTLD_GLOBAL` is not allowed with
/// `LM_ID_NEWLM`.
///
/// # Safety
///
/// Loading runs the library's initialisers: see [`ProviderLibrary::load_private`].
///
/// [`Library`]: libloading::Library
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn dlmopen_new_namespace(path: &Path) -> Result<libloading::Library, String> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| "the path contains a NUL byte".to_owned())?;
    // SAFETY:
    // - `name` is a NUL-terminated C string that lives across the call;
    // - LM_ID_NEWLM with RTLD_NOW | RTLD_LOCAL is a combination glibc documents (RTLD_GLOBAL
    //   would be refused);
    // - the library's initialisers run: the caller vouched for the library.
    let handle = unsafe {
        libc::dlmopen(
            libc::LM_ID_NEWLM,
            name.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL,
        )
    };
    if handle.is_null() {
        // SAFETY: dlerror takes no arguments; glibc keeps its message per thread, valid until
        // the next dl* call on this thread, and it is copied out at once.
        let message = unsafe { libc::dlerror() };
        return Err(if message.is_null() {
            "dlmopen failed without a message".to_owned()
        } else {
            // SAFETY: a non-NULL dlerror result is a NUL-terminated C string (see above).
            unsafe { std::ffi::CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        });
    }
    // SAFETY: `handle` is the non-NULL result of a successful dlmopen, which dlclose accepts;
    // the returned Library owns it and closes it once.
    Ok(unsafe { libloading::os::unix::Library::from_raw(handle) }.into())
}

/// Without glibc there is no `dlmopen`.
///
/// # Safety
///
/// Nothing is loaded.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
unsafe fn dlmopen_new_namespace(_path: &Path) -> Result<libloading::Library, String> {
    Err("dlmopen is only available on Linux with glibc".to_owned())
}

/// The export names a service's Performance key gives (`Open`, `Collect`, `Close`).
///
/// # Examples
///
/// ```
/// let names = prfmon::collector::library::EntryNames::new(None, "Collect", Some("Close"));
/// assert!(names.open.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryNames {
    /// `Open` (optional: perflib calls Collect for "those with a Collect function but no Open
    /// function").
    pub open: Option<String>,
    /// `Collect`.
    pub collect: String,
    /// `Close` (optional).
    pub close: Option<String>,
}

impl EntryNames {
    /// Names from the three values.
    ///
    /// # Examples
    ///
    /// ```
    /// let names = prfmon::collector::library::EntryNames::new(Some("O"), "C", None);
    /// assert_eq!(names.collect, "C");
    /// ```
    pub fn new(open: Option<&str>, collect: &str, close: Option<&str>) -> Self {
        Self {
            open: open.map(str::to_owned),
            collect: collect.to_owned(),
            close: close.map(str::to_owned),
        }
    }
}

/// What one Collect call did, as facts for [`validate`](super::validate) to judge: nothing
/// here has been checked yet.
///
/// # Examples
///
/// ```
/// let raw = prfmon::collector::library::RawCollect::default();
/// assert_eq!(raw.advance, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawCollect {
    /// Collect's return value.
    pub status: u32,
    /// The buffer size Collect was given (`*lpcbTotalBytes` on input).
    pub buffer_len: u32,
    /// `*lpcbTotalBytes` on return.
    pub bytes: u32,
    /// `*lpNumObjectTypes` on return.
    pub num_objects: u32,
    /// How far Collect moved `*lppData`, in bytes (negative if backwards).
    pub advance: i64,
    /// Whether the guard bytes after the buffer are as they were.
    pub canary_intact: bool,
    /// The buffer's first `advance` bytes (clamped to the buffer).
    pub data: Vec<u8>,
}

/// Win32 `ERROR_NOT_ENOUGH_MEMORY`: what a Collect call reports when its buffer cannot be
/// allocated (Collect is then not called, and the collector logs it and goes on).
pub const ERROR_NOT_ENOUGH_MEMORY: u32 = 8;

/// The record of a Collect that was not called because its buffer could not be allocated.
fn not_enough_memory(buffer_len: u32) -> RawCollect {
    RawCollect {
        status: ERROR_NOT_ENOUGH_MEMORY,
        buffer_len,
        canary_intact: true,
        ..RawCollect::default()
    }
}

/// `n` zeroed words from the allocator's zeroed path (for a large `n`, fresh pages the kernel
/// zeroes when first touched), or `None` if they cannot be allocated: unlike `vec![0; n]`,
/// which aborts the process.
fn zeroed_words(n: usize) -> Option<Vec<u64>> {
    let layout = std::alloc::Layout::array::<u64>(n).ok()?;
    if layout.size() == 0 {
        return Some(Vec::new());
    }
    // SAFETY: `layout` has a nonzero size (checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<u64>();
    if ptr.is_null() {
        return None;
    }
    // SAFETY:
    // - `ptr` was allocated by the global allocator with the layout of `[u64; n]`, which is
    //   what a `Vec<u64>` of capacity `n` deallocates with;
    // - its `n` words are initialised: zero is a valid u64;
    // - length and capacity are both `n`, and nothing else owns the allocation.
    Some(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// A service's resolved trio, keeping its library loaded.
#[derive(Debug, Clone)]
pub struct EntryPoints {
    _library: Arc<ProviderLibrary>,
    open: Option<OpenFn>,
    collect: CollectFn,
    close: Option<CloseFn>,
}

/// `export` as a REG_MULTI_SZ in UTF-16, or `None` for an empty list.
///
/// # Examples
///
/// ```
/// let m = prfmon::collector::library::multi_sz(&["a".into(), "bc".into()]).unwrap();
/// assert_eq!(m, [97, 0, 98, 99, 0, 0]);
/// assert!(prfmon::collector::library::multi_sz(&[]).is_none());
/// ```
pub fn multi_sz(export: &[String]) -> Option<Vec<u16>> {
    if export.is_empty() {
        return None;
    }
    let mut out: Vec<u16> = Vec::new();
    for s in export {
        out.extend(s.encode_utf16());
        out.push(0);
    }
    out.push(0);
    Some(out)
}

impl EntryPoints {
    /// Calls Open with `export` (`Linkage\Export`) as its device names; a service without an
    /// Open export counts as opened (`ERROR_SUCCESS`).
    pub fn open(&self, export: &[String]) -> u32 {
        let Some(open) = self.open else {
            return prfdata_wire::winperf::ERROR_SUCCESS;
        };
        let mut names = multi_sz(export);
        let ptr = names
            .as_mut()
            .map_or(std::ptr::null_mut(), |n| n.as_mut_ptr());
        // SAFETY: `entry_points`' caller guaranteed Open has the PM_OPEN_PROC signature;
        // `ptr` is NULL or a double-NUL-terminated UTF-16 multi-sz that lives until the call
        // returns.
        unsafe { open(ptr) }
    }

    /// Calls Collect for `value` (`Global`, `Costly` or an index list) with a fresh,
    /// 8-aligned, zeroed buffer of `buffer_len` bytes followed by [`CANARY_LEN`] guard
    /// bytes, and reports what it did.
    pub fn collect(&self, value: &str, buffer_len: u32) -> RawCollect {
        let mut words = Vec::new();
        let (mut raw, data) = self.collect_in(value, buffer_len, &mut words);
        raw.data = data.to_vec();
        raw
    }

    /// [`collect`](Self::collect) into `words`, a buffer the caller keeps from call to call
    /// (not cleared: the provider writes over what an earlier call of the same service left
    /// there). Returns the record with an empty `data` and the data itself, the buffer's first
    /// `advance` bytes (clamped), where Collect wrote them.
    ///
    /// The buffer is made anew, zeroed, when it is too small or more than twice the size
    /// needed: zeroed memory comes from the kernel page by page as the provider writes it, so a
    /// provider that asks for a larger buffer and writes nothing costs no memory, and a buffer
    /// grown for one large answer is given back when the answers shrink (the collector asks for
    /// twice the last answer: [`buffer_after`](super::buffer_after)). A buffer that cannot be
    /// allocated is not the provider's fault: Collect is not called, and the record says
    /// `ERROR_NOT_ENOUGH_MEMORY`, which the collector logs and goes on.
    pub(crate) fn collect_in<'w>(
        &self,
        value: &str,
        buffer_len: u32,
        words: &'w mut Vec<u64>,
    ) -> (RawCollect, &'w [u8]) {
        let len = buffer_len as usize;
        let mut value: Vec<u16> = value.encode_utf16().chain([0]).collect();
        // u64 words: the buffer is 8-aligned as perflib's is.
        let needed = (len + CANARY_LEN).div_ceil(8);
        if words.len() < needed || words.len() / 2 > needed {
            *words = Vec::new();
            match zeroed_words(needed) {
                Some(fresh) => *words = fresh,
                None => return (not_enough_memory(buffer_len), &[]),
            }
        }
        let buf = words.as_mut_bytes();
        buf[len..len + CANARY_LEN].fill(CANARY_BYTE);
        let start = buf.as_mut_ptr();
        let mut data: *mut c_void = start.cast();
        let mut bytes = buffer_len;
        let mut num_objects = 0u32;
        // SAFETY: `entry_points`' caller guaranteed Collect has the PM_COLLECT_PROC
        // signature. Its arguments:
        // - `value` is a NUL-terminated UTF-16 string alive for the call;
        // - `data` points at `buffer_len` writable, initialised bytes (and the guard after
        //   them), which nothing else uses during the call;
        // - `bytes` and `num_objects` are valid, writable u32s.
        // The provider's obligations ("How a performance DLL interfaces with a monitor") are
        // checked afterwards, not trusted.
        let status =
            unsafe { (self.collect)(value.as_mut_ptr(), &mut data, &mut bytes, &mut num_objects) };
        let advance = (data as isize).wrapping_sub(start as isize) as i64;
        let buf = words.as_bytes();
        let canary_intact = buf[len..len + CANARY_LEN].iter().all(|&b| b == CANARY_BYTE);
        let keep = advance.clamp(0, i64::from(buffer_len)) as usize;
        (
            RawCollect {
                status,
                buffer_len,
                bytes,
                num_objects,
                advance,
                canary_intact,
                data: Vec::new(),
            },
            &buf[..keep],
        )
    }

    /// Calls Close, if the service names one (else returns `ERROR_SUCCESS`).
    pub fn close(&self) -> u32 {
        match self.close {
            // SAFETY: `entry_points`' caller guaranteed Close has the PM_CLOSE_PROC signature;
            // it takes no arguments.
            Some(close) => unsafe { close() },
            None => prfdata_wire::winperf::ERROR_SUCCESS,
        }
    }
}

//! Which files the collector trusts: ownership and mode checks, in the manner of OpenSSH's
//! `StrictModes`, before a provider library is loaded or the registry is read.
//!
//! A collector loads whatever library the registry names, so a file another user can change
//! is that user's code running as the collector (as root, when root collects). So:
//!
//! | component                                   | must be                                                         |
//! |---------------------------------------------|-----------------------------------------------------------------|
//! | the file                                    | a regular file (a folder for the registry root), owned by root or by the collector's user (its effective uid), writable by neither its group nor others |
//! | every folder above it, up to `/`            | owned by root or by the collector's user, writable by neither its group nor others, **unless sticky** (`/tmp`, `/dev/shm`): other users cannot rename or remove what they do not own in a sticky folder, so its own writability is allowed and the entry below it must pass the rule |
//! | every symbolic link on the way              | owned by root or by the collector's user; resolved component by component, its target checked as above |
//!
//! Symbolic links are resolved one component at a time ([`TrustPolicy::check`]), so a link is
//! only ever read in a folder that already passed: nobody else can have placed or re-pointed
//! it. A group-writable folder is refused even when the group has one member (OpenSSH's
//! upstream rule, not Debian's relaxation): group membership changes without the file
//! changing.
//!
//! **Trusted paths** ([`TrustPolicy::new`], `--trust-path` on the collecting subcommands,
//! [`CollectorOptions::trusted_paths`](crate::collector::CollectorOptions::trusted_paths)) are
//! the operator's explicit exception: a file whose resolved path is at or under one is
//! admitted whoever owns it and its folders (it must still be a regular file). Use it for
//! the rare legitimate case, e.g. root collecting from an application installed in a user's
//! home.
//!
//! # Check, then load the same file
//!
//! [`TrustPolicy::open_library`] resolves and checks the path, opens the resolved path
//! (`O_NOFOLLOW`), `fstat`s the descriptor and requires the same device and inode as the
//! check saw, and the same rule on the descriptor's owner and mode. The loader is then given
//! `/proc/self/fd/N` for that open file (or for a descriptor of the same file this process
//! already keeps: see [`ProviderLibrary::load_opened`](crate::collector::library::ProviderLibrary::load_opened)),
//! which names the open file, not a path: whatever happens to the path after the check, the
//! checked file is the one loaded. (Every folder of the resolved path passed, so only root or
//! the collector's user could have changed it anyway; the descriptor makes that a guarantee
//! rather than an argument.) The provider host gets the descriptor itself, inherited as fd
//! [`LIBRARY_FD`].
//!
//! What this cannot see: a process that opened the file for writing while it was still
//! writable keeps that descriptor after a `chmod`; a library's own dependencies (`DT_NEEDED`)
//! are found by the loader's search path, which root controls.
//!
//! A cost of loading through the descriptor: the loader knows the library as
//! `/proc/self/fd/N`, so `$ORIGIN` in its `DT_RUNPATH` / `DT_RPATH` means `/proc/self/fd`, not
//! the library's folder. A provider that finds bundled dependencies through `$ORIGIN` must
//! have them installed where the loader looks (`ldconfig`'s folders) instead. Loading by path
//! after the check would keep `$ORIGIN`, but would run the initialisers of whatever file the
//! path names at that moment: the check would come too late to matter.
//!
//! # Examples
//!
//! ```
//! use std::os::unix::fs::PermissionsExt;
//! use prfmon::trust::{Rule, TrustError, TrustPolicy};
//!
//! let dir = tempfile::tempdir()?;
//! let lib = dir.path().join("libperf.so");
//! std::fs::write(&lib, b"not really a library")?;
//! let policy = TrustPolicy::new(Vec::<std::path::PathBuf>::new());
//! assert!(policy.check(&lib, "provider library").is_ok());
//!
//! // A file its group may write is refused, with the file and the rule named.
//! std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o664))?;
//! let err = policy.check(&lib, "provider library").unwrap_err();
//! assert!(matches!(err, TrustError::Untrusted { rule: Rule::GroupWritable, .. }));
//! assert!(err.to_string().contains("libperf.so"));
//!
//! // Unless the operator trusts its folder.
//! let trusting = TrustPolicy::new([dir.path()]);
//! assert!(trusting.check(&lib, "provider library").is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use prfdata_registry::paths;

/// The descriptor a provider host finds its library on: the collector opens and checks the
/// library and the host inherits it there (`prfmon __provider-host --fd 3 LIBRARY`).
pub const LIBRARY_FD: i32 = 3;

/// The most symbolic links followed while resolving one path (Linux's own limit,
/// `MAXSYMLINKS`, is 40).
pub const MAX_SYMLINKS: u32 = 40;

/// `S_IWGRP`.
const GROUP_WRITE: u32 = 0o020;
/// `S_IWOTH`.
const OTHERS_WRITE: u32 = 0o002;
/// `S_ISVTX`.
const STICKY: u32 = 0o1000;

/// The rule a component broke.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::trust::Rule::OthersWritable.to_string(), "is writable by others");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Owned by neither root nor the collector's user.
    Owner,
    /// Writable by its group (and not a sticky folder).
    GroupWritable,
    /// Writable by others (and not a sticky folder).
    OthersWritable,
    /// Not a regular file (a provider library, the registry store).
    NotRegular,
    /// Not a folder (the registry root).
    NotDirectory,
    /// A bare or relative library name: the loader would search folders this check cannot
    /// vouch for.
    NotAbsolute,
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Owner => "is owned by neither root nor the collector's user",
            Self::GroupWritable => "is writable by its group",
            Self::OthersWritable => "is writable by others",
            Self::NotRegular => "is not a regular file",
            Self::NotDirectory => "is not a folder",
            Self::NotAbsolute => "is not an absolute path (the loader would search for it)",
        })
    }
}

/// A file the collector does not trust, or cannot examine.
///
/// # Examples
///
/// ```
/// use prfmon::trust::TrustPolicy;
/// let err = TrustPolicy::new(Vec::<std::path::PathBuf>::new())
///     .check("/nonexistent/libx.so".as_ref(), "provider library")
///     .unwrap_err();
/// assert!(err.to_string().contains("/nonexistent"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// A component breaks the rule (see the [module docs](self)).
    #[error(
        "refusing {what} {}: {} (owner uid {owner}, mode {mode:04o}) {rule}; a {what} and every \
         folder above it must be owned by root or the collector's user (uid {uid}) and writable \
         by no one else (sticky folders such as /tmp excepted); fix the ownership or mode, or \
         pass --trust-path with it or a folder above it to trust it anyway",
        file.display(),
        component.display()
    )]
    Untrusted {
        /// What the file is for (`provider library`, `registry folder`, ...).
        what: &'static str,
        /// The file as it was named.
        file: PathBuf,
        /// The component that breaks the rule (the file, a folder above it, or a link).
        component: PathBuf,
        /// The component's owner.
        owner: u32,
        /// The component's permission bits (with the sticky bit).
        mode: u32,
        /// The rule it breaks.
        rule: Rule,
        /// The collector's effective uid.
        uid: u32,
    },
    /// A component could not be examined (missing, no permission).
    #[error("cannot check {what} {}: {}: {source}", file.display(), component.display())]
    Io {
        /// What the file is for.
        what: &'static str,
        /// The file as it was named.
        file: PathBuf,
        /// The component that could not be examined.
        component: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// More than [`MAX_SYMLINKS`] symbolic links.
    #[error("cannot check {what} {}: more than {MAX_SYMLINKS} symbolic links", file.display())]
    SymlinkLoop {
        /// What the file is for.
        what: &'static str,
        /// The file as it was named.
        file: PathBuf,
    },
    /// The file opened is not the file checked.
    #[error(
        "refusing {what} {}: {} changed between its check and its opening; try again",
        file.display(),
        resolved.display()
    )]
    Changed {
        /// What the file is for.
        what: &'static str,
        /// The file as it was named.
        file: PathBuf,
        /// Its resolved path.
        resolved: PathBuf,
    },
}

impl TrustError {
    /// The same error, naming `named` as the file checked (the registry root when its nearest
    /// existing folder was checked).
    fn naming(mut self, named: &Path) -> Self {
        let (Self::Untrusted { file, .. }
        | Self::Io { file, .. }
        | Self::SymlinkLoop { file, .. }
        | Self::Changed { file, .. }) = &mut self;
        *file = named.to_path_buf();
        self
    }
}

/// Who the collector trusts: root, its own effective user, and the files at or under the
/// trusted paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustPolicy {
    uid: u32,
    trusted: Vec<PathBuf>,
}

/// A checked file: where its path led, and what it is.
#[derive(Debug)]
pub struct Checked {
    /// The path with every symbolic link, `.` and `..` resolved.
    pub resolved: PathBuf,
    /// Its metadata (`lstat` of the resolved path: never a link).
    pub metadata: Metadata,
}

/// A provider library checked and opened: load it through [`fd_path`](Self::fd_path).
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let lib = dir.path().join("libperf.so");
/// std::fs::write(&lib, b"")?;
/// let policy = prfmon::trust::TrustPolicy::new(Vec::<std::path::PathBuf>::new());
/// let opened = policy.open_library(&lib)?;
/// assert_eq!(opened.path(), lib);
/// assert!(opened.fd_path().starts_with("/proc/self/fd/"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OpenedLibrary {
    path: PathBuf,
    resolved: PathBuf,
    file: File,
}

impl OpenedLibrary {
    /// The library as the registry names it (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its resolved path.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("lib.so"), b"")?;
    /// let policy = prfmon::trust::TrustPolicy::new(Vec::<std::path::PathBuf>::new());
    /// let opened = policy.open_library(&dir.path().join("./lib.so"))?;
    /// assert_eq!(opened.resolved(), dir.path().canonicalize()?.join("lib.so"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolved(&self) -> &Path {
        &self.resolved
    }

    /// The open file.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("lib.so"), b"abc")?;
    /// let policy = prfmon::trust::TrustPolicy::new(Vec::<std::path::PathBuf>::new());
    /// let opened = policy.open_library(&dir.path().join("lib.so"))?;
    /// assert_eq!(opened.file().metadata()?.len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn file(&self) -> &File {
        &self.file
    }

    /// `/proc/self/fd/N` for the open file: what `dlopen` is given, so that the checked file
    /// is the one loaded.
    pub fn fd_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }
}

/// The kind of file a check expects at the end of the path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    File,
    Directory,
}

impl TrustPolicy {
    /// Root, the calling process's effective user, and the files at or under `trusted`
    /// (resolved now; a trusted path that does not exist trusts nothing).
    pub fn new<P: AsRef<Path>>(trusted: impl IntoIterator<Item = P>) -> Self {
        Self::for_uid(rustix::process::geteuid().as_raw(), trusted)
    }

    /// As [`new`](Self::new), for a collector whose user is `uid`.
    ///
    /// # Examples
    ///
    /// ```
    /// // A policy for another user: the root-owned / passes, a file of ours does not.
    /// let dir = tempfile::tempdir()?;
    /// let policy = prfmon::trust::TrustPolicy::for_uid(4242, Vec::<std::path::PathBuf>::new());
    /// let ours = rustix::process::geteuid().is_root();
    /// assert_eq!(policy.check(dir.path(), "folder").is_ok(), ours);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_uid<P: AsRef<Path>>(uid: u32, trusted: impl IntoIterator<Item = P>) -> Self {
        let trusted = trusted
            .into_iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        Self { uid, trusted }
    }

    /// The user the policy trusts besides root.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = prfmon::trust::TrustPolicy::for_uid(7, Vec::<std::path::PathBuf>::new());
    /// assert_eq!(p.uid(), 7);
    /// ```
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Whether `resolved` is at or under a trusted path.
    fn is_trusted_path(&self, resolved: &Path) -> bool {
        self.trusted.iter().any(|t| resolved.starts_with(t))
    }

    /// Resolves `path` component by component and checks every component against the rule
    /// (see the [module docs](self)); `what` names the file in errors. The file may be a
    /// regular file or a folder; [`open_library`](Self::open_library) and
    /// [`check_registry`](Self::check_registry) say which they need.
    ///
    /// # Errors
    ///
    /// [`TrustError::Untrusted`] naming the first component that breaks the rule,
    /// [`TrustError::Io`] for a component that cannot be examined,
    /// [`TrustError::SymlinkLoop`].
    pub fn check(&self, path: &Path, what: &'static str) -> Result<Checked, TrustError> {
        self.walk(path, what, None)
    }

    fn walk(
        &self,
        path: &Path,
        what: &'static str,
        expect: Option<Expect>,
    ) -> Result<Checked, TrustError> {
        let io = |component: &Path, source| TrustError::Io {
            what,
            file: path.to_path_buf(),
            component: component.to_path_buf(),
            source,
        };
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| io(Path::new("."), e))?
                .join(path)
        };
        // Components still to walk, the next one last.
        let mut pending: Vec<OsString> = Vec::new();
        push_components(&mut pending, &absolute);
        let mut current = PathBuf::from("/");
        let mut metadata = std::fs::symlink_metadata(&current).map_err(|e| io(&current, e))?;
        // The first component that breaks the rule: reported unless the file turns out to be
        // under a trusted path, so the whole path is resolved first.
        let mut violation = self.violation(&current, &metadata, false);
        let mut links = 0;
        while let Some(name) = pending.pop() {
            if name == "." {
                continue;
            }
            if name == ".." {
                // `current` holds no links: its parent is its lexical parent.
                current.pop();
                metadata = std::fs::symlink_metadata(&current).map_err(|e| io(&current, e))?;
                continue;
            }
            if !metadata.is_dir() {
                return Err(io(
                    &current,
                    std::io::Error::from_raw_os_error(libc::ENOTDIR),
                ));
            }
            let next = current.join(&name);
            let next_metadata = std::fs::symlink_metadata(&next).map_err(|e| io(&next, e))?;
            if violation.is_none() {
                violation = self.violation(&next, &next_metadata, pending.is_empty());
            }
            if next_metadata.file_type().is_symlink() {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(TrustError::SymlinkLoop {
                        what,
                        file: path.to_path_buf(),
                    });
                }
                let target = std::fs::read_link(&next).map_err(|e| io(&next, e))?;
                if target.is_absolute() {
                    current = PathBuf::from("/");
                    metadata = std::fs::symlink_metadata(&current).map_err(|e| io(&current, e))?;
                }
                push_components(&mut pending, &target);
                continue;
            }
            current = next;
            metadata = next_metadata;
        }
        let resolved = Checked {
            resolved: current,
            metadata,
        };
        self.verdict(what, path, resolved, expect, violation)
    }

    /// What [`TrustPolicy::walk`] found of `path` (resolved to `found`): the file if it is of
    /// the kind expected and either under a trusted path or without a `violation`.
    fn verdict(
        &self,
        what: &'static str,
        path: &Path,
        found: Checked,
        expect: Option<Expect>,
        violation: Option<(PathBuf, Metadata, Rule)>,
    ) -> Result<Checked, TrustError> {
        let (current, metadata) = (&found.resolved, &found.metadata);
        let kind_rule = match expect {
            Some(Expect::File) if !metadata.is_file() => Some(Rule::NotRegular),
            Some(Expect::Directory) if !metadata.is_dir() => Some(Rule::NotDirectory),
            _ => None,
        };
        if let Some(rule) = kind_rule {
            return Err(self.untrusted(what, path, current, metadata, rule));
        }
        match violation {
            Some((component, meta, rule)) if !self.is_trusted_path(current) => {
                Err(self.untrusted(what, path, &component, &meta, rule))
            }
            _ => Ok(found),
        }
    }

    /// The rule `metadata` (of `component`) breaks, if any. `last`: the file itself, whose
    /// writability is never excused by a sticky bit.
    fn violation(
        &self,
        component: &Path,
        metadata: &Metadata,
        last: bool,
    ) -> Option<(PathBuf, Metadata, Rule)> {
        self.rule_broken(metadata, last)
            .map(|rule| (component.to_path_buf(), metadata.clone(), rule))
    }

    fn rule_broken(&self, metadata: &Metadata, last: bool) -> Option<Rule> {
        let owner = metadata.uid();
        if owner != 0 && owner != self.uid {
            return Some(Rule::Owner);
        }
        if metadata.file_type().is_symlink() {
            // A link's own mode means nothing; it is changed only through its folder.
            return None;
        }
        let mode = metadata.mode();
        let sticky_folder = metadata.is_dir() && mode & STICKY != 0 && !last;
        if sticky_folder {
            return None;
        }
        if mode & OTHERS_WRITE != 0 {
            return Some(Rule::OthersWritable);
        }
        if mode & GROUP_WRITE != 0 {
            return Some(Rule::GroupWritable);
        }
        None
    }

    fn untrusted(
        &self,
        what: &'static str,
        file: &Path,
        component: &Path,
        metadata: &Metadata,
        rule: Rule,
    ) -> TrustError {
        TrustError::Untrusted {
            what,
            file: file.to_path_buf(),
            component: component.to_path_buf(),
            owner: metadata.uid(),
            mode: metadata.mode() & 0o7777,
            rule,
            uid: self.uid,
        }
    }

    /// Checks the provider library at `path` and opens it for loading (see
    /// [Check, then load the same file](self#check-then-load-the-same-file)).
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check), and [`Rule::NotAbsolute`] for a bare or relative name,
    /// [`Rule::NotRegular`] for anything but a regular file, [`TrustError::Changed`] when the
    /// file opened is not the file checked.
    pub fn open_library(&self, path: &Path) -> Result<OpenedLibrary, TrustError> {
        const WHAT: &str = "provider library";
        if !path.is_absolute() {
            return Err(TrustError::Untrusted {
                what: WHAT,
                file: path.to_path_buf(),
                component: path.to_path_buf(),
                owner: 0,
                mode: 0,
                rule: Rule::NotAbsolute,
                uid: self.uid,
            });
        }
        let checked = self.walk(path, WHAT, Some(Expect::File))?;
        let io = |source| TrustError::Io {
            what: WHAT,
            file: path.to_path_buf(),
            component: checked.resolved.clone(),
            source,
        };
        // O_NOFOLLOW: the resolved path holds no links, so a link now is a change;
        // O_NONBLOCK: a FIFO put there since does not block the open.
        let fd = rustix::fs::open(
            &checked.resolved,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::CLOEXEC
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::NONBLOCK,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| io(e.into()))?;
        let file = File::from(fd);
        let opened = file.metadata().map_err(io)?;
        let changed = || TrustError::Changed {
            what: WHAT,
            file: path.to_path_buf(),
            resolved: checked.resolved.clone(),
        };
        if opened.dev() != checked.metadata.dev() || opened.ino() != checked.metadata.ino() {
            return Err(changed());
        }
        if !opened.is_file() {
            return Err(self.untrusted(WHAT, path, &checked.resolved, &opened, Rule::NotRegular));
        }
        if !self.is_trusted_path(&checked.resolved) {
            if let Some(rule) = self.rule_broken(&opened, true) {
                return Err(self.untrusted(WHAT, path, &checked.resolved, &opened, rule));
            }
        }
        Ok(OpenedLibrary {
            path: path.to_path_buf(),
            resolved: checked.resolved,
            file,
        })
    }

    /// Checks the registry in `root` before it is opened: the folder and every folder above
    /// it, and its store file (`registry.toml`) if there is one; for a root that does not
    /// exist yet, the nearest folder above it that does (the registry will be created
    /// there). Call it again once the registry is open: a folder created between the two
    /// calls is then checked too.
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check).
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let policy = prfmon::trust::TrustPolicy::new(Vec::<std::path::PathBuf>::new());
    /// policy.check_registry(&dir.path().join("not/yet"))?;
    /// let registry = prfdata_registry::FileRegistry::open(dir.path().join("not/yet"))?;
    /// policy.check_registry(registry.root())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_registry(&self, root: &Path) -> Result<(), TrustError> {
        let mut existing = root;
        while std::fs::symlink_metadata(existing).is_err() {
            match existing.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
                _ => break,
            }
        }
        self.walk(existing, "registry folder", Some(Expect::Directory))
            .map_err(|e| e.naming(root))?;
        if existing == root {
            let store = root.join(paths::STORE_FILE);
            if std::fs::symlink_metadata(&store).is_ok() {
                self.walk(&store, "registry store", Some(Expect::File))?;
            }
        }
        Ok(())
    }
}

/// Pushes `path`'s components onto `pending` so that the first is popped first (the root is
/// left out: an absolute path restarts at `/` where it is read).
fn push_components(pending: &mut Vec<OsString>, path: &Path) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir => Some(".".into()),
            Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    pending.extend(names.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn policy() -> TrustPolicy {
        TrustPolicy::new(Vec::<PathBuf>::new())
    }

    #[test]
    fn links_and_dots_are_resolved_to_the_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("lib.so"), b"").unwrap();
        symlink("real", dir.path().join("link")).unwrap();
        let checked = policy()
            .check(&dir.path().join("link/../link/./lib.so"), "test")
            .unwrap();
        assert_eq!(
            checked.resolved,
            dir.path().canonicalize().unwrap().join("real/lib.so")
        );
    }

    #[test]
    fn a_link_loop_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        let err = policy().check(&dir.path().join("a"), "test").unwrap_err();
        assert!(matches!(err, TrustError::SymlinkLoop { .. }), "{err}");
    }

    #[test]
    fn a_world_writable_folder_without_the_sticky_bit_is_refused_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::write(open.join("lib.so"), b"").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = policy().open_library(&open.join("lib.so")).unwrap_err();
        match &err {
            TrustError::Untrusted {
                component, rule, ..
            } => {
                assert_eq!(*rule, Rule::OthersWritable);
                assert_eq!(component, &open.canonicalize().unwrap());
            }
            other => panic!("{other}"),
        }
        // With the sticky bit, as /tmp, the folder passes: the file is ours.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        policy().open_library(&open.join("lib.so")).unwrap();
    }

    #[test]
    fn a_relative_library_name_is_refused() {
        let err = policy().open_library(Path::new("libfoo.so")).unwrap_err();
        assert!(matches!(
            err,
            TrustError::Untrusted {
                rule: Rule::NotAbsolute,
                ..
            }
        ));
    }

    #[test]
    fn a_library_must_be_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = policy().open_library(dir.path()).unwrap_err();
        assert!(
            matches!(
                err,
                TrustError::Untrusted {
                    rule: Rule::NotRegular,
                    ..
                }
            ),
            "{err}"
        );
    }
}

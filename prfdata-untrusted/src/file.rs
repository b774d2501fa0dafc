//! [`UntrustedFile`]: read (or write) a file that another process could have placed, without
//! hanging, without unbounded memory, and without being led elsewhere by a symbolic link.
//!
//! Every file the prfdata crates read from a folder they do not own alone (the registry store,
//! its lock file, a counter .INI and its symbol file, a lodctr `/R:` file, a `decode` input)
//! goes through one rule, in this order:
//!
//! 1. `lstat` (or `stat`, see [`Symlinks`]) the path, so a device, FIFO or socket is refused
//!    before it is even opened (opening some devices has effects).
//! 2. `open(O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)`, plus `O_NOFOLLOW` when the last
//!    component must not be a symbolic link. `O_NONBLOCK` makes the open of a FIFO return at
//!    once instead of waiting for a writer (the check in step 1 can lose a race with a rename).
//! 3. `fstat` the open file: it must be a regular file (this is the check that counts; the one in
//!    step 1 only avoids opening what is obviously wrong) no larger than the cap.
//! 4. Read at most cap + 1 bytes: a regular file that grows after the `fstat`, or that reports a
//!    size of 0 (files in `/proc`), still cannot make the reader use more than the cap.
//!
//! # Which last components may be symbolic links
//!
//! | file | [`Symlinks`] | why |
//! |---|---|---|
//! | a path the user typed (`lodctr FILE.ini`, `decode FILE`, `/S:FILE`, `/R:FILE`) | [`Follow`](Symlinks::Follow) | following the link is what the user asked for |
//! | a file found by convention in a shared folder (`registry.toml`, `registry.lock`, the `symbolfile=` an .INI names) | [`Refuse`](Symlinks::Refuse) | a link planted there could point anywhere, e.g. at a file only the victim may read or write |
//!
//! Only the last component is checked: folders on the way may be links (the trust checks for
//! folders are the collector's).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Whether the last component of a path may be a symbolic link (see the
/// [module docs](self#which-last-components-may-be-symbolic-links)).
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::Symlinks;
/// assert_ne!(Symlinks::Follow, Symlinks::Refuse);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symlinks {
    /// Follow a symbolic link at the last component: for a path the user typed.
    Follow,
    /// Refuse a symbolic link at the last component (`O_NOFOLLOW`): for a file found by
    /// convention in a folder other processes may write.
    Refuse,
}

/// What went wrong with an untrusted file. Every variant names the file, what it was for, and
/// the rule it broke.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::{Symlinks, UntrustedFile, UntrustedFileError};
///
/// let rule = UntrustedFile { what: "test input", max_size: 16, limit_name: "the test's 16 bytes",
///                            symlinks: Symlinks::Follow };
/// let err = rule.read("/dev/zero").unwrap_err();
/// assert!(matches!(err, UntrustedFileError::NotRegular { kind: "character device", .. }));
/// assert!(err.to_string().contains("/dev/zero"), "{err}");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum UntrustedFileError {
    /// The last component is a symbolic link, and the rule refuses one there.
    #[error(
        "{what} {}: is a symbolic link, and prfdata never follows a link at this path (a link \
         in a shared folder could point anywhere): replace it with the file itself",
        path.display()
    )]
    Symlink {
        /// What the file is for.
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// Not a regular file: a FIFO, device, socket or directory.
    #[error(
        "{what} {}: is a {kind}, not a regular file; only a regular file is read here (a FIFO \
         or a device can block forever or never end)",
        path.display()
    )]
    NotRegular {
        /// What the file is for.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// What it is instead (`FIFO`, `character device`, ...).
        kind: &'static str,
    },
    /// Larger than the cap.
    #[error(
        "{what} {}: is larger than the {max} bytes allowed ({size} bytes or more; the limit is \
         {limit_name}); it is refused rather than read into memory",
        path.display()
    )]
    TooLarge {
        /// What the file is for.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Its size as far as it was seen (at least `max + 1`).
        size: u64,
        /// The cap.
        max: u64,
        /// The constant the cap comes from.
        limit_name: &'static str,
    },
    /// A system call failed (the file does not exist, permission denied, ...).
    #[error("{what} {}: cannot {action}: {source}", path.display())]
    Io {
        /// What the file is for.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// What was being done (`open`, `read`, `write`, ...).
        action: &'static str,
        /// The underlying error.
        source: io::Error,
    },
}

impl UntrustedFileError {
    /// The file the error is about.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_untrusted::{Symlinks, UntrustedFile};
    /// let rule = UntrustedFile { what: "x", max_size: 1, limit_name: "1", symlinks: Symlinks::Refuse };
    /// assert_eq!(rule.read("/nonexistent/x").unwrap_err().path(), std::path::Path::new("/nonexistent/x"));
    /// ```
    pub fn path(&self) -> &Path {
        match self {
            Self::Symlink { path, .. }
            | Self::NotRegular { path, .. }
            | Self::TooLarge { path, .. }
            | Self::Io { path, .. } => path,
        }
    }

    /// Whether the file does not exist (`ENOENT`): callers that have a default for a missing
    /// file (a new registry) tell it apart from every other error with this.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_untrusted::{Symlinks, UntrustedFile};
    /// let rule = UntrustedFile { what: "x", max_size: 1, limit_name: "1", symlinks: Symlinks::Refuse };
    /// assert!(rule.read("/nonexistent/x").unwrap_err().is_not_found());
    /// assert!(!rule.read("/dev/null").unwrap_err().is_not_found());
    /// ```
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// The rule for one kind of untrusted file: what it is (for messages), its size cap and whether
/// its last component may be a symbolic link.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::{Symlinks, UntrustedFile};
///
/// const NOTES: UntrustedFile = UntrustedFile {
///     what: "notes file",
///     max_size: 1024,
///     limit_name: "NOTES.max_size (1 KiB)",
///     symlinks: Symlinks::Refuse,
/// };
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("notes.txt");
/// NOTES.write(&path, b"hello")?;
/// assert_eq!(NOTES.read(&path)?, b"hello");
///
/// std::os::unix::fs::symlink(&path, dir.path().join("link.txt"))?;
/// assert!(NOTES.read(dir.path().join("link.txt")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UntrustedFile {
    /// What the file is, as messages name it (`registry store`, `counter .INI file`).
    pub what: &'static str,
    /// The largest size read, in bytes.
    pub max_size: u64,
    /// The constant `max_size` comes from, as messages name it.
    pub limit_name: &'static str,
    /// Whether the last component may be a symbolic link.
    pub symlinks: Symlinks,
}

/// The name of a file type, for messages.
fn kind_name(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        _ => "file of an unknown type",
    }
}

impl UntrustedFile {
    fn io(&self, path: &Path, action: &'static str, source: io::Error) -> UntrustedFileError {
        UntrustedFileError::Io {
            what: self.what,
            path: path.to_path_buf(),
            action,
            source,
        }
    }

    fn symlink(&self, path: &Path) -> UntrustedFileError {
        UntrustedFileError::Symlink {
            what: self.what,
            path: path.to_path_buf(),
        }
    }

    fn not_regular(&self, path: &Path, file_type: FileType) -> UntrustedFileError {
        UntrustedFileError::NotRegular {
            what: self.what,
            path: path.to_path_buf(),
            kind: kind_name(file_type),
        }
    }

    fn too_large(&self, path: &Path, size: u64) -> UntrustedFileError {
        UntrustedFileError::TooLarge {
            what: self.what,
            path: path.to_path_buf(),
            size,
            max: self.max_size,
            limit_name: self.limit_name,
        }
    }

    /// The open flag that refuses a link at the last component, if the rule says so.
    fn nofollow(&self) -> OFlags {
        match self.symlinks {
            Symlinks::Follow => OFlags::empty(),
            Symlinks::Refuse => OFlags::NOFOLLOW,
        }
    }

    /// Step 1: what is at `path` before it is opened. `Ok(None)` if nothing is there.
    fn precheck(&self, path: &Path) -> Result<Option<FileType>, UntrustedFileError> {
        let stat = match self.symlinks {
            Symlinks::Follow => rfs::stat(path),
            Symlinks::Refuse => rfs::lstat(path),
        };
        match stat {
            Ok(st) => {
                let file_type = FileType::from_raw_mode(st.st_mode);
                match file_type {
                    FileType::RegularFile => Ok(Some(file_type)),
                    FileType::Symlink => Err(self.symlink(path)),
                    other => Err(self.not_regular(path, other)),
                }
            }
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(self.io(path, "examine", e.into())),
        }
    }

    /// Maps an `open` error: `ELOOP` under `O_NOFOLLOW` is the link the rule refuses, `ENXIO`
    /// a FIFO without a reader (opened for writing).
    fn open_error(&self, path: &Path, e: Errno, action: &'static str) -> UntrustedFileError {
        match e {
            Errno::LOOP | Errno::MLINK if self.symlinks == Symlinks::Refuse => self.symlink(path),
            Errno::NXIO => UntrustedFileError::NotRegular {
                what: self.what,
                path: path.to_path_buf(),
                kind: "FIFO",
            },
            other => self.io(path, action, other.into()),
        }
    }

    /// Step 3: the open file must be a regular file; returns its size.
    fn check_open(&self, path: &Path, file: &File) -> Result<u64, UntrustedFileError> {
        let st = rfs::fstat(file).map_err(|e| self.io(path, "examine", e.into()))?;
        let file_type = FileType::from_raw_mode(st.st_mode);
        if file_type != FileType::RegularFile {
            return Err(self.not_regular(path, file_type));
        }
        Ok(u64::try_from(st.st_size).unwrap_or(0))
    }

    /// Opens the file for reading under the rule (steps 1 to 3 of the [module docs](self)):
    /// returns the open file and its size, which is at most [`max_size`](Self::max_size).
    ///
    /// # Errors
    ///
    /// [`UntrustedFileError`]: a link the rule refuses, not a regular file, larger than the cap,
    /// or the system call's own error (see [`UntrustedFileError::is_not_found`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_untrusted::{Symlinks, UntrustedFile, UntrustedFileError};
    ///
    /// let rule = UntrustedFile { what: "input", max_size: 4, limit_name: "4 bytes", symlinks: Symlinks::Follow };
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("big"), b"12345")?;
    /// let err = rule.open(dir.path().join("big")).unwrap_err();
    /// assert!(matches!(err, UntrustedFileError::TooLarge { size: 5, max: 4, .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(&self, path: impl AsRef<Path>) -> Result<(File, u64), UntrustedFileError> {
        let path = path.as_ref();
        // Nothing there: let `open` say so with its own error.
        self.precheck(path)?;
        let flags =
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY | self.nofollow();
        let fd =
            rfs::open(path, flags, Mode::empty()).map_err(|e| self.open_error(path, e, "read"))?;
        let file = File::from(fd);
        let size = self.check_open(path, &file)?;
        if size > self.max_size {
            return Err(self.too_large(path, size));
        }
        Ok((file, size))
    }

    /// Reads the whole file under the rule (all four steps of the [module docs](self)).
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open); [`UntrustedFileError::TooLarge`] also if the file grew past the
    /// cap while it was read.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_untrusted::{Symlinks, UntrustedFile, UntrustedFileError};
    ///
    /// let rule = UntrustedFile { what: "input", max_size: 1 << 20, limit_name: "1 MiB", symlinks: Symlinks::Follow };
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("in"), b"data")?;
    /// assert_eq!(rule.read(dir.path().join("in"))?, b"data");
    /// assert!(matches!(rule.read("/dev/zero"), Err(UntrustedFileError::NotRegular { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Vec<u8>, UntrustedFileError> {
        let path = path.as_ref();
        let (file, size) = self.open(path)?;
        self.read_opened(path, &file, size)
    }

    /// Reads the whole of a file [`open`](Self::open) returned (with the `size` it returned),
    /// at most the cap (step 4 of the [module docs](self)): for a caller that looks at the open
    /// file (its `fstat`) before it reads.
    ///
    /// # Errors
    ///
    /// [`UntrustedFileError::TooLarge`] if the file grew past the cap since it was opened;
    /// [`UntrustedFileError::Io`] if it cannot be read.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_untrusted::{Symlinks, UntrustedFile};
    ///
    /// let rule = UntrustedFile { what: "input", max_size: 64, limit_name: "64 bytes", symlinks: Symlinks::Refuse };
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("in");
    /// std::fs::write(&path, b"data")?;
    /// let (file, size) = rule.open(&path)?;
    /// assert_eq!(file.metadata()?.len(), 4);
    /// assert_eq!(rule.read_opened(&path, &file, size)?, b"data");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_opened(
        &self,
        path: &Path,
        file: &File,
        size: u64,
    ) -> Result<Vec<u8>, UntrustedFileError> {
        // `size <= max_size`, and a Vec of it is what reading the file needs anyway.
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(self.max_size.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(path, "read", e))?;
        let read = bytes.len() as u64;
        if read > self.max_size {
            return Err(self.too_large(path, read.max(size)));
        }
        Ok(bytes)
    }

    /// Opens the file for reading and writing, creating it (with `mode` less the umask: 0o600
    /// for a file only its owner may open) if it does not exist, without truncating it: a lock
    /// file. An existing file keeps its mode. An existing FIFO, device or (with
    /// [`Symlinks::Refuse`]) symbolic link is refused, and the open never waits.
    ///
    /// # Errors
    ///
    /// [`UntrustedFileError`], as for [`open`](Self::open) (the size is not checked: nothing is
    /// read).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_untrusted::{Symlinks, UntrustedFile};
    ///
    /// let rule = UntrustedFile { what: "lock file", max_size: 0, limit_name: "0", symlinks: Symlinks::Refuse };
    /// let dir = tempfile::tempdir()?;
    /// let lock = rule.open_or_create(dir.path().join("app.lock"), 0o600)?;
    /// assert_eq!(lock.metadata()?.len(), 0);
    /// use std::os::unix::fs::PermissionsExt;
    /// assert_eq!(lock.metadata()?.permissions().mode() & 0o777, 0o600);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_or_create(
        &self,
        path: impl AsRef<Path>,
        mode: u32,
    ) -> Result<File, UntrustedFileError> {
        let path = path.as_ref();
        self.precheck(path)?;
        let flags = OFlags::RDWR
            | OFlags::CREATE
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC
            | OFlags::NOCTTY
            | self.nofollow();
        let fd = rfs::open(path, flags, Mode::from_raw_mode(mode))
            .map_err(|e| self.open_error(path, e, "open"))?;
        let file = File::from(fd);
        self.check_open(path, &file)?;
        Ok(file)
    }

    /// Writes `bytes` to the file, creating it (mode 0666 less the umask) or truncating it, under
    /// the rule: an existing FIFO, device or (with [`Symlinks::Refuse`]) symbolic link is refused
    /// without being written, and the open never waits for a FIFO's reader. The data is flushed
    /// to the disk before this returns.
    ///
    /// # Errors
    ///
    /// [`UntrustedFileError`]; [`UntrustedFileError::TooLarge`] if `bytes` is over the cap (what
    /// is written here must read back under the same rule).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_untrusted::{Symlinks, UntrustedFile, UntrustedFileError};
    ///
    /// let rule = UntrustedFile { what: "output", max_size: 1 << 20, limit_name: "1 MiB", symlinks: Symlinks::Follow };
    /// let dir = tempfile::tempdir()?;
    /// rule.write(dir.path().join("out"), b"saved")?;
    /// assert_eq!(std::fs::read(dir.path().join("out"))?, b"saved");
    /// assert!(matches!(rule.write("/dev/null", b"x"), Err(UntrustedFileError::NotRegular { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&self, path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), UntrustedFileError> {
        let path = path.as_ref();
        if bytes.len() as u64 > self.max_size {
            return Err(self.too_large(path, bytes.len() as u64));
        }
        self.precheck(path)?;
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC
            | OFlags::NOCTTY
            | self.nofollow();
        let fd = rfs::open(path, flags, Mode::from_raw_mode(0o666))
            .map_err(|e| self.open_error(path, e, "write"))?;
        let mut file = File::from(fd);
        self.check_open(path, &file)?;
        file.set_len(0)
            .and_then(|()| file.write_all(bytes))
            .and_then(|()| file.sync_all())
            .map_err(|e| self.io(path, "write", e))
    }
}

/// Creates a new file for writing that is neither an existing file nor a link
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`), with `mode` less the umask: a temporary file beside the
/// file it will replace, which nothing planted at its name can redirect.
///
/// # Errors
///
/// The `open` error: `EEXIST` if anything (a file, a link, even a dangling one) has the name.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("new.tmp");
/// prfdata_untrusted::create_new(&path, 0o600)?.write_all(b"x")?;
/// assert!(prfdata_untrusted::create_new(&path, 0o600).is_err(), "it exists now");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    let fd = rfs::open(
        path,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    Ok(File::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: UntrustedFile = UntrustedFile {
        what: "test file",
        max_size: 8,
        limit_name: "RULE.max_size",
        symlinks: Symlinks::Refuse,
    };

    #[test]
    fn a_link_is_refused_or_followed_as_the_rule_says() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"ok").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            RULE.read(&link),
            Err(UntrustedFileError::Symlink { .. })
        ));
        let follow = UntrustedFile {
            symlinks: Symlinks::Follow,
            ..RULE
        };
        assert_eq!(follow.read(&link).unwrap(), b"ok");
        // Writing through a refused link leaves its target alone.
        assert!(RULE.write(&link, b"changed").is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"ok");
    }

    #[test]
    fn exactly_the_cap_is_read_one_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [7u8; 8]).unwrap();
        assert_eq!(RULE.read(&path).unwrap().len(), 8);
        std::fs::write(&path, [7u8; 9]).unwrap();
        assert!(matches!(
            RULE.read(&path),
            Err(UntrustedFileError::TooLarge {
                size: 9,
                max: 8,
                ..
            })
        ));
        assert!(RULE.write(&path, &[0u8; 9]).is_err());
    }

    #[test]
    fn a_directory_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = RULE.read(dir.path()).unwrap_err();
        assert!(
            matches!(
                err,
                UntrustedFileError::NotRegular {
                    kind: "directory",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn create_new_refuses_an_existing_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::os::unix::fs::symlink("/nonexistent/target", &path).unwrap();
        assert!(create_new(&path, 0o600).is_err());
        assert!(!Path::new("/nonexistent/target").exists());
    }
}

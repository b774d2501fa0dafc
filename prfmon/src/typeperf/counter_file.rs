//! typeperf's counter file (`-cf FILE`): the counter paths to log, one per line.
//!
//! Lines are trimmed; blank lines and lines whose first character is `#` are skipped; a UTF-8
//! byte-order mark at the start (as Windows' Notepad writes one) is ignored. The file is a
//! path the user typed, read under [`prfdata_untrusted::UntrustedFile`]'s rule (a regular
//! file, at most [`COUNTER_FILE_MAX`] bytes, a link followed), and each line is parsed as a
//! counter path; an error names the file and the line.
//!
//! # Examples
//!
//! ```
//! use prfmon::typeperf::counter_file::read_counter_file;
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("counters.txt");
//! std::fs::write(&file, "# the queue\n\\PrfData Demo Service\\Queue length\n\nnot a path\n")?;
//! let err = read_counter_file(&file).unwrap_err();
//! assert!(err.to_string().contains("counters.txt, line 4"), "{err}");
//! std::fs::write(&file, "# the queue\n\\PrfData Demo Service\\Queue length\n")?;
//! assert_eq!(read_counter_file(&file)?.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use prfdata_untrusted::{Symlinks, UntrustedFile, UntrustedFileError};

use crate::pdh::{self, CounterPath, PathError};

/// The largest counter file read, in bytes: thousands of paths (a path is at most a few
/// hundred bytes), far more than a log has columns.
pub const COUNTER_FILE_MAX: u64 = 1 << 20;

/// How a counter file is read: a path the user typed, so a link is followed.
const COUNTER_FILE: UntrustedFile = UntrustedFile {
    what: "counter file",
    max_size: COUNTER_FILE_MAX,
    limit_name: "COUNTER_FILE_MAX, 1 MiB",
    symlinks: Symlinks::Follow,
};

/// What is wrong with a counter file.
#[derive(Debug, thiserror::Error)]
pub enum CounterFileError {
    /// It cannot be read under the rule (missing, not a regular file, too large, ...).
    #[error(transparent)]
    File(#[from] UntrustedFileError),
    /// A line is not UTF-8 text.
    #[error("counter file {}, line {line}: is not UTF-8 text; save the file as UTF-8", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
    },
    /// A line is not a counter path.
    #[error("counter file {}, line {line}: {source}", path.display())]
    BadPath {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// Why the line is not a counter path.
        source: PathError,
    },
}

/// The counter paths of the counter file at `path`, in the file's order.
///
/// # Errors
///
/// [`CounterFileError`]: the file cannot be read under the rule, or a line (named) is not
/// UTF-8 or not a counter path.
pub fn read_counter_file(path: &Path) -> Result<Vec<CounterPath>, CounterFileError> {
    let bytes = COUNTER_FILE.read(path)?;
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    let mut paths = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let text = std::str::from_utf8(line).map_err(|_| CounterFileError::NotText {
            path: path.to_path_buf(),
            line: line_no,
        })?;
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let counter = pdh::parse(text).map_err(|source| CounterFileError::BadPath {
            path: path.to_path_buf(),
            line: line_no,
            source,
        })?;
        paths.push(counter);
    }
    Ok(paths)
}

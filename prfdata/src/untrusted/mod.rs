//! Input that comes from elsewhere, checked before it is used: files another process could have
//! placed, and names that become paths or registry keys.
//!
//! - [`mod@file`]: [`UntrustedFile`] opens a file without blocking and, where the rule says so,
//!   without following a symbolic link, `fstat`s it and reads it only if it is a regular file
//!   under a size cap; [`UntrustedFileError`] names the file and the rule it broke.
//! - [`name`]: [`check_name`] refuses a service or app name that could leave its folder or its
//!   registry key (`/`, `\`, `..`, NUL, control characters, too long); [`BadName`] names the
//!   value and the rule.

pub mod file;
pub mod name;

pub use file::{Symlinks, UntrustedFile, UntrustedFileError};
pub use name::{check_name, BadName, NameKind, NameRule};

//! Input from elsewhere, checked before it is used: files another process could have placed,
//! names that become paths or registry keys, and text shown on a terminal. Shared by `prfdata` (a block's path) and
//! `prfdata-registry` (the store, .INI files, service keys), and used by `prfmon`.
//!
//! # Index
//!
//! - [`UntrustedFile`] (module [`mod@file`]): opens a file without blocking and, where the rule says
//!   so, without following a symbolic link, `fstat`s it and reads it only if it is a regular
//!   file under a size cap; [`UntrustedFileError`] names the file and the rule it broke;
//!   [`create_new`] makes the temporary file a replacement is written to.
//! - [`check_name`] (module [`name`]): refuses a service or app name that could leave its folder
//!   or its registry key (`/`, `\`, `..`, NUL, control characters, too long); [`BadName`] names
//!   the value and the rule.
//! - [`escape_controls`] (module [`text`]): text from elsewhere made safe to show: control
//!   characters (C0, DEL, C1) written as `\x1b` / `\u{9b}`, or as JSON's `\u001b`.
//!
//! prfdata's own platform code (the futex, the `SIGBUS` handler, block files on tmpfs) is not
//! here: it stays private to `prfdata`, whose invariants it keeps.
//!
//! # Examples
//!
//! ```
//! use prfdata_untrusted::{check_name, NameKind, Symlinks, UntrustedFile};
//!
//! check_name(NameKind::Service, "PrfDataDemo")?;
//! const INI: UntrustedFile = UntrustedFile {
//!     what: "counter .INI file",
//!     max_size: 1 << 20,
//!     limit_name: "1 MiB",
//!     symlinks: Symlinks::Follow,
//! };
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("app.ini");
//! std::fs::write(&path, "[info]\n")?;
//! assert_eq!(INI.read(&path)?, b"[info]\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod file;
pub mod name;
pub mod text;

pub use file::{create_new, Symlinks, UntrustedFile, UntrustedFileError};
pub use name::{check_name, BadName, NameKind, NameRule, MAX_APP_NAME, MAX_SERVICE_NAME};
pub use text::{escape_controls, is_control, Style};

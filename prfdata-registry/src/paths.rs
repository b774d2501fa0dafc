//! Well-known keys and value names, and where the file-backed registry lives.
//!
//! From the lodctr design specification and the MSJ article (Figures 4 and 7):
//!
//! ```text
//! HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib
//!     :Last Counter  :Last Help  :Base Index
//!     009\  :Counter  :Help      (REG_MULTI_SZ, "index\0text\0" pairs, ascending)
//! HKLM\SYSTEM\CurrentControlSet\Services\<driver>
//!     Performance\  :Library :Open :Collect :Close
//!                   :First Counter :Last Counter :First Help :Last Help
//!                   :Open Timeout :Collect Timeout :Disable Performance Counters
//!     Linkage\      :Export      (REG_MULTI_SZ, passed to Open)
//! ```

use std::path::PathBuf;

use super::error::RegistryError;

/// `HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib`.
pub const PERFLIB: &str = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib";
/// `HKLM\SYSTEM\CurrentControlSet\Services`.
pub const SERVICES: &str = r"HKLM\SYSTEM\CurrentControlSet\Services";

/// The environment variable that names the registry's root folder.
pub const ROOT_ENV: &str = "PRFDATA_REGISTRY";
/// The store file inside the root folder.
pub const STORE_FILE: &str = "registry.toml";
/// The journal inside the root folder: the updates made since the store was last written.
pub const LOG_FILE: &str = "registry.log";
/// The lock file inside the root folder (flock'ed, never replaced).
pub const LOCK_FILE: &str = "registry.lock";

/// `Perflib\<lang>`, e.g. `Perflib\009`.
///
/// # Examples
///
/// ```
/// use prfdata_registry::paths;
/// assert!(paths::perflib_language("009").ends_with(r"Perflib\009"));
/// ```
pub fn perflib_language(lang: &str) -> String {
    format!(r"{PERFLIB}\{lang}")
}

/// `Services\<driver>`.
///
/// # Examples
///
/// ```
/// use prfdata_registry::paths;
/// assert_eq!(paths::service("Foo"), r"HKLM\SYSTEM\CurrentControlSet\Services\Foo");
/// ```
pub fn service(driver: &str) -> String {
    format!(r"{SERVICES}\{driver}")
}

/// `Services\<driver>\Performance`.
///
/// # Examples
///
/// ```
/// use prfdata_registry::paths;
/// assert!(paths::performance("Foo").ends_with(r"Services\Foo\Performance"));
/// ```
pub fn performance(driver: &str) -> String {
    format!(r"{SERVICES}\{driver}\Performance")
}

/// `Services\<driver>\Linkage`.
///
/// # Examples
///
/// ```
/// use prfdata_registry::paths;
/// assert!(paths::linkage("Foo").ends_with(r"Services\Foo\Linkage"));
/// ```
pub fn linkage(driver: &str) -> String {
    format!(r"{SERVICES}\{driver}\Linkage")
}

/// The registry's root folder: `$PRFDATA_REGISTRY` if set and not empty, else
/// `$XDG_STATE_HOME/prfdata`, else `~/.local/state/prfdata`.
///
/// # Examples
///
/// ```
/// // Under `cargo test` HOME is set, so a folder is always found.
/// let root = prfdata_registry::paths::registry_root()?;
/// assert!(root.is_absolute() || std::env::var_os("PRFDATA_REGISTRY").is_some());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn registry_root() -> Result<PathBuf, RegistryError> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(root) = var(ROOT_ENV) {
        return Ok(PathBuf::from(root));
    }
    if let Some(state) = var("XDG_STATE_HOME") {
        return Ok(PathBuf::from(state).join("prfdata"));
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".local/state/prfdata"))
        .ok_or(RegistryError::NoRoot)
}

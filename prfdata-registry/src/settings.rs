//! lodctr `/S:file` and `/R:file`: save and restore the Perflib names and the services'
//! performance values, as later lodctr versions do.
//!
//! The settings file uses the store format ([`encode_hive`]) and holds only the keys that are
//! saved: the Perflib key with all its subkeys, and `Services\<name>\Performance` of every
//! service that has one. Restoring replaces the Perflib tree and every saved Performance key
//! with the saved ones; a service whose Performance key is not in the file loses its counter
//! ranges (First/Last Counter/Help), since the restored Perflib no longer holds its names.
//!
//! The file is the one the user named (a symbolic link there is followed). It is written and
//! read only as a regular file, never waiting on a FIFO, and read only up to
//! [`MAX_STORE_SIZE`](super::MAX_STORE_SIZE), the store's own limit
//! ([`prfdata_untrusted::file`]).

use std::path::Path;

use super::error::LodctrError;
use super::file::{decode_hive, encode_hive};
use super::hive::Hive;
use super::paths::{self, PERFLIB};
use super::perflib::{self, LAST_COUNTER, LAST_HELP};
use super::service::{self, FIRST_COUNTER, FIRST_HELP};
use super::store::{update, Registry};
use super::MAX_STORE_SIZE;
use prfdata_untrusted::{Symlinks, UntrustedFile};

/// How a settings file is written and read: a path the user named, at most the store's size.
const SETTINGS_RULE: UntrustedFile = UntrustedFile {
    what: "lodctr settings file",
    max_size: MAX_STORE_SIZE,
    limit_name: "prfdata_registry::MAX_STORE_SIZE, 16 MiB",
    symlinks: Symlinks::Follow,
};

fn fold(s: &str) -> String {
    s.chars().flat_map(char::to_lowercase).collect()
}

/// Copies `root` and every key under it from `from` into `to`.
fn copy_tree(from: &Hive, to: &mut Hive, root: &str) -> Result<(), LodctrError> {
    let root_folded = fold(root);
    let prefix = format!("{root_folded}\\");
    for (path, values) in from.keys() {
        let p = fold(path);
        if p == root_folded || p.starts_with(&prefix) {
            to.create_key(path)?;
            for (name, value) in values {
                to.set_value(path, name, value.clone())?;
            }
        }
    }
    Ok(())
}

/// The part of `hive` that `/S:` saves.
fn saved_part(hive: &Hive) -> Result<Hive, LodctrError> {
    let mut out = Hive::new();
    copy_tree(hive, &mut out, PERFLIB)?;
    for s in service::services_in(hive)? {
        copy_tree(hive, &mut out, &paths::performance(&s.name))?;
    }
    Ok(out)
}

/// lodctr `/S:file`: writes the Perflib tree and every service's Performance key to `file`.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{restore_settings, save_settings, FileRegistry, Registry};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path().join("reg"))?;
/// save_settings(&reg, dir.path().join("saved.toml"))?;
/// restore_settings(&reg, dir.path().join("saved.toml"))?;
/// assert_eq!(reg.snapshot()?, prfdata_registry::perflib::new_hive());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn save_settings<R: Registry + ?Sized>(
    registry: &R,
    file: impl AsRef<Path>,
) -> Result<(), LodctrError> {
    let file = file.as_ref();
    let saved = saved_part(&registry.snapshot()?)?;
    let text = encode_hive(&saved)?;
    Ok(SETTINGS_RULE.write(file, text.as_bytes())?)
}

/// lodctr `/R:file`: restores what [`save_settings`] wrote, in one atomic, locked update.
/// The file is checked first (it must hold Perflib's Last Counter and Last Help); on error
/// nothing is written.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{restore_settings, FileRegistry, LodctrError};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path().join("reg"))?;
/// std::fs::write(dir.path().join("bad.toml"), "format = 1\n")?;
/// let err = restore_settings(&reg, dir.path().join("bad.toml")).unwrap_err();
/// assert!(matches!(err, LodctrError::SettingsFile { .. }), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn restore_settings<R: Registry + ?Sized>(
    registry: &R,
    file: impl AsRef<Path>,
) -> Result<(), LodctrError> {
    let file = file.as_ref();
    let bad = |message: String| LodctrError::SettingsFile {
        path: file.to_path_buf(),
        action: "read",
        message,
    };
    let bytes = SETTINGS_RULE.read(file)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        bad(format!(
            "not UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let saved = decode_hive(&text, file).map_err(|e| bad(e.to_string()))?;
    perflib::last_counter_help(&saved).map_err(|e| bad(e.to_string()))?;
    let saved_services = service::services_in(&saved).map_err(|e| bad(e.to_string()))?;

    update(registry, |hive| {
        hive.delete_key(PERFLIB)?;
        copy_tree(&saved, hive, PERFLIB)?;
        for current in service::services_in(hive)? {
            let is_saved = saved_services
                .iter()
                .any(|s| s.name.eq_ignore_ascii_case(&current.name));
            if !is_saved {
                let perf = paths::performance(&current.name);
                for name in [FIRST_COUNTER, LAST_COUNTER, FIRST_HELP, LAST_HELP] {
                    hive.delete_value(&perf, name)?;
                }
                service::prune_service_keys(hive, &current.name)?;
            }
        }
        for s in &saved_services {
            let perf = paths::performance(&s.name);
            hive.delete_key(&perf)?;
            copy_tree(&saved, hive, &perf)?;
        }
        Ok(())
    })
}

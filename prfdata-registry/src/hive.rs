//! The in-memory key tree every backend reads into and edits: keys with ordered, typed values.
//!
//! Key paths are written as `reg.exe` takes them, `HKLM\SOFTWARE\...`, and may start with the
//! long root name (`HKEY_LOCAL_MACHINE\...`). As in the Windows registry, key and value names
//! are case-insensitive and case-preserving, the root keys always exist, creating a key creates
//! its missing ancestors, and deleting a key deletes its subkeys.

use std::collections::BTreeMap;

use super::change::Change;
use super::error::{ensure, wrong_type, RegistryError};
use super::value::{Value, ValueType};

/// The predefined root keys: short name as `reg.exe` accepts it, long name as it prints it.
const ROOTS: [(&str, &str); 5] = [
    ("HKLM", "HKEY_LOCAL_MACHINE"),
    ("HKCU", "HKEY_CURRENT_USER"),
    ("HKCR", "HKEY_CLASSES_ROOT"),
    ("HKU", "HKEY_USERS"),
    ("HKCC", "HKEY_CURRENT_CONFIG"),
];

/// The longest key name (one component of a path), in UTF-16 units: Windows' limit ("Registry
/// Element Size Limits": 255 characters).
pub const MAX_KEY_NAME: usize = 255;

/// Normalises a key path to `SHORTROOT\Sub\Key` form: known root, no empty components, no
/// trailing backslash; each key name printable (no NUL or control character) and at most
/// [`MAX_KEY_NAME`] characters long, as in the Windows registry. Whitespace around the whole
/// path is dropped; a key name that begins or ends with whitespace is refused wherever it is in
/// the path (were it kept inside a path and trimmed at its end, `X\a \b` would create a key that
/// `X\a ` could never name).
///
/// # Examples
///
/// ```
/// use prfdata_registry::normalize_key;
///
/// assert_eq!(normalize_key(r"HKEY_LOCAL_MACHINE\SOFTWARE\").unwrap(), r"HKLM\SOFTWARE");
/// assert_eq!(normalize_key(r"hklm\System").unwrap(), r"HKLM\System");
/// assert!(normalize_key(r"HKXX\Foo").is_err());
/// assert!(normalize_key(r"HKLM\\Foo").is_err());
/// assert!(normalize_key("HKLM\\A\nB").is_err());
/// assert_eq!(normalize_key(" HKLM\\Foo\t").unwrap(), r"HKLM\Foo");
/// assert!(normalize_key(r"HKLM\Foo \Bar").is_err());
/// ```
pub fn normalize_key(path: &str) -> Result<String, RegistryError> {
    let trimmed = path.trim().trim_end_matches('\\');
    let mut parts = trimmed.split('\\');
    let root = parts.next().unwrap_or("");
    let short = ROOTS
        .iter()
        .find(|(s, l)| root.eq_ignore_ascii_case(s) || root.eq_ignore_ascii_case(l))
        .map(|(s, _)| *s)
        .ok_or_else(|| {
            RegistryError::bad_key_path(path, "it must start with HKLM, HKCU, HKCR, HKU or HKCC")
        })?;
    let mut out = String::from(short);
    for part in parts {
        let bad = [
            (part.is_empty(), "it has an empty key name"),
            (
                part.chars().any(char::is_control),
                "a key name contains a NUL or control character (key names are printable)",
            ),
            (
                part.encode_utf16().count() > MAX_KEY_NAME,
                "a key name is longer than 255 characters (Windows' limit)",
            ),
            (
                part.trim() != part,
                "a key name in it begins or ends with whitespace",
            ),
        ]
        .into_iter()
        .find_map(|(bad, reason)| bad.then_some(reason));
        if let Some(reason) = bad {
            return Err(RegistryError::bad_key_path(path, reason));
        }
        out.push('\\');
        out.push_str(part);
    }
    Ok(out)
}

/// The path `reg query` prints: the root spelled out, e.g. `HKEY_LOCAL_MACHINE\SOFTWARE`.
///
/// # Examples
///
/// ```
/// use prfdata_registry::display_key;
/// assert_eq!(display_key(r"HKLM\SOFTWARE"), r"HKEY_LOCAL_MACHINE\SOFTWARE");
/// ```
pub fn display_key(normalized: &str) -> String {
    let (root, rest) = match normalized.split_once('\\') {
        Some((r, rest)) => (r, Some(rest)),
        None => (normalized, None),
    };
    let long = ROOTS
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(root))
        .map_or(root, |(_, l)| *l);
    match rest {
        Some(rest) => format!("{long}\\{rest}"),
        None => long.to_owned(),
    }
}

/// Case-folds a name character by character (no context rules), so folding a path equals
/// folding its components one by one. An ASCII path (the usual one: every key prfdata names)
/// takes the byte-wise way, which gives the same text without going through `char`s: every
/// key lookup folds its path.
fn fold(path: &str) -> String {
    if path.is_ascii() {
        path.to_ascii_lowercase()
    } else {
        path.chars().flat_map(char::to_lowercase).collect()
    }
}

/// Whether two value names are the same name, compared as [`fold`] compares them, without
/// making either: the registry looks values up by name at every read.
fn same_name(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.chars()
            .flat_map(char::to_lowercase)
            .eq(b.chars().flat_map(char::to_lowercase))
    }
}

fn is_root(normalized: &str) -> bool {
    !normalized.contains('\\')
}

/// One key: its path as first created, and its values in creation order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Key {
    path: String,
    values: Vec<(String, Value)>,
}

/// A registry key tree held in memory: what a [`Registry`](super::Registry) snapshot returns
/// and what an update edits.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{Hive, Value};
///
/// let mut hive = Hive::new();
/// hive.set_value(r"HKLM\SYSTEM\Foo", "Bar", Value::Dword(1))?;
/// assert!(hive.key_exists(r"HKLM\system"));
/// assert_eq!(hive.value(r"hklm\system\foo", "bar")?, Some(&Value::Dword(1)));
/// assert_eq!(hive.subkeys(r"HKLM\SYSTEM")?, vec![r"HKLM\SYSTEM\Foo".to_string()]);
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Hive {
    /// Keyed by the case-folded normalised path, so a key's subkeys sort right after it.
    keys: BTreeMap<String, Key>,
    /// The changes made since [`track`](Hive::track), in order; `None` when not tracking.
    changes: Option<Vec<Change>>,
}

/// Two trees are equal when they hold the same keys and values; what was tracked of how they
/// came to be does not count.
impl PartialEq for Hive {
    fn eq(&self, other: &Self) -> bool {
        self.keys == other.keys
    }
}

impl Eq for Hive {}

impl Hive {
    /// An empty tree (only the root keys, which always exist).
    ///
    /// # Examples
    ///
    /// ```
    /// let hive = prfdata_registry::Hive::new();
    /// assert!(hive.key_exists("HKLM"));
    /// assert!(!hive.key_exists(r"HKLM\SOFTWARE"));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the key exists.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut hive = prfdata_registry::Hive::new();
    /// hive.create_key(r"HKLM\A\B")?;
    /// assert!(hive.key_exists(r"HKLM\A"));
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn key_exists(&self, path: &str) -> bool {
        match normalize_key(path) {
            Ok(p) => is_root(&p) || self.keys.contains_key(&fold(&p)),
            Err(_) => false,
        }
    }

    /// Creates the key and any missing ancestors; an existing key is left as it is.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut hive = prfdata_registry::Hive::new();
    /// hive.create_key(r"HKLM\SYSTEM\CurrentControlSet")?;
    /// assert!(hive.key_exists(r"HKLM\SYSTEM"));
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn create_key(&mut self, path: &str) -> Result<(), RegistryError> {
        let p = normalize_key(path)?;
        if self.create_normalized(&p) {
            self.record(|| Change::CreateKey { key: p.clone() });
        }
        Ok(())
    }

    /// Creates the normalised key `p` and its missing ancestors; whether any was created.
    fn create_normalized(&mut self, p: &str) -> bool {
        let mut comps = p.split('\\');
        let mut stored = comps.next().unwrap_or_default().to_owned();
        let mut folded = fold(&stored);
        let mut created = false;
        for comp in comps {
            folded.push('\\');
            folded.push_str(&fold(comp));
            let key = self.keys.entry(folded.clone()).or_insert_with(|| {
                created = true;
                Key {
                    path: format!("{stored}\\{comp}"),
                    values: Vec::new(),
                }
            });
            stored.clone_from(&key.path);
        }
        created
    }

    /// Starts recording the changes made to the tree, dropping any recorded before: what a
    /// backend that stores changes rather than whole trees writes (see
    /// [`FileRegistry`](crate::FileRegistry)'s journal).
    pub(crate) fn track(&mut self) {
        self.changes = Some(Vec::new());
    }

    /// The changes made since [`track`](Self::track), in order, and stops recording.
    pub(crate) fn take_changes(&mut self) -> Vec<Change> {
        self.changes.take().unwrap_or_default()
    }

    /// Records the change `make` builds, when tracking (else builds nothing).
    fn record(&mut self, make: impl FnOnce() -> Change) {
        if let Some(changes) = &mut self.changes {
            changes.push(make());
        }
    }

    /// Deletes the key and all its subkeys. Returns whether it existed. Root keys cannot be
    /// deleted.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut hive = prfdata_registry::Hive::new();
    /// hive.create_key(r"HKLM\A\B")?;
    /// assert!(hive.delete_key(r"HKLM\A")?);
    /// assert!(!hive.key_exists(r"HKLM\A\B"));
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn delete_key(&mut self, path: &str) -> Result<bool, RegistryError> {
        let p = normalize_key(path)?;
        ensure(!is_root(&p), || {
            RegistryError::bad_key_path(path, "a root key cannot be deleted")
        })?;
        let folded = fold(&p);
        let existed = self.keys.remove(&folded).is_some();
        let prefix = format!("{folded}\\");
        let doomed: Vec<String> = self
            .keys
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        let removed = existed || !doomed.is_empty();
        for k in doomed {
            self.keys.remove(&k);
        }
        if removed {
            self.record(|| Change::DeleteKey { key: p });
        }
        Ok(existed)
    }

    /// The key's values in creation order, or `None` if the key does not exist.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Hive, Value};
    /// let mut hive = Hive::new();
    /// hive.set_value(r"HKLM\K", "B", Value::Dword(2))?;
    /// hive.set_value(r"HKLM\K", "A", Value::Dword(1))?;
    /// let names: Vec<&str> = hive.values(r"HKLM\K")?.unwrap().iter().map(|(n, _)| n.as_str()).collect();
    /// assert_eq!(names, ["B", "A"]);
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn values(&self, path: &str) -> Result<Option<&[(String, Value)]>, RegistryError> {
        let p = normalize_key(path)?;
        if is_root(&p) {
            return Ok(Some(&[]));
        }
        Ok(self.keys.get(&fold(&p)).map(|k| k.values.as_slice()))
    }

    /// One value, or `None` if the key or the value does not exist.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Hive, Value};
    /// let hive = Hive::new();
    /// assert_eq!(hive.value(r"HKLM\Nope", "x")?, None);
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn value(&self, path: &str, name: &str) -> Result<Option<&Value>, RegistryError> {
        Ok(self.values(path)?.and_then(|vals| {
            vals.iter()
                .find(|(n, _)| same_name(n, name))
                .map(|(_, v)| v)
        }))
    }

    /// Sets a value, creating the key if needed. An existing value keeps its place and the
    /// spelling of its name.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Hive, Value};
    /// let mut hive = Hive::new();
    /// hive.set_value(r"HKLM\K", "Name", Value::Sz("a".into()))?;
    /// hive.set_value(r"HKLM\K", "NAME", Value::Sz("b".into()))?;
    /// assert_eq!(hive.values(r"HKLM\K")?.unwrap(), &[("Name".to_string(), Value::Sz("b".into()))]);
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn set_value(&mut self, path: &str, name: &str, value: Value) -> Result<(), RegistryError> {
        let p = normalize_key(path)?;
        ensure(!is_root(&p), || {
            RegistryError::bad_key_path(path, "values cannot be stored in a root key")
        })?;
        let created = self.create_normalized(&p);
        let tracking = self.changes.is_some();
        let key = self
            .keys
            .get_mut(&fold(&p))
            .ok_or_else(|| RegistryError::KeyNotFound(p.clone()))?;
        let change = match key.values.iter_mut().find(|(n, _)| same_name(n, name)) {
            Some((_, slot)) if *slot == value => None,
            Some((stored, slot)) => {
                let change = match (&*slot, &value) {
                    (Value::MultiSz(old), Value::MultiSz(new)) if tracking => {
                        Change::splice_between(&p, stored, old, new)
                    }
                    _ => tracking.then(|| Change::SetValue {
                        key: p.clone(),
                        name: stored.clone(),
                        value: value.clone(),
                    }),
                };
                *slot = value;
                change
            }
            None => {
                let change = tracking.then(|| Change::SetValue {
                    key: p.clone(),
                    name: name.to_owned(),
                    value: value.clone(),
                });
                key.values.push((name.to_owned(), value));
                change
            }
        };
        match change {
            Some(change) => self.record(|| change),
            // A key made for a value that was then not changed: only the key is new.
            None if created => self.record(|| Change::CreateKey { key: p }),
            None => {}
        }
        Ok(())
    }

    /// Replaces the entries `at..at + remove` of the REG_MULTI_SZ value `name` with `insert`:
    /// an edit of a long list (Perflib's `Counter` and `Help` tables) that touches only the
    /// entries it changes.
    ///
    /// # Errors
    ///
    /// [`RegistryError::ValueNotFound`] if the value does not exist,
    /// [`RegistryError::WrongType`] if it is not a REG_MULTI_SZ, [`RegistryError::BadSplice`]
    /// if it has fewer than `at + remove` entries.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Hive, Value};
    /// let mut hive = Hive::new();
    /// hive.set_value(r"HKLM\K", "List", Value::MultiSz(vec!["a".into(), "d".into()]))?;
    /// hive.splice_multi_sz(r"HKLM\K", "list", 1, 0, ["b".to_string(), "c".to_string()])?;
    /// assert_eq!(hive.value(r"HKLM\K", "List")?.and_then(Value::as_multi_sz).unwrap(), ["a", "b", "c", "d"]);
    /// assert!(hive.splice_multi_sz(r"HKLM\K", "List", 3, 2, []).is_err());
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn splice_multi_sz(
        &mut self,
        path: &str,
        name: &str,
        at: usize,
        remove: usize,
        insert: impl IntoIterator<Item = String>,
    ) -> Result<(), RegistryError> {
        let p = normalize_key(path)?;
        let not_found = || RegistryError::ValueNotFound {
            key: p.clone(),
            name: name.to_owned(),
        };
        let key = self.keys.get_mut(&fold(&p)).ok_or_else(not_found)?;
        let (stored, value) = key
            .values
            .iter_mut()
            .find(|(n, _)| same_name(n, name))
            .ok_or_else(not_found)?;
        let Value::MultiSz(entries) = value else {
            return Err(wrong_type(&p, stored, ValueType::MultiSz, value));
        };
        let len = entries.len();
        if at.checked_add(remove).is_none_or(|end| end > len) {
            return Err(RegistryError::BadSplice {
                key: p,
                name: stored.clone(),
                at,
                remove,
                len,
            });
        }
        let stored = stored.clone();
        let tracking = self.changes.is_some();
        entries.splice(at..at + remove, insert).for_each(drop);
        let inserted = entries.len() + remove - len;
        if tracking && (remove > 0 || inserted > 0) {
            let insert = entries[at..at + inserted].to_vec();
            self.record(|| Change::Splice {
                key: p,
                name: stored,
                at,
                remove,
                insert,
            });
        }
        Ok(())
    }

    /// Deletes a value. Returns whether it existed.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Hive, Value};
    /// let mut hive = Hive::new();
    /// hive.set_value(r"HKLM\K", "x", Value::Dword(1))?;
    /// assert!(hive.delete_value(r"HKLM\K", "X")?);
    /// assert!(!hive.delete_value(r"HKLM\K", "X")?);
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn delete_value(&mut self, path: &str, name: &str) -> Result<bool, RegistryError> {
        let p = normalize_key(path)?;
        let Some(key) = self.keys.get_mut(&fold(&p)) else {
            return Ok(false);
        };
        let Some(at) = key.values.iter().position(|(n, _)| same_name(n, name)) else {
            return Ok(false);
        };
        let (stored, _) = key.values.remove(at);
        self.record(|| Change::DeleteValue {
            key: p,
            name: stored,
        });
        Ok(true)
    }

    /// The key's direct subkeys as full normalised paths, sorted case-insensitively.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut hive = prfdata_registry::Hive::new();
    /// hive.create_key(r"HKLM\S\b\deep")?;
    /// hive.create_key(r"HKLM\S\A")?;
    /// assert_eq!(hive.subkeys(r"HKLM\S")?, vec![r"HKLM\S\A".to_string(), r"HKLM\S\b".to_string()]);
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn subkeys(&self, path: &str) -> Result<Vec<String>, RegistryError> {
        let p = normalize_key(path)?;
        let prefix = format!("{}\\", fold(&p));
        Ok(self
            .keys
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(k, _)| !k[prefix.len()..].contains('\\'))
            .map(|(_, key)| key.path.clone())
            .collect())
    }

    /// The key's path as it was first created (its stored spelling), if it exists.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut hive = prfdata_registry::Hive::new();
    /// hive.create_key(r"HKLM\Software")?;
    /// assert_eq!(hive.key_path(r"hklm\SOFTWARE").as_deref(), Some(r"HKLM\Software"));
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn key_path(&self, path: &str) -> Option<String> {
        let p = normalize_key(path).ok()?;
        if is_root(&p) {
            return Some(p);
        }
        self.keys.get(&fold(&p)).map(|k| k.path.clone())
    }

    /// Every key (not the roots) with its values, in path order: what a backend stores.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut hive = prfdata_registry::Hive::new();
    /// hive.create_key(r"HKLM\A\B")?;
    /// let paths: Vec<&str> = hive.keys().map(|(p, _)| p).collect();
    /// assert_eq!(paths, [r"HKLM\A", r"HKLM\A\B"]);
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn keys(&self) -> impl Iterator<Item = (&str, &[(String, Value)])> {
        self.keys
            .values()
            .map(|k| (k.path.as_str(), k.values.as_slice()))
    }

    /// Whether the key has neither values nor subkeys (`false` if it does not exist).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut hive = prfdata_registry::Hive::new();
    /// hive.create_key(r"HKLM\A\B")?;
    /// assert!(!hive.is_empty_key(r"HKLM\A"));
    /// assert!(hive.is_empty_key(r"HKLM\A\B"));
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn is_empty_key(&self, path: &str) -> bool {
        match (self.values(path), self.subkeys(path)) {
            (Ok(Some(v)), Ok(s)) => v.is_empty() && s.is_empty() && self.key_exists(path),
            _ => false,
        }
    }
}

impl Hive {
    /// Makes `change` to this tree (replaying a journal).
    ///
    /// # Errors
    ///
    /// What the [`Hive`] method that made the change returns: a key path that is not valid, a
    /// value in a root key, or a splice of a value that is absent, of another type or shorter
    /// than the splice.
    pub(crate) fn apply(&mut self, change: &Change) -> Result<(), RegistryError> {
        let hive = self;
        match change {
            Change::CreateKey { key } => hive.create_key(key),
            Change::DeleteKey { key } => hive.delete_key(key).map(drop),
            Change::SetValue { key, name, value } => hive.set_value(key, name, value.clone()),
            Change::DeleteValue { key, name } => hive.delete_value(key, name).map(drop),
            Change::Splice {
                key,
                name,
                at,
                remove,
                insert,
            } => hive.splice_multi_sz(key, name, *at, *remove, insert.iter().cloned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subkeys_do_not_include_siblings_with_a_common_prefix() {
        let mut h = Hive::new();
        h.create_key(r"HKLM\A\B").unwrap();
        h.create_key(r"HKLM\AB").unwrap();
        assert_eq!(h.subkeys(r"HKLM\A").unwrap(), vec![r"HKLM\A\B".to_string()]);
        assert!(h.delete_key(r"HKLM\A").unwrap());
        assert!(h.key_exists(r"HKLM\AB"));
    }

    proptest::proptest! {
        /// Names compare as their folded forms do.
        #[test]
        fn same_name_is_fold_equality(a in "[aAäÄİiß ]{0,4}", b in "[aAäÄİiß ]{0,4}") {
            proptest::prop_assert_eq!(same_name(&a, &b), fold(&a) == fold(&b));
            proptest::prop_assert!(same_name(&a, &a.to_uppercase()) == (fold(&a) == fold(&a.to_uppercase())));
        }

        /// The ASCII way of folding gives what folding `char` by `char` gives.
        #[test]
        fn ascii_fold_is_char_fold(a in "[ -~]{0,12}") {
            let by_char: String = a.chars().flat_map(char::to_lowercase).collect();
            proptest::prop_assert_eq!(fold(&a), by_char);
        }
    }

    #[test]
    fn root_keys_always_exist_and_cannot_be_deleted() {
        let mut h = Hive::new();
        assert!(h.key_exists("HKEY_LOCAL_MACHINE"));
        assert!(h.delete_key("HKLM").is_err());
        assert!(h.set_value("HKLM", "x", Value::Dword(1)).is_err());
    }

    #[test]
    fn create_key_keeps_existing_spelling() {
        let mut h = Hive::new();
        h.create_key(r"HKLM\Software\X").unwrap();
        h.create_key(r"HKLM\SOFTWARE\Y").unwrap();
        assert_eq!(
            h.subkeys(r"HKLM\software").unwrap(),
            vec![
                r"HKLM\Software\X".to_string(),
                r"HKLM\Software\Y".to_string()
            ]
        );
        assert_eq!(
            h.key_path(r"HKLM\SOFTWARE").as_deref(),
            Some(r"HKLM\Software")
        );
    }
}

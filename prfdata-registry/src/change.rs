//! [`Change`]: one edit of a [`Hive`](crate::Hive), as a tracked hive records it and as the journal of
//! [`FileRegistry`](crate::FileRegistry) stores it.
//!
//! An update's changes, replayed in order on the tree the update started from, make the tree it
//! ended with: each change is applied through the same [`Hive`](crate::Hive) method that made it, so a
//! replay follows the same rules (ancestors created, names matched case-insensitively, the
//! first spelling kept). A REG_MULTI_SZ value edited in place is recorded as a
//! [`Change::Splice`] of the entries that differ, so appending two names to Perflib's
//! 2,000-entry `Counter` table records two entries, not 2,002.

use super::value::Value;

/// One edit of a key tree. Key paths are normalised (`HKLM\...`), as the edit gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// [`Hive::create_key`](crate::Hive::create_key): the key and its missing ancestors.
    CreateKey {
        /// The key.
        key: String,
    },
    /// [`Hive::delete_key`](crate::Hive::delete_key): the key and its subkeys.
    DeleteKey {
        /// The key.
        key: String,
    },
    /// [`Hive::set_value`](crate::Hive::set_value): the value, its key created if missing.
    SetValue {
        /// The key.
        key: String,
        /// The value's name.
        name: String,
        /// Its new data.
        value: Value,
    },
    /// [`Hive::delete_value`](crate::Hive::delete_value).
    DeleteValue {
        /// The key.
        key: String,
        /// The value's name.
        name: String,
    },
    /// [`Hive::splice_multi_sz`](crate::Hive::splice_multi_sz): entries `at..at + remove` of a REG_MULTI_SZ value replaced
    /// with `insert`.
    Splice {
        /// The key.
        key: String,
        /// The value's name.
        name: String,
        /// The first entry replaced.
        at: usize,
        /// How many entries are replaced.
        remove: usize,
        /// The entries put in their place.
        insert: Vec<String>,
    },
}

impl Change {
    /// The change that turns the REG_MULTI_SZ entries `old` into `new`: the entries between
    /// their common beginning and their common end. `None` if they are equal.
    pub(crate) fn splice_between(
        key: &str,
        name: &str,
        old: &[String],
        new: &[String],
    ) -> Option<Change> {
        let same_start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let (old_rest, new_rest) = (&old[same_start..], &new[same_start..]);
        let same_end = old_rest
            .iter()
            .rev()
            .zip(new_rest.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let remove = old_rest.len() - same_end;
        let insert = &new_rest[..new_rest.len() - same_end];
        if remove == 0 && insert.is_empty() {
            return None;
        }
        Some(Change::Splice {
            key: key.to_owned(),
            name: name.to_owned(),
            at: same_start,
            remove,
            insert: insert.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hive;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_splice_holds_only_what_differs() {
        let old = strings(&["1848", "A", "1850", "B"]);
        let new = strings(&["1848", "A", "1850", "B", "1852", "C"]);
        assert_eq!(
            Change::splice_between("HKLM\\K", "Counter", &old, &new),
            Some(Change::Splice {
                key: "HKLM\\K".into(),
                name: "Counter".into(),
                at: 4,
                remove: 0,
                insert: strings(&["1852", "C"]),
            })
        );
        assert_eq!(Change::splice_between("HKLM\\K", "C", &old, &old), None);
        let shorter = strings(&["1848", "A"]);
        assert!(matches!(
            Change::splice_between("HKLM\\K", "C", &old, &shorter),
            Some(Change::Splice { at: 2, remove: 2, ref insert, .. }) if insert.is_empty()
        ));
    }

    #[test]
    fn replaying_the_changes_of_an_edit_makes_the_same_tree() {
        let mut start = Hive::new();
        start
            .set_value("HKLM\\A", "List", Value::MultiSz(strings(&["x", "y"])))
            .unwrap();
        start.create_key("HKLM\\Gone\\Deep").unwrap();
        let mut edited = start.clone();
        edited.track();
        edited
            .set_value("hklm\\a", "LIST", Value::MultiSz(strings(&["x", "z", "y"])))
            .unwrap();
        edited
            .set_value("HKLM\\B\\C", "n", Value::Dword(1))
            .unwrap();
        edited.delete_key("HKLM\\Gone").unwrap();
        edited.create_key("HKLM\\New").unwrap();
        edited.delete_value("HKLM\\B\\C", "n").unwrap();
        let changes = edited.take_changes();
        assert_eq!(changes.len(), 5, "{changes:?}");
        assert!(matches!(
            &changes[0],
            Change::Splice {
                at: 1,
                remove: 0,
                ..
            }
        ));
        let mut replayed = start.clone();
        for c in &changes {
            replayed.apply(c).unwrap();
        }
        assert_eq!(replayed, edited);
    }

    #[test]
    fn edits_that_change_nothing_record_nothing() {
        let mut hive = Hive::new();
        hive.set_value("HKLM\\A", "n", Value::Dword(1)).unwrap();
        hive.create_key("HKLM\\B").unwrap();
        hive.track();
        hive.set_value("HKLM\\A", "N", Value::Dword(1)).unwrap();
        hive.create_key("hklm\\b").unwrap();
        assert!(!hive.delete_value("HKLM\\A", "other").unwrap());
        assert!(!hive.delete_key("HKLM\\Nope").unwrap());
        assert!(hive.take_changes().is_empty());
    }
}

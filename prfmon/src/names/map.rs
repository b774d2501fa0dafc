//! [`NameMap`]: index → text, in one string.

use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Index → text, in ascending index order, compact. A machine's `Counter` or `Help` table has
/// tens of thousands of entries, and a remote's may be made to have millions: one string per
/// entry in a tree costs about 60 bytes beyond its text, so the texts live in one string, one
/// after another in index order, and each entry is two numbers.
///
/// ```text
/// entries:  (index 2, end 4) (index 4, end 4) (index 6, end 9)
/// text:     "Jobs" "" "Queue"  →  "JobsQueue"
/// ```
///
/// Decoded from JSON (`{"2":"Jobs","4":"","6":"Queue"}`, what a remote `prfmon serve` sends)
/// as it is read, one entry at a time: the indexes must come in ascending order, each once,
/// so that decoding costs the texts plus 8 bytes per entry, less than the JSON it came from.
///
/// # Examples
///
/// ```
/// use prfmon::names::NameMap;
/// let mut map = NameMap::default();
/// map.insert(4, "Queue".into());
/// map.insert(2, "Jobs".into());
/// assert_eq!(map.get(2), Some("Jobs"));
/// assert_eq!(map.iter().collect::<Vec<_>>(), [(2, "Jobs"), (4, "Queue")]);
/// let back: NameMap = serde_json::from_str(r#"{"2":"Jobs","4":"Queue"}"#)?;
/// assert_eq!(back, map);
/// assert!(serde_json::from_str::<NameMap>(r#"{"4":"Queue","2":"Jobs"}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    /// Every text, in index order, one after another.
    text: String,
    /// In ascending index order, each index once.
    entries: Vec<Entry>,
}

/// One entry: its text is `text[previous entry's end..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    index: u32,
    end: u32,
}

impl NameMap {
    /// The number of entries.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfmon::names::NameMap::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(prfmon::names::NameMap::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The text of `index`, if there is one.
    pub fn get(&self, index: u32) -> Option<&str> {
        let at = self
            .entries
            .binary_search_by_key(&index, |e| e.index)
            .ok()?;
        self.text.get(self.start(at)..self.entries[at].end as usize)
    }

    /// Every entry, in ascending index order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str)> + '_ {
        self.entries.iter().scan(0, move |start, e| {
            let text = self.text.get(*start..e.end as usize).unwrap_or("");
            *start = e.end as usize;
            Some((e.index, text))
        })
    }

    /// Sets the text of `index`, replacing the one it had. Appending (an index above every
    /// other) is cheap; anything else moves the texts after it.
    ///
    /// # Panics
    ///
    /// If the texts together would exceed 4 GiB (a registry's are at most 16 MiB; a remote's
    /// are decoded, which reports that as an error).
    pub fn insert(&mut self, index: u32, text: String) {
        let at = self.entries.partition_point(|e| e.index < index);
        let start = self.start(at);
        let replaces = self.entries.get(at).is_some_and(|e| e.index == index);
        let old_end = if replaces {
            self.entries[at].end as usize
        } else {
            start
        };
        let total = self.text.len() - (old_end - start) + text.len();
        let Ok(_) = u32::try_from(total) else {
            panic!("a name map's texts would be {total} bytes, over 4 GiB");
        };
        self.text.replace_range(start..old_end, &text);
        let new_end = start + text.len();
        let first_after = if replaces { at + 1 } else { at };
        for e in &mut self.entries[first_after..] {
            // Within `total`, which fits a u32.
            e.end = (e.end as usize - old_end + new_end) as u32;
        }
        let entry = Entry {
            index,
            end: new_end as u32,
        };
        if replaces {
            self.entries[at] = entry;
        } else {
            self.entries.insert(at, entry);
        }
    }

    /// Where the text of entry `at` starts.
    fn start(&self, at: usize) -> usize {
        at.checked_sub(1)
            .and_then(|before| self.entries.get(before))
            .map_or(0, |e| e.end as usize)
    }
}

impl fmt::Debug for NameMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Extend<(u32, String)> for NameMap {
    fn extend<I: IntoIterator<Item = (u32, String)>>(&mut self, entries: I) {
        for (index, text) in entries {
            self.insert(index, text);
        }
    }
}

impl FromIterator<(u32, String)> for NameMap {
    fn from_iter<I: IntoIterator<Item = (u32, String)>>(entries: I) -> Self {
        let mut map = Self::default();
        map.extend(entries);
        map
    }
}

impl Serialize for NameMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for NameMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MapVisitor)
    }
}

/// Decodes a map entry by entry into one [`NameMap`], refusing an index out of order or
/// repeated at once (a map that checked at the end would have held the repeats first).
struct MapVisitor;

impl<'de> Visitor<'de> for MapVisitor {
    type Value = NameMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from index to text, in ascending index order")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<NameMap, A::Error> {
        let mut map = NameMap::default();
        while let Some(index) = access.next_key_seed(IndexSeed)? {
            if let Some(last) = map.entries.last() {
                if index <= last.index {
                    return Err(A::Error::custom(format_args!(
                        "index {index} after index {}: the indexes must come in ascending \
                         order, each once",
                        last.index
                    )));
                }
            }
            access.next_value_seed(TextSeed(&mut map.text))?;
            let end = u32::try_from(map.text.len())
                .map_err(|_| A::Error::custom("the texts together are over 4 GiB"))?;
            map.entries.push(Entry { index, end });
        }
        map.text.shrink_to_fit();
        map.entries.shrink_to_fit();
        Ok(map)
    }
}

/// A map key: an index, written as a decimal string.
struct IndexSeed;

impl<'de> DeserializeSeed<'de> for IndexSeed {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u32, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for IndexSeed {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an index from 0 to {}", u32::MAX)
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<u32, E> {
        key.parse().map_err(|_| {
            // A hostile key may be long: the message shows its start.
            let shown: String = key.chars().take(24).collect();
            let more = if shown.len() < key.len() { "..." } else { "" };
            E::custom(format_args!(
                "index \"{shown}{more}\" is not a number from 0 to {}",
                u32::MAX
            ))
        })
    }

    fn visit_u64<E: serde::de::Error>(self, key: u64) -> Result<u32, E> {
        u32::try_from(key).map_err(|_| {
            E::custom(format_args!(
                "index {key} is not a number from 0 to {}",
                u32::MAX
            ))
        })
    }
}

/// A map value: a text, appended to the map's string (no string of its own).
struct TextSeed<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for TextSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for TextSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a text")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<(), E> {
        self.0.push_str(text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(json: &str) -> Result<NameMap, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn inserting_anywhere_keeps_the_texts_in_index_order() {
        let mut map = NameMap::default();
        map.insert(6, "six".into());
        map.insert(2, "two".into());
        map.insert(4, "".into());
        map.insert(2, "TWO!".into());
        map.insert(8, "eight".into());
        assert_eq!(
            map.iter().collect::<Vec<_>>(),
            [(2, "TWO!"), (4, ""), (6, "six"), (8, "eight")]
        );
        assert_eq!((map.get(6), map.get(5)), (Some("six"), None));
        let same: NameMap = [(8, "eight"), (6, "six"), (4, ""), (2, "TWO!")]
            .map(|(i, t)| (i, t.to_owned()))
            .into_iter()
            .collect();
        assert_eq!(same, map);
    }

    #[test]
    fn json_round_trips_with_escapes() {
        let mut map = NameMap::default();
        map.insert(1, "a \"q\"\n\u{e9}".into());
        map.insert(4_294_967_295, String::new());
        let json = serde_json::to_string(&map).unwrap();
        assert_eq!(json, r#"{"1":"a \"q\"\né","4294967295":""}"#);
        assert_eq!(decode(&json), Ok(map));
    }

    #[test]
    fn repeated_unordered_and_out_of_range_indexes_are_refused() {
        let err = decode(r#"{"2":"a","2":"b"}"#).unwrap_err();
        assert!(err.contains("index 2 after index 2"), "{err}");
        let err = decode(r#"{"4":"a","2":"b"}"#).unwrap_err();
        assert!(err.contains("ascending"), "{err}");
        let err = decode(r#"{"4294967296":"a"}"#).unwrap_err();
        assert!(err.contains("\"4294967296\" is not a number"), "{err}");
        let long = format!(r#"{{"{}":"a"}}"#, "x".repeat(1000));
        let err = decode(&long).unwrap_err();
        assert!(err.len() < 200 && err.contains("xxx..."), "{err}");
        assert!(decode(r#"{"2":7}"#).is_err());
    }
}

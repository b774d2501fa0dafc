//! Instances that share a name, told apart without a string per instance: the `#n` PDH gives
//! the second and later of them ([`numbers`]), and finding an instance by its name
//! ([`NameIndex`]).
//!
//! An object may hold a million instances. Each instance's key (its name as PDH compares it)
//! is built in one reused buffer and hashed with a randomly keyed SipHash
//! ([`std::hash::RandomState`]); what is kept is one 8-byte word per instance (the hash's
//! high half and the position), sorted, so instances with the same hash sit together in
//! order of position. Within such a run the keys themselves are compared, built again: a
//! hash collision costs a comparison, never a wrong answer.
//!
//! ```text
//! key(i) ──SipHash──▶ hash(i) ──▶ [hash(i)₆₃..₃₂ | i] ──sort──▶ runs of one hash, by position
//! ```

use std::hash::{BuildHasher, RandomState};

/// The low half of a sorted word: the position.
const POSITION: u64 = 0xFFFF_FFFF;

/// The words of [`numbers`] and [`NameIndex`]: each position's key's hash (high half) with the
/// position (low half), sorted. Positions must fit in 32 bits (a PERF_DATA_BLOCK of at most
/// 4 GiB holds fewer instances, 28 bytes each at least).
fn sorted_words(
    state: &RandomState,
    count: usize,
    key: &mut impl FnMut(usize, &mut String),
) -> Vec<u64> {
    let mut buffer = String::new();
    let mut words: Vec<u64> = (0..count)
        .map(|i| {
            buffer.clear();
            key(i, &mut buffer);
            (state.hash_one(buffer.as_str()) & !POSITION) | (i as u64 & POSITION)
        })
        .collect();
    words.sort_unstable();
    words
}

/// For each of `count` positions, how many earlier positions have the same key: 0 for the
/// first of a name, 1 for the next (PDH's `#1`), and so on. `key(i, out)` appends position
/// `i`'s key to `out`.
///
/// Costs 12 bytes a position while it runs, 4 after (the result).
///
/// # Examples
///
/// ```
/// let names = ["svchost", "init", "svchost", "svchost"];
/// let numbers = prfmon::namesakes::numbers(names.len(), |i, out| out.push_str(names[i]));
/// assert_eq!(numbers, [0, 0, 1, 2]);
/// ```
pub fn numbers(count: usize, mut key: impl FnMut(usize, &mut String)) -> Vec<u32> {
    let words = sorted_words(&RandomState::new(), count, &mut key);
    let mut numbers = vec![0u32; count];
    let mut buffer = String::new();
    // The distinct keys of one run, with how many of each were seen.
    let mut seen: Vec<(String, u32)> = Vec::new();
    for run in words.chunk_by(|a, b| a & !POSITION == b & !POSITION) {
        if run.len() == 1 {
            continue;
        }
        seen.clear();
        for word in run {
            let i = (word & POSITION) as usize;
            buffer.clear();
            key(i, &mut buffer);
            match seen.iter_mut().find(|(k, _)| *k == buffer) {
                Some((_, n)) => {
                    numbers[i] = *n;
                    *n += 1;
                }
                None => seen.push((buffer.clone(), 1)),
            }
        }
    }
    numbers
}

/// Positions found by key: built once over `count` keys, then [`NameIndex::find`] is a
/// binary search and one key comparison per position of the same hash. 8 bytes a position.
///
/// # Examples
///
/// ```
/// use prfmon::namesakes::NameIndex;
/// let names = ["b", "a", "b"];
/// let mut key = |i: usize, out: &mut String| out.push_str(names[i]);
/// let index = NameIndex::new(names.len(), &mut key);
/// assert_eq!(index.find("b", &mut key), Some(0));
/// assert_eq!(index.find("a", &mut key), Some(1));
/// assert_eq!(index.find("c", &mut key), None);
/// ```
#[derive(Debug, Clone)]
pub struct NameIndex {
    state: RandomState,
    words: Vec<u64>,
}

impl NameIndex {
    /// The index of `count` positions, position `i`'s key being what `key(i, out)` appends.
    pub fn new(count: usize, key: &mut impl FnMut(usize, &mut String)) -> Self {
        let state = RandomState::new();
        let words = sorted_words(&state, count, key);
        NameIndex { state, words }
    }

    /// The first position whose key is `wanted` (`key` as given to [`NameIndex::new`]).
    pub fn find(&self, wanted: &str, key: &mut impl FnMut(usize, &mut String)) -> Option<usize> {
        let hash = self.state.hash_one(wanted) & !POSITION;
        let start = self.words.partition_point(|w| w & !POSITION < hash);
        let mut buffer = String::new();
        self.words[start..]
            .iter()
            .take_while(|w| *w & !POSITION == hash)
            .map(|w| (w & POSITION) as usize)
            .find(|&i| {
                buffer.clear();
                key(i, &mut buffer);
                buffer == wanted
            })
    }

    /// Whether no position was indexed.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = prfmon::namesakes::NameIndex::new(0, &mut |_, _: &mut String| {});
    /// assert!(index.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain way, with a map of strings.
    fn numbers_by_map(names: &[String]) -> Vec<u32> {
        let mut seen = std::collections::HashMap::new();
        names
            .iter()
            .map(|n| {
                let c = seen.entry(n.clone()).or_insert(0u32);
                *c += 1;
                *c - 1
            })
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn numbers_agree_with_a_map(names in proptest::collection::vec("[ab]{0,3}", 0..60)) {
            let got = numbers(names.len(), |i, out| out.push_str(&names[i]));
            proptest::prop_assert_eq!(got, numbers_by_map(&names));
        }

        #[test]
        fn find_returns_the_first_of_a_name(names in proptest::collection::vec("[abc]{0,2}", 0..40), wanted in "[abc]{0,2}") {
            let mut key = |i: usize, out: &mut String| out.push_str(&names[i]);
            let index = NameIndex::new(names.len(), &mut key);
            proptest::prop_assert_eq!(index.find(&wanted, &mut key), names.iter().position(|n| *n == wanted));
        }
    }

    #[test]
    fn one_name_a_hundred_thousand_times_is_numbered_in_order() {
        let numbers = numbers(100_000, |_, out| out.push_str("worker"));
        assert!(numbers.iter().enumerate().all(|(i, &n)| n as usize == i));
    }
}

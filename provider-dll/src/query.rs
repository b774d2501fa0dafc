//! The Collect query string, by the rule of "How a performance DLL interfaces with a monitor":
//!
//! > The string uses one of the following case-sensitive formats to identify the type of data
//! > being requested: `Global` [...] `index1 index2 ...` [...] whitespace-separated Unicode
//! > strings representing the decimal value of an object's Counters index [...] `Foreign
//! > ComputerName` [...] `Foreign ComputerName index1 index2 ...` [...] `Costly`.
//!
//! | query (surrounding whitespace aside)      | [`Query`]                                  |
//! |-------------------------------------------|--------------------------------------------|
//! | empty (or a NULL `lpValueName`)           | `Global`, as perflib treats an empty value name |
//! | exactly `Global`                          | `Global`                                   |
//! | exactly `Costly`                          | `Costly`                                   |
//! | first word exactly `Foreign`              | `Foreign` (not supported: no data)         |
//! | anything else, every word a decimal `u32` | `Items` (digits only: no sign, no `0x`)    |
//! | anything else                             | `Malformed`: no data, logged once          |
//!
//! So `global`, `COSTLY` or `Global 1848` are not keywords: they are index lists, and
//! malformed ones. "No data" is the document's: `*lpNumObjectTypes` = 0, `*lpcbTotalBytes` = 0,
//! the pointer unchanged, ERROR_SUCCESS ("Return this value in all other cases, even if no data
//! is returned or an error occurs"), and the error goes to the log without flooding it: each
//! malformed query is logged once ([`log_malformed_once`]).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// What a Collect call asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// Every object except the costly ones.
    Global,
    /// Only the costly objects.
    Costly,
    /// Data of another computer: not supported, so no data.
    Foreign,
    /// The objects with these name indexes.
    Items(Vec<u32>),
    /// None of the keywords and not an index list: no data.
    Malformed,
}

impl Query {
    /// Parses a query by the rule in the [module docs](self).
    pub fn parse(text: &str) -> Query {
        let text = text.trim();
        match text {
            "" | "Global" => return Query::Global,
            "Costly" => return Query::Costly,
            _ => {}
        }
        let mut words = text.split_whitespace().peekable();
        if words.peek() == Some(&"Foreign") {
            return Query::Foreign;
        }
        let mut items = Vec::new();
        for word in words {
            // `u32::from_str` takes a leading `+`: the rule is digits only.
            if !word.bytes().all(|b| b.is_ascii_digit()) {
                return Query::Malformed;
            }
            match word.parse() {
                Ok(index) => items.push(index),
                Err(_) => return Query::Malformed,
            }
        }
        Query::Items(items)
    }

    /// Whether an object with this name index and costliness is asked for.
    pub fn wants(&self, name_index: u32, costly: bool) -> bool {
        match self {
            Query::Global => !costly,
            Query::Costly => costly,
            Query::Foreign | Query::Malformed => false,
            Query::Items(list) => list.contains(&name_index),
        }
    }

    /// Whether nothing can be asked of this library: then Collect returns no data at once.
    pub fn is_none(&self) -> bool {
        matches!(self, Query::Foreign | Query::Malformed)
    }
}

/// The most distinct malformed queries remembered (and so logged); past them, further ones are
/// logged at debug level only, so that a monitor sending ever new garbage cannot grow the
/// library's memory or flood the log.
pub const MAX_LOGGED_QUERIES: usize = 64;

/// Logs `text`, a malformed query, once per distinct text (up to [`MAX_LOGGED_QUERIES`]).
pub fn log_malformed_once(text: &str) {
    static LOGGED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut logged = LOGGED.lock().unwrap_or_else(PoisonError::into_inner);
    let logged = logged.get_or_insert_with(HashSet::new);
    if logged.contains(text) {
        return;
    }
    if logged.len() >= MAX_LOGGED_QUERIES {
        log::debug!("Collect: malformed query {text:?}: no data");
        return;
    }
    logged.insert(text.to_owned());
    log::warn!(
        "Collect: query {text:?} is neither Global, Costly nor Foreign (case-sensitive) nor a \
         list of decimal object indexes: no data (logged once)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_of_the_document() {
        assert_eq!(Query::parse("Global"), Query::Global);
        assert_eq!(Query::parse(" Global\t"), Query::Global);
        assert_eq!(Query::parse(""), Query::Global);
        assert_eq!(Query::parse("Costly"), Query::Costly);
        assert_eq!(Query::parse("Foreign host 2 4"), Query::Foreign);
        assert_eq!(
            Query::parse(" 1848\t1850 007 "),
            Query::Items(vec![1848, 1850, 7])
        );
    }

    #[test]
    fn keywords_are_case_sensitive_and_lists_are_decimal() {
        for q in [
            "gLoBaL",
            "global",
            "COSTLY",
            "foreign x",
            "Global 1848",
            "1848 x",
            "+1848",
            "-1",
            "4294967296",
            "0x10",
            "18,48",
        ] {
            assert_eq!(Query::parse(q), Query::Malformed, "{q:?}");
        }
        assert_eq!(Query::parse("4294967295"), Query::Items(vec![u32::MAX]));
    }

    #[test]
    fn selection() {
        assert!(Query::Global.wants(1, false) && !Query::Global.wants(1, true));
        assert!(Query::Costly.wants(1, true) && !Query::Costly.wants(1, false));
        assert!(Query::Items(vec![5]).wants(5, true) && !Query::Items(vec![5]).wants(6, false));
        assert!(!Query::Foreign.wants(1, false) && !Query::Malformed.wants(1, false));
        assert!(Query::Malformed.is_none() && Query::Foreign.is_none());
    }
}

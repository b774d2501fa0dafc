//! The Collect query string (seed 004): `Global`, `Costly`, `Foreign ...`, or a list of object
//! name indexes.

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
}

impl Query {
    /// Parses a query, case-insensitively. An empty string asks for `Global`, as in perflib;
    /// tokens of an index list that are not decimal numbers are ignored.
    pub fn parse(text: &str) -> Query {
        let text = text.trim();
        let first = text.split_whitespace().next().unwrap_or("");
        if text.is_empty() || first.eq_ignore_ascii_case("global") {
            Query::Global
        } else if first.eq_ignore_ascii_case("costly") {
            Query::Costly
        } else if first.eq_ignore_ascii_case("foreign") {
            Query::Foreign
        } else {
            Query::Items(
                text.split_whitespace()
                    .filter_map(|t| t.parse().ok())
                    .collect(),
            )
        }
    }

    /// Whether an object with this name index and costliness is asked for.
    pub fn wants(&self, name_index: u32, costly: bool) -> bool {
        match self {
            Query::Global => !costly,
            Query::Costly => costly,
            Query::Foreign => false,
            Query::Items(list) => list.contains(&name_index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_of_the_seed() {
        assert_eq!(Query::parse("Global"), Query::Global);
        assert_eq!(Query::parse("gLoBaL"), Query::Global);
        assert_eq!(Query::parse(""), Query::Global);
        assert_eq!(Query::parse("COSTLY"), Query::Costly);
        assert_eq!(Query::parse("Foreign host 2 4"), Query::Foreign);
        assert_eq!(
            Query::parse(" 1848\t1850 x 7 "),
            Query::Items(vec![1848, 1850, 7])
        );
    }

    #[test]
    fn selection() {
        assert!(Query::Global.wants(1, false) && !Query::Global.wants(1, true));
        assert!(Query::Costly.wants(1, true) && !Query::Costly.wants(1, false));
        assert!(Query::Items(vec![5]).wants(5, true) && !Query::Items(vec![5]).wants(6, false));
        assert!(!Query::Foreign.wants(1, false));
    }
}

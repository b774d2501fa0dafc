//! Which names are near a name that matched nothing: the one ranking used for counter paths
//! (`pdh::path::expand`), object names (`query`, `list`) and service names (`unlodctr`).

/// How many near names [`near`] gives at most.
const MAX_NEAR: usize = 3;

/// The largest edit distance at which a differently spelt name is still near: two edits, or one
/// in four characters for longer names (a dropped word such as "Service" is caught by
/// containment instead).
fn near_distance(name: &str) -> usize {
    (name.chars().count() / 4).max(2)
}

/// The edit distance from a requested name to an available one, and whether the available one is
/// near: within two edits (one in four characters for longer names), or one name containing the other (ignoring case; at least three
/// characters requested).
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::names::nearness("Servce", "Service"), (1, true));
/// assert!(!prfmon::names::nearness("Disk", "Network Interface").1);
/// ```
pub fn nearness(want: &str, have: &str) -> (usize, bool) {
    let d = distance(want, have);
    let (want_folded, have_folded) = (want.to_lowercase(), have.to_lowercase());
    let contains = want_folded.chars().count() >= 3
        && (have_folded.contains(&want_folded) || want_folded.contains(&have_folded));
    (d, d <= near_distance(want) || contains)
}

/// Damerau–Levenshtein distance ignoring case (`strsim`).
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::names::distance("JOBS", "jbos"), 1);
/// ```
pub fn distance(a: &str, b: &str) -> usize {
    strsim::damerau_levenshtein(&a.to_lowercase(), &b.to_lowercase())
}

/// The `candidates` near `word` ([`nearness`]), nearest first (ties in the candidates' order),
/// each once, at most three.
///
/// # Examples
///
/// ```
/// let near = prfmon::names::near("TP Servce", ["Memory", "TP Services", "TP Service"]);
/// assert_eq!(near, ["TP Service", "TP Services"]);
/// assert!(prfmon::names::near("Disk", ["Network Interface"]).is_empty());
/// ```
pub fn near<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut found: Vec<(usize, &str)> = Vec::new();
    for candidate in candidates {
        let (d, is_near) = nearness(word, candidate);
        if is_near && !found.iter().any(|(_, c)| *c == candidate) {
            found.push((d, candidate));
        }
    }
    found.sort_by_key(|(d, _)| *d);
    found
        .into_iter()
        .take(MAX_NEAR)
        .map(|(_, c)| c.to_owned())
        .collect()
}

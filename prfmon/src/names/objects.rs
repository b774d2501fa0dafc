//! Object names as the user types them (`prfmon query "PrfData Demo Service"`, `prfmon list
//! OBJECT`): what a word that names no collected object names instead, said as one sentence.

use prfdata_wire::snapshot::DataSnapshot;

use super::{near, Names};

/// The sentence for `word`, given as an object name to `prfmon COMMAND` but naming no object
/// of the `collected` snapshots (`index`: the name index `word` has, if any): the object it is
/// a counter of and the command for that object, else the object names near it (those of the
/// collection, or every name when nothing was collected).
///
/// # Examples
///
/// ```
/// use prfmon::names::{objects::not_an_object, Names};
/// let mut names = Names::default();
/// names.counter.insert(1848, "TP Service".into());
/// let said = not_an_object("TP Servce", None, &names, &[], "query");
/// assert_eq!(said, r#"no object named "TP Servce"; did you mean "TP Service"?"#);
/// ```
pub fn not_an_object(
    word: &str,
    index: Option<u32>,
    names: &Names,
    collected: &[&DataSnapshot],
    command: &str,
) -> String {
    index
        .and_then(|i| counter_of(word, i, names, collected, command))
        .unwrap_or_else(|| no_object_named(word, names, collected))
}

/// `"WORD" is a counter of object "OBJECT": prfmon COMMAND "OBJECT"`, when name index `index`
/// is a counter of an object of the `collected` snapshots.
pub fn counter_of(
    word: &str,
    index: u32,
    names: &Names,
    collected: &[&DataSnapshot],
    command: &str,
) -> Option<String> {
    let owner = collected
        .iter()
        .flat_map(|s| s.objects.iter())
        .find(|o| o.counters.iter().any(|c| c.name_index == index))?;
    let object = names.name(owner.name_index);
    Some(format!(
        "\"{word}\" is a counter of object \"{object}\": prfmon {command} \"{object}\""
    ))
}

/// `no object named "WORD"`, with the object names of the `collected` snapshots near it (every
/// name when nothing was collected).
fn no_object_named(word: &str, names: &Names, collected: &[&DataSnapshot]) -> String {
    let object_names: Vec<String> = collected
        .iter()
        .flat_map(|s| s.objects.iter())
        .map(|o| names.name(o.name_index))
        .collect();
    let near = if object_names.is_empty() {
        near(word, names.counter.iter().map(|(_, n)| n))
    } else {
        near(word, object_names.iter().map(String::as_str))
    };
    if near.is_empty() {
        format!("no object named \"{word}\" (prfmon list shows the objects)")
    } else {
        let quoted: Vec<String> = near.iter().map(|n| format!("\"{n}\"")).collect();
        format!(
            "no object named \"{word}\"; did you mean {}?",
            quoted.join(" or ")
        )
    }
}

/// The value Collect gets for the words of a query: `Global` and `Costly` (any case) as
/// themselves, a `Foreign ...` query as it is, and otherwise each word one object: a name
/// (spaces and all, `"PrfData Demo Worker"`) or a list of indexes (`1848` or `"1848 1860"`).
///
/// # Errors
///
/// The first word that is neither a known name nor a list of numbers.
///
/// # Examples
///
/// ```
/// use prfmon::names::{objects::query_value, Names};
/// let mut names = Names::default();
/// names.counter.insert(1848, "My Service Job".into());
/// let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// assert_eq!(query_value(&words(&["My Service Job", "1860 1862"]), &names), Ok("1848 1860 1862".into()));
/// assert_eq!(query_value(&words(&["costly"]), &names), Ok("Costly".into()));
/// assert_eq!(query_value(&words(&["My Service"]), &names), Err("My Service".into()));
/// ```
pub fn query_value(words: &[String], names: &Names) -> Result<String, String> {
    let joined = words.join(" ");
    let trimmed = joined.trim();
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("global") {
        return Ok("Global".into());
    }
    if trimmed.eq_ignore_ascii_case("costly") {
        return Ok("Costly".into());
    }
    if trimmed.starts_with("Foreign") {
        return Ok(trimmed.to_owned());
    }
    let mut indexes = Vec::new();
    for word in words.iter().map(|w| w.trim()).filter(|w| !w.is_empty()) {
        let numbers: Option<Vec<u32>> = word.split_whitespace().map(|n| n.parse().ok()).collect();
        match numbers.or_else(|| names.index_of(word).map(|i| vec![i])) {
            Some(found) => indexes.extend(found.iter().map(u32::to_string)),
            None => return Err(word.to_owned()),
        }
    }
    Ok(indexes.join(" "))
}

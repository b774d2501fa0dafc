//! Object names as the user types them (`prfmon query "PrfData Demo Service"`, `prfmon list
//! OBJECT`): what a word that names no collected object names instead, said as one sentence.

use prfdata_wire::snapshot::DataSnapshot;

use super::{near, Names};
use crate::absence::{explain, explain_service, Absence};
use crate::session::Machine;

/// The sentence for `word`, given as an object name to `prfmon COMMAND` but naming no object
/// of the `collected` snapshots (`index`: the name index `word` has, if any): the object it is
/// a counter of ([`counter_of`]), else the object names near it: those of the collection and
/// the objects `machine`'s services list as installed, or every name when there are none.
///
/// # Examples
///
/// ```
/// use prfmon::names::objects::not_an_object;
/// let mut machine = prfmon::session::Machine::default();
/// machine.names.counter.insert(1848, "TP Service".into());
/// let said = not_an_object("TP Servce", None, &machine, &[], "query");
/// assert_eq!(said, r#"no object named "TP Servce"; did you mean "TP Service"?"#);
/// ```
pub fn not_an_object(
    word: &str,
    index: Option<u32>,
    machine: &Machine,
    collected: &[&DataSnapshot],
    command: &str,
) -> String {
    index
        .and_then(|i| counter_of(word, i, machine, collected, command))
        .unwrap_or_else(|| no_object_named(word, machine, collected))
}

/// `"WORD" is a counter of object "OBJECT": prfmon COMMAND "OBJECT"`, when name index `index`
/// is a counter of an object of the `collected` snapshots; else, when it is a counter of an
/// installed service whose objects were not collected, its object (or the service's objects,
/// when it lists several) and why they were not collected.
///
/// # Examples
///
/// ```
/// use prfmon::names::objects::counter_of;
/// let mut machine = prfmon::session::Machine::default();
/// machine.apps = prfmon::lease::AppRanges::from_ranges(vec![("Idle".into(), 1848, 1853)]);
/// machine.objects.insert("Idle".into(), vec![1848]);
/// machine.names.counter.insert(1848, "Idle Jobs".into());
/// let said = counter_of("Done", 1850, &machine, &[], "query").unwrap();
/// assert!(said.starts_with(r#""Done" is a counter of object "Idle Jobs", which is not collected: "#));
/// assert_eq!(counter_of("Idle Jobs", 1848, &machine, &[], "query"), None, "an object");
/// ```
pub fn counter_of(
    word: &str,
    index: u32,
    machine: &Machine,
    collected: &[&DataSnapshot],
    command: &str,
) -> Option<String> {
    let owner = collected
        .iter()
        .flat_map(|s| s.objects.iter())
        .find(|o| o.counters.iter().any(|c| c.name_index == index));
    let Some(owner) = owner else {
        return counter_of_installed(word, index, machine);
    };
    let object = machine.names.name(owner.name_index);
    Some(format!(
        "\"{word}\" is a counter of object \"{object}\": prfmon {command} \"{object}\""
    ))
}

/// The sentence for name index `index` (named `word`), asked for as an object by `prfmon
/// COMMAND` and missing from the `collected` snapshots: the object it is a counter of
/// ([`counter_of`]), else why the object is not collected: `why` when the caller knows it (a
/// remote machine's [`Absence::NotReturned`]), else [`explain`].
///
/// # Examples
///
/// ```
/// use prfmon::names::objects::not_collected;
/// let mut machine = prfmon::session::Machine::default();
/// machine.names.counter.insert(1848, "Jobs".into());
/// let said = not_collected("Jobs", 1848, &machine, &[], "query", None);
/// assert!(said.starts_with(r#"object "Jobs" (1848) is not collected: no installed service"#));
/// ```
pub fn not_collected(
    word: &str,
    index: u32,
    machine: &Machine,
    collected: &[&DataSnapshot],
    command: &str,
    why: Option<Absence>,
) -> String {
    counter_of(word, index, machine, collected, command).unwrap_or_else(|| {
        format!(
            "object \"{}\" ({index}) is not collected: {}",
            machine.names.name(index),
            why.unwrap_or_else(|| explain(machine, index))
        )
    })
}

/// [`counter_of`] for a counter no collection holds: the objects its service lists as
/// installed, when `index` is not one of them, and why the service published nothing.
fn counter_of_installed(word: &str, index: u32, machine: &Machine) -> Option<String> {
    let (service, _) = machine.apps.locate(index)?;
    let objects = machine.objects.get(service)?;
    if objects.is_empty() || objects.contains(&index) {
        return None;
    }
    let quoted: Vec<String> = objects
        .iter()
        .map(|o| format!("\"{}\"", machine.names.name(*o)))
        .collect();
    let owner = match quoted.as_slice() {
        [one] => format!("object {one}"),
        [many @ .., last] => format!("one of the objects {} or {last}", many.join(", ")),
        [] => return None,
    };
    Some(format!(
        "\"{word}\" is a counter of {owner}, which is not collected: {}",
        explain_service(machine, service)
    ))
}

/// `no object named "WORD"`, with the object names near it: those of the `collected` snapshots
/// and of `machine`'s installed objects (every name when there are none).
fn no_object_named(word: &str, machine: &Machine, collected: &[&DataSnapshot]) -> String {
    let names = &machine.names;
    let collected_objects = collected.iter().flat_map(|s| s.objects.iter());
    let indexes = collected_objects
        .map(|o| o.name_index)
        .chain(machine.objects.values().flatten().copied());
    let object_names: Vec<String> = indexes.map(|i| names.name(i)).collect();
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

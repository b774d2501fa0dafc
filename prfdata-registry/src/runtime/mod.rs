//! Names registered at run time: the names and help texts of objects and counters an app adds
//! after activation (the Windows 95 DDK's stat-server interface: "stat servers and statistics may be added and removed at any
//! time"), written as lodctr would write them.
//!
//! An app's run-time names sit above its installed ones: symbolic offsets from
//! `installed_highest + 2` up. Each registration replaces the app's whole run-time set in one
//! atomic update:
//!
//! 1. the previous run-time names (every index of the app's range above `installed_highest`)
//!    are removed from every language;
//! 2. the range is extended or shrunk to the new highest offset: in place when the indexes it
//!    needs are free (the app is the last one loaded, or the range shrinks), else the whole app
//!    moves to a new First Counter after Perflib's `Last Counter` / `Last Help`, as lodctr
//!    assigns ranges (its installed names move with it; a provider reads First Counter again
//!    when the app's run-time block changes);
//! 3. the new names are written, the app's `Last Counter` / `Last Help` and Perflib's updated,
//!    and the run-time map's fingerprint recorded as
//!    [`DYNAMIC_FINGERPRINT`] (deleted with an empty set).
//!
//! In the common case (the range stays where it is: it shrinks, or the indexes it grows into
//! are free) the same result is reached by changing only what changed: in each language's
//! `Counter` and `Help` table, the app's run-time entries are compared with the new names and
//! the entries that differ are spliced in ([`Hive::splice_multi_sz`]). An app that adds one
//! counter to a thousand changes two entries of each table, so the registry update records two
//! entries, not the whole table (see [`FileRegistry`](crate::FileRegistry)'s journal); the
//! comparison reads each table once, without copying it.

mod in_place;

use std::collections::BTreeMap;

use crate::install::CounterNames;
use crate::lodctr::{first_free, overflow, write_table};
use crate::paths::{self, PERFLIB};
use crate::perflib::{self, COUNTER, HELP, LAST_COUNTER, LAST_HELP};
use crate::service::{self, DYNAMIC_FINGERPRINT, FIRST_COUNTER, FIRST_HELP};
use crate::{update, CounterRange, Hive, LodctrError, Registry, RegistryError, Value};

/// Replaces the run-time names of the installed app `app` in `hive` (the body of
/// [`register_runtime_names`]; see the [module docs](self)). `installed_highest` is the highest
/// symbolic offset of its installed map; every entry of `names` must have a higher, even one.
///
/// # Errors
///
/// [`LodctrError::NotLoaded`] if the app is not installed; [`LodctrError::BadRuntimeOffset`]
/// for an offset that is odd or at or below `installed_highest`;
/// [`LodctrError::IndexOverflow`] past `u32::MAX`; [`LodctrError::Registry`] for a registry
/// that cannot be read.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{CounterNames, Text};
/// use prfdata_registry::{apply_runtime_names, perflib, paths, ServiceConfig, service};
/// let mut hive = perflib::new_hive();
/// hive.set_value(&paths::performance("App"), "First Counter", prfdata_registry::Value::Dword(1848))?;
/// hive.set_value(&paths::performance("App"), "Last Counter", prfdata_registry::Value::Dword(1850))?;
/// hive.set_value(&paths::performance("App"), "First Help", prfdata_registry::Value::Dword(1849))?;
/// hive.set_value(&paths::performance("App"), "Last Help", prfdata_registry::Value::Dword(1851))?;
/// let names = [CounterNames { symbol: "DYN".into(), offset: 4, texts: vec![Text::new("009", "Dyn", "d")], factor: None, unit: None }];
/// let range = apply_runtime_names(&mut hive, "App", 2, &names, Some(7))?;
/// assert_eq!((range.first_counter, range.last_counter), (1848, 1852));
/// assert_eq!(perflib::counter_text(&hive, "009")?.counter[&1852], "Dyn");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_runtime_names<'a>(
    hive: &mut Hive,
    app: &str,
    installed_highest: u32,
    names: impl IntoIterator<Item = &'a CounterNames>,
    fingerprint: Option<u64>,
) -> Result<CounterRange, LodctrError> {
    let names: Vec<&CounterNames> = names.into_iter().collect();
    apply_with(
        hive,
        app,
        installed_highest,
        &names,
        fingerprint,
        Path::InPlaceFirst,
    )
}

/// Which way [`apply_with`] changes the tables: the in-place splices when they apply (what
/// [`apply_runtime_names`] does), or always every table rewritten (what the in-place way is
/// checked against).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    InPlaceFirst,
    #[cfg(test)]
    RewriteOnly,
}

/// Where the app's names are now: its First Counter and First Help, and its Last Counter.
#[derive(Debug, Clone, Copy)]
struct Current {
    first_counter: u32,
    last_counter: u32,
    first_help: u32,
}

fn apply_with(
    hive: &mut Hive,
    app: &str,
    installed_highest: u32,
    names: &[&CounterNames],
    fingerprint: Option<u64>,
    path: Path,
) -> Result<CounterRange, LodctrError> {
    let installed = service::read_service(hive, app)?;
    let Some(first_counter) = installed.as_ref().and_then(|s| s.first_counter) else {
        return Err(LodctrError::NotLoaded {
            driver: app.to_owned(),
        });
    };
    let installed = installed.unwrap_or_default();
    let current = Current {
        first_counter,
        last_counter: installed.last_counter.unwrap_or(first_counter),
        first_help: installed
            .first_help
            .unwrap_or(first_counter.saturating_add(1)),
    };
    for n in names {
        if n.offset <= installed_highest || n.offset % 2 != 0 {
            return Err(LodctrError::BadRuntimeOffset {
                driver: app.to_owned(),
                symbol: n.symbol.clone(),
                offset: n.offset,
                installed_highest,
            });
        }
    }
    let highest = names
        .iter()
        .map(|n| n.offset)
        .max()
        .unwrap_or(0)
        .max(installed_highest);
    let in_place = match path {
        Path::InPlaceFirst => {
            in_place::apply(hive, app, current, installed_highest, highest, names)?
        }
        #[cfg(test)]
        Path::RewriteOnly => None,
    };
    let range = match in_place {
        Some(range) => range,
        None => rewrite(hive, app, current, installed_highest, highest, names)?,
    };
    record_range(hive, &range, names, fingerprint)?;
    Ok(range)
}

/// The app's texts kept through a rewrite: (language, offset) -> (name, help).
type Kept = BTreeMap<(String, u32), (Option<String>, Option<String>)>;

/// Rewrites every language's tables: the app's run-time names removed, its range placed (in
/// place if every index it needs is free, else after every other range, its installed names
/// moved with it), and the new names written. Returns the app's new range.
fn rewrite(
    hive: &mut Hive,
    app: &str,
    current: Current,
    installed_highest: u32,
    highest: u32,
    names: &[&CounterNames],
) -> Result<CounterRange, LodctrError> {
    let overflow = || overflow(app);
    let languages = perflib::languages(hive)?;
    let kept = take_texts(hive, &languages, current, installed_highest)?;
    let (first_counter, first_help) = place(hive, app, &languages, current, highest)?;
    let last_counter = first_counter.checked_add(highest).ok_or_else(overflow)?;
    let last_help = first_help.checked_add(highest).ok_or_else(overflow)?;
    // The installed texts (moved, if the range moved) and the run-time ones.
    for lang in &languages_used(&languages, names) {
        let mut counters = perflib::read_text_table(hive, lang, COUNTER)?;
        let mut helps = perflib::read_text_table(hive, lang, HELP)?;
        for ((_, off), (name, help)) in kept.iter().filter(|((l, _), _)| l == lang) {
            if let Some(name) = name {
                counters.insert(first_counter + off, name.clone());
            }
            if let Some(help) = help {
                helps.insert(first_help + off, help.clone());
            }
        }
        for n in names {
            for t in n.texts.iter().filter(|t| t.lang.eq_ignore_ascii_case(lang)) {
                counters.insert(first_counter + n.offset, t.name.clone());
                helps.insert(first_help + n.offset, t.help.clone());
            }
        }
        let key = paths::perflib_language(lang);
        write_table(hive, &key, COUNTER, &counters)?;
        write_table(hive, &key, HELP, &helps)?;
    }
    Ok(CounterRange {
        driver: app.to_owned(),
        first_counter,
        last_counter,
        first_help,
        last_help,
    })
}

/// Removes the app's texts from every language's tables, and returns those of its installed
/// names (offsets up to `installed_highest`): its run-time ones are dropped.
fn take_texts(
    hive: &mut Hive,
    languages: &[String],
    current: Current,
    installed_highest: u32,
) -> Result<Kept, LodctrError> {
    let mut kept = Kept::new();
    for lang in languages {
        let mut counters = perflib::read_text_table(hive, lang, COUNTER)?;
        let mut helps = perflib::read_text_table(hive, lang, HELP)?;
        for off in 0..=current.last_counter.saturating_sub(current.first_counter) {
            let name = counters.remove(&(current.first_counter + off));
            let help = helps.remove(&(current.first_help.saturating_add(off)));
            if off <= installed_highest && (name.is_some() || help.is_some()) {
                kept.insert((lang.clone(), off), (name, help));
            }
        }
        let key = paths::perflib_language(lang);
        write_table(hive, &key, COUNTER, &counters)?;
        write_table(hive, &key, HELP, &helps)?;
    }
    Ok(kept)
}

/// Where the app's range of `highest` + 1 indexes goes, as (First Counter, First Help): in
/// place if every index it needs is free, else after every other range.
fn place(
    hive: &Hive,
    app: &str,
    languages: &[String],
    current: Current,
    highest: u32,
) -> Result<(u32, u32), LodctrError> {
    let overflow = || overflow(app);
    let needs_last = current
        .first_counter
        .checked_add(highest)
        .ok_or_else(overflow)?;
    let mut tables = Vec::new();
    for lang in languages {
        tables.push((
            perflib::read_text_table(hive, lang, COUNTER)?,
            perflib::read_text_table(hive, lang, HELP)?,
        ));
    }
    let free_in_place = (current.last_counter.saturating_add(1)..=needs_last).all(|i| {
        tables
            .iter()
            .all(|(c, h)| !c.contains_key(&i) && !h.contains_key(&i.saturating_add(1)))
    }) && no_other_range_in(hive, app, current.first_counter, needs_last)?;
    if needs_last <= current.last_counter || free_in_place {
        return Ok((current.first_counter, current.first_help));
    }
    let first = first_free(hive, app)?;
    Ok((first, first.checked_add(1).ok_or_else(overflow)?))
}

/// Perflib's languages and those of `names` not among them, each once.
fn languages_used(languages: &[String], names: &[&CounterNames]) -> Vec<String> {
    let mut used = languages.to_vec();
    for t in names.iter().flat_map(|n| &n.texts) {
        if !used.iter().any(|l| l.eq_ignore_ascii_case(&t.lang)) {
            used.push(t.lang.clone());
        }
    }
    used
}

/// Whether no other service's range starts within the indexes `first_counter ..= needs_last`
/// (and its help index) of `app`'s range.
fn no_other_range_in(
    hive: &Hive,
    app: &str,
    first_counter: u32,
    needs_last: u32,
) -> Result<bool, RegistryError> {
    Ok(service::services_in(hive)?.iter().all(|other| {
        other.name.eq_ignore_ascii_case(app)
            || other.first_counter.is_none_or(|f| {
                f > needs_last.saturating_add(1) || f.saturating_add(1) < first_counter
            })
    }))
}

/// Records the app's new range in Perflib (`Last Counter` and `Last Help` raised to it) and in
/// its Performance key, with the run-time map's fingerprint.
fn record_range(
    hive: &mut Hive,
    range: &CounterRange,
    names: &[&CounterNames],
    fingerprint: Option<u64>,
) -> Result<(), RegistryError> {
    let (perf_last_counter, perf_last_help) = perflib::last_counter_help(hive)?;
    hive.set_value(
        PERFLIB,
        LAST_COUNTER,
        Value::Dword(perf_last_counter.max(range.last_counter)),
    )?;
    hive.set_value(
        PERFLIB,
        LAST_HELP,
        Value::Dword(perf_last_help.max(range.last_help)),
    )?;
    let perf = paths::performance(&range.driver);
    hive.set_value(&perf, FIRST_COUNTER, Value::Dword(range.first_counter))?;
    hive.set_value(&perf, LAST_COUNTER, Value::Dword(range.last_counter))?;
    hive.set_value(&perf, FIRST_HELP, Value::Dword(range.first_help))?;
    hive.set_value(&perf, LAST_HELP, Value::Dword(range.last_help))?;
    match fingerprint {
        Some(f) if !names.is_empty() => hive.set_value(
            &perf,
            DYNAMIC_FINGERPRINT,
            Value::Sz(service::fingerprint_value(f)),
        ),
        _ => hive.delete_value(&perf, DYNAMIC_FINGERPRINT).map(drop),
    }
}

/// Replaces the run-time names of the installed app `app` in one atomic update (see the
/// [module docs](self) and [`apply_runtime_names`]).
///
/// # Errors
///
/// As [`apply_runtime_names`].
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{install_in, CounterNames, CounterSet, InstallOptions, ObjectNames, Text};
/// use prfdata_registry::{register_runtime_names, FileRegistry};
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path().join("registry"))?;
/// let set = CounterSet { app: "RtDoc".into(), fingerprint: None, objects: vec![ObjectNames {
///     symbol: "O".into(), offset: 0, texts: vec![Text::new("009", "O", "o")], counters: vec![] }] };
/// let opts = InstallOptions { library: "/x.so".into(), ini_dir: dir.path().into(), replace: false };
/// install_in(&reg, &set, &opts)?;
/// let names = [CounterNames { symbol: "D".into(), offset: 2, texts: vec![Text::new("009", "Dyn", "d")], factor: None, unit: None }];
/// let range = register_runtime_names(&reg, "RtDoc", 0, &names, Some(1))?;
/// assert_eq!(range.last_counter, range.first_counter + 2);
/// let range = register_runtime_names(&reg, "RtDoc", 0, &[], None)?;
/// assert_eq!(range.last_counter, range.first_counter, "removed again");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register_runtime_names<'a, R: Registry + ?Sized>(
    registry: &R,
    app: &str,
    installed_highest: u32,
    names: impl IntoIterator<Item = &'a CounterNames>,
    fingerprint: Option<u64>,
) -> Result<CounterRange, LodctrError> {
    let names: Vec<&CounterNames> = names.into_iter().collect();
    update(registry, |hive| {
        apply_runtime_names(
            hive,
            app,
            installed_highest,
            names.iter().copied(),
            fingerprint,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::Change;
    use crate::install::Text;
    use proptest::prelude::*;

    /// A registry with `App` installed at 1848 (names at offsets 0 and 2, in 009 and 00C),
    /// and, when `other_after`, `Other` loaded right after it, so that `App` cannot grow in
    /// place.
    fn installed(other_after: bool) -> Hive {
        let mut hive = perflib::new_hive();
        let mut load = |app: &str, first: u32| {
            let perf = paths::performance(app);
            for (name, n) in [
                (FIRST_COUNTER, first),
                (LAST_COUNTER, first + 2),
                (FIRST_HELP, first + 1),
                (LAST_HELP, first + 3),
            ] {
                hive.set_value(&perf, name, Value::Dword(n)).unwrap();
            }
            for lang in ["009", "00C"] {
                let key = paths::perflib_language(lang);
                let mut counters = perflib::read_text_table(&hive, lang, COUNTER).unwrap();
                let mut helps = perflib::read_text_table(&hive, lang, HELP).unwrap();
                for off in [0, 2] {
                    counters.insert(first + off, format!("{app} {lang} {off}"));
                    helps.insert(first + 1 + off, format!("{app} help {off}"));
                }
                write_table(&mut hive, &key, COUNTER, &counters).unwrap();
                write_table(&mut hive, &key, HELP, &helps).unwrap();
            }
            hive.set_value(PERFLIB, LAST_COUNTER, Value::Dword(first + 2))
                .unwrap();
            hive.set_value(PERFLIB, LAST_HELP, Value::Dword(first + 3))
                .unwrap();
        };
        load("App", 1848);
        if other_after {
            load("Other", 1852);
        }
        hive
    }

    fn names(set: &[(u32, u8, u8)]) -> Vec<CounterNames> {
        set.iter()
            .map(|&(offset, name, langs)| CounterNames {
                symbol: format!("DYN_{offset}"),
                offset,
                texts: ["009", "00C", "007"]
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| langs & (1 << i) != 0)
                    .map(|(_, lang)| Text::new(*lang, format!("N{name}"), format!("H{name}")))
                    .collect(),
                factor: None,
                unit: None,
            })
            .collect()
    }

    proptest! {
        /// The in-place way leaves every tree exactly as rewriting every table does, step
        /// after step, whether the range grows, shrinks, or must move.
        #[test]
        fn in_place_and_rewrite_make_the_same_tree(
            other_after in any::<bool>(),
            steps in prop::collection::vec(
                prop::collection::vec(
                    ((2u32..24).prop_map(|o| 2 * o), prop::option::of((0u8..4, 1u8..8))),
                    1..4,
                ),
                1..8,
            ),
        ) {
            let (mut fast, mut rewritten) = (installed(other_after), installed(other_after));
            // Each step edits the set before it: a name added, renamed or removed.
            let mut current = std::collections::BTreeMap::new();
            for (i, edits) in steps.iter().enumerate() {
                for &(offset, edit) in edits {
                    match edit {
                        Some(text) => current.insert(offset, text),
                        None => current.remove(&offset),
                    };
                }
                let set: Vec<_> = current.iter().map(|(&o, &(n, l))| (o, n, l)).collect();
                let names = names(&set);
                let names: Vec<&CounterNames> = names.iter().collect();
                let a = apply_with(&mut fast, "App", 2, &names, Some(i as u64), Path::InPlaceFirst);
                let b = apply_with(&mut rewritten, "App", 2, &names, Some(i as u64), Path::RewriteOnly);
                prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
                prop_assert!(fast == rewritten, "step {}: {:?}", i, set);
            }
        }
    }

    /// One name added to a hundred changes two entries of each table and the range's values.
    #[test]
    fn adding_one_name_changes_two_entries_of_each_table() {
        let mut hive = installed(false);
        let set: Vec<_> = (0..100).map(|i| (4 + 2 * i, (i % 200) as u8, 3)).collect();
        apply_runtime_names(&mut hive, "App", 2, &names(&set), Some(1)).unwrap();
        let mut more = set.clone();
        more.push((204, 7, 3));
        hive.track();
        apply_runtime_names(&mut hive, "App", 2, &names(&more), Some(2)).unwrap();
        let changes = hive.take_changes();
        let splices: Vec<_> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Splice { insert, remove, .. } => Some((insert.len(), *remove)),
                _ => None,
            })
            .collect();
        assert_eq!(splices, [(2, 0); 4], "{changes:?}");
        assert!(changes.len() <= 4 + 7, "{changes:?}");
    }
}

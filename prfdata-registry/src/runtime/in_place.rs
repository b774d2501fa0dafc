//! The in-place way of [`apply_runtime_names`](super::apply_runtime_names): when the app's range
//! stays where it is, each table gets one splice of the entries that differ.
//!
//! A text table is `index\0text\0` pairs in ascending index order (see
//! [`perflib`](crate::perflib)), so the app's run-time entries are one run of pairs:
//!
//! ```text
//!   ... | installed: First Counter ..= + installed_highest | run-time: ..= + highest | others ...
//!                                                          ^^^^^^^^^^^^^^^^^^^^^^^^^^
//!                    compared with the new names: common start and end kept, the rest spliced
//! ```
//!
//! A table this way cannot handle as the rewrite would (not in ascending order, an index
//! written other than as the rewrite writes it, an odd number of entries, two names at one
//! offset) leaves the work to the rewrite, which also reports what is wrong with it.

use super::{languages_used, no_other_range_in, Current};
use crate::install::CounterNames;
use crate::paths;
use crate::perflib::{self, COUNTER, HELP};
use crate::{CounterRange, Hive, LodctrError, RegistryError, Value};

/// The app's new names in one language, by offset: (offset, name, help).
type Wanted<'a> = Vec<(u32, &'a str, &'a str)>;

/// Changes the tables in place, if the range stays where it is and every table is one this
/// way handles; `None` (nothing changed) otherwise.
pub(super) fn apply(
    hive: &mut Hive,
    app: &str,
    current: Current,
    installed_highest: u32,
    highest: u32,
    names: &[&CounterNames],
) -> Result<Option<CounterRange>, LodctrError> {
    let Current {
        first_counter,
        last_counter,
        first_help,
    } = current;
    let span = last_counter.saturating_sub(first_counter);
    let (Some(needs_last), Some(last_help)) = (
        first_counter.checked_add(highest),
        first_help.checked_add(highest),
    ) else {
        return Ok(None);
    };
    if first_counter.checked_add(1) != Some(first_help)
        || span < installed_highest
        || (needs_last > last_counter && !no_other_range_in(hive, app, first_counter, needs_last)?)
    {
        return Ok(None);
    }
    let languages = languages_used(&perflib::languages(hive)?, names);
    let mut splices = Vec::with_capacity(2 * languages.len());
    for lang in &languages {
        let Some(wanted) = wanted(names, lang) else {
            return Ok(None);
        };
        let key = paths::perflib_language(lang);
        for (table, base) in [(COUNTER, first_counter), (HELP, first_help)] {
            let region = Region {
                base,
                installed_highest,
                span,
                highest,
            };
            match plan(hive, &key, table, region, &wanted)? {
                Some(splice) => splices.push(splice),
                None => return Ok(None),
            }
        }
    }
    for splice in splices {
        splice.apply(hive)?;
    }
    Ok(Some(CounterRange {
        driver: app.to_owned(),
        first_counter,
        last_counter: needs_last,
        first_help,
        last_help,
    }))
}

/// The app's names in `lang`, by offset; `None` if two share an offset.
fn wanted<'a>(names: &[&'a CounterNames], lang: &str) -> Option<Wanted<'a>> {
    let mut wanted: Wanted<'a> = names
        .iter()
        .flat_map(|&n| {
            n.texts
                .iter()
                .filter(|t| t.lang.eq_ignore_ascii_case(lang))
                .map(move |t| (n.offset, t.name.as_str(), t.help.as_str()))
        })
        .collect();
    wanted.sort_by_key(|w| w.0);
    wanted.windows(2).all(|w| w[0].0 < w[1].0).then_some(wanted)
}

/// Where one table's run-time entries are: offsets from `base`.
#[derive(Debug, Clone, Copy)]
struct Region {
    /// First Counter (for `Counter`) or First Help (for `Help`).
    base: u32,
    /// The highest installed offset: run-time entries are above it.
    installed_highest: u32,
    /// The range's highest offset now.
    span: u32,
    /// Its highest offset with the new names.
    highest: u32,
}

/// The index of a table entry, if written as the rewrite writes one (decimal digits, no sign,
/// no leading zero, no space).
fn index_of(entry: &str) -> Option<u32> {
    let canonical = !entry.is_empty()
        && entry.bytes().all(|b| b.is_ascii_digit())
        && (entry.len() == 1 || !entry.starts_with('0'));
    canonical.then(|| entry.parse().ok()).flatten()
}

/// The change of one table.
#[derive(Debug)]
struct Splice {
    key: String,
    table: &'static str,
    /// Whether the value exists (else it is written whole, as the rewrite would).
    exists: bool,
    at: usize,
    remove: usize,
    insert: Vec<String>,
}

impl Splice {
    fn apply(self, hive: &mut Hive) -> Result<(), RegistryError> {
        if !self.exists {
            hive.set_value(&self.key, self.table, Value::MultiSz(self.insert))
        } else if self.remove > 0 || !self.insert.is_empty() {
            hive.splice_multi_sz(&self.key, self.table, self.at, self.remove, self.insert)
        } else {
            Ok(())
        }
    }
}

/// The splice that makes table `table` of `key` hold `wanted` as the app's run-time entries;
/// `None` if the table is not one this way handles, or an index the range grows into is taken.
fn plan<'w>(
    hive: &Hive,
    key: &str,
    table: &'static str,
    r: Region,
    wanted: &[(u32, &'w str, &'w str)],
) -> Result<Option<Splice>, LodctrError> {
    let entries = perflib::read_optional_multi_sz(hive, key, table)?;
    let (exists, entries) = (entries.is_some(), entries.unwrap_or_default());
    let bounds = (
        r.installed_highest
            .checked_add(1)
            .and_then(|o| r.base.checked_add(o)),
        r.base.checked_add(r.span),
        r.base.checked_add(r.highest),
    );
    let (Some(low), Some(old_high), Some(new_high)) = bounds else {
        return Ok(None);
    };
    if entries.len() % 2 != 0 {
        return Ok(None);
    }
    // One pass over the indexes: ascending, and where the run-time pairs begin and end.
    let (mut first, mut end, mut previous) = (0, 0, None);
    for (pair, entry) in entries.iter().step_by(2).enumerate() {
        let Some(index) = index_of(entry).filter(|&i| previous.is_none_or(|p| p < i)) else {
            return Ok(None);
        };
        if index > old_high && index <= new_high {
            // Another's entry where the range would grow.
            return Ok(None);
        }
        previous = Some(index);
        first += usize::from(index < low);
        end = if index <= old_high.max(new_high) {
            pair + 1
        } else {
            end
        };
    }
    let end = end.max(first);
    let is_counter = table == COUNTER;
    let text = |w: &(u32, &'w str, &'w str)| if is_counter { w.1 } else { w.2 };
    let same = |pair: usize, w: &(u32, &'w str, &'w str)| {
        index_of(&entries[2 * pair]) == Some(r.base + w.0) && entries[2 * pair + 1] == text(w)
    };
    let old = end - first;
    let start = (0..old.min(wanted.len()))
        .take_while(|&k| same(first + k, &wanted[k]))
        .count();
    let tail = (0..(old - start).min(wanted.len() - start))
        .take_while(|&k| same(end - 1 - k, &wanted[wanted.len() - 1 - k]))
        .count();
    let insert = wanted[start..wanted.len() - tail]
        .iter()
        .flat_map(|w| [(r.base + w.0).to_string(), text(w).to_owned()])
        .collect();
    Ok(Some(Splice {
        key: key.to_owned(),
        table,
        exists,
        at: 2 * (first + start),
        remove: 2 * (old - start - tail),
        insert,
    }))
}

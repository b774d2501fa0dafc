//! The fixed columns of a log: what `typeperf` samples (see [`Columns`]).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::hash::{BuildHasher, RandomState};

use super::offered::{Hit, Offered};
use super::previous::Previous;
use super::{machine_of, reading};
use crate::factor::Factors;
use crate::names::Names;
use crate::pdh::{CounterPath, FormatOptions, Percentile};
use prfdata_wire::snapshot::DataSnapshot;

/// What a column is looked up by: one word to sort on, one to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Key {
    hash: u64,
    check: u32,
}

/// One column of a log: its key, and its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Column {
    key: Key,
    position: u32,
}

/// A column made for a path that named nothing when the columns were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiting {
    position: u32,
    /// The request it was made for.
    request: u32,
    /// Whether a counter has matched it since.
    matched: bool,
}

/// The columns of a log: what `typeperf` samples.
///
/// A typeperf log's columns are the counters its paths named at the first collection (a CSV
/// header cannot change). [`Columns::new`] expands the paths once, hands each column's path
/// to the caller as it is found (the header is written then) and keeps, per column, a key
/// and a check word, not its path: 16 bytes a column, so that `\Object(*)\Counter` over a
/// million instances costs 16 MB, not a million paths.
///
/// A path without wildcards that names nothing then (its app not installed or not running
/// yet, its instance not there) still gets its column, headed by the path as given: it is
/// looked up like any other, so it has values from the first sample whose collection offers
/// that counter under that name, and none again once it goes (uninstalled, or renamed: a
/// column is a name, not an index). A wildcard's columns are what it matched at the first
/// collection, as Windows' typeperf fixes them: a wildcard that matched nothing has none, and
/// instances that appear later get none.
///
/// At each sample ([`Columns::sample`]) every counter on offer is looked up by its key
/// (object, counter, parent, name and `#n`, case-folded as PDH compares them); each column it
/// matches gets its value. A column is an exact path, so it matches what PDH would match
/// with that path: the counter of that name of the instance of that name and number, under
/// that parent, or under any parent when the path has none; when several do, the last in
/// collection order gives the value, as the column's own expansion would.
///
/// ```text
/// key(object, counter, parent?, name, #n) ──SipHash k1──▶ 64-bit key   ┐ sorted: (key, check,
///                                         ──SipHash k2──▶ 32-bit check ┘         column)
/// ```
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfmon::pdh::{parse, FormatOptions};
/// use prfmon::sampler::Columns;
///
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
/// let names = prfmon::names::Names::default();
/// let mut header = Vec::new();
/// let requests = [parse(r"\#1848(*)\#1850")?];
/// let mut columns = Columns::new(&requests, &snap, &names, FormatOptions::default(), |p| {
///     header.push(p.to_string());
///     Ok::<(), std::convert::Infallible>(())
/// })?;
/// assert_eq!(header, [r"\\box\#1848(alpha)\#1850", r"\\box\#1848(beta)\#1850"]);
/// assert_eq!(columns.sample(&snap, &names, &Default::default()), [Some(7.0), Some(4_294_967_295.0)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Columns {
    count: usize,
    /// Sorted, for lookups.
    columns: Vec<Column>,
    keys: (RandomState, RandomState),
    options: FormatOptions,
    previous: Previous,
    /// The columns made for paths that named nothing at first, by position.
    waiting: Vec<Waiting>,
    /// The percentiles some column reads (`Name:pQ`), each once, ascending.
    percentiles: Vec<Percentile>,
}

impl Columns {
    /// The columns of `requests` in `snapshot`: every counter each request names, in request
    /// order, each request's in collection order, without duplicates (the same full path
    /// twice); each column's full path (on the request's machine, else the collection's) is
    /// handed to `header` as it is found. Values are formatted with `options`.
    ///
    /// A request without wildcards that names nothing makes one column that waits for it
    /// (see [`Columns`]); a wildcard that names nothing makes none. [`super::unmatched`] says
    /// which requests name nothing.
    ///
    /// # Errors
    ///
    /// The first error `header` returns.
    pub fn new<E>(
        requests: &[CounterPath],
        snapshot: &DataSnapshot,
        names: &Names,
        options: FormatOptions,
        mut header: impl FnMut(&CounterPath) -> Result<(), E>,
    ) -> Result<Columns, E> {
        let offered = Offered::new(snapshot, names);
        let first = first_occurrences(requests, snapshot, &offered);
        let mut this = Columns {
            count: 0,
            columns: Vec::with_capacity(first.iter().filter(|&&f| f).count()),
            keys: (RandomState::new(), RandomState::new()),
            options,
            previous: Previous::default(),
            waiting: Vec::new(),
            percentiles: Vec::new(),
        };
        let mut result: Result<(), E> = Ok(());
        let mut at = 0;
        let mut waiting_keys = HashSet::new();
        for (index, request) in requests.iter().enumerate() {
            let machine = machine_of(request, snapshot);
            let found = offered.each_match(request, |hit| {
                let kept = first.get(at).copied().unwrap_or(false);
                at += 1;
                if !kept || result.is_err() {
                    return;
                }
                let Some(path) = offered.path(hit, machine) else {
                    return;
                };
                this.percentiles.extend(hit.percentile);
                result = header(&path);
                this.push(this.key_of(&path, true));
            });
            if found == 0 && !request.is_wildcard() && result.is_ok() {
                let path = CounterPath {
                    machine: machine.map(str::to_owned),
                    ..request.clone()
                };
                let key = this.key_of(&path, true);
                if let Some((_, Ok(q))) = path.percentile() {
                    this.percentiles.push(q);
                }
                if waiting_keys.insert(key) {
                    result = header(&path);
                    this.wait_for(key, index);
                }
            }
            if result.is_err() {
                break;
            }
        }
        result?;
        this.columns.sort_unstable();
        this.percentiles.sort_unstable();
        this.percentiles.dedup();
        Ok(this)
    }

    /// Adds a column with `key` for request `request`, which names nothing now.
    fn wait_for(&mut self, key: Key, request: usize) {
        let position = self.push(key);
        self.waiting.push(Waiting {
            position,
            request: request as u32,
            matched: false,
        });
    }

    /// Adds a column of `key` after the others; its position.
    fn push(&mut self, key: Key) -> u32 {
        let position = self.count as u32;
        self.columns.push(Column { key, position });
        self.count += 1;
        position
    }

    /// The requests (their indexes in the `requests` given to [`Columns::new`]) that named
    /// nothing when the columns were made and have matched nothing since, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    /// use prfmon::pdh::parse;
    /// use prfmon::sampler::Columns;
    ///
    /// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
    /// let snap = prfdata_wire::snapshot::decode(&build_data_block("box", &CollectionTimes::now(), &[out]))?;
    /// let mut names = prfmon::names::Names::default();
    /// let requests = [parse(r"\#1848(alpha)\#1850")?, parse(r"\Later(alpha)\Value")?];
    /// let mut header = Vec::new();
    /// let mut columns = Columns::new(&requests, &snap, &names, Default::default(), |p| {
    ///     header.push(p.to_string());
    ///     Ok::<(), std::convert::Infallible>(())
    /// })?;
    /// // The second path waits, with an empty column.
    /// assert_eq!(header, [r"\\box\#1848(alpha)\#1850", r"\\box\Later(alpha)\Value"]);
    /// assert_eq!(columns.sample(&snap, &names, &Default::default()), [Some(7.0), None]);
    /// assert_eq!(columns.never_matched().collect::<Vec<_>>(), [1]);
    /// // The same counters under other names (read again after a rename): the columns swap.
    /// names.counter.insert(1848, "Later".into());
    /// names.counter.insert(1850, "Value".into());
    /// assert_eq!(columns.sample(&snap, &names, &Default::default()), [None, Some(7.0)]);
    /// assert_eq!(columns.never_matched().count(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn never_matched(&self) -> impl Iterator<Item = usize> + '_ {
        self.waiting
            .iter()
            .filter(|w| !w.matched)
            .map(|w| w.request as usize)
    }

    /// Notes that the columns at `positions` matched a counter.
    fn matched(&mut self, positions: &[usize]) {
        if self.waiting.is_empty() {
            return;
        }
        for &position in positions {
            if let Ok(i) = self
                .waiting
                .binary_search_by_key(&(position as u32), |w| w.position)
            {
                self.waiting[i].matched = true;
            }
        }
    }

    /// The number of columns.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = prfdata_wire::snapshot::DataSnapshot::default();
    /// let names = prfmon::names::Names::default();
    /// let columns = prfmon::sampler::Columns::new(&[], &snap, &names, Default::default(),
    ///     |_| Ok::<(), ()>(()))?;
    /// assert!(columns.is_empty() && columns.len() == 0);
    /// # Ok::<(), ()>(())
    /// ```
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no columns. See [`Columns::len`].
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The key of an exact path (its machine left out), with its parent or (`with_parent`
    /// false) as a path without one.
    fn key_of(&self, path: &CounterPath, with_parent: bool) -> Key {
        let mut text = String::new();
        let part = |text: &mut String, s: &str| {
            let folded: String = s.chars().flat_map(char::to_lowercase).collect();
            let _ = write!(text, "{}:{folded}", folded.len());
        };
        part(&mut text, &path.object);
        // A percentile as printed (`p99.9`, not `p99.90`): as a matched column's path has it.
        let counter = match path.percentile() {
            Some((name, Ok(q))) => format!("{name}:{q}"),
            _ => path.counter.to_string(),
        };
        part(&mut text, &counter);
        match &path.instance {
            None => text.push('-'),
            Some(sel) => {
                match sel.parent.as_ref().filter(|_| with_parent) {
                    Some(p) => {
                        text.push('P');
                        part(&mut text, &p.to_string());
                    }
                    None => text.push('N'),
                }
                part(&mut text, &sel.name.to_string());
                let _ = write!(text, "#{}", sel.index);
            }
        }
        Key {
            hash: self.keys.0.hash_one(&text),
            check: self.keys.1.hash_one(&text) as u32,
        }
    }

    /// The columns whose key is `key`.
    fn columns_of(&self, key: Key) -> impl Iterator<Item = usize> + '_ {
        let start = self.columns.partition_point(|c| c.key < key);
        self.columns[start..]
            .iter()
            .take_while(move |c| c.key == key)
            .map(|c| c.position as usize)
    }

    /// One value per column from `snapshot` (`None`: no value now, as for an instance that
    /// has gone, or a rate's first sample), formatted from the previous sample of each counter
    /// and this one, with each counter's scale factor in `factors` applied (a factor is part
    /// of the displayed value: [`crate::factor`]).
    pub fn sample(
        &mut self,
        snapshot: &DataSnapshot,
        names: &Names,
        factors: &Factors,
    ) -> Vec<Option<f64>> {
        let offered = Offered::new(snapshot, names);
        let mut values = vec![None; self.count];
        let mut current = self.previous.next(snapshot);
        let mut hits: Vec<usize> = Vec::new();
        let mut key = String::new();
        let percentiles = std::mem::take(&mut self.percentiles);
        let counters = offered.paths();
        let percentile_paths = offered
            .percentile_hits(&percentiles)
            .filter_map(|hit| Some((hit, offered.path(hit, None)?)));
        for (hit, path) in counters.chain(percentile_paths) {
            hits.clear();
            hits.extend(self.columns_of(self.key_of(&path, true)));
            if path.instance.as_ref().is_some_and(|i| i.parent.is_some()) {
                // A column without a parent names the instance under any parent.
                hits.extend(self.columns_of(self.key_of(&path, false)));
            }
            if hits.is_empty() {
                continue;
            }
            self.matched(&hits);
            key.clear();
            let _ = write!(key, "{path}");
            let key = key.to_lowercase();
            let Some((_, value, def)) = reading(
                &offered,
                hit,
                (&self.previous, &mut current),
                &key,
                self.options,
            ) else {
                continue;
            };
            if let Ok(v) = value {
                let v = factors.apply(def.name_index, v);
                for &column in &hits {
                    values[column] = Some(v);
                }
            }
        }
        self.percentiles = percentiles;
        self.previous = current;
        values
    }
}

/// For each counter the requests match in turn (request by request, each in collection
/// order), whether it is the first with its full path: a second match of a path makes no
/// column.
///
/// The paths are compared by two hashes (96 random bits), sorted: 12 bytes a match while
/// this runs, one bit after.
fn first_occurrences(
    requests: &[CounterPath],
    snapshot: &DataSnapshot,
    offered: &Offered<'_>,
) -> Vec<bool> {
    let keys = (RandomState::new(), RandomState::new());
    let mut hashes: Vec<u64> = Vec::new();
    let mut checks: Vec<u32> = Vec::new();
    for request in requests {
        let machine = machine_of(request, snapshot);
        offered.each_match(request, |hit| {
            let (hash, check) = offered.path(hit, machine).map_or((0, 0), |p| {
                (keys.0.hash_one(&p), keys.1.hash_one(&p) as u32)
            });
            hashes.push(hash);
            checks.push(check);
        });
    }
    let mut order: Vec<u32> = (0..hashes.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (hashes[i as usize], checks[i as usize], i));
    let mut first = vec![true; hashes.len()];
    for pair in order.windows(2) {
        let (a, b) = (pair[0] as usize, pair[1] as usize);
        if (hashes[a], checks[a]) == (hashes[b], checks[b]) {
            first[b] = false;
        }
    }
    first
}

impl Offered<'_> {
    /// Every counter on offer with its full path (no machine), in collection order.
    fn paths(&self) -> impl Iterator<Item = (Hit, CounterPath)> + '_ {
        self.availables().map(|(hit, a)| (hit, a.path()))
    }
}

//! What a collection offers, matched against counter paths without being listed: the objects
//! (each name index once, as collected first), their counters (bases left out) and, per
//! instance, the PDH name (parent, name, `#n`), each found when a path asks for it.
//!
//! [`Offered::each_match`] gives what [`crate::pdh::expand`] would give over the list of every
//! [`Available`] counter ([`super::offers`]), in the same order (object by object, counter by
//! counter, each counter for every instance in instance order), but the list is never built:
//! an object's instances cost one number each (their `#n`, [`crate::namesakes`]) while a path
//! is matched, and nothing at all for an object the path does not name.
//!
//! A histogram ([`crate::histogram`]) is on offer as its sum, under its name (an average, as NT
//! tools show it); its bucket counter is not on offer as a counter (it has no name and no
//! number). A path `Name:pQ` that no counter's name matches exactly names percentile Q of the
//! histogram `Name` ([`CounterPath::percentile`]): a [`Hit`] on the bucket counter with that
//! percentile. A wildcard counter (`*`) names counters only, never percentiles.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use crate::histogram::{find, HistogramDef};
use crate::names::Names;
use crate::pdh::path::{eq_ignore_case, fold_case, near_matches, write_path};
use crate::pdh::{
    Available, CounterPath, InstanceName, InstanceSel, PathError, Pattern, Percentile,
};
use prfdata_wire::snapshot::{DataSnapshot, Instance, ObjectData};
use prfdata_wire::winperf::PERF_PRFDATA_HISTOGRAM;

/// One counter a collection offers: positions in the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    /// The object's position in [`DataSnapshot::objects`].
    pub(crate) object: usize,
    /// The counter's position in [`ObjectData::counters`].
    pub(crate) counter: usize,
    /// The instance's position, for an object with instances.
    pub(crate) instance: Option<usize>,
    /// For a histogram's percentile (`counter` is then its bucket counter), which one.
    pub(crate) percentile: Option<Percentile>,
}

/// An object on offer.
struct OfferedObject<'a> {
    position: usize,
    data: &'a ObjectData,
    name: String,
    /// The counters on offer (not bases, not histograms' buckets): position and name.
    counters: Vec<(usize, String)>,
    /// The histograms, each named by its sum (one of `counters`).
    histograms: Vec<HistogramDef>,
    /// Each instance's `#n` among the instances of the same parent and name, found the first
    /// time a path needs it.
    numbers: OnceCell<Vec<u32>>,
}

/// What one collection offers (see the [module docs](self)).
pub(crate) struct Offered<'a> {
    snapshot: &'a DataSnapshot,
    objects: Vec<OfferedObject<'a>>,
}

/// The instances of an object a path selects.
enum Chosen {
    /// Every instance (`*` with no parent given).
    All(usize),
    /// These positions, in order.
    Some(Vec<u32>),
}

impl Chosen {
    fn len(&self) -> usize {
        match self {
            Chosen::All(n) => *n,
            Chosen::Some(list) => list.len(),
        }
    }

    fn get(&self, k: usize) -> usize {
        match self {
            Chosen::All(_) => k,
            Chosen::Some(list) => list[k] as usize,
        }
    }
}

impl<'a> Offered<'a> {
    /// What `snapshot` offers, named with `names`.
    pub(crate) fn new(snapshot: &'a DataSnapshot, names: &Names) -> Self {
        let mut seen = HashSet::new();
        let objects = snapshot
            .objects
            .iter()
            .enumerate()
            .filter(|(_, object)| seen.insert(object.name_index))
            .map(|(position, data)| OfferedObject {
                position,
                data,
                name: names.name(data.name_index),
                counters: data
                    .counters
                    .iter()
                    .enumerate()
                    .filter(|(_, def)| !def.is_base && def.counter_type != PERF_PRFDATA_HISTOGRAM)
                    .map(|(c, def)| (c, names.name(def.name_index)))
                    .collect(),
                histograms: find(data).collect(),
                numbers: OnceCell::new(),
            })
            .collect();
        Offered { snapshot, objects }
    }

    /// The snapshot on offer.
    pub(crate) fn snapshot(&self) -> &'a DataSnapshot {
        self.snapshot
    }

    /// The offered object at snapshot position `position`.
    fn object(&self, position: usize) -> Option<&OfferedObject<'a>> {
        self.objects.iter().find(|o| o.position == position)
    }

    /// The PDH numbers (`#n`) of an object's instances: instances with the same parent and
    /// name, compared case-insensitively as PDH compares them, numbered in order.
    fn numbers<'o>(&self, object: &'o OfferedObject<'a>) -> &'o [u32] {
        object.numbers.get_or_init(|| {
            let data = object.data;
            crate::namesakes::numbers(data.instance_count(), |i, out| {
                let Some(inst) = data.instance(i) else {
                    return;
                };
                match self.snapshot.parent(&inst) {
                    Some(parent) => {
                        out.push('P');
                        out.push_str(&fold_case(&parent.own_name()));
                        out.push('\0');
                    }
                    None => out.push('N'),
                }
                out.push_str(&fold_case(&inst.own_name()));
            })
        })
    }

    /// The PDH name of instance `i` of `object`: its parent's own name (when the parent is
    /// in the collection), its own name, its number.
    fn instance_name(&self, object: &OfferedObject<'a>, i: usize) -> Option<InstanceName> {
        let inst = object.data.instance(i)?;
        Some(InstanceName {
            parent: self.parent_name(&inst),
            name: inst.own_name(),
            index: self.numbers(object).get(i).copied().unwrap_or(0),
        })
    }

    /// The own name of `inst`'s parent, when the parent is in the collection.
    fn parent_name(&self, inst: &Instance<'_>) -> Option<String> {
        self.snapshot.parent(inst).map(|p| p.own_name())
    }

    /// The instances of `object` that `sel` selects, in order.
    fn choose(&self, object: &OfferedObject<'a>, sel: &InstanceSel) -> Chosen {
        let count = object.data.instance_count();
        if sel.name.is_wildcard() && sel.parent.is_none() {
            return Chosen::All(count);
        }
        let mut chosen = Vec::new();
        for (i, inst) in object.data.instances().enumerate() {
            // The name first: it rules out most instances, and costs no parent lookup.
            if let Pattern::Exact(want) = &sel.name {
                if !eq_ignore_case(want, &inst.own_name()) {
                    continue;
                }
            }
            if !sel.parent_matches(self.parent_name(&inst).as_deref()) {
                continue;
            }
            let index = self.numbers(object).get(i).copied().unwrap_or(0);
            if sel.name.is_wildcard() || sel.index == index {
                chosen.push(i as u32);
            }
        }
        Chosen::Some(chosen)
    }

    /// Calls `visit` with every counter `path` names, in the order [`crate::pdh::expand`]
    /// lists them over [`super::offers`]; returns how many there were. The machine is not
    /// compared.
    pub(crate) fn each_match(&self, path: &CounterPath, mut visit: impl FnMut(Hit)) -> usize {
        let mut found = 0;
        for object in &self.objects {
            if !eq_ignore_case(&path.object, &object.name) {
                continue;
            }
            let (counters, percentile) = self.named(object, path);
            let hit = |counter, instance| Hit {
                object: object.position,
                counter,
                instance,
                percentile,
            };
            match (&path.instance, object.data.has_instances()) {
                (None, false) => {
                    for &counter in &counters {
                        found += 1;
                        visit(hit(counter, None));
                    }
                }
                (Some(sel), true) => {
                    if counters.is_empty() {
                        continue;
                    }
                    let chosen = self.choose(object, sel);
                    for &counter in &counters {
                        for k in 0..chosen.len() {
                            found += 1;
                            visit(hit(counter, Some(chosen.get(k))));
                        }
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// The counters of `object` that `path`'s counter names, by position: the counters of that
    /// name (or every one, for `*`); if none, and the name reads `Name:pQ`, the bucket
    /// counters of the histograms named `Name`, with Q.
    fn named(
        &self,
        object: &OfferedObject<'a>,
        path: &CounterPath,
    ) -> (Vec<usize>, Option<Percentile>) {
        let exact: Vec<usize> = object
            .counters
            .iter()
            .filter(|(_, name)| path.counter.matches(name))
            .map(|&(c, _)| c)
            .collect();
        if !exact.is_empty() {
            return (exact, None);
        }
        match path.percentile() {
            Some((name, Ok(q))) => {
                let buckets = self.histograms_named(object, name).map(|h| h.buckets);
                (buckets.collect(), Some(q))
            }
            _ => (Vec::new(), None),
        }
    }

    /// `object`'s histograms named `name`.
    fn histograms_named<'o>(
        &self,
        object: &'o OfferedObject<'a>,
        name: &'o str,
    ) -> impl Iterator<Item = &'o HistogramDef> + 'o {
        object.histograms.iter().filter(move |h| {
            let sum = object.counters.iter().find(|(c, _)| *c == h.sum);
            sum.is_some_and(|(_, sum)| eq_ignore_case(name, sum))
        })
    }

    /// The name `hit` is on offer under in `object`: its counter's, or for a percentile its
    /// histogram's name and `:pQ`.
    fn counter_name<'o>(&self, object: &'o OfferedObject<'a>, hit: Hit) -> Option<Cow<'o, str>> {
        let counter = match hit.percentile {
            Some(_) => {
                object
                    .histograms
                    .iter()
                    .find(|h| h.buckets == hit.counter)?
                    .sum
            }
            None => hit.counter,
        };
        let (_, name) = object.counters.iter().find(|(c, _)| *c == counter)?;
        Some(match hit.percentile {
            Some(q) => Cow::Owned(format!("{name}:{q}")),
            None => Cow::Borrowed(name),
        })
    }

    /// What is on offer, in brief: a hash of each object's position and name index, its name
    /// and its counters' positions and names (not its instances). Two collections with the
    /// same key offer the same objects and counters under the same names, so a path that
    /// names none of them ([`Offered::names_a_counter`] false) still names none: only the
    /// key changing (an app installed, uninstalled or renamed, names read again) can make it
    /// match. One hash of the names this offer already holds, nothing per instance.
    pub(crate) fn key(&self) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        for object in &self.objects {
            (object.position, object.data.name_index, &object.name).hash(&mut hasher);
            object.data.has_instances().hash(&mut hasher);
            object.counters.hash(&mut hasher);
        }
        hasher.finish()
    }

    /// Whether some object on offer has `path`'s object name, a counter `path` names and
    /// instances if and only if `path` names one: whether `path` could match here with the
    /// right instances. The machine is not compared.
    pub(crate) fn names_a_counter(&self, path: &CounterPath) -> bool {
        self.objects.iter().any(|object| {
            eq_ignore_case(&path.object, &object.name)
                && object.data.has_instances() == path.instance.is_some()
                && (object
                    .counters
                    .iter()
                    .any(|(_, name)| path.counter.matches(name))
                    || path.percentile().is_some_and(|(name, _)| {
                        self.histograms_named(object, name).next().is_some()
                    }))
        })
    }

    /// [`PathError::NoMatch`] for `path`, with its near matches among everything on offer.
    pub(crate) fn no_match(&self, path: &CounterPath) -> PathError {
        if let Some(error) = self.percentile_error(path) {
            return error;
        }
        if let Some(near) = self.near_percentiles(path) {
            return PathError::NoMatch {
                path: path.to_string(),
                near,
            };
        }
        PathError::NoMatch {
            path: path.to_string(),
            near: near_matches(path, self.availables().map(|(_, available)| available)),
        }
    }

    /// Why `path`, read as `Name:pQ` ([`CounterPath::percentile`]), names no percentile of an
    /// object it names: `Name` is a counter but no histogram ([`PathError::NotAHistogram`]),
    /// or a histogram and Q is no percentile ([`PathError::BadPercentile`]); `None` if neither.
    fn percentile_error(&self, path: &CounterPath) -> Option<PathError> {
        let (name, q) = path.percentile()?;
        let objects = self
            .objects
            .iter()
            .filter(|o| eq_ignore_case(&path.object, &o.name));
        let mut counter = None;
        for object in objects {
            if self.histograms_named(object, name).next().is_some() {
                return q.err().map(|error| PathError::BadPercentile {
                    path: path.to_string(),
                    error,
                });
            }
            let named = object
                .counters
                .iter()
                .find(|(_, n)| eq_ignore_case(name, n));
            counter = counter.or(named.map(|(_, n)| n.clone()));
        }
        counter.map(|counter| PathError::NotAHistogram {
            path: path.to_string(),
            counter,
        })
    }

    /// For a percentile path (`Name:pQ`) of a histogram on offer that matched nothing (its
    /// instance is not there): the nearest paths of the same percentile of the histograms on
    /// offer, nearest first. `None` for any other path.
    fn near_percentiles(&self, path: &CounterPath) -> Option<Vec<String>> {
        let (name, Ok(q)) = path.percentile()? else {
            return None;
        };
        let sums: HashSet<(usize, usize)> = (self.objects.iter())
            .flat_map(|o| {
                self.histograms_named(o, name)
                    .map(move |h| (o.position, h.sum))
            })
            .collect();
        if sums.is_empty() {
            return None;
        }
        let histogram = CounterPath {
            counter: Pattern::Exact(name.to_owned()),
            ..path.clone()
        };
        let candidates = (self.availables())
            .filter(|(hit, _)| sums.contains(&(hit.object, hit.counter)))
            .map(|(_, available)| available);
        let near = near_matches(&histogram, candidates);
        Some(near.into_iter().map(|p| format!("{p}:{q}")).collect())
    }

    /// Every counter on offer, one at a time, in [`super::offers`] order.
    pub(crate) fn availables(&self) -> impl Iterator<Item = (Hit, Available)> + '_ {
        self.objects.iter().flat_map(move |object| {
            let instances = object
                .data
                .has_instances()
                .then(|| object.data.instance_count());
            object.counters.iter().flat_map(move |(c, counter)| {
                let rows: Box<dyn Iterator<Item = Option<usize>>> = match instances {
                    None => Box::new(std::iter::once(None)),
                    Some(n) => Box::new((0..n).map(Some)),
                };
                rows.map(move |instance| {
                    let hit = Hit {
                        object: object.position,
                        counter: *c,
                        instance,
                        percentile: None,
                    };
                    let name = instance.and_then(|i| self.instance_name(object, i));
                    (
                        hit,
                        Available::new(object.name.clone(), counter.clone(), name),
                    )
                })
            })
        })
    }

    /// Every percentile of `qs` of every histogram on offer, instance by instance, in
    /// collection order: the [`Hit`]s that `Name:pQ` paths name. A percentile whose path names
    /// a counter of its own (`Name:p99` exactly) is left out: that counter is on offer.
    pub(crate) fn percentile_hits<'q>(
        &'q self,
        qs: &'q [Percentile],
    ) -> impl Iterator<Item = Hit> + 'q {
        self.objects.iter().flat_map(move |object| {
            // Counted, not listed: an object of a million instances costs nothing here.
            let instances = object
                .data
                .has_instances()
                .then(|| object.data.instance_count());
            let hits = object.histograms.iter().flat_map(move |h| {
                qs.iter().map(move |&q| Hit {
                    object: object.position,
                    counter: h.buckets,
                    instance: None,
                    percentile: Some(q),
                })
            });
            hits.filter(move |hit| {
                let name = self.counter_name(object, *hit);
                !name.is_some_and(|n| object.counters.iter().any(|(_, c)| eq_ignore_case(c, &n)))
            })
            .flat_map(move |hit| {
                let rows: Box<dyn Iterator<Item = Option<usize>>> = match instances {
                    None => Box::new(std::iter::once(None)),
                    Some(n) => Box::new((0..n).map(Some)),
                };
                rows.map(move |instance| Hit { instance, ..hit })
            })
        })
    }

    /// The full path of `hit` on `machine`, spelt as the collection spells it.
    pub(crate) fn path(&self, hit: Hit, machine: Option<&str>) -> Option<CounterPath> {
        let object = self.object(hit.object)?;
        let counter = self.counter_name(object, hit)?;
        let instance = match hit.instance {
            Some(i) => Some(self.instance_name(object, i)?),
            None => None,
        };
        Some(CounterPath {
            machine: machine.map(str::to_owned),
            ..Available::new(object.name.clone(), counter, instance).path()
        })
    }

    /// Appends the full path of `hit` without its machine, as [`CounterPath`] prints it, to
    /// `out`; false if `hit` is not on offer.
    pub(crate) fn push_path(&self, hit: Hit, out: &mut String) -> bool {
        let Some(object) = self.object(hit.object) else {
            return false;
        };
        let Some(counter) = self.counter_name(object, hit) else {
            return false;
        };
        let instance = match hit.instance {
            Some(i) => match self.instance_name(object, i) {
                Some(name) => Some(name),
                None => return false,
            },
            None => None,
        };
        let parts = instance
            .as_ref()
            .map(|n| (n.parent.as_deref(), n.name.as_str(), n.index));
        write_path(out, None, &object.name, parts, &counter).is_ok()
    }
}

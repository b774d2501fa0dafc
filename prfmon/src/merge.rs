//! One view of two collections: a `Global` collection and a collection by index of objects it
//! lacks (costly objects), as `typeperf` and `watch` take them at every sample, or `Global` and
//! `Costly` for `typeperf -q`.
//!
//! Providers return the objects of the parents of the instances they return (an index query
//! for a costly child object brings its non-costly parent object too, as NT's providers do), so
//! the second collection may hold objects the first holds already. [`merge_missing`] keeps each
//! object once, from the first collection, and re-points the second collection's instances at
//! their parents in the first: a child names its parent by *position*
//! (`ParentObjectInstance`), and positions may differ when instances came or went between the
//! two collections. The parent is found by its PDH name (its own name, its parent's and its
//! `#n`), so a child keeps the name it had in its own collection. A child whose parent the first
//! collection does not have (it came or went in between) is left out of this view, with the
//! instances below it, rather than shown under another name for one sample.
//!
//! # Examples
//!
//! ```
//! use prfdata_wire::build::ObjectBuilder;
//! use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
//! use prfdata_wire::snapshot::InstanceData;
//! use prfmon::merge::merge_missing;
//! let inst = |name: &str, parent: u32, pos: u32| InstanceData {
//!     name: name.into(), unique_id: -1,
//!     parent_object_title_index: parent, parent_object_instance: pos, values: vec![],
//! };
//! let collect = |objects: &[ObjectBuilder]| {
//!     let outputs: Vec<_> = objects.iter().map(ProviderOutput::from).collect();
//!     prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &outputs))
//! };
//! // Global: pools "a" and "b". By index: the costly tasks, with the pools (now "b" first).
//! let mut global = collect(&[ObjectBuilder::new(10).instance(inst("a", 0, 0)).instance(inst("b", 0, 0))])?;
//! let costly = collect(&[
//!     ObjectBuilder::new(10).instance(inst("b", 0, 0)).instance(inst("a", 0, 0)),
//!     ObjectBuilder::new(12).instance(inst("t1", 10, 0)), // under "b"
//! ])?;
//! merge_missing(&mut global, costly);
//! assert_eq!(global.objects.len(), 2, "the pools once");
//! let names = prfmon::names::instance_names(&global, &global.objects[1]);
//! assert_eq!(names, ["b/t1"]);
//! # Ok::<(), prfdata_wire::error::DecodeError>(())
//! ```

use std::collections::HashMap;

use crate::names::InstanceNames;
use crate::namesakes::NameIndex;
use prfdata_wire::snapshot::{DataSnapshot, ObjectData};

/// Where an appended instance's parent is.
#[derive(Clone, Copy)]
enum Parent {
    /// No parent, or one in neither collection: left as it is.
    Untouched,
    /// In an object the first collection holds: its position there, if found.
    Kept(Option<u32>),
    /// In another appended object (its position in `added`), at this position of it.
    Added(u32, u32),
}

/// The PDH names of a parent object in both collections, to find a parent of the second in
/// the first by name.
struct ParentNames<'a> {
    /// The object in the second collection, whose positions the children name.
    theirs: InstanceNames<'a>,
    /// The object in the first collection.
    ours: InstanceNames<'a>,
    /// `ours` by name.
    index: NameIndex,
}

impl<'a> ParentNames<'a> {
    fn new(
        extra: &'a DataSnapshot,
        theirs: &'a ObjectData,
        base: &'a DataSnapshot,
        ours: &'a ObjectData,
    ) -> Self {
        let theirs = InstanceNames::new(extra, theirs);
        let ours = InstanceNames::new(base, ours);
        let index = NameIndex::new(ours.len(), &mut |i, out| ours.push_name(i, out));
        ParentNames {
            theirs,
            ours,
            index,
        }
    }

    /// The position in the first collection of the parent at `pos` in the second.
    fn find(&self, pos: usize) -> Option<u32> {
        if pos >= self.theirs.len() {
            return None;
        }
        let name = self.theirs.get(pos);
        let ours = &self.ours;
        self.index
            .find(&name, &mut |i, out| ours.push_name(i, out))
            .and_then(|p| u32::try_from(p).ok())
    }
}

/// Appends to `base` the objects of `extra` that `base` does not hold (by name index), each
/// object once, with their instances' parent links made to resolve in `base` (see the module
/// docs). `base`'s header and objects are left as they are.
///
/// # Examples
///
/// See the module docs.
pub fn merge_missing(base: &mut DataSnapshot, extra: DataSnapshot) {
    // The first object of each name index in `base` (as `sampler::offers` shows it).
    let mut in_base: HashMap<u32, usize> = HashMap::new();
    for (i, o) in base.objects.iter().enumerate() {
        in_base.entry(o.name_index).or_insert(i);
    }
    let mut added: Vec<usize> = Vec::new(); // positions in `extra.objects`
    let mut added_of: HashMap<u32, usize> = HashMap::new(); // name index → position in `added`
    for (i, o) in extra.objects.iter().enumerate() {
        if !in_base.contains_key(&o.name_index) && !added_of.contains_key(&o.name_index) {
            added_of.insert(o.name_index, added.len());
            added.push(i);
        }
    }
    if added.is_empty() {
        return;
    }
    let parents = find_parents(base, &extra, &added, &in_base, &added_of);
    let keep = drop_orphans(&parents);

    // New positions in the appended objects, then the objects themselves.
    let new_pos: Vec<Vec<u32>> = keep
        .iter()
        .map(|row| {
            let mut n = 0;
            row.iter()
                .map(|&k| {
                    let at = n;
                    n += u32::from(k);
                    at
                })
                .collect()
        })
        .collect();
    let mut extra_objects: Vec<Option<ObjectData>> = extra.objects.into_iter().map(Some).collect();
    for (a, &i) in added.iter().enumerate() {
        let Some(mut object) = extra_objects[i].take() else {
            continue;
        };
        let kept: Vec<(usize, u32)> = (0..object.instance_count())
            .filter(|&k| keep[a][k])
            .filter_map(|k| {
                let parent = match parents[a][k] {
                    Parent::Untouched => object.instance(k)?.parent_object_instance(),
                    Parent::Kept(found) => found.unwrap_or(0),
                    Parent::Added(o, p) => new_pos[o as usize][p as usize],
                };
                Some((k, parent))
            })
            .collect();
        let count = kept.len();
        object.keep_instances(kept);
        if object.has_instances() {
            object.num_instances = count as i32;
        }
        base.objects.push(object);
    }
}

/// Each appended instance's parent (`added`: positions in `extra.objects`), resolved against
/// `base` where `base` keeps the parent's object.
fn find_parents(
    base: &DataSnapshot,
    extra: &DataSnapshot,
    added: &[usize],
    in_base: &HashMap<u32, usize>,
    added_of: &HashMap<u32, usize>,
) -> Vec<Vec<Parent>> {
    let mut names_cache: HashMap<u32, Option<ParentNames<'_>>> = HashMap::new();
    let mut parents: Vec<Vec<Parent>> = Vec::with_capacity(added.len());
    for &i in added {
        let object = &extra.objects[i];
        let row = object
            .instances()
            .map(|inst| {
                let index = inst.def().parent_object_title_index.get();
                let pos = inst.parent_object_instance();
                if index == 0 {
                    Parent::Untouched
                } else if let Some(&a) = added_of.get(&index) {
                    Parent::Added(a as u32, pos)
                } else if let Some(&b) = in_base.get(&index) {
                    let names = names_cache.entry(index).or_insert_with(|| {
                        let theirs = first_of(extra, index)?;
                        Some(ParentNames::new(extra, theirs, base, &base.objects[b]))
                    });
                    match names {
                        Some(names) => Parent::Kept(names.find(pos as usize)),
                        None => Parent::Untouched,
                    }
                } else {
                    Parent::Untouched
                }
            })
            .collect();
        parents.push(row);
    }
    parents
}

/// Which appended instances are kept: children whose parent is missing are left out, then
/// their children, until nothing changes.
fn drop_orphans(parents: &[Vec<Parent>]) -> Vec<Vec<bool>> {
    let mut keep: Vec<Vec<bool>> = parents.iter().map(|row| vec![true; row.len()]).collect();
    loop {
        let mut changed = false;
        for a in 0..parents.len() {
            for k in 0..parents[a].len() {
                let orphan = match parents[a][k] {
                    Parent::Untouched => false,
                    Parent::Kept(found) => found.is_none(),
                    Parent::Added(o, p) => {
                        !keep[o as usize].get(p as usize).copied().unwrap_or(false)
                    }
                };
                if keep[a][k] && orphan {
                    keep[a][k] = false;
                    changed = true;
                }
            }
        }
        if !changed {
            return keep;
        }
    }
}

/// The first object of `snapshot` with name index `index`.
fn first_of(snapshot: &DataSnapshot, index: u32) -> Option<&ObjectData> {
    snapshot.objects.iter().find(|o| o.name_index == index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    use crate::names::instance_names;
    use prfdata_wire::build::ObjectBuilder;
    use prfdata_wire::snapshot::InstanceData;

    fn inst(name: &str, parent: u32, pos: u32) -> InstanceData {
        InstanceData {
            name: name.into(),
            unique_id: -1,
            parent_object_title_index: parent,
            parent_object_instance: pos,
            values: Vec::new(),
        }
    }

    fn object(index: u32, instances: Vec<InstanceData>) -> ObjectBuilder {
        instances.into_iter().fold(
            ObjectBuilder::new(index).with_instances(),
            ObjectBuilder::instance,
        )
    }

    fn snapshot(objects: Vec<ObjectBuilder>) -> DataSnapshot {
        let outputs: Vec<_> = objects.iter().map(ProviderOutput::from).collect();
        prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &outputs))
            .unwrap()
    }

    fn names(snap: &DataSnapshot, index: u32) -> Vec<String> {
        let object = snap
            .objects
            .iter()
            .find(|o| o.name_index == index)
            .expect("object present");
        instance_names(snap, object)
    }

    /// Global: pools, workers under them. By index: the costly tasks under workers, with the
    /// workers and pools their parents are in.
    fn collections(
        extra_pools: Vec<InstanceData>,
        extra_workers: Vec<InstanceData>,
        tasks: Vec<InstanceData>,
    ) -> DataSnapshot {
        snapshot(vec![
            object(10, extra_pools),
            object(12, extra_workers),
            object(14, tasks),
        ])
    }

    fn global() -> DataSnapshot {
        snapshot(vec![
            object(10, vec![inst("a", 0, 0), inst("b", 0, 0)]),
            object(12, vec![inst("w", 10, 0), inst("w", 10, 1)]),
        ])
    }

    #[test]
    fn a_parent_object_in_both_collections_is_kept_once() {
        let mut base = global();
        let extra = collections(
            vec![inst("a", 0, 0), inst("b", 0, 0)],
            vec![inst("w", 10, 0), inst("w", 10, 1)],
            vec![inst("t1", 12, 0), inst("t2", 12, 1), inst("t3", 12, 1)],
        );
        let expected = names(&extra, 14);
        merge_missing(&mut base, extra);
        let indexes: Vec<u32> = base.objects.iter().map(|o| o.name_index).collect();
        assert_eq!(indexes, [10, 12, 14]);
        assert_eq!(names(&base, 14), expected);
        assert_eq!(names(&base, 14), ["w/t1", "w/t2", "w/t3"]);
    }

    /// Regression: the child kept the parent position of its own collection, which named
    /// another parent in the kept copy when a worker was added between the two collections.
    #[test]
    fn children_follow_their_parent_when_positions_moved() {
        let mut base = global();
        // In the second collection a new worker "x" came first.
        let extra = collections(
            vec![inst("a", 0, 0), inst("b", 0, 0)],
            vec![inst("x", 10, 1), inst("w", 10, 0), inst("w", 10, 1)],
            vec![inst("t1", 12, 1), inst("t2", 12, 2)],
        );
        let before = names(&extra, 14);
        assert_eq!(before, ["w/t1", "w/t2"]);
        merge_missing(&mut base, extra);
        let tasks = &base.objects[2];
        let parents: Vec<u32> = tasks
            .instances()
            .map(|t| t.parent_object_instance())
            .collect();
        assert_eq!(
            parents,
            [0, 1],
            "re-pointed at a/w and b/w in the kept workers"
        );
        // Same PDH names; the parents they point at are a/w and b/w.
        assert_eq!(names(&base, 14), before);
    }

    #[test]
    fn a_child_whose_parent_the_first_collection_lacks_is_left_out_with_its_children() {
        let mut base = global();
        let extra = snapshot(vec![
            object(10, vec![inst("a", 0, 0), inst("b", 0, 0)]),
            object(12, vec![inst("w", 10, 0), inst("new", 10, 1)]),
            object(14, vec![inst("t1", 12, 0), inst("t2", 12, 1)]),
            object(16, vec![inst("s1", 14, 1), inst("s0", 14, 0)]),
        ]);
        // The tasks' object and the steps' are appended; t2's parent "b/new" is not in Global.
        merge_missing(&mut base, extra);
        assert_eq!(names(&base, 14), ["w/t1"]);
        assert_eq!(names(&base, 16), ["t1/s0"], "s1 was under t2");
        let steps = &base.objects[3];
        assert_eq!(steps.num_instances, 1);
        assert_eq!(steps.instance(0).unwrap().parent_object_instance(), 0);
    }

    #[test]
    fn objects_only_in_the_second_collection_are_appended_unchanged() {
        let mut base = snapshot(vec![object(10, vec![inst("a", 0, 0)])]);
        let extra = snapshot(vec![
            object(20, vec![inst("p", 0, 0), inst("q", 0, 0)]),
            object(22, vec![inst("c", 20, 1)]),
        ]);
        merge_missing(&mut base, extra.clone());
        assert_eq!(&base.objects[1..], &extra.objects[..]);
    }
}

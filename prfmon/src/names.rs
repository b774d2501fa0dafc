//! Names for what a collection holds: object and counter names and explain texts from
//! `Perflib\<lang>` `Counter` / `Help` by index, and instance names as PDH shows them.
//!
//! PDH names an instance `parent/child` when its `ParentObjectTitleIndex` names an object in
//! the same collection (the parent is that object's instance at `ParentObjectInstance`), and
//! tells instances with the same full name apart by position: the first is `name`, the next
//! `name#1`, then `name#2`. An instance with a unique id and no name is named by its id.
//!
//! # Examples
//!
//! ```
//! use prfmon::names::Names;
//! let mut names = Names::default();
//! names.counter.insert(1848, "Jobs".into());
//! assert_eq!(names.name(1848), "Jobs");
//! assert_eq!(names.name(1850), "#1850");
//! ```

use std::collections::{BTreeMap, HashMap};

use prfdata_registry::{perflib, Registry, RegistryError};

use crate::decode::{DataSnapshot, InstanceData, ObjectData};

/// One language's counter names and explain texts, by index.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
/// let names = prfmon::names::Names::load(&reg, "009")?;
/// assert!(names.counter.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Names {
    /// `Counter`: even indexes → names.
    pub counter: BTreeMap<u32, String>,
    /// `Help`: odd indexes → explain texts.
    pub help: BTreeMap<u32, String>,
}

impl Names {
    /// Reads `Perflib\<lang>` (`lang` as `009`) from `registry`.
    ///
    /// # Examples
    ///
    /// See [`Names`].
    pub fn load<R: Registry + ?Sized>(registry: &R, lang: &str) -> Result<Self, RegistryError> {
        let text = perflib::read_counter_text(registry, lang)?;
        Ok(Self {
            counter: text.counter,
            help: text.help,
        })
    }

    /// The name with this index, or `#index` if there is none.
    ///
    /// # Examples
    ///
    /// See the module docs.
    pub fn name(&self, index: u32) -> String {
        self.counter
            .get(&index)
            .cloned()
            .unwrap_or_else(|| format!("#{index}"))
    }

    /// The explain text with this index, or an empty string.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut names = prfmon::names::Names::default();
    /// names.help.insert(1849, "Jobs processed.".into());
    /// assert_eq!(names.help(1849), "Jobs processed.");
    /// assert_eq!(names.help(1851), "");
    /// ```
    pub fn help(&self, index: u32) -> String {
        self.help.get(&index).cloned().unwrap_or_default()
    }

    /// The index of the object or counter name `name` (case-insensitive), or `name` itself
    /// if it is a number.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut names = prfmon::names::Names::default();
    /// names.counter.insert(1848, "Jobs".into());
    /// assert_eq!(names.index_of("jobs"), Some(1848));
    /// assert_eq!(names.index_of("238"), Some(238));
    /// ```
    pub fn index_of(&self, name: &str) -> Option<u32> {
        if let Ok(n) = name.trim().parse() {
            return Some(n);
        }
        self.counter
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name.trim()))
            .map(|(&i, _)| i)
    }
}

/// The PDH-style names of `object`'s instances, in order (see the module docs).
///
/// # Examples
///
/// ```
/// use prfmon::decode::{DataSnapshot, InstanceData, ObjectData};
/// let inst = |name: &str| InstanceData { name: name.into(), unique_id: -1, ..Default::default() };
/// let object = ObjectData {
///     num_instances: 3,
///     instances: vec![inst("a"), inst("b"), inst("a")],
///     ..Default::default()
/// };
/// let names = prfmon::names::instance_names(&DataSnapshot::default(), &object);
/// assert_eq!(names, ["a", "b", "a#1"]);
/// ```
pub fn instance_names(snapshot: &DataSnapshot, object: &ObjectData) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    object
        .instances
        .iter()
        .map(|inst| {
            let full = full_name(snapshot, inst);
            let n = seen.entry(full.clone()).or_insert(0);
            let shown = if *n == 0 { full } else { format!("{full}#{n}") };
            *n += 1;
            shown
        })
        .collect()
}

/// `name`, or the unique id when the name is empty.
fn own_name(inst: &InstanceData) -> String {
    if inst.name.is_empty() && inst.unique_id >= 0 {
        inst.unique_id.to_string()
    } else {
        inst.name.clone()
    }
}

/// `parent/child` when the parent is found in the snapshot, else the instance's own name.
fn full_name(snapshot: &DataSnapshot, inst: &InstanceData) -> String {
    let name = own_name(inst);
    if inst.parent_object_title_index == 0 {
        return name;
    }
    let parent = snapshot
        .objects
        .iter()
        .find(|o| o.name_index == inst.parent_object_title_index)
        .and_then(|o| o.instances.get(inst.parent_object_instance as usize));
    match parent {
        Some(p) => format!("{}/{name}", own_name(p)),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(name: &str, parent: u32, pos: u32) -> InstanceData {
        InstanceData {
            name: name.into(),
            unique_id: -1,
            parent_object_title_index: parent,
            parent_object_instance: pos,
            values: Vec::new(),
        }
    }

    #[test]
    fn children_are_named_under_their_parents_and_duplicates_numbered() {
        let parents = ObjectData {
            name_index: 1848,
            num_instances: 2,
            instances: vec![inst("app", 0, 0), inst("svc", 0, 0)],
            ..Default::default()
        };
        let children = ObjectData {
            name_index: 1860,
            num_instances: 4,
            instances: vec![
                inst("worker", 1848, 0),
                inst("worker", 1848, 1),
                inst("worker", 1848, 0),
                inst("worker", 1848, 0),
            ],
            ..Default::default()
        };
        let snap = DataSnapshot {
            objects: vec![parents, children],
            ..Default::default()
        };
        assert_eq!(
            instance_names(&snap, &snap.objects[1]),
            ["app/worker", "svc/worker", "app/worker#1", "app/worker#2"]
        );
    }

    #[test]
    fn a_parent_that_is_not_collected_leaves_the_plain_name() {
        let obj = ObjectData {
            num_instances: 1,
            instances: vec![inst("x", 4242, 0)],
            ..Default::default()
        };
        assert_eq!(instance_names(&DataSnapshot::default(), &obj), ["x"]);
    }
}

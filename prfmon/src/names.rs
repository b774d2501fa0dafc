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

use prfdata_registry::{perflib, Hive, Registry, RegistryError};

use prfdata_wire::snapshot::{DataSnapshot, Instance, ObjectData};

mod map;
pub(crate) mod near;
pub mod objects;

pub use map::NameMap;
pub use near::{distance, near, nearness};

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
    pub counter: NameMap,
    /// `Help`: odd indexes → explain texts.
    pub help: NameMap,
}

impl Names {
    /// Reads `Perflib\<lang>` (`lang` as `009`) from `registry`.
    pub fn load<R: Registry + ?Sized>(registry: &R, lang: &str) -> Result<Self, RegistryError> {
        Self::from_hive(&registry.snapshot()?, lang)
    }

    /// Reads `Perflib\<lang>` from `hive`, a registry already read.
    ///
    /// # Examples
    ///
    /// ```
    /// let names = prfmon::names::Names::from_hive(&prfdata_registry::perflib::new_hive(), "009")?;
    /// assert!(names.help.is_empty());
    /// # Ok::<(), prfdata_registry::RegistryError>(())
    /// ```
    pub fn from_hive(hive: &Hive, lang: &str) -> Result<Self, RegistryError> {
        let text = perflib::counter_text(hive, lang)?;
        Ok(Self {
            counter: text.counter.into_iter().collect(),
            help: text.help.into_iter().collect(),
        })
    }

    /// The name with this index, or `#index` if there is none.
    pub fn name(&self, index: u32) -> String {
        self.counter
            .get(index)
            .map_or_else(|| format!("#{index}"), str::to_owned)
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
        self.help.get(index).unwrap_or_default().to_owned()
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
            .map(|(i, _)| i)
    }
}

/// The PDH-style names of an object's instances (see the [module docs](self)), decided with
/// one number per instance ([`crate::namesakes`]) and spelt out one at a time: a million
/// instances cost 4 MB here, not a million strings.
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::ObjectBuilder;
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfdata_wire::snapshot::InstanceData;
/// use prfmon::names::InstanceNames;
///
/// let inst = |name: &str| InstanceData { name: name.into(), unique_id: -1, ..Default::default() };
/// let object = ObjectBuilder::new(10).instance(inst("a")).instance(inst("b")).instance(inst("a"));
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[ProviderOutput::from(&object)]))?;
/// let names = InstanceNames::new(&snap, &snap.objects[0]);
/// assert_eq!(names.get(2), "a#1");
/// assert_eq!(names.iter().collect::<Vec<_>>(), ["a", "b", "a#1"]);
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct InstanceNames<'a> {
    snapshot: &'a DataSnapshot,
    object: &'a ObjectData,
    /// Per instance, how many earlier instances have the same full name.
    numbers: Vec<u32>,
}

impl<'a> InstanceNames<'a> {
    /// The names of `object`'s instances (`object` one of `snapshot`'s, where parents are
    /// found).
    pub fn new(snapshot: &'a DataSnapshot, object: &'a ObjectData) -> Self {
        let numbers = crate::namesakes::numbers(object.instance_count(), |i, out| {
            if let Some(inst) = object.instance(i) {
                push_full_name(snapshot, &inst, out);
            }
        });
        InstanceNames {
            snapshot,
            object,
            numbers,
        }
    }

    /// The number of instances.
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = prfdata_wire::snapshot::DataSnapshot::default();
    /// let object = prfdata_wire::snapshot::ObjectData::default();
    /// assert!(prfmon::names::InstanceNames::new(&snap, &object).is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.numbers.len()
    }

    /// Whether there are no instances. See [`InstanceNames::len`].
    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }

    /// How many earlier instances have the full name of instance `index` (its PDH `#n`; 0
    /// for the first).
    ///
    /// # Examples
    ///
    /// ```
    /// let snap = prfdata_wire::snapshot::DataSnapshot::default();
    /// let object = prfdata_wire::snapshot::ObjectData::default();
    /// assert_eq!(prfmon::names::InstanceNames::new(&snap, &object).number(0), 0);
    /// ```
    pub fn number(&self, index: usize) -> u32 {
        self.numbers.get(index).copied().unwrap_or(0)
    }

    /// Appends the name of instance `index` to `out`: `parent/child`, then `#n` for the
    /// second and later instances of that full name.
    pub fn push_name(&self, index: usize, out: &mut String) {
        let Some(inst) = self.object.instance(index) else {
            return;
        };
        push_full_name(self.snapshot, &inst, out);
        match self.numbers.get(index) {
            Some(&n) if n > 0 => {
                out.push('#');
                out.push_str(&n.to_string());
            }
            _ => {}
        }
    }

    /// The name of instance `index`.
    pub fn get(&self, index: usize) -> String {
        let mut out = String::new();
        self.push_name(index, &mut out);
        out
    }

    /// Every name, in instance order.
    pub fn iter(&self) -> impl Iterator<Item = String> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// The PDH-style names of `object`'s instances, in order (see the module docs): every name at
/// once, for a small object; [`InstanceNames`] spells them one at a time.
///
/// # Examples
///
/// ```
/// use prfdata_wire::build::ObjectBuilder;
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfdata_wire::snapshot::InstanceData;
/// let inst = |name: &str| InstanceData { name: name.into(), unique_id: -1, ..Default::default() };
/// let object = ObjectBuilder::new(10).instance(inst("a")).instance(inst("b")).instance(inst("a"));
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[ProviderOutput::from(&object)]))?;
/// assert_eq!(prfmon::names::instance_names(&snap, &snap.objects[0]), ["a", "b", "a#1"]);
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
pub fn instance_names(snapshot: &DataSnapshot, object: &ObjectData) -> Vec<String> {
    InstanceNames::new(snapshot, object).iter().collect()
}

/// Appends `parent/child` when the parent is found in the snapshot, else the instance's own
/// name.
fn push_full_name(snapshot: &DataSnapshot, inst: &Instance<'_>, out: &mut String) {
    if let Some(parent) = snapshot.parent(inst) {
        out.push_str(&parent.own_name());
        out.push('/');
    }
    out.push_str(&inst.own_name());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datablock::{build_data_block, CollectionTimes, ProviderOutput};
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

    fn snapshot(objects: Vec<ObjectBuilder>) -> DataSnapshot {
        let outputs: Vec<_> = objects.iter().map(ProviderOutput::from).collect();
        prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &outputs))
            .unwrap()
    }

    #[test]
    fn children_are_named_under_their_parents_and_duplicates_numbered() {
        let parents = ObjectBuilder::new(1848)
            .instance(inst("app", 0, 0))
            .instance(inst("svc", 0, 0));
        let children = ObjectBuilder::new(1860)
            .instance(inst("worker", 1848, 0))
            .instance(inst("worker", 1848, 1))
            .instance(inst("worker", 1848, 0))
            .instance(inst("worker", 1848, 0));
        let snap = snapshot(vec![parents, children]);
        assert_eq!(
            instance_names(&snap, &snap.objects[1]),
            ["app/worker", "svc/worker", "app/worker#1", "app/worker#2"]
        );
    }

    #[test]
    fn a_parent_that_is_not_collected_leaves_the_plain_name() {
        let snap = snapshot(vec![ObjectBuilder::new(10).instance(inst("x", 4242, 0))]);
        assert_eq!(instance_names(&snap, &snap.objects[0]), ["x"]);
    }

    #[test]
    fn an_instance_without_a_name_is_named_by_its_unique_id() {
        let unnamed = InstanceData {
            unique_id: 42,
            ..inst("", 0, 0)
        };
        let snap = snapshot(vec![ObjectBuilder::new(10)
            .instance(unnamed.clone())
            .instance(unnamed)]);
        assert_eq!(instance_names(&snap, &snap.objects[0]), ["42", "42#1"]);
    }
}

//! One machine's collections and the facts to read them with: a [`Session`] over the local
//! collector or another machine's `prfmon serve` (`remote::Remote`, with the `remote`
//! feature), and its [`Machine`] (names, scale factors, apps' name ranges, disabled
//! services). A local session reads the registry once to open, and again only when the
//! registry's stamp moved ([`Facts`]); every command takes what it needs from it.
//!
//! # Examples
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let registry = prfdata_registry::FileRegistry::open(dir.path())?;
//! let mut session = prfmon::session::Session::local(registry, Default::default(), "009")?;
//! assert!(session.machine().names.counter.is_empty());
//! let (snapshot, _) = session.snapshot("Global")?;
//! assert!(snapshot.objects.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod facts;

pub use facts::{Contents, Facts, NAMES_RECHECK};

use std::collections::BTreeMap;

use prfdata_registry::service::OBJECT_LIST;
use prfdata_registry::service::{services_in, DYNAMIC_FINGERPRINT};
use prfdata_registry::StoreStamp;
use prfdata_registry::{FileRegistry, Hive, PerformanceService, Registry, RegistryError, Value};

use crate::collector::{Collection, Collector, CollectorOptions};
use crate::factor::Factors;
use crate::lease::AppRanges;
use crate::merge::merge_missing;
use crate::names::Names;
use crate::units::Units;
use prfdata_wire::error::DecodeError;
use prfdata_wire::snapshot::DataSnapshot;

/// Why a session gave no collection or no names.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The local registry could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The remote machine did not answer, or answered with an error.
    #[cfg(feature = "remote")]
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
    /// A collection is not a PERF_DATA_BLOCK.
    #[error("the collection does not decode: {0}")]
    Decode(#[from] DecodeError),
}

/// What one machine says about its counters, from one read of its registry: the names of one
/// language, the Windows 95 stat servers' scale factors, the apps' name ranges (for watch
/// leases) and the services whose providers are disabled.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// The names and explain texts.
    pub names: Names,
    /// The scale factors.
    pub factors: Factors,
    /// The units counters declare for their raw values (`/metrics` names families for them);
    /// none known for a remote machine (its own `serve` exports its metrics).
    pub units: Units,
    /// The apps' name ranges: none for a remote machine, whose `serve` holds leases on all it
    /// exports.
    pub apps: AppRanges,
    /// The services whose `Disable Performance Counters` is set (none known for a remote
    /// machine).
    pub disabled: Vec<PerformanceService>,
    /// The objects each installed service lists in its `Object List` (name indexes, as install
    /// records them): which names are objects while no process of the app runs. A service
    /// that lists none is left out (none known for a remote machine).
    pub objects: BTreeMap<String, Vec<u32>>,
}

impl Machine {
    /// The facts in `hive` with names of `lang`. Names that cannot be read are logged and left
    /// empty (numbers are shown); factors, units and services that cannot be read are left
    /// out.
    ///
    /// # Examples
    ///
    /// ```
    /// let hive = prfdata_registry::perflib::new_hive();
    /// assert!(prfmon::session::Machine::from_hive(&hive, "009").disabled.is_empty());
    /// ```
    pub fn from_hive(hive: &Hive, lang: &str) -> Machine {
        let names = Names::from_hive(hive, lang).unwrap_or_else(|e| {
            log::warn!("no names for language {lang}: {e}");
            Names::default()
        });
        let services = services_in(hive).unwrap_or_default();
        Machine {
            names,
            factors: Factors::from_hive(hive).unwrap_or_default(),
            units: Units::from_hive(hive).unwrap_or_default(),
            apps: AppRanges::from_services(&services),
            objects: object_lists(hive, &services),
            disabled: services.into_iter().filter(|s| s.disabled).collect(),
        }
    }

    /// [`Machine::from_hive`] of one read of `registry`.
    ///
    /// # Errors
    ///
    /// The registry cannot be read.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let registry = prfdata_registry::FileRegistry::open(dir.path())?;
    /// assert!(prfmon::session::Machine::load(&registry, "009")?.names.counter.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load<R: Registry + ?Sized>(registry: &R, lang: &str) -> Result<Machine, RegistryError> {
        Ok(Machine::from_hive(&registry.snapshot()?, lang))
    }
}

/// The `Object List` of each of `services` in `hive` that has one: its numbers (anything else
/// in the value is skipped, and a value that is not a string lists nothing). A service with
/// names added at run time (`Dynamic Fingerprint`) is left out: its run-time objects are not
/// in the list, which then no longer tells objects from counters.
fn object_lists(hive: &Hive, services: &[PerformanceService]) -> BTreeMap<String, Vec<u32>> {
    services
        .iter()
        .filter_map(|service| {
            let perf = prfdata_registry::paths::performance(&service.name);
            if let Ok(Some(_)) = hive.value(&perf, DYNAMIC_FINGERPRINT) {
                return None;
            }
            let Ok(Some(Value::Sz(list))) = hive.value(&perf, OBJECT_LIST) else {
                return None;
            };
            let indexes: Vec<u32> = list
                .split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect();
            Some((service.name.clone(), indexes))
        })
        .collect()
}

/// Where collections come from (one per session: the size difference does not matter).
#[allow(clippy::large_enum_variant)]
enum Source {
    Local(Collector<FileRegistry>),
    #[cfg(feature = "remote")]
    Remote(crate::remote::Remote),
}

impl Source {
    fn collect(&mut self, query: &str) -> Result<Collection, SessionError> {
        match self {
            Source::Local(c) => Ok(c.collect_with_services(query)),
            #[cfg(feature = "remote")]
            Source::Remote(r) => Ok(r.collect_with_services(query)?),
        }
    }

    /// What tells cheaply whether the facts changed: the local registry's stamp (`None` for a
    /// remote machine).
    fn stamp(&self) -> Option<StoreStamp> {
        match self {
            Source::Local(c) => c.registry().stamp(),
            #[cfg(feature = "remote")]
            Source::Remote(_) => None,
        }
    }

    /// The machine's facts, read now: one registry read, or `/names` and `/factors`.
    fn machine(&mut self, lang: &str) -> Result<Machine, SessionError> {
        match self {
            Source::Local(c) => Ok(Machine::load(c.registry(), lang)?),
            #[cfg(feature = "remote")]
            Source::Remote(r) => Ok(Machine {
                names: r.names(lang)?,
                factors: r.factors()?,
                ..Machine::default()
            }),
        }
    }
}

/// One machine's collections and facts (see the [module docs](self)).
pub struct Session {
    source: Source,
    facts: Facts,
    /// The remote machine's label, its collections' `SystemName` (so that paths naming it
    /// match).
    label: Option<String>,
    /// Object indexes [`Session::sample`] collects after `Global` (objects `Global` lacks),
    /// and the facts' generation and `Global`'s contents they were decided at.
    extra: Option<String>,
    extra_at: Option<(u64, Contents)>,
}

impl Session {
    /// The local machine: one read of `registry` gives the [`Machine`] and the collector's
    /// services; the collector opens its providers with `options`.
    ///
    /// # Errors
    ///
    /// The registry cannot be read.
    pub fn local(
        registry: FileRegistry,
        options: CollectorOptions,
        lang: &str,
    ) -> Result<Session, SessionError> {
        // The stamp first: a change during the read is read again at the first check.
        let stamp = registry.stamp();
        let hive = registry.snapshot()?;
        let machine = Machine::from_hive(&hive, lang);
        let collector = Collector::from_hive(registry, &hive, stamp, options)?;
        Ok(Session::new(
            Source::Local(collector),
            Facts::new(lang, stamp, machine),
            None,
        ))
    }

    /// Another machine through its `prfmon serve` (`client`), its collections' `SystemName`
    /// replaced by `label`; its names and factors read now.
    ///
    /// # Errors
    ///
    /// The names or factors cannot be read.
    #[cfg(feature = "remote")]
    pub fn remote(
        client: crate::remote::Remote,
        label: String,
        lang: &str,
    ) -> Result<Session, SessionError> {
        let mut source = Source::Remote(client);
        let machine = source.machine(lang)?;
        Ok(Session::new(
            source,
            Facts::new(lang, None, machine),
            Some(label),
        ))
    }

    fn new(source: Source, facts: Facts, label: Option<String>) -> Session {
        Session {
            source,
            facts,
            label,
            extra: None,
            extra_at: None,
        }
    }

    /// The machine's facts as last read.
    pub fn machine(&self) -> &Machine {
        self.facts.machine()
    }

    /// How many times the facts changed since the session opened: a consumer that keeps
    /// something made from them compares it with the one it was made at.
    pub fn generation(&self) -> u64 {
        self.facts.generation()
    }

    /// Whether the facts were read again since `seen` (a [`Session::generation`]), which is
    /// then brought up to date.
    pub fn changed_since(&self, seen: &mut u64) -> bool {
        let now = self.generation();
        std::mem::replace(seen, now) != now
    }

    /// Closes the collector (providers' Close, host processes stopped) or the connection, and
    /// gives back the facts.
    pub fn close(self) -> Machine {
        self.facts.into_machine()
    }

    /// One collection of `query` (`Global`, `Costly` or object name indexes) with the service
    /// of each object.
    ///
    /// # Errors
    ///
    /// A remote machine did not answer.
    pub fn collect(&mut self, query: &str) -> Result<Collection, SessionError> {
        self.source.collect(query)
    }

    /// One collection of `query`, decoded (the bytes kept and read in place), its
    /// `SystemName` the remote's label, with what it holds ([`Contents`]).
    ///
    /// # Errors
    ///
    /// As [`Session::collect`], or the collection does not decode.
    pub fn snapshot(&mut self, query: &str) -> Result<(DataSnapshot, Contents), SessionError> {
        let collection = self.collect(query)?;
        let mut snapshot = prfdata_wire::snapshot::decode_owned(collection.bytes)?;
        if let Some(label) = &self.label {
            snapshot.system_name = label.clone();
        }
        let contents = Contents::of(&snapshot, &collection.services);
        Ok((snapshot, contents))
    }

    /// After a collection that held `contents`: reads the facts again if they may have
    /// changed ([`Facts`]); true if they did.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let registry = prfdata_registry::FileRegistry::open(dir.path())?;
    /// let mut session = prfmon::session::Session::local(registry.clone(), Default::default(), "009")?;
    ///
    /// // lodctr's work: a name for index 1848.
    /// prfdata_testkit::sandbox::write_names(&registry, 1848, &[("Jobs".into(), "Jobs done.".into())]);
    /// std::thread::sleep(prfmon::collector::service::REGISTRY_CHECK);
    /// let (_, contents) = session.snapshot("Global")?;
    /// assert!(session.follow(contents), "the names changed");
    /// assert_eq!(session.machine().names.name(1848), "Jobs");
    /// assert_eq!(session.generation(), 1);
    /// assert!(!session.follow(contents), "nothing more");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn follow(&mut self, contents: Contents) -> bool {
        self.facts.follow(&mut self.source, contents)
    }

    /// One sample for consumers of counter paths naming `objects`: `Global`, after which the
    /// facts are followed, with the objects named that it lacks (costly objects) collected by
    /// index and merged in ([`merge_missing`]). Which those are is decided again when the
    /// facts or `Global`'s objects change.
    ///
    /// # Errors
    ///
    /// As [`Session::snapshot`].
    pub fn sample(&mut self, objects: &[String]) -> Result<DataSnapshot, SessionError> {
        let (mut snapshot, contents) = self.snapshot("Global")?;
        self.follow(contents);
        let at = (self.generation(), contents);
        if self.extra_at != Some(at) {
            self.extra = missing(&self.machine().names, objects, &snapshot);
            self.extra_at = Some(at);
        }
        if let Some(extra) = self.extra.clone() {
            let (more, _) = self.snapshot(&extra)?;
            merge_missing(&mut snapshot, more);
        }
        Ok(snapshot)
    }
}

/// The indexes of `objects` (that `names` knows) that `global` lacks, as a query.
fn missing(names: &Names, objects: &[String], global: &DataSnapshot) -> Option<String> {
    let mut indexes: Vec<u32> = Vec::new();
    for index in objects.iter().filter_map(|o| names.index_of(o)) {
        if !global.objects.iter().any(|o| o.name_index == index) && !indexes.contains(&index) {
            indexes.push(index);
        }
    }
    let extra: Vec<String> = indexes.iter().map(u32::to_string).collect();
    (!extra.is_empty()).then(|| extra.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_registry::install::{install_in, CounterNames, CounterSet, InstallOptions};
    use prfdata_registry::install::{ObjectNames, Text};

    /// An app that installed one object and one counter.
    fn installed(dir: &std::path::Path) -> FileRegistry {
        let registry = FileRegistry::open(dir.join("registry")).expect("a registry");
        let counter = CounterNames {
            symbol: "C".into(),
            offset: 2,
            texts: vec![Text::new("009", "Done", "d")],
            factor: None,
            unit: None,
        };
        let object = ObjectNames {
            symbol: "O".into(),
            offset: 0,
            texts: vec![Text::new("009", "Jobs", "o")],
            counters: vec![counter],
        };
        let set = CounterSet {
            app: "Listed".into(),
            objects: vec![object],
            fingerprint: None,
        };
        let options = InstallOptions {
            library: "/x.so".into(),
            ini_dir: dir.into(),
            replace: false,
        };
        install_in(&registry, &set, &options).expect("install");
        registry
    }

    #[test]
    fn the_installed_objects_are_read_unless_names_were_added_at_run_time() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let registry = installed(dir.path());
        let machine = Machine::load(&registry, "009").expect("the facts");
        let first = machine.names.index_of("Jobs").expect("the object's name");
        assert_eq!(machine.objects.get("Listed"), Some(&vec![first]));

        // An object added at run time is not in the Object List: the list no longer tells
        // every object, so none of it is taken as the whole.
        let names = [CounterNames {
            symbol: "R".into(),
            offset: 4,
            texts: vec![Text::new("009", "Run-time object", "r")],
            factor: None,
            unit: None,
        }];
        prfdata_registry::register_runtime_names(&registry, "Listed", 2, &names, Some(1))
            .expect("run-time names");
        let machine = Machine::load(&registry, "009").expect("the facts");
        assert_eq!(machine.objects.get("Listed"), None);
    }
}

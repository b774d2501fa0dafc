//! The names that go with a source's collections, kept current while a consumer runs for long
//! ([`SourceNames`]): an app installed, uninstalled or renamed after `typeperf` or `watch`
//! started is named as the source names it now, without a restart.

use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use prfdata_registry::StoreStamp;

use super::PerfSource;
use crate::collector::service::RegistryWatch;
use crate::decode::DataSnapshot;
use crate::factor::Factors;
use crate::lease::AppRanges;
use crate::names::Names;

/// How often at most the names of a source that gives no stamp (a remote machine) are read
/// again while its collections hold the same objects: a rename that keeps every index is seen
/// within this, for one `/names` and one `/factors` request per interval (a few kilobytes per
/// app; a sample every second costs one `/perfdata` each, ten times as many requests).
pub const NAMES_RECHECK: Duration = Duration::from_secs(10);

/// What a collection holds, in brief: a hash of its objects' name indexes and the service of
/// each, in order (not their instances or values). Collections that differ in it hold other
/// objects or the same objects from other services.
///
/// # Examples
///
/// ```
/// use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
/// use prfmon::source::Contents;
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfmon::decode::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let app = Contents::of(&snap, &["App".into()]);
/// assert_eq!(app, Contents::of(&snap, &["App".into()]));
/// assert_ne!(app, Contents::of(&snap, &["Other".into()]));
/// assert_ne!(app, Contents::of(&prfmon::decode::DataSnapshot::default(), &[]));
/// # Ok::<(), prfmon::decode::DecodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contents(u64);

impl Contents {
    /// The contents of `snapshot`, whose objects came from `services` (one per object, as
    /// [`crate::collector::Collection::services`] lists them; fewer or none if unknown).
    ///
    /// # Examples
    ///
    /// See [`Contents`].
    pub fn of(snapshot: &DataSnapshot, services: &[String]) -> Contents {
        let mut hasher = std::hash::DefaultHasher::new();
        snapshot.objects.len().hash(&mut hasher);
        for object in &snapshot.objects {
            object.name_index.hash(&mut hasher);
        }
        services.hash(&mut hasher);
        Contents(hasher.finish())
    }
}

/// A source's names, scale factors and apps' name ranges, read again when they may have
/// changed.
///
/// # When the names are read again
///
/// | source | asked at most every | read again when |
/// |---|---|---|
/// | local registry ([`PerfSource::names_stamp`] gives a stamp) | [`REGISTRY_CHECK`](crate::collector::service::REGISTRY_CHECK) (100 ms), one `stat` | the registry's stamp moved since the names were read |
/// | a remote machine (no stamp) | the same, nothing asked | the collections' [`Contents`] (objects and their services) changed, or [`NAMES_RECHECK`] passed since the last read |
///
/// An app installed or uninstalled on a remote machine changes what its collections hold, so
/// its names follow at the next collection; a rename that keeps every object index and
/// service (a reinstall over the same range) is followed within [`NAMES_RECHECK`]. The scale
/// factors and the apps' name ranges are read with the names. A read that fails keeps what was
/// read before (logged once until a read succeeds again).
///
/// # Examples
///
/// ```
/// use prfdata_registry::FileRegistry;
/// use prfmon::collector::Collector;
/// use prfmon::source::{Contents, PerfSource, SourceNames};
///
/// let dir = tempfile::tempdir()?;
/// let registry = FileRegistry::open(dir.path())?;
/// let mut source = Collector::open(registry.clone(), Default::default())?;
/// let mut names = SourceNames::read(&mut source, "009")?;
/// assert!(names.names().counter.is_empty());
///
/// // lodctr's work: a name for index 1848.
/// prfdata_testkit::sandbox::write_names(&registry, 1848, &[("Jobs".into(), "Jobs done.".into())]);
/// std::thread::sleep(prfmon::collector::service::REGISTRY_CHECK);
/// let empty = Contents::of(&Default::default(), &[]);
/// assert!(names.follow(&mut source, empty), "the names changed");
/// assert_eq!(names.names().name(1848), "Jobs");
/// assert_eq!(names.generation(), 1);
/// assert!(!names.follow(&mut source, empty), "nothing more");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SourceNames {
    lang: String,
    names: Names,
    factors: Factors,
    apps: AppRanges,
    generation: u64,
    /// When the source was last asked, and the stamp the names were read at.
    watch: RegistryWatch,
    /// What the collections held at the last check (sources without a stamp).
    contents: Option<Contents>,
    /// When the names were last read.
    read: Instant,
    /// Whether the last read failed (logged once until one succeeds).
    failing: bool,
}

impl SourceNames {
    /// What was read of the source already: its names of language `lang`, its scale factors
    /// and apps' name ranges, read at `stamp` (the source's [`PerfSource::names_stamp`] taken
    /// before they were read, so that a change during the read is read again).
    ///
    /// # Examples
    ///
    /// ```
    /// let names = prfmon::source::SourceNames::new("009", None, Default::default(),
    ///     Default::default(), Default::default());
    /// assert_eq!(names.generation(), 0);
    /// ```
    pub fn new(
        lang: &str,
        stamp: Option<StoreStamp>,
        names: Names,
        factors: Factors,
        apps: AppRanges,
    ) -> Self {
        SourceNames {
            lang: lang.to_owned(),
            names,
            factors,
            apps,
            generation: 0,
            watch: RegistryWatch::new(stamp),
            contents: None,
            read: Instant::now(),
            failing: false,
        }
    }

    /// Reads the names of language `lang`, the scale factors and the apps' name ranges from
    /// `source`.
    ///
    /// # Errors
    ///
    /// The names or the factors cannot be read.
    ///
    /// # Examples
    ///
    /// See [`SourceNames`].
    pub fn read(source: &mut dyn PerfSource, lang: &str) -> Result<Self, super::SourceError> {
        let stamp = source.names_stamp();
        let names = source.names(lang)?;
        let factors = source.factors()?;
        let apps = source.app_ranges();
        Ok(SourceNames::new(lang, stamp, names, factors, apps))
    }

    /// The names of counters and objects.
    ///
    /// # Examples
    ///
    /// See [`SourceNames`].
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The Windows 95 stat servers' scale factors.
    ///
    /// # Examples
    ///
    /// See [`SourceNames::new`].
    pub fn factors(&self) -> &Factors {
        &self.factors
    }

    /// The apps' name ranges, for watch leases.
    ///
    /// # Examples
    ///
    /// See [`SourceNames::new`].
    pub fn apps(&self) -> &AppRanges {
        &self.apps
    }

    /// How many times what was read changed since [`SourceNames::new`]: a consumer that keeps
    /// something made from the names compares it with the one it was made at.
    ///
    /// # Examples
    ///
    /// See [`SourceNames`].
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// After a collection that held `contents`: reads the names, factors and app ranges again
    /// if they may have changed (see [`SourceNames`]); true if they did.
    ///
    /// # Examples
    ///
    /// See [`SourceNames`].
    pub fn follow(&mut self, source: &mut dyn PerfSource, contents: Contents) -> bool {
        if !self.watch.due() {
            return false;
        }
        let stamp = source.names_stamp();
        let seen = self.contents.replace(contents);
        let stale = match stamp {
            Some(_) => self.watch.moved(stamp),
            None => {
                seen.is_some_and(|seen| seen != contents) || self.read.elapsed() >= NAMES_RECHECK
            }
        };
        stale && self.read_again(source, stamp)
    }

    /// Reads everything again (the source's stamp `stamp` taken before); true if anything
    /// changed.
    fn read_again(&mut self, source: &mut dyn PerfSource, stamp: Option<StoreStamp>) -> bool {
        self.read = Instant::now();
        let fresh = source
            .names(&self.lang)
            .and_then(|names| Ok((names, source.factors()?)));
        let (names, factors) = match fresh {
            Ok(fresh) => fresh,
            Err(e) => {
                if !std::mem::replace(&mut self.failing, true) {
                    log::warn!("cannot read the counter names again (the last ones are kept): {e}");
                }
                return false;
            }
        };
        self.failing = false;
        self.watch.read_at(stamp);
        let apps = source.app_ranges();
        if names == self.names && factors == self.factors && apps == self.apps {
            return false;
        }
        (self.names, self.factors, self.apps) = (names, factors, apps);
        self.generation += 1;
        log::debug!("counter names read again (generation {})", self.generation);
        true
    }
}

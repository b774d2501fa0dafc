//! A machine's facts kept current while a consumer runs for long ([`Facts`]): an app
//! installed, uninstalled or renamed after `typeperf` or `watch` started is named as the
//! machine names it now, without a restart.

use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use prfdata_registry::StoreStamp;

use super::{Machine, Source};
use crate::collector::service::RegistryWatch;
use prfdata_wire::snapshot::DataSnapshot;

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
/// use prfmon::session::Contents;
/// let out = ProviderOutput { bytes: prfdata_testkit::sample::sample_object(1848), num_objects: 1 };
/// let snap = prfdata_wire::snapshot::decode(&build_data_block("h", &CollectionTimes::now(), &[out]))?;
/// let app = Contents::of(&snap, &["App".into()]);
/// assert_eq!(app, Contents::of(&snap, &["App".into()]));
/// assert_ne!(app, Contents::of(&snap, &["Other".into()]));
/// assert_ne!(app, Contents::of(&prfdata_wire::snapshot::DataSnapshot::default(), &[]));
/// # Ok::<(), prfdata_wire::error::DecodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contents(u64);

impl Contents {
    /// The contents of `snapshot`, whose objects came from `services` (one per object, as
    /// [`crate::collector::Collection::services`] lists them; fewer or none if unknown).
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

/// A machine's facts ([`Machine`]), read again when they may have changed.
///
/// # When the facts are read again
///
/// | machine | asked at most every | read again when |
/// |---|---|---|
/// | local (the registry gives a stamp) | [`REGISTRY_CHECK`](crate::collector::service::REGISTRY_CHECK) (100 ms), one `stat` | the registry's stamp moved since the facts were read |
/// | remote (no stamp) | the same, nothing asked | the collections' [`Contents`] (objects and their services) changed, or [`NAMES_RECHECK`] passed since the last read |
///
/// An app installed or uninstalled on a remote machine changes what its collections hold, so
/// its names follow at the next collection; a rename that keeps every object index and
/// service (a reinstall over the same range) is followed within [`NAMES_RECHECK`]. A read
/// that fails keeps what was read before (logged once until a read succeeds again).
#[derive(Debug)]
pub struct Facts {
    lang: String,
    machine: Machine,
    generation: u64,
    /// When the source was last asked, and the stamp the facts were read at.
    watch: RegistryWatch,
    /// What the collections held at the last check (sources without a stamp).
    contents: Option<Contents>,
    /// When the facts were last read.
    read: Instant,
    /// Whether the last read failed (logged once until one succeeds).
    failing: bool,
}

impl Facts {
    /// What was read of the machine already (names of language `lang`), read at `stamp`
    /// (taken before the read, so that a change during it is read again).
    pub(super) fn new(lang: &str, stamp: Option<StoreStamp>, machine: Machine) -> Self {
        Facts {
            lang: lang.to_owned(),
            machine,
            generation: 0,
            watch: RegistryWatch::new(stamp),
            contents: None,
            read: Instant::now(),
            failing: false,
        }
    }

    /// The facts as last read.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The facts, kept.
    pub(super) fn into_machine(self) -> Machine {
        self.machine
    }

    /// How many times the names, factors, units or app ranges changed since the first read.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// After a collection that held `contents`: reads the facts again if they may have
    /// changed (see [`Facts`]); true if the names, factors, units or app ranges did.
    pub(super) fn follow(&mut self, source: &mut Source, contents: Contents) -> bool {
        if !self.watch.due() {
            return false;
        }
        let stamp = source.stamp();
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
    fn read_again(&mut self, source: &mut Source, stamp: Option<StoreStamp>) -> bool {
        self.read = Instant::now();
        let fresh = match source.machine(&self.lang) {
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
        let old = &self.machine;
        let same = fresh.names == old.names
            && fresh.factors == old.factors
            && fresh.units == old.units
            && fresh.apps == old.apps
            && fresh.objects == old.objects;
        self.machine = fresh;
        if same {
            return false;
        }
        self.generation += 1;
        log::debug!("counter names read again (generation {})", self.generation);
        true
    }
}

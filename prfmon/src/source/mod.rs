//! Where collections come from: the one role "give me a PERF_DATA_BLOCK for this query, and
//! the names to read it with", played by the local [`Collector`] or by another machine's
//! `prfmon serve` ([`crate::remote::Remote`], with the `remote` feature). Everything
//! downstream (decode, sampler, typeperf, watch) takes the bytes and names as they come.
//! A consumer that runs for long keeps the names current with [`SourceNames`].
//!
//! # Examples
//!
//! ```
//! use prfmon::collector::Collector;
//! use prfmon::source::PerfSource;
//!
//! let dir = tempfile::tempdir()?;
//! let registry = prfdata_registry::FileRegistry::open(dir.path())?;
//! let mut source: Box<dyn PerfSource> = Box::new(Collector::open(registry, Default::default())?);
//! let collection = source.collect_with_services("Global")?;
//! assert!(prfmon::decode::decode(&collection.bytes)?.objects.is_empty());
//! assert!(source.names("009")?.counter.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod names;

pub use names::{Contents, SourceNames, NAMES_RECHECK};

use prfdata_registry::{Registry, RegistryError, StoreStamp};

use crate::collector::{Collection, Collector};
use crate::factor::Factors;
use crate::lease::AppRanges;
use crate::names::Names;

/// Why a source gave no collection or no names.
///
/// # Examples
///
/// ```
/// let e = prfmon::source::SourceError::from(prfdata_registry::RegistryError::KeyNotFound("X".into()));
/// assert!(e.to_string().contains("X"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The local registry could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The remote machine did not answer, or answered with an error.
    #[cfg(feature = "remote")]
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
}

/// A source of collections and of the names that go with them.
///
/// # Examples
///
/// See the [module docs](self).
pub trait PerfSource {
    /// One collection of `query` (`Global`, `Costly` or object name indexes) with the service
    /// of each object, as [`Collector::collect_with_services`] makes it.
    fn collect_with_services(&mut self, query: &str) -> Result<Collection, SourceError>;

    /// The names and explain texts of language `lang` (`009`) that go with the collections.
    fn names(&mut self, lang: &str) -> Result<Names, SourceError>;

    /// The Windows 95 stat servers' scale factors of the source's counters, for displayed values.
    fn factors(&mut self) -> Result<Factors, SourceError>;

    /// The name ranges of the apps whose counters this process can hold watch leases on
    /// ([`crate::lease`]): none by default (a remote machine's `serve` holds leases on all it
    /// exports).
    fn app_ranges(&mut self) -> AppRanges {
        AppRanges::default()
    }

    /// What tells, for one `stat`, whether the names may have changed: the local registry's
    /// [`StoreStamp`]. `None` when the source cannot tell so cheaply (the default, and a
    /// remote machine): [`SourceNames`] then watches what the collections hold instead.
    fn names_stamp(&self) -> Option<StoreStamp> {
        None
    }
}

impl<R: Registry> PerfSource for Collector<R> {
    fn collect_with_services(&mut self, query: &str) -> Result<Collection, SourceError> {
        Ok(Collector::collect_with_services(self, query))
    }

    fn names(&mut self, lang: &str) -> Result<Names, SourceError> {
        Ok(Names::load(self.registry(), lang)?)
    }

    fn factors(&mut self) -> Result<Factors, SourceError> {
        Ok(Factors::load(self.registry())?)
    }

    fn app_ranges(&mut self) -> AppRanges {
        AppRanges::load(self.registry()).unwrap_or_default()
    }

    fn names_stamp(&self) -> Option<StoreStamp> {
        self.registry().stamp()
    }
}

//! The Windows 95 stat servers' scale factors (`PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`) as
//! consumers apply them: to the *displayed* value only.
//!
//! A PERF_DATA_BLOCK has no field for an integer factor (`PERF_COUNTER_DEFINITION` knows only
//! the power-of-ten `DefaultScale`), so an app's install writes its factors to the registry
//! (`Services\<app>\Performance\Factors`, see [`prfdata_registry::stats`]), keyed by counter name
//! index like the names themselves. [`Factors::load`] reads every service's; [`of`] answers for
//! one counter.
//!
//! The one rule: **a factor is part of the displayed value**. Every consumer of displayed
//! values applies it: `prfmon watch`, `prfmon typeperf`'s log, the PerfStats view
//! (`HKEY_DYN_DATA\PerfStats\StatData`), the JSON of `query --json` and `list --json` (the
//! formatted value), the table of `query`. Raw values never carry it: `query --raw`, `decode`,
//! the raw numbers of `query` and its JSON (which name the factor in their `factor` field),
//! and the `/metrics` series, which are raw counter values in base units as Prometheus expects.
//!
//! # Examples
//!
//! ```
//! use prfdata_registry::{perflib, stats};
//! use prfmon::factor::Factors;
//! use prfdata::map::Factor;
//!
//! let mut hive = perflib::new_hive();
//! stats::write_factors(&mut hive, "App", &[(1852, "/1024".into())])?;
//! let factors = Factors::from_hive(&hive)?;
//! assert_eq!(factors.of(1852), Some(Factor::Divide(1024)));
//! assert_eq!(factors.apply(1852, 4096.0), 4.0);
//! assert_eq!(factors.apply(1850, 4096.0), 4096.0); // no factor: as it is
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use prfdata::map::Factor;
use prfdata_registry::{stats, Hive, Registry, RegistryError};

/// Every counter's scale factor, by counter name index, as the registry holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Factors {
    by_index: BTreeMap<u32, Factor>,
}

impl Factors {
    /// Reads every service's `Factors` from `registry`.
    ///
    /// # Errors
    ///
    /// The registry cannot be read.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// assert_eq!(prfmon::factor::Factors::load(&reg)?.of(1848), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load<R: Registry + ?Sized>(registry: &R) -> Result<Factors, RegistryError> {
        Factors::from_hive(&registry.snapshot()?)
    }

    /// Reads every service's `Factors` from a hive. A factor that is not `*N` or `/N` (N ≥ 1) is
    /// logged and left out: its counter is shown unscaled.
    ///
    /// # Errors
    ///
    /// The hive's `Services` key cannot be read.
    pub fn from_hive(hive: &Hive) -> Result<Factors, RegistryError> {
        let mut by_index = BTreeMap::new();
        for (index, text) in stats::factors_in(hive)? {
            match text.parse::<Factor>() {
                Ok(f) => {
                    by_index.insert(index, f);
                }
                Err(e) => log::warn!("counter {index}'s scale factor in the registry: {e}"),
            }
        }
        Ok(Factors { by_index })
    }

    /// The factor of the counter with name index `index`, if it has one.
    pub fn of(&self, index: u32) -> Option<Factor> {
        self.by_index.get(&index).copied()
    }

    /// `value` (a displayed value of the counter with name index `index`) with its factor
    /// applied; as it is when the counter has none.
    pub fn apply(&self, index: u32, value: f64) -> f64 {
        self.of(index).map_or(value, |f| f.apply(value))
    }

    /// Each factor as the Windows 95 stat servers' text (`*4096`, `/1024`) by name index: what
    /// `prfmon serve` sends a remote consumer ([`crate::remote::FACTORS_PATH`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfmon::factor::Factors;
    /// let text = std::collections::BTreeMap::from([(1852, "/1024".to_string())]);
    /// let factors = Factors::from_texts(&text);
    /// assert_eq!(factors.to_texts(), text);
    /// ```
    pub fn to_texts(&self) -> BTreeMap<u32, String> {
        self.by_index
            .iter()
            .map(|(i, f)| (*i, f.to_string()))
            .collect()
    }

    /// The factors of [`to_texts`](Self::to_texts)'s form (from another machine: untrusted); a
    /// text that is not `*N` or `/N` (N ≥ 1) is logged and left out.
    pub fn from_texts(texts: &BTreeMap<u32, String>) -> Factors {
        let mut by_index = BTreeMap::new();
        for (index, text) in texts {
            match text.parse::<Factor>() {
                Ok(f) => {
                    by_index.insert(*index, f);
                }
                Err(e) => log::warn!("counter {index}'s scale factor from the remote: {e}"),
            }
        }
        Factors { by_index }
    }

    /// Whether no counter has a factor.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(prfmon::factor::Factors::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.by_index.is_empty()
    }
}

/// The scale factor of the counter with name index `index`, read from `registry`: the one-call
/// form of [`Factors::load`] + [`Factors::of`] (load once and keep the [`Factors`] when asking
/// for many counters).
///
/// # Errors
///
/// The registry cannot be read.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
/// assert_eq!(prfmon::factor::of(&reg, 1852)?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn of<R: Registry + ?Sized>(registry: &R, index: u32) -> Result<Option<Factor>, RegistryError> {
    Ok(Factors::load(registry)?.of(index))
}

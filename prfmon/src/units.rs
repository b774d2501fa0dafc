//! The units counters declare for their raw values (`unit: bytes` in a map), as install records
//! them in `Services\<app>\Performance\Units` ([`prfdata_registry::stats`]), keyed by counter
//! name index.
//!
//! A declared unit says what the *raw* value is in, whatever scale factor the counter displays
//! it with: "Queued payload KiB" with `factor: / 1024, unit: bytes` holds bytes, which monitors
//! show divided by 1024. `/metrics` exports base units, so it exports the raw bytes and names
//! the family for them ([`crate::openmetrics::naming::declared_stem`]).
//!
//! # Examples
//!
//! ```
//! use prfdata_registry::{perflib, stats};
//! use prfmon::units::{DeclaredUnit, Units};
//! let mut hive = perflib::new_hive();
//! stats::write_units(&mut hive, "App", &[(1852, "bytes".into()), (1854, "furlongs".into())])?;
//! let units = Units::from_hive(&hive)?;
//! assert_eq!(units.of(1852), Some(DeclaredUnit::Bytes));
//! assert_eq!(units.of(1854), None); // not a unit: left out
//! # Ok::<(), prfdata_registry::RegistryError>(())
//! ```

use std::collections::BTreeMap;

use prfdata_registry::{stats, Hive, RegistryError};

/// A unit a counter's raw value is declared in: one of `prfdata_rules::counter::UNITS`.
///
/// # Examples
///
/// ```
/// use prfmon::units::DeclaredUnit;
/// assert_eq!(DeclaredUnit::parse("bytes"), Some(DeclaredUnit::Bytes));
/// assert_eq!(DeclaredUnit::Seconds.word(), "seconds");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeclaredUnit {
    /// Bytes.
    Bytes,
    /// Seconds.
    Seconds,
}

impl DeclaredUnit {
    /// The unit named `text` as a map declares it (`bytes`, `seconds`), if it is one.
    pub fn parse(text: &str) -> Option<DeclaredUnit> {
        match text {
            "bytes" => Some(DeclaredUnit::Bytes),
            "seconds" => Some(DeclaredUnit::Seconds),
            _ => None,
        }
    }

    /// The unit's word: how a map declares it, and how a metric name ends.
    pub fn word(self) -> &'static str {
        match self {
            DeclaredUnit::Bytes => "bytes",
            DeclaredUnit::Seconds => "seconds",
        }
    }
}

/// Every counter's declared unit, by counter name index, as the registry holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Units {
    by_index: BTreeMap<u32, DeclaredUnit>,
}

impl Units {
    /// Reads every service's `Units` from a hive. A unit that is none of
    /// [`DeclaredUnit`]'s is logged and left out: its counter is exported as if it declared none.
    ///
    /// # Errors
    ///
    /// The hive's `Services` key cannot be read.
    pub fn from_hive(hive: &Hive) -> Result<Units, RegistryError> {
        let mut by_index = BTreeMap::new();
        for (index, text) in stats::units_in(hive)? {
            match DeclaredUnit::parse(&text) {
                Some(unit) => {
                    by_index.insert(index, unit);
                }
                None => log::warn!("counter {index}'s unit in the registry is not one: `{text}`"),
            }
        }
        Ok(Units { by_index })
    }

    /// The unit the counter with name index `index` declares, if any.
    pub fn of(&self, index: u32) -> Option<DeclaredUnit> {
        self.by_index.get(&index).copied()
    }
}

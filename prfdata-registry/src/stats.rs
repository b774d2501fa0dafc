//! The Windows 95 stat-server interface's stat-server extras in `Services\<app>\Performance`: the scale factors of an
//! app's counters, the units their raw values are in, and the bound a Collect waits for
//! on-demand values.
//!
//! perflib's `PERF_COUNTER_DEFINITION` has a power-of-ten `DefaultScale` and no room for an
//! arbitrary integer factor (the Windows 95 stat-server interface's `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`), and a
//! consumer sees only the PERF_DATA_BLOCK. So the factors travel as the counter names do: the
//! install writes them beside the app's `First Counter`, keyed by counter name index, and every
//! consumer that resolves names from the registry (locally, or the registry `serve` answers
//! for) finds them there:
//!
//! ```text
//! Services\<app>\Performance
//!     Factors            REG_MULTI_SZ   "1852 *4096", "1854 /1024"   (name index, space, factor)
//!     Units              REG_MULTI_SZ   "1854 bytes"                 (name index, space, unit)
//!     OnDemand Timeout   REG_DWORD      20                           (ms; default 20)
//! ```
//!
//! The block carries each factor too (its counter record), for readers of the block itself.
//! A unit (`bytes` or `seconds`: what the raw value is in, declared in the map as `unit: bytes`)
//! is in the registry only: `prfmon serve` names a counter's family for it.
//!
//! # How long a Collect waits for on-demand values
//!
//! The collector disables a provider whose Collect does not return within its service's
//! `Collect Timeout`, and a provider must never be disabled for waiting within its documented
//! bounds. So one Collect waits at most [`on_demand_bound`] for an app: its `OnDemand Timeout`
//! (at most [`MAX_ON_DEMAND_TIMEOUT_MS`]), and never more than a [`COLLECT_SHARE`]th of its
//! `Collect Timeout`, so that the rest of the Collect (reading the blocks, copying the answer
//! to the collector) keeps the other half. The provider asks every app of its `Linkage\Export`
//! first and then waits for them together: their waits overlap, and the Collect waits the
//! largest of their bounds, not their sum, capped at the smallest `Collect Timeout` share among
//! the services that may export them ([`collect_share`]: the collector times a Collect by the
//! calling service's timeout, which need not be one of its apps'). An app that lets a request pass its
//! deadline (stopped, busy) is not waited for again until it has served that request: its last
//! values are served at once (prfdata's `Refresh::Missed`).
//!
//! With the defaults (`OnDemand Timeout` 20 ms, `Collect Timeout` 10 s) a Collect waits at most
//! 20 ms; at the largest `OnDemand Timeout` (10 s), at most 5 s.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::hive::Hive;
use crate::service::{COLLECT_TIMEOUT, DEFAULT_COLLECT_TIMEOUT_MS, EXPORT};
pub use crate::service::{FACTORS, ON_DEMAND_TIMEOUT, UNITS};
use crate::{paths, RegistryError, Value};

/// The bound a Collect waits for on-demand values when `OnDemand Timeout` is absent: 20 ms.
pub const DEFAULT_ON_DEMAND_TIMEOUT_MS: u32 = 20;
/// The largest `OnDemand Timeout` honoured (a larger value is capped): 10 s, the default
/// `Collect Timeout`. A Collect waits less still: see [`on_demand_bound`].
pub const MAX_ON_DEMAND_TIMEOUT_MS: u32 = 10_000;
/// The part of its `Collect Timeout` a Collect may spend waiting for on-demand values: one
/// half ([`on_demand_bound`]); the other half is the rest of the Collect's.
pub const COLLECT_SHARE: u32 = 2;

/// Writes `driver`'s `Factors` (name index, factor as `*N` or `/N`), or deletes the value when
/// there are none.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, stats};
/// let mut hive = perflib::new_hive();
/// stats::write_factors(&mut hive, "App", &[(1852, "*4096".into())])?;
/// assert_eq!(stats::factors_in(&hive)?[&1852], "*4096");
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn write_factors(
    hive: &mut Hive,
    driver: &str,
    factors: &[(u32, String)],
) -> Result<(), RegistryError> {
    write_by_index(hive, driver, FACTORS, factors)
}

/// Every service's `Factors`, by counter name index, as written (the factor text is the
/// consumer's to parse). Lines that are not `<index> <factor>` are skipped: the registry is
/// input from elsewhere, and a bad line costs only its counter's factor.
pub fn factors_in(hive: &Hive) -> Result<BTreeMap<u32, String>, RegistryError> {
    by_index_in(hive, FACTORS)
}

/// Writes `driver`'s `Units` (name index, unit such as `bytes`), or deletes the value when
/// there are none.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, stats};
/// let mut hive = perflib::new_hive();
/// stats::write_units(&mut hive, "App", &[(1854, "bytes".into())])?;
/// assert_eq!(stats::units_in(&hive)?[&1854], "bytes");
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn write_units(
    hive: &mut Hive,
    driver: &str,
    units: &[(u32, String)],
) -> Result<(), RegistryError> {
    write_by_index(hive, driver, UNITS, units)
}

/// Every service's `Units`, by counter name index, as written (the unit is the consumer's to
/// check). Lines that are not `<index> <unit>` are skipped, as for [`factors_in`].
pub fn units_in(hive: &Hive) -> Result<BTreeMap<u32, String>, RegistryError> {
    by_index_in(hive, UNITS)
}

/// Writes `driver`'s `Performance\<value>` as `"<name index> <text>"` lines, or deletes it
/// when `entries` is empty.
fn write_by_index(
    hive: &mut Hive,
    driver: &str,
    value: &str,
    entries: &[(u32, String)],
) -> Result<(), RegistryError> {
    let perf = paths::performance(driver);
    if entries.is_empty() {
        return hive.delete_value(&perf, value).map(|_| ());
    }
    let lines = entries.iter().map(|(i, t)| format!("{i} {t}")).collect();
    hive.set_value(&perf, value, Value::MultiSz(lines))
}

/// Every service's `Performance\<value>` of `"<name index> <text>"` lines, by name index.
fn by_index_in(hive: &Hive, value: &str) -> Result<BTreeMap<u32, String>, RegistryError> {
    let mut out = BTreeMap::new();
    for key in hive.subkeys(paths::SERVICES)? {
        let Some((_, name)) = key.rsplit_once('\\') else {
            continue;
        };
        let Ok(Some(Value::MultiSz(lines))) = hive.value(&paths::performance(name), value) else {
            continue;
        };
        for line in lines {
            let Some((index, text)) = line.trim().split_once(' ') else {
                continue;
            };
            if let Ok(index) = index.parse::<u32>() {
                out.insert(index, text.trim().to_owned());
            }
        }
    }
    Ok(out)
}

/// `driver`'s `OnDemand Timeout` (ms, at most [`MAX_ON_DEMAND_TIMEOUT_MS`]), else
/// [`DEFAULT_ON_DEMAND_TIMEOUT_MS`].
///
/// # Examples
///
/// ```
/// use prfdata_registry::{paths, perflib, stats, Value};
/// use std::time::Duration;
/// let mut hive = perflib::new_hive();
/// assert_eq!(stats::on_demand_timeout(&hive, "App"), Duration::from_millis(20));
/// hive.set_value(&paths::performance("App"), stats::ON_DEMAND_TIMEOUT, Value::Dword(50))?;
/// assert_eq!(stats::on_demand_timeout(&hive, "App"), Duration::from_millis(50));
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn on_demand_timeout(hive: &Hive, driver: &str) -> Duration {
    let ms = match hive.value(&paths::performance(driver), ON_DEMAND_TIMEOUT) {
        Ok(Some(Value::Dword(ms))) => (*ms).min(MAX_ON_DEMAND_TIMEOUT_MS),
        _ => DEFAULT_ON_DEMAND_TIMEOUT_MS,
    };
    Duration::from_millis(u64::from(ms))
}

/// The most one Collect may wait for on-demand values while a service serves `driver`'s app:
/// a [`COLLECT_SHARE`]th of the smallest `Collect Timeout` (the default one where absent) among
/// the services that may call the provider for it: its own, and every service whose
/// `Linkage\Export` names it. perflib's Collect does not tell a provider which service calls
/// it, and the collector times the Collect by that service's timeout; so a provider waiting
/// within its bounds always returns before the collector gives up on it, whichever service
/// exports the app.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{paths, perflib, service, stats, Value};
/// use std::time::Duration;
/// let mut hive = perflib::new_hive();
/// assert_eq!(stats::collect_share(&hive, "App"), Duration::from_secs(5));
/// hive.set_value(&paths::performance("App"), service::COLLECT_TIMEOUT, Value::Dword(300))?;
/// assert_eq!(stats::collect_share(&hive, "App"), Duration::from_millis(150));
/// // A service that exports App with a shorter timeout bounds it too.
/// hive.set_value(&paths::performance("Both"), service::COLLECT_TIMEOUT, Value::Dword(100))?;
/// let export = Value::MultiSz(vec!["Other".into(), "App".into()]);
/// hive.set_value(&paths::linkage("Both"), service::EXPORT, export)?;
/// assert_eq!(stats::collect_share(&hive, "App"), Duration::from_millis(50));
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn collect_share(hive: &Hive, driver: &str) -> Duration {
    let timeout = |service: &str| match hive.value(&paths::performance(service), COLLECT_TIMEOUT) {
        Ok(Some(Value::Dword(ms))) => *ms,
        _ => DEFAULT_COLLECT_TIMEOUT_MS,
    };
    let exporters = hive.subkeys(paths::SERVICES).unwrap_or_default();
    let ms = exporters
        .iter()
        .filter_map(|key| key.rsplit_once('\\').map(|(_, name)| name))
        .filter(|service| exports(hive, service, driver))
        .map(timeout)
        .fold(timeout(driver), u32::min);
    Duration::from_millis(u64::from(ms / COLLECT_SHARE))
}

/// Whether `service`'s `Linkage\Export` names `driver` (registry names: ASCII case folded).
fn exports(hive: &Hive, service: &str, driver: &str) -> bool {
    match hive.value(&paths::linkage(service), EXPORT) {
        Ok(Some(Value::MultiSz(names))) => names.iter().any(|n| n.eq_ignore_ascii_case(driver)),
        _ => false,
    }
}

/// `driver`'s on-demand bound in one Collect: its [`on_demand_timeout`], at most its
/// [`collect_share`] (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{paths, perflib, stats, Value};
/// use std::time::Duration;
/// let mut hive = perflib::new_hive();
/// assert_eq!(stats::on_demand_bound(&hive, "App"), Duration::from_millis(20));
/// hive.set_value(&paths::performance("App"), stats::ON_DEMAND_TIMEOUT, Value::Dword(10_000))?;
/// assert_eq!(stats::on_demand_bound(&hive, "App"), Duration::from_secs(5));
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn on_demand_bound(hive: &Hive, driver: &str) -> Duration {
    on_demand_timeout(hive, driver).min(collect_share(hive, driver))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::{install_in, CounterNames, CounterSet, InstallOptions, ObjectNames, Text};
    use crate::{FileRegistry, Registry};

    fn set(unit: Option<&str>) -> CounterSet {
        CounterSet {
            app: "UnitsApp".into(),
            objects: vec![ObjectNames {
                symbol: "OBJ".into(),
                offset: 0,
                texts: vec![Text::new("009", "O", "o")],
                counters: vec![CounterNames {
                    symbol: "HEAP".into(),
                    offset: 2,
                    texts: vec![Text::new("009", "Heap KiB", "h")],
                    factor: Some("/1024".into()),
                    unit: unit.map(str::to_owned),
                }],
            }],
            fingerprint: None,
        }
    }

    #[test]
    fn install_records_units_beside_factors_and_a_reinstall_without_drops_them() {
        let dir = tempfile::tempdir().unwrap();
        let reg = FileRegistry::open(dir.path().join("registry")).unwrap();
        let options = InstallOptions {
            library: "/opt/app/libprfdata_provider.so".into(),
            ini_dir: dir.path().to_path_buf(),
            replace: true,
        };
        let range = install_in(&reg, &set(Some("bytes")), &options).unwrap();
        let index = range.first_counter + 2;
        let hive = reg.snapshot().unwrap();
        assert_eq!(factors_in(&hive).unwrap()[&index], "/1024");
        assert_eq!(units_in(&hive).unwrap()[&index], "bytes");

        install_in(&reg, &set(None), &options).unwrap();
        let hive = reg.snapshot().unwrap();
        assert!(units_in(&hive).unwrap().is_empty());
        assert_eq!(factors_in(&hive).unwrap()[&index], "/1024");
        let perf = paths::performance("UnitsApp");
        assert_eq!(hive.value(&perf, UNITS).unwrap(), None);
    }
}

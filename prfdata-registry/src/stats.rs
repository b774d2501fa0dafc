//! Seed 000's stat-server extras in `Services\<app>\Performance`: the scale factors of an
//! app's counters and the bound a Collect waits for on-demand values.
//!
//! perflib's `PERF_COUNTER_DEFINITION` has a power-of-ten `DefaultScale` and no room for an
//! arbitrary integer factor (seed 000's `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`), and a
//! consumer sees only the PERF_DATA_BLOCK. So the factors travel as the counter names do: the
//! install writes them beside the app's `First Counter`, keyed by counter name index, and every
//! consumer that resolves names from the registry (locally, or the registry `serve` answers
//! for) finds them there:
//!
//! ```text
//! Services\<app>\Performance
//!     Factors            REG_MULTI_SZ   "1852 *4096", "1854 /1024"   (name index, space, factor)
//!     OnDemand Timeout   REG_DWORD      20                           (ms; default 20)
//! ```
//!
//! The block carries each factor too (its counter record), for readers of the block itself.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::hive::Hive;
use crate::{paths, RegistryError, Value};

/// `Factors`: the scale factors of the app's counters (REG_MULTI_SZ of `"<name index> <factor>"`,
/// the factor `*N` or `/N`).
pub const FACTORS: &str = "Factors";
/// `OnDemand Timeout`: how long, in ms, a Collect waits for the app to serve its on-demand
/// counters before it serves their last values.
pub const ON_DEMAND_TIMEOUT: &str = "OnDemand Timeout";
/// The bound a Collect waits for on-demand values when `OnDemand Timeout` is absent: 20 ms.
pub const DEFAULT_ON_DEMAND_TIMEOUT_MS: u32 = 20;
/// The largest `OnDemand Timeout` honoured (a larger value is capped): 10 s, the default
/// `Collect Timeout`, past which the collector gives up on the provider anyway.
pub const MAX_ON_DEMAND_TIMEOUT_MS: u32 = 10_000;

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
    let perf = paths::performance(driver);
    if factors.is_empty() {
        return hive.delete_value(&perf, FACTORS).map(|_| ());
    }
    let lines = factors.iter().map(|(i, f)| format!("{i} {f}")).collect();
    hive.set_value(&perf, FACTORS, Value::MultiSz(lines))
}

/// Every service's `Factors`, by counter name index, as written (the factor text is the
/// consumer's to parse). Lines that are not `<index> <factor>` are skipped: the registry is
/// input from elsewhere, and a bad line costs only its counter's factor.
///
/// # Examples
///
/// See [`write_factors`].
pub fn factors_in(hive: &Hive) -> Result<BTreeMap<u32, String>, RegistryError> {
    let mut out = BTreeMap::new();
    for key in hive.subkeys(paths::SERVICES)? {
        let Some((_, name)) = key.rsplit_once('\\') else {
            continue;
        };
        let Ok(Some(Value::MultiSz(lines))) = hive.value(&paths::performance(name), FACTORS) else {
            continue;
        };
        for line in lines {
            let Some((index, factor)) = line.trim().split_once(' ') else {
                continue;
            };
            if let Ok(index) = index.parse::<u32>() {
                out.insert(index, factor.trim().to_owned());
            }
        }
    }
    Ok(out)
}

/// `driver`'s on-demand bound: `OnDemand Timeout` (ms, at most
/// [`MAX_ON_DEMAND_TIMEOUT_MS`]), else [`DEFAULT_ON_DEMAND_TIMEOUT_MS`].
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

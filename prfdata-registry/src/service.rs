//! A service's `Performance` and `Linkage` keys: what perflib reads to load a provider, and
//! the counter ranges lodctr wrote.
//!
//! The MSJ article (Richter, August 1998): "The most important value, Library, specifies the path name of the DLL that knows
//! how to return your performance information. This DLL must export three functions: an Open
//! function, a Collect function, and a Close function. [...] the names must be specified using
//! the Open, Collect, and Close values in the registry." `Linkage\Export` lists what the
//! collector passes to Open.

use super::error::{ensure, wrong_type, RegistryError};
use super::hive::Hive;
use super::paths;
use super::perflib::{read_optional_dword, read_optional_multi_sz, LAST_COUNTER, LAST_HELP};
use super::store::{update, Registry};
use super::value::{Value, ValueType};
use prfdata_untrusted::{check_name, NameKind};

/// Value name `Library`.
pub const LIBRARY: &str = "Library";
/// Value name `Open`.
pub const OPEN: &str = "Open";
/// Value name `Collect`.
pub const COLLECT: &str = "Collect";
/// Value name `Close`.
pub const CLOSE: &str = "Close";
/// Value name `First Counter`.
pub const FIRST_COUNTER: &str = "First Counter";
/// Value name `First Help`.
pub const FIRST_HELP: &str = "First Help";
/// Value name `Map Fingerprint` (REG_SZ, 16 hexadecimal digits): the fingerprint of the map
/// whose names install loaded (prfdata's `MapDef::fingerprint`). Install writes it beside First
/// Counter; unlodctr deletes it, and a hand-run lodctr leaves none (its .INI says nothing of a
/// map). A provider serves no data from a block whose header carries another fingerprint.
pub const MAP_FINGERPRINT: &str = "Map Fingerprint";
/// Value name `Dynamic Fingerprint` (REG_SZ, 16 hexadecimal digits): the fingerprint of the
/// map of the objects the app added at run time, whose names
/// [`register_runtime_names`](crate::register_runtime_names) wrote; absent without any. A
/// provider checks the app's run-time block against it as it checks the installed block against
/// [`MAP_FINGERPRINT`].
pub const DYNAMIC_FINGERPRINT: &str = "Dynamic Fingerprint";
/// Value name `Ini File` (REG_SZ): the counter .INI install wrote for the app (its .h beside
/// it). An app that registers run-time names rewrites both, so that they describe what the
/// registry holds; unlodctr deletes the value.
pub const INI_FILE: &str = "Ini File";
/// Value name `Open Timeout` (ms).
pub const OPEN_TIMEOUT: &str = "Open Timeout";
/// Value name `Collect Timeout` (ms).
pub const COLLECT_TIMEOUT: &str = "Collect Timeout";
/// Value name `Disable Performance Counters` (nonzero: perflib skips the provider).
pub const DISABLE: &str = "Disable Performance Counters";
/// Value name `Export` under `Linkage`.
pub const EXPORT: &str = "Export";
/// Value name `Factors`: the scale factors of the app's counters (REG_MULTI_SZ of `"<name index> <factor>"`,
/// the factor `*N` or `/N`).
pub const FACTORS: &str = "Factors";
/// Value name `Units`: the units the app's counters' raw values are in (REG_MULTI_SZ of
/// `"<name index> <unit>"`, the unit `bytes` or `seconds`).
pub const UNITS: &str = "Units";
/// Value name `Object List`: the app's objects, their name indexes in decimal separated by
/// spaces (`REG_SZ`), as Windows NT keeps it for a performance DLL's objects; install writes it
/// so that a monitor tells the objects from the counters while no process of the app runs.
pub const OBJECT_LIST: &str = "Object List";
/// Value name `OnDemand Timeout`: how long, in ms, a Collect waits for the app to serve its on-demand
/// counters before it serves their last values.
pub const ON_DEMAND_TIMEOUT: &str = "OnDemand Timeout";

/// The default `Open Timeout`: Perflib's `OpenProcedureWaitTime` default, 0x2710 ms (10 s),
/// per the Windows 2000 / Server 2003 registry reference.
pub const DEFAULT_OPEN_TIMEOUT_MS: u32 = 10_000;
/// The default `Collect Timeout`: the same reference gives `OpenProcedureWaitTime` (10 s) as
/// its default too.
pub const DEFAULT_COLLECT_TIMEOUT_MS: u32 = 10_000;

/// What [`register_service`] writes for a provider.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ServiceConfig;
///
/// let cfg = ServiceConfig::new("/opt/app/libapp_perf.so", "Open", "Collect", "Close");
/// assert_eq!(cfg.open_timeout_ms, 10_000);
/// assert!(cfg.export.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceConfig {
    /// `Library`: the provider library's path.
    pub library: String,
    /// `Open`: the name of the provider's Open function.
    pub open: String,
    /// `Collect`: the name of the provider's Collect function.
    pub collect: String,
    /// `Close`: the name of the provider's Close function.
    pub close: String,
    /// `Open Timeout` in milliseconds.
    pub open_timeout_ms: u32,
    /// `Collect Timeout` in milliseconds.
    pub collect_timeout_ms: u32,
    /// `Linkage\Export`: the strings the collector passes to Open.
    pub export: Vec<String>,
}

impl ServiceConfig {
    /// A configuration with the default timeouts and no exports.
    ///
    /// # Examples
    ///
    /// ```
    /// let cfg = prfdata_registry::ServiceConfig::new("lib.so", "O", "C", "X");
    /// assert_eq!(cfg.collect, "C");
    /// ```
    pub fn new(
        library: impl Into<String>,
        open: impl Into<String>,
        collect: impl Into<String>,
        close: impl Into<String>,
    ) -> Self {
        Self {
            library: library.into(),
            open: open.into(),
            collect: collect.into(),
            close: close.into(),
            open_timeout_ms: DEFAULT_OPEN_TIMEOUT_MS,
            collect_timeout_ms: DEFAULT_COLLECT_TIMEOUT_MS,
            export: Vec::new(),
        }
    }
}

/// Writes `config` into `hive` (the body of [`register_service`], for callers composing a
/// larger update).
///
/// `driver` must be a valid service name ([`prfdata_untrusted::check_name`]). The `export`
/// strings are the provider's to interpret (Windows drivers pass device names with `\` in
/// them), so they are stored as given; prfdata's own provider checks each as an app name before
/// it names a block (`prfdata::block_path`).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{paths, perflib, service, ServiceConfig, Value};
///
/// let mut hive = perflib::new_hive();
/// service::write_service(&mut hive, "App", &ServiceConfig::new("a.so", "O", "C", "X"))?;
/// assert_eq!(hive.value(&paths::performance("App"), "Library")?, Some(&Value::Sz("a.so".into())));
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn write_service(
    hive: &mut Hive,
    driver: &str,
    config: &ServiceConfig,
) -> Result<(), RegistryError> {
    check_name(NameKind::Service, driver)?;
    let perf = paths::performance(driver);
    hive.set_value(&perf, LIBRARY, Value::Sz(config.library.clone()))?;
    hive.set_value(&perf, OPEN, Value::Sz(config.open.clone()))?;
    hive.set_value(&perf, COLLECT, Value::Sz(config.collect.clone()))?;
    hive.set_value(&perf, CLOSE, Value::Sz(config.close.clone()))?;
    hive.set_value(&perf, OPEN_TIMEOUT, Value::Dword(config.open_timeout_ms))?;
    hive.set_value(
        &perf,
        COLLECT_TIMEOUT,
        Value::Dword(config.collect_timeout_ms),
    )?;
    hive.set_value(
        &paths::linkage(driver),
        EXPORT,
        Value::MultiSz(config.export.clone()),
    )
}

/// Registers a provider: writes `Performance` `Library`, `Open`, `Collect`, `Close`,
/// `Open Timeout`, `Collect Timeout` and `Linkage\Export` for `driver`, in one atomic update.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{performance_services, register_service, FileRegistry, ServiceConfig};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// let mut cfg = ServiceConfig::new("/opt/app/libperf.so", "OpenPerf", "CollectPerf", "ClosePerf");
/// cfg.export = vec!["AppCounters".into()];
/// register_service(&reg, "App", &cfg)?;
/// let services = performance_services(&reg)?;
/// assert_eq!(services[0].name, "App");
/// assert_eq!(services[0].export, ["AppCounters"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register_service<R: Registry + ?Sized>(
    registry: &R,
    driver: &str,
    config: &ServiceConfig,
) -> Result<(), RegistryError> {
    update(registry, |hive| write_service(hive, driver, config))
}

/// Removes `driver`'s values from `hive` (the body of [`unregister_service`]).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{paths, perflib, service, ServiceConfig};
///
/// let mut hive = perflib::new_hive();
/// let before = hive.clone();
/// service::write_service(&mut hive, "App", &ServiceConfig::new("a.so", "O", "C", "X"))?;
/// service::erase_service(&mut hive, "App")?;
/// assert_eq!(hive, before);
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn erase_service(hive: &mut Hive, driver: &str) -> Result<(), RegistryError> {
    check_name(NameKind::Service, driver)?;
    let perf = paths::performance(driver);
    for name in [
        LIBRARY,
        OPEN,
        COLLECT,
        CLOSE,
        OPEN_TIMEOUT,
        COLLECT_TIMEOUT,
        FACTORS,
        ON_DEMAND_TIMEOUT,
    ] {
        hive.delete_value(&perf, name)?;
    }
    hive.delete_value(&paths::linkage(driver), EXPORT)?;
    remove_if_empty(hive, &paths::linkage(driver))?;
    prune_service_keys(hive, driver)
}

/// Deletes `key` if it has no values and no subkeys.
pub(crate) fn remove_if_empty(hive: &mut Hive, key: &str) -> Result<(), RegistryError> {
    if hive.is_empty_key(key) {
        hive.delete_key(key)?;
    }
    Ok(())
}

/// Deletes `Services\<driver>\Performance` and then `Services\<driver>` if they are empty:
/// lodctr and register_service create them, so undoing both leaves no trace.
pub(crate) fn prune_service_keys(hive: &mut Hive, driver: &str) -> Result<(), RegistryError> {
    remove_if_empty(hive, &paths::performance(driver))?;
    remove_if_empty(hive, &paths::service(driver))
}

/// Undoes [`register_service`]: deletes the values it wrote (and the keys, if that leaves
/// them empty), in one atomic update. Counter ranges are lodctr's and stay; run
/// [`unlodctr`](super::unlodctr()) for them.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{performance_services, register_service, unregister_service};
/// use prfdata_registry::{FileRegistry, ServiceConfig};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// register_service(&reg, "App", &ServiceConfig::new("a.so", "O", "C", "X"))?;
/// unregister_service(&reg, "App")?;
/// assert!(performance_services(&reg)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn unregister_service<R: Registry + ?Sized>(
    registry: &R,
    driver: &str,
) -> Result<(), RegistryError> {
    update(registry, |hive| erase_service(hive, driver))
}

/// The `First Counter` and `First Help` lodctr assigned to `driver`: what a provider adds to
/// its offsets at Open time (the lodctr design specification's `OpenPerformanceData` example).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{first_counter_help, FileRegistry, RegistryError};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// // Not loaded yet:
/// assert!(matches!(first_counter_help(&reg, "App"), Err(RegistryError::ValueNotFound { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn first_counter_help<R: Registry + ?Sized>(
    registry: &R,
    driver: &str,
) -> Result<(u32, u32), RegistryError> {
    check_name(NameKind::Service, driver)?;
    let hive = registry.snapshot()?;
    let perf = paths::performance(driver);
    Ok((
        super::perflib::read_dword(&hive, &perf, FIRST_COUNTER)?,
        super::perflib::read_dword(&hive, &perf, FIRST_HELP)?,
    ))
}

/// Enables or disables a service's provider in `hive` (the body of [`set_service_enabled`]):
/// disabling writes `Disable Performance Counters` = 1, enabling deletes the value.
///
/// # Errors
///
/// [`RegistryError::BadName`] for a name that cannot be a service key,
/// [`RegistryError::NoSuchService`] if the service has no `Performance` key.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, service, ServiceConfig};
///
/// let mut hive = perflib::new_hive();
/// service::write_service(&mut hive, "App", &ServiceConfig::new("a.so", "O", "C", "X"))?;
/// service::enable_service(&mut hive, "app", false)?;
/// assert!(service::read_service(&hive, "App")?.unwrap().disabled);
/// service::enable_service(&mut hive, "App", true)?;
/// assert!(!service::read_service(&hive, "App")?.unwrap().disabled);
/// assert!(service::enable_service(&mut hive, "Nope", true).is_err());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn enable_service(hive: &mut Hive, driver: &str, enabled: bool) -> Result<(), RegistryError> {
    check_name(NameKind::Service, driver)?;
    let perf = paths::performance(driver);
    ensure(hive.key_exists(&perf), || RegistryError::NoSuchService {
        service: driver.to_owned(),
    })?;
    if enabled {
        hive.delete_value(&perf, DISABLE)?;
    } else {
        hive.set_value(&perf, DISABLE, Value::Dword(1))?;
    }
    Ok(())
}

/// lodctr `/E:service` and `/D:service`: enables or disables a service's provider in one
/// atomic, locked update. A disabled provider is skipped by collectors (perflib's
/// `Disable Performance Counters`); collectors disable a misbehaving one themselves.
///
/// # Errors
///
/// As [`enable_service`], or the registry's own error; nothing is written then.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{performance_services, register_service, set_service_enabled};
/// use prfdata_registry::{FileRegistry, RegistryError, ServiceConfig};
///
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// register_service(&reg, "App", &ServiceConfig::new("a.so", "O", "C", "X"))?;
/// set_service_enabled(&reg, "App", false)?;
/// assert!(performance_services(&reg)?[0].disabled);
/// let err = set_service_enabled(&reg, "Typo", true).unwrap_err();
/// assert!(matches!(err, RegistryError::NoSuchService { .. }) && err.to_string().contains("Typo"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_service_enabled<R: Registry + ?Sized>(
    registry: &R,
    driver: &str,
    enabled: bool,
) -> Result<(), RegistryError> {
    update(registry, |hive| enable_service(hive, driver, enabled))
}

/// A service that has a `Performance` key, with everything perflib reads from it.
///
/// # Examples
///
/// ```
/// use prfdata_registry::PerformanceService;
/// let s = PerformanceService::default();
/// assert!(!s.disabled && s.library.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerformanceService {
    /// The service (driver) name, as the key is spelled.
    pub name: String,
    /// `Library` (REG_SZ or REG_EXPAND_SZ, unexpanded).
    pub library: Option<String>,
    /// `Open`.
    pub open: Option<String>,
    /// `Collect`.
    pub collect: Option<String>,
    /// `Close`.
    pub close: Option<String>,
    /// `First Counter`.
    pub first_counter: Option<u32>,
    /// `Last Counter`.
    pub last_counter: Option<u32>,
    /// `First Help`.
    pub first_help: Option<u32>,
    /// `Last Help`.
    pub last_help: Option<u32>,
    /// `Map Fingerprint` ([`MAP_FINGERPRINT`]), when install recorded one; `None` without it or
    /// when it is not 16 hexadecimal digits.
    pub map_fingerprint: Option<u64>,
    /// `Dynamic Fingerprint` ([`DYNAMIC_FINGERPRINT`]): the run-time objects' map, when the app
    /// registered run-time names.
    pub dynamic_fingerprint: Option<u64>,
    /// `Ini File` ([`INI_FILE`]): the .INI install wrote, if any.
    pub ini_file: Option<String>,
    /// `Open Timeout` (ms).
    pub open_timeout_ms: Option<u32>,
    /// `Collect Timeout` (ms).
    pub collect_timeout_ms: Option<u32>,
    /// `Disable Performance Counters` is nonzero.
    pub disabled: bool,
    /// `Linkage\Export` (empty if absent).
    pub export: Vec<String>,
}

/// A fingerprint as [`MAP_FINGERPRINT`] stores it: 16 hexadecimal digits.
///
/// # Examples
///
/// ```
/// use prfdata_registry::service::{fingerprint_value, parse_fingerprint};
/// assert_eq!(parse_fingerprint(&fingerprint_value(0xabc)), Some(0xabc));
/// assert_eq!(parse_fingerprint("xyz"), None);
/// ```
pub fn parse_fingerprint(text: &str) -> Option<u64> {
    (text.len() == 16)
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

/// The text [`MAP_FINGERPRINT`] stores for `fingerprint`: 16 lower-case hexadecimal digits.
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_registry::service::fingerprint_value(255), "00000000000000ff");
/// ```
pub fn fingerprint_value(fingerprint: u64) -> String {
    format!("{fingerprint:016x}")
}

fn read_string(hive: &Hive, key: &str, name: &str) -> Result<Option<String>, RegistryError> {
    match hive.value(key, name)? {
        None => Ok(None),
        Some(Value::Sz(s) | Value::ExpandSz(s)) => Ok(Some(s.clone())),
        Some(other) => Err(wrong_type(key, name, ValueType::Sz, other)),
    }
}

/// Reads one service's Performance and Linkage values from a hive (`None` if it has no
/// Performance key).
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, service};
/// assert!(service::read_service(&perflib::new_hive(), "App")?.is_none());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn read_service(
    hive: &Hive,
    driver: &str,
) -> Result<Option<PerformanceService>, RegistryError> {
    let perf = paths::performance(driver);
    if !hive.key_exists(&perf) {
        return Ok(None);
    }
    let dword = |name| read_optional_dword(hive, &perf, name);
    let export = read_optional_multi_sz(hive, &paths::linkage(driver), EXPORT)?;
    let name = hive
        .key_path(&paths::service(driver))
        .and_then(|p| p.rsplit_once('\\').map(|(_, n)| n.to_owned()))
        .unwrap_or_else(|| driver.to_owned());
    Ok(Some(PerformanceService {
        name,
        library: read_string(hive, &perf, LIBRARY)?,
        open: read_string(hive, &perf, OPEN)?,
        collect: read_string(hive, &perf, COLLECT)?,
        close: read_string(hive, &perf, CLOSE)?,
        first_counter: dword(FIRST_COUNTER)?,
        last_counter: dword(LAST_COUNTER)?,
        first_help: dword(FIRST_HELP)?,
        last_help: dword(LAST_HELP)?,
        map_fingerprint: read_string(hive, &perf, MAP_FINGERPRINT)?
            .as_deref()
            .and_then(parse_fingerprint),
        dynamic_fingerprint: read_string(hive, &perf, DYNAMIC_FINGERPRINT)?
            .as_deref()
            .and_then(parse_fingerprint),
        ini_file: read_string(hive, &perf, INI_FILE)?,
        open_timeout_ms: dword(OPEN_TIMEOUT)?,
        collect_timeout_ms: dword(COLLECT_TIMEOUT)?,
        disabled: dword(DISABLE)?.is_some_and(|d| d != 0),
        export: export.map_or_else(Vec::new, <[String]>::to_vec),
    }))
}

/// Every service with a `Performance` key, in key order, as read from a hive.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{perflib, service};
/// assert!(service::services_in(&perflib::new_hive())?.is_empty());
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn services_in(hive: &Hive) -> Result<Vec<PerformanceService>, RegistryError> {
    let mut out = Vec::new();
    for key in hive.subkeys(paths::SERVICES)? {
        let Some((_, name)) = key.rsplit_once('\\') else {
            continue;
        };
        if let Some(s) = read_service(hive, name)? {
            out.push(s);
        }
    }
    Ok(out)
}

/// Every service with a `Performance` key: what a collector enumerates to find providers.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{performance_services, FileRegistry};
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path())?;
/// assert!(performance_services(&reg)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn performance_services<R: Registry + ?Sized>(
    registry: &R,
) -> Result<Vec<PerformanceService>, RegistryError> {
    services_in(&registry.snapshot()?)
}

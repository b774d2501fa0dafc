//! Install / Uninstall a map (feature `install`): CPrfData's `Install(library)` and
//! `Uninstall()`, for apps that install themselves.
//!
//! The map is validated (the map's rules, [`MapError`](crate::map::MapError): its app name becomes the file names),
//! described as a [`CounterSet`] ([`counter_set`]) and handed to
//! [`prfdata_registry::install`], which writes the .INI and .h, loads them and registers the
//! provider library in one registry update. [`PrfData::install`](crate::PrfData::install) and
//! [`PrfData::uninstall`](crate::PrfData::uninstall) do the same for a `prfdata_map!` map.

use prfdata_registry::install as registry_install;
use prfdata_registry::{check_names_fit, paths, service, FileRegistry, Registry};

pub use prfdata_registry::install::{
    check_library, ini_dir, provider_library, CounterNames, CounterSet, InstallError,
    InstallOptions, ObjectNames, Text, PROVIDER_ENV, PROVIDER_FILE,
};
pub use prfdata_registry::CounterRange;

use crate::map::{self, MapDef};
use crate::Error;

/// The counter set `map` installs: its app, and each object and named counter (bases have no
/// name) with its symbol, symbolic offset and texts.
///
/// # Examples
///
/// ```
/// prfdata::prfdata_map! { pub mod m { app: "CounterSetDoc", object OBJ = 0 { name: "O",
///   help: "o", detail: Novice, default: none, instances: none, costly: false, counters {
///   CTR = 2: AverageTimer { name: "C", help: "c", detail: Novice, scale: 0 },
///   CTR_BASE: AverageBase, } } } }
/// let set = prfdata::install::counter_set(&m::MAP);
/// assert_eq!(set.app, "CounterSetDoc");
/// assert_eq!(set.objects[0].counters.len(), 1, "the base has no name");
/// assert_eq!(set.objects[0].counters[0].offset, 2);
/// ```
pub fn counter_set(map: &MapDef) -> CounterSet {
    counter_set_with(map, map.fingerprint())
}

/// [`counter_set`] of a map whose fingerprint ([`MapDef::fingerprint`]) the caller has already
/// computed: a run-time change computes it once for the names and the block.
pub(crate) fn counter_set_with(map: &MapDef, fingerprint: u64) -> CounterSet {
    let texts = |texts: &[map::Text]| {
        texts
            .iter()
            .map(|t| Text::new(t.lang, t.name, t.help))
            .collect()
    };
    CounterSet {
        app: map.app.to_owned(),
        objects: map
            .objects
            .iter()
            .map(|obj| ObjectNames {
                symbol: obj.symbol.to_owned(),
                offset: obj.offset,
                texts: texts(obj.texts),
                counters: obj
                    .counters
                    .iter()
                    .filter_map(|ctr| {
                        Some(CounterNames {
                            symbol: ctr.symbol.to_owned(),
                            offset: ctr.offset?,
                            texts: texts(ctr.texts),
                            factor: ctr.factor.map(|f| f.to_string()),
                            unit: ctr.unit.map(str::to_owned),
                        })
                    })
                    .collect(),
            })
            .collect(),
        fingerprint: Some(fingerprint),
    }
}

/// The check `activate` makes with this feature: if the default registry
/// (`PRFDATA_REGISTRY`, else the per-user state folder) has the app installed, its names must
/// fit `map` ([`prfdata_registry::check_names_fit`]: the range holds the map's highest offset,
/// and the fingerprint install recorded is the map's). No registry, or the app not installed,
/// is fine (an app may run before it is installed, or never be); a registry that cannot be read
/// is logged and not held against the app (the provider checks again before it labels anything).
pub(crate) fn check_installed(map: &MapDef) -> Result<(), Error> {
    let Ok(root) = paths::registry_root() else {
        return Ok(());
    };
    if !root.join(paths::STORE_FILE).exists() {
        return Ok(());
    }
    let installed = FileRegistry::open(&root)
        .and_then(|reg| reg.snapshot())
        .and_then(|hive| service::read_service(&hive, map.app));
    match installed {
        Ok(Some(installed)) => check_names_fit(&installed, map.highest_offset(), map.fingerprint())
            .map_err(|e| Error::InstalledNames {
                app: e.app.clone(),
                first_counter: e.first_counter,
                last_counter: e.last_counter,
                needed_last_counter: e.needed_last_counter,
                reason: e.to_string(),
            }),
        Ok(None) => Ok(()),
        Err(e) => {
            log::warn!(
                "app {}: cannot check its installed names in {}: {e}",
                map.app,
                root.display()
            );
            Ok(())
        }
    }
}

/// Installs `map` into `registry`: validates it, then
/// [`prfdata_registry::install::install_in`] with its [`counter_set`].
///
/// # Errors
///
/// [`InstallError::Map`] (holding the [`MapError`](crate::map::MapError)) if the map is
/// invalid; otherwise as [`prfdata_registry::install::install_in`].
///
/// # Examples
///
/// ```
/// use prfdata::install::{install_in, uninstall_in, InstallOptions};
/// prfdata::prfdata_map! { pub mod m { app: "InstallDoc", object OBJ = 0 { name: "O", help: "o",
///   detail: Novice, default: none, instances: none, costly: false, counters {
///   CTR = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
/// let dir = tempfile::tempdir()?;
/// let reg = prfdata_registry::FileRegistry::open(dir.path().join("registry"))?;
/// let opts = InstallOptions {
///     library: "/opt/app/libprfdata_provider.so".into(),
///     ini_dir: dir.path().to_path_buf(),
///     replace: false,
/// };
/// let range = install_in(&reg, &m::MAP, &opts)?;
/// assert_eq!((range.first_counter, range.first_help), (1848, 1849));
/// uninstall_in(&reg, &m::MAP)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn install_in<R: Registry + ?Sized>(
    registry: &R,
    map: &MapDef,
    options: &InstallOptions,
) -> Result<CounterRange, InstallError> {
    map::validate(map).map_err(|e| InstallError::Map(Box::new(e)))?;
    registry_install::install_in(registry, &counter_set(map), options)
}

/// [`install_in`] the default registry (`PRFDATA_REGISTRY`, else the per-user state folder),
/// after refusing a provider library that is not an existing regular file (nothing is written
/// or created then): what an app that installs itself calls, with [`provider_library`].
///
/// # Errors
///
/// [`InstallError::NoLibrary`] if `options.library` is not an existing regular file; otherwise
/// as [`install_in`].
///
/// # Examples
///
/// ```no_run
/// # prfdata::prfdata_map! { pub mod m { app: "InstallDefaultDoc", object OBJ = 0 { name: "O",
/// #   help: "o", detail: Novice, default: none, instances: none, costly: false, counters {
/// #   CTR = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
/// let opts = prfdata::install::InstallOptions {
///     library: "/opt/app/libprfdata_provider.so".into(),
///     ini_dir: "/opt/app/counters".into(),
///     replace: true,
/// };
/// prfdata::install::install(&m::MAP, &opts)?;
/// # Ok::<(), prfdata::install::InstallError>(())
/// ```
pub fn install(map: &MapDef, options: &InstallOptions) -> Result<CounterRange, InstallError> {
    registry_install::check_library(&options.library)?;
    install_in(&FileRegistry::open_default()?, map, options)
}

/// Uninstalls `map` from `registry`: its names and help in every language and its provider
/// registration, in one update (CPrfData's `Uninstall`).
///
/// # Errors
///
/// As [`prfdata_registry::install::uninstall_in`].
pub fn uninstall_in<R: Registry + ?Sized>(
    registry: &R,
    map: &MapDef,
) -> Result<CounterRange, InstallError> {
    registry_install::uninstall_in(registry, map.app)
}

/// [`uninstall_in`] the default registry.
///
/// # Errors
///
/// As [`uninstall_in`].
///
/// # Examples
///
/// ```no_run
/// # prfdata::prfdata_map! { pub mod m { app: "UninstallDoc", object OBJ = 0 { name: "O",
/// #   help: "o", detail: Novice, default: none, instances: none, costly: false, counters {
/// #   CTR = 2: RawCount { name: "C", help: "c", detail: Novice, scale: 0 }, } } } }
/// prfdata::install::uninstall(&m::MAP)?;
/// # Ok::<(), prfdata::install::InstallError>(())
/// ```
pub fn uninstall(map: &MapDef) -> Result<CounterRange, InstallError> {
    uninstall_in(&FileRegistry::open_default()?, map)
}

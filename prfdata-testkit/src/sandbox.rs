//! A temp registry and block folder, with maps installed against the real provider, and the
//! environment that points a child process at them.

use std::path::{Path, PathBuf};
use std::process::Command;

use prfdata::install::{install_in, InstallOptions};
use prfdata::map::MapDef;
use prfdata_registry::{paths, update, CounterRange, FileRegistry, RegistryError, Value};

/// A temp folder holding a registry (`registry/`), a block folder (`shm/`, created) and the
/// `.ini` files installs write (`ini/`); removed when dropped.
///
/// # Examples
///
/// ```
/// let sandbox = prfdata_testkit::Sandbox::new();
/// assert!(sandbox.shm.is_dir());
/// let registry = sandbox.open();
/// assert_eq!(registry.root(), sandbox.registry);
/// let mut child = std::process::Command::new("env");
/// sandbox.apply_env(&mut child);
/// let seen: Vec<_> = child.get_envs().map(|(k, _)| k.to_owned()).collect();
/// assert!(seen.iter().any(|k| k == "PRFDATA_SHM_DIR"));
/// ```
#[derive(Debug)]
pub struct Sandbox {
    /// The temp folder (removed when the sandbox drops).
    pub dir: tempfile::TempDir,
    /// The registry's folder, `PRFDATA_REGISTRY` for its processes.
    pub registry: PathBuf,
    /// The block folder, `PRFDATA_SHM_DIR` for its processes.
    pub shm: PathBuf,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// A new, empty sandbox.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp folder for the sandbox");
        let registry = dir.path().join("registry");
        let shm = dir.path().join("shm");
        std::fs::create_dir_all(&shm).expect("the sandbox's block folder");
        Self { dir, registry, shm }
    }

    /// The path of `name` in the sandbox's folder.
    ///
    /// # Examples
    ///
    /// ```
    /// let sandbox = prfdata_testkit::Sandbox::new();
    /// assert_eq!(sandbox.path("out.csv").parent(), Some(sandbox.dir.path()));
    /// ```
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The sandbox's registry, opened (and created the first time).
    pub fn open(&self) -> FileRegistry {
        FileRegistry::open(&self.registry).expect("the sandbox's registry opens")
    }

    /// Installs `map` with the real provider ([`crate::provider_library`]) as its library,
    /// replacing an earlier install; returns its counter range.
    ///
    /// # Examples
    ///
    /// See the [crate docs](crate).
    pub fn install(&self, map: &MapDef) -> CounterRange {
        self.install_with(map, &crate::provider_library())
    }

    /// Installs `map` with `library` as its provider.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # prfdata::prfdata_map! { pub mod app { app: "SandboxDoc",
    /// #   object O = 0 { name: "O", help: "h", detail: Novice, default: none, instances: none,
    /// #     costly: false, counters { C = 2: RawCount { name: "C", help: "h", detail: Novice, scale: 0 }, } } } }
    /// let sandbox = prfdata_testkit::Sandbox::new();
    /// let copy = sandbox.path("libprovider_copy.so");
    /// std::fs::copy(prfdata_testkit::provider_library(), &copy)?;
    /// let range = sandbox.install_with(&app::MAP, &copy);
    /// assert!(range.first_counter > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn install_with(&self, map: &MapDef, library: &Path) -> CounterRange {
        let options = InstallOptions {
            library: library.to_path_buf(),
            ini_dir: self.path("ini"),
            replace: true,
        };
        install_in(&self.open(), map, &options)
            .unwrap_or_else(|e| panic!("install {} in the sandbox: {e}", map.app))
    }

    /// Points `command` at the sandbox: `PRFDATA_REGISTRY` and `PRFDATA_SHM_DIR` set, the
    /// registry's fault-injection variable removed.
    pub fn apply_env<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command
            .env("PRFDATA_REGISTRY", &self.registry)
            .env("PRFDATA_SHM_DIR", &self.shm)
            .env_remove("PRFDATA_REGISTRY_FAULT")
    }

    /// Sets this process's `PRFDATA_REGISTRY` and `PRFDATA_SHM_DIR` to the sandbox's, for a
    /// provider loaded in process, until the guard drops (see [`crate::process_env`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let sandbox = prfdata_testkit::Sandbox::new();
    /// let _env = sandbox.process_env();
    /// assert_eq!(std::env::var_os("PRFDATA_REGISTRY"), Some(sandbox.registry.clone().into()));
    /// ```
    pub fn process_env(&self) -> crate::ProcessEnv {
        crate::ProcessEnv::set(&self.registry, &self.shm)
    }
}

/// Adds English names and explain texts to `registry` from `index` on: `entries[i]` is the
/// (name, explain text) of index `index + 2i`, its explain text at `index + 2i + 1`, as
/// lodctr writes them into `Perflib\009`.
///
/// # Examples
///
/// ```
/// let sandbox = prfdata_testkit::Sandbox::new();
/// let registry = sandbox.open();
/// prfdata_testkit::sandbox::write_names(&registry, 1848, &[("Probe".into(), "A probe.".into())]);
/// use prfdata_registry::Registry;
/// let hive = registry.snapshot()?;
/// let key = prfdata_registry::paths::perflib_language("009");
/// assert!(matches!(hive.value(&key, "Counter")?, Some(prfdata_registry::Value::MultiSz(v)) if v == &["1848", "Probe"]));
/// # Ok::<(), prfdata_registry::RegistryError>(())
/// ```
pub fn write_names(registry: &FileRegistry, index: u32, entries: &[(String, String)]) {
    let key = paths::perflib_language("009");
    update(registry, |hive| {
        let mut counter = match hive.value(&key, "Counter")? {
            Some(Value::MultiSz(v)) => v.clone(),
            _ => Vec::new(),
        };
        let mut help = match hive.value(&key, "Help")? {
            Some(Value::MultiSz(v)) => v.clone(),
            _ => Vec::new(),
        };
        for (i, (name, text)) in entries.iter().enumerate() {
            let n = index + 2 * i as u32;
            counter.extend([n.to_string(), name.clone()]);
            help.extend([(n + 1).to_string(), text.clone()]);
        }
        hive.set_value(&key, "Counter", Value::MultiSz(counter))?;
        hive.set_value(&key, "Help", Value::MultiSz(help))?;
        Ok::<(), RegistryError>(())
    })
    .expect("write the names");
}

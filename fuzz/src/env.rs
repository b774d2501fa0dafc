//! One scratch folder per fuzzing process: the block folder and the registry the provider reads,
//! with the fuzz apps installed, and room for the files each harness writes.
//!
//! ```text
//! <tmp>/prfdata-fuzz-<pid>/
//!   shm/        PRFDATA_SHM_DIR: the provider's app block (FuzzApp.blk) goes here
//!   registry/   PRFDATA_REGISTRY: PrfDataDemo and PrfDataFuzz installed
//!   ini/        the .INI and .h files install wrote
//!   templates/  where the template blocks are built
//!   work/       the files harnesses write (blocks, .INI files, registry stores)
//! ```
//!
//! `<tmp>` is `/dev/shm` when it exists (the blocks' real home, and no disk I/O per input),
//! else the system temporary folder. The folder is removed when the process exits normally
//! (libFuzzer's `-max_total_time` and `-runs` end with `exit`); a crash leaves it for
//! inspection.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use prfdata::install::{install_in, InstallOptions};
use prfdata_registry::{CounterRange, FileRegistry};

use crate::maps::{self, Template};

/// The scratch folder and what is installed in it.
#[derive(Debug)]
pub struct Env {
    /// The scratch folder.
    pub root: PathBuf,
    /// `PRFDATA_SHM_DIR`.
    pub shm: PathBuf,
    /// `PRFDATA_REGISTRY`.
    pub registry: PathBuf,
    /// For harnesses' own files.
    pub work: PathBuf,
    /// For the template blocks.
    pub templates: PathBuf,
    /// Where the demo's names start (First Counter ...).
    pub demo: CounterRange,
    /// Where the fuzz map's names start.
    pub fuzz: CounterRange,
}

/// The process's environment, made on first use: the folders, `PRFDATA_SHM_DIR` and
/// `PRFDATA_REGISTRY` set, the demo's map and the fuzz map installed (in that order, so that
/// the demo's names start at 1848 as on a fresh machine, like the committed seeds).
///
/// # Panics
///
/// If the scratch folder cannot be made: the harness cannot run at all.
///
/// # Examples
///
/// ```
/// let env = prfdata_fuzz::env::get();
/// assert_eq!(env.demo.first_counter, 1848);
/// assert_eq!(std::env::var_os("PRFDATA_SHM_DIR").as_deref(), Some(env.shm.as_os_str()));
/// ```
pub fn get() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(make)
}

/// The real blocks the structure-aware target edits ([`maps::build_templates`]), built once per
/// process in the scratch folder's `templates/`.
///
/// # Panics
///
/// If a block cannot be made (the scratch folder is unusable).
///
/// # Examples
///
/// ```
/// let t = prfdata_fuzz::env::templates();
/// assert_eq!(&t[1].bytes[..8], b"PRFDATA\0");
/// ```
pub fn templates() -> &'static [Template] {
    static TEMPLATES: OnceLock<Vec<Template>> = OnceLock::new();
    TEMPLATES.get_or_init(|| maps::build_templates(&get().templates))
}

fn make() -> Env {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let root = base.join(format!("prfdata-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let sub = |name: &str| {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create the scratch folder {}: {e}", dir.display()));
        set_private(&dir);
        dir
    };
    let (shm, registry, work, templates, ini) = (
        sub("shm"),
        sub("registry"),
        sub("work"),
        sub("templates"),
        sub("ini"),
    );
    set_private(&root);
    std::env::set_var("PRFDATA_SHM_DIR", &shm);
    std::env::set_var("PRFDATA_REGISTRY", &registry);
    remove_at_exit(&root);

    let reg = FileRegistry::open(&registry).unwrap_or_else(|e| panic!("registry: {e}"));
    let options = InstallOptions {
        // Never loaded: the harness links the provider and calls it directly.
        library: root.join("libprfdata_provider.so"),
        ini_dir: ini,
        replace: true,
    };
    let install = |map| install_in(&reg, map, &options).unwrap_or_else(|e| panic!("install: {e}"));
    let demo = install(&maps::demo::MAP);
    let fuzz = install(&maps::rich::MAP);
    // The fuzz app's block is a file this process places (its lock held, so the app looks
    // alive) and nobody serves its on-demand counters: with the default bound every Collect of
    // an input would wait 20 ms for values that never come. A bound of 0 serves the last ones.
    prfdata_registry::update(&reg, |hive| {
        hive.set_value(
            &prfdata_registry::paths::performance(maps::rich::MAP.app),
            prfdata_registry::stats::ON_DEMAND_TIMEOUT,
            prfdata_registry::Value::Dword(0),
        )
    })
    .unwrap_or_else(|e: prfdata_registry::RegistryError| panic!("OnDemand Timeout: {e}"));
    Env {
        root,
        shm,
        registry,
        work,
        templates,
        demo,
        fuzz,
    }
}

fn set_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
}

/// Removes `root` when the process exits through `exit` (as libFuzzer does at the end of a
/// bounded run), so CI does not fill `/dev/shm`.
fn remove_at_exit(root: &Path) {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    extern "C" fn remove() {
        if let Some(root) = ROOT.get() {
            let _ = std::fs::remove_dir_all(root);
        }
    }
    if ROOT.set(root.to_path_buf()).is_ok() {
        // SAFETY: `remove` is an `extern "C" fn()` that does not unwind (remove_dir_all returns
        // errors, it does not panic) and touches only a static set before registration.
        unsafe {
            libc::atexit(remove);
        }
    }
}

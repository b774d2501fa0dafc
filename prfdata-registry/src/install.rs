//! Install / Uninstall a counter set: CPrfData's `Install(library)` and `Uninstall()`, from a
//! neutral description ([`CounterSet`]) so that this crate knows nothing of prfdata's map types
//! (prfdata's `install` feature converts a map into one and offers `PrfData::install`).
//!
//! Install writes the set's counter .INI and symbol .h (to a folder the caller chooses, so they
//! can be read and fed to `prfmon lodctr` by hand), loads them through the same lodctr code, and
//! registers the provider library (Library, Open, Collect, Close, Linkage\Export) in the same
//! atomic registry update. At run time the provider reads First Counter / First Help from the
//! registry, as the lodctr design specification prescribes.
//!
//! The app name is checked first ([`check_name`]: it becomes the file names). The two files are
//! written whole under a temporary name created with `O_CREAT | O_EXCL | O_NOFOLLOW` and renamed
//! over `<app>.ini` / `<app>.h`: a symbolic link planted at either name in a shared folder is
//! replaced, never written through.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use prfdata_untrusted::{check_name, NameKind};

use crate::ini::CounterIni;
use crate::{
    apply_lodctr, apply_unlodctr, check_names_fit, paths, service, update, CounterRange,
    FileRegistry, LodctrError, LodctrOptions, Registry, RegistryError, ServiceConfig, Value,
};

/// A counter set as install writes it: the app (the driver name under `Services` and the name
/// of its block), and each object and named counter with its symbol, symbolic offset and
/// texts. Base counters have no name of their own and are not listed.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{CounterNames, CounterSet, ObjectNames, Text};
/// let set = CounterSet {
///     app: "MyApp".into(),
///     objects: vec![ObjectNames {
///         symbol: "JOBS".into(),
///         offset: 0,
///         texts: vec![Text::new("009", "Jobs", "Jobs processed.")],
///         counters: vec![CounterNames {
///             symbol: "DONE".into(),
///             offset: 2,
///             texts: vec![Text::new("009", "Jobs/sec", "Jobs done per second.")],
///             factor: None,
///             unit: None,
///         }],
///     }],
///     fingerprint: None,
/// };
/// assert!(prfdata_registry::install::symbol_file(&set).contains("#define DONE 2\n"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterSet {
    /// The app name: the driver name, and the `<app>.ini` / `<app>.h` file names.
    pub app: String,
    /// The objects, in declaration order.
    pub objects: Vec<ObjectNames>,
    /// The fingerprint of the map the set comes from (prfdata's `MapDef::fingerprint`), which
    /// install records as [`MAP_FINGERPRINT`](crate::service::MAP_FINGERPRINT); `None` records
    /// none (then only the name range is checked against a block).
    pub fingerprint: Option<u64>,
}

/// One object of a [`CounterSet`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectNames {
    /// The programmatic symbol (`#define` in the symbol file).
    pub symbol: String,
    /// The symbolic offset (even): name index = First Counter + this.
    pub offset: u32,
    /// Name and explain text per language; the first is 009 (English).
    pub texts: Vec<Text>,
    /// The object's named counters (bases left out), in declaration order.
    pub counters: Vec<CounterNames>,
}

/// One named counter of an [`ObjectNames`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterNames {
    /// The programmatic symbol.
    pub symbol: String,
    /// The symbolic offset (even).
    pub offset: u32,
    /// Name and explain text per language; the first is 009 (English).
    pub texts: Vec<Text>,
    /// The scale factor monitors apply to displayed values, `*N` or `/N` (the Windows 95 stat-server interface's
    /// `PSTF_FACTOR_MULTIPLY` / `PSTF_FACTOR_DIVIDE`): written to `Performance\Factors`
    /// ([`crate::stats`]).
    pub factor: Option<String>,
    /// The unit the raw value is in (`bytes`, `seconds`): written to `Performance\Units`
    /// ([`crate::stats`]).
    pub unit: Option<String>,
}

/// A name and explain text in one language (`"009"` is English, `"00C"` French, ...).
///
/// # Examples
///
/// ```
/// let t = prfdata_registry::install::Text::new("00C", "Travaux", "Travaux faits.");
/// assert_eq!(t.lang, "00C");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Text {
    /// The perflib language id: three hexadecimal digits, as the registry's `Perflib\009`.
    pub lang: String,
    /// The name shown in monitors.
    pub name: String,
    /// The explain text.
    pub help: String,
}

impl Text {
    /// A text in language `lang`.
    pub fn new(lang: impl Into<String>, name: impl Into<String>, help: impl Into<String>) -> Text {
        Text {
            lang: lang.into(),
            name: name.into(),
            help: help.into(),
        }
    }
}

/// The export names of the provider library (`libprfdata_provider.so`).
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_registry::install::OPEN_FUNCTION, "OpenPerformanceData");
/// ```
pub const OPEN_FUNCTION: &str = "OpenPerformanceData";
/// See [`OPEN_FUNCTION`].
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_registry::install::COLLECT_FUNCTION, "CollectPerformanceData");
/// ```
pub const COLLECT_FUNCTION: &str = "CollectPerformanceData";
/// See [`OPEN_FUNCTION`].
///
/// # Examples
///
/// ```
/// assert_eq!(prfdata_registry::install::CLOSE_FUNCTION, "ClosePerformanceData");
/// ```
pub const CLOSE_FUNCTION: &str = "ClosePerformanceData";

/// What went wrong installing or uninstalling.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{install_in, CounterSet, InstallError, InstallOptions};
/// let dir = tempfile::tempdir()?;
/// let reg = prfdata_registry::FileRegistry::open(dir.path().join("registry"))?;
/// let set = CounterSet { app: "../evil".into(), objects: vec![], fingerprint: None };
/// let opts = InstallOptions { library: "/x.so".into(), ini_dir: dir.path().into(), replace: false };
/// assert!(matches!(install_in(&reg, &set, &opts), Err(InstallError::Map(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The .INI or .h could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The counter set cannot be installed as given: its app name cannot name the files
    /// ([`prfdata_untrusted::BadName`]), or, from prfdata, the map's own validation error.
    #[error("invalid map: {0}")]
    Map(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The app is installed already, with the names of another map than this one (see
    /// [`NamesMismatch`](crate::NamesMismatch)): install with `replace` to load this map's.
    #[error("{0}")]
    MapChanged(Box<crate::NamesMismatch>),
    /// lodctr / unlodctr refused (already installed, not installed, ...).
    #[error(transparent)]
    Lodctr(#[from] LodctrError),
    /// The registry could not be opened or updated.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The provider library to register is not an existing regular file: refused before
    /// anything is written or created.
    #[error(
        "the provider library {path} {why}: build it with `cargo build -p prfdata-provider` \
         and register the `libprfdata_provider.so` it makes (in target/debug)"
    )]
    NoLibrary {
        /// The library given.
        path: PathBuf,
        /// What is wrong with it ("does not exist", "is not a regular file").
        why: String,
    },
    /// [`provider_library`] found no `libprfdata_provider.so` where it looked.
    #[error(
        "found no provider library (looked for {}): build it with `cargo build -p prfdata-provider`, \
         or set {PROVIDER_ENV} to its path",
        looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoProvider {
        /// Each path looked at, in order.
        looked: Vec<PathBuf>,
    },
}

/// How to install.
#[derive(Clone, Debug)]
pub struct InstallOptions {
    /// The provider library to record as `Library` (usually `libprfdata_provider.so` next to the
    /// app, as HWInputMon found its DLL).
    pub library: PathBuf,
    /// Where to write `<app>.ini` and `<app>.h`.
    pub ini_dir: PathBuf,
    /// Reinstall over an existing installation (lodctr `--replace`).
    pub replace: bool,
}

/// The variable naming the provider library [`provider_library`] returns.
pub const PROVIDER_ENV: &str = "PRFDATA_PROVIDER";

/// The provider library's file name, as Cargo builds it.
pub const PROVIDER_FILE: &str = "libprfdata_provider.so";

/// The provider library an app registers when it installs itself: `$PRFDATA_PROVIDER` if set,
/// else `libprfdata_provider.so` beside the running program, else in the folder above it
/// (where Cargo puts the library when the program is an example or a test, in `examples/` or
/// `deps/`). The path returned is an existing regular file, made absolute.
///
/// # Errors
///
/// [`InstallError::NoLibrary`] if `$PRFDATA_PROVIDER` names no regular file;
/// [`InstallError::NoProvider`] naming every place looked at if none holds the library.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{provider_library, InstallError};
/// match provider_library() {
///     Ok(library) => assert!(library.is_file()),
///     Err(InstallError::NoProvider { looked }) => assert!(!looked.is_empty()),
///     Err(e) => panic!("{e}"),
/// }
/// ```
pub fn provider_library() -> Result<PathBuf, InstallError> {
    if let Some(path) = std::env::var_os(PROVIDER_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        check_library(&path)?;
        return Ok(std::fs::canonicalize(&path).unwrap_or(path));
    }
    let exe = std::env::current_exe().ok();
    let beside = exe.as_deref().and_then(Path::parent);
    let looked: Vec<PathBuf> = beside
        .into_iter()
        .chain(beside.and_then(Path::parent))
        .map(|folder| folder.join(PROVIDER_FILE))
        .collect();
    match looked.iter().find(|path| path.is_file()) {
        Some(found) => Ok(std::fs::canonicalize(found).unwrap_or_else(|_| found.clone())),
        None => Err(InstallError::NoProvider { looked }),
    }
}

/// Refuses a provider library that is not an existing regular file
/// ([`InstallError::NoLibrary`]), as [`install`] does before it writes anything.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{check_library, InstallError};
/// let err = check_library("/nonexistent/libprfdata_provider.so".as_ref()).unwrap_err();
/// assert!(matches!(err, InstallError::NoLibrary { .. }));
/// assert!(err.to_string().contains("cargo build -p prfdata-provider"));
/// ```
pub fn check_library(path: &Path) -> Result<(), InstallError> {
    let why = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => return Ok(()),
        Ok(_) => "is not a regular file".to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_owned(),
        Err(e) => format!("cannot be read ({e})"),
    };
    Err(InstallError::NoLibrary {
        path: path.to_path_buf(),
        why,
    })
}

/// The folder the counter files (`<app>.ini`, `<app>.h`) of an app that installs itself go to:
/// `ini` in the registry's folder (`PRFDATA_REGISTRY`, else the per-user state folder).
///
/// # Errors
///
/// [`InstallError::Registry`] if no registry folder can be named (no `HOME`).
///
/// # Examples
///
/// ```
/// let dir = prfdata_registry::install::ini_dir()?;
/// assert!(dir.ends_with("ini"));
/// # Ok::<(), prfdata_registry::install::InstallError>(())
/// ```
pub fn ini_dir() -> Result<PathBuf, InstallError> {
    Ok(crate::paths::registry_root()?.join("ini"))
}

/// The name a language id is listed under in `[languages]`.
fn language_name(lang: &str) -> &'static str {
    match lang.to_ascii_uppercase().as_str() {
        "009" => "English",
        "007" => "German",
        "00A" => "Spanish",
        "00C" => "French",
        "010" => "Italian",
        "011" => "Japanese",
        "013" => "Dutch",
        "016" => "Portuguese",
        "019" => "Russian",
        _ => "Language",
    }
}

/// Appends `text` to `out` as one line of INI text (the format allows no line breaks): its
/// words joined by single spaces.
fn push_one_line(out: &mut String, text: &str) {
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
}

/// The symbol .h of a counter set: `#define SYMBOL offset` for every object and named counter.
pub fn symbol_file(set: &CounterSet) -> String {
    let mut h = format!(
        "// Symbolic offsets of the {} performance data map (generated by prfdata).\n",
        set.app
    );
    for obj in &set.objects {
        let _ = writeln!(h, "#define {} {}", obj.symbol, obj.offset);
        for ctr in &obj.counters {
            let _ = writeln!(h, "#define {} {}", ctr.symbol, ctr.offset);
        }
    }
    h
}

/// The counter .INI of a counter set, in the lodctr design specification's format, naming `symbol_file` as its symbol
/// file.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{ini_file, CounterNames, CounterSet, ObjectNames, Text};
/// let set = CounterSet {
///     app: "IniDoc".into(),
///     objects: vec![ObjectNames {
///         symbol: "OBJ".into(),
///         offset: 0,
///         texts: vec![Text::new("009", "Obj", "An object."), Text::new("00C", "Objet", "Un objet.")],
///         counters: vec![CounterNames {
///             symbol: "CTR".into(),
///             offset: 2,
///             texts: vec![Text::new("009", "Ctr", "A counter.")],
///             factor: None,
///             unit: None,
///         }],
///     }],
///     fingerprint: None,
/// };
/// let ini = ini_file(&set, "IniDoc.h");
/// assert!(ini.starts_with("[info]\ndrivername=IniDoc\nsymbolfile=IniDoc.h\n"));
/// assert!(ini.contains("009=English\n00C=French\n"));
/// assert!(ini.contains("OBJ_009_HELP=An object.\n"));
/// assert!(ini.contains("OBJ_00C_NAME=Objet\n"));
/// ```
pub fn ini_file(set: &CounterSet, symbol_file: &str) -> String {
    let mut langs: Vec<&str> = Vec::new();
    let all_texts = set.objects.iter().flat_map(|o| {
        o.texts
            .iter()
            .chain(o.counters.iter().flat_map(|c| c.texts.iter()))
    });
    for t in all_texts {
        if !langs.iter().any(|l| l.eq_ignore_ascii_case(&t.lang)) {
            langs.push(&t.lang);
        }
    }
    let mut ini = format!(
        "[info]\ndrivername={}\nsymbolfile={symbol_file}\n\n[languages]\n",
        set.app
    );
    for lang in &langs {
        let _ = writeln!(ini, "{lang}={}", language_name(lang));
    }
    ini.push_str("\n[text]\n");
    let mut entry = |symbol: &str, texts: &[Text]| {
        for t in texts {
            for (kind, text) in [("NAME", &t.name), ("HELP", &t.help)] {
                for part in [symbol, "_", &t.lang, "_", kind, "="] {
                    ini.push_str(part);
                }
                push_one_line(&mut ini, text);
                ini.push('\n');
            }
        }
    };
    for obj in &set.objects {
        entry(&obj.symbol, &obj.texts);
        for ctr in &obj.counters {
            entry(&ctr.symbol, &ctr.texts);
        }
    }
    ini
}

/// Writes `bytes` to `path` whole: into a new temporary file beside it (which nothing planted
/// can redirect), flushed to the disk if `durable`, then renamed over `path` (which replaces a
/// link rather than follow it). The temporary file is removed if anything fails.
fn replace_file(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    // One left by a killed install of an earlier process with this pid.
    let _ = std::fs::remove_file(&temp);
    let written = prfdata_untrusted::create_new(&temp, 0o666).and_then(|mut file| {
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        std::fs::rename(&temp, path)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Installs `set` into `registry`: writes `<app>.ini` and `<app>.h` into `options.ini_dir`, loads
/// them with lodctr and registers `options.library` as the app's provider, in one atomic update.
///
/// # Errors
///
/// [`InstallError::Map`] if the app name cannot name the files; [`InstallError::Write`] if the
/// files cannot be written; [`InstallError::Lodctr`] if the app is installed already (unless
/// `replace`) or the text is refused.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{install_in, uninstall_in, CounterNames, CounterSet, InstallOptions, ObjectNames, Text};
/// use prfdata_registry::{first_counter_help, FileRegistry};
/// let set = CounterSet {
///     app: "InstallDoc".into(),
///     objects: vec![ObjectNames {
///         symbol: "OBJ".into(),
///         offset: 0,
///         texts: vec![Text::new("009", "O", "o")],
///         counters: vec![CounterNames { symbol: "CTR".into(), offset: 2, texts: vec![Text::new("009", "C", "c")], factor: None, unit: None }],
///     }],
///     fingerprint: None,
/// };
/// let dir = tempfile::tempdir()?;
/// let reg = FileRegistry::open(dir.path().join("registry"))?;
/// let opts = InstallOptions {
///     library: "/opt/app/libprfdata_provider.so".into(),
///     ini_dir: dir.path().to_path_buf(),
///     replace: false,
/// };
/// let range = install_in(&reg, &set, &opts)?;
/// assert_eq!((range.first_counter, range.first_help), (1848, 1849));
/// assert_eq!(first_counter_help(&reg, "InstallDoc")?, (1848, 1849));
/// uninstall_in(&reg, "InstallDoc")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn install_in<R: Registry + ?Sized>(
    registry: &R,
    set: &CounterSet,
    options: &InstallOptions,
) -> Result<CounterRange, InstallError> {
    check_name(NameKind::App, &set.app).map_err(|e| InstallError::Map(Box::new(e)))?;
    let highest_offset = highest_offset(set);
    let refuse_changed = |hive: &crate::Hive| -> Result<(), InstallError> {
        if !options.replace {
            if let (Some(installed), Some(fingerprint)) =
                (service::read_service(hive, &set.app)?, set.fingerprint)
            {
                check_names_fit(&installed, highest_offset, fingerprint)
                    .map_err(|e| InstallError::MapChanged(Box::new(e)))?;
            }
        }
        Ok(())
    };
    // Before the files are written: a refused install leaves the installed .INI as it was.
    refuse_changed(&registry.snapshot()?)?;
    let ini_path = write_counter_files(set, &options.ini_dir)?;
    let mut service = ServiceConfig::new(
        options.library.to_string_lossy(),
        OPEN_FUNCTION,
        COLLECT_FUNCTION,
        CLOSE_FUNCTION,
    );
    service.export = vec![set.app.clone()];
    let lodctr_options = LodctrOptions {
        replace: options.replace,
        service: Some(service),
    };
    let ini = CounterIni::read(&ini_path)?;
    let ini_value = std::fs::canonicalize(&ini_path).unwrap_or_else(|_| ini_path.clone());
    update(registry, |hive| {
        refuse_changed(hive)?;
        let range = apply_lodctr(hive, &ini, &lodctr_options)?;
        hive.set_value(
            &paths::performance(&set.app),
            service::INI_FILE,
            Value::Sz(ini_value.to_string_lossy().into_owned()),
        )?;
        // The factors and units, keyed by the name indexes lodctr assigned, in the same update.
        write_stats(hive, set, range.first_counter)?;
        write_object_list(hive, set, range.first_counter)?;
        if let Some(fingerprint) = set.fingerprint {
            hive.set_value(
                &paths::performance(&set.app),
                service::MAP_FINGERPRINT,
                Value::Sz(service::fingerprint_value(fingerprint)),
            )?;
        }
        Ok(range)
    })
}

/// Writes `set`'s `Factors` and `Units` ([`crate::stats`]), keyed by the name indexes from
/// `first_counter` on.
fn write_stats(
    hive: &mut crate::Hive,
    set: &CounterSet,
    first_counter: u32,
) -> Result<(), InstallError> {
    let by_index = |of: fn(&CounterNames) -> Option<&String>| -> Vec<(u32, String)> {
        set.objects
            .iter()
            .flat_map(|o| &o.counters)
            .filter_map(|c| Some((first_counter.checked_add(c.offset)?, of(c)?.clone())))
            .collect()
    };
    crate::stats::write_factors(hive, &set.app, &by_index(|c| c.factor.as_ref()))?;
    crate::stats::write_units(hive, &set.app, &by_index(|c| c.unit.as_ref()))?;
    Ok(())
}

/// Records `set`'s objects in [`service::OBJECT_LIST`]: the name index of each (`first_counter` + its
/// offset), in declaration order.
fn write_object_list(
    hive: &mut crate::Hive,
    set: &CounterSet,
    first_counter: u32,
) -> Result<(), RegistryError> {
    let indexes: Vec<String> = set
        .objects
        .iter()
        .filter_map(|o| first_counter.checked_add(o.offset))
        .map(|i| i.to_string())
        .collect();
    hive.set_value(
        &paths::performance(&set.app),
        service::OBJECT_LIST,
        Value::Sz(indexes.join(" ")),
    )
}

/// The highest symbolic offset of `set`.
fn highest_offset(set: &CounterSet) -> u32 {
    set.objects
        .iter()
        .flat_map(|o| std::iter::once(o.offset).chain(o.counters.iter().map(|c| c.offset)))
        .max()
        .unwrap_or(0)
}

/// Writes `set`'s `<app>.h` and `<app>.ini` into `dir` (each whole, under a temporary name
/// renamed over the old file), as install does; returns the .INI's path.
///
/// # Errors
///
/// [`InstallError::Write`] naming the file that could not be written.
///
/// # Examples
///
/// ```
/// use prfdata_registry::install::{write_counter_files, CounterSet};
/// let dir = tempfile::tempdir()?;
/// let set = CounterSet { app: "FilesDoc".into(), objects: vec![], fingerprint: None };
/// let ini = write_counter_files(&set, dir.path())?;
/// assert!(ini.ends_with("FilesDoc.ini") && dir.path().join("FilesDoc.h").exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_counter_files(set: &CounterSet, dir: &Path) -> Result<PathBuf, InstallError> {
    counter_files(set, dir, true)
}

/// [`write_counter_files`] without flushing the files to the disk, for files written again at
/// every change of what they describe (an app's run-time counters): each is still replaced
/// whole by a rename, so a reader sees the old file or the new one, never a part. After a crash
/// of the machine a file may be found empty or older (the rename reached the disk before the
/// text); the registry, which collectors read, keeps its names, and the next change writes the
/// files again from it.
///
/// # Errors
///
/// As [`write_counter_files`].
pub fn rewrite_counter_files(set: &CounterSet, dir: &Path) -> Result<PathBuf, InstallError> {
    counter_files(set, dir, false)
}

/// Writes `set`'s `.h` and `.INI` into `dir`, each flushed to the disk if `durable`.
fn counter_files(set: &CounterSet, dir: &Path, durable: bool) -> Result<PathBuf, InstallError> {
    let symbol_name = format!("{}.h", set.app);
    let ini_path = dir.join(format!("{}.ini", set.app));
    let symbol_path = dir.join(&symbol_name);
    let write = |path: &Path, text: String| {
        std::fs::create_dir_all(dir)
            .and_then(|()| replace_file(path, text.as_bytes(), durable))
            .map_err(|source| InstallError::Write {
                path: path.to_path_buf(),
                source,
            })
    };
    write(&symbol_path, symbol_file(set))?;
    write(&ini_path, ini_file(set, &symbol_name))?;
    Ok(ini_path)
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
/// # let set = prfdata_registry::install::CounterSet::default();
/// let opts = prfdata_registry::install::InstallOptions {
///     library: "/opt/app/libprfdata_provider.so".into(),
///     ini_dir: "/opt/app/counters".into(),
///     replace: true,
/// };
/// prfdata_registry::install::install(&set, &opts)?;
/// # Ok::<(), prfdata_registry::install::InstallError>(())
/// ```
pub fn install(set: &CounterSet, options: &InstallOptions) -> Result<CounterRange, InstallError> {
    check_library(&options.library)?;
    install_in(&FileRegistry::open_default()?, set, options)
}

/// Uninstalls the app `app` from `registry`: removes its names and help from every language and
/// its provider registration, in one atomic update (CPrfData's `Uninstall`).
///
/// # Errors
///
/// [`InstallError::Lodctr`] with [`LodctrError::NotLoaded`] if the app is not installed.
pub fn uninstall_in<R: Registry + ?Sized>(
    registry: &R,
    app: &str,
) -> Result<CounterRange, InstallError> {
    Ok(update(registry, |hive| {
        let range = apply_unlodctr(hive, app)?;
        service::erase_service(hive, app)?;
        Ok::<_, LodctrError>(range)
    })?)
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
/// prfdata_registry::install::uninstall("MyApp")?;
/// # Ok::<(), prfdata_registry::install::InstallError>(())
/// ```
pub fn uninstall(app: &str) -> Result<CounterRange, InstallError> {
    uninstall_in(&FileRegistry::open_default()?, app)
}

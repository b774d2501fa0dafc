//! The registry's two error types: [`RegistryError`] for the store and the values in it,
//! [`LodctrError`] for loading and unloading counter text.

use std::path::PathBuf;

use super::value::{Value, ValueType};
use prfdata_untrusted::{BadName, UntrustedFileError};

/// `Ok(())` when `ok`, else `Err(error())`: a check and its error in one statement.
pub(crate) fn ensure<E>(ok: bool, error: impl FnOnce() -> E) -> Result<(), E> {
    if ok {
        Ok(())
    } else {
        Err(error())
    }
}

/// [`RegistryError::WrongType`]: value `name` of `key` is `found`, not of type `expected`.
pub(crate) fn wrong_type(
    key: &str,
    name: &str,
    expected: ValueType,
    found: &Value,
) -> RegistryError {
    RegistryError::WrongType {
        key: key.to_owned(),
        name: name.to_owned(),
        expected,
        found: found.value_type(),
    }
}

/// Something wrong with the registry store or with a value read from it.
///
/// # Examples
///
/// ```
/// use prfdata_registry::RegistryError;
///
/// let err = RegistryError::KeyNotFound(r"HKLM\Nope".into());
/// assert!(err.to_string().contains(r"HKLM\Nope"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The root folder could not be determined (no `PRFDATA_REGISTRY`, `XDG_STATE_HOME` or
    /// `HOME`).
    #[error("cannot find the registry folder: set PRFDATA_REGISTRY, XDG_STATE_HOME or HOME")]
    NoRoot,
    /// A file or folder of the store could not be read, written or locked.
    #[error("registry file {}: cannot {action}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done (`read`, `write`, `lock`, ...).
        action: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The registry folder, or a file in it, belongs to a user who is neither this process's
    /// nor root: that user could read the registry, change it or hold the lock every update
    /// takes. Root may use any user's registry (a collector reading an app user's names).
    #[error(
        "{what} {}: owned by uid {owner}, neither this user (uid {uid}) nor root, so uid {owner} \
         could read the registry, change it or hold its lock; {fix}",
        path.display()
    )]
    ForeignOwner {
        /// What it is (`registry folder`, `registry lock file`, ...).
        what: &'static str,
        /// The folder or file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        uid: u32,
        /// What to do about it.
        fix: &'static str,
    },
    /// A file of the store is not one the registry reads or writes: a symbolic link, not a
    /// regular file, or larger than [`MAX_STORE_SIZE`](super::MAX_STORE_SIZE).
    #[error(transparent)]
    File(#[from] UntrustedFileError),
    /// A service (driver) name that cannot be a key under `Services`.
    #[error(transparent)]
    BadName(#[from] BadName),
    /// A service that has no `Performance` key.
    #[error(
        "service {service} has no Performance key: no provider is registered under that name \
         (list them with `prfmon reg query HKLM\\SYSTEM\\CurrentControlSet\\Services`)"
    )]
    NoSuchService {
        /// The service as given.
        service: String,
    },
    /// The store's lock was not granted in time (another process holds it).
    #[error("registry lock {}: not granted within {seconds} s (another process holds it)", path.display())]
    LockTimeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        seconds: u64,
    },
    /// The store file is not a valid registry file.
    #[error("corrupt registry file {}{}: {message}", path.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// The 1-based line of the problem, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The store file is in a format newer than this build reads: a newer prfdata wrote it,
    /// and this program (or provider library) was built from older sources.
    #[error(
        "registry file {} is format {format}, written by a newer prfdata; this build reads \
         formats up to {reads}: rebuild this program from the sources that wrote the registry \
         (cargo build --workspace)",
        path.display()
    )]
    NewerFormat {
        /// The store file.
        path: PathBuf,
        /// Its format.
        format: u32,
        /// The newest format this build reads.
        reads: u32,
    },
    /// A tree could not be rendered in the store format; nothing was written.
    #[error("registry file {}: cannot write: {message}", path.display())]
    Encode {
        /// The file that was to be written.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A key path that is not a valid registry path.
    #[error("invalid registry key `{path}`: {reason}")]
    BadKeyPath {
        /// The path as given.
        path: String,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// The key does not exist.
    #[error("registry key {0} does not exist")]
    KeyNotFound(String),
    /// The value does not exist.
    #[error("registry value `{name}` does not exist in {key}")]
    ValueNotFound {
        /// The key.
        key: String,
        /// The value name.
        name: String,
    },
    /// A [`Registry`](super::Registry) backend finished an update without running its edit.
    #[error("the registry backend finished an update without running the edit")]
    EditNotRun,
    /// The value exists but has another type than perflib requires.
    #[error("registry value `{name}` in {key} is {found}, expected {expected}")]
    WrongType {
        /// The key.
        key: String,
        /// The value name.
        name: String,
        /// The type perflib requires.
        expected: ValueType,
        /// The type found.
        found: ValueType,
    },
    /// A splice of a REG_MULTI_SZ value past its last entry
    /// ([`Hive::splice_multi_sz`](crate::Hive::splice_multi_sz)).
    #[error(
        "registry value `{name}` in {key} has {len} entries: cannot replace {remove} from entry \
         {at}"
    )]
    BadSplice {
        /// The key.
        key: String,
        /// The value name.
        name: String,
        /// The first entry to replace.
        at: usize,
        /// How many entries were to be replaced.
        remove: usize,
        /// How many entries the value has.
        len: usize,
    },
    /// A `Perflib\<lang>` `Counter` or `Help` table that is not `index\0text\0` pairs.
    #[error("registry value `{name}` in {key}: entry {entry}: {reason}")]
    BadTextTable {
        /// The language key.
        key: String,
        /// `Counter` or `Help`.
        name: String,
        /// 0-based position of the offending entry in the REG_MULTI_SZ list.
        entry: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Why lodctr or unlodctr refused to run. Whenever one of these is returned, nothing was
/// written.
///
/// # Examples
///
/// ```
/// use prfdata_registry::LodctrError;
///
/// let err = LodctrError::NotLoaded { driver: "Foo".into() };
/// assert!(err.to_string().contains("Foo"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum LodctrError {
    /// The command line passed to the LoadPerf-style entry points is not understood.
    #[error("usage: {0}")]
    Usage(String),
    /// The .INI file could not be read (or is not one lodctr reads: see [`UntrustedFileError`]).
    #[error("{source}")]
    IniUnreadable {
        /// The .INI file.
        path: PathBuf,
        /// Why.
        source: Box<UntrustedFileError>,
    },
    /// The .INI or symbol file starts with a byte order mark and does not decode as it says.
    #[error("{}:{line}: {message}", path.display())]
    BadEncoding {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the first byte that does not decode.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// `drivername=` names something that cannot be a key under `Services`.
    #[error("{}:{line}: {source}", path.display())]
    BadDriverName {
        /// The .INI file.
        path: PathBuf,
        /// The line of `drivername=`.
        line: usize,
        /// The rule it broke.
        source: BadName,
    },
    /// A required `[info]` key (`drivername` or `symbolfile`) is missing or empty.
    #[error("{}{}: [info] has no `{key}=` entry", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    MissingInfoKey {
        /// The .INI file.
        path: PathBuf,
        /// The line of the `[info]` header, if the section exists.
        line: Option<usize>,
        /// The missing key.
        key: &'static str,
    },
    /// The symbol file named by `symbolfile=` could not be read.
    #[error("{}:{line}: cannot read the symbol file {}: {source}", ini.display(), symbol_file.display())]
    SymbolFileUnreadable {
        /// The .INI file.
        ini: PathBuf,
        /// The line of `symbolfile=`.
        line: usize,
        /// The symbol file as resolved.
        symbol_file: PathBuf,
        /// Why.
        source: Box<UntrustedFileError>,
    },
    /// A `[text]` key that is not `SYMBOL_LANGID_NAME` or `SYMBOL_LANGID_HELP`.
    #[error("{}:{line}: `{key}` is not SYMBOL_LANGID_NAME or SYMBOL_LANGID_HELP", path.display())]
    BadTextKey {
        /// The .INI file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The key as written.
        key: String,
    },
    /// A `[text]` entry for a language not listed under `[languages]`.
    #[error("{}:{line}: language {language} is not listed under [languages]", path.display())]
    UnknownLanguage {
        /// The .INI file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The language id.
        language: String,
    },
    /// A `[text]` entry whose symbol is not `#define`d in the symbol file.
    #[error("{}:{line}: symbol {symbol} is not defined in {}", path.display(), symbol_file.display())]
    UnknownSymbol {
        /// The .INI file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The symbol.
        symbol: String,
        /// The symbol file searched.
        symbol_file: PathBuf,
    },
    /// A symbol whose offset is odd (names take even indexes, help the odd ones after them).
    #[error("{}:{line}: symbol {symbol} has odd offset {offset} ({}:{symbol_line}); offsets must be even", path.display(), symbol_file.display())]
    OddOffset {
        /// The .INI file.
        path: PathBuf,
        /// The .INI line that uses the symbol.
        line: usize,
        /// The symbol.
        symbol: String,
        /// Its offset.
        offset: u32,
        /// The symbol file.
        symbol_file: PathBuf,
        /// The `#define` line.
        symbol_line: usize,
    },
    /// The driver's counters are loaded already (use `--replace` to reload them).
    #[error("{}:{line}: driver {driver} already has counters loaded (First Counter {first_counter}); unlodctr it first or use --replace", path.display())]
    AlreadyLoaded {
        /// The .INI file.
        path: PathBuf,
        /// The line of `drivername=`.
        line: usize,
        /// The driver.
        driver: String,
        /// Its current First Counter.
        first_counter: u32,
    },
    /// unlodctr of a driver that has no counters loaded.
    #[error("driver {driver} has no counters loaded (no First Counter under its Performance key)")]
    NotLoaded {
        /// The driver.
        driver: String,
    },
    /// An index the driver would get is already used by another entry of a text table.
    #[error(
        "index {index} is already used in {key} `{name}` (the table and Last Counter disagree)"
    )]
    IndexInUse {
        /// The language key.
        key: String,
        /// `Counter` or `Help`.
        name: &'static str,
        /// The index.
        index: u32,
    },
    /// A run-time name's symbolic offset is odd or not above the app's installed names
    /// ([`register_runtime_names`](crate::register_runtime_names)).
    #[error(
        "app {driver}: run-time counter {symbol} has offset {offset}; run-time offsets are even \
         and above the installed map's highest ({installed_highest})"
    )]
    BadRuntimeOffset {
        /// The app.
        driver: String,
        /// The counter's symbol.
        symbol: String,
        /// Its offset.
        offset: u32,
        /// The installed map's highest offset.
        installed_highest: u32,
    },
    /// The indexes would pass `u32::MAX`.
    #[error("driver {driver}: counter indexes would overflow 32 bits")]
    IndexOverflow {
        /// The driver.
        driver: String,
    },
    /// A /S: save file or /R: restore file could not be read or written.
    #[error("{}: cannot {action} the settings file: {message}", path.display())]
    SettingsFile {
        /// The file.
        path: PathBuf,
        /// `read` or `write`.
        action: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A `/R:` settings file that is not one lodctr reads (see [`UntrustedFileError`]), or a
    /// `/S:` file that cannot be written.
    #[error(transparent)]
    File(#[from] UntrustedFileError),
    /// The registry could not be read or updated.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl RegistryError {
    /// [`RegistryError::BadKeyPath`] of `path`.
    pub(crate) fn bad_key_path(path: &str, reason: &'static str) -> Self {
        Self::BadKeyPath {
            path: path.to_owned(),
            reason,
        }
    }
}

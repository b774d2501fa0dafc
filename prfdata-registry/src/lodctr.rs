//! lodctr and unlodctr: load a driver's counter names and help texts into Perflib and assign
//! its index range, or remove them again.
//!
//! Index assignment (the lodctr design specification, the MSJ article):
//!
//! ```text
//! First Counter = Perflib Last Counter + 2        name of symbol S  = First Counter + offset(S)
//! First Help    = First Counter + 1               help of symbol S  = First Help + offset(S)
//! Last Counter  = First Counter + largest offset  Perflib Last Counter = Last Counter
//! Last Help     = Last Counter + 1                Perflib Last Help    = Last Help
//! ```
//!
//! so names sit on even indexes and help texts on the odd ones after them. unlodctr removes the
//! driver's strings from every language, deletes its four values ("value deleted" in the lodctr design specification)
//! and sets Perflib's Last Counter and Last Help to the highest indexes still in use (never
//! below the Base Index defaults).
//!
//! Every change is one [`update`]: the range is chosen under the store's lock, so two lodctr
//! runs never overlap, and an error leaves the registry as it was.

use std::path::{Path, PathBuf};

use super::error::{ensure, LodctrError, RegistryError};
use super::file::FileRegistry;
use super::hive::Hive;
use super::ini::{CounterIni, TextKind};
use super::paths::{self, PERFLIB};
use super::perflib::{self, COUNTER, DEFAULT_LANGUAGE, HELP, LAST_COUNTER, LAST_HELP};
use super::service::{self, set_service_enabled, ServiceConfig, FIRST_COUNTER, FIRST_HELP};
use super::settings::{restore_settings, save_settings};
use super::store::{update, Registry};
use super::value::Value;
use prfdata_untrusted::{check_name, NameKind};

/// How [`lodctr()`] loads a file.
///
/// # Examples
///
/// ```
/// use prfdata_registry::LodctrOptions;
/// let opts = LodctrOptions { replace: true, ..Default::default() };
/// assert!(opts.service.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LodctrOptions {
    /// Reload a driver whose counters are already loaded (its old strings are removed first)
    /// instead of failing with [`LodctrError::AlreadyLoaded`].
    pub replace: bool,
    /// Also register the provider (Library, Open, Collect, Close, timeouts, Linkage\Export)
    /// in the same atomic update.
    pub service: Option<ServiceConfig>,
}

/// The index range of a driver, as written to its Performance key.
///
/// # Examples
///
/// ```
/// use prfdata_registry::CounterRange;
/// let r = CounterRange { driver: "D".into(), first_counter: 1848, last_counter: 1852,
///                        first_help: 1849, last_help: 1853 };
/// assert!(r.contains(1850) && !r.contains(1854));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterRange {
    /// The driver (service) name.
    pub driver: String,
    /// `First Counter`.
    pub first_counter: u32,
    /// `Last Counter`.
    pub last_counter: u32,
    /// `First Help`.
    pub first_help: u32,
    /// `Last Help`.
    pub last_help: u32,
}

impl CounterRange {
    /// Whether `index` (name or help) lies in this range.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::CounterRange;
    /// let r = CounterRange { driver: "D".into(), first_counter: 1848, last_counter: 1848,
    ///                        first_help: 1849, last_help: 1849 };
    /// assert!(r.contains(1849) && !r.contains(1847));
    /// ```
    pub fn contains(&self, index: u32) -> bool {
        (self.first_counter..=self.last_help.max(self.last_counter)).contains(&index)
    }
}

pub(crate) fn overflow(driver: &str) -> LodctrError {
    LodctrError::IndexOverflow {
        driver: driver.to_owned(),
    }
}

pub(crate) fn write_table(
    hive: &mut Hive,
    lang_key: &str,
    name: &str,
    table: &std::collections::BTreeMap<u32, String>,
) -> Result<(), RegistryError> {
    hive.set_value(
        lang_key,
        name,
        Value::MultiSz(perflib::format_text_table(table)),
    )
}

/// Loads `ini` into `hive`: the body of [`lodctr()`], for callers composing a larger update.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{apply_lodctr, ini::CounterIni, perflib, LodctrOptions};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("d.h"), "#define OBJ 0\n#define CTR 2\n")?;
/// std::fs::write(dir.path().join("d.ini"), "[info]\ndrivername=Drv\nsymbolfile=d.h\n\
///     [languages]\n009=\n[text]\nOBJ_009_NAME=Obj\nCTR_009_NAME=Ctr\nCTR_009_HELP=Counts\n")?;
/// let ini = CounterIni::read(dir.path().join("d.ini"))?;
/// let mut hive = perflib::new_hive();
/// let range = apply_lodctr(&mut hive, &ini, &LodctrOptions::default())?;
/// assert_eq!((range.first_counter, range.last_counter), (1848, 1850));
/// assert_eq!(perflib::counter_text(&hive, "009")?.help[&1851], "Counts");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_lodctr(
    hive: &mut Hive,
    ini: &CounterIni,
    options: &LodctrOptions,
) -> Result<CounterRange, LodctrError> {
    let driver = ini.driver.as_str();
    check_name(NameKind::Service, driver).map_err(|source| LodctrError::BadDriverName {
        path: ini.path.clone(),
        line: ini.driver_line,
        source,
    })?;
    let perf = paths::performance(driver);
    if let Some(first_counter) = perflib::read_optional_dword(hive, &perf, FIRST_COUNTER)? {
        ensure(options.replace, || LodctrError::AlreadyLoaded {
            path: ini.path.clone(),
            line: ini.driver_line,
            driver: driver.to_owned(),
            first_counter,
        })?;
        apply_unlodctr(hive, driver)?;
    }

    let add = |a: u32, b: u32| a.checked_add(b).ok_or_else(|| overflow(driver));
    let first_counter = first_free(hive, driver)?;
    let first_help = add(first_counter, 1)?;
    let new_last_counter = add(first_counter, ini.largest_offset())?;
    let new_last_help = add(new_last_counter, 1)?;
    write_texts(hive, ini, first_counter, first_help)?;
    hive.set_value(PERFLIB, LAST_COUNTER, Value::Dword(new_last_counter))?;
    hive.set_value(PERFLIB, LAST_HELP, Value::Dword(new_last_help))?;
    hive.set_value(&perf, FIRST_COUNTER, Value::Dword(first_counter))?;
    hive.set_value(&perf, LAST_COUNTER, Value::Dword(new_last_counter))?;
    hive.set_value(&perf, FIRST_HELP, Value::Dword(first_help))?;
    hive.set_value(&perf, LAST_HELP, Value::Dword(new_last_help))?;
    if let Some(config) = &options.service {
        service::write_service(hive, driver, config)?;
    }
    Ok(CounterRange {
        driver: driver.to_owned(),
        first_counter,
        last_counter: new_last_counter,
        first_help,
        last_help: new_last_help,
    })
}

/// The First Counter of a range placed after every other: the even index after perflib's Last
/// Counter, or after its Last Help if the two disagree.
pub(crate) fn first_free(hive: &Hive, driver: &str) -> Result<u32, LodctrError> {
    let (last_counter, last_help) = perflib::last_counter_help(hive)?;
    // When Perflib's two values disagree, stay clear of both, on an even index.
    let (last, step) = match last_counter.checked_add(2) {
        Some(first) if first > last_help => return Ok(first),
        Some(_) if last_help.is_multiple_of(2) => (last_help, 2),
        Some(_) => (last_help, 1),
        None => return Err(overflow(driver)),
    };
    last.checked_add(step).ok_or_else(|| overflow(driver))
}

/// Writes the texts of `ini` into each of its languages' tables, names from `first_counter`
/// and helps from `first_help`; an index already in use is an error.
fn write_texts(
    hive: &mut Hive,
    ini: &CounterIni,
    first_counter: u32,
    first_help: u32,
) -> Result<(), LodctrError> {
    let mut languages: Vec<&str> = Vec::new();
    for e in &ini.entries {
        if !languages.contains(&e.language.as_str()) {
            languages.push(&e.language);
        }
    }
    for lang in languages {
        let lang_key = paths::perflib_language(lang);
        let mut names = perflib::read_text_table(hive, lang, COUNTER)?;
        let mut helps = perflib::read_text_table(hive, lang, HELP)?;
        for e in ini.entries.iter().filter(|e| e.language == lang) {
            let (table, base, name) = match e.kind {
                TextKind::Name => (&mut names, first_counter, COUNTER),
                TextKind::Help => (&mut helps, first_help, HELP),
            };
            let index = base + e.offset;
            ensure(table.insert(index, e.text.clone()).is_none(), || {
                LodctrError::IndexInUse {
                    key: lang_key.clone(),
                    name,
                    index,
                }
            })?;
        }
        write_table(hive, &lang_key, COUNTER, &names)?;
        write_table(hive, &lang_key, HELP, &helps)?;
    }
    Ok(())
}

/// lodctr: reads the .INI file at `ini_path` and its symbol file, assigns the driver's index
/// range and loads its names and help texts into every language it lists, in one atomic,
/// locked update. On error nothing is written.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{first_counter_help, lodctr, FileRegistry, LodctrOptions};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("devdef.h"), "#define OBJECT_1 0\n")?;
/// std::fs::write(dir.path().join("dev.ini"), "[info]\ndrivername=DriverName\n\
///     symbolfile=devdef.h\n[languages]\n009=English\n[text]\nOBJECT_1_009_NAME=Device Name\n")?;
/// let reg = FileRegistry::open(dir.path().join("registry"))?;
/// let range = lodctr(&reg, dir.path().join("dev.ini"), &LodctrOptions::default())?;
/// assert_eq!(range.first_counter, 1848);
/// assert_eq!(first_counter_help(&reg, "DriverName")?, (1848, 1849));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn lodctr<R: Registry + ?Sized>(
    registry: &R,
    ini_path: impl AsRef<Path>,
    options: &LodctrOptions,
) -> Result<CounterRange, LodctrError> {
    let ini = CounterIni::read(ini_path)?;
    update(registry, |hive| apply_lodctr(hive, &ini, options))
}

/// Removes `driver`'s strings and values from `hive`: the body of [`unlodctr()`].
///
/// # Examples
///
/// ```
/// use prfdata_registry::{apply_unlodctr, perflib, LodctrError};
/// let mut hive = perflib::new_hive();
/// assert!(matches!(apply_unlodctr(&mut hive, "Nope"), Err(LodctrError::NotLoaded { .. })));
/// ```
pub fn apply_unlodctr(hive: &mut Hive, driver: &str) -> Result<CounterRange, LodctrError> {
    check_name(NameKind::Service, driver).map_err(RegistryError::from)?;
    let perf = paths::performance(driver);
    let dword = |name| perflib::read_optional_dword(hive, &perf, name);
    let first_counter = dword(FIRST_COUNTER)?.ok_or_else(|| LodctrError::NotLoaded {
        driver: driver.to_owned(),
    })?;
    let last_counter = dword(LAST_COUNTER)?.unwrap_or(first_counter);
    let first_help = dword(FIRST_HELP)?.unwrap_or(first_counter.saturating_add(1));
    let last_help = dword(LAST_HELP)?.unwrap_or(last_counter.saturating_add(1));

    let mut highest_counter = 0;
    let mut highest_help = 0;
    for lang in perflib::languages(hive)? {
        let lang_key = paths::perflib_language(&lang);
        let mut names = perflib::read_text_table(hive, &lang, COUNTER)?;
        let mut helps = perflib::read_text_table(hive, &lang, HELP)?;
        names.retain(|i, _| !(first_counter..=last_counter).contains(i));
        helps.retain(|i, _| !(first_help..=last_help).contains(i));
        highest_counter = highest_counter.max(names.keys().next_back().copied().unwrap_or(0));
        highest_help = highest_help.max(helps.keys().next_back().copied().unwrap_or(0));
        if names.is_empty() && helps.is_empty() && !lang.eq_ignore_ascii_case(DEFAULT_LANGUAGE) {
            // A language only this driver used: lodctr created its tables, so remove them (and
            // the key, unless something else lives there).
            hive.delete_value(&lang_key, COUNTER)?;
            hive.delete_value(&lang_key, HELP)?;
            service::remove_if_empty(hive, &lang_key)?;
        } else {
            write_table(hive, &lang_key, COUNTER, &names)?;
            write_table(hive, &lang_key, HELP, &helps)?;
        }
    }
    for name in [
        FIRST_COUNTER,
        LAST_COUNTER,
        FIRST_HELP,
        LAST_HELP,
        service::MAP_FINGERPRINT,
        service::DYNAMIC_FINGERPRINT,
        service::INI_FILE,
        crate::service::OBJECT_LIST,
    ] {
        hive.delete_value(&perf, name)?;
    }
    service::prune_service_keys(hive, driver)?;

    for other in service::services_in(hive)? {
        highest_counter = highest_counter.max(other.last_counter.unwrap_or(0));
        highest_help = highest_help.max(other.last_help.unwrap_or(0));
    }
    let base = perflib::base_index(hive)?;
    hive.set_value(
        PERFLIB,
        LAST_COUNTER,
        Value::Dword(highest_counter.max(base.saturating_sub(1))),
    )?;
    hive.set_value(PERFLIB, LAST_HELP, Value::Dword(highest_help.max(base)))?;
    Ok(CounterRange {
        driver: driver.to_owned(),
        first_counter,
        last_counter,
        first_help,
        last_help,
    })
}

/// unlodctr: removes `driver`'s names and help texts from every language, deletes its
/// First/Last Counter/Help values and lowers Perflib's Last Counter / Last Help to the highest
/// indexes still in use, in one atomic, locked update. Returns the range that was removed.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{lodctr, unlodctr, FileRegistry, LodctrOptions, Registry};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("d.h"), "#define OBJ 0\n")?;
/// std::fs::write(dir.path().join("d.ini"), "[info]\ndrivername=Drv\nsymbolfile=d.h\n\
///     [languages]\n009=\n[text]\nOBJ_009_NAME=Obj\n")?;
/// let reg = FileRegistry::open(dir.path().join("reg"))?;
/// let before = reg.snapshot()?;
/// lodctr(&reg, dir.path().join("d.ini"), &LodctrOptions::default())?;
/// assert_eq!(unlodctr(&reg, "Drv")?.first_counter, 1848);
/// assert_eq!(reg.snapshot()?, before);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn unlodctr<R: Registry + ?Sized>(
    registry: &R,
    driver: &str,
) -> Result<CounterRange, LodctrError> {
    update(registry, |hive| apply_unlodctr(hive, driver))
}

/// Splits a command line into words; double quotes group words with spaces.
fn split_command_line(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// What a lodctr command line asks for.
enum LoadRequest {
    Load { ini: PathBuf, replace: bool },
    Save(PathBuf),
    Restore(PathBuf),
    Enable(String, bool),
}

fn parse_load_command_line(command_line: &str) -> Result<LoadRequest, LodctrError> {
    const USAGE: &str = "lodctr [--replace] FILE.ini | lodctr /S:FILE | lodctr /R:FILE | \
                         lodctr /E:SERVICE | lodctr /D:SERVICE";
    let words = split_command_line(command_line);
    let mut replace = false;
    let mut ini = None;
    let mut other = None;
    // As LoadPerf.DLL: the first word (the program's name) is ignored.
    for w in words.iter().skip(1) {
        let lower = w.to_ascii_lowercase();
        if lower == "--replace" || lower == "/replace" {
            replace = true;
        } else if let Some(file) = lower.strip_prefix("/s:").map(|_| &w[3..]) {
            other = Some(LoadRequest::Save(PathBuf::from(file)));
        } else if let Some(file) = lower.strip_prefix("/r:").map(|_| &w[3..]) {
            other = Some(LoadRequest::Restore(PathBuf::from(file)));
        } else if let Some(service) = lower.strip_prefix("/e:").map(|_| &w[3..]) {
            other = Some(LoadRequest::Enable(service.to_owned(), true));
        } else if let Some(service) = lower.strip_prefix("/d:").map(|_| &w[3..]) {
            other = Some(LoadRequest::Enable(service.to_owned(), false));
        } else if ini.is_none() {
            ini = Some(PathBuf::from(w));
        } else {
            return Err(LodctrError::Usage(format!("unexpected `{w}`; {USAGE}")));
        }
    }
    match (ini, other) {
        (Some(ini), None) => Ok(LoadRequest::Load { ini, replace }),
        (None, Some(req)) => Ok(req),
        _ => Err(LodctrError::Usage(USAGE.to_owned())),
    }
}

fn report<T>(
    quiet: bool,
    result: Result<T, LodctrError>,
    ok: impl FnOnce(&T) -> String,
) -> Result<(), LodctrError> {
    match &result {
        Ok(v) if !quiet => log::info!(target: "lodctr", "{}", ok(v)),
        Err(e) if !quiet => log::error!(target: "lodctr", "{e}"),
        _ => {}
    }
    result.map(|_| ())
}

/// Describes a loaded range the way `prfmon lodctr` reports it.
///
/// # Examples
///
/// ```
/// use prfdata_registry::CounterRange;
/// let r = CounterRange { driver: "D".into(), first_counter: 1848, last_counter: 1852,
///                        first_help: 1849, last_help: 1853 };
/// assert!(r.to_string().contains("First Counter 1848"));
/// ```
impl std::fmt::Display for CounterRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: First Counter {}, Last Counter {}, First Help {}, Last Help {}",
            self.driver, self.first_counter, self.last_counter, self.first_help, self.last_help
        )
    }
}

/// What lodctr `/E:` or `/D:` reports after enabling or disabling `service`.
///
/// # Examples
///
/// ```
/// let m = prfdata_registry::enabled_message("App", false);
/// assert_eq!(m, "Disabled the performance counters of service App");
/// ```
pub fn enabled_message(service: &str, enabled: bool) -> String {
    let verb = if enabled { "Enabled" } else { "Disabled" };
    format!("{verb} the performance counters of service {service}")
}

/// LoadPerf.DLL's `LoadPerfCounterTextStrings`: runs a lodctr command line against the
/// default registry ([`FileRegistry::open_default`]). As in LoadPerf, the first word is the
/// program name and is ignored; the rest is `[--replace] FILE.ini`, `/S:FILE` (save the
/// settings), `/R:FILE` (restore them), `/E:SERVICE` or `/D:SERVICE` (enable or disable a
/// service's provider). Unless `quiet`, the outcome is logged through the `log` facade (target
/// `lodctr`: success at `Info`, the error at `Error`), as LoadPerf reports it; the program
/// decides where log messages go.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{first_counter_help, load_perf_counter_text_strings, FileRegistry};
///
/// let dir = tempfile::tempdir()?;
/// std::env::set_var("PRFDATA_REGISTRY", dir.path().join("reg"));
/// std::fs::write(dir.path().join("d.h"), "#define OBJ 0\n")?;
/// std::fs::write(dir.path().join("my driver.ini"), "[info]\ndrivername=Drv\nsymbolfile=d.h\n\
///     [languages]\n009=\n[text]\nOBJ_009_NAME=Obj\n")?;
/// let cmd = format!("lodctr \"{}\"", dir.path().join("my driver.ini").display());
/// load_perf_counter_text_strings(&cmd, true)?;
/// assert_eq!(first_counter_help(&FileRegistry::open_default()?, "Drv")?, (1848, 1849));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_perf_counter_text_strings(command_line: &str, quiet: bool) -> Result<(), LodctrError> {
    let request = match parse_load_command_line(command_line) {
        Ok(r) => r,
        Err(e) => return report(quiet, Err::<(), _>(e), |_| String::new()),
    };
    let registry = match FileRegistry::open_default() {
        Ok(r) => r,
        Err(e) => return report(quiet, Err::<(), _>(e.into()), |_| String::new()),
    };
    match request {
        LoadRequest::Load { ini, replace } => {
            let options = LodctrOptions {
                replace,
                service: None,
            };
            report(quiet, lodctr(&registry, &ini, &options), |r| {
                format!("Loaded counters for {r}")
            })
        }
        LoadRequest::Save(file) => report(quiet, save_settings(&registry, &file), |()| {
            format!("Saved the performance settings to {}", file.display())
        }),
        LoadRequest::Restore(file) => report(quiet, restore_settings(&registry, &file), |()| {
            format!("Restored the performance settings from {}", file.display())
        }),
        LoadRequest::Enable(service, enabled) => report(
            quiet,
            set_service_enabled(&registry, &service, enabled).map_err(LodctrError::from),
            |()| enabled_message(&service, enabled),
        ),
    }
}

/// LoadPerf.DLL's `UnloadPerfCounterTextStrings`: runs an unlodctr command line
/// (`unlodctr DRIVERNAME`; the first word is ignored) against the default registry.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{unload_perf_counter_text_strings, LodctrError};
///
/// let dir = tempfile::tempdir()?;
/// std::env::set_var("PRFDATA_REGISTRY", dir.path());
/// let err = unload_perf_counter_text_strings("unlodctr NotThere", true).unwrap_err();
/// assert!(matches!(err, LodctrError::NotLoaded { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn unload_perf_counter_text_strings(
    command_line: &str,
    quiet: bool,
) -> Result<(), LodctrError> {
    let words = split_command_line(command_line);
    let [_, driver] = words.as_slice() else {
        return report(
            quiet,
            Err::<(), _>(LodctrError::Usage("unlodctr DRIVERNAME".to_owned())),
            |_| String::new(),
        );
    };
    let result = FileRegistry::open_default()
        .map_err(LodctrError::from)
        .and_then(|registry| unlodctr(&registry, driver));
    report(quiet, result, |r| format!("Removed counters for {r}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inconsistent_perflib_values_still_give_a_fresh_even_range() {
        let mut hive = perflib::new_hive();
        hive.set_value(PERFLIB, LAST_HELP, Value::Dword(1900))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.h"), "#define OBJ 0\n").unwrap();
        std::fs::write(
            dir.path().join("d.ini"),
            "[info]\ndrivername=D\nsymbolfile=d.h\n[languages]\n009=\n[text]\nOBJ_009_NAME=o\n",
        )
        .unwrap();
        let ini = CounterIni::read(dir.path().join("d.ini")).unwrap();
        let range = apply_lodctr(&mut hive, &ini, &LodctrOptions::default()).unwrap();
        assert_eq!((range.first_counter, range.first_help), (1902, 1903));

        let mut hive = perflib::new_hive();
        hive.set_value(PERFLIB, LAST_COUNTER, Value::Dword(u32::MAX - 1))
            .unwrap();
        assert!(matches!(
            apply_lodctr(&mut hive, &ini, &LodctrOptions::default()),
            Err(LodctrError::IndexOverflow { .. })
        ));
    }

    #[test]
    fn command_lines_split_on_quotes() {
        assert_eq!(
            split_command_line(r#"lodctr "a b.ini"  /S:x"#),
            ["lodctr", "a b.ini", "/S:x"]
        );
        assert!(matches!(
            parse_load_command_line("lodctr /s:saved.txt"),
            Ok(LoadRequest::Save(p)) if p == Path::new("saved.txt")
        ));
        assert!(matches!(
            parse_load_command_line("lodctr --replace x.ini"),
            Ok(LoadRequest::Load { replace: true, .. })
        ));
        assert!(matches!(
            parse_load_command_line("lodctr /E:App"),
            Ok(LoadRequest::Enable(s, true)) if s == "App"
        ));
        assert!(matches!(
            parse_load_command_line("lodctr /d:App"),
            Ok(LoadRequest::Enable(s, false)) if s == "App"
        ));
        assert!(parse_load_command_line("lodctr").is_err());
        assert!(parse_load_command_line("lodctr a.ini b.ini").is_err());
    }
}

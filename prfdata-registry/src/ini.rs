//! The lodctr counter .INI file and its symbol .h file (the lodctr design specification).
//!
//! ```text
//! [info]
//! drivername=<name of the key under CurrentControlSet\Services>
//! symbolfile=<.h file with the symbolic offsets, relative to the .INI's folder>
//!
//! [languages]
//! 009=English
//! 00C=OtherLanguage
//!
//! [text]
//! OBJECT_1_009_NAME=Device Name
//! OBJECT_1_009_HELP=Displays performance statistics on Device Name
//! ```
//!
//! Symbols contain underscores, so a `[text]` key is split from the right: the last part is
//! `NAME` or `HELP`, the one before it the language id, the rest the symbol. The symbol file is
//! "pretty dumb": only lines `#define NAME decimal_number` count (a comment after the number
//! is allowed), every other line is ignored.
//!
//! The readers are small line-based ones written here rather than an INI crate: lodctr's errors
//! must name the file and line of the offending entry, sections and keys are case-insensitive
//! and the first occurrence of a key wins, as with `GetPrivateProfileString`, and lines without
//! `=` (such as the `// end .INI file` in the lodctr design specification's example) are ignored as Windows does;
//! the INI crates on crates.io give neither line numbers nor those rules.
//!
//! # Encodings
//!
//! Windows' lodctr files are often Unicode: a file that starts with a byte order mark is read
//! as it says, UTF-16LE (`FF FE`), UTF-16BE (`FE FF`) or UTF-8 (`EF BB BF`), and a sequence that
//! does not decode is an error naming the file and line. A file without one is read as UTF-8,
//! any byte that is not (an ANSI file) becoming U+FFFD. The symbol file is read the same way.
//!
//! # Files
//!
//! The .INI file is the one the user named: a symbolic link there is followed. The symbol file
//! is found through the .INI (`symbolfile=`, relative to the .INI's folder): a link there is
//! refused. Both must be regular files no larger than [`MAX_INI_SIZE`] and
//! [`MAX_SYMBOL_FILE_SIZE`], opened without blocking ([`prfdata_untrusted::file`]).
//! `drivername=` must be a valid service name ([`prfdata_untrusted::check_name`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::error::{ensure, LodctrError};
use prfdata_untrusted::{check_name, NameKind, Symlinks, UntrustedFile};

/// The largest counter .INI file read (8 MiB). The file is read whole; the counter .INI files
/// that ship with large server products (one line per name and per explain text, in UTF-16)
/// are well under 1 MiB, so 8 MiB is room to spare, not a limit anyone meets.
pub const MAX_INI_SIZE: u64 = 8 * 1024 * 1024;

/// The largest symbol (.h) file read (8 MiB): the same reasoning as [`MAX_INI_SIZE`], for a file
/// of one `#define` per name.
pub const MAX_SYMBOL_FILE_SIZE: u64 = 8 * 1024 * 1024;

/// How the .INI file is read: a path the user named.
const INI_RULE: UntrustedFile = UntrustedFile {
    what: "counter .INI file",
    max_size: MAX_INI_SIZE,
    limit_name: "prfdata_registry::ini::MAX_INI_SIZE, 8 MiB",
    symlinks: Symlinks::Follow,
};

/// How the symbol file is read: found through the .INI, never through a link.
const SYMBOL_RULE: UntrustedFile = UntrustedFile {
    what: "symbol file",
    max_size: MAX_SYMBOL_FILE_SIZE,
    limit_name: "prfdata_registry::ini::MAX_SYMBOL_FILE_SIZE, 8 MiB",
    symlinks: Symlinks::Refuse,
};

/// The 1-based line a text of `before` ends on.
fn line_after(before: &str) -> usize {
    before.bytes().filter(|&b| b == b'\n').count() + 1
}

/// Decodes UTF-16 code units; a unit that does not decode is an error naming its line.
fn decode_utf16(
    path: &Path,
    units: impl Iterator<Item = u16>,
    odd: bool,
    order: &str,
) -> Result<String, LodctrError> {
    let bad = |text: &str, message| LodctrError::BadEncoding {
        path: path.to_path_buf(),
        line: line_after(text),
        message,
    };
    let mut text = String::new();
    for c in char::decode_utf16(units) {
        text.push(c.map_err(|e| {
            let unit = e.unpaired_surrogate();
            bad(
                &text,
                format!(
                    "unpaired UTF-16 surrogate {unit:#06X} in a file that starts with a {order} \
                     byte order mark"
                ),
            )
        })?);
    }
    ensure(!odd, || {
        let message = format!(
            "the file starts with a {order} byte order mark but has an odd number of bytes: \
             it is cut short"
        );
        bad(&text, message)
    })?;
    Ok(text)
}

/// Decodes an .INI or symbol file as its byte order mark says (see the
/// [module docs](self#encodings)).
///
/// # Errors
///
/// [`LodctrError::BadEncoding`] naming the file and the line of the first sequence that does not
/// decode, for a file with a byte order mark.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ini::decode_text;
///
/// let utf16le: Vec<u8> = [0xFF, 0xFE].into_iter()
///     .chain("[info]\r\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
/// assert_eq!(decode_text("d.ini".as_ref(), &utf16le)?, "[info]\r\n");
/// assert_eq!(decode_text("d.ini".as_ref(), b"\xEF\xBB\xBFx=1")?, "x=1");
/// assert_eq!(decode_text("d.ini".as_ref(), b"caf\xE9")?, "caf\u{FFFD}"); // ANSI, no BOM
/// assert!(decode_text("d.ini".as_ref(), b"\xEF\xBB\xBFa\n\xE9").is_err());
/// # Ok::<(), prfdata_registry::LodctrError>(())
/// ```
pub fn decode_text(path: &Path, bytes: &[u8]) -> Result<String, LodctrError> {
    let utf16 = [
        (
            [0xFF, 0xFE],
            "UTF-16LE",
            u16::from_le_bytes as fn([u8; 2]) -> u16,
        ),
        ([0xFE, 0xFF], "UTF-16BE", u16::from_be_bytes),
    ];
    for (mark, order, unit) in utf16 {
        if let Some(rest) = bytes.strip_prefix(&mark) {
            let units = rest.chunks_exact(2).map(|p| unit([p[0], p[1]]));
            return decode_utf16(path, units, rest.len() % 2 == 1, order);
        }
    }
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8(rest.to_vec()).map_err(|e| {
            let good = e.utf8_error().valid_up_to();
            LodctrError::BadEncoding {
                path: path.to_path_buf(),
                line: line_after(&String::from_utf8_lossy(&rest[..good])),
                message: format!(
                    "not UTF-8 at byte {} in a file that starts with a UTF-8 byte order mark",
                    good + 3
                ),
            }
        });
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Whether a `[text]` entry is a counter name or its help text.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ini::TextKind;
/// assert_ne!(TextKind::Name, TextKind::Help);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextKind {
    /// `..._NAME`: goes to the `Counter` table at First Counter + offset.
    Name,
    /// `..._HELP`: goes to the `Help` table at First Help + offset.
    Help,
}

/// One `[text]` entry with its symbol resolved.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ini::{TextEntry, TextKind};
/// let e = TextEntry {
///     symbol: "OBJECT_1".into(), offset: 0, language: "009".into(),
///     kind: TextKind::Name, text: "Device Name".into(), line: 12,
/// };
/// assert_eq!(e.offset, 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEntry {
    /// The symbol, e.g. `DEVICE_COUNTER_1`.
    pub symbol: String,
    /// Its even offset from the symbol file.
    pub offset: u32,
    /// The language id as listed under `[languages]`, e.g. `009`.
    pub language: String,
    /// Name or help.
    pub kind: TextKind,
    /// The text.
    pub text: String,
    /// The .INI line.
    pub line: usize,
}

/// A parsed and validated counter .INI file.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ini::CounterIni;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("d.h"), "#define OBJ 0 // the object\n")?;
/// std::fs::write(dir.path().join("d.ini"),
///     "[info]\ndrivername=Drv\nsymbolfile=d.h\n[languages]\n009=English\n[text]\nOBJ_009_NAME=Obj\n")?;
/// let ini = CounterIni::read(dir.path().join("d.ini"))?;
/// assert_eq!(ini.driver, "Drv");
/// assert_eq!(ini.entries[0].text, "Obj");
/// assert_eq!(ini.largest_offset(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterIni {
    /// The .INI file.
    pub path: PathBuf,
    /// `drivername=`.
    pub driver: String,
    /// The line of `drivername=`.
    pub driver_line: usize,
    /// `symbolfile=`, resolved against the .INI's folder.
    pub symbol_file: PathBuf,
    /// The `[languages]` keys, in file order.
    pub languages: Vec<String>,
    /// The `[text]` entries, in file order.
    pub entries: Vec<TextEntry>,
}

/// A symbol from the symbol file: its value and line.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ini::{parse_symbols, Symbol};
/// assert_eq!(parse_symbols("#define OBJ 2\n")["OBJ"], Symbol { value: 2, line: 1 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol {
    /// The `#define`d number.
    pub value: u32,
    /// The 1-based line.
    pub line: usize,
}

/// Reads `#define NAME decimal_number` lines; everything else is ignored. The first
/// definition of a name wins.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ini::parse_symbols;
///
/// let syms = parse_symbols("// devdef.h\n#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2 // A\n#define X 0x4\nint y;\n");
/// assert_eq!(syms["OBJECT_1"].value, 0);
/// assert_eq!(syms["DEVICE_COUNTER_1"].line, 3);
/// assert!(!syms.contains_key("X")); // not decimal: ignored
/// ```
pub fn parse_symbols(text: &str) -> HashMap<String, Symbol> {
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(number)) = (words.next(), words.next()) else {
            continue;
        };
        let comment_ok = match words.next() {
            None => true,
            Some(w) => w.starts_with("//") || w.starts_with("/*"),
        };
        if !comment_ok || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(value) = number.parse::<u32>() else {
            continue;
        };
        out.entry(name.to_owned())
            .or_insert(Symbol { value, line: i + 1 });
    }
    out
}

/// One `key=value` line of an INI section.
struct IniLine<'a> {
    key: &'a str,
    value: &'a str,
    line: usize,
}

/// An INI file split into sections: name (lower-cased) → header line and entries.
struct Sections<'a> {
    sections: HashMap<String, (usize, Vec<IniLine<'a>>)>,
}

impl<'a> Sections<'a> {
    fn parse(text: &'a str) -> Self {
        let mut sections: HashMap<String, (usize, Vec<IniLine<'a>>)> = HashMap::new();
        let mut current: Option<String> = None;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with("//") {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest.split(']').next().unwrap_or(rest).trim().to_lowercase();
                sections.entry(name.clone()).or_insert((i + 1, Vec::new()));
                current = Some(name);
                continue;
            }
            let (Some(section), Some((key, value))) = (&current, line.split_once('=')) else {
                continue;
            };
            if let Some((_, entries)) = sections.get_mut(section) {
                entries.push(IniLine {
                    key: key.trim(),
                    value: value.trim(),
                    line: i + 1,
                });
            }
        }
        Self { sections }
    }

    fn get(&self, section: &str, key: &str) -> Option<&IniLine<'a>> {
        self.sections
            .get(section)?
            .1
            .iter()
            .find(|l| l.key.eq_ignore_ascii_case(key))
    }

    fn header_line(&self, section: &str) -> Option<usize> {
        self.sections.get(section).map(|(line, _)| *line)
    }

    fn entries(&self, section: &str) -> &[IniLine<'a>] {
        self.sections.get(section).map_or(&[], |(_, e)| e)
    }
}

/// The `[text]` line `l` of the .INI at `path`: its key names a symbol of `symbols` (read from
/// `symbol_file`) with an even offset, and one of `languages`.
fn text_entry(
    path: &Path,
    l: &IniLine<'_>,
    languages: &[String],
    symbols: &HashMap<String, Symbol>,
    symbol_file: &Path,
) -> Result<TextEntry, LodctrError> {
    let (symbol, lang, kind) = split_text_key(l.key).ok_or_else(|| LodctrError::BadTextKey {
        path: path.to_path_buf(),
        line: l.line,
        key: l.key.to_owned(),
    })?;
    let language = languages
        .iter()
        .find(|known| known.eq_ignore_ascii_case(lang))
        .ok_or_else(|| LodctrError::UnknownLanguage {
            path: path.to_path_buf(),
            line: l.line,
            language: lang.to_owned(),
        })?;
    let sym = symbols
        .get(symbol)
        .ok_or_else(|| LodctrError::UnknownSymbol {
            path: path.to_path_buf(),
            line: l.line,
            symbol: symbol.to_owned(),
            symbol_file: symbol_file.to_path_buf(),
        })?;
    ensure(sym.value.is_multiple_of(2), || LodctrError::OddOffset {
        path: path.to_path_buf(),
        line: l.line,
        symbol: symbol.to_owned(),
        offset: sym.value,
        symbol_file: symbol_file.to_path_buf(),
        symbol_line: sym.line,
    })?;
    Ok(TextEntry {
        symbol: symbol.to_owned(),
        offset: sym.value,
        language: language.clone(),
        kind,
        text: l.value.to_owned(),
        line: l.line,
    })
}

/// Splits a `[text]` key into symbol, language and kind, from the right.
fn split_text_key(key: &str) -> Option<(&str, &str, TextKind)> {
    let (rest, kind) = key.rsplit_once('_')?;
    let kind = if kind.eq_ignore_ascii_case("NAME") {
        TextKind::Name
    } else if kind.eq_ignore_ascii_case("HELP") {
        TextKind::Help
    } else {
        return None;
    };
    let (symbol, lang) = rest.rsplit_once('_')?;
    (!symbol.is_empty() && !lang.is_empty()).then_some((symbol, lang, kind))
}

impl CounterIni {
    /// Reads and validates a counter .INI file and its symbol file. Every error names the
    /// file and line (see [`LodctrError`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{ini::CounterIni, LodctrError};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("d.h"), "#define OBJ 1\n")?;
    /// std::fs::write(dir.path().join("d.ini"),
    ///     "[info]\ndrivername=Drv\nsymbolfile=d.h\n[languages]\n009=\n[text]\nOBJ_009_NAME=Obj\n")?;
    /// let err = CounterIni::read(dir.path().join("d.ini")).unwrap_err();
    /// assert!(matches!(err, LodctrError::OddOffset { line: 7, offset: 1, .. }), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<Self, LodctrError> {
        let path = path.as_ref().to_path_buf();
        let bytes = INI_RULE
            .read(&path)
            .map_err(|source| LodctrError::IniUnreadable {
                path: path.clone(),
                source: Box::new(source),
            })?;
        let text = decode_text(&path, &bytes)?;
        let ini = Sections::parse(&text);

        let info = |key: &'static str| {
            ini.get("info", key)
                .filter(|l| !l.value.is_empty())
                .ok_or_else(|| LodctrError::MissingInfoKey {
                    path: path.clone(),
                    line: ini.header_line("info"),
                    key,
                })
        };
        let driver = info("drivername")?;
        check_name(NameKind::Service, driver.value).map_err(|source| {
            LodctrError::BadDriverName {
                path: path.clone(),
                line: driver.line,
                source,
            }
        })?;
        let symbol_line = info("symbolfile")?;
        // Windows .INI files write `sub\devdef.h`; accept that on Linux too.
        let symbol_rel = PathBuf::from(symbol_line.value.replace('\\', "/"));
        let symbol_file = match path.parent() {
            Some(dir) if symbol_rel.is_relative() => dir.join(&symbol_rel),
            _ => symbol_rel,
        };
        let symbol_bytes =
            SYMBOL_RULE
                .read(&symbol_file)
                .map_err(|source| LodctrError::SymbolFileUnreadable {
                    ini: path.clone(),
                    line: symbol_line.line,
                    symbol_file: symbol_file.clone(),
                    source: Box::new(source),
                })?;
        let symbols = parse_symbols(&decode_text(&symbol_file, &symbol_bytes)?);

        let languages: Vec<String> = ini
            .entries("languages")
            .iter()
            .map(|l| l.key.to_owned())
            .collect();
        let mut entries = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for l in ini.entries("text") {
            let entry = text_entry(&path, l, &languages, &symbols, &symbol_file)?;
            // As GetPrivateProfileString: the first of two identical keys wins.
            if seen.insert(l.key.to_uppercase()) {
                entries.push(entry);
            }
        }
        Ok(Self {
            path: path.clone(),
            driver: driver.value.to_owned(),
            driver_line: driver.line,
            symbol_file,
            languages,
            entries,
        })
    }

    /// The largest offset any `[text]` entry uses (0 when there are none):
    /// Last Counter = First Counter + this.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("d.h"), "#define A 0\n#define B 6\n")?;
    /// std::fs::write(dir.path().join("d.ini"), "[info]\ndrivername=D\nsymbolfile=d.h\n\
    ///     [languages]\n009=\n[text]\nA_009_NAME=a\nB_009_HELP=b\n")?;
    /// let ini = prfdata_registry::ini::CounterIni::read(dir.path().join("d.ini"))?;
    /// assert_eq!(ini.largest_offset(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn largest_offset(&self) -> u32 {
        self.entries.iter().map(|e| e.offset).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keys_split_from_the_right() {
        assert_eq!(
            split_text_key("DEVICE_COUNTER_1_00C_HELP"),
            Some(("DEVICE_COUNTER_1", "00C", TextKind::Help))
        );
        assert_eq!(split_text_key("X_009_NAMES"), None);
        assert_eq!(split_text_key("_009_NAME"), None);
        assert_eq!(split_text_key("009_NAME"), None);
    }

    #[test]
    fn sections_ignore_comments_and_lines_without_equals() {
        let text =
            "// begin\n[INFO] // note\nDriverName = Drv \n; c\njunk\n[text]\nA_009_NAME=x=y\n";
        let s = Sections::parse(text);
        assert_eq!(s.get("info", "drivername").map(|l| l.value), Some("Drv"));
        assert_eq!(s.entries("text")[0].value, "x=y");
        assert_eq!(s.header_line("info"), Some(2));
    }

    #[test]
    fn symbols_need_decimal_and_only_comments_after() {
        let syms = parse_symbols("#define A 2 junk\n#define B 99999999999\n  #define C 4\n");
        assert!(!syms.contains_key("A"));
        assert!(!syms.contains_key("B"));
        assert_eq!(syms["C"].value, 4);
    }
}

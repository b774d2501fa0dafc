//! Windows-style switches (`/v NAME`, `/f`, `/S:file`) mapped to the dashed forms clap parses,
//! so `prfmon reg add KEY /v NAME /t REG_DWORD /d 1 /f` works as it does with reg.exe.
//!
//! Only whole words that are exactly one of the switches below are mapped (case-insensitive),
//! and never the word after a switch that takes a value, so paths such as `/tmp/x.ini` and data
//! such as `/d /f` pass through unchanged.
//!
//! In a `prfmon typeperf` command line, typeperf's own single-dash switches (`-si`, `-sc`, `-o`,
//! `-f`, `-q`, `-qx`, any case) map to the long flags of that subcommand.

use std::ffi::OsString;

/// Switch → dashed flag. Those mapped to a flag that takes a value are listed in `TAKES_VALUE`.
const SWITCHES: [(&str, &str); 7] = [
    ("/v", "--value"),
    ("/ve", "--empty-value"),
    ("/va", "--all-values"),
    ("/t", "--type"),
    ("/d", "--data"),
    ("/s", "--separator"),
    ("/f", "--force"),
];

/// Dashed flags whose next word is their value.
const TAKES_VALUE: [&str; 6] = [
    "--value",
    "--type",
    "--data",
    "--separator",
    "--save",
    "--restore",
];

/// typeperf's single-dash switches → the long flags of `prfmon typeperf`; mapped only in a
/// `typeperf` command line, so other subcommands keep their own short options.
const TYPEPERF_SWITCHES: [(&str, &str); 6] = [
    ("-si", "--si"),
    ("-sc", "--sc"),
    ("-o", "--output"),
    ("-f", "--format"),
    ("-q", "--query"),
    ("-qx", "--query-expanded"),
];

/// typeperf's flags whose next word is their value (`-q` / `-qx` take an optional OBJECT, which
/// clap reads as it is).
const TYPEPERF_TAKES_VALUE: [&str; 4] = ["--si", "--sc", "--output", "--format"];

/// `/S:file` → `--save=file`, `/R:file` → `--restore=file`.
const PREFIXES: [(&str, &str); 2] = [("/s:", "--save="), ("/r:", "--restore=")];

/// Rewrites the Windows-style words of a command line into clap's dashed forms.
pub fn to_dashed(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut value_next = false;
    let mut typeperf = false;
    for (position, arg) in args.into_iter().enumerate() {
        if position == 1 {
            typeperf = arg
                .to_str()
                .is_some_and(|w| w.eq_ignore_ascii_case("typeperf"));
        }
        if std::mem::take(&mut value_next) {
            out.push(arg);
            continue;
        }
        let Some(word) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        let lower = word.to_ascii_lowercase();
        if typeperf {
            if let Some((_, dashed)) = TYPEPERF_SWITCHES.iter().find(|(s, _)| *s == lower) {
                value_next = TYPEPERF_TAKES_VALUE.contains(dashed);
                out.push((*dashed).into());
                continue;
            }
        }
        let mapped = if let Some((_, dashed)) = SWITCHES.iter().find(|(s, _)| *s == lower) {
            Some((*dashed).to_owned())
        } else {
            PREFIXES
                .iter()
                .find(|(p, _)| lower.starts_with(p) && word.len() > p.len())
                .map(|(p, dashed)| format!("{dashed}{}", &word[p.len()..]))
        };
        let word = mapped.unwrap_or_else(|| word.to_owned());
        value_next = TAKES_VALUE.contains(&word.as_str());
        out.push(word.into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(words: &[&str]) -> Vec<String> {
        to_dashed(words.iter().map(OsString::from))
            .into_iter()
            .map(|w| w.into_string().unwrap())
            .collect()
    }

    #[test]
    fn switches_map_but_their_values_do_not() {
        assert_eq!(
            map(&["prfmon", "reg", "add", r"HKLM\X", "/v", "/f", "/T", "REG_SZ", "/d", "/v", "/F"]),
            [
                "prfmon", "reg", "add", r"HKLM\X", "--value", "/f", "--type", "REG_SZ", "--data",
                "/v", "--force"
            ]
        );
    }

    #[test]
    fn typeperf_single_dash_switches_map_only_for_typeperf() {
        assert_eq!(
            map(&[
                "prfmon", "typeperf", r"\A\B", "-SI", "-sc", "-sc", "3", "-o", "-f", "-F", "tsv"
            ]),
            [
                "prfmon", "typeperf", r"\A\B", "--si", "-sc", "--sc", "3", "--output", "-f",
                "--format", "tsv"
            ]
        );
        assert_eq!(
            map(&["prfmon", "typeperf", "-qx", "PrfData Demo Pool", "-q"]),
            [
                "prfmon",
                "typeperf",
                "--query-expanded",
                "PrfData Demo Pool",
                "--query"
            ]
        );
        assert_eq!(map(&["prfmon", "list", "-q"]), ["prfmon", "list", "-q"]);
    }

    #[test]
    fn save_and_restore_prefixes_map_and_paths_do_not() {
        assert_eq!(
            map(&["prfmon", "lodctr", "/S:/tmp/s.toml", "/tmp/x.ini", "/r:y"]),
            [
                "prfmon",
                "lodctr",
                "--save=/tmp/s.toml",
                "/tmp/x.ini",
                "--restore=y"
            ]
        );
    }
}

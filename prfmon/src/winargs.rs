//! Windows-style switches (`/v NAME`, `/f`, `/S:file`) mapped to the dashed forms clap parses,
//! so `prfmon reg add KEY /v NAME /t REG_DWORD /d 1 /f` works as it does with reg.exe.
//!
//! Only whole words that are exactly one of the switches below are mapped (case-insensitive),
//! and never the word after a switch that takes a value, so paths such as `/tmp/x.ini` and data
//! such as `/d /f` pass through unchanged.

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

/// `/S:file` → `--save=file`, `/R:file` → `--restore=file`.
const PREFIXES: [(&str, &str); 2] = [("/s:", "--save="), ("/r:", "--restore=")];

/// Rewrites the Windows-style words of a command line into clap's dashed forms.
pub fn to_dashed(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut value_next = false;
    for arg in args {
        if std::mem::take(&mut value_next) {
            out.push(arg);
            continue;
        }
        let Some(word) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        let lower = word.to_ascii_lowercase();
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

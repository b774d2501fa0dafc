//! Windows-style switches (`/v NAME`, `/f`, `/S:file`) mapped to the dashed forms clap parses,
//! so `prfmon reg add KEY /v NAME /t REG_DWORD /d 1 /f` works as it does with reg.exe.
//!
//! The switches depend on the command, as with the Windows tools: `/s` is reg query's "every
//! subkey" but reg add's separator; `/d` is reg add's data and reg query's "search data only".
//! Only whole words that are exactly one of the current command's switches are mapped
//! (case-insensitive), and never the word after a switch that takes a value, so paths such as
//! `/tmp/x.ini` and data such as `/d /f` pass through unchanged.
//!
//! | command | switches |
//! |---|---|
//! | `reg query` | `/v NAME`, `/ve`, `/s`, `/se SEP`, `/z`, `/reg:32`, `/reg:64`; `/f`, `/k`, `/d`, `/c`, `/e`, `/t` are recognised and refused (no search) |
//! | `reg add` | `/v NAME`, `/ve`, `/t TYPE`, `/s SEP`, `/d DATA`, `/f`, `/reg:32`, `/reg:64` |
//! | `reg delete` | `/v NAME`, `/ve`, `/va`, `/f`, `/reg:32`, `/reg:64` |
//! | `lodctr` | `/S:FILE`, `/R:FILE`, `/E:SERVICE`, `/D:SERVICE` |
//! | `typeperf` | `-si`, `-sc`, `-o`, `-y`, `-f`, `-cf FILE`, `-q`, `-qx`, `-s HOST:PORT` (typeperf's own single-dash switches) |
//! | `watch` | `-si` (typeperf's interval switch) |
//! | each of these, `unlodctr` and `prfmon` alone | `/?`, `-?` (help) |

use std::ffi::OsString;

/// One switch: the word, the dashed flag it becomes, and whether the next word is its value.
type Switch = (&'static str, &'static str, bool);

/// `reg query`'s switches. `/f` and its modifiers map to flags that `reg query` refuses with a
/// message naming the switch.
const REG_QUERY: [Switch; 13] = [
    ("/v", "--value", true),
    ("/ve", "--empty-value", false),
    ("/s", "--recursive", false),
    ("/se", "--separator", true),
    ("/z", "--type-numbers", false),
    ("/reg:32", "--reg-view=32", false),
    ("/reg:64", "--reg-view=64", false),
    ("/f", "--search", true),
    ("/k", "--keys-only", false),
    ("/d", "--data-only", false),
    ("/c", "--case-sensitive", false),
    ("/e", "--exact", false),
    ("/t", "--type", true),
];

/// `reg add`'s switches.
const REG_ADD: [Switch; 8] = [
    ("/v", "--value", true),
    ("/ve", "--empty-value", false),
    ("/t", "--type", true),
    ("/s", "--separator", true),
    ("/d", "--data", true),
    ("/f", "--force", false),
    ("/reg:32", "--reg-view=32", false),
    ("/reg:64", "--reg-view=64", false),
];

/// `reg delete`'s switches.
const REG_DELETE: [Switch; 6] = [
    ("/v", "--value", true),
    ("/ve", "--empty-value", false),
    ("/va", "--all-values", false),
    ("/f", "--force", false),
    ("/reg:32", "--reg-view=32", false),
    ("/reg:64", "--reg-view=64", false),
];

/// typeperf's single-dash switches → the long flags of `prfmon typeperf` (`-q` / `-qx` take an
/// optional OBJECT, which clap reads as it is).
const TYPEPERF: [Switch; 9] = [
    ("-s", "--computer", true),
    ("-si", "--si", true),
    ("-sc", "--sc", true),
    ("-o", "--output", true),
    ("-y", "--yes", false),
    ("-cf", "--counter-file", true),
    ("-f", "--format", true),
    ("-q", "--query", false),
    ("-qx", "--query-expanded", false),
];

/// `watch`'s typeperf-style switch.
const WATCH: [Switch; 1] = [("-si", "--interval", true)];

/// The help switches of the Windows tools, mapped on every command that takes Windows-style
/// switches ([`takes_help_switches`]).
const HELP: [Switch; 2] = [("/?", "--help", false), ("-?", "--help", false)];

/// The commands named after a Windows tool (`prfmon` alone too): `/?` and `-?` print their
/// help.
const WINDOWS_COMMANDS: [&str; 5] = ["reg", "lodctr", "unlodctr", "typeperf", "watch"];

/// lodctr's `/X:value` switches → `--flag=value`.
const LODCTR_PREFIXES: [(&str, &str); 4] = [
    ("/s:", "--save="),
    ("/r:", "--restore="),
    ("/e:", "--enable="),
    ("/d:", "--disable="),
];

/// The switches of the command a command line runs (its first one or two words).
fn switches_for(words: &[Option<String>]) -> &'static [Switch] {
    let word = |i: usize| {
        words
            .get(i)
            .and_then(|w| w.as_deref())
            .map(str::to_ascii_lowercase)
    };
    match (word(1).as_deref(), word(2).as_deref()) {
        (Some("reg"), Some("query")) => &REG_QUERY,
        (Some("reg"), Some("add")) => &REG_ADD,
        (Some("reg"), Some("delete")) => &REG_DELETE,
        (Some("typeperf"), _) => &TYPEPERF,
        (Some("watch"), _) => &WATCH,
        _ => &[],
    }
}

/// Whether the command a command line runs is one of [`WINDOWS_COMMANDS`], or none (`prfmon
/// /?`).
fn takes_help_switches(words: &[Option<String>]) -> bool {
    words.get(1).and_then(|w| w.as_deref()).is_some_and(|w| {
        HELP.iter().any(|(h, _, _)| w == *h)
            || WINDOWS_COMMANDS.iter().any(|c| w.eq_ignore_ascii_case(c))
    })
}

/// Rewrites the Windows-style words of a command line into clap's dashed forms.
pub fn to_dashed(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let args: Vec<OsString> = args.into_iter().collect();
    let words: Vec<Option<String>> = args
        .iter()
        .take(3)
        .map(|a| a.to_str().map(str::to_owned))
        .collect();
    let switches = switches_for(&words);
    let help: &[Switch] = if takes_help_switches(&words) {
        &HELP
    } else {
        &[]
    };
    let lodctr = words
        .get(1)
        .and_then(|w| w.as_deref())
        .is_some_and(|w| w.eq_ignore_ascii_case("lodctr"));
    let mut out = Vec::with_capacity(args.len());
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
        if let Some((_, dashed, takes_value)) =
            switches.iter().chain(help).find(|(s, _, _)| *s == lower)
        {
            value_next = *takes_value;
            out.push((*dashed).into());
            continue;
        }
        if lodctr {
            if let Some((p, dashed)) = LODCTR_PREFIXES
                .iter()
                .find(|(p, _)| lower.starts_with(p) && word.len() > p.len())
            {
                out.push(format!("{dashed}{}", &word[p.len()..]).into());
                continue;
            }
        }
        out.push(arg);
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
    fn typeperf_counter_file_and_yes_map() {
        assert_eq!(
            map(&["prfmon", "typeperf", "-CF", "list.txt", "-o", "-y", "-Y"]),
            [
                "prfmon",
                "typeperf",
                "--counter-file",
                "list.txt",
                "--output",
                "-y",
                "--yes"
            ]
        );
    }

    #[test]
    fn watch_si_is_its_interval() {
        assert_eq!(
            map(&["prfmon", "watch", r"\A\B", "-SI", "0.5"]),
            ["prfmon", "watch", r"\A\B", "--interval", "0.5"]
        );
        assert_eq!(map(&["prfmon", "list", "-si"]), ["prfmon", "list", "-si"]);
    }

    #[test]
    fn slash_and_dash_question_are_help_on_windows_style_commands() {
        for help in ["/?", "-?"] {
            for command in [
                &["prfmon", "reg", "query"][..],
                &["prfmon", "lodctr"],
                &["prfmon", "unlodctr"],
                &["prfmon", "typeperf"],
                &["prfmon", "watch"],
                &["prfmon"],
            ] {
                let mut words = command.to_vec();
                words.push(help);
                let mut want: Vec<&str> = command.to_vec();
                want.push("--help");
                assert_eq!(map(&words), want, "{words:?}");
            }
        }
        // A switch's value stays a value; other commands keep the word.
        assert_eq!(
            map(&["prfmon", "reg", "add", "K", "/v", "/?"]),
            ["prfmon", "reg", "add", "K", "--value", "/?"]
        );
        assert_eq!(map(&["prfmon", "decode", "/?"]), ["prfmon", "decode", "/?"]);
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

    #[test]
    fn slash_s_is_recursion_in_query_and_the_separator_in_add() {
        assert_eq!(
            map(&["prfmon", "reg", "query", r"HKLM\X", "/S", "/se", "/s", "/reg:64"]),
            [
                "prfmon",
                "reg",
                "query",
                r"HKLM\X",
                "--recursive",
                "--separator",
                "/s",
                "--reg-view=64"
            ]
        );
        assert_eq!(
            map(&["prfmon", "reg", "add", r"HKLM\X", "/s", ",", "/d", "a,b"]),
            [
                "prfmon",
                "reg",
                "add",
                r"HKLM\X",
                "--separator",
                ",",
                "--data",
                "a,b"
            ]
        );
        assert_eq!(
            map(&["prfmon", "reg", "query", r"HKLM\X", "/f", "x", "/d"]),
            [
                "prfmon",
                "reg",
                "query",
                r"HKLM\X",
                "--search",
                "x",
                "--data-only"
            ]
        );
    }

    #[test]
    fn lodctr_enable_and_disable_map_only_for_lodctr() {
        assert_eq!(
            map(&["prfmon", "lodctr", "/E:App", "/d:Other"]),
            ["prfmon", "lodctr", "--enable=App", "--disable=Other"]
        );
        assert_eq!(
            map(&["prfmon", "decode", "/e:x"]),
            ["prfmon", "decode", "/e:x"]
        );
    }
}

//! `prfmon reg query | add | delete` through the real binary: reg.exe's output and behaviour.

use crate::common;

use common::{prfmon, prfmon_with_input};

const PERFLIB: &str = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib";
const PERFLIB_LONG: &str =
    r"HKEY_LOCAL_MACHINE\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib";
const APP_PERF: &str = r"HKLM\SYSTEM\CurrentControlSet\Services\App\Performance";
const NOT_FOUND: &str =
    "prfmon reg: ERROR: The system was unable to find the specified registry key or value.\n";

#[test]
fn query_prints_values_then_subkeys_like_reg_exe() {
    let dir = tempfile::tempdir().unwrap();
    let run = prfmon(dir.path(), &["reg", "query", PERFLIB]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "\n{PERFLIB_LONG}\n    Last Counter    REG_DWORD    0x736\n    Last Help    REG_DWORD    0x737\n    Base Index    REG_DWORD    0x737\n\n{PERFLIB_LONG}\\009\n"
        )
    );
}

#[test]
fn query_v_prints_one_value_case_insensitively() {
    let dir = tempfile::tempdir().unwrap();
    let run = prfmon(
        dir.path(),
        &["reg", "query", &PERFLIB.to_lowercase(), "/v", "base index"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!("\n{PERFLIB_LONG}\n    Base Index    REG_DWORD    0x737\n\n")
    );
}

#[test]
fn unknown_key_or_value_is_reg_exe_error_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let run = prfmon(dir.path(), &["reg", "query", r"HKLM\SOFTWARE\Nope"]);
    assert_eq!(
        (run.code, run.stderr.as_str(), run.stdout.as_str()),
        (1, NOT_FOUND, "")
    );
    let run = prfmon(dir.path(), &["reg", "query", PERFLIB, "/v", "Nope"]);
    assert_eq!((run.code, run.stderr.as_str()), (1, NOT_FOUND));
    let run = prfmon(dir.path(), &["reg", "delete", PERFLIB, "/v", "Nope", "/f"]);
    assert_eq!((run.code, run.stderr.as_str()), (1, NOT_FOUND));
}

#[test]
fn add_every_type_then_query_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        [
            "/v",
            "Library",
            "/t",
            "REG_EXPAND_SZ",
            "/d",
            "/opt/app/libperf.so",
        ],
        ["/v", "Open", "/t", "REG_SZ", "/d", "OpenPerf"],
        ["/v", "First Counter", "/t", "REG_DWORD", "/d", "0x738"],
        ["/v", "Open Timeout", "/t", "REG_DWORD", "/d", "10000"],
        ["/v", "Names", "/t", "REG_MULTI_SZ", "/d", r"a\0b c\0d"],
    ] {
        let mut all = vec!["reg", "add", APP_PERF];
        all.extend(args);
        all.push("/f");
        let run = prfmon(dir.path(), &all);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "The operation completed successfully.\n");
    }
    let run = prfmon(dir.path(), &["reg", "query", APP_PERF]);
    assert_eq!(
        run.stdout,
        "\nHKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Services\\App\\Performance\n\
         \x20   Library    REG_EXPAND_SZ    /opt/app/libperf.so\n\
         \x20   Open    REG_SZ    OpenPerf\n\
         \x20   First Counter    REG_DWORD    0x738\n\
         \x20   Open Timeout    REG_DWORD    0x2710\n\
         \x20   Names    REG_MULTI_SZ    a\\0b c\\0d\n\n"
    );
}

#[test]
fn add_asks_before_overwriting_unless_f() {
    let dir = tempfile::tempdir().unwrap();
    let set = |data: &str, extra: &[&str], input: &str| {
        let mut args = vec!["reg", "add", APP_PERF, "/v", "Close", "/d", data];
        args.extend(extra);
        prfmon_with_input(dir.path(), &args, input)
    };
    assert_eq!(set("One", &[], "").code, 0);
    let refused = set("Two", &[], "no\n");
    assert_eq!(refused.code, 1);
    assert!(
        refused.stdout.contains("Value Close exists, overwrite"),
        "{}",
        refused.stdout
    );
    let query = prfmon(dir.path(), &["reg", "query", APP_PERF, "/v", "Close"]);
    assert!(query.stdout.contains("REG_SZ    One"));
    assert_eq!(set("Three", &[], "yes\n").code, 0);
    assert_eq!(set("Four", &["/f"], "").code, 0);
    let query = prfmon(dir.path(), &["reg", "query", APP_PERF, "/v", "Close"]);
    assert!(query.stdout.contains("REG_SZ    Four"), "{}", query.stdout);
}

#[test]
fn bad_data_and_type_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let run = prfmon(
        dir.path(),
        &[
            "reg",
            "add",
            APP_PERF,
            "/v",
            "X",
            "/t",
            "REG_DWORD",
            "/d",
            "lots",
            "/f",
        ],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("prfmon reg: ERROR:"),
        "{}",
        run.stderr
    );
    let run = prfmon(
        dir.path(),
        &[
            "reg",
            "add",
            APP_PERF,
            "/v",
            "X",
            "/t",
            "REG_BINARY",
            "/d",
            "00",
            "/f",
        ],
    );
    assert_eq!(run.code, 1);
    let run = prfmon(dir.path(), &["reg", "add", r"HKXX\Nope", "/f"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("HKXX"), "{}", run.stderr);
}

#[test]
fn delete_value_then_key() {
    let dir = tempfile::tempdir().unwrap();
    prfmon(
        dir.path(),
        &["reg", "add", APP_PERF, "/v", "Open", "/d", "O", "/f"],
    );
    prfmon(
        dir.path(),
        &["reg", "add", APP_PERF, "/v", "Close", "/d", "C", "/f"],
    );

    let run = prfmon(dir.path(), &["reg", "delete", APP_PERF, "/v", "Open", "/f"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "The operation completed successfully.\n")
    );
    let query = prfmon(dir.path(), &["reg", "query", APP_PERF]);
    assert!(!query.stdout.contains("Open") && query.stdout.contains("Close"));

    let key = r"HKLM\SYSTEM\CurrentControlSet\Services\App";
    let refused = prfmon_with_input(dir.path(), &["reg", "delete", key], "n\n");
    assert_eq!(refused.code, 1);
    assert!(
        refused
            .stdout
            .contains("Permanently delete the registry key"),
        "{}",
        refused.stdout
    );
    assert_eq!(prfmon(dir.path(), &["reg", "query", APP_PERF]).code, 0);

    let run = prfmon(dir.path(), &["reg", "delete", key, "/f"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(prfmon(dir.path(), &["reg", "query", APP_PERF]).code, 1);
    assert_eq!(prfmon(dir.path(), &["reg", "query", key]).code, 1);
}

#[test]
fn corrupt_store_is_reported_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(prfmon(dir.path(), &["reg", "query", PERFLIB]).code, 0);
    std::fs::write(dir.path().join("registry.toml"), "format = 1\n[[key]\n").unwrap();
    let run = prfmon(dir.path(), &["reg", "query", PERFLIB]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("registry.toml") && run.stderr.contains("line 2"),
        "{}",
        run.stderr
    );
}

/// The keys of Wine's reg.exe conformance test (run against Windows): a key with three values
/// and a subkey with three values.
fn wine_test_keys(root: &std::path::Path) -> &'static str {
    const BASE: &str = r"HKLM\SOFTWARE\Wine\reg_test";
    let sub = format!(r"{BASE}\subkey");
    for (key, name, ty, data) in [
        (BASE, "Test1", "REG_SZ", "Hello, World"),
        (BASE, "Test2", "REG_DWORD", "0x123"),
        (BASE, "Wine", "REG_SZ", "First instance"),
        (&sub, "Test3", "REG_SZ", "Some string data"),
        (&sub, "Test4", "REG_DWORD", "0xabc"),
        (&sub, "Wine", "REG_SZ", "Second instance"),
    ] {
        let run = prfmon(
            root,
            &["reg", "add", key, "/v", name, "/t", ty, "/d", data, "/f"],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    BASE
}

const WINE_LONG: &str = r"HKEY_LOCAL_MACHINE\SOFTWARE\Wine\reg_test";

#[test]
fn query_s_lists_every_key_below_as_reg_exe_does() {
    let dir = tempfile::tempdir().unwrap();
    let base = wine_test_keys(dir.path());
    let run = prfmon(dir.path(), &["reg", "query", base, "/s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "\n{WINE_LONG}\n    Test1    REG_SZ    Hello, World\n    Test2    REG_DWORD    0x123\n    \
             Wine    REG_SZ    First instance\n\n{WINE_LONG}\\subkey\n    Test3    REG_SZ    Some \
             string data\n    Test4    REG_DWORD    0xabc\n    Wine    REG_SZ    Second instance\n\n"
        )
    );
    // A trailing backslash and the switch in capitals change nothing.
    let again = prfmon(dir.path(), &["reg", "query", &format!(r"{base}\"), "/S"]);
    assert_eq!(again.stdout, run.stdout);

    // One value, searched in every key below.
    let run = prfmon(dir.path(), &["reg", "query", base, "/v", "Wine", "/s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "\n{WINE_LONG}\n    Wine    REG_SZ    First instance\n\n{WINE_LONG}\\subkey\n    Wine    \
             REG_SZ    Second instance\n\nEnd of search: 2 match(es) found.\n"
        )
    );
}

#[test]
fn a_key_with_only_subkeys_prints_as_reg_exe_does() {
    let dir = tempfile::tempdir().unwrap();
    let base = r"HKLM\SOFTWARE\Wine\reg_test";
    for i in 1..=3 {
        let run = prfmon(
            dir.path(),
            &["reg", "add", &format!(r"{base}\subkey{i}"), "/f"],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let run = prfmon(dir.path(), &["reg", "query", base]);
    assert_eq!(
        run.stdout,
        format!("\n{WINE_LONG}\\subkey1\n{WINE_LONG}\\subkey2\n{WINE_LONG}\\subkey3\n")
    );
    let run = prfmon(dir.path(), &["reg", "query", base, "/s"]);
    assert_eq!(
        run.stdout,
        format!("\n{WINE_LONG}\\subkey1\n\n{WINE_LONG}\\subkey2\n\n{WINE_LONG}\\subkey3\n\n")
    );
}

#[test]
fn query_ve_se_z_and_reg_views() {
    let dir = tempfile::tempdir().unwrap();
    let run = prfmon(
        dir.path(),
        &[
            "reg",
            "add",
            APP_PERF,
            "/v",
            "Names",
            "/t",
            "REG_MULTI_SZ",
            "/s",
            ",",
            "/d",
            "a,b",
            "/f",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let long = r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Services\App\Performance";
    let run = prfmon(dir.path(), &["reg", "query", APP_PERF, "/ve"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!("\n{long}\n    (Default)    REG_SZ    (value not set)\n")
    );
    let run = prfmon(
        dir.path(),
        &[
            "reg", "query", APP_PERF, "/v", "Names", "/se", "|", "/z", "/reg:64",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!("\n{long}\n    Names    REG_MULTI_SZ (7)    a|b\n\n")
    );
    let run = prfmon(
        dir.path(),
        &["reg", "query", APP_PERF, "/reg:32", "/reg:64"],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("prfmon reg: ERROR:"),
        "{}",
        run.stderr
    );
    let run = prfmon(dir.path(), &["reg", "query", APP_PERF, "/se", "ab"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("/se"), "{}", run.stderr);
}

#[test]
fn query_search_switches_are_refused_naming_the_switch() {
    let dir = tempfile::tempdir().unwrap();
    for (args, switch) in [
        (&["/f", "Perflib"][..], "/f"),
        (&["/f", "Perflib", "/k"], "/f"),
        (&["/k"], "/k"),
        (&["/d"], "/d"),
        (&["/c"], "/c"),
        (&["/e"], "/e"),
        (&["/t", "REG_SZ"], "/t"),
    ] {
        let mut all = vec!["reg", "query", PERFLIB];
        all.extend(args);
        let run = prfmon(dir.path(), &all);
        assert_eq!(run.code, 1, "{args:?}");
        assert!(
            run.stderr.starts_with(&format!(
                "prfmon reg: ERROR: {switch} (search) is not supported"
            )),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

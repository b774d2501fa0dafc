//! The Collect query string as "How a performance DLL interfaces with a monitor" gives it: the
//! keywords `Global`, `Costly` and `Foreign` are case-sensitive; a query that is none of them
//! is an index list of decimal numbers; an index list that is not one (a word, a sign, a number
//! past 32 bits) returns no data (`*lpNumObjectTypes` = 0, `*lpcbTotalBytes` = 0, the pointer
//! unchanged, ERROR_SUCCESS) and is logged once, not at every Collect.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{app_a, env, parse, serial, Provider, ERROR_SUCCESS};

/// What a Collect into a 64 KiB buffer did: (status, pointer advance, bytes, objects).
fn outcome(p: &Provider, query: &str) -> (u32, usize, u32, u32) {
    let mut buf = vec![0u8; 1 << 16];
    let out = p.collect_into(query, &mut buf, 1 << 16);
    (out.status, out.advanced, out.bytes, out.objects)
}

/// The documented "no data" return.
const NO_DATA: (u32, usize, u32, u32) = (ERROR_SUCCESS, 0, 0, 0);

/// Each form of the document, and keywords in another case taken as what they are: malformed
/// index lists.
#[test]
fn each_query_form_and_keywords_only_in_their_case() {
    let _s = serial();
    let (fc, _) = env().first_a;
    let _prf = app_a::PrfData::activate().unwrap();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let titles = |q: &str| {
        let (out, data) = p.collect(q);
        parse(&data, out.objects)
            .iter()
            .map(|o| o.header.object_name_title_index)
            .collect::<Vec<_>>()
    };
    assert_eq!(titles("Global"), [fc, fc + 10, fc + 14]);
    assert_eq!(titles("Costly"), [fc + 20]);
    assert_eq!(
        titles(&format!("{} {}", fc + 14, fc + 20)),
        [fc + 14, fc + 20]
    );
    // Not ours (other indexes, a counter's index, another computer): no data.
    for q in ["2 4 6", "Foreign otherhost", &format!("{}", fc + 2)] {
        assert_eq!(outcome(&p, q), NO_DATA, "{q:?}");
    }
    // Not a keyword, so an index list, and not a valid one: no data.
    for q in [
        "global",
        "GLOBAL",
        "gLOBAL",
        "costly",
        "COSTLY",
        "foreign host",
    ] {
        assert_eq!(outcome(&p, q), NO_DATA, "{q:?}");
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn a_malformed_index_list_returns_no_data() {
    let _s = serial();
    let (fc, _) = env().first_a;
    let _prf = app_a::PrfData::activate().unwrap();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let ours = fc + 14;
    // A well-formed list of one of our objects: its data.
    let (status, advanced, bytes, objects) = outcome(&p, &format!(" {ours}\t"));
    assert_eq!((status, objects), (ERROR_SUCCESS, 1));
    assert!(bytes > 0 && advanced == bytes as usize);
    // The same object in lists that are not index lists: no data, not part of it.
    for q in [
        format!("{ours} x"),
        format!("x {ours}"),
        format!("{ours} +2"),
        format!("{ours} -2"),
        format!("{ours} 4294967296"),
        format!("{ours} 0x10"),
        format!("{ours},{}", fc + 10),
        format!("Global {ours}"),
    ] {
        assert_eq!(outcome(&p, &q), NO_DATA, "{q:?}");
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
}

/// Child: Open app A and Collect malformed queries many times each.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    if std::env::var_os("PROV_QUERY_CHILD").is_none() {
        return;
    }
    // The child's own registry and block folder (under its TMPDIR) before anything else.
    let _s = serial();
    let _prf = app_a::PrfData::activate().unwrap();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    for _ in 0..5 {
        for q in ["global", "1848 x", "Global"] {
            outcome(&p, q);
        }
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
}

#[test]
fn a_malformed_query_is_logged_once_not_at_every_collect() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "query_rule::child_entry",
            "--include-ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("PROV_QUERY_CHILD", "1")
        .env("PRFDATA_PROVIDER_LOG", "warn")
        .env("TMPDIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(60), "the child ended");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = |needle: &str| {
        stderr
            .lines()
            .filter(|l| l.starts_with("prfdata-provider:") && l.contains(needle))
            .count()
    };
    assert_eq!(lines("\"global\""), 1, "{stderr}");
    assert_eq!(lines("\"1848 x\""), 1, "{stderr}");
    assert_eq!(lines("\"Global\""), 0, "{stderr}");
}

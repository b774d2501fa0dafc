//! prfdata's public surface, pinned: the items rustdoc lists on its all-items page, against
//! `tests/it/public_api.txt`. A change to the surface fails here until the file is updated on
//! purpose (`PRFDATA_BLESS=1 cargo test -p prfdata --test it public_api`), so it cannot grow by
//! accident; and the items stay at most [`MAX_ITEMS`] (the winperf.h constants are the crate
//! `prfdata-wire`'s, not prfdata's).
//!
//! How: `cargo doc -p prfdata --no-deps` with the default features, into a target folder of its
//! own under this build's `CARGO_TARGET_TMPDIR` (the outer `cargo test` holds the lock of its
//! own), then the all-items page (`all.html`) is read. Stable toolchain only; the first run
//! builds the dependencies' metadata (tens of seconds), later runs only prfdata's docs.
//! rustdoc's JSON output would give more (methods, fields) but needs a nightly toolchain.

use std::path::Path;
use std::process::Command;

/// The most public items prfdata may have.
const MAX_ITEMS: usize = 108;

/// The items of an all-items page: `kind path::Name`, sorted.
fn items(all_html: &str) -> Vec<String> {
    let mut items = Vec::new();
    for piece in all_html.split("<li><a href=\"").skip(1) {
        let Some((href, _)) = piece.split_once('"') else {
            continue;
        };
        // `reader/struct.BlockReader.html` -> `struct reader::BlockReader`
        let Some(page) = href.strip_suffix(".html") else {
            continue;
        };
        let (dirs, file) = page.rsplit_once('/').map_or(("", page), |(d, f)| (d, f));
        let Some((kind, name)) = file.split_once('.') else {
            continue;
        };
        let path = if dirs.is_empty() {
            name.to_owned()
        } else {
            format!("{}::{name}", dirs.replace('/', "::"))
        };
        items.push(format!("{kind} {path}"));
    }
    items.sort();
    items.dedup();
    items
}

#[test]
fn the_public_surface_is_the_one_in_public_api_txt() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("public-api");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["doc", "-p", "prfdata", "--no-deps", "--quiet"])
        .arg("--manifest-path")
        .arg(manifest.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTDOCFLAGS")
        .output()
        .expect("run cargo doc");
    assert!(
        out.status.success(),
        "cargo doc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(target.join("doc/prfdata/all.html")).expect("all.html");
    let found = items(&page);
    assert!(found.len() > 50, "the page was read: {found:?}");

    assert!(
        found.len() <= MAX_ITEMS,
        "{} public items, more than {MAX_ITEMS}",
        found.len()
    );

    let snapshot_path = manifest.join("tests/it/public_api.txt");
    let text = found.join("\n") + "\n";
    if std::env::var_os("PRFDATA_BLESS").is_some() {
        std::fs::write(&snapshot_path, &text).expect("write public_api.txt");
        return;
    }
    let pinned = std::fs::read_to_string(&snapshot_path).unwrap_or_default();
    let pinned: Vec<&str> = pinned.lines().collect();
    let added: Vec<&String> = found
        .iter()
        .filter(|i| !pinned.contains(&i.as_str()))
        .collect();
    let removed: Vec<&&str> = pinned
        .iter()
        .filter(|p| !found.iter().any(|i| i == **p))
        .collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "prfdata's public surface changed: added {added:?}, removed {removed:?}. If on purpose, \
         run `PRFDATA_BLESS=1 cargo test -p prfdata --test it public_api` and commit \
         tests/it/public_api.txt"
    );
}

#[test]
fn items_are_read_from_an_all_items_page() {
    let page = r#"<ul><li><a href="struct.PrfData.html">PrfData</a></li><li><a href="reader/enum.ReadError.html">reader::ReadError</a></li><li><a href="macro.prfdata_map.html">prfdata_map</a></li></ul>"#;
    assert_eq!(
        items(page),
        [
            "enum reader::ReadError",
            "macro prfdata_map",
            "struct PrfData"
        ]
    );
}

//! Every crate of the workspace has its layer order drawn in ARCHITECTURE.md (a fenced
//! `layers <crate folder>` block) and its sources follow it: no upward import, no import cycle,
//! no file outside the table.

use std::path::Path;

/// The folders of the workspace that hold a crate's `src/`.
fn crate_folders(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root)
        .expect("the workspace folder")
        .flatten()
        .filter(|e| e.path().join("src").is_dir() && e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn every_crate_follows_its_layer_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let folders = crate_folders(&root);
    assert!(folders.len() >= 10, "crates found: {folders:?}");
    let mut problems = Vec::new();
    for folder in &folders {
        let Some(table) = prfdata_testkit::layers::table(&doc, folder) else {
            problems.push(format!("ARCHITECTURE.md has no `layers {folder}` block"));
            continue;
        };
        let found = prfdata_testkit::layers::check(&root.join(folder).join("src"), &table);
        problems.extend(found.into_iter().map(|p| format!("{folder}: {p}")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

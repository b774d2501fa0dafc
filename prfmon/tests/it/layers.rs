//! prfmon's modules (the library's and the binary's) import only from their own layer or the
//! layers below, without cycles: the order ARCHITECTURE.md draws (its fenced `layers prfmon`
//! block), checked on the sources.

use std::path::Path;

#[test]
fn imports_follow_the_layer_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let table = prfdata_testkit::layers::table(&doc, "prfmon")
        .expect("ARCHITECTURE.md has a `layers prfmon` block");
    let problems = prfdata_testkit::layers::check(&root.join("src"), &table);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

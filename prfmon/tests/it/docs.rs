//! The documentation's links: every relative link of README.md, docs/*.md, ARCHITECTURE.md,
//! SECURITY.md and BENCHMARKS.md names a file of the repository and, with `#anchor`, one of that
//! file's headings, by the anchor rule GitHub renders them with.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The repository's root folder (prfmon's parent).
fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .expect("prfmon lies in the repository's root")
        .to_path_buf()
}

/// The documents whose links are checked.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "SECURITY.md",
        "BENCHMARKS.md",
    ]
    .iter()
    .map(|name| root.join(name))
    .collect();
    let mut folder: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    folder.sort();
    docs.extend(folder);
    docs
}

/// GitHub's anchor for a heading's text: lower case; letters, digits, `-` and `_` kept, a space
/// becomes `-`, everything else is dropped.
fn slug(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a document's headings; a repeated one also as `-1`, `-2`, ... as GitHub
/// numbers them.
fn anchors(markdown: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(text) | Event::Code(text) => {
                if let Some(heading) = heading.as_mut() {
                    heading.push_str(&text);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let mut anchor = base.clone();
                let mut n = 0;
                while !found.insert(anchor.clone()) {
                    n += 1;
                    anchor = format!("{base}-{n}");
                }
            }
            _ => {}
        }
    }
    found
}

/// The destinations of a document's links and images.
fn links(markdown: &str) -> Vec<String> {
    Parser::new(markdown)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

/// Each relative link of `doc` that names no file, or no heading of the file it names.
fn broken_links(doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).expect("the document is readable");
    let folder = doc.parent().expect("a document lies in a folder");
    let mut broken = Vec::new();
    for link in links(&text) {
        if link.contains("://") || link.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
        let target = if file.is_empty() {
            doc.to_path_buf()
        } else {
            folder.join(file)
        };
        if !target.exists() {
            broken.push(format!(
                "{}: {link}: no file {}",
                doc.display(),
                target.display()
            ));
            continue;
        }
        if anchor.is_empty() || target.extension().is_none_or(|ext| ext != "md") {
            continue;
        }
        let headings = anchors(&std::fs::read_to_string(&target).expect("the target is readable"));
        if !headings.contains(anchor) {
            broken.push(format!(
                "{}: {link}: no heading #{anchor} in {}",
                doc.display(),
                target.display()
            ));
        }
    }
    broken
}

#[test]
fn every_link_in_the_docs_resolves() {
    let broken: Vec<String> = documents(&repo_root())
        .iter()
        .flat_map(|doc| broken_links(doc))
        .collect();
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_link_to_a_missing_file_or_heading_is_reported() {
    let folder = tempfile::tempdir().expect("a temp folder");
    let doc = folder.path().join("a.md");
    let text = "# Title: `code` and more\n\n## Title: code and more\n\n\
        [ok](#title-code-and-more) [ok too](#title-code-and-more-1) [self](a.md#title-code-and-more)\n\
        [gone](b.md) [no heading](a.md#elsewhere) [web](https://example.invalid/x#y)\n";
    std::fs::write(&doc, text).expect("the document is written");
    let broken = broken_links(&doc);
    assert_eq!(broken.len(), 2, "{broken:#?}");
    assert!(broken[0].contains("b.md: no file"), "{broken:#?}");
    assert!(broken[1].contains("no heading #elsewhere"), "{broken:#?}");
}

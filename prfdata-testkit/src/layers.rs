//! The layer order of a crate, checked against its source: every `crate::` and `super::` path
//! outside comments and `#[cfg(test)]` items may only point to its own layer or a lower one,
//! and the table's entries import each other without a cycle.
//!
//! The table is a fenced block of ARCHITECTURE.md whose info string is `layers NAME`, one
//! layer a line, lowest first: a name, then the entries of the layer, comma-separated, each a
//! path under `src/`: a file (`clock.rs`), a directory (`sys/`: every file under it), or a
//! module (`block/create`: `block/create.rs` and every file under `block/create/`, one unit).
//! A file matches its longest entry; a file that matches none is reported too.
//!
//! # Examples
//!
//! ```
//! use prfdata_testkit::layers;
//!
//! let doc = "```layers demo\nbase   a.rs\ntop    b.rs, c/\n```\n";
//! let table = layers::table(doc, "demo").unwrap();
//! assert_eq!(table[2], (1, "c/".to_string()));
//! ```

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The entries of the fenced `layers NAME` block of `markdown`, with their layer (0 lowest).
pub fn table(markdown: &str, name: &str) -> Option<Vec<(usize, String)>> {
    let fence = format!("```layers {name}");
    let start = markdown.lines().position(|l| l.trim() == fence)?;
    let mut out = Vec::new();
    let body = markdown
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.starts_with("```"));
    for (layer, line) in body.filter(|l| !l.trim().is_empty()).enumerate() {
        let entries = line.trim().split_once(char::is_whitespace)?.1;
        out.extend(entries.split(',').map(|e| (layer, e.trim().to_string())));
    }
    Some(out)
}

/// Every upward import, cycle between entries and file outside the table in the crate whose
/// sources are in `src`, one line each; empty if the layering holds.
pub fn check(src: &Path, table: &[(usize, String)]) -> Vec<String> {
    let mut files = Vec::new();
    collect(src, &mut files);
    let sources: BTreeMap<String, String> = files
        .iter()
        .filter_map(|f| Some((rel(src, f), fs::read_to_string(f).ok()?)))
        .collect();
    let test_only: Vec<String> = sources
        .iter()
        .flat_map(|(file, text)| test_modules(file, &clean(text)))
        .collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (file, text) in sources.iter().filter(|(f, _)| !test_only.contains(f)) {
        let Some(from) = entry_of(table, file) else {
            problems.push(format!("{file} is in no layer"));
            continue;
        };
        for path in paths(&clean(text), &module_of(file)) {
            let Some(target) = resolve(&sources, &path) else {
                continue;
            };
            let Some(to) = entry_of(table, &target) else {
                continue;
            };
            if table[to].0 > table[from].0 {
                let path = path.join("::");
                problems.push(format!(
                    "{file} imports {path} ({target}) from a layer above"
                ));
            }
            if to != from {
                edges.entry(from).or_default().push(to);
            }
        }
    }
    problems.extend(cycles(&edges).iter().map(|c| {
        let names: Vec<&str> = c.iter().map(|&e| table[e].1.as_str()).collect();
        format!("import cycle: {}", names.join(" -> "))
    }));
    problems
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn rel(src: &Path, file: &Path) -> String {
    let r = file.strip_prefix(src).unwrap_or(file);
    r.to_string_lossy().replace('\\', "/")
}

/// The table entry `file` belongs to: the longest that matches it.
fn entry_of(table: &[(usize, String)], file: &str) -> Option<usize> {
    let matches = |e: &str| {
        if e.ends_with(".rs") {
            file == e
        } else if e.ends_with('/') {
            file.starts_with(e)
        } else {
            file == format!("{e}.rs") || file.starts_with(&format!("{e}/"))
        }
    };
    (0..table.len())
        .filter(|&i| matches(&table[i].1))
        .max_by_key(|&i| table[i].1.len())
}

/// The module path of a file: `block/create.rs` and `block/create/mod.rs` are `block::create`.
fn module_of(file: &str) -> Vec<String> {
    let stem = file.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(String::from).collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The file a `crate::` path reaches: its longest prefix that is a module file. An item the
/// crate root re-exports (`crate::Error`) reaches the file of the path `lib.rs` uses for it;
/// anything else (an exported macro) is `None`, not checked.
fn resolve(sources: &BTreeMap<String, String>, path: &[String]) -> Option<String> {
    for n in (1..=path.len()).rev() {
        let base = path[..n].join("/");
        for candidate in [format!("{base}.rs"), format!("{base}/mod.rs")] {
            if sources.contains_key(&candidate) {
                return Some(candidate);
            }
        }
    }
    let lib = sources.get("lib.rs").map(|t| clean(t)).unwrap_or_default();
    let reexport = root_uses(&lib)
        .into_iter()
        .find(|p| p.len() > 1 && p.last() == path.first())?;
    resolve(sources, &reexport[..reexport.len() - 1])
}

/// The paths of the crate root's `use` items, which name modules without `crate::`.
fn root_uses(lib: &str) -> Vec<Vec<String>> {
    let tokens = tokenize(lib);
    let mut out = paths(lib, &[]);
    for i in 0..tokens.len().saturating_sub(2) {
        let first = tokens[i + 1].as_str();
        let relative = !matches!(first, "crate" | "super" | "self" | "std" | "core" | "alloc");
        if tokens[i] == "use" && relative && tokens[i + 2] == "::" {
            tree(&tokens, i + 2, vec![first.to_string()], &mut out);
        }
    }
    out
}

/// `text` without comments and string or character literals (each replaced by a space).
fn clean(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if rest.starts_with("'\\") || rest.get(2..3) == Some("'") && b[i] == b'\'' {
            i += rest[1..].find('\'').map_or(rest.len(), |e| e + 2);
            out.push(' ');
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    skip_test_items(&out)
}

/// `text` without the items marked `#[cfg(test)]` (a block item to its closing brace, any
/// other to its `;`), except that `mod x;` stays so [`test_modules`] can find the file.
fn skip_test_items(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        rest = &rest[at + "#[cfg(test)]".len()..];
        let end = match (rest.find('{'), rest.find(';')) {
            (Some(open), semi) if semi.is_none_or(|s| open < s) => block_end(rest, open),
            (_, Some(semi)) => {
                out.push_str(" #[cfg(test)]");
                out.push_str(&rest[..=semi]);
                semi + 1
            }
            _ => rest.len(),
        };
        rest = &rest[end.min(rest.len())..];
    }
    out.push_str(rest);
    out
}

/// The index after the brace closing the one at `open`.
fn block_end(text: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// The files of the modules `file` declares `#[cfg(test)] mod x;`.
fn test_modules(file: &str, cleaned: &str) -> Vec<String> {
    let dir = match file.rsplit_once('/') {
        _ if file == "lib.rs" || file == "main.rs" || file.ends_with("/mod.rs") => file
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| format!("{d}/")),
        Some(_) | None => format!("{}/", file.trim_end_matches(".rs")),
    };
    let mut out = Vec::new();
    for part in cleaned.split("#[cfg(test)]").skip(1) {
        let words: Vec<&str> = part.split_whitespace().take(3).collect();
        if let ["mod", name, ..] | ["pub(crate)", "mod", name] = words.as_slice() {
            let name = name.trim_end_matches(';');
            out.push(format!("{dir}{name}.rs"));
            out.push(format!("{dir}{name}/mod.rs"));
        }
    }
    out
}

/// Every `crate::` and `super::` path of `text` (a file of module `module`), as crate-rooted
/// segments; `use` trees (`crate::a::{b, c::d}`) give one path per leaf.
fn paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let tokens = tokenize(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let root = match tokens[i].as_str() {
            "crate" => Some(Vec::new()),
            "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
            _ => None,
        };
        // `pub(crate)` and `pub(super)` are not paths, nor is `a::crate`.
        let path_like = tokens.get(i + 1).map(String::as_str) == Some("::")
            && (i == 0 || tokens[i - 1] != "::");
        if let (Some(mut root), true) = (root, path_like) {
            i += 1;
            while tokens.get(i).map(String::as_str) == Some("::")
                && tokens.get(i + 1).map(String::as_str) == Some("super")
            {
                root.pop();
                i += 2;
            }
            i = tree(&tokens, i, root, &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads a path tree at `tokens[i]` (after its root), adding its leaves to `out`.
fn tree(
    tokens: &[String],
    mut i: usize,
    mut path: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    while tokens.get(i).map(String::as_str) == Some("::") {
        match tokens.get(i + 1).map(String::as_str) {
            Some("{") => {
                i += 2;
                while i < tokens.len() && tokens[i] != "}" {
                    if tokens[i] == "," {
                        i += 1;
                        continue;
                    }
                    let (mut first, next) = (path.clone(), i + 1);
                    if tokens[i] != "self" {
                        first.push(tokens[i].clone());
                    }
                    i = tree(tokens, next, first, out);
                    while i < tokens.len() && tokens[i] != "," && tokens[i] != "}" {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(seg) if seg.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                path.push(seg.to_string());
                i += 2;
            }
            _ => break,
        }
    }
    out.push(path);
    i
}

/// Identifiers, `::` and single punctuation characters.
fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            out.push(text[i..end].to_string());
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            out.push("::".to_string());
        } else if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    out
}

/// The cycles of a directed graph, each once, as the entries along it.
fn cycles(edges: &BTreeMap<usize, Vec<usize>>) -> Vec<Vec<usize>> {
    let mut found: Vec<Vec<usize>> = Vec::new();
    for &start in edges.keys() {
        // Paths from `start` back to it through entries greater than `start`: each cycle is
        // found once, from its smallest entry.
        let mut stack = vec![(start, vec![start])];
        let mut seen = vec![start];
        while let Some((at, path)) = stack.pop() {
            for &next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    found.push(path.clone());
                } else if next > start && !seen.contains(&next) {
                    seen.push(next);
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push((next, longer));
                }
            }
        }
    }
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_trees_give_one_path_per_leaf_and_super_is_resolved() {
        let text = clean(
            "use crate::a::{b, c::{d, self}};\n// crate::commented\nuse super::e::f;\n\
             fn g() { crate::h::i(); \"crate::quoted\"; }\n#[cfg(test)]\nmod tests { use crate::t; }",
        );
        let got: Vec<String> = paths(&text, &["x".into(), "y".into()])
            .iter()
            .map(|p| p.join("::"))
            .collect();
        assert_eq!(got, ["a::b", "a::c::d", "a::c", "x::e::f", "h::i"]);
    }

    #[test]
    fn a_cycle_is_found_once() {
        let edges = BTreeMap::from([(0, vec![1]), (1, vec![2, 0]), (2, vec![])]);
        assert_eq!(cycles(&edges), [vec![0, 1]]);
    }
}

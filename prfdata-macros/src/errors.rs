//! Compile errors gathered while reading a map, reported together.

use proc_macro2::{Span, TokenStream};

/// Every mistake found in a map: each becomes one `compile_error!` at the span of the token it
/// is about, so the user sees all of them in one build.
#[derive(Default)]
pub(crate) struct Errors {
    list: Vec<syn::Error>,
}

impl Errors {
    /// Records a mistake at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.list.push(syn::Error::new(span, message));
    }

    /// Records a parse error (already located).
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.list.push(error);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The `compile_error!` invocations, in the order the mistakes were found.
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.list.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// `": did you mean `x`? (rest)"` when some of `candidates` are close to `word`, else
/// `" (rest)"`: the end of a message about an unknown name.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    rest: &str,
) -> String {
    let near = nearest(word, candidates, 3);
    if near.is_empty() {
        format!(" ({rest})")
    } else {
        format!(": did you mean {}? ({rest})", one_of(&near))
    }
}

/// Up to `max` of `candidates` nearest to `word`, nearest first: those whose Jaro-Winkler
/// similarity (case-insensitive) reaches 0.8, the threshold rustc and cargo use for "did you
/// mean" (cargo's `closest_msg` uses edit distance; Jaro-Winkler ranks prefixes, which suits
/// names like `Timer100Ns` / `Timer100NsInv`).
pub(crate) fn nearest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    let lower = word.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(max).map(|(_, c)| c).collect()
}

/// `a`, `a or b`, `a, b or c`, each in backquotes.
pub(crate) fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

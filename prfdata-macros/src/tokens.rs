//! Token helpers of the expansion: texts as a `Text` slice, and spans moved to a token of the
//! map so that errors found in the generated code point there.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::quote;

use crate::model::Text;

/// The `&[Text]` of `texts`.
pub(crate) fn texts(krate: &TokenStream, texts: &[Text]) -> TokenStream {
    let texts = texts.iter().map(|Text { lang, name, help }| {
        quote!(#krate::map::Text { lang: #lang, name: #name, help: #help })
    });
    quote!(&[#(#texts),*])
}

/// `tokens` with every span moved to `at`'s location, each keeping its own name resolution.
pub(crate) fn located_at(tokens: TokenStream, at: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut group = Group::new(g.delimiter(), located_at(g.stream(), at));
                group.set_span(g.span().located_at(at));
                return TokenTree::Group(group);
            }
            tt.set_span(tt.span().located_at(at));
            tt
        })
        .collect()
}

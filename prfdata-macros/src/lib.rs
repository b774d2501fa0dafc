//! The procedural macro behind [`prfdata::prfdata_map!`]: use it through prfdata, which passes it
//! its own path (`$crate`), so the generated code names prfdata's items wherever prfdata is,
//! under any name.
//!
//! What is where:
//! - `ast`: the input parsed with syn, every token kept with its span;
//! - `model`: the checks (each error at the token it is about), the defaults and the computed
//!   symbolic offsets;
//! - `expand`: the generated module.
//!
//! The limits, the counter types and the app-name rule are prfdata's own, from `prfdata-rules`.
//!
//! [`prfdata::prfdata_map!`]: https://docs.rs/prfdata/latest/prfdata/macro.prfdata_map.html

use proc_macro::TokenStream;
use syn::parse::{ParseStream, Parser};

mod ast;
mod errors;
mod expand;
mod expand_histogram;
mod histogram;
mod histogram_syntax;
mod model;
mod tokens;

use errors::Errors;

/// Expands `$crate; <map>` (what `prfdata::prfdata_map!` passes on): see that macro's docs.
#[proc_macro]
pub fn prfdata_map(input: TokenStream) -> TokenStream {
    map(input.into()).into()
}

fn map(input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let mut errors = Errors::default();
    let parsed = (|input: ParseStream| ast::parse_map(input, &mut errors)).parse2(input);
    let model = match parsed {
        Ok(ast) => model::check(ast, &mut errors),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    match model {
        Some(model) => expand::expand(&model),
        None => errors.into_compile_errors(),
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expand(map: proc_macro2::TokenStream) -> String {
        super::map(quote!(krate; #map)).to_string()
    }

    #[test]
    fn a_short_map_expands_with_computed_offsets_and_defaults() {
        let out = expand(quote! {
            pub mod m {
                app: "Short",
                object O { name: "O", help: name, counters {
                    A: AverageTimer { name: "A", help: "a" },
                    A_BASE: AverageBase,
                    B: RawCount { name: "B", help: name, scale: -2 },
                } }
            }
        });
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains(r#"symbol : "O" , offset : 0"#), "{out}");
        assert!(out.contains(r#"symbol : "A" , offset : :: core :: option :: Option :: Some (2)"#));
        assert!(out.contains(r#"symbol : "A_BASE" , offset : :: core :: option :: Option :: None"#));
        assert!(out.contains(r#"symbol : "B" , offset : :: core :: option :: Option :: Some (4)"#));
        assert!(out.contains(r#"name : "B" , help : "B""#), "help: name");
        assert!(out.contains("default_scale : - 2"), "{out}");
    }

    #[test]
    fn every_mistake_of_a_map_is_reported_at_once() {
        let out = expand(quote! {
            pub mod m {
                app: "Bad",
                object O = 1 { name: "O", help: "o", detial: Novice, counters {
                    A: RawCont { name: "A", help: "a" },
                    A: RawBase,
                } }
            }
        });
        let errors = out.matches("compile_error").count();
        // Odd offset, unknown field, unknown type, duplicate symbol, orphan base.
        assert_eq!(errors, 5, "{out}");
        assert!(!out.contains("pub const MAP"), "no code for a bad map");
    }

    #[test]
    fn near_names_rank_by_similarity_and_far_ones_are_not_offered() {
        use crate::errors::nearest;
        let types = prfdata_rules::counter_types::ALL.iter().map(|t| t.name);
        assert_eq!(nearest("rawcount", types.clone(), 1), ["RawCount"]);
        assert!(nearest("Zebra", types, 3).is_empty());
    }
}

//! The procedural macro behind [`prfdata::prfdata_map!`]: use it through prfdata, which passes it
//! its own path (`$crate`), so the generated code names prfdata's items wherever prfdata is,
//! under any name.
//!
//! What is where:
//! - `ast`: the input parsed with syn, every token kept with its span;
//! - `model`: the checks (each error at the token it is about), the defaults and the computed
//!   symbolic offsets;
//! - `expand`: the generated module;
//! - `counter_types`, `limits`: what the checks need to know of prfdata.
//!
//! [`prfdata::prfdata_map!`]: https://docs.rs/prfdata/latest/prfdata/macro.prfdata_map.html

use proc_macro::TokenStream;
use syn::parse::{ParseStream, Parser};

mod ast;
mod counter_types;
mod errors;
mod expand;
mod limits;
mod model;

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

/// The counter types the macro knows, as `(name, kind, base type)`: `kind` is `"plain"`,
/// `"needs"` (followed by a base of `base type`) or `"base"`. For prfdata's test that this table
/// matches `prfdata::counter_type`.
#[doc(hidden)]
#[proc_macro]
pub fn __counter_type_table(_: TokenStream) -> TokenStream {
    use counter_types::Kind;
    let rows = counter_types::ALL.iter().map(|t| {
        let name = t.name;
        let (kind, base) = match t.kind {
            Kind::Plain => ("plain", ""),
            Kind::NeedsBase { base_type, .. } => ("needs", base_type),
            Kind::Base { base_type } => ("base", base_type),
        };
        quote::quote!((#name, #kind, #base))
    });
    quote::quote!(&[#(#rows),*]).into()
}

/// The limits the macro checks, as `(max app name, max instances, max instance name)`. For
/// prfdata's test that they match its own.
#[doc(hidden)]
#[proc_macro]
pub fn __limits(_: TokenStream) -> TokenStream {
    let (a, b, c) = (
        limits::MAX_APP_NAME,
        limits::MAX_INSTANCES,
        limits::MAX_INSTANCE_NAME,
    );
    quote::quote!((#a, #b, #c)).into()
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
        let types = crate::counter_types::ALL.iter().map(|t| t.name);
        assert_eq!(nearest("rawcount", types.clone(), 1), ["RawCount"]);
        assert!(nearest("Zebra", types, 3).is_empty());
    }
}

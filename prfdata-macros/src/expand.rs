//! The code a checked map expands to: the module with `MAP`, `Map`, `PrfData`, one unit struct
//! per object and one `CtrId` constant per counter (see prfdata's `map` module docs).
//!
//! Every `unsafe` token is made here with the call-site span of the macro, never with a span
//! of the user's input, so that the `unsafe_code` lint (which skips code from external macros)
//! leaves a crate that forbids unsafe code free to declare a map.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

use crate::expand_histogram as histogram;
use crate::model::{Ctr, Model, Obj, Text};
use crate::tokens::{located_at, texts};

pub(crate) fn expand(m: &Model) -> TokenStream {
    let Model {
        krate,
        attrs,
        vis,
        module,
        app,
        objects,
    } = m;
    let object_defs = objects.iter().map(|o| object_def(krate, o));
    let object_items = objects
        .iter()
        .enumerate()
        .map(|(i, o)| object_items(krate, i, o));
    // Located at the app name: what only the `const` validation finds (a block too large, too
    // many counters) is reported there rather than at the whole map.
    let sum_checks = sum_width_checks(krate, objects);
    let assert_valid = located_at(
        quote!(const _: () = #krate::map::MapError::assert_valid(&MAP);),
        app.span(),
    );
    quote! {
        #(#attrs)*
        #[allow(dead_code)]
        #vis mod #module {
            #[allow(unused_imports)]
            use super::*;

            /// The map's definitions.
            pub const MAP: #krate::map::MapDef = #krate::map::MapDef {
                app: #app,
                objects: &[#(#object_defs),*],
            };

            // The map's `const` validation: the rules the macro checked, again, and the sizes
            // of the block laid out from it.
            #assert_valid
            #sum_checks

            /// The marker type of this map.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            pub struct Map;

            // SAFETY: `MAP` is this map's definitions, validated at compile time just above.
            unsafe impl #krate::map::PerfDataMap for Map {
                const DEF: &'static #krate::map::MapDef = &MAP;
            }

            /// An activated block of this map.
            pub type PrfData = #krate::PrfData<Map>;

            #(#object_items)*
        }
    }
}

fn object_def(krate: &TokenStream, o: &Obj) -> TokenStream {
    let symbol = o.symbol.to_string();
    let offset = Literal::u32_unsuffixed(o.offset);
    let texts = texts(krate, &o.texts);
    let detail = format_ident!("{}", o.detail.name());
    let default = match o.default {
        Some(i) => {
            // A histogram's name is its sum's, two before its buckets.
            let sum = if o.counters[i].histogram.is_some() {
                2
            } else {
                0
            };
            let i = Literal::usize_unsuffixed(histogram::def_indexes(o)[i] - sum);
            quote!(::core::option::Option::Some(#i))
        }
        None => quote!(::core::option::Option::None),
    };
    let instances = match &o.instances {
        Some((max, name_len)) => quote! {
            #krate::map::Instances::Max { max: #max, max_name_len: #name_len }
        },
        None => quote!(#krate::map::Instances::None),
    };
    let costly = o.costly;
    let total = o.total;
    let packed = o.packed;
    let osym = &o.symbol;
    quote! {
        #krate::map::ObjectDef {
            symbol: #symbol,
            offset: #offset,
            texts: #texts,
            detail: #krate::map::DetailLevel::#detail,
            default_counter: #default,
            instances: #instances,
            costly: #costly,
            total: #total,
            packed: #packed,
            counters: #osym::COUNTERS,
        }
    }
}

/// The `CounterDef` of counter `c` (not a histogram); `indexes` are its object's
/// [`histogram::def_indexes`].
fn counter_def(krate: &TokenStream, c: &Ctr, indexes: &[usize]) -> TokenStream {
    let symbol = c.symbol.to_string();
    let offset = match c.offset {
        Some(n) => {
            let n = Literal::u32_unsuffixed(n);
            quote!(::core::option::Option::Some(#n))
        }
        None => quote!(::core::option::Option::None),
    };
    let texts = texts(krate, &c.texts);
    let detail = format_ident!("{}", c.detail.name());
    let scale = Literal::i32_unsuffixed(c.scale);
    let ty = marker(krate, &c.ty);
    let factor = match c.factor {
        Some((true, n)) => {
            let n = Literal::u32_unsuffixed(n);
            quote!(::core::option::Option::Some(#krate::map::Factor::Multiply(#n)))
        }
        Some((false, n)) => {
            let n = Literal::u32_unsuffixed(n);
            quote!(::core::option::Option::Some(#krate::map::Factor::Divide(#n)))
        }
        None => quote!(::core::option::Option::None),
    };
    let unit = match c.unit {
        Some(u) => quote!(::core::option::Option::Some(#u)),
        None => quote!(::core::option::Option::None),
    };
    let source = match &c.sum {
        Some(parts) => {
            let parts = parts
                .iter()
                .map(|(i, _)| Literal::usize_unsuffixed(indexes[*i]));
            quote!(#krate::map::Source::SumOf(&[#(#parts),*]))
        }
        None if c.sharded => quote!(#krate::map::Source::Sharded),
        None if c.on_demand => quote!(#krate::map::Source::OnDemand),
        None => quote!(#krate::map::Source::Stored),
    };
    let aggregate = match &c.aggregate {
        Some(v) => quote!(::core::option::Option::Some(#krate::map::Aggregate::#v)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        #krate::map::CounterDef {
            symbol: #symbol,
            offset: #offset,
            texts: #texts,
            detail: #krate::map::DetailLevel::#detail,
            default_scale: #scale,
            counter_type:
                <#ty as #krate::counter_type::CounterType>::TYPE,
            text_len:
                <#ty as #krate::counter_type::CounterType>::TEXT_LEN,
            factor: #factor,
            unit: #unit,
            source: #source,
            aggregate: #aggregate,
        }
    }
}

/// For each part of a sum, a compile-time check located at the part's token that it has the
/// sum's width (the macro does not know the types' widths; prfdata's `CounterType` does).
fn sum_width_checks(krate: &TokenStream, objects: &[Obj]) -> TokenStream {
    let mut checks = TokenStream::new();
    for o in objects {
        for c in &o.counters {
            let Some(parts) = &c.sum else { continue };
            let sum_ty = marker(krate, &c.ty);
            for (i, token) in parts {
                let part_ty = marker(krate, &o.counters[*i].ty);
                let msg = format!(
                    "counter {} sums {token}, a counter of another width: {}",
                    c.symbol,
                    prfdata_rules::map::Violation::SumWidth.message()
                );
                let check = quote! {
                    const _: () = ::core::assert!(
                        <<#sum_ty as #krate::counter_type::CounterType>::Width
                            as #krate::counter_type::Width>::SIZE
                            == <<#part_ty as #krate::counter_type::CounterType>::Width
                            as #krate::counter_type::Width>::SIZE,
                        #msg
                    );
                };
                checks.extend(located_at(check, token.span()));
            }
        }
    }
    checks
}

/// The English name, for generated docs.
fn english(texts: &[Text]) -> &str {
    texts.first().map_or("", |t| t.name.as_str())
}

fn object_items(krate: &TokenStream, index: usize, o: &Obj) -> TokenStream {
    let osym = &o.symbol;
    let docs = if o.docs.is_empty() {
        let doc = format!("The object `{osym}`: {}.", english(&o.texts));
        quote!(#[doc = #doc])
    } else {
        let docs = &o.docs;
        quote!(#(#docs)*)
    };
    let indexes = histogram::def_indexes(o);
    let counter_defs = o.counters.iter().flat_map(|c| match &c.histogram {
        Some(g) => histogram::defs(krate, osym, c, g).to_vec(),
        None => vec![counter_def(krate, c, &indexes)],
    });
    let geometries = o.counters.iter().filter_map(|c| {
        c.histogram
            .as_ref()
            .map(|g| histogram::geometry_const(krate, c, g))
    });
    // The scope's path is located at the object's `instances` field (its symbol when the field
    // is left out), keeping the resolution of `$crate`, so that a counter used in the wrong
    // scope gets "expected this to be `Global`" pointing there rather than at the whole map.
    let scope_name = if o.instances.is_some() {
        "Instanced"
    } else {
        "Global"
    };
    let scope_ident = Ident::new(scope_name, Span::call_site());
    let scope = located_at(quote!(#krate::map::#scope_ident), o.scope_span);
    let index = Literal::usize_unsuffixed(index);
    let counters = o.counters.iter().enumerate().map(|(j, c)| {
        let csym = &c.symbol;
        let ty = match &c.histogram {
            Some(g) => histogram::marker(krate, c, g),
            None => marker(krate, &c.ty),
        };
        let docs = if !c.docs.is_empty() {
            let docs = &c.docs;
            quote!(#(#docs)*)
        } else if let Some(served) = &c.serves {
            let doc = format!("The base counter `{csym}` of `{osym}`: the base of `{served}`.");
            quote!(#[doc = #doc])
        } else {
            let doc = format!("The counter `{csym}` of `{osym}`: {}.", english(&c.texts));
            quote!(#[doc = #doc])
        };
        let j = Literal::usize_unsuffixed(indexes[j]);
        quote! {
            #docs
            // SAFETY: `#osym` and `Map` implement `Object` and `PerfDataMap` here, from `MAP`.
            pub const #csym: #krate::map::CtrId<#ty, #osym> =
                unsafe { #krate::map::CtrId::__from_macro(#j) };
        }
    });
    quote! {
        #docs
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct #osym;

        impl #osym {
            #[doc(hidden)]
            pub const COUNTERS: &'static [#krate::map::CounterDef] = &[#(#counter_defs),*];
            #(#geometries)*
        }

        // SAFETY: `INDEX` is this object's position in `MAP`, and `Scope` comes from the same
        // `instances:` the object's definition in `MAP` was made from.
        unsafe impl #krate::map::Object for #osym {
            type Map = Map;
            type Scope = #scope;
            const INDEX: usize = #index;
        }

        #(#counters)*
    }
}

/// The marker type a map's counter type names: `Text16` to `Text128` are `Text<16>` to
/// `Text<128>`, every other name is the marker type of that name. The type keeps the span of the
/// name in the map.
fn marker(krate: &TokenStream, ty: &Ident) -> TokenStream {
    let units = ty
        .to_string()
        .strip_prefix("Text")
        .and_then(|n| n.parse::<u32>().ok());
    match units {
        Some(n) => {
            let text = Ident::new("Text", ty.span());
            let mut n = Literal::u32_unsuffixed(n);
            n.set_span(ty.span());
            quote!(#krate::counter_type::#text<#n>)
        }
        None => quote!(#krate::counter_type::#ty),
    }
}

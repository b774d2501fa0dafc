//! A `Histogram` counter's expansion: three `CounterDef`s, as prfdata's block lays a histogram
//! out (its sum, a named `AverageBulk` kept in the threads' shard lines; its count, an
//! `AverageBase` the readers fill; its buckets, of type `PERF_PRFDATA_HISTOGRAM`, with the
//! geometry), and one id, `CtrId<TimeHistogram, _>` or `CtrId<Histogram, _>`, naming the
//! buckets. The geometry is built in a `const` located at the counter's type token, so a
//! geometry the rules refuse fails to compile there.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use crate::histogram::part_symbols;
use crate::model::{Ctr, Obj};
use crate::tokens::{located_at, texts};
use prfdata_rules::histogram::{Geometry, Unit};

/// Each counter's index among its object's `CounterDef`s: a histogram takes three, and its
/// index is its buckets' (the last of the three).
pub(crate) fn def_indexes(o: &Obj) -> Vec<usize> {
    let mut next = 0;
    o.counters
        .iter()
        .map(|c| {
            next += if c.histogram.is_some() { 3 } else { 1 };
            next - 1
        })
        .collect()
}

/// The id's marker type: `TimeHistogram` for a unit of time, else `Histogram`, at the type
/// token.
pub(crate) fn marker(krate: &TokenStream, c: &Ctr, g: &Geometry) -> TokenStream {
    let name = if g.unit().nanos().is_some() {
        "TimeHistogram"
    } else {
        "Histogram"
    };
    let ty = Ident::new(name, c.ty.span());
    quote!(#krate::counter_type::#ty)
}

/// The name of the `const` holding histogram `c`'s geometry, an associated item of its object.
fn geometry_name(c: &Ctr) -> Ident {
    format_ident!("__GEOMETRY_{}", c.symbol)
}

/// The `const` of histogram `c`'s geometry, built again by prfdata-rules' constructors from
/// the checked parts: a violation panics at compile time, at the type token.
pub(crate) fn geometry_const(krate: &TokenStream, c: &Ctr, g: &Geometry) -> TokenStream {
    let h = quote!(#krate::map::__histogram);
    let unit = format_ident!("{}", unit_variant(g.unit()));
    let built = match g {
        Geometry::LogLinear(l) => {
            let (p, s) = (
                Literal::u8_unsuffixed(l.sub_bits()),
                Literal::u8_unsuffixed(l.shift()),
            );
            let base = Literal::u32_unsuffixed(l.base());
            let n = Literal::u32_unsuffixed(l.buckets() as u32);
            quote!(match #h::LogLinear::from_parts(#h::Unit::#unit, #p, #s, #base, #n) {
                ::core::result::Result::Ok(g) => #h::Geometry::LogLinear(g),
                ::core::result::Result::Err(v) => ::core::panic!("{}", v.message()),
            })
        }
        Geometry::Explicit(e) => {
            let bounds = e.bounds().iter().map(|b| Literal::u64_unsuffixed(*b));
            quote!(match #h::Explicit::new(#h::Unit::#unit, &[#(#bounds),*]) {
                ::core::result::Result::Ok(g) => #h::Geometry::Explicit(g),
                ::core::result::Result::Err(v) => ::core::panic!("{}", v.message()),
            })
        }
    };
    let name = geometry_name(c);
    located_at(quote!(const #name: #h::Geometry = #built;), c.ty.span())
}

/// The variant of `Unit` named as prfdata-rules declares it.
fn unit_variant(unit: Unit) -> &'static str {
    match unit {
        Unit::Count => "Count",
        Unit::Nanoseconds => "Nanoseconds",
        Unit::Microseconds => "Microseconds",
        Unit::Milliseconds => "Milliseconds",
        Unit::Seconds => "Seconds",
        Unit::Bytes => "Bytes",
    }
}

/// The three `CounterDef`s of histogram `c` of object `osym`.
pub(crate) fn defs(krate: &TokenStream, osym: &Ident, c: &Ctr, g: &Geometry) -> [TokenStream; 3] {
    let [count, buckets] = part_symbols(&c.symbol);
    let sum = c.symbol.to_string();
    let offset = Literal::u32_unsuffixed(c.offset.unwrap_or(0));
    let texts = texts(krate, &c.texts);
    let detail = format_ident!("{}", c.detail.name());
    let scale = Literal::i32_unsuffixed(c.scale);
    // The sum's raw value is in the histogram's unit: `bytes` and `seconds` are units a count
    // may declare (install records them); the others have no such name.
    let unit = match g.unit() {
        Unit::Bytes => quote!(::core::option::Option::Some("bytes")),
        Unit::Seconds => quote!(::core::option::Option::Some("seconds")),
        _ => quote!(::core::option::Option::None),
    };
    let geometry = geometry_name(c);
    let sharded = c.sharded;
    let ct = quote!(#krate::counter_type);
    let def = |symbol: &str, ty: TokenStream, rest: TokenStream| {
        quote! {
            #krate::map::CounterDef {
                symbol: #symbol,
                counter_type: <#ty as #ct::CounterType>::TYPE,
                text_len: 0,
                factor: ::core::option::Option::None,
                aggregate: ::core::option::Option::None,
                #rest
            }
        }
    };
    let no_name = quote! {
        offset: ::core::option::Option::None,
        texts: &[],
        detail: #krate::map::DetailLevel::Novice,
        default_scale: 0,
        unit: ::core::option::Option::None,
    };
    [
        def(
            &sum,
            quote!(#ct::AverageBulk),
            quote! {
                offset: ::core::option::Option::Some(#offset),
                texts: #texts,
                detail: #krate::map::DetailLevel::#detail,
                default_scale: #scale,
                unit: #unit,
                source: #krate::map::Source::Sharded,
            },
        ),
        def(
            &count,
            quote!(#ct::AverageBase),
            quote!(#no_name source: #krate::map::Source::HistogramCount,),
        ),
        def(
            &buckets,
            marker(krate, c, g),
            quote! {
                #no_name
                source: #krate::map::Source::Histogram {
                    geometry: &#osym::#geometry,
                    sharded: #sharded,
                },
            },
        ),
    ]
}

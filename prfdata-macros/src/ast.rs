//! The map as written: `prfdata_map!`'s input parsed with syn, every token kept with its span.
//!
//! Parsing accepts the fields of an object or counter in any order and records an unknown or
//! repeated field as an error (then goes on), so one build reports every such mistake; what the
//! fields mean is checked afterwards ([`crate::model`]).

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{braced, Attribute, Expr, Ident, LitBool, LitInt, LitStr, Token, Visibility};

use crate::errors::{did_you_mean, one_of, Errors};
use crate::histogram_syntax::{
    parse_buckets, parse_error, parse_range, BucketsAst, ErrorAst, RangeAst,
};

/// `pub mod NAME { app: "...", object ... }`.
pub(crate) struct MapAst {
    /// The path of the prfdata crate (`$crate`, passed by prfdata's `prfdata_map!`).
    pub(crate) krate: TokenStream,
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) module: Ident,
    pub(crate) app: LitStr,
    pub(crate) objects: Vec<ObjectAst>,
}

/// `object SYMBOL (= OFFSET)? { fields }`.
pub(crate) struct ObjectAst {
    pub(crate) docs: Vec<Attribute>,
    pub(crate) symbol: Ident,
    pub(crate) offset: Option<LitInt>,
    pub(crate) texts: TextsAst,
    pub(crate) detail: Option<Ident>,
    pub(crate) default: Option<Ident>,
    /// The `instances` keyword and its value.
    pub(crate) instances: Option<(Ident, InstancesAst)>,
    pub(crate) costly: Option<LitBool>,
    /// `total: true`: readers synthesise a `_Total` instance.
    pub(crate) total: Option<LitBool>,
    /// `packed: true`: instances' counter blocks packed densely, not one per cache line.
    pub(crate) packed: Option<LitBool>,
    /// The `counters` keyword and the counters.
    pub(crate) counters: Option<(Ident, Vec<CounterAst>)>,
}

/// `name`, `help` and `lang` blocks of an object or counter.
#[derive(Default)]
pub(crate) struct TextsAst {
    pub(crate) name: Option<LitStr>,
    pub(crate) help: Option<Help>,
    pub(crate) langs: Vec<LangAst>,
}

/// `help: "..."`, or `help: name` (the name is the help).
pub(crate) enum Help {
    Text(LitStr),
    SameAsName,
}

/// `lang "00C" { name: "...", help: "..." }`.
pub(crate) struct LangAst {
    pub(crate) keyword: Ident,
    pub(crate) id: LitStr,
    pub(crate) texts: TextsAst,
}

/// `instances: none` or `instances: { max: N, name_len: N }`.
pub(crate) enum InstancesAst {
    None,
    Max {
        brace: Span,
        max: Option<Box<Expr>>,
        name_len: Option<Box<Expr>>,
    },
}

/// `SYMBOL (= OFFSET)? : Type ({ fields })?`.
pub(crate) struct CounterAst {
    pub(crate) docs: Vec<Attribute>,
    pub(crate) symbol: Ident,
    pub(crate) offset: Option<LitInt>,
    pub(crate) ty: Ident,
    pub(crate) body: Option<CounterBody>,
}

/// A counter's `{ name: ..., help: ..., detail: ..., scale: ... }`.
pub(crate) struct CounterBody {
    pub(crate) brace: Span,
    pub(crate) texts: TextsAst,
    pub(crate) detail: Option<Ident>,
    pub(crate) scale: Option<Scale>,
    /// `factor: * 4096` or `factor: / 1024`.
    pub(crate) factor: Option<FactorAst>,
    /// `unit: bytes` or `unit: seconds`.
    pub(crate) unit: Option<Ident>,
    /// `on_demand: true`.
    pub(crate) on_demand: Option<LitBool>,
    /// `sum: [A, B, ...]`: the bracket's span and the parts.
    pub(crate) sum: Option<(Span, Vec<Ident>)>,
    /// `aggregate: sum | live | min | max | last`.
    pub(crate) aggregate: Option<Ident>,
    /// `sharded: true`.
    pub(crate) sharded: Option<LitBool>,
    /// A histogram's `range: LO..HI`.
    pub(crate) range: Option<RangeAst>,
    /// A histogram's `error: E%`.
    pub(crate) error: Option<ErrorAst>,
    /// A histogram's `buckets: [B1, .., Bk]`.
    pub(crate) buckets: Option<BucketsAst>,
}

/// `factor: * 4096`: whether it multiplies, and the factor (`None` when it is not a `u32` of at
/// least 1, reported already).
pub(crate) struct FactorAst {
    /// The operator's span.
    pub(crate) at: Span,
    pub(crate) multiply: bool,
    pub(crate) value: Option<u32>,
}

/// `scale: -3`: the value, or `None` when it is not an `i32` (reported already).
pub(crate) struct Scale {
    pub(crate) value: Option<i32>,
}

const OBJECT_FIELDS: &[&str] = &[
    "name",
    "help",
    "lang",
    "detail",
    "default",
    "instances",
    "costly",
    "total",
    "packed",
    "counters",
];
const COUNTER_FIELDS: &[&str] = &[
    "name",
    "help",
    "lang",
    "detail",
    "scale",
    "factor",
    "unit",
    "on_demand",
    "sum",
    "aggregate",
    "sharded",
    "range",
    "error",
    "buckets",
];
const LANG_FIELDS: &[&str] = &["name", "help"];
const INSTANCE_FIELDS: &[&str] = &["max", "name_len"];

/// Parses `$crate; <map>`.
pub(crate) fn parse_map(input: ParseStream, errors: &mut Errors) -> syn::Result<MapAst> {
    let mut krate = TokenStream::new();
    loop {
        if input.is_empty() {
            return Err(input.error("prfdata_map!: use it through `prfdata::prfdata_map!`"));
        }
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            break;
        }
        krate.extend([input.parse::<TokenTree>()?]);
    }
    let attrs = input.call(Attribute::parse_outer)?;
    let vis: Visibility = input.parse()?;
    if !input.peek(Token![mod]) {
        return Err(input.error(
            "a map is declared as a module: `pub mod NAME { app: \"AppName\", object ... }`",
        ));
    }
    input.parse::<Token![mod]>()?;
    let module: Ident = input.parse()?;
    let content;
    let brace = braced!(content in input);
    if content.is_empty() {
        return Err(syn::Error::new(
            brace.span.join(),
            "the map is empty: it begins with `app: \"AppName\"`, then its objects",
        ));
    }
    let key = content.call(Ident::parse_any)?;
    if key != "app" {
        return Err(syn::Error::new(
            key.span(),
            format!(
                "a map begins with `app: \"AppName\"` (the block's name and the driver name \
                 under Services), found `{key}`"
            ),
        ));
    }
    content.parse::<Token![:]>()?;
    let app: LitStr = content.parse()?;
    if content.peek(Token![,]) {
        content.parse::<Token![,]>()?;
    }
    let mut objects = Vec::new();
    while !content.is_empty() {
        objects.push(parse_object(&content, errors)?);
        if content.peek(Token![,]) {
            content.parse::<Token![,]>()?;
        }
    }
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after the map's module"));
    }
    Ok(MapAst {
        krate,
        attrs,
        vis,
        module,
        app,
        objects,
    })
}

/// Doc comments (`///`, `#[doc]`), the only attributes objects and counters take.
fn parse_docs(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<Attribute>> {
    let attrs = input.call(Attribute::parse_outer)?;
    Ok(attrs
        .into_iter()
        .filter(|a| {
            let doc = a.path().is_ident("doc");
            if !doc {
                errors.at(
                    a.pound_token.span,
                    "only doc comments (`///`) may be put on an object or a counter",
                );
            }
            doc
        })
        .collect())
}

fn parse_object(input: ParseStream, errors: &mut Errors) -> syn::Result<ObjectAst> {
    let docs = parse_docs(input, errors)?;
    let keyword = input.call(Ident::parse_any)?;
    if keyword != "object" {
        return Err(syn::Error::new(
            keyword.span(),
            format!("expected `object SYMBOL {{ ... }}`, found `{keyword}`"),
        ));
    }
    let symbol: Ident = input.parse()?;
    let offset = parse_offset(input)?;
    let body;
    braced!(body in input);
    let owner = format!("object {symbol}");
    let mut object = ObjectAst {
        docs,
        symbol,
        offset,
        texts: TextsAst::default(),
        detail: None,
        default: None,
        instances: None,
        costly: None,
        total: None,
        packed: None,
        counters: None,
    };
    parse_fields(
        &body,
        &owner,
        OBJECT_FIELDS,
        errors,
        |key, input, errors| {
            if parse_text_field(key, input, &mut object.texts, &owner, errors)? {
                return Ok(key == "lang");
            }
            match key.to_string().as_str() {
                "detail" => {
                    object.detail = Some(value(input)?);
                    Ok(false)
                }
                "default" => {
                    object.default = Some(value(input)?);
                    Ok(false)
                }
                "costly" => {
                    object.costly = Some(value(input)?);
                    Ok(false)
                }
                "total" => {
                    object.total = Some(value(input)?);
                    Ok(false)
                }
                "packed" => {
                    object.packed = Some(value(input)?);
                    Ok(false)
                }
                "instances" => {
                    input.parse::<Token![:]>()?;
                    let (instances, braced) = parse_instances(input, &owner, errors)?;
                    object.instances = Some((key.clone(), instances));
                    Ok(braced)
                }
                _ => {
                    // "counters", the last one `parse_fields` allows.
                    if input.peek(Token![:]) {
                        input.parse::<Token![:]>()?;
                    }
                    let list;
                    braced!(list in input);
                    object.counters = Some((key.clone(), parse_counters(&list, errors)?));
                    Ok(true)
                }
            }
        },
    )?;
    Ok(object)
}

/// `= 4` after a symbol, if present.
fn parse_offset(input: ParseStream) -> syn::Result<Option<LitInt>> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        let lit: LitInt = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected a symbolic offset (an even integer) after `=`",
            )
        })?;
        return Ok(Some(lit));
    }
    Ok(None)
}

/// `: value` for a field whose value is one token of type `T`.
fn value<T: syn::parse::Parse>(input: ParseStream) -> syn::Result<T> {
    input.parse::<Token![:]>()?;
    input.parse()
}

/// `name`, `help` and `lang` (shared by objects, counters and lang blocks): `Ok(true)` if `key`
/// was one of them.
fn parse_text_field(
    key: &Ident,
    input: ParseStream,
    texts: &mut TextsAst,
    owner: &str,
    errors: &mut Errors,
) -> syn::Result<bool> {
    match key.to_string().as_str() {
        "name" => texts.name = Some(value(input)?),
        "help" => {
            input.parse::<Token![:]>()?;
            texts.help = Some(if input.peek(LitStr) {
                Help::Text(input.parse()?)
            } else if input.peek(Ident) {
                let ident: Ident = input.parse()?;
                if ident != "name" {
                    return Err(syn::Error::new(
                        ident.span(),
                        format!(
                            "expected the help text as a string, or `help: name` to use the \
                             name as the help; found `{ident}`"
                        ),
                    ));
                }
                Help::SameAsName
            } else {
                return Err(input.error(
                    "expected the help text as a string, or `help: name` to use the name as \
                     the help",
                ));
            });
        }
        "lang" => {
            let id: LitStr = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected a language id after `lang`: `lang \"00C\" { name: \"...\", help: \
                     \"...\" }`",
                )
            })?;
            let body;
            braced!(body in input);
            let mut lang = LangAst {
                keyword: key.clone(),
                id,
                texts: TextsAst::default(),
            };
            let lang_owner = format!("{owner}'s lang {}", lang.id.token());
            parse_fields(
                &body,
                &lang_owner,
                LANG_FIELDS,
                errors,
                |key, input, errors| {
                    parse_text_field(key, input, &mut lang.texts, &lang_owner, errors)?;
                    Ok(false)
                },
            )?;
            texts.langs.push(lang);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `none` or `{ max: N, name_len: N }`; the bool says whether it ended with a brace.
fn parse_instances(
    input: ParseStream,
    owner: &str,
    errors: &mut Errors,
) -> syn::Result<(InstancesAst, bool)> {
    if input.peek(syn::token::Brace) {
        let body;
        let brace = braced!(body in input);
        let (mut max, mut name_len) = (None, None);
        let owner = format!("{owner}'s instances");
        parse_fields(&body, &owner, INSTANCE_FIELDS, errors, |key, input, _| {
            input.parse::<Token![:]>()?;
            let expr: Box<Expr> = Box::new(input.parse()?);
            if key == "max" {
                max = Some(expr);
            } else {
                name_len = Some(expr);
            }
            Ok(false)
        })?;
        return Ok((
            InstancesAst::Max {
                brace: brace.span.join(),
                max,
                name_len,
            },
            true,
        ));
    }
    let word = input.call(Ident::parse_any).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected `instances: none` or `instances: { max: N, name_len: N }`",
        )
    })?;
    if word != "none" {
        return Err(syn::Error::new(
            word.span(),
            format!(
                "expected `instances: none` or `instances: {{ max: N, name_len: N }}`, found \
                 `{word}`"
            ),
        ));
    }
    Ok((InstancesAst::None, false))
}

fn parse_counters(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<CounterAst>> {
    let mut counters = Vec::new();
    while !input.is_empty() {
        let counter = parse_counter(input, errors)?;
        let braced = counter.body.is_some();
        counters.push(counter);
        if input.is_empty() {
            break;
        }
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        } else if !braced {
            return Err(input.error("expected `,` between counters"));
        }
    }
    Ok(counters)
}

fn parse_counter(input: ParseStream, errors: &mut Errors) -> syn::Result<CounterAst> {
    let docs = parse_docs(input, errors)?;
    let symbol: Ident = input.parse()?;
    let offset = parse_offset(input)?;
    if !input.peek(Token![:]) {
        return Err(input.error(format!(
            "expected `: CounterType` after counter {symbol} (a type of prfdata::counter_type, \
             such as `RawCount`)"
        )));
    }
    input.parse::<Token![:]>()?;
    let ty: Ident = input.parse()?;
    let body = if input.peek(syn::token::Brace) {
        Some(parse_counter_body(input, &symbol, errors)?)
    } else {
        None
    };
    Ok(CounterAst {
        docs,
        symbol,
        offset,
        ty,
        body,
    })
}

/// A counter's `{ fields }`.
fn parse_counter_body(
    input: ParseStream,
    symbol: &Ident,
    errors: &mut Errors,
) -> syn::Result<CounterBody> {
    let fields;
    let brace = braced!(fields in input);
    let owner = format!("counter {symbol}");
    let mut b = CounterBody {
        brace: brace.span.join(),
        texts: TextsAst::default(),
        detail: None,
        scale: None,
        factor: None,
        unit: None,
        on_demand: None,
        sum: None,
        aggregate: None,
        sharded: None,
        range: None,
        error: None,
        buckets: None,
    };
    parse_fields(
        &fields,
        &owner,
        COUNTER_FIELDS,
        errors,
        |key, input, errors| {
            if parse_text_field(key, input, &mut b.texts, &owner, errors)? {
                return Ok(key == "lang");
            }
            match key.to_string().as_str() {
                "detail" => b.detail = Some(value(input)?),
                "aggregate" => b.aggregate = Some(value(input)?),
                "unit" => b.unit = Some(value(input)?),
                "sharded" => b.sharded = Some(value(input)?),
                "range" => b.range = Some(parse_range(key, input)?),
                "error" => b.error = Some(parse_error(key, input)?),
                "buckets" => b.buckets = Some(parse_buckets(key, input)?),
                "factor" => {
                    input.parse::<Token![:]>()?;
                    b.factor = Some(parse_factor(input, errors)?);
                }
                "on_demand" => {
                    input.parse::<Token![:]>()?;
                    b.on_demand = Some(input.parse().map_err(|e: syn::Error| {
                        syn::Error::new(e.span(), "expected `on_demand: true` or `false`")
                    })?);
                }
                "sum" => {
                    input.parse::<Token![:]>()?;
                    let parts;
                    let bracket = syn::bracketed!(parts in input);
                    let list = Punctuated::<Ident, Token![,]>::parse_terminated(&parts)?;
                    b.sum = Some((bracket.span.join(), list.into_iter().collect()));
                }
                _ => {
                    input.parse::<Token![:]>()?;
                    b.scale = Some(parse_scale(input, errors)?);
                }
            }
            Ok(false)
        },
    )?;
    Ok(b)
}

/// `* 4096` or `/ 1024`: the integer displayed values are multiplied or divided by.
fn parse_factor(input: ParseStream, errors: &mut Errors) -> syn::Result<FactorAst> {
    let at = input.span();
    let multiply = if input.peek(Token![*]) {
        input.parse::<Token![*]>()?;
        true
    } else if input.peek(Token![/]) {
        input.parse::<Token![/]>()?;
        false
    } else {
        return Err(input.error("expected `* N` or `/ N`, such as `factor: / 1024`"));
    };
    let lit: LitInt = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected the factor as an integer, such as `/ 1024`",
        )
    })?;
    let value = lit.base10_parse::<u32>().ok().filter(|&v| v >= 1);
    if value.is_none() {
        errors.at(
            lit.span(),
            "a scale factor is an integer from 1 to 4294967295",
        );
    }
    Ok(FactorAst {
        at,
        multiply,
        value,
    })
}

/// `-3`, `0`, `2`: the power of ten monitors scale the counter by.
fn parse_scale(input: ParseStream, errors: &mut Errors) -> syn::Result<Scale> {
    let negative = input.peek(Token![-]);
    if negative {
        input.parse::<Token![-]>()?;
    }
    let lit: LitInt = input
        .parse()
        .map_err(|e| syn::Error::new(e.span(), "expected the scale as an integer, such as `-3`"))?;
    let value = lit
        .base10_parse::<i64>()
        .ok()
        .map(|v| if negative { -v } else { v })
        .and_then(|v| i32::try_from(v).ok());
    if value.is_none() {
        errors.at(
            lit.span(),
            "the scale is a power of ten: an i32 such as -3 or 2",
        );
    }
    Ok(Scale { value })
}

/// The `key: value, ...` list inside an object's, counter's, lang block's or instances' braces.
///
/// `field` parses the value of an allowed key and says whether it ended with a brace group
/// (after which the comma is optional). An unknown key is reported with its nearest allowed
/// ones and skipped; a repeated key (other than `lang`) is reported.
fn parse_fields(
    input: ParseStream,
    owner: &str,
    allowed: &[&str],
    errors: &mut Errors,
    mut field: impl FnMut(&Ident, ParseStream, &mut Errors) -> syn::Result<bool>,
) -> syn::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    while !input.is_empty() {
        let key = input.call(Ident::parse_any)?;
        let name = key.to_string();
        let braced = if allowed.contains(&name.as_str()) {
            if name != "lang" && seen.contains(&name) {
                errors.at(key.span(), format!("{owner} gives `{name}` twice"));
            }
            seen.push(name);
            field(&key, input, errors)?
        } else {
            errors.at(
                key.span(),
                format!(
                    "unknown field `{name}` in {owner}{}",
                    did_you_mean(
                        &name,
                        allowed.iter().copied(),
                        &format!("its fields are {}", one_of(allowed))
                    ),
                ),
            );
            skip_field(input)?
        };
        if input.is_empty() {
            break;
        }
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        } else if !braced {
            return Err(input.error(format!("expected `,` after `{key}`'s value")));
        }
    }
    Ok(())
}

/// Skips an unknown field's value: up to the next `,`, or past a brace group.
fn skip_field(input: ParseStream) -> syn::Result<bool> {
    while !input.is_empty() && !input.peek(Token![,]) {
        if let TokenTree::Group(g) = input.parse::<TokenTree>()? {
            if g.delimiter() == Delimiter::Brace {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

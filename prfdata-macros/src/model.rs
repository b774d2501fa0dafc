//! The map as prfdata will see it: the checked [`MapAst`], with every default filled in and
//! every symbolic offset computed. Each mistake is reported at the token it is about.
//!
//! Defaults: an object's detail level is Novice, a counter's its object's (a base counter's
//! Novice: a detail filter never drops it while keeping its counter); scale 0; not costly; no
//! instances; no default counter. Offsets: a symbol without `= N` (objects and named counters,
//! in declaration order) takes the previous symbol's offset + 2, the first 0, as the symbol
//! .h file of lodctr numbers them; an explicit offset is kept (it must be even and unused) and
//! the ones after it follow from it, as C enumerators do.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use syn::{Attribute, Expr, Ident, LitInt, LitStr, Visibility};

use crate::ast::{CounterAst, CounterBody, Help, InstancesAst, MapAst, ObjectAst, TextsAst};
use crate::errors::{did_you_mean, one_of, Errors};
use crate::histogram;
use prfdata_rules::counter;
use prfdata_rules::counter_types::{self, Kind};
use prfdata_rules::histogram::{self as histogram_rules, Geometry};
use prfdata_rules::map::{self as rules, Violation};
use prfdata_rules::MAX_SUM_PARTS;

/// A checked map, ready to expand.
pub(crate) struct Model {
    pub(crate) krate: TokenStream,
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) module: Ident,
    pub(crate) app: LitStr,
    pub(crate) objects: Vec<Obj>,
}

pub(crate) struct Obj {
    pub(crate) docs: Vec<Attribute>,
    pub(crate) symbol: Ident,
    pub(crate) offset: u32,
    pub(crate) texts: Vec<Text>,
    pub(crate) detail: Level,
    pub(crate) default: Option<usize>,
    /// `max` and `name_len`, or `None` for an object without instances.
    pub(crate) instances: Option<(Expr, Expr)>,
    /// Where the object's scope (instances or not) was decided: its `instances` field, or its
    /// symbol when the field is left out. Type errors about the scope point there.
    pub(crate) scope_span: Span,
    pub(crate) costly: bool,
    /// `total: true`.
    pub(crate) total: bool,
    /// `packed: true`.
    pub(crate) packed: bool,
    pub(crate) counters: Vec<Ctr>,
}

pub(crate) struct Ctr {
    pub(crate) docs: Vec<Attribute>,
    pub(crate) symbol: Ident,
    /// `None` for a base counter.
    pub(crate) offset: Option<u32>,
    pub(crate) ty: Ident,
    pub(crate) texts: Vec<Text>,
    pub(crate) detail: Level,
    pub(crate) scale: i32,
    /// For a base: the symbol of the counter it serves.
    pub(crate) serves: Option<String>,
    /// `factor: * N` (true) or `/ N` (false).
    pub(crate) factor: Option<(bool, u32)>,
    /// `unit: bytes`: the unit, one of `prfdata_rules::counter::UNITS`.
    pub(crate) unit: Option<&'static str>,
    /// `on_demand: true`.
    pub(crate) on_demand: bool,
    /// `sum: [...]`: each part's index among the object's counters, and its token.
    pub(crate) sum: Option<Vec<(usize, Ident)>>,
    /// `aggregate: ...`: the variant of `prfdata::map::Aggregate` (`Sum`, `Live`, ...).
    pub(crate) aggregate: Option<Ident>,
    /// `sharded: true`.
    pub(crate) sharded: bool,
    /// A `Histogram`'s bucket geometry.
    pub(crate) histogram: Option<Geometry>,
}

pub(crate) struct Text {
    pub(crate) lang: String,
    pub(crate) name: String,
    pub(crate) help: String,
}

/// `prfdata::map::DetailLevel`.
#[derive(Clone, Copy)]
pub(crate) enum Level {
    Novice,
    Advanced,
    Expert,
    Wizard,
}

const LEVELS: [Level; 4] = [Level::Novice, Level::Advanced, Level::Expert, Level::Wizard];
/// Names the macro generates in the map's module.
const RESERVED: &[&str] = &["MAP", "Map", "PrfData"];

impl Level {
    pub(crate) fn name(self) -> &'static str {
        rules::DETAIL_LEVELS[self as usize]
    }

    fn parse(ident: &Ident, errors: &mut Errors) -> Level {
        let name = ident.to_string();
        match rules::detail_level(&name) {
            Ok(i) => LEVELS[i],
            Err(v) => {
                let near = did_you_mean(&name, rules::DETAIL_LEVELS, v.message());
                errors.at(ident.span(), format!("unknown detail level `{name}`{near}"));
                Level::Novice
            }
        }
    }
}

/// Checks `ast`: `None` if `errors` got anything.
pub(crate) fn check(ast: MapAst, errors: &mut Errors) -> Option<Model> {
    check_app(&ast.app, errors);
    if ast.objects.is_empty() {
        errors.at(
            ast.module.span(),
            "the map declares no object: add `object SYMBOL { name: ..., help: ..., counters { \
             ... } }`",
        );
    }
    let mut symbols = Symbols::default();
    let objects: Vec<Obj> = ast
        .objects
        .into_iter()
        .map(|o| check_object(o, &mut symbols, errors))
        .collect();
    if !errors.is_empty() {
        return None;
    }
    Some(Model {
        krate: ast.krate,
        attrs: ast.attrs,
        vis: ast.vis,
        module: ast.module,
        app: ast.app,
        objects,
    })
}

/// The app-name rule of `prfdata-rules`, which prfdata's map validation applies again.
fn check_app(app: &LitStr, errors: &mut Errors) {
    let name = app.value();
    if let Err(v) = rules::app_name(&name) {
        errors.at(
            app.span(),
            format!("bad app name {name:?}: {}", v.message()),
        );
    }
}

/// Symbols and symbolic offsets seen so far, in declaration order.
#[derive(Default)]
struct Symbols {
    /// Symbol -> what it is ("object X", "counter Y of object X").
    symbols: HashMap<String, String>,
    /// Offset -> the symbol that has it.
    offsets: HashMap<u32, String>,
    /// The last offset given or computed.
    previous: Option<u32>,
}

impl Symbols {
    /// Records a symbol, reporting a duplicate or a name the macro generates.
    fn symbol(&mut self, symbol: &Ident, what: String, errors: &mut Errors) {
        let name = symbol.to_string();
        if RESERVED.contains(&name.as_str()) {
            errors.at(
                symbol.span(),
                format!(
                    "`{name}` is a name the macro generates in the map's module ({}): choose \
                     another symbol",
                    one_of(RESERVED)
                ),
            );
        }
        if let Some(first) = self.symbols.get(&name) {
            errors.at(
                symbol.span(),
                format!("the symbol {name} is declared twice: first as {first}, again as {what}"),
            );
        } else {
            self.symbols.insert(name, what);
        }
    }

    /// The offset of `symbol`: `explicit`, checked, or the previous one + 2.
    fn offset(&mut self, symbol: &Ident, explicit: Option<&LitInt>, errors: &mut Errors) -> u32 {
        let (offset, span) = match explicit {
            Some(lit) => match lit.base10_parse::<u32>() {
                Ok(n) => {
                    if let Err(v) = rules::offset(n) {
                        let m = v.message();
                        let text = format!("the symbolic offset {n} of {symbol} is odd: {m}");
                        errors.at(lit.span(), text);
                    }
                    (n, lit.span())
                }
                Err(_) => {
                    errors.at(lit.span(), "a symbolic offset is a u32");
                    return 0;
                }
            },
            None => match self.previous.map_or(Some(0), |p| p.checked_add(2)) {
                Some(n) => (n, symbol.span()),
                None => {
                    errors.at(
                        symbol.span(),
                        "the computed symbolic offset passes u32::MAX",
                    );
                    return 0;
                }
            },
        };
        self.previous = Some(offset);
        let name = symbol.to_string();
        match self.offsets.get(&offset) {
            Some(first) => {
                let how = if explicit.is_some() {
                    ""
                } else {
                    " (computed: the previous symbol's + 2)"
                };
                errors.at(
                    span,
                    format!(
                        "{first} and {name} have the same symbolic offset {offset}{how}: give \
                         each object and named counter its own even offset, or omit every `= N` \
                         to have them numbered in order"
                    ),
                );
            }
            None => {
                self.offsets.insert(offset, name);
            }
        }
        offset
    }
}

fn check_object(o: ObjectAst, symbols: &mut Symbols, errors: &mut Errors) -> Obj {
    let owner = format!("object {}", o.symbol);
    symbols.symbol(&o.symbol, owner.clone(), errors);
    let offset = symbols.offset(&o.symbol, o.offset.as_ref(), errors);
    let texts = check_texts(&o.texts, &o.symbol, &owner, errors);
    let detail = o
        .detail
        .as_ref()
        .map_or(Level::Novice, |d| Level::parse(d, errors));
    let scope_span = o
        .instances
        .as_ref()
        .map_or(o.symbol.span(), |(keyword, _)| keyword.span());
    let instances = match o.instances {
        None | Some((_, InstancesAst::None)) => None,
        Some((
            _,
            InstancesAst::Max {
                brace,
                max,
                name_len,
            },
        )) => check_instances(brace, max, name_len, &owner, errors),
    };
    let counters = match o.counters {
        Some((keyword, list)) => {
            if list.is_empty() {
                errors.at(
                    keyword.span(),
                    format!(
                        "{owner} declares no counter: add `SYMBOL: CounterType {{ name: ..., help: \
                         ... }}`"
                    ),
                );
            }
            let instanced = instances.is_some();
            check_counters(list, &o.symbol, detail, instanced, symbols, errors)
        }
        None => {
            errors.at(
                o.symbol.span(),
                format!(
                    "{owner} has no `counters {{ ... }}`: an object publishes at least one counter"
                ),
            );
            Vec::new()
        }
    };
    let total = o.total.as_ref().is_some_and(|t| t.value);
    if let Some(t) = o.total.as_ref().filter(|t| t.value) {
        if instances.is_none() {
            errors.at(
                t.span(),
                format!(
                    "{owner} asks for a `_Total` instance but has no instances: `total: true` \
                     belongs to objects with `instances: {{ max: N, name_len: N }}`"
                ),
            );
        }
    }
    let default = o
        .default
        .as_ref()
        .and_then(|d| check_default(d, &counters, &owner, errors));
    Obj {
        docs: o.docs,
        symbol: o.symbol,
        offset,
        texts,
        detail,
        default,
        instances,
        scope_span,
        costly: o.costly.is_some_and(|c| c.value),
        total,
        packed: o.packed.is_some_and(|p| p.value),
        counters,
    }
}

/// The English name and help, then each `lang` block's.
fn check_texts(texts: &TextsAst, symbol: &Ident, owner: &str, errors: &mut Errors) -> Vec<Text> {
    let mut out = Vec::new();
    if let Some((name, help)) = name_and_help(texts, symbol.span(), owner, errors) {
        out.push(Text {
            lang: "009".into(),
            name,
            help,
        });
    }
    for lang in &texts.langs {
        let id = lang.id.value();
        let lang_owner = format!("{owner}'s lang {id:?}");
        if let Err(v) = rules::language_id(&id) {
            let text = format!("bad language id {id:?}: {}", v.message());
            errors.at(lang.id.span(), text);
        } else if let Err(v) = rules::lang_block(&id) {
            errors.at(lang.id.span(), format!("{owner}: {}", v.message()));
        } else if out.iter().any(|t| rules::same_language(&t.lang, &id)) {
            let m = rules::Violation::DuplicateLanguage.message();
            errors.at(lang.id.span(), format!("{owner}: language {id:?} {m}"));
        }
        if let Some((name, help)) =
            name_and_help(&lang.texts, lang.keyword.span(), &lang_owner, errors)
        {
            out.push(Text {
                lang: id,
                name,
                help,
            });
        }
    }
    out
}

/// `name` and `help` (or `help: name`), each required.
fn name_and_help(
    texts: &TextsAst,
    at: Span,
    owner: &str,
    errors: &mut Errors,
) -> Option<(String, String)> {
    let name = texts.name.as_ref().map(LitStr::value);
    if name.is_none() {
        errors.at(
            at,
            format!("{owner} has no `name`: add `name: \"...\"`, the name monitors show"),
        );
    }
    let help = match &texts.help {
        Some(Help::Text(help)) => Some(help.value()),
        Some(Help::SameAsName) => name.clone(),
        None => {
            errors.at(
                at,
                format!(
                    "{owner} has no `help`: add `help: \"...\"`, the explain text monitors show, \
                     or `help: name` to use the name as the help"
                ),
            );
            None
        }
    };
    Some((name?, help?))
}

fn check_instances(
    brace: Span,
    max: Option<Box<Expr>>,
    name_len: Option<Box<Expr>>,
    owner: &str,
    errors: &mut Errors,
) -> Option<(Expr, Expr)> {
    if max.is_none() {
        errors.at(
            brace,
            format!("{owner}'s instances have no `max`: the most instances live at once"),
        );
    }
    if name_len.is_none() {
        errors.at(
            brace,
            format!("{owner}'s instances have no `name_len`: the longest name, in UTF-16 units"),
        );
    }
    let (max, name_len) = (*max?, *name_len?);
    type Rule = fn(u64) -> Result<(), rules::Violation>;
    let limit = |expr: &Expr, rule: Rule, errors: &mut Errors| {
        // A constant or an expression is checked by the map's `const` validation instead.
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(lit),
            ..
        }) = expr
        {
            // A number past u64 breaks the rule as u64::MAX does.
            let n = lit.base10_parse::<u64>().unwrap_or(u64::MAX);
            if let Err(v) = rule(n) {
                let text = format!("{owner}'s instance limit {}", v.message());
                errors.at(lit.span(), text);
            }
        }
    };
    limit(&max, rules::instance_max, errors);
    limit(&name_len, rules::instance_name_len, errors);
    Some((max, name_len))
}

fn check_counters(
    list: Vec<CounterAst>,
    object: &Ident,
    object_detail: Level,
    instanced: bool,
    symbols: &mut Symbols,
    errors: &mut Errors,
) -> Vec<Ctr> {
    let kinds = counter_kinds(&list, errors);
    let tys: Vec<String> = list.iter().map(|c| c.ty.to_string()).collect();
    let names: Vec<String> = list.iter().map(|c| c.symbol.to_string()).collect();
    let ctx = ObjectCtx {
        detail: object_detail,
        instanced,
        names: &names,
    };
    let mut out: Vec<Ctr> = Vec::new();
    for (i, c) in list.into_iter().enumerate() {
        let owner = format!("counter {} of object {object}", c.symbol);
        symbols.symbol(&c.symbol, owner, errors);
        let ty = &tys[i];
        let serves = match kinds[i] {
            Some(Kind::Base { base_type }) => {
                let previous = i.checked_sub(1).and_then(|p| kinds[p]);
                check_base(&c, ty, base_type, previous, out.last(), errors)
            }
            Some(Kind::NeedsBase { base_type, suggest }) => {
                let next = kinds.get(i + 1).copied().flatten();
                let next_base = match next {
                    Some(Kind::Base { base_type: b }) => Some(b),
                    _ => None,
                };
                if let Err(v) = counter::base_follows(base_type, next_base) {
                    let text = if v == Violation::WrongBase {
                        format!("{}, a `{suggest}`, not `{}`", v.message(), tys[i + 1])
                    } else {
                        let symbol = &c.symbol;
                        format!(
                            "{}: add `{symbol}_BASE: {suggest},` right after it",
                            v.message()
                        )
                    };
                    errors.at(c.ty.span(), format!("counter {} ({ty}) {text}", c.symbol));
                }
                None
            }
            _ => None,
        };
        out.push(check_counter(c, kinds[i], serves, &ctx, symbols, errors));
    }
    check_sum_parts(&out, errors);
    check_shard_line(&out, object, errors);
    out
}

/// The words the object's sharded counters take in each shard line (one each, a histogram's
/// sum one, a `sharded: true` histogram's buckets one per bucket) fit `MAX_SHARD_LINE`: past
/// it, reported at the sharded histogram that passes it.
fn check_shard_line(out: &[Ctr], object: &Ident, errors: &mut Errors) {
    let mut words = 0u64;
    let mut past = None;
    for ctr in out {
        let buckets = ctr.histogram.as_ref().map(|g| g.buckets() as u64);
        words += match buckets {
            Some(n) if ctr.sharded => 1 + n,
            Some(_) => 1,
            None => u64::from(ctr.sharded),
        };
        if past.is_none() && ctr.sharded && histogram_rules::shard_line(words).is_err() {
            past = Some(&ctr.symbol);
        }
    }
    if let (Some(symbol), Err(v)) = (past, histogram_rules::shard_line(words)) {
        errors.at(
            symbol.span(),
            format!(
                "the sharded counters and buckets of {object} take {words} words per shard line: {}",
                v.message()
            ),
        );
    }
}

/// What a counter's checks need of its object: its detail level, whether it has instances,
/// and its counters' symbols.
struct ObjectCtx<'a> {
    detail: Level,
    instanced: bool,
    names: &'a [String],
}

/// Each counter's type looked up by name; an unknown name is reported with a suggestion.
fn counter_kinds(list: &[CounterAst], errors: &mut Errors) -> Vec<Option<Kind>> {
    list.iter()
        .map(|c| {
            let name = c.ty.to_string();
            let found = counter_types::find(&name);
            if found.is_none() && name != histogram::TYPE {
                errors.at(
                    c.ty.span(),
                    format!(
                        "unknown counter type `{name}`{}",
                        did_you_mean(
                            &name,
                            counter_types::ALL.iter().map(|t| t.name),
                            "the types are those of prfdata::counter_type"
                        ),
                    ),
                );
            }
            found.map(|t| t.kind)
        })
        .collect()
}

/// A counter after its type: a base has nothing more; every other counter has its offset,
/// texts, detail, scale, source, aggregation and sharding.
fn check_counter(
    c: CounterAst,
    kind: Option<Kind>,
    serves: Option<String>,
    object: &ObjectCtx,
    symbols: &mut Symbols,
    errors: &mut Errors,
) -> Ctr {
    let CounterAst {
        docs,
        symbol,
        offset,
        ty,
        body,
    } = c;
    let mut ctr = Ctr {
        docs,
        offset: None,
        texts: Vec::new(),
        detail: Level::Novice,
        scale: 0,
        serves,
        factor: None,
        unit: None,
        on_demand: false,
        sum: None,
        aggregate: None,
        sharded: false,
        histogram: None,
        symbol,
        ty,
    };
    if matches!(kind, Some(Kind::Base { .. })) {
        return ctr;
    }
    let symbol = &ctr.symbol;
    ctr.offset = Some(symbols.offset(symbol, offset.as_ref(), errors));
    ctr.detail = object.detail;
    let owner = format!("counter {symbol}");
    let Some(body) = body else {
        errors.at(
            symbol.span(),
            format!(
                "{owner} has no `{{ name: \"...\", help: \"...\" }}`: every counter but a \
                 base has a name and help"
            ),
        );
        return ctr;
    };
    ctr.texts = check_texts(&body.texts, symbol, &owner, errors);
    if let Some(d) = &body.detail {
        ctr.detail = Level::parse(d, errors);
    }
    ctr.scale = body.scale.as_ref().and_then(|s| s.value).unwrap_or(0);
    ctr.sharded = check_sharded(&body, symbol, errors);
    if ctr.ty == histogram::TYPE {
        ctr.histogram = histogram::check(&body, symbol, &ctr.ty, errors);
        // The symbols of its count and buckets, which the expansion declares.
        for part in histogram::part_symbols(symbol) {
            let what = format!("a part of histogram {symbol}");
            symbols.symbol(&Ident::new(&part, symbol.span()), what, errors);
        }
        return ctr;
    }
    check_no_histogram_fields(&body, symbol, &ctr.ty, errors);
    (ctr.factor, ctr.on_demand, ctr.sum) =
        check_source(&body, symbol, object.instanced, object.names, errors);
    ctr.aggregate = body
        .aggregate
        .as_ref()
        .and_then(|a| check_aggregate(a, symbol, &ctr.ty, kind, errors));
    ctr.unit = body
        .unit
        .as_ref()
        .and_then(|u| check_unit(u, symbol, &ctr.ty, kind, errors));
    ctr
}

/// `range`, `error` and `buckets` belong to a `Histogram` only.
fn check_no_histogram_fields(body: &CounterBody, symbol: &Ident, ty: &Ident, errors: &mut Errors) {
    let keys = [
        body.range.as_ref().map(|r| &r.key),
        body.error.as_ref().map(|e| &e.key),
        body.buckets.as_ref().map(|b| &b.key),
    ];
    for key in keys.into_iter().flatten() {
        errors.at(
            key.span(),
            format!(
                "counter {symbol} ({ty}) takes no `{key}`: `range`, `error` and `buckets` \
                 declare a `{}`",
                histogram::TYPE
            ),
        );
    }
}

/// `unit: bytes | seconds`: the unit, or `None` (reported) for an unknown one or one the
/// counter's type cannot take (text, a time).
fn check_unit(
    unit: &Ident,
    symbol: &Ident,
    ty: &Ident,
    kind: Option<Kind>,
    errors: &mut Errors,
) -> Option<&'static str> {
    let name = unit.to_string();
    let ty_name = ty.to_string();
    let text = ty_name.starts_with("Text") || matches!(kind, Some(Kind::Base { .. }));
    let time = counter::TIME_TYPES.contains(&ty_name.as_str());
    match counter::unit(&name, text, time) {
        Ok(i) => Some(counter::UNITS[i]),
        Err(Violation::UnknownUnit) => {
            let units = counter::UNITS;
            let hint = format!("a unit is {}", one_of(&units));
            errors.at(
                unit.span(),
                format!(
                    "unknown unit `{name}` for counter {symbol}{}",
                    did_you_mean(&name, units.iter().copied(), &hint)
                ),
            );
            None
        }
        Err(v) => {
            errors.at(
                unit.span(),
                format!(
                    "counter {symbol} ({ty_name}) cannot declare a unit: {}",
                    v.message()
                ),
            );
            None
        }
    }
}

/// A part that is a base or itself a sum: known once every counter is.
fn check_sum_parts(out: &[Ctr], errors: &mut Errors) {
    for ctr in out {
        let Some(parts) = &ctr.sum else { continue };
        for (p, token) in parts {
            let part = counter::Part {
                base: out[*p].offset.is_none(),
                sum: out[*p].sum.is_some(),
                ..counter::Part::OK
            };
            let symbol = &ctr.symbol;
            if let Err(v) = histogram_rules::sum_part(out[*p].ty == histogram::TYPE) {
                let text = format!(
                    "counter {symbol} cannot sum {token}: {token} {}",
                    v.message()
                );
                errors.at(token.span(), text);
            } else if let Err(v) = counter::sum_part(part) {
                let text = format!("counter {symbol} cannot sum {token}: {}", v.message());
                errors.at(token.span(), text);
            }
        }
    }
}

/// `sharded: true`: not with `on_demand` or `sum` (the width and kind, a 64-bit count or timer,
/// are checked by prfdata's map validation, which knows the types).
fn check_sharded(body: &CounterBody, symbol: &Ident, errors: &mut Errors) -> bool {
    let Some(lit) = body.sharded.as_ref().filter(|b| b.value) else {
        return false;
    };
    let computed = body.on_demand.as_ref().is_some_and(|b| b.value) || body.sum.is_some();
    if let Err(v) = counter::sharded(computed, true, 0) {
        let text = format!(
            "counter {symbol} is sharded and on demand or a sum: {}",
            v.message()
        );
        errors.at(lit.span(), text);
    }
    true
}

/// A counter's `factor`, `on_demand` and `sum` (the Windows 95 stat servers' scale factors,
/// `PSTF_FUNCPTR` and `PSTF_COMPLEX`), each mistake at its token. `names` are the object's counter
/// symbols.
#[allow(clippy::type_complexity)]
fn check_source(
    body: &CounterBody,
    symbol: &Ident,
    instanced: bool,
    names: &[String],
    errors: &mut Errors,
) -> (Option<(bool, u32)>, bool, Option<Vec<(usize, Ident)>>) {
    let factor = body
        .factor
        .as_ref()
        .and_then(|f| f.value.map(|v| (f.multiply, v)));
    let on_demand = body.on_demand.as_ref().is_some_and(|b| b.value);
    if let Some(lit) = body.on_demand.as_ref().filter(|b| b.value) {
        // The macro knows no width: a base or text on demand is the map validation's to refuse.
        if let Err(v) = counter::on_demand(instanced, body.sum.is_some(), true) {
            let what = if v == Violation::OnDemandSum {
                "both on demand and a sum"
            } else {
                "on demand in an object with instances"
            };
            errors.at(
                lit.span(),
                format!("counter {symbol} is {what}: {}", v.message()),
            );
        }
    }
    let sum = body.sum.as_ref().map(|(bracket, parts)| {
        if let Err(v @ Violation::SumEmpty) = counter::sum_len(parts.len()) {
            errors.at(*bracket, format!("counter {symbol} {}", v.message()));
        }
        let mut out: Vec<(usize, Ident)> = Vec::new();
        for (n, part) in parts.iter().enumerate() {
            let name = part.to_string();
            if n == MAX_SUM_PARTS {
                if let Err(v) = counter::sum_len(parts.len()) {
                    errors.at(part.span(), format!("counter {symbol} {}", v.message()));
                }
            }
            let itself = counter::sum_part(counter::Part {
                itself: *symbol == name,
                ..counter::Part::OK
            });
            match (names.iter().position(|c| *c == name), itself) {
                (Some(_), Err(v)) => {
                    errors.at(part.span(), format!("counter {symbol} {}", v.message()))
                }
                (Some(_), _) if out.iter().any(|(_, t)| *t == name) => errors.at(
                    part.span(),
                    format!("counter {symbol} names {name} twice in its sum"),
                ),
                (Some(i), _) => out.push((i, part.clone())),
                (None, _) => errors.at(
                    part.span(),
                    format!(
                        "counter {symbol} sums `{name}`, which is not a counter of its object{}",
                        did_you_mean(
                            &name,
                            names.iter().map(String::as_str),
                            "a sum adds counters of its own object"
                        ),
                    ),
                ),
            }
        }
        out
    });
    (factor, on_demand, sum)
}

/// `aggregate: sum | live | min | max | last`: the `prfdata::map::Aggregate` variant, or `None`
/// (reported) for an unknown rule or one that cannot mean anything for the counter's type.
fn check_aggregate(
    rule: &Ident,
    symbol: &Ident,
    ty: &Ident,
    kind: Option<Kind>,
    errors: &mut Errors,
) -> Option<Ident> {
    const VARIANTS: [&str; 5] = ["Sum", "Live", "Min", "Max", "Last"];
    let name = rule.to_string();
    let Some(index) = counter::AGGREGATES.iter().position(|r| *r == name) else {
        let rules = counter::AGGREGATES;
        let hint = format!("a rule is {}", one_of(&rules));
        errors.at(
            rule.span(),
            format!(
                "unknown aggregation rule `{name}` for counter {symbol}{}",
                did_you_mean(&name, rules.iter().copied(), &hint)
            ),
        );
        return None;
    };
    let ty_name = ty.to_string();
    let needs_base = matches!(kind, Some(Kind::NeedsBase { .. }));
    let (text, elapsed) = (ty_name.starts_with("Text"), ty_name == "ElapsedTime");
    if let Err(v) = counter::aggregate(Some(index), text, needs_base, elapsed) {
        errors.at(
            rule.span(),
            format!(
                "counter {symbol} ({ty_name}) cannot aggregate as `{name}`: {}",
                v.message()
            ),
        );
        return None;
    }
    Some(Ident::new(VARIANTS[index], rule.span()))
}

/// A base counter: right after a counter that needs this base, no offset, no body. Returns the
/// symbol of the counter it serves (`served`, the counter before it, if it does).
fn check_base(
    c: &CounterAst,
    ty: &str,
    base_type: u32,
    previous: Option<Kind>,
    served: Option<&Ctr>,
    errors: &mut Errors,
) -> Option<String> {
    if let Some(lit) = &c.offset {
        errors.at(
            lit.span(),
            format!(
                "base counter {} has no symbolic offset: a base has no name of its own (remove \
                 `= {}`)",
                c.symbol,
                lit.token()
            ),
        );
    }
    if let Some(body) = &c.body {
        errors.at(
            body.brace,
            format!(
                "base counter {} takes no `{{ ... }}`: a base has no name, help, detail or scale \
                 of its own (monitors show it with the counter before it); write `{}: {ty},`",
                c.symbol, c.symbol
            ),
        );
    }
    let previous_needs = match previous {
        Some(Kind::NeedsBase { base_type: b, .. }) => Some(b),
        _ => None,
    };
    if let Err(v) = counter::base_serves(base_type, previous_needs) {
        let served: Vec<&str> = counter_types::served_by(base_type).collect();
        let text = format!("{} (it serves {})", v.message(), one_of(&served));
        errors.at(
            c.ty.span(),
            format!("base counter {} ({ty}) {text}", c.symbol),
        );
        return None;
    }
    served.map(|p| p.symbol.to_string())
}

/// `default: SYMBOL`: one of the object's counters and not a base; `none` for none.
fn check_default(d: &Ident, counters: &[Ctr], owner: &str, errors: &mut Errors) -> Option<usize> {
    let name = d.to_string();
    if name == "none" {
        return None;
    }
    let found = counters.iter().position(|c| c.symbol == name);
    // A base counter is the one without an offset.
    let Err(v) = rules::default_counter(found.map(|i| counters[i].offset.is_none())) else {
        return found;
    };
    let text = if v == rules::Violation::DefaultIsBase {
        format!("{owner}'s default counter {name} {}", v.message())
    } else {
        let names: Vec<String> = counters
            .iter()
            .filter(|c| c.offset.is_some())
            .map(|c| c.symbol.to_string())
            .collect();
        let near = did_you_mean(
            &name,
            names.iter().map(String::as_str),
            "name one of them, or `none`",
        );
        format!("{owner}'s default counter `{name}` {}{near}", v.message())
    };
    errors.at(d.span(), text);
    None
}

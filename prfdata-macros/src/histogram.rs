//! A `Histogram` counter's declaration checked with the rules of `prfdata_rules::histogram`,
//! each broken rule reported at the token it is about: the unit at `unit`'s value, a value at
//! its literal, the error at its number, the range's shape and bucket count at `range`, the
//! bounds' count at the bracket (or the first bound too many) and each bound at itself.

use proc_macro2::Span;
use syn::Ident;

use crate::ast::CounterBody;
use crate::errors::{did_you_mean, Errors};
use crate::histogram_syntax::{BucketsAst, ErrorAst, RangeAst, ValueAst};
use prfdata_rules::counter::AGGREGATES;
use prfdata_rules::histogram::{self as rules, Explicit, Geometry, LogLinear, Unit, UNIT_NAMES};
use prfdata_rules::map::{HistogramViolation, Violation};
use prfdata_rules::MAX_EXPLICIT_BOUNDS;

/// The counter type name that declares a histogram.
pub(crate) const TYPE: &str = "Histogram";

/// The symbols of a histogram's count and buckets, the second and third of the three counters
/// it expands to (its sum takes the histogram's own symbol).
pub(crate) fn part_symbols(symbol: &Ident) -> [String; 2] {
    [format!("{symbol}_COUNT"), format!("{symbol}_BUCKETS")]
}

/// The geometry of histogram `symbol` (declared with the `ty` token), or `None` when a rule
/// is broken (reported).
pub(crate) fn check(
    body: &CounterBody,
    symbol: &Ident,
    ty: &Ident,
    errors: &mut Errors,
) -> Option<Geometry> {
    let recorded = check_recorded(body, symbol, errors);
    let summed = check_aggregate(body, symbol, errors);
    let shape = rules::shape(
        body.unit.is_some(),
        body.range.is_some(),
        body.error.is_some(),
        body.buckets.is_some(),
    );
    if let Err(v) = shape {
        errors.at(ty.span(), format!("histogram {symbol}: {}", v.message()));
        return None;
    }
    let unit = unit(body.unit.as_ref()?, symbol, errors)?;
    let geometry = match (&body.range, &body.error, &body.buckets) {
        (Some(range), Some(error), None) => log_linear(unit, range, error, symbol, errors),
        (None, None, Some(buckets)) => explicit(unit, buckets, symbol, errors),
        _ => None,
    };
    geometry.filter(|_| recorded && summed)
}

/// A histogram is recorded by the app: `on_demand`, `sum` and `factor` are refused at their
/// tokens. False if one was given.
fn check_recorded(body: &CounterBody, symbol: &Ident, errors: &mut Errors) -> bool {
    let mut ok = true;
    let on_demand = body
        .on_demand
        .as_ref()
        .filter(|b| b.value)
        .map(|b| b.span());
    let sum = body.sum.as_ref().map(|(bracket, _)| *bracket);
    let factor = body.factor.as_ref().map(|f| f.at);
    for (what, at) in [("on_demand", on_demand), ("sum", sum), ("factor", factor)] {
        let Some(at) = at else { continue };
        let set = |w: &str| what == w;
        if let Err(v) = rules::recorded(set("on_demand"), set("sum"), set("factor")) {
            errors.at(
                at,
                format!("histogram {symbol} has `{what}`: {}", v.message()),
            );
            ok = false;
        }
    }
    ok
}

/// `aggregate:` on a histogram is `sum` only. False if it is not.
fn check_aggregate(body: &CounterBody, symbol: &Ident, errors: &mut Errors) -> bool {
    let Some(rule) = &body.aggregate else {
        return true;
    };
    let name = rule.to_string();
    let index = AGGREGATES.iter().position(|r| *r == name);
    if let Err(v) = rules::aggregate(Some(index.unwrap_or(usize::MAX))) {
        errors.at(
            rule.span(),
            format!("histogram {symbol} aggregates as `{name}`: {}", v.message()),
        );
        return false;
    }
    true
}

/// `unit: us`: one of `UNIT_NAMES`.
fn unit(unit: &Ident, symbol: &Ident, errors: &mut Errors) -> Option<Unit> {
    let name = unit.to_string();
    match Unit::from_name(&name) {
        Ok(u) => Some(u),
        Err(v) => {
            let near = did_you_mean(&name, UNIT_NAMES, v.message());
            errors.at(
                unit.span(),
                format!("unknown unit `{name}` for histogram {symbol}{near}"),
            );
            None
        }
    }
}

/// A value in the histogram's unit (`10ms` in `us` is 10000), reported at its literal.
fn value(unit: Unit, v: &ValueAst, symbol: &Ident, errors: &mut Errors) -> Option<u64> {
    let high = Violation::Histogram(HistogramViolation::High);
    let result = match v.amount {
        Some(amount) => unit.whole(amount, v.suffix()),
        None => Err(high),
    };
    match result {
        Ok(value) => Some(value),
        Err(e) => {
            let lit = v.lit.to_string();
            let unit = unit.name();
            let text = match e {
                Violation::Histogram(HistogramViolation::NotWhole) => {
                    format!("histogram {symbol}: {lit} {} (`{unit}`)", e.message())
                }
                _ => format!(
                    "histogram {symbol} (`unit: {unit}`): {lit}: {}",
                    e.message()
                ),
            };
            errors.at(v.span(), text);
            None
        }
    }
}

/// `range: LO..HI, error: E%`: log-linear buckets.
fn log_linear(
    unit: Unit,
    range: &RangeAst,
    error: &ErrorAst,
    symbol: &Ident,
    errors: &mut Errors,
) -> Option<Geometry> {
    let lo = value(unit, &range.lo, symbol, errors);
    let hi = value(unit, &range.hi, symbol, errors);
    let bits = error.basis_points.map_or(
        Err(Violation::Histogram(HistogramViolation::Error)),
        rules::sub_bits,
    );
    let p = match bits {
        Ok(p) => Some(p),
        Err(v) => {
            errors.at(error.at, format!("histogram {symbol}: {}", v.message()));
            None
        }
    };
    let (lo, hi, p) = (lo?, hi?, p?);
    match LogLinear::new(unit, lo, hi, p) {
        Ok(g) => Some(Geometry::LogLinear(g)),
        Err(v) => {
            let (at, text) = log_linear_error(v, range, error, lo, hi, p);
            errors.at(at, format!("histogram {symbol}: {text}"));
            None
        }
    }
}

/// Where and how `LogLinear::new`'s violation `v` is reported.
fn log_linear_error(
    v: Violation,
    range: &RangeAst,
    error: &ErrorAst,
    lo: u64,
    hi: u64,
    p: u8,
) -> (Span, String) {
    let (lo_lit, hi_lit) = (range.lo.lit.to_string(), range.hi.lit.to_string());
    match v {
        Violation::Histogram(HistogramViolation::Buckets) => {
            let n = LogLinear::bucket_count(lo, hi, p).unwrap_or(0);
            let kib = (n * 8).div_ceil(1024);
            let pct = error.basis_points.unwrap_or(0) as f64 / 100.0;
            let text = format!(
                "{lo_lit}..{hi_lit} at {pct}% takes {n} buckets ({kib} KiB per copy); {}",
                v.message()
            );
            (range.key.span(), text)
        }
        Violation::Histogram(HistogramViolation::High) => {
            (range.hi.span(), format!("{hi_lit}: {}", v.message()))
        }
        _ => (
            range.key.span(),
            format!("{lo_lit}..{hi_lit}: {}", v.message()),
        ),
    }
}

/// `buckets: [B1, .., Bk]`: explicit bounds.
fn explicit(
    unit: Unit,
    buckets: &BucketsAst,
    symbol: &Ident,
    errors: &mut Errors,
) -> Option<Geometry> {
    let mut ok = true;
    if let Err(v) = rules::explicit_len(buckets.bounds.len()) {
        let at = buckets
            .bounds
            .get(MAX_EXPLICIT_BOUNDS)
            .map_or(buckets.bracket, ValueAst::span);
        errors.at(at, format!("histogram {symbol}: {}", v.message()));
        ok = false;
    }
    let mut values = Vec::new();
    let mut previous = None;
    for b in &buckets.bounds {
        let Some(v) = value(unit, b, symbol, errors) else {
            ok = false;
            continue;
        };
        if let Err(e) = rules::explicit_bound(previous, v) {
            let lit = b.lit.to_string();
            errors.at(
                b.span(),
                format!("histogram {symbol}: bound {lit}: {}", e.message()),
            );
            ok = false;
        }
        previous = Some(v);
        values.push(v);
    }
    if !ok {
        return None;
    }
    Explicit::new(unit, &values).ok().map(Geometry::Explicit)
}

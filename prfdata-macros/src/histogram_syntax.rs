//! A histogram counter's own fields as written: `range: 10us..10s`, `error: 2%` and
//! `buckets: [1ms, 5ms, 25ms]`, each value kept with its token so a broken rule points at it.

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Ident, LitFloat, LitInt, Token};

/// A value with its unit suffix (`10us`: 10 and `"us"`; `4096`: 4096 and `""`), or `None` when
/// it is not a `u64` (reported already).
pub(crate) struct ValueAst {
    pub(crate) lit: LitInt,
    pub(crate) amount: Option<u64>,
}

impl ValueAst {
    /// The suffix as written (`""` for none).
    pub(crate) fn suffix(&self) -> &str {
        self.lit.suffix()
    }

    pub(crate) fn span(&self) -> Span {
        self.lit.span()
    }
}

/// `range: LO..HI`: the `range` key and both ends.
pub(crate) struct RangeAst {
    pub(crate) key: Ident,
    pub(crate) lo: ValueAst,
    pub(crate) hi: ValueAst,
}

/// `error: 2%` or `error: 0.5%`: the `error` key, the number's span and the error in basis
/// points (hundredths of a percent), `None` when it has more than two decimals or is too large.
pub(crate) struct ErrorAst {
    pub(crate) key: Ident,
    pub(crate) at: Span,
    pub(crate) basis_points: Option<u32>,
}

/// `buckets: [B1, .., Bk]`: the `buckets` key, the bracket's span and the bounds.
pub(crate) struct BucketsAst {
    pub(crate) key: Ident,
    pub(crate) bracket: Span,
    pub(crate) bounds: Vec<ValueAst>,
}

/// One value such as `10us`, `2s` or `4096`.
pub(crate) fn parse_value(input: ParseStream) -> syn::Result<ValueAst> {
    let lit: LitInt = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected a whole number with its unit, such as `10us`, `2s` or `4096`",
        )
    })?;
    let amount = lit.base10_digits().parse::<u64>().ok();
    Ok(ValueAst { lit, amount })
}

/// `: LO..HI` after the `range` key.
pub(crate) fn parse_range(key: &Ident, input: ParseStream) -> syn::Result<RangeAst> {
    input.parse::<Token![:]>()?;
    let lo = parse_value(input)?;
    input
        .parse::<Token![..]>()
        .map_err(|e| syn::Error::new(e.span(), "expected `LO..HI`, such as `range: 10us..10s`"))?;
    let hi = parse_value(input)?;
    Ok(RangeAst {
        key: key.clone(),
        lo,
        hi,
    })
}

/// `: E%` after the `error` key.
pub(crate) fn parse_error(key: &Ident, input: ParseStream) -> syn::Result<ErrorAst> {
    input.parse::<Token![:]>()?;
    let (at, digits) = if input.peek(LitFloat) {
        let lit: LitFloat = input.parse()?;
        (lit.span(), lit.base10_digits().to_string())
    } else {
        let lit: LitInt = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "expected the error as a percentage, such as `2%`")
        })?;
        (lit.span(), lit.base10_digits().to_string())
    };
    input.parse::<Token![%]>().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected `%` after the error, such as `error: 2%`",
        )
    })?;
    Ok(ErrorAst {
        key: key.clone(),
        at,
        basis_points: basis_points(&digits),
    })
}

/// `"2"` → 200, `"0.5"` → 50, `"1.25"` → 125; `None` past two decimals or a `u32`.
fn basis_points(digits: &str) -> Option<u32> {
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if fraction.len() > 2 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u32 = whole.parse().ok()?;
    let fraction: u32 = format!("{fraction:0<2}").parse().ok()?;
    whole.checked_mul(100)?.checked_add(fraction)
}

/// `: [B1, .., Bk]` after the `buckets` key.
pub(crate) fn parse_buckets(key: &Ident, input: ParseStream) -> syn::Result<BucketsAst> {
    input.parse::<Token![:]>()?;
    let list;
    let bracket = syn::bracketed!(list in input);
    let mut bounds = Vec::new();
    while !list.is_empty() {
        bounds.push(parse_value(&list)?);
        if list.is_empty() {
            break;
        }
        list.parse::<Token![,]>()?;
    }
    Ok(BucketsAst {
        key: key.clone(),
        bracket: bracket.span.join(),
        bounds,
    })
}

#[cfg(test)]
mod tests {
    use super::basis_points;

    #[test]
    fn percentages_become_basis_points() {
        assert_eq!(basis_points("2"), Some(200));
        assert_eq!(basis_points("0.5"), Some(50));
        assert_eq!(basis_points("1.25"), Some(125));
        assert_eq!(basis_points("0.125"), None);
        assert_eq!(basis_points("99999999"), None);
    }
}

//! Numbers, scales, intervals and paths as the chart writes them.

use std::time::Duration;

use prfmon::pdh;

/// A number in at most nine characters: three decimals, or scientific notation from 100 000
/// up.
pub fn number(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) if v.abs() >= 1e5 => format!("{v:.3e}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// A DefaultScale as perfmon's legend shows it: the factor, `0.001` ... `1000`, else `1eN`.
pub fn scale_label(scale: i32) -> String {
    match scale {
        0 => "1".to_owned(),
        1..=3 => 10_i64.pow(scale as u32).to_string(),
        -3..=-1 => format!(
            "{:.*}",
            scale.unsigned_abs() as usize,
            pdh::scaled(1.0, scale)
        ),
        _ => format!("1e{scale}"),
    }
}

/// An interval for the title: `250 ms`, `1 s`, `5 min`.
pub fn interval_label(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{} ms", d.as_millis())
    } else if s >= 60.0 && (s % 60.0).abs() < 1e-9 {
        format!("{} min", (s / 60.0) as u64)
    } else {
        format!("{s} s")
    }
}

/// `text` cut to `width` characters, keeping its end (a path's counter name) and marking the
/// cut with `…`.
pub fn keep_end(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width || width == 0 {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - (width - 1)).collect();
    format!("…{tail}")
}

/// `text` cut to `width` characters, keeping its start and marking the cut with `…`.
pub fn keep_start(text: &str, width: usize) -> String {
    if text.chars().count() <= width || width == 0 {
        return text.to_owned();
    }
    let head: String = text.chars().take(width - 1).collect();
    format!("{head}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_cuts() {
        assert_eq!(scale_label(-3), "0.001");
        assert_eq!(scale_label(2), "100");
        assert_eq!(scale_label(-7), "1e-7");
        assert_eq!(interval_label(Duration::from_secs(300)), "5 min");
        assert_eq!(keep_end("abcdef", 4), "…def");
        assert_eq!(keep_start("abcdef", 4), "abc…");
        assert_eq!(number(Some(1e9)), "1.000e9");
    }
}

//! Metric names from object and counter names, and what happens when two collide.
//!
//! The rule (also in the [module docs](super)):
//!
//! 1. Each of the object name and the counter name is turned into a *word*
//!    ([`sanitize`]): `%` reads as ` percent `, `/` as ` per `, `#` as ` num `; ASCII
//!    letters are lowercased; every run of other characters (spaces, punctuation, non-ASCII)
//!    becomes one `_`; leading and trailing `_` are dropped; the words `sec` and `secs`
//!    become `second` and `seconds` (promtool's linter rejects the abbreviations). A name that leaves nothing, or an
//!    index with no name in `Perflib\<lang>`, becomes `n<index>`.
//! 2. The stem is `prfdata_<object word>_<counter word>` ([`metric_stem`]), where an object
//!    word that begins with `prfdata_` does not repeat it ([`object_stem`]); a counter exported
//!    in a unit ([`unit_of`](super::kind::unit_of)) ends with it: `_seconds` for a time (a
//!    counter word that already ends in `_seconds` does not repeat it),
//!    `_start_time_seconds` for an elapsed time; a count whose map declares its unit
//!    (`unit: bytes`) ends with the unit's word in place of the counter name's own unit word
//!    ([`declared_stem`]); a histogram's stem ends the same way in the unit it is exported in
//!    (`_seconds` for a time, `_bytes`; none for a count); a base's stem is its counter's
//!    final name without `_seconds`, followed by `_base`.
//! 3. A counter family loses a trailing `_total` (the encoder appends it to every sample).
//! 4. Families with the same stem and the same type are one family: the same object and
//!    counter names from two services (the same map installed twice) are told apart by the
//!    `app` label.
//! 5. A stem that would reuse a name already taken by a family of another type (either its
//!    family name or its sample names: `<name>_total` for a counter, `<name>_bucket`,
//!    `<name>_sum` and `<name>_count` for a histogram) gets
//!    `_<object index>_<counter index>` appended, then `_2`, `_3`... until it is free. Pairs
//!    are named in order of object name index, service name, then counter position, so the
//!    winner does not depend on the order the services answered.
//!
//! # Examples
//!
//! ```
//! use prfmon::openmetrics::naming::metric_stem;
//! assert_eq!(metric_stem("PrfData Demo Service", "Jobs/sec"), "prfdata_demo_service_jobs_per_second");
//! assert_eq!(metric_stem("Processor", "% Processor Time"), "prfdata_processor_percent_processor_time");
//! ```

use std::collections::HashMap;

use super::kind::MetricKind;
use crate::units::DeclaredUnit;

/// The prefix of every metric name.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::naming::{metric_stem, PREFIX};
/// assert!(metric_stem("Pool", "Size").starts_with(PREFIX));
/// ```
pub const PREFIX: &str = "prfdata";

/// `text` as one metric-name word (rule 1 of the module docs); empty if nothing is left.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::naming::sanitize;
/// assert_eq!(sanitize("Avg. job latency"), "avg_job_latency");
/// assert_eq!(sanitize("# of Exceps Thrown / sec"), "num_of_exceps_thrown_per_second");
/// assert_eq!(sanitize("Travaux terminés"), "travaux_termin_s");
/// assert_eq!(sanitize("--"), "");
/// ```
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Whether a separator is due before the next word character.
    let mut gap = false;
    let push = |out: &mut String, word: &str, gap_before: bool| {
        if gap_before && !out.is_empty() {
            out.push('_');
        }
        out.push_str(word);
    };
    for c in text.chars() {
        let word = match c {
            '%' => "percent",
            '/' => "per",
            '#' => "num",
            c if c.is_ascii_alphanumeric() => {
                let mut buf = [0; 4];
                push(&mut out, c.to_ascii_lowercase().encode_utf8(&mut buf), gap);
                gap = false;
                continue;
            }
            _ => {
                gap = true;
                continue;
            }
        };
        push(&mut out, word, true);
        gap = true;
    }
    // Whole words promtool's linter takes for unit abbreviations, spelt out.
    out.split('_')
        .map(|w| match w {
            "sec" => "second",
            "secs" => "seconds",
            w => w,
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// A name word for `name`, or `n<index>` when `name` is missing or leaves nothing.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::naming::word_or_index;
/// assert_eq!(word_or_index(Some("Jobs"), 1850), "jobs");
/// assert_eq!(word_or_index(None, 1850), "n1850");
/// assert_eq!(word_or_index(Some("??"), 7), "n7");
/// ```
pub fn word_or_index(name: Option<&str>, index: u32) -> String {
    match name.map(sanitize) {
        Some(word) if !word.is_empty() => word,
        _ => format!("n{index}"),
    }
}

/// `prfdata_<object word>`: the start of the names of an object's metrics. An object word
/// that already begins with `prfdata_` (an object named "PrfData Demo Service") does not
/// repeat it.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::naming::object_stem;
/// assert_eq!(object_stem("prov_pool"), "prfdata_prov_pool");
/// assert_eq!(object_stem("prfdata_demo_service"), "prfdata_demo_service");
/// assert_eq!(object_stem("prfdata"), "prfdata_prfdata");
/// ```
pub fn object_stem(object_word: &str) -> String {
    let word = object_word
        .strip_prefix(PREFIX)
        .and_then(|w| w.strip_prefix('_'))
        .filter(|w| !w.is_empty())
        .unwrap_or(object_word);
    format!("{PREFIX}_{word}")
}

/// `prfdata_<object word>_<counter word>` (rules 1 and 2) from the names, each word by
/// [`sanitize`] with `unnamed` for an empty one.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::naming::metric_stem;
/// assert_eq!(metric_stem("Prov Pool", "Size"), "prfdata_prov_pool_size");
/// assert_eq!(metric_stem("PrfData Demo Service", "Uptime"), "prfdata_demo_service_uptime");
/// ```
pub fn metric_stem(object: &str, counter: &str) -> String {
    let word = |s: &str| {
        let w = sanitize(s);
        if w.is_empty() {
            "unnamed".to_owned()
        } else {
            w
        }
    };
    format!("{}_{}", object_stem(&word(object)), word(counter))
}

/// Words a counter name may end with that name a unit of bytes, as [`sanitize`] leaves them.
const BYTE_WORDS: &[&str] = &[
    "b",
    "byte",
    "bytes",
    "kb",
    "kib",
    "kbytes",
    "kilobytes",
    "mb",
    "mib",
    "mbytes",
    "megabytes",
    "gb",
    "gib",
    "gbytes",
    "gigabytes",
    "tb",
    "tib",
    "terabytes",
];

/// Words a counter name may end with that name a unit of time, as [`sanitize`] leaves them
/// (`sec` is `second` by then).
const TIME_WORDS: &[&str] = &[
    "s",
    "second",
    "seconds",
    "ms",
    "msec",
    "millisecond",
    "milliseconds",
    "us",
    "microsecond",
    "microseconds",
    "ns",
    "nanosecond",
    "nanoseconds",
    "min",
    "mins",
    "minute",
    "minutes",
    "hour",
    "hours",
    "day",
    "days",
];

/// The stem of a count whose raw value is declared in `unit` (rule 2): `stem` without its last
/// word if that word names a unit of the same quantity (`kib`, `ms`), followed by the unit's
/// word. The stem keeps at least its object and counter words.
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::naming::declared_stem;
/// use prfmon::units::DeclaredUnit::{Bytes, Seconds};
/// assert_eq!(declared_stem("prfdata_demo_queued_payload_kib", Bytes), "prfdata_demo_queued_payload_bytes");
/// assert_eq!(declared_stem("prfdata_demo_heap", Bytes), "prfdata_demo_heap_bytes");
/// assert_eq!(declared_stem("prfdata_demo_uptime_minutes", Seconds), "prfdata_demo_uptime_seconds");
/// assert_eq!(declared_stem("prfdata_pool_kib", Bytes), "prfdata_pool_bytes");
/// ```
pub fn declared_stem(stem: &str, unit: DeclaredUnit) -> String {
    let words = match unit {
        DeclaredUnit::Bytes => BYTE_WORDS,
        DeclaredUnit::Seconds => TIME_WORDS,
    };
    let kept = match stem.rsplit_once('_') {
        // `prfdata_<object>` stays: the last word is the counter's only one.
        Some((rest, last)) if words.contains(&last) && rest.matches('_').count() >= 1 => rest,
        _ => stem,
    };
    format!("{kept}_{}", unit.word())
}

/// The names handed out in one exposition (rules 3 to 5 of the module docs).
///
/// # Examples
///
/// ```
/// use prfmon::openmetrics::kind::MetricKind::{Counter, Gauge};
/// use prfmon::openmetrics::naming::NameTable;
/// let mut names = NameTable::default();
/// assert_eq!(names.claim("prfdata_a_b_total", Counter, (1848, 1850)), "prfdata_a_b");
/// // The same stem and type from another service: the same family.
/// assert_eq!(names.claim("prfdata_a_b", Counter, (1900, 1902)), "prfdata_a_b");
/// // The same stem as a gauge: renamed.
/// assert_eq!(names.claim("prfdata_a_b", Gauge, (1860, 1862)), "prfdata_a_b_1860_1862");
/// // A gauge named like the counter's samples: renamed too.
/// assert_eq!(names.claim("prfdata_a_b_total", Gauge, (1870, 1872)), "prfdata_a_b_total_1870_1872");
/// ```
#[derive(Debug, Clone, Default)]
pub struct NameTable {
    /// (stem, kind) → the family name it got.
    families: HashMap<(String, MetricKind), String>,
    /// Every family name and sample name in use → the kind of the family that uses it.
    taken: HashMap<String, MetricKind>,
}

impl NameTable {
    /// The family name for `stem` of `kind`, for the pair (object index, counter index)
    /// `key` (used only to tell a colliding stem apart).
    pub fn claim(&mut self, stem: &str, kind: MetricKind, key: (u32, u32)) -> String {
        let stem = match kind {
            MetricKind::Counter => stem.strip_suffix("_total").unwrap_or(stem),
            MetricKind::Gauge | MetricKind::Histogram => stem,
        };
        if let Some(name) = self.families.get(&(stem.to_owned(), kind)) {
            return name.clone();
        }
        let mut name = stem.to_owned();
        if !self.is_free(&name, kind) {
            let keyed = format!("{stem}_{}_{}", key.0, key.1);
            name = keyed.clone();
            let mut n = 2u32;
            while !self.is_free(&name, kind) {
                name = format!("{keyed}_{n}");
                n += 1;
            }
        }
        for used in Self::names_of(&name, kind) {
            self.taken.insert(used, kind);
        }
        self.families.insert((stem.to_owned(), kind), name.clone());
        name
    }

    /// The family name and the sample name a family `name` of `kind` uses.
    fn names_of(name: &str, kind: MetricKind) -> Vec<String> {
        match kind {
            MetricKind::Counter => vec![name.to_owned(), format!("{name}_total")],
            MetricKind::Gauge => vec![name.to_owned()],
            MetricKind::Histogram => ["", "_bucket", "_sum", "_count"]
                .iter()
                .map(|suffix| format!("{name}{suffix}"))
                .collect(),
        }
    }

    fn is_free(&self, name: &str, kind: MetricKind) -> bool {
        Self::names_of(name, kind)
            .iter()
            .all(|n| !self.taken.contains_key(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MetricKind::{Counter, Gauge, Histogram};

    #[test]
    fn names_are_lowercase_alphanumeric_words_joined_by_single_underscores() {
        for (input, want) in [
            ("Jobs/sec", "jobs_per_second"),
            ("Secs sec seconds", "seconds_second_seconds"),
            ("Sector", "sector"),
            ("% Busy", "percent_busy"),
            ("  Queue   length  ", "queue_length"),
            ("Bytes/sec", "bytes_per_second"),
            ("IO Data Bytes/sec", "io_data_bytes_per_second"),
            ("Avg. Disk sec/Transfer", "avg_disk_second_per_transfer"),
            ("%%", "percent_percent"),
            ("Ünïcode", "n_code"),
            ("", ""),
        ] {
            assert_eq!(sanitize(input), want, "{input:?}");
        }
    }

    #[test]
    fn a_name_word_is_always_a_valid_metric_name_part() {
        for input in ["a b", "-x-", "Ω", "a__b", "9 lives", "\u{0}\n\"\\"] {
            let w = sanitize(input);
            assert!(
                !w.starts_with('_') && !w.ends_with('_') && !w.contains("__"),
                "{w}"
            );
            assert!(w
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
        }
    }

    #[test]
    fn stems_carry_the_prefix_and_both_words() {
        assert_eq!(
            metric_stem("Prov Worker", "% Busy"),
            "prfdata_prov_worker_percent_busy"
        );
        assert_eq!(metric_stem("?", "!"), "prfdata_unnamed_unnamed");
    }

    #[test]
    fn counters_lose_a_trailing_total_and_gauges_keep_it() {
        let mut t = NameTable::default();
        assert_eq!(
            t.claim("prfdata_x_bytes_total", Counter, (1, 2)),
            "prfdata_x_bytes"
        );
        assert_eq!(t.claim("prfdata_y_total", Gauge, (3, 4)), "prfdata_y_total");
    }

    #[test]
    fn collisions_are_resolved_by_indexes_then_numbers_and_are_repeatable() {
        let run = || {
            let mut t = NameTable::default();
            vec![
                t.claim("prfdata_a", Counter, (10, 12)),
                t.claim("prfdata_a", Gauge, (20, 22)),
                t.claim("prfdata_a_total", Gauge, (30, 32)),
                t.claim("prfdata_a_20_22", Counter, (40, 42)),
                t.claim("prfdata_a", Gauge, (50, 52)),
            ]
        };
        let names = run();
        assert_eq!(
            names,
            [
                "prfdata_a",
                "prfdata_a_20_22",
                "prfdata_a_total_30_32",
                "prfdata_a_20_22_40_42",
                "prfdata_a_20_22",
            ]
        );
        assert_eq!(run(), names);
    }

    #[test]
    fn a_second_collision_with_the_same_indexes_gets_a_number() {
        let mut t = NameTable::default();
        t.claim("prfdata_a", Counter, (1, 2));
        t.claim("prfdata_a_1_2", Gauge, (9, 9));
        assert_eq!(t.claim("prfdata_a", Gauge, (1, 2)), "prfdata_a_1_2_2");
    }

    #[test]
    fn a_histogram_takes_its_bucket_sum_and_count_names() {
        let mut t = NameTable::default();
        assert_eq!(t.claim("prfdata_a_count", Gauge, (1, 2)), "prfdata_a_count");
        assert_eq!(t.claim("prfdata_a", Histogram, (3, 4)), "prfdata_a_3_4");
        assert_eq!(t.claim("prfdata_b", Histogram, (5, 6)), "prfdata_b");
        // The same stem from another service: the same family.
        assert_eq!(t.claim("prfdata_b", Histogram, (7, 6)), "prfdata_b");
        for taken in ["prfdata_b_bucket", "prfdata_b_sum", "prfdata_b_count"] {
            assert_eq!(t.claim(taken, Gauge, (8, 9)), format!("{taken}_8_9"));
        }
        assert_eq!(t.claim("prfdata_b", Counter, (8, 9)), "prfdata_b_8_9");
    }
}

//! Validation of a map, in `const` so that [`prfdata_map!`](crate::prfdata_map) rejects a bad map
//! at compile time with a message naming the symbol.
//!
//! The same function runs at run time for maps built by hand, returning a [`MapError`].

use core::fmt;

use super::histogram_rules::{self, HistogramProblem};
use super::offsets;
use super::{str_eq, CounterDef, Factor, Instances, MapDef, ObjectDef, Source, Text};
use crate::layout::{
    CACHE_LINE, COUNTER_RECORD_SIZE, HEADER_SIZE, MAX_BLOCK_SIZE, MAX_COUNTERS, MAX_COUNTER_BLOCK,
    MAX_OBJECTS, OBJECT_RECORD_SIZE,
};
use crate::winperf;

use crate::layout::MAX_INSTANCE_NAME;
use prfdata_rules::counter;
use prfdata_rules::map::{self as rules, Violation};
pub(crate) use prfdata_rules::valid_app_name;

/// What is wrong with a map. Each variant names the symbol it is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The app name is empty, too long, has characters other than `A-Za-z0-9_.-`, starts with
    /// `.` or holds `..`.
    BadAppName {
        /// The name given.
        app: &'static str,
    },
    /// The map declares no object.
    NoObjects,
    /// An object without counters.
    NoCounters {
        /// The object's symbol.
        object: &'static str,
    },
    /// A symbolic offset that is odd (the lodctr design specification: offsets must be even).
    OddOffset {
        /// The symbol.
        symbol: &'static str,
        /// Its offset.
        offset: u32,
    },
    /// Two symbols with the same offset.
    DuplicateOffset {
        /// The first symbol with that offset.
        first: &'static str,
        /// The second.
        second: &'static str,
        /// The offset.
        offset: u32,
    },
    /// Two objects or counters with the same symbol.
    DuplicateSymbol {
        /// The symbol.
        symbol: &'static str,
    },
    /// A named object or counter without English (009) text first.
    MissingEnglish {
        /// The symbol.
        symbol: &'static str,
    },
    /// A language id that is not three hexadecimal digits, or given twice.
    BadLanguage {
        /// The symbol.
        symbol: &'static str,
        /// The language id.
        lang: &'static str,
    },
    /// Instance limits of zero, or above prfdata-rules' `MAX_INSTANCES` / `MAX_INSTANCE_NAME`.
    BadInstanceLimits {
        /// The object's symbol.
        object: &'static str,
    },
    /// The default counter is out of range or a base counter.
    BadDefaultCounter {
        /// The object's symbol.
        object: &'static str,
    },
    /// A fraction, average, multi or precision counter not followed by its base.
    MissingBase {
        /// The counter's symbol.
        counter: &'static str,
        /// Its type.
        counter_type: u32,
        /// The base type that must follow it.
        base_type: u32,
    },
    /// A base counter that does not follow a counter needing it.
    OrphanBase {
        /// The base's symbol.
        counter: &'static str,
    },
    /// A base counter with a symbolic offset or text (bases have no name of their own), or a
    /// counter that is not a base without one.
    BadBaseNaming {
        /// The counter's symbol.
        counter: &'static str,
    },
    /// A counter type this crate cannot place in a block (variable-length text, histograms).
    UnsupportedType {
        /// The counter's symbol.
        counter: &'static str,
        /// Its type.
        counter_type: u32,
    },
    /// A text counter with room for more than [`MAX_INSTANCE_NAME`] UTF-16 units, or a counter
    /// that is not text with room for text.
    BadTextLength {
        /// The counter's symbol.
        counter: &'static str,
        /// Its `text_len`.
        text_len: u32,
    },
    /// More objects than a block may hold
    /// ([`MAX_OBJECTS`]).
    TooManyObjects {
        /// How many the map declares.
        count: usize,
    },
    /// More counters, all objects together, than a block may hold
    /// ([`MAX_COUNTERS`]).
    TooManyCounters {
        /// How many the map declares.
        count: usize,
    },
    /// One instance's counters take more than
    /// [`MAX_COUNTER_BLOCK`] bytes.
    CounterBlockTooLarge {
        /// The object's symbol.
        object: &'static str,
        /// The bytes of its counter block.
        size: usize,
    },
    /// The block laid out from the map would be larger than
    /// [`MAX_BLOCK_SIZE`]: lower the instance limits.
    BlockTooLarge {
        /// The bytes the block would take.
        size: u64,
    },
    /// A scale factor of 0.
    BadFactor {
        /// The counter's symbol.
        counter: &'static str,
    },
    /// A declared unit that is not `bytes` or `seconds`, or one declared for text, a base or
    /// a time (whose type gives its unit).
    BadUnit {
        /// The counter's symbol.
        counter: &'static str,
    },
    /// A derived counter ([`super::Source::SumOf`]) with no part or more than
    /// `MAX_SUM_PARTS` (8), a part that is not another numeric, stored or on-demand, non-base
    /// counter of the object, a part of another width than the sum, or a sum that is a base or
    /// text.
    BadSum {
        /// The derived counter's symbol.
        counter: &'static str,
    },
    /// An on-demand counter ([`super::Source::OnDemand`]) of an object with
    /// instances, or that is a base or text.
    BadOnDemand {
        /// The counter's symbol.
        counter: &'static str,
    },
    /// A sharded counter ([`super::Source::Sharded`]) that is not a 64-bit number (a base,
    /// text, an elapsed time or a 32-bit type), or the object's sharded counter past
    /// 64 (`layout::MAX_SHARDED`).
    BadSharded {
        /// The counter's symbol.
        counter: &'static str,
    },
    /// A histogram's counters not as a histogram lays them out (its sum, its count, then its
    /// buckets, [`super::Source::Histogram`]), or a histogram past a rule or a limit.
    BadHistogram {
        /// The symbol of the histogram's buckets (or of the counter the problem is about).
        counter: &'static str,
        /// What is wrong.
        problem: HistogramProblem,
    },
}

/// Checks a map: every rule of the lodctr design specification and winperf.h that a map can break.
///
/// # Errors
///
/// The first [`MapError`] found, in declaration order.
pub(crate) const fn validate(map: &MapDef) -> Result<(), MapError> {
    if let Err(e) = check_shape(map) {
        return Err(e);
    }
    if let Err(e) = check_uniqueness(map) {
        return Err(e);
    }
    check_size(map)
}

/// [`validate`] for a map checked at run time (at `activate` and `attach`, and at each layout of
/// the run-time block, `crate::dynamic`): the same rules and the same first error, with the
/// uniqueness of symbols and offsets checked in one pass over hash maps instead of
/// [`validate`]'s pairwise comparison (which `const` needs: it cannot allocate).
pub(crate) fn validate_at_run_time(map: &MapDef) -> Result<(), MapError> {
    check_shape(map)?;
    check_uniqueness_hashed(map)?;
    check_size(map)
}

/// The app name, the object and counter counts, and each object's own rules.
const fn check_shape(map: &MapDef) -> Result<(), MapError> {
    if rules::app_name(map.app).is_err() {
        return Err(MapError::BadAppName { app: map.app });
    }
    if map.objects.is_empty() {
        return Err(MapError::NoObjects);
    }
    if map.objects.len() > MAX_OBJECTS as usize {
        return Err(MapError::TooManyObjects {
            count: map.objects.len(),
        });
    }
    let mut o = 0;
    let mut counters = 0;
    while o < map.objects.len() {
        let obj = &map.objects[o];
        if let Err(e) = check_object(obj) {
            return Err(e);
        }
        counters += obj.counters.len();
        o += 1;
    }
    if counters > MAX_COUNTERS as usize {
        return Err(MapError::TooManyCounters { count: counters });
    }
    Ok(())
}

/// Checks what the block laid out from a map (every other rule holding) would take: each
/// counter block at most `MAX_COUNTER_BLOCK` bytes, the whole at most `MAX_BLOCK_SIZE`. The
/// sizes are computed in `u64`, from limits already checked, so nothing here overflows; once
/// they pass, the layout's own `usize` arithmetic cannot overflow either.
const fn check_size(map: &MapDef) -> Result<(), MapError> {
    let mut total = align(
        (HEADER_SIZE
            + map.objects.len() * OBJECT_RECORD_SIZE
            + offsets::total_counters(map) * COUNTER_RECORD_SIZE
            + offsets::descriptor_region_words(map) * 8) as u64,
    );
    let mut o = 0;
    while o < map.objects.len() {
        let obj = &map.objects[o];
        let stride = offsets::counter_block_size(obj);
        if stride > MAX_COUNTER_BLOCK as usize {
            return Err(MapError::CounterBlockTooLarge {
                object: obj.symbol,
                size: stride,
            });
        }
        // As `offsets::object_regions`: live list, slots, shard owners, counter blocks, in
        // u64 (n <= 2^20 instances, slots < 2^12 bytes, strides < 2^21: no overflow).
        let n = offsets::max_instances(obj) as u64;
        let data = align(
            n * 4
                + 64
                + n * offsets::slot_size(obj) as u64
                + 64
                + offsets::shard_slots(obj) as u64 * 8,
        );
        total += align(data + offsets::block_count(obj) as u64 * offsets::block_stride(obj) as u64);
        if total > MAX_BLOCK_SIZE {
            return Err(MapError::BlockTooLarge { size: total });
        }
        o += 1;
    }
    Ok(())
}

/// The map's rules, checked in declaration order, panicking with the first error's message:
/// what `prfdata_map!` calls in a constant so a bad map fails to compile.
///
/// # Panics
///
/// If the map is invalid.
///
/// # Examples
///
/// ```
/// use prfdata::map::MapDef;
/// let result = std::panic::catch_unwind(|| {
///     prfdata::map::MapError::assert_valid(&MapDef { app: "bad name!", objects: &[] })
/// });
/// assert!(result.is_err());
/// ```
impl MapError {
    /// See the type-level docs: panics with the message of the first error.
    pub const fn assert_valid(map: &MapDef) {
        if let Err(e) = validate(map) {
            let msg = e.message(map.app);
            match core::str::from_utf8(msg.as_bytes()) {
                Ok(s) => panic!("{}", s),
                Err(_) => panic!("prfdata map is invalid"),
            }
        }
    }

    /// The message, built in `const` (no allocation) so it can appear in a compile error.
    const fn message(&self, app: &str) -> Msg {
        let m = Msg::new().push("prfdata map \"").push(app).push("\": ");
        match *self {
            MapError::BadAppName { .. } => {
                m.push("bad app name: ").push(Violation::AppName.message())
            }
            MapError::NoObjects => m.push("the map declares no object"),
            MapError::NoCounters { object } => {
                m.push("object ").push(object).push(" declares no counter")
            }
            MapError::OddOffset { symbol, .. } => m
                .push("the symbolic offset of ")
                .push(symbol)
                .push(" is odd: ")
                .push(Violation::OddOffset.message()),
            MapError::DuplicateOffset { first, second, .. } => m
                .push(first)
                .push(" and ")
                .push(second)
                .push(" have the same symbolic offset"),
            MapError::DuplicateSymbol { symbol } => m
                .push("the symbol ")
                .push(symbol)
                .push(" is declared twice"),
            MapError::MissingEnglish { symbol } => m
                .push(symbol)
                .push(" needs its name and help in language 009 first"),
            MapError::BadLanguage { symbol, lang } => {
                let rule = match rules::lang_block(lang) {
                    Err(v) => v,
                    Ok(()) => Violation::DuplicateLanguage,
                };
                m.push(symbol)
                    .push(": language \"")
                    .push(lang)
                    .push("\": ")
                    .push(rule.message())
            }
            MapError::BadInstanceLimits { object } => m
                .push("object ")
                .push(object)
                .push("'s instance limits: ")
                .push(Violation::InstanceMax.message())
                .push(" and ")
                .push(Violation::InstanceNameLen.message()),
            MapError::BadDefaultCounter { object } => m
                .push("object ")
                .push(object)
                .push("'s default counter ")
                .push(Violation::DefaultNotACounter.message())
                .push(" or ")
                .push(Violation::DefaultIsBase.message()),
            MapError::TooManyObjects { .. } => m.push("the map declares more than 4096 objects"),
            MapError::TooManyCounters { .. } => {
                m.push("the map declares more than 65536 counters in all")
            }
            MapError::CounterBlockTooLarge { object, .. } => m
                .push("object ")
                .push(object)
                .push(": one instance's counters take more than 1 MiB"),
            MapError::BlockTooLarge { .. } => m.push(
                "the block would be larger than 1 GiB (MAX_BLOCK_SIZE): lower the objects' \
                 instance limits or name lengths",
            ),
            _ => self.counter_message(m),
        }
    }

    /// [`MapError::message`] of an error about one counter.
    const fn counter_message(&self, m: Msg) -> Msg {
        match *self {
            MapError::MissingBase {
                counter,
                counter_type,
                base_type,
            } => m
                .push("counter ")
                .push(counter)
                .push(" (")
                .push(type_name(counter_type))
                .push(") must be followed by its base counter (")
                .push(type_name(base_type))
                .push(")"),
            MapError::OrphanBase { counter } => m
                .push("base counter ")
                .push(counter)
                .push(" does not follow a counter that needs this base"),
            MapError::BadBaseNaming { counter } => m
                .push("counter ")
                .push(counter)
                .push(": a base counter has no offset or text, every other counter has both"),
            MapError::UnsupportedType {
                counter,
                counter_type,
            } => m
                .push("counter ")
                .push(counter)
                .push(" has a type prfdata cannot place in a block (")
                .push(type_name(counter_type))
                .push(")"),
            MapError::BadTextLength { counter, .. } => m
                .push("counter ")
                .push(counter)
                .push(": only text counters have a text length, of 1 to 1024 UTF-16 units"),
            MapError::BadFactor { counter } => m
                .push("counter ")
                .push(counter)
                .push(": a scale factor multiplies or divides by an integer of at least 1"),
            MapError::BadUnit { counter } => m
                .push("counter ")
                .push(counter)
                .push(": a unit (`bytes` or `seconds`) is declared for a count whose raw value is in it; a time's type gives its unit, text and bases have none"),
            MapError::BadSum { counter } => m.push("counter ").push(counter).push(
                ": a sum has 1 to 8 parts, each another stored or on-demand counter of the \
                 object with the sum's width, and is itself neither a base nor text",
            ),
            MapError::BadOnDemand { counter } => m
                .push("counter ")
                .push(counter)
                .push(": an on-demand counter belongs to an object without instances and is not a base or text"),
            MapError::BadSharded { counter } => m
                .push("counter ")
                .push(counter)
                .push(": ")
                .push(Violation::ShardedType.message()),
            MapError::BadHistogram { counter, problem } => m
                .push("histogram counter ")
                .push(counter)
                .push(": ")
                .push(problem.message()),
            _ => m,
        }
    }
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = self.message("?");
        let text = core::str::from_utf8(msg.as_bytes()).unwrap_or("invalid prfdata map");
        // Drop the `prfdata map "?": ` prefix: the caller knows which map it validated.
        f.write_str(text.strip_prefix("prfdata map \"?\": ").unwrap_or(text))
    }
}

impl std::error::Error for MapError {}

const fn type_name(counter_type: u32) -> &'static str {
    match winperf::counter_type_name(counter_type) {
        Some(name) => name,
        None => "an unknown type",
    }
}

const fn check_texts(symbol: &'static str, texts: &'static [Text]) -> Result<(), MapError> {
    if texts.is_empty() || !str_eq(texts[0].lang, "009") {
        return Err(MapError::MissingEnglish { symbol });
    }
    let mut i = 0;
    while i < texts.len() {
        // English comes first (checked above); every other text is a `lang` block's.
        let lang = texts[i].lang;
        let mut ok = i == 0 || rules::lang_block(lang).is_ok();
        let mut j = 0;
        while ok && j < i {
            ok = !rules::same_language(texts[j].lang, lang);
            j += 1;
        }
        if !ok {
            return Err(MapError::BadLanguage { symbol, lang });
        }
        i += 1;
    }
    Ok(())
}

const fn check_object(obj: &ObjectDef) -> Result<(), MapError> {
    if rules::offset(obj.offset).is_err() {
        return Err(MapError::OddOffset {
            symbol: obj.symbol,
            offset: obj.offset,
        });
    }
    if let Err(e) = check_texts(obj.symbol, obj.texts) {
        return Err(e);
    }
    if obj.counters.is_empty() {
        return Err(MapError::NoCounters { object: obj.symbol });
    }
    if let Instances::Max { max, max_name_len } = obj.instances {
        let max_ok = rules::instance_max(max as u64).is_ok();
        if !max_ok || rules::instance_name_len(max_name_len as u64).is_err() {
            return Err(MapError::BadInstanceLimits { object: obj.symbol });
        }
    }
    if let Some(d) = obj.default_counter {
        let is_base = if d < obj.counters.len() {
            Some(winperf::is_base(obj.counters[d].counter_type))
        } else {
            None
        };
        if rules::default_counter(is_base).is_err() {
            return Err(MapError::BadDefaultCounter { object: obj.symbol });
        }
    }
    let mut c = 0;
    while c < obj.counters.len() {
        if let Err(e) = check_counter(obj.counters, c) {
            return Err(e);
        }
        if let Err(e) = check_source(obj, c) {
            return Err(e);
        }
        if let Err(e) = histogram_rules::check(obj, c) {
            return Err(e);
        }
        c += 1;
    }
    Ok(())
}

/// A counter's factor, unit and source (the Windows 95 stat servers' scale factors,
/// `PSTF_FUNCPTR`, `PSTF_COMPLEX`).
const fn check_source(obj: &ObjectDef, c: usize) -> Result<(), MapError> {
    let ctr = &obj.counters[c];
    let counter = ctr.symbol;
    if let Some(Factor::Multiply(0) | Factor::Divide(0)) = ctr.factor {
        return Err(MapError::BadFactor { counter });
    }
    if let Some(unit) = ctr.unit {
        let text =
            ctr.counter_type == winperf::PERF_COUNTER_TEXT || winperf::is_base(ctr.counter_type);
        if counter::unit(unit, text, counter::is_time(ctr.counter_type)).is_err() {
            return Err(MapError::BadUnit { counter });
        }
    }
    let plain = !winperf::is_base(ctr.counter_type)
        && ctr.counter_type != winperf::PERF_COUNTER_TEXT
        && winperf::counter_size(ctr.counter_type).is_some();
    let ok = match ctr.source {
        Source::Stored => true,
        Source::Sharded => {
            let wide = plain
                && matches!(winperf::counter_size(ctr.counter_type), Some(8))
                && ctr.counter_type != winperf::PERF_ELAPSED_TIME;
            let index = offsets::sharded_count(obj).saturating_sub(1) as u64;
            counter::sharded(false, wide, index).is_ok()
        }
        Source::OnDemand => counter::on_demand(obj.has_instances(), false, plain).is_ok(),
        Source::SumOf(parts) => {
            plain && counter::sum_len(parts.len()).is_ok() && sum_parts_ok(obj, c)
        }
        // Checked as a histogram's counters (`histogram_rules`).
        Source::Histogram { .. } | Source::HistogramCount => true,
    };
    if ok {
        return Ok(());
    }
    Err(match ctr.source {
        Source::Sharded => MapError::BadSharded { counter },
        Source::OnDemand => MapError::BadOnDemand { counter },
        _ => MapError::BadSum { counter },
    })
}

/// Each part of the sum at `c` is another counter of the object that [`counter::sum_part`]
/// accepts.
const fn sum_parts_ok(obj: &ObjectDef, c: usize) -> bool {
    let ctr = &obj.counters[c];
    let Source::SumOf(parts) = ctr.source else {
        return true;
    };
    let mut i = 0;
    while i < parts.len() {
        let p = parts[i];
        if p >= obj.counters.len() {
            return false;
        }
        let part = &obj.counters[p];
        let same_width = match (
            winperf::counter_size(part.counter_type),
            winperf::counter_size(ctr.counter_type),
        ) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
        let part = counter::Part {
            itself: p == c,
            base: winperf::is_base(part.counter_type),
            sum: matches!(part.source, Source::SumOf(_)),
            other_width: !same_width,
        };
        if counter::sum_part(part).is_err() {
            return false;
        }
        i += 1;
    }
    true
}

/// Checks one counter of a run-time object (`crate::dynamic`) on its own, as [`validate`]
/// checks each counter of a map; its errors name `ctr.symbol`.
#[cfg(feature = "install")]
pub(crate) const fn check_lone_counter(ctr: &CounterDef) -> Result<(), MapError> {
    let histogram = ctr.counter_type == winperf::PERF_PRFDATA_HISTOGRAM;
    if histogram
        || matches!(
            ctr.source,
            Source::Histogram { .. } | Source::HistogramCount
        )
    {
        return Err(MapError::BadHistogram {
            counter: ctr.symbol,
            problem: HistogramProblem::RunTime,
        });
    }
    check_counter(core::slice::from_ref(ctr), 0)
}

const fn check_counter(counters: &[CounterDef], c: usize) -> Result<(), MapError> {
    let ctr = &counters[c];
    let ty = ctr.counter_type;
    let is_text = ty == winperf::PERF_COUNTER_TEXT;
    if (is_text && ctr.text_len > MAX_INSTANCE_NAME) || (!is_text && ctr.text_len != 0) {
        return Err(MapError::BadTextLength {
            counter: ctr.symbol,
            text_len: ctr.text_len,
        });
    }
    if histogram_rules::is_buckets(ctr) {
        // A histogram's buckets: no name of their own, no base.
        return histogram_rules::check_buckets_alone(ctr);
    }
    if ctr.value_size().is_none() || ty & winperf::PERF_COUNTER_HISTOGRAM_TYPE != 0 {
        return Err(MapError::UnsupportedType {
            counter: ctr.symbol,
            counter_type: ty,
        });
    }
    if winperf::is_base(ty) {
        if ctr.offset.is_some() || !ctr.texts.is_empty() {
            return Err(MapError::BadBaseNaming {
                counter: ctr.symbol,
            });
        }
        let needed_by_previous = if c == 0 {
            None
        } else {
            winperf::required_base(counters[c - 1].counter_type)
        };
        if counter::base_serves(ty, needed_by_previous).is_err() {
            return Err(MapError::OrphanBase {
                counter: ctr.symbol,
            });
        }
    } else {
        match ctr.offset {
            None => {
                return Err(MapError::BadBaseNaming {
                    counter: ctr.symbol,
                })
            }
            Some(offset) if rules::offset(offset).is_err() => {
                return Err(MapError::OddOffset {
                    symbol: ctr.symbol,
                    offset,
                })
            }
            Some(_) => {}
        }
        if let Err(e) = check_texts(ctr.symbol, ctr.texts) {
            return Err(e);
        }
        if let Some(base) = winperf::required_base(ty) {
            let next = c + 1 < counters.len() && winperf::is_base(counters[c + 1].counter_type);
            let next_base = if next {
                Some(counters[c + 1].counter_type)
            } else {
                None
            };
            if counter::base_follows(base, next_base).is_err() {
                return Err(MapError::MissingBase {
                    counter: ctr.symbol,
                    counter_type: ty,
                    base_type: base,
                });
            }
        }
    }
    Ok(())
}

/// Every (symbol, offset) of the map in declaration order: objects and their counters.
const fn nth_symbol(map: &MapDef, mut n: usize) -> Option<(&'static str, Option<u32>)> {
    let mut o = 0;
    while o < map.objects.len() {
        let obj = &map.objects[o];
        if n == 0 {
            return Some((obj.symbol, Some(obj.offset)));
        }
        n -= 1;
        if n < obj.counters.len() {
            return Some((obj.counters[n].symbol, obj.counters[n].offset));
        }
        n -= obj.counters.len();
        o += 1;
    }
    None
}

const fn check_uniqueness(map: &MapDef) -> Result<(), MapError> {
    let mut i = 0;
    while let Some((sym_i, off_i)) = nth_symbol(map, i) {
        let mut j = 0;
        while j < i {
            if let Some((sym_j, off_j)) = nth_symbol(map, j) {
                if str_eq(sym_i, sym_j) {
                    return Err(MapError::DuplicateSymbol { symbol: sym_i });
                }
                if let (Some(a), Some(b)) = (off_i, off_j) {
                    if a == b {
                        return Err(MapError::DuplicateOffset {
                            first: sym_j,
                            second: sym_i,
                            offset: a,
                        });
                    }
                }
            }
            j += 1;
        }
        i += 1;
    }
    Ok(())
}

/// [`check_uniqueness`] in one pass: for each symbol in declaration order, the first earlier
/// entry with the same symbol or the same offset gives the same error the pairwise check gives
/// (a symbol before an offset at the same entry).
fn check_uniqueness_hashed(map: &MapDef) -> Result<(), MapError> {
    use foldhash::{HashMap, HashMapExt as _};
    let entries = map.objects.iter().flat_map(|obj| {
        std::iter::once((obj.symbol, Some(obj.offset)))
            .chain(obj.counters.iter().map(|c| (c.symbol, c.offset)))
    });
    let mut symbols: HashMap<&'static str, usize> = HashMap::new();
    let mut offsets: HashMap<u32, (usize, &'static str)> = HashMap::new();
    for (i, (symbol, offset)) in entries.enumerate() {
        let same_symbol = symbols.get(symbol).copied();
        let same_offset = offset.and_then(|o| offsets.get(&o).map(|&(j, first)| (j, first, o)));
        match (same_symbol, same_offset) {
            (Some(j), other) if other.is_none_or(|(k, _, _)| j <= k) => {
                return Err(MapError::DuplicateSymbol { symbol });
            }
            (_, Some((_, first, offset))) => {
                return Err(MapError::DuplicateOffset {
                    first,
                    second: symbol,
                    offset,
                });
            }
            _ => {}
        }
        symbols.insert(symbol, i);
        if let Some(o) = offset {
            offsets.insert(o, (i, symbol));
        }
    }
    Ok(())
}

/// Rounds `n` up to a multiple of [`REGION_ALIGN`], in `u64`.
const fn align(n: u64) -> u64 {
    (n + CACHE_LINE as u64 - 1) & !(CACHE_LINE as u64 - 1)
}

/// A fixed-capacity message buffer usable in `const`.
struct Msg {
    buf: [u8; 320],
    len: usize,
}

impl Msg {
    const fn new() -> Msg {
        Msg {
            buf: [0; 320],
            len: 0,
        }
    }

    const fn push(mut self, s: &str) -> Msg {
        let b = s.as_bytes();
        let mut i = 0;
        // Truncate on a character boundary so the buffer stays UTF-8.
        let room = self.buf.len() - self.len;
        let mut take = if b.len() < room { b.len() } else { room };
        while take > 0 && take < b.len() && (b[take] & 0xC0) == 0x80 {
            take -= 1;
        }
        while i < take {
            self.buf[self.len] = b[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn as_bytes(&self) -> &[u8] {
        self.buf.split_at(self.len).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::DetailLevel;
    use crate::winperf::*;

    const EN: &[Text] = &[Text {
        lang: "009",
        name: "n",
        help: "h",
    }];

    const fn ctr(symbol: &'static str, offset: u32, ty: u32) -> CounterDef {
        CounterDef {
            symbol,
            offset: Some(offset),
            texts: EN,
            detail: DetailLevel::Novice,
            default_scale: 0,
            counter_type: ty,
            text_len: 0,
            factor: None,
            unit: None,
            source: crate::map::Source::Stored,
            aggregate: None,
        }
    }
    const fn base(symbol: &'static str, ty: u32) -> CounterDef {
        CounterDef {
            symbol,
            offset: None,
            texts: &[],
            detail: DetailLevel::Novice,
            default_scale: 0,
            counter_type: ty,
            text_len: 0,
            factor: None,
            unit: None,
            source: crate::map::Source::Stored,
            aggregate: None,
        }
    }
    const fn obj(symbol: &'static str, counters: &'static [CounterDef]) -> ObjectDef {
        ObjectDef {
            symbol,
            offset: 0,
            texts: EN,
            detail: DetailLevel::Novice,
            default_counter: Some(0),
            instances: Instances::None,
            costly: false,
            total: false,
            packed: false,
            counters,
        }
    }

    /// [`validate`] of a one-object map, checked to give what [`validate_at_run_time`] gives.
    fn check(counters: &'static [CounterDef]) -> Result<(), MapError> {
        let objects: &'static [ObjectDef] = Box::leak(Box::new([obj("OBJ", counters)]));
        let map = MapDef {
            app: "Test",
            objects,
        };
        let found = validate(&map);
        assert_eq!(
            validate_at_run_time(&map),
            found,
            "the run-time check agrees"
        );
        found
    }

    #[test]
    fn the_run_time_check_reports_the_same_first_duplicate() {
        // Symbol and offset clashes in every order: the pairwise check reports, for the first
        // entry with an earlier twin, the earliest twin, a symbol before an offset.
        static SYMBOL_FIRST: [CounterDef; 3] = [
            ctr("A", 2, PERF_COUNTER_RAWCOUNT),
            ctr("B", 4, PERF_COUNTER_RAWCOUNT),
            ctr("A", 4, PERF_COUNTER_RAWCOUNT),
        ];
        static OFFSET_FIRST: [CounterDef; 3] = [
            ctr("A", 2, PERF_COUNTER_RAWCOUNT),
            ctr("B", 4, PERF_COUNTER_RAWCOUNT),
            ctr("B", 2, PERF_COUNTER_RAWCOUNT),
        ];
        static SAME_ENTRY: [CounterDef; 2] = [
            ctr("A", 2, PERF_COUNTER_RAWCOUNT),
            ctr("A", 2, PERF_COUNTER_RAWCOUNT),
        ];
        static THE_OBJECT: [CounterDef; 1] = [ctr("C", 0, PERF_COUNTER_RAWCOUNT)];
        for (counters, want) in [
            (&SYMBOL_FIRST[..], MapError::DuplicateSymbol { symbol: "A" }),
            (
                &OFFSET_FIRST[..],
                MapError::DuplicateOffset {
                    first: "A",
                    second: "B",
                    offset: 2,
                },
            ),
            (&SAME_ENTRY[..], MapError::DuplicateSymbol { symbol: "A" }),
            (
                &THE_OBJECT[..],
                MapError::DuplicateOffset {
                    first: "OBJ",
                    second: "C",
                    offset: 0,
                },
            ),
        ] {
            assert_eq!(check(counters), Err(want));
        }
    }

    #[test]
    fn a_good_map_passes() {
        static C: [CounterDef; 3] = [
            ctr("A", 2, PERF_COUNTER_COUNTER),
            ctr("B", 4, PERF_AVERAGE_TIMER),
            base("BB", PERF_AVERAGE_BASE),
        ];
        assert_eq!(check(&C), Ok(()));
    }

    #[test]
    fn missing_base_names_the_counter_and_both_types() {
        static C: [CounterDef; 2] = [
            ctr("LAT", 2, PERF_AVERAGE_TIMER),
            ctr("X", 4, PERF_COUNTER_RAWCOUNT),
        ];
        let err = check(&C).unwrap_err();
        assert_eq!(
            err,
            MapError::MissingBase {
                counter: "LAT",
                counter_type: PERF_AVERAGE_TIMER,
                base_type: PERF_AVERAGE_BASE
            }
        );
        assert_eq!(
            err.to_string(),
            "counter LAT (PERF_AVERAGE_TIMER) must be followed by its base counter \
             (PERF_AVERAGE_BASE)"
        );
    }

    #[test]
    fn wrong_base_type_is_a_missing_base() {
        static C: [CounterDef; 2] = [ctr("F", 2, PERF_RAW_FRACTION), base("B", PERF_AVERAGE_BASE)];
        assert!(matches!(
            check(&C),
            Err(MapError::MissingBase { counter: "F", .. })
        ));
    }

    #[test]
    fn orphan_base_and_odd_and_duplicate_offsets() {
        static ORPHAN: [CounterDef; 2] =
            [ctr("A", 2, PERF_COUNTER_RAWCOUNT), base("B", PERF_RAW_BASE)];
        assert_eq!(check(&ORPHAN), Err(MapError::OrphanBase { counter: "B" }));
        static ODD: [CounterDef; 1] = [ctr("A", 3, PERF_COUNTER_RAWCOUNT)];
        assert_eq!(
            check(&ODD),
            Err(MapError::OddOffset {
                symbol: "A",
                offset: 3
            })
        );
        static DUP: [CounterDef; 2] = [
            ctr("A", 2, PERF_COUNTER_RAWCOUNT),
            ctr("B", 2, PERF_COUNTER_RAWCOUNT),
        ];
        assert_eq!(
            check(&DUP),
            Err(MapError::DuplicateOffset {
                first: "A",
                second: "B",
                offset: 2
            })
        );
        static OBJ_DUP: [CounterDef; 1] = [ctr("A", 0, PERF_COUNTER_RAWCOUNT)];
        assert_eq!(
            check(&OBJ_DUP),
            Err(MapError::DuplicateOffset {
                first: "OBJ",
                second: "A",
                offset: 0
            })
        );
        static SYM_DUP: [CounterDef; 2] = [
            ctr("A", 2, PERF_COUNTER_RAWCOUNT),
            ctr("A", 4, PERF_COUNTER_RAWCOUNT),
        ];
        assert_eq!(
            check(&SYM_DUP),
            Err(MapError::DuplicateSymbol { symbol: "A" })
        );
    }

    #[test]
    fn languages_and_app_names() {
        static FR_ONLY: [CounterDef; 1] = [CounterDef {
            texts: &[Text {
                lang: "00C",
                name: "n",
                help: "h",
            }],
            ..ctr("A", 2, PERF_COUNTER_RAWCOUNT)
        }];
        assert_eq!(
            check(&FR_ONLY),
            Err(MapError::MissingEnglish { symbol: "A" })
        );
        static BAD_LANG: [CounterDef; 1] = [CounterDef {
            texts: &[
                Text {
                    lang: "009",
                    name: "n",
                    help: "h",
                },
                Text {
                    lang: "fr",
                    name: "n",
                    help: "h",
                },
            ],
            ..ctr("A", 2, PERF_COUNTER_RAWCOUNT)
        }];
        assert_eq!(
            check(&BAD_LANG),
            Err(MapError::BadLanguage {
                symbol: "A",
                lang: "fr"
            })
        );
        for bad in ["", "a/b", ".hidden", "with space", "a..b"] {
            assert_eq!(
                validate(&MapDef {
                    app: bad,
                    objects: &[]
                }),
                Err(MapError::BadAppName { app: bad })
            );
        }
    }

    /// Language ids compare without case, as the registry's `Perflib\<lang>` keys do, so a
    /// hand-written map cannot give French twice as "00C" and "00c" (the macro refused it; this
    /// validation let it pass).
    #[test]
    fn a_language_given_twice_in_another_case_is_refused() {
        const fn text(lang: &'static str) -> Text {
            Text {
                lang,
                name: "n",
                help: "h",
            }
        }
        static TWICE: [CounterDef; 1] = [CounterDef {
            texts: &[text("009"), text("00C"), text("00c")],
            ..ctr("A", 2, PERF_COUNTER_RAWCOUNT)
        }];
        assert_eq!(
            check(&TWICE),
            Err(MapError::BadLanguage {
                symbol: "A",
                lang: "00c"
            })
        );
    }

    /// Every detail level of [`DetailLevel`] has the name the macro parses, in the same order.
    #[test]
    fn detail_levels_have_the_rules_names() {
        let ours = [
            DetailLevel::Novice,
            DetailLevel::Advanced,
            DetailLevel::Expert,
            DetailLevel::Wizard,
        ]
        .map(|level| format!("{level:?}"));
        assert_eq!(ours, prfdata_rules::map::DETAIL_LEVELS);
    }

    /// A map's rule reads the same whether the macro or this validation finds it broken: the
    /// message carries the rule's own text from prfdata-rules.
    #[test]
    fn rule_errors_carry_the_rules_own_message() {
        let cases = [
            (
                MapError::BadAppName { app: "a b" },
                vec![Violation::AppName],
            ),
            (
                MapError::OddOffset {
                    symbol: "A",
                    offset: 3,
                },
                vec![Violation::OddOffset],
            ),
            (
                MapError::BadInstanceLimits { object: "O" },
                vec![Violation::InstanceMax, Violation::InstanceNameLen],
            ),
            (
                MapError::BadLanguage {
                    symbol: "A",
                    lang: "fr",
                },
                vec![Violation::LanguageId],
            ),
            (
                MapError::BadLanguage {
                    symbol: "A",
                    lang: "009",
                },
                vec![Violation::EnglishInLangBlock],
            ),
            (
                MapError::BadLanguage {
                    symbol: "A",
                    lang: "00c",
                },
                vec![Violation::DuplicateLanguage],
            ),
            (
                MapError::BadDefaultCounter { object: "O" },
                vec![Violation::DefaultNotACounter, Violation::DefaultIsBase],
            ),
        ];
        for (err, rules) in cases {
            let text = err.to_string();
            for rule in rules {
                assert!(text.contains(rule.message()), "{text:?} lacks {rule:?}");
            }
        }
    }

    #[test]
    fn text_counters_need_their_room_and_have_it() {
        static NO_ROOM: [CounterDef; 1] = [ctr("T", 2, PERF_COUNTER_TEXT)];
        assert_eq!(
            check(&NO_ROOM),
            Err(MapError::UnsupportedType {
                counter: "T",
                counter_type: PERF_COUNTER_TEXT
            })
        );
        static ROOM: [CounterDef; 1] = [CounterDef {
            text_len: 32,
            ..ctr("T", 2, PERF_COUNTER_TEXT)
        }];
        assert_eq!(check(&ROOM), Ok(()));
    }

    #[test]
    fn text_lengths_belong_to_text_counters_and_stay_below_a_name() {
        static LONG: [CounterDef; 1] = [CounterDef {
            text_len: MAX_INSTANCE_NAME + 1,
            ..ctr("T", 2, PERF_COUNTER_TEXT)
        }];
        assert_eq!(
            check(&LONG),
            Err(MapError::BadTextLength {
                counter: "T",
                text_len: MAX_INSTANCE_NAME + 1
            })
        );
        static NOT_TEXT: [CounterDef; 1] = [CounterDef {
            text_len: 4,
            ..ctr("R", 2, PERF_COUNTER_RAWCOUNT)
        }];
        assert!(matches!(
            check(&NOT_TEXT),
            Err(MapError::BadTextLength { counter: "R", .. })
        ));
    }

    #[test]
    fn the_size_check_agrees_with_the_layout_up_to_the_cap() {
        static C: [CounterDef; 2] = [
            ctr("A", 2, PERF_COUNTER_BULK_COUNT),
            ctr("B", 4, PERF_COUNTER_RAWCOUNT),
        ];
        let with = |max: u32, max_name_len: u32| -> &'static MapDef {
            let objects: &'static [ObjectDef] = Box::leak(Box::new([ObjectDef {
                instances: Instances::Max { max, max_name_len },
                ..obj("OBJ", &C)
            }]));
            Box::leak(Box::new(MapDef {
                app: "Test",
                objects,
            }))
        };
        // Just below and just above the cap: each 1024-unit slot takes 2112 bytes, each counter
        // block 24 padded to a 128-byte line (LAYOUT_VERSION 8), each live entry 4.
        let per_instance = 2112 + 128 + 4;
        let fits = (MAX_BLOCK_SIZE / per_instance) as u32 - 16;
        let map = with(fits, 1024);
        assert_eq!(validate(map), Ok(()));
        assert!(super::offsets::total_size(map) as u64 <= MAX_BLOCK_SIZE);
        match validate(with(fits + 32, 1024)) {
            Err(MapError::BlockTooLarge { size }) => assert!(size > MAX_BLOCK_SIZE),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn too_many_objects_are_refused() {
        let objects: &'static [ObjectDef] = Box::leak(
            (0..=MAX_OBJECTS)
                .map(|_| obj("OBJ", &[]))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        assert_eq!(
            validate(&MapDef {
                app: "Test",
                objects
            }),
            Err(MapError::TooManyObjects {
                count: MAX_OBJECTS as usize + 1
            })
        );
    }

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let long: &'static str = Box::leak("é".repeat(400).into_boxed_str());
        let msg = MapError::NoCounters { object: long }.to_string();
        assert!(msg.len() <= 320);
    }
}

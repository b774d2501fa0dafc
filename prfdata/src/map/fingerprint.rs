//! A map's fingerprint: one number that changes whenever the names a map installs change.
//!
//! The registry holds a map's names at First Counter + symbolic offset (the lodctr design
//! specification). An app rebuilt with another map (counters added, offsets moved, names changed)
//! but not reinstalled would have its counters labelled with the old names, or with another app's.
//! Install records this number in the app's `Performance` key and activation writes it in the
//! block's header; `activate` (feature `install`) and the provider compare the two.
//!
//! The number is FNV-1a (64 bits) over what reaches the registry and nothing else: the app name,
//! and for each object and named counter, in declaration order, its symbolic offset and its texts
//! (language, name, help), each string preceded by its length so that no two maps run together,
//! and a counter's scale factor (the Windows 95 stat servers' `PSTF_FACTOR_*`, which install
//! records beside the names in `Factors`), and its declared unit (which install records in
//! `Units`), hashed only when there is one.
//! Counter types, detail levels and instance limits are left out: changing them does not change
//! any name.

use super::{Factor, MapDef, Text};

/// FNV-1a's 64-bit offset basis (Fowler, Noll, Vo: <http://www.isthe.com/chongo/tech/comp/fnv/>).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a's 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// What precedes a declared unit: odd, so never an offset.
const UNIT_TAG: u32 = 3;

struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(FNV_PRIME);
        }
    }

    fn u32(&mut self, n: u32) {
        self.bytes(&n.to_le_bytes());
    }

    fn str(&mut self, s: &str) {
        // Below u32::MAX: map strings are validated far shorter; a longer one only hashes its
        // length modulo 2^32, still followed by every byte.
        self.u32(s.len() as u32);
        self.bytes(s.as_bytes());
    }

    fn texts(&mut self, texts: &[Text]) {
        self.u32(texts.len() as u32);
        for t in texts {
            self.str(t.lang);
            self.str(t.name);
            self.str(t.help);
        }
    }
}

/// The fingerprint of `map`'s names (see the [module docs](self)).
pub(crate) fn fingerprint(map: &MapDef) -> u64 {
    let mut h = Fnv(FNV_OFFSET);
    h.str(map.app);
    h.u32(map.objects.len() as u32);
    for obj in map.objects {
        h.u32(obj.offset);
        h.texts(obj.texts);
        let named = obj.counters.iter().filter(|c| c.offset.is_some());
        h.u32(named.clone().count() as u32);
        for ctr in named {
            h.u32(ctr.offset.unwrap_or(0));
            h.texts(ctr.texts);
            match ctr.factor {
                None => h.u32(0),
                Some(Factor::Multiply(n)) => {
                    h.u32(1);
                    h.u32(n);
                }
                Some(Factor::Divide(n)) => {
                    h.u32(2);
                    h.u32(n);
                }
            }
            // An odd tag cannot be read as the next offset (offsets are even), so a map
            // without units keeps the fingerprint it had before units existed.
            if let Some(unit) = ctr.unit {
                h.u32(UNIT_TAG);
                h.str(unit);
            }
        }
    }
    h.0
}

/// The highest symbolic offset `map` names: it needs the registry to hold names from First
/// Counter to First Counter + this (and help texts likewise).
pub(crate) fn highest_offset(map: &MapDef) -> u32 {
    map.objects
        .iter()
        .flat_map(|o| core::iter::once(o.offset).chain(o.counters.iter().filter_map(|c| c.offset)))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{CounterDef, DetailLevel, Instances, ObjectDef};

    const CTR: CounterDef = CounterDef {
        symbol: "C",
        offset: Some(2),
        texts: &[Text {
            lang: "009",
            name: "C",
            help: "c",
        }],
        detail: DetailLevel::Novice,
        default_scale: 0,
        counter_type: crate::winperf::PERF_COUNTER_RAWCOUNT,
        text_len: 0,
        factor: None,
        unit: None,
        source: crate::map::Source::Stored,
        aggregate: None,
    };
    const OBJ: ObjectDef = ObjectDef {
        symbol: "O",
        offset: 0,
        texts: &[],
        detail: DetailLevel::Novice,
        default_counter: None,
        instances: Instances::None,
        costly: false,
        total: false,
        packed: false,
        counters: &[CTR],
    };

    #[test]
    fn names_factors_and_units_change_the_fingerprint_and_types_do_not() {
        let base = MapDef {
            app: "A",
            objects: &[OBJ],
        };
        let moved = MapDef {
            app: "A",
            objects: &[ObjectDef {
                counters: &[CounterDef {
                    offset: Some(4),
                    ..CTR
                }],
                ..OBJ
            }],
        };
        let renamed = MapDef {
            app: "A",
            objects: &[ObjectDef {
                counters: &[CounterDef {
                    texts: &[Text {
                        lang: "009",
                        name: "D",
                        help: "c",
                    }],
                    ..CTR
                }],
                ..OBJ
            }],
        };
        let retyped = MapDef {
            app: "A",
            objects: &[ObjectDef {
                counters: &[CounterDef {
                    counter_type: crate::winperf::PERF_COUNTER_COUNTER,
                    ..CTR
                }],
                ..OBJ
            }],
        };
        assert_ne!(fingerprint(&base), fingerprint(&moved));
        assert_ne!(fingerprint(&base), fingerprint(&renamed));
        assert_ne!(
            fingerprint(&base),
            fingerprint(&MapDef { app: "B", ..base })
        );
        let scaled = MapDef {
            app: "A",
            objects: &[ObjectDef {
                counters: &[CounterDef {
                    factor: Some(crate::map::Factor::Divide(1024)),
                    ..CTR
                }],
                ..OBJ
            }],
        };
        assert_eq!(fingerprint(&base), fingerprint(&retyped));
        assert_ne!(
            fingerprint(&base),
            fingerprint(&scaled),
            "factors reach the registry"
        );
        let in_bytes = MapDef {
            app: "A",
            objects: &[ObjectDef {
                counters: &[CounterDef {
                    unit: Some("bytes"),
                    ..CTR
                }],
                ..OBJ
            }],
        };
        assert_ne!(
            fingerprint(&base),
            fingerprint(&in_bytes),
            "units reach the registry"
        );
        assert_eq!(highest_offset(&base), 2);
        assert_eq!(highest_offset(&moved), 4);
    }
}

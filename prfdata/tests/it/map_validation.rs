//! `activate` and `attach` check the map they are given, even one whose `PerfDataMap`
//! implementation was written by hand (which takes `unsafe`): its app name becomes a path, its
//! limits the block's size.

use prfdata::map::{
    CounterDef, DetailLevel, Instances, MapDef, MapError, ObjectDef, PerfDataMap, Text,
};
use prfdata::Error;

const EN: &[Text] = &[Text {
    lang: "009",
    name: "n",
    help: "h",
}];
const RAW: CounterDef = CounterDef {
    symbol: "C",
    offset: Some(2),
    texts: EN,
    detail: DetailLevel::Novice,
    default_scale: 0,
    counter_type: prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT,
    text_len: 0,
    factor: None,
    unit: None,
    source: prfdata::map::Source::Stored,
    aggregate: None,
};
const fn object(instances: Instances, counters: &'static [CounterDef]) -> ObjectDef {
    ObjectDef {
        symbol: "O",
        offset: 0,
        texts: EN,
        detail: DetailLevel::Novice,
        default_counter: None,
        instances,
        costly: false,
        total: false,
        packed: false,
        counters,
    }
}

/// Where the escaping map's block would land: outside the folder it is activated in.
const ESCAPE_DIR: &str = "/tmp/prfdata-map-validation-escape";

/// An app name that is an absolute path: `dir.join("<app>.blk")` is then that path.
struct Escape;
// SAFETY: deliberately broken (its DEF does not pass `validate`), to show that prfdata checks.
unsafe impl PerfDataMap for Escape {
    const DEF: &'static MapDef = &MapDef {
        app: "/tmp/prfdata-map-validation-escape/Escaped",
        objects: &[object(Instances::None, &[RAW])],
    };
}

/// Limits that pass one by one but make a block of more than 2 GiB.
struct Huge;
// SAFETY: deliberately broken, as `Escape`.
unsafe impl PerfDataMap for Huge {
    const DEF: &'static MapDef = &MapDef {
        app: "Huge",
        objects: &[object(
            Instances::Max {
                max: 1 << 20,
                max_name_len: 1024,
            },
            &[RAW],
        )],
    };
}

/// A text counter whose room in bytes does not fit in a `u32`.
struct HugeText;
// SAFETY: deliberately broken, as `Escape`.
unsafe impl PerfDataMap for HugeText {
    const DEF: &'static MapDef = &MapDef {
        app: "HugeText",
        objects: &[object(
            Instances::None,
            &[CounterDef {
                counter_type: prfdata_wire::winperf::PERF_COUNTER_TEXT,
                text_len: u32::MAX,
                ..RAW
            }],
        )],
    };
}

#[test]
fn an_app_name_that_is_a_path_is_refused_before_any_file_is_made() {
    let dir = tempfile::tempdir().unwrap();
    // Make every folder the escape needs, so that only the check can stop it (without it the
    // block would be published at ESCAPE_DIR/Escaped.blk).
    std::fs::create_dir_all(format!("{ESCAPE_DIR}/tmp/prfdata-map-validation-escape")).unwrap();
    let escaped = std::path::Path::new(ESCAPE_DIR).join("Escaped.blk");
    let _ = std::fs::remove_file(&escaped);

    let err = prfdata::PrfData::<Escape>::activate_in(dir.path()).unwrap_err();
    let published = escaped.exists();
    let _ = std::fs::remove_dir_all(ESCAPE_DIR);
    assert!(!published, "a block was published outside the folder");
    match err {
        Error::Map(MapError::BadAppName { app }) => assert_eq!(app, Escape::DEF.app),
        other => panic!("expected Error::Map(BadAppName), got {other:?}"),
    }
    assert!(matches!(
        prfdata::PrfData::<Escape>::attach_in(dir.path()),
        Err(Error::Map(MapError::BadAppName { .. }))
    ));
}

#[test]
fn a_map_whose_block_would_be_too_large_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    match prfdata::PrfData::<Huge>::activate_in(dir.path()).unwrap_err() {
        Error::Map(MapError::BlockTooLarge { size }) => {
            assert!(size > prfdata::layout::MAX_BLOCK_SIZE)
        }
        other => panic!("expected Error::Map(BlockTooLarge), got {other:?}"),
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_text_counter_without_a_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = prfdata::PrfData::<HugeText>::activate_in(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Map(MapError::BadTextLength {
                counter: "C",
                text_len: u32::MAX
            })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("counter C"), "{err}");
}

/// An app name with `..`: before, it passed the map's validation, so `activate_in` made
/// `Dot..Dot.blk` while `activate` refused the same map (`untrusted::check_name`); the map
/// macro compiled it. Now the validation refuses it everywhere.
struct DotDot;
// SAFETY: deliberately broken, as `Escape`.
unsafe impl PerfDataMap for DotDot {
    const DEF: &'static MapDef = &MapDef {
        app: "Dot..Dot",
        objects: &[object(Instances::None, &[RAW])],
    };
}

#[test]
fn an_app_name_with_two_dots_is_refused_by_activate_in_too() {
    let dir = tempfile::tempdir().unwrap();
    let err = prfdata::PrfData::<DotDot>::activate_in(dir.path()).unwrap_err();
    assert!(
        matches!(err, Error::Map(MapError::BadAppName { app: "Dot..Dot" })),
        "{err:?}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A unit that is not one (`kib`: a displayed unit, not the raw value's), and one declared for
/// a time, whose type gives its unit.
struct BadUnits<const TIME: bool>;
const KIB: &[CounterDef] = &[CounterDef {
    unit: Some("kib"),
    ..RAW
}];
const TIMED: &[CounterDef] = &[CounterDef {
    counter_type: prfdata_wire::winperf::PERF_100NSEC_TIMER,
    unit: Some("seconds"),
    ..RAW
}];
// SAFETY: deliberately broken, as `Escape`.
unsafe impl<const TIME: bool> PerfDataMap for BadUnits<TIME> {
    const DEF: &'static MapDef = &MapDef {
        app: "BadUnits",
        objects: &[object(Instances::None, if TIME { TIMED } else { KIB })],
    };
}

#[test]
fn a_unit_that_is_not_one_or_is_declared_for_a_time_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for err in [
        prfdata::PrfData::<BadUnits<false>>::activate_in(dir.path()).unwrap_err(),
        prfdata::PrfData::<BadUnits<true>>::activate_in(dir.path()).unwrap_err(),
    ] {
        assert!(
            matches!(err, Error::Map(MapError::BadUnit { counter: "C" })),
            "{err:?}"
        );
        assert!(err.to_string().contains("`bytes` or `seconds`"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

//! Names registered at run time (`register_runtime_names`): above the installed names, the
//! range extended in place or moved as lodctr would, every language, and removed again.

use prfdata_registry::install::{
    install_in, CounterNames, CounterSet, InstallOptions, ObjectNames, Text,
};
use prfdata_registry::{
    first_counter_help, perflib, register_runtime_names, service, FileRegistry, LodctrError,
    Registry,
};

fn set(app: &str) -> CounterSet {
    CounterSet {
        app: app.into(),
        objects: vec![ObjectNames {
            symbol: "OBJ".into(),
            offset: 0,
            texts: vec![
                Text::new("009", format!("{app} Obj"), "o"),
                Text::new("00C", format!("{app} Objet"), "o"),
            ],
            counters: vec![CounterNames {
                symbol: "CTR".into(),
                offset: 2,
                texts: vec![Text::new("009", format!("{app} Ctr"), "c")],
                factor: None,
                unit: None,
            }],
        }],
        fingerprint: Some(1),
    }
}

fn install(reg: &FileRegistry, dir: &std::path::Path, app: &str) -> u32 {
    let opts = InstallOptions {
        library: "/x.so".into(),
        ini_dir: dir.to_path_buf(),
        replace: false,
    };
    install_in(reg, &set(app), &opts).unwrap().first_counter
}

fn runtime(offset: u32, name: &str) -> CounterNames {
    CounterNames {
        symbol: format!("DYN_{offset}"),
        offset,
        texts: vec![
            Text::new("009", name, "h"),
            Text::new("00C", format!("{name} fr"), "h"),
        ],
        factor: None,
        unit: None,
    }
}

fn perf(reg: &FileRegistry, app: &str) -> prfdata_registry::PerformanceService {
    service::read_service(&reg.snapshot().unwrap(), app)
        .unwrap()
        .unwrap()
}

#[test]
fn the_last_app_extends_in_place_and_shrinks_back() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("reg")).unwrap();
    let first = install(&reg, dir.path(), "Rt");
    let range = register_runtime_names(
        &reg,
        "Rt",
        2,
        &[runtime(4, "Dyn A"), runtime(6, "Dyn B")],
        Some(9),
    )
    .unwrap();
    assert_eq!(
        (range.first_counter, range.last_counter),
        (first, first + 6)
    );
    let en = perflib::counter_text(&reg.snapshot().unwrap(), "009").unwrap();
    assert_eq!(en.counter[&(first + 4)], "Dyn A");
    assert_eq!(en.help[&(first + 1 + 6)], "h");
    assert_eq!(en.counter[&first], "Rt Obj", "installed names kept");
    let fr = perflib::counter_text(&reg.snapshot().unwrap(), "00C").unwrap();
    assert_eq!(fr.counter[&(first + 6)], "Dyn B fr");
    assert_eq!(perf(&reg, "Rt").dynamic_fingerprint, Some(9));
    let (last, _) = perflib::last_counter_help(&reg.snapshot().unwrap()).unwrap();
    assert_eq!(last, first + 6, "Perflib's Last Counter follows");

    // One removed, then all.
    register_runtime_names(&reg, "Rt", 2, &[runtime(6, "Dyn B")], Some(10)).unwrap();
    let en = perflib::counter_text(&reg.snapshot().unwrap(), "009").unwrap();
    assert!(!en.counter.contains_key(&(first + 4)));
    assert_eq!(en.counter[&(first + 6)], "Dyn B");
    let range = register_runtime_names(&reg, "Rt", 2, &[], None).unwrap();
    assert_eq!(range.last_counter, first + 2, "back to the installed range");
    assert_eq!(perf(&reg, "Rt").dynamic_fingerprint, None);
    let en = perflib::counter_text(&reg.snapshot().unwrap(), "009").unwrap();
    assert!(!en.counter.contains_key(&(first + 6)));
    assert_eq!(en.counter[&(first + 2)], "Rt Ctr");
}

#[test]
fn an_app_followed_by_another_moves_after_it_with_its_installed_names() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("reg")).unwrap();
    let first = install(&reg, dir.path(), "Rt");
    let other = install(&reg, dir.path(), "Other");
    let range = register_runtime_names(&reg, "Rt", 2, &[runtime(4, "Dyn A")], Some(9)).unwrap();
    assert!(range.first_counter > other + 2, "{range:?}");
    assert_eq!(
        first_counter_help(&reg, "Rt").unwrap(),
        (range.first_counter, range.first_help)
    );
    let en = perflib::counter_text(&reg.snapshot().unwrap(), "009").unwrap();
    assert_eq!(en.counter[&range.first_counter], "Rt Obj");
    assert_eq!(en.counter[&(range.first_counter + 4)], "Dyn A");
    assert!(!en.counter.contains_key(&first), "the old indexes are free");
    assert_eq!(en.counter[&other], "Other Obj", "the other app untouched");
    let fr = perflib::counter_text(&reg.snapshot().unwrap(), "00C").unwrap();
    assert_eq!(
        fr.counter[&range.first_counter], "Rt Objet",
        "every language moves"
    );
}

#[test]
fn run_time_names_are_refused_for_an_app_not_installed_or_below_its_names() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("reg")).unwrap();
    assert!(matches!(
        register_runtime_names(&reg, "Nope", 2, &[runtime(4, "A")], None),
        Err(LodctrError::NotLoaded { .. })
    ));
    install(&reg, dir.path(), "Rt");
    let before = std::fs::read(reg.store_path()).unwrap();
    for offset in [2, 5] {
        let err = register_runtime_names(&reg, "Rt", 2, &[runtime(offset, "A")], None).unwrap_err();
        assert!(matches!(err, LodctrError::BadRuntimeOffset { .. }), "{err}");
    }
    assert_eq!(
        std::fs::read(reg.store_path()).unwrap(),
        before,
        "nothing written"
    );
}

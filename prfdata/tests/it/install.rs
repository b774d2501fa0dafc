//! Install / Uninstall from a map: the .INI and .h, lodctr, the provider's registration.

use crate::common;
use common::testmap;
use prfdata::install::{install_in, uninstall_in, InstallError, InstallOptions};
use prfdata_registry::{
    first_counter_help, lodctr, paths, perflib, FileRegistry, LodctrError, LodctrOptions, Registry,
    Value,
};

fn options(dir: &std::path::Path) -> InstallOptions {
    InstallOptions {
        library: dir.join("libprfdata_provider.so"),
        ini_dir: dir.join("counters"),
        replace: false,
    }
}

#[test]
fn install_writes_names_files_and_provider_and_uninstall_restores_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("reg")).unwrap();
    let before = std::fs::read(reg.store_path()).unwrap();

    let range = install_in(&reg, &testmap::MAP, &options(dir.path())).unwrap();
    assert_eq!((range.first_counter, range.first_help), (1848, 1849));
    assert_eq!(
        (range.last_counter, range.last_help),
        (1848 + 16, 1849 + 16)
    );
    assert_eq!(
        first_counter_help(&reg, "PrfDataTest").unwrap(),
        (1848, 1849)
    );

    let hive = reg.snapshot().unwrap();
    let perf = paths::performance("PrfDataTest");
    let sz = |name: &str| hive.value(&perf, name).unwrap().cloned();
    assert_eq!(
        sz("Library"),
        Some(Value::Sz(
            dir.path()
                .join("libprfdata_provider.so")
                .to_string_lossy()
                .into()
        ))
    );
    assert_eq!(sz("Open"), Some(Value::Sz("OpenPerformanceData".into())));
    assert_eq!(
        sz("Collect"),
        Some(Value::Sz("CollectPerformanceData".into()))
    );
    assert_eq!(sz("Close"), Some(Value::Sz("ClosePerformanceData".into())));
    assert_eq!(
        hive.value(&paths::linkage("PrfDataTest"), "Export")
            .unwrap()
            .cloned(),
        Some(Value::MultiSz(vec!["PrfDataTest".into()]))
    );

    // Every object and named counter has its name at First Counter + offset, help at First Help
    // + offset; base counters have none.
    let text = perflib::counter_text(&hive, "009").unwrap();
    for obj in testmap::MAP.objects {
        assert_eq!(text.counter[&(1848 + obj.offset)], obj.texts[0].name);
        assert_eq!(text.help[&(1849 + obj.offset)], obj.texts[0].help);
        for ctr in obj.counters {
            let off = ctr.offset.unwrap();
            assert_eq!(text.counter[&(1848 + off)], ctr.texts[0].name);
        }
    }

    // The generated files are there to read and load by hand.
    let ini = std::fs::read_to_string(dir.path().join("counters/PrfDataTest.ini")).unwrap();
    assert!(ini.contains("symbolfile=PrfDataTest.h"));
    let h = std::fs::read_to_string(dir.path().join("counters/PrfDataTest.h")).unwrap();
    assert!(h.contains("#define ITEMS 8"));

    // Installing again is refused, unless replacing.
    match install_in(&reg, &testmap::MAP, &options(dir.path())).unwrap_err() {
        InstallError::Lodctr(LodctrError::AlreadyLoaded { .. }) => {}
        other => panic!("{other}"),
    }
    let again = install_in(
        &reg,
        &testmap::MAP,
        &InstallOptions {
            replace: true,
            ..options(dir.path())
        },
    );
    assert_eq!(again.unwrap().first_counter, 1848);

    uninstall_in(&reg, &testmap::MAP).unwrap();
    assert_eq!(
        std::fs::read(reg.store_path()).unwrap(),
        before,
        "uninstall restores the store"
    );
    assert!(matches!(
        uninstall_in(&reg, &testmap::MAP),
        Err(InstallError::Lodctr(LodctrError::NotLoaded { .. }))
    ));

    // The generated INI loads by hand with lodctr to the same indexes.
    let by_hand = lodctr(
        &reg,
        dir.path().join("counters/PrfDataTest.ini"),
        &LodctrOptions::default(),
    );
    assert_eq!(by_hand.unwrap().first_counter, 1848);
}

//! A service's Performance and Linkage values: register / unregister, lodctr writing them in
//! the same update (what Install will use), and the readers providers and collectors use.

use prfdata_registry::{
    first_counter_help, lodctr, paths, performance_services, register_service, unlodctr,
    unregister_service, update, FileRegistry, LodctrOptions, Registry, RegistryError,
    ServiceConfig, Value,
};

fn config() -> ServiceConfig {
    ServiceConfig {
        library: "/opt/app/libapp_perf.so".into(),
        open: "OpenPerformanceData".into(),
        collect: "CollectPerformanceData".into(),
        close: "ClosePerformanceData".into(),
        open_timeout_ms: 5000,
        collect_timeout_ms: 2000,
        export: vec!["AppCounters".into(), "second".into()],
    }
}

#[test]
fn register_then_unregister_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    let before = std::fs::read_to_string(reg.store_path()).unwrap();
    register_service(&reg, "App", &config()).unwrap();

    let services = performance_services(&reg).unwrap();
    assert_eq!(services.len(), 1);
    let s = &services[0];
    assert_eq!(s.name, "App");
    assert_eq!(s.library.as_deref(), Some("/opt/app/libapp_perf.so"));
    assert_eq!(s.open.as_deref(), Some("OpenPerformanceData"));
    assert_eq!(s.collect.as_deref(), Some("CollectPerformanceData"));
    assert_eq!(s.close.as_deref(), Some("ClosePerformanceData"));
    assert_eq!(
        (s.open_timeout_ms, s.collect_timeout_ms),
        (Some(5000), Some(2000))
    );
    assert_eq!(s.export, ["AppCounters", "second"]);
    assert!(!s.disabled);
    assert_eq!(s.first_counter, None);

    unregister_service(&reg, "App").unwrap();
    assert_eq!(std::fs::read_to_string(reg.store_path()).unwrap(), before);
}

#[test]
fn lodctr_with_a_service_writes_everything_in_one_update_and_unloads_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path().join("reg")).unwrap();
    let before = std::fs::read_to_string(reg.store_path()).unwrap();
    std::fs::write(
        dir.path().join("app.h"),
        "#define APP_OBJECT 0\n#define APP_COUNT 2\n",
    )
    .unwrap();
    let ini = dir.path().join("app.ini");
    std::fs::write(
        &ini,
        "[info]\ndrivername=App\nsymbolfile=app.h\n[languages]\n009=\n[text]\n\
         APP_OBJECT_009_NAME=App\nAPP_OBJECT_009_HELP=The app\nAPP_COUNT_009_NAME=Count\n",
    )
    .unwrap();
    let opts = LodctrOptions {
        replace: false,
        service: Some(config()),
    };
    lodctr(&reg, &ini, &opts).unwrap();
    assert_eq!(first_counter_help(&reg, "App").unwrap(), (1848, 1849));
    let s = performance_services(&reg).unwrap().remove(0);
    assert_eq!(
        (s.first_counter, s.last_counter, s.first_help, s.last_help),
        (Some(1848), Some(1850), Some(1849), Some(1851))
    );
    assert_eq!(s.library.as_deref(), Some("/opt/app/libapp_perf.so"));

    // unlodctr removes only the ranges; the provider stays registered until unregistered.
    unlodctr(&reg, "App").unwrap();
    let s = performance_services(&reg).unwrap().remove(0);
    assert_eq!(s.first_counter, None);
    assert!(s.library.is_some());
    unregister_service(&reg, "App").unwrap();
    assert_eq!(std::fs::read_to_string(reg.store_path()).unwrap(), before);
}

#[test]
fn values_of_the_wrong_type_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let reg = FileRegistry::open(dir.path()).unwrap();
    update(&reg, |hive| {
        let perf = paths::performance("App");
        hive.set_value(&perf, "First Counter", Value::Sz("1848".into()))?;
        hive.set_value(&perf, "First Help", Value::Dword(1849))
    })
    .unwrap();
    assert!(matches!(
        first_counter_help(&reg, "App"),
        Err(RegistryError::WrongType { .. })
    ));
    assert!(matches!(
        performance_services(&reg),
        Err(RegistryError::WrongType { .. })
    ));
    update(&reg, |hive| {
        hive.set_value(
            &paths::perflib_language("009"),
            "Counter",
            Value::MultiSz(vec!["x".into(), "Name".into()]),
        )
    })
    .unwrap();
    let err = prfdata_registry::perflib::read_counter_text(&reg, "009").unwrap_err();
    assert!(
        matches!(err, RegistryError::BadTextTable { entry: 0, .. }),
        "{err:?}"
    );
    let _ = reg.snapshot().unwrap();
}

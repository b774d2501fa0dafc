//! The LoadPerf.DLL pair, `load_perf_counter_text_strings` / `unload_perf_counter_text_strings`:
//! command lines as lodctr / unlodctr take them, against the default registry
//! (`PRFDATA_REGISTRY`). One test only, since it sets a process-wide variable.

use prfdata_registry::{
    first_counter_help, load_perf_counter_text_strings, unload_perf_counter_text_strings,
    FileRegistry, LodctrError, Registry,
};

#[test]
fn command_lines_load_save_restore_and_unload() {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("PRFDATA_REGISTRY", dir.path().join("reg"));
    std::fs::write(
        dir.path().join("devdef.h"),
        "#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("my driver.ini"),
        "[info]\ndrivername=DriverName\nsymbolfile=devdef.h\n[languages]\n009=English\n[text]\n\
         OBJECT_1_009_NAME=Device Name\nDEVICE_COUNTER_1_009_NAME=Counter A\n",
    )
    .unwrap();
    let ini = dir.path().join("my driver.ini");
    let saved = dir.path().join("saved settings.toml");

    let reg = FileRegistry::open_default().unwrap();
    let initial = reg.snapshot().unwrap();

    load_perf_counter_text_strings(&format!("lodctr \"{}\"", ini.display()), true).unwrap();
    assert_eq!(
        first_counter_help(&reg, "DriverName").unwrap(),
        (1848, 1849)
    );
    let loaded = reg.snapshot().unwrap();

    let err =
        load_perf_counter_text_strings(&format!("lodctr \"{}\"", ini.display()), true).unwrap_err();
    assert!(matches!(err, LodctrError::AlreadyLoaded { .. }), "{err:?}");
    load_perf_counter_text_strings(&format!("lodctr --replace \"{}\"", ini.display()), true)
        .unwrap();
    assert_eq!(reg.snapshot().unwrap(), loaded);

    load_perf_counter_text_strings(&format!("lodctr \"/S:{}\"", saved.display()), true).unwrap();
    unload_perf_counter_text_strings("unlodctr DriverName", true).unwrap();
    assert_eq!(reg.snapshot().unwrap(), initial);
    load_perf_counter_text_strings(&format!("lodctr \"/R:{}\"", saved.display()), true).unwrap();
    assert_eq!(reg.snapshot().unwrap(), loaded);

    assert!(matches!(
        load_perf_counter_text_strings("lodctr", true),
        Err(LodctrError::Usage(_))
    ));
    assert!(matches!(
        unload_perf_counter_text_strings("unlodctr", true),
        Err(LodctrError::Usage(_))
    ));
    unload_perf_counter_text_strings("unlodctr DriverName", true).unwrap();
    assert!(matches!(
        unload_perf_counter_text_strings("unlodctr DriverName", true),
        Err(LodctrError::NotLoaded { .. })
    ));
}

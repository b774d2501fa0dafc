//! The provider never labels counters with names that are not theirs: a block laid out from
//! another map than the one installed (the app rebuilt and not reinstalled, or reinstalled from
//! an older build) gets no data, while it does once the names fit again.

use std::sync::atomic::Ordering::Relaxed;

use crate::common;
use common::{env, parse, serial, Provider, ERROR_SUCCESS};
use prfdata::install::{install_in, uninstall_in, InstallOptions};
use prfdata_registry::FileRegistry;

prfdata::prfdata_map! {
    /// The build that runs.
    pub mod fit_new {
        app: "ProvTestFit",
        object SERVER = 0 {
            name: "Fit Server", help: "s", detail: Novice, default: none, instances: none, costly: false,
            counters {
                REQUESTS = 2: RawCount { name: "Requests", help: "r", detail: Novice, scale: 0 },
                RETRIES = 4: RawCount { name: "Retries", help: "t", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// An older build: RETRIES did not exist, and ERRORS had the offset RETRIES has now.
    pub mod fit_old {
        app: "ProvTestFit",
        object SERVER = 0 {
            name: "Fit Server", help: "s", detail: Novice, default: none, instances: none, costly: false,
            counters {
                REQUESTS = 2: RawCount { name: "Requests", help: "r", detail: Novice, scale: 0 },
                ERRORS = 4: RawCount { name: "Errors", help: "e", detail: Novice, scale: 0 },
            }
        }
    }
}

fn install(map: &prfdata::map::MapDef) -> u32 {
    let reg = FileRegistry::open(env().root.join("registry")).unwrap();
    let opts = InstallOptions {
        library: common::library_path(),
        ini_dir: env().root.join("ini"),
        replace: true,
    };
    install_in(&reg, map, &opts).unwrap().first_counter
}

/// The objects Collect returns for the app, as (title index, first counter's value).
fn collect(p: &Provider) -> Vec<(u32, i64)> {
    assert_eq!(p.open(&["ProvTestFit"]), ERROR_SUCCESS);
    let (out, data) = p.collect("Global");
    assert_eq!(p.close(), ERROR_SUCCESS);
    parse(&data, out.objects)
        .iter()
        .map(|o| (o.header.object_name_title_index.get(), o.value(0, 0)))
        .collect()
}

#[test]
fn a_block_of_another_map_than_the_installed_one_gets_no_data() {
    let _s = serial();
    let first = install(&fit_new::MAP);
    let prf = fit_new::PrfData::activate().unwrap();
    prf.get_ctr32(fit_new::REQUESTS, ()).store(41, Relaxed);
    let p = Provider::load();
    assert_eq!(collect(&p), [(first, 41)], "installed and running: served");

    // The older build's names are installed again (same range, another fingerprint): "Errors"
    // would label the block's Retries.
    install(&fit_old::MAP);
    assert_eq!(collect(&p), [], "an old map's names are never used");

    // A hand-run lodctr of a smaller .INI (no fingerprint recorded, a shorter range).
    let reg = FileRegistry::open(env().root.join("registry")).unwrap();
    uninstall_in(&reg, &fit_old::MAP).unwrap();
    let ini_dir = env().root.join("ini-small");
    std::fs::create_dir_all(&ini_dir).unwrap();
    std::fs::write(
        ini_dir.join("small.h"),
        "#define SERVER 0\n#define REQUESTS 2\n",
    )
    .unwrap();
    std::fs::write(
        ini_dir.join("small.ini"),
        "[info]\ndrivername=ProvTestFit\nsymbolfile=small.h\n[languages]\n009=English\n[text]\n\
         SERVER_009_NAME=Fit Server\nSERVER_009_HELP=s\nREQUESTS_009_NAME=Requests\nREQUESTS_009_HELP=r\n",
    )
    .unwrap();
    let mut service = prfdata_registry::ServiceConfig::new(
        common::library_path().to_string_lossy(),
        "OpenPerformanceData",
        "CollectPerformanceData",
        "ClosePerformanceData",
    );
    service.export = vec!["ProvTestFit".into()];
    prfdata_registry::lodctr(
        &reg,
        ini_dir.join("small.ini"),
        &prfdata_registry::LodctrOptions {
            replace: false,
            service: Some(service),
        },
    )
    .unwrap();
    assert_eq!(collect(&p), [], "a range too short for the block");

    // Reinstalled from this build: served again, the value kept.
    uninstall_in(&reg, &fit_new::MAP).unwrap();
    let first = install(&fit_new::MAP);
    assert_eq!(collect(&p), [(first, 41)]);

    drop(prf);
    uninstall_in(&reg, &fit_new::MAP).unwrap();
}

prfdata::prfdata_map! {
    /// Another app, installed where `fit_new`'s names were.
    pub mod squatter {
        app: "ProvTestSquatter",
        object OTHER = 0 {
            name: "Squatter", help: "s", detail: Novice, default: none, instances: none, costly: false,
            counters {
                A = 2: RawCount { name: "Squatter A", help: "a", detail: Novice, scale: 0 },
                B = 4: RawCount { name: "Squatter B", help: "b", detail: Novice, scale: 0 },
            }
        }
    }
}

/// Regression: the provider read First Counter at Open only, so an app reinstalled while the
/// library stayed open (its old indexes now another app's) had its counters labelled with the
/// other app's names until the next Open.
#[test]
fn names_moved_while_open_are_followed_never_the_old_indexes() {
    let _s = serial();
    let reg = FileRegistry::open(env().root.join("registry")).unwrap();
    let old_first = install(&fit_new::MAP);
    let prf = fit_new::PrfData::activate().unwrap();
    prf.get_ctr32(fit_new::REQUESTS, ()).store(8, Relaxed);
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestFit"]), ERROR_SUCCESS);
    let titles = |p: &Provider| {
        let (out, data) = p.collect("Global");
        parse(&data, out.objects)
            .iter()
            .map(|o| (o.header.object_name_title_index.get(), o.value(0, 0)))
            .collect::<Vec<_>>()
    };
    assert_eq!(titles(&p), [(old_first, 8)]);

    // Reinstalled while the library stays open: another app takes the old indexes.
    uninstall_in(&reg, &fit_new::MAP).unwrap();
    let squatter_first = install(&squatter::MAP);
    assert_eq!(
        squatter_first, old_first,
        "the other app has the old indexes"
    );
    let new_first = install(&fit_new::MAP);
    assert_ne!(new_first, old_first);
    assert_eq!(titles(&p), [(new_first, 8)], "labelled from the new range");

    assert_eq!(p.close(), ERROR_SUCCESS);
    drop(prf);
    uninstall_in(&reg, &fit_new::MAP).unwrap();
    uninstall_in(&reg, &squatter::MAP).unwrap();
}

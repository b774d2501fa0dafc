//! Run-time objects served by the provider: their names registered while the provider is open,
//! the app's range moved (another app was installed after it), and both the installed and the
//! run-time objects labelled from the new First Counter without another Open.

use std::sync::atomic::Ordering::Relaxed;

use crate::common;
use common::{env, parse, serial, Provider, ERROR_SUCCESS};
use prfdata::dynamic::{CounterSpec, ObjectSpec};
use prfdata::install::{install_in, uninstall_in, InstallOptions};
use prfdata_registry::{first_counter_help, FileRegistry};
use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;

prfdata::prfdata_map! {
    pub mod moving {
        app: "ProvTestMoving",
        object BASE = 0 {
            name: "Moving Base", help: "b", detail: Novice, default: none, instances: none, costly: false,
            counters {
                TICKS = 2: RawCount { name: "Ticks", help: "t", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    pub mod after {
        app: "ProvTestAfter",
        object OTHER = 0 {
            name: "After", help: "a", detail: Novice, default: none, instances: none, costly: false,
            counters {
                C = 2: RawCount { name: "After C", help: "c", detail: Novice, scale: 0 },
            }
        }
    }
}

/// (object title, first value) of each object Collect returns.
fn objects(p: &Provider) -> Vec<(u32, i64)> {
    let (out, data) = p.collect("Global");
    parse(&data, out.objects)
        .iter()
        .map(|o| (o.header.object_name_title_index.get(), o.value(0, 0)))
        .collect()
}

/// What Collect returns once it shows `expected`, or after two seconds: names and run-time
/// objects nobody announces to an open library are seen within `apps::FRESHNESS` (10 ms).
fn objects_soon(p: &Provider, expected: &[(u32, i64)]) -> Vec<(u32, i64)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let seen = objects(p);
        if seen == expected || std::time::Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Closes the library when the test ends, also when it fails, so that a failure does not
/// leave apps open for the next test of this process.
struct Closing<'a>(&'a Provider);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[test]
fn run_time_names_that_move_the_range_are_followed_without_another_open() {
    let _s = serial();
    let reg = FileRegistry::open(env().root.join("registry")).unwrap();
    let opts = InstallOptions {
        library: common::library_path(),
        ini_dir: env().root.join("ini"),
        replace: true,
    };
    let old_first = install_in(&reg, &moving::MAP, &opts).unwrap().first_counter;
    // Another app right after it: the run-time names cannot extend the range in place.
    let after_first = install_in(&reg, &after::MAP, &opts).unwrap().first_counter;

    let prf = moving::PrfData::activate().unwrap();
    prf.get_ctr32(moving::TICKS, ()).store(3, Relaxed);
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestMoving"]), ERROR_SUCCESS);
    let closing = Closing(&p);
    assert_eq!(objects(&p), [(old_first, 3)]);

    let plugin = prf
        .dynamic()
        .add_object(&ObjectSpec::new("Moving Plugin", "p"))
        .unwrap();
    let calls = prf
        .dynamic()
        .add_counter(
            plugin,
            &CounterSpec::new("Plugin Calls", "c", PERF_COUNTER_RAWCOUNT),
        )
        .unwrap();
    calls.store(9).unwrap();
    let (new_first, _) = first_counter_help(&reg, "ProvTestMoving").unwrap();
    assert_ne!(new_first, old_first, "the range moved past the other app's");

    // Both parts labelled from the new range (the run-time part comes first).
    let both = [(new_first + plugin.offset(), 9), (new_first, 3)];
    assert_eq!(objects_soon(&p, &both), both);
    let names = prfdata_registry::perflib::read_counter_text(&reg, "009").unwrap();
    assert_eq!(names.counter[&new_first], "Moving Base");
    assert_eq!(names.counter[&(new_first + calls.offset())], "Plugin Calls");
    assert_eq!(
        names.counter[&(after_first + 2)],
        "After C",
        "the other app untouched"
    );
    assert!(
        !names.counter.contains_key(&old_first),
        "the old range is free again"
    );
    // The app's .INI and .h say what the registry holds.
    let ini_path = env().root.join("ini").join("ProvTestMoving.ini");
    let ini = std::fs::read_to_string(&ini_path).unwrap();
    assert!(ini.contains("=Plugin Calls"), "{ini}");
    assert!(ini.contains("=Moving Base"), "{ini}");
    let h = std::fs::read_to_string(env().root.join("ini").join("ProvTestMoving.h")).unwrap();
    assert!(h.contains(&format!(" {}\n", calls.offset())), "{h}");

    // Removed: the run-time block is gone and so are its names.
    prf.dynamic().remove_object(plugin).unwrap();
    assert_eq!(objects_soon(&p, &[(new_first, 3)]), [(new_first, 3)]);
    let names = prfdata_registry::perflib::read_counter_text(&reg, "009").unwrap();
    assert!(!names.counter.contains_key(&(new_first + calls.offset())));
    let ini = std::fs::read_to_string(&ini_path).unwrap();
    assert!(!ini.contains("Plugin"), "{ini}");
    assert!(ini.contains("=Moving Base"), "{ini}");

    std::mem::forget(closing);
    assert_eq!(p.close(), ERROR_SUCCESS);
    drop(prf);
    uninstall_in(&reg, &moving::MAP).unwrap();
    uninstall_in(&reg, &after::MAP).unwrap();
}

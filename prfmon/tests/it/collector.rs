//! The collector against real provider libraries: the PERF_DATA_BLOCK it builds, query
//! strings, buffer growth, in-process and host isolation, and two collectors at once.

use crate::common;

use common::{bounded, name_object, options, provider_copy, register, TEST_WAIT};
use prfdata_registry::{paths, update, FileRegistry, RegistryError, Value};
use prfdata_wire::snapshot::{decode, DataSnapshot, RawValue};
use prfmon::collector::{Collector, CollectorOptions, Isolation};
use prfmon::names::instance_names;

fn with_good(dir: &std::path::Path, services: &[(&str, u32)]) -> FileRegistry {
    let registry = FileRegistry::open(dir.join("reg")).unwrap();
    for (name, index) in services {
        let lib = provider_copy(dir, name);
        register(&registry, name, &lib, "good", *index, 5_000);
        name_object(&registry, *index, name);
    }
    registry
}

/// The good provider's object as it must decode after `calls` collections.
fn assert_good_object(snap: &DataSnapshot, at: usize, index: u32, calls: i64) {
    let obj = &snap.objects[at];
    assert_eq!(obj.name_index, index);
    assert!(obj.default_counter == 0 || obj.default_counter == -1);
    assert_eq!(obj.help_index, index + 1);
    assert_eq!(obj.counters.len(), 2);
    assert_eq!(obj.counters[0].name_index, index + 2);
    assert_eq!(instance_names(snap, obj), ["alpha", "beta", "alpha#1"]);
    for (i, inst) in obj.instances().enumerate() {
        assert_eq!(
            inst.values().to_vec(),
            [RawValue::Int(10 * (i as i64 + 1)), RawValue::Int(calls)]
        );
    }
}

#[test]
fn a_collection_is_a_perf_data_block_with_the_providers_objects() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("First", 1848), ("Second", 1860)]);
        let mut collector = Collector::open(registry, options()).unwrap();
        assert_eq!(collector.open_services(), ["First", "Second"]);

        let before = prfdata::clock::perf_counter();
        let bytes = collector.collect("Global");
        let after = prfdata::clock::perf_counter();
        assert_eq!(&bytes[..8], b"P\0E\0R\0F\0");
        let snap = decode(&bytes).unwrap();
        assert_eq!(snap.total_byte_length as usize, bytes.len());
        assert_eq!(snap.header_length % 8, 0);
        assert_eq!((snap.version, snap.revision), (1, 1));
        assert_eq!(snap.system_name, prfmon::datablock::host_name());
        assert_eq!(snap.perf_freq, prfdata::clock::PERF_FREQUENCY);
        assert!(before <= snap.perf_time && snap.perf_time <= after);
        assert_eq!(snap.default_object, 1848);
        let filetime_now = prfmon::datablock::CollectionTimes::now().perf_time_100nsec;
        assert!(
            (filetime_now - snap.perf_time_100nsec).abs() < 600_000_000,
            "within a minute"
        );
        assert_eq!(snap.objects.len(), 2);
        assert_good_object(&snap, 0, 1848, 1);
        assert_good_object(&snap, 1, 1860, 1);

        let snap = decode(&collector.collect("Global")).unwrap();
        assert_good_object(&snap, 0, 1848, 2);
        collector.close();
    });
}

#[test]
fn index_lists_and_costly_reach_the_providers() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("First", 1848), ("Second", 1860)]);
        let mut collector = Collector::open(registry, options()).unwrap();
        let indexes = |c: &mut Collector<FileRegistry>, q: &str| -> Vec<u32> {
            decode(&c.collect(q))
                .unwrap()
                .objects
                .iter()
                .map(|o| o.name_index)
                .collect()
        };
        assert_eq!(indexes(&mut collector, "1860"), [1860]);
        assert_eq!(indexes(&mut collector, "1848 1860"), [1848, 1860]);
        assert_eq!(indexes(&mut collector, "238"), Vec::<u32>::new());
        assert_eq!(indexes(&mut collector, "Costly"), Vec::<u32>::new());
        let empty = decode(&collector.collect("Costly")).unwrap();
        assert_eq!(empty.default_object, -1);
    });
}

#[test]
fn a_small_first_buffer_grows_on_error_more_data() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("First", 1848)]);
        let opts = CollectorOptions {
            initial_buffer: 16,
            ..options()
        };
        let mut collector = Collector::open(registry, opts).unwrap();
        let snap = decode(&collector.collect("Global")).unwrap();
        // Collect was called 16, 32, ..., 512 bytes: 6 calls, the last one with data.
        assert_good_object(&snap, 0, 1848, 6);
        // The size that sufficed is kept: one call next time.
        let snap = decode(&collector.collect("Global")).unwrap();
        assert_good_object(&snap, 0, 1848, 7);
        assert!(collector.disabled().is_empty());
    });
}

#[test]
fn in_process_collection_gives_the_same_data() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("InProc", 1848)]);
        let opts = CollectorOptions {
            isolation: Isolation::InProcess,
            ..options()
        };
        let mut collector = Collector::open(registry, opts).unwrap();
        let snap = decode(&collector.collect("Global")).unwrap();
        assert_good_object(&snap, 0, 1848, 1);
        let snap = decode(&collector.collect("1848")).unwrap();
        assert_good_object(&snap, 0, 1848, 2);
        collector.close();
    });
}

#[test]
fn disabled_incomplete_and_missing_providers_are_skipped() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("Off", 1848), ("On", 1860)]);
        update(&registry, |hive| {
            hive.set_value(
                &paths::performance("Off"),
                "Disable Performance Counters",
                Value::Dword(1),
            )?;
            // A Performance key without a Library (lodctr wrote only the counter range).
            hive.set_value(
                &paths::performance("NamesOnly"),
                "First Counter",
                Value::Dword(1900),
            )?;
            Ok::<(), RegistryError>(())
        })
        .unwrap();
        register(
            &registry,
            "Missing",
            &dir.path().join("libdoes_not_exist.so"),
            "good",
            1870,
            5_000,
        );
        let mut collector = Collector::open(registry.clone(), options()).unwrap();
        assert_eq!(collector.open_services(), ["On"]);
        let snap = decode(&collector.collect("Global")).unwrap();
        assert_eq!(snap.objects.len(), 1);
        // A library that cannot be loaded is an installation problem, not misbehaviour.
        assert!(collector.disabled().is_empty());
    });
}

#[test]
fn two_collectors_at_once_in_one_process() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("Shared", 1848)]);
        let threads: Vec<_> = [
            Isolation::HostProcess,
            Isolation::HostProcess,
            Isolation::InProcess,
        ]
        .into_iter()
        .map(|isolation| {
            let registry = registry.clone();
            std::thread::spawn(move || {
                let opts = CollectorOptions {
                    isolation,
                    ..options()
                };
                let mut collector = Collector::open(registry, opts).unwrap();
                for _ in 0..20 {
                    let snap = decode(&collector.collect("Global")).unwrap();
                    assert_eq!(snap.objects.len(), 1);
                    assert_eq!(snap.objects[0].instance_count(), 3);
                }
                collector.close();
            })
        })
        .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn two_prfmon_processes_collect_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    let registry = with_good(dir.path(), &[("Shared", 1848)]);
    // A bad provider both will want to disable: the registry update is atomic either way.
    register(
        &registry,
        "Greedy",
        &provider_copy(dir.path(), "greedy"),
        "greedy",
        1860,
        5_000,
    );
    let children: Vec<_> = (0..4)
        .map(|_| common::spawn(&root, &["query", "--json"], ""))
        .collect();
    for child in children {
        let run = common::finish(child);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(json["objects"].as_array().map(Vec::len), Some(1));
        assert_eq!(json["objects"][0]["name"], "Shared");
        assert_eq!(json["objects"][0]["instances"][2]["name"], "alpha#1");
    }
    let services = prfdata_registry::performance_services(&registry).unwrap();
    assert!(services.iter().any(|s| s.name == "Greedy" && s.disabled));
    assert!(services.iter().any(|s| s.name == "Shared" && !s.disabled));
}

#[test]
fn a_reg_expand_sz_library_path_is_expanded() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("Expand", 1848)]);
        std::env::set_var("PRFMON_TEST_EXPAND_DIR", dir.path());
        update(&registry, |hive| {
            hive.set_value(
                &paths::performance("Expand"),
                "Library",
                Value::ExpandSz("%PRFMON_TEST_EXPAND_DIR%/libprovider_Expand.so".into()),
            )
        })
        .unwrap();
        let mut collector = Collector::open(registry, options()).unwrap();
        assert_eq!(collector.open_services(), ["Expand"]);
        assert_eq!(
            decode(&collector.collect("Global")).unwrap().objects.len(),
            1
        );
    });
}

#[test]
fn a_wrong_host_executable_skips_providers_without_disabling_them() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("Innocent", 1848)]);
        for exe in ["/bin/true", "/nonexistent/prfmon"] {
            let opts = CollectorOptions {
                host_exe: Some(exe.into()),
                ..options()
            };
            let mut collector = Collector::open(registry.clone(), opts).unwrap();
            assert!(collector.open_services().is_empty(), "{exe}");
            assert!(decode(&collector.collect("Global"))
                .unwrap()
                .objects
                .is_empty());
            assert!(collector.disabled().is_empty(), "{exe}");
        }
        let services = prfdata_registry::performance_services(&registry).unwrap();
        assert!(!services[0].disabled);
    });
}

#[test]
fn a_library_shared_by_two_services_gives_each_service_its_own_state() {
    bounded(TEST_WAIT, || {
        for isolation in [Isolation::HostProcess, Isolation::InProcess] {
            let dir = tempfile::tempdir().unwrap();
            let registry = FileRegistry::open(dir.path().join("reg")).unwrap();
            let lib = provider_copy(dir.path(), &format!("shared{isolation:?}"));
            register(&registry, "A", &lib, "good", 1848, 5_000);
            register(&registry, "B", &lib, "good", 1860, 5_000);
            let opts = CollectorOptions {
                isolation,
                ..options()
            };
            let mut collector = Collector::open(registry, opts).unwrap();
            assert_eq!(collector.open_services(), ["A", "B"]);
            for calls in 1..=3 {
                let collection = collector.collect_with_services("Global");
                let snap = decode(&collection.bytes).unwrap();
                // One copy of the library's state per service: each reports the index its
                // own Open was given, and counts only its own Collect calls.
                let seen: Vec<(u32, Option<i64>)> = snap
                    .objects
                    .iter()
                    .map(|o| (o.name_index, o.instance(0).and_then(|i| i.values().int(1))))
                    .collect();
                assert_eq!(
                    seen,
                    [(1848, Some(calls)), (1860, Some(calls))],
                    "{isolation:?}"
                );
                assert_eq!(collection.services, ["A", "B"], "{isolation:?}");
            }
            collector.close();
        }
    });
}

#[test]
fn open_is_called_once_and_close_when_the_collector_closes_or_drops() {
    bounded(TEST_WAIT, || {
        for (isolation, drop_it) in [
            (Isolation::HostProcess, false),
            (Isolation::HostProcess, true),
            (Isolation::InProcess, false),
            (Isolation::InProcess, true),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let registry = FileRegistry::open(dir.path().join("reg")).unwrap();
            let log = dir.path().join("calls.log");
            let lib = provider_copy(dir.path(), &format!("life{isolation:?}{drop_it}"));
            let mut cfg = prfdata_registry::ServiceConfig::new(
                lib.display().to_string(),
                "OpenPerformanceData",
                "CollectPerformanceData",
                "ClosePerformanceData",
            );
            cfg.export = vec!["good".into(), "1848".into(), log.display().to_string()];
            prfdata_registry::register_service(&registry, "Life", &cfg).unwrap();
            let opts = CollectorOptions {
                isolation,
                ..options()
            };
            let mut collector = Collector::open(registry, opts).unwrap();
            for _ in 0..3 {
                collector.collect("Global");
            }
            let calls = || std::fs::read_to_string(&log).unwrap_or_default();
            assert_eq!(calls(), "open good\n", "{isolation:?}");
            if drop_it {
                drop(collector);
            } else {
                collector.close();
            }
            assert_eq!(calls(), "open good\nclose good\n", "{isolation:?}");
        }
    });
}

#[test]
fn a_service_without_linkage_export_gets_a_null_device_list() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = FileRegistry::open(dir.path().join("reg")).unwrap();
        let cfg = prfdata_registry::ServiceConfig::new(
            provider_copy(dir.path(), "noexport").display().to_string(),
            "OpenPerformanceData",
            "CollectPerformanceData",
            "ClosePerformanceData",
        );
        prfdata_registry::register_service(&registry, "NoExport", &cfg).unwrap();
        let mut collector = Collector::open(registry, options()).unwrap();
        // The test provider reads a NULL list as mode `good`, index 1848, and then reports
        // DefaultCounter -1.
        let snap = decode(&collector.collect("Global")).unwrap();
        assert_good_object(&snap, 0, 1848, 1);
        assert_eq!(snap.objects[0].default_counter, -1);
    });
}

#[test]
fn linkage_export_reaches_open_as_a_multi_sz() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("WithExport", 1900)]);
        let mut collector = Collector::open(registry, options()).unwrap();
        let snap = decode(&collector.collect("Global")).unwrap();
        // Mode and index came from the export strings; the pointer was not NULL.
        assert_good_object(&snap, 0, 1900, 1);
        assert_eq!(snap.objects[0].default_counter, 0);
    });
}

#[test]
fn collect_with_services_names_the_service_of_every_object() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("First", 1848), ("Second", 1860)]);
        let mut collector = Collector::open(registry, options()).unwrap();
        let collection = collector.collect_with_services("Global");
        let snap = decode(&collection.bytes).unwrap();
        let indexes: Vec<u32> = snap.objects.iter().map(|o| o.name_index).collect();
        assert_eq!(indexes, [1848, 1860]);
        assert_eq!(collection.services, ["First", "Second"]);
        // A query that reaches one provider names only its object.
        let collection = collector.collect_with_services("1860");
        assert_eq!(collection.services, ["Second"]);
        assert_eq!(decode(&collection.bytes).unwrap().objects.len(), 1);
        collector.close();
    });
}

#[test]
fn a_checked_collection_views_what_a_parse_of_its_bytes_finds() {
    bounded(TEST_WAIT, || {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_good(dir.path(), &[("First", 1848), ("Second", 1860)]);
        for isolation in [Isolation::InProcess, Isolation::HostProcess] {
            // A 16-byte first buffer: every output comes after a few ERROR_MORE_DATA calls,
            // in a buffer kept from the calls before.
            let opts = CollectorOptions {
                isolation,
                initial_buffer: 16,
                ..options()
            };
            let mut collector = Collector::open(registry.clone(), opts).unwrap();
            for _ in 0..3 {
                let block = collector.collect_checked("Global");
                let view = &block;
                let parsed = prfdata_wire::view::DataView::parse(block.bytes()).unwrap();
                let snap = view.to_snapshot();
                assert_eq!(snap, parsed.to_snapshot(), "{isolation:?}");
                assert_eq!(snap.objects.len(), 2, "{isolation:?}");
                // The second service's parts were found in its own output, then moved.
                let second = view.object(1).unwrap();
                assert_eq!(second.offset(), parsed.object(1).unwrap().offset());
                assert_eq!(second.instance(2).unwrap().name(), "alpha");
            }
            assert!(collector.disabled().is_empty(), "{isolation:?}");
            collector.close();
        }
    });
}

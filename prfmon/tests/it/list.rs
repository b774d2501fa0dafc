//! `prfmon list` through the real binary: objects and counters with KB Q174631's Name,
//! Description and Differentiate, filtered by object and detail level.

use crate::common;

use common::{name_object, prfmon, provider_copy, register};
use prfdata_registry::FileRegistry;

fn setup(dir: &std::path::Path) -> std::path::PathBuf {
    let root = dir.join("reg");
    let registry = FileRegistry::open(&root).unwrap();
    for (name, index) in [("Jobs", 1848), ("Disks", 1860)] {
        register(
            &registry,
            name,
            &provider_copy(dir, name),
            "good",
            index,
            5_000,
        );
        name_object(&registry, index, name);
    }
    root
}

#[test]
fn list_shows_names_descriptions_types_and_differentiate() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    let run = prfmon(&root, &["list"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expected_jobs = "Object: Jobs (1848)\n  Service: Jobs\n  Description: Jobs help.\n  Detail: novice\n  Instances: yes\n\
        \x20 Counter: Jobs Count (1850)\n    Description: How many Jobs.\n    Type: PERF_COUNTER_RAWCOUNT\n    Differentiate: FALSE\n    Detail: novice\n\
        \x20 Counter: Jobs Calls (1852)\n    Description: Collect calls of Jobs.\n    Type: PERF_COUNTER_BULK_COUNT\n    Differentiate: TRUE\n    Detail: advanced\n";
    assert!(run.stdout.contains(expected_jobs), "{}", run.stdout);
    assert!(
        run.stdout.contains("Object: Disks (1860)"),
        "{}",
        run.stdout
    );
}

#[test]
fn list_filters_by_object_and_detail_level() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    let run = prfmon(&root, &["list", "disks", "--detail", "novice"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("Jobs"), "{}", run.stdout);
    assert!(
        run.stdout.contains("Counter: Disks Count (1862)"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("Disks Calls"),
        "advanced is above novice: {}",
        run.stdout
    );

    let json = prfmon(&root, &["list", "1848", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(1));
    assert_eq!(v[0]["counters"][1]["differentiate"], true);

    let missing = prfmon(&root, &["list", "Nothing"]);
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains(r#"no object named "Nothing""#),
        "{}",
        missing.stderr
    );
}

#[test]
fn list_verbose_adds_type_code_scale_and_unit() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    let run = prfmon(&root, &["list", "jobs", "--verbose"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let calls = "  Counter: Jobs Calls (1852)\n    Description: Collect calls of Jobs.\n    Type: PERF_COUNTER_BULK_COUNT\n    Differentiate: TRUE\n    Detail: advanced\n\
        \x20   Type code: 0x10410500\n    Default scale: 0\n    Unit: /sec\n";
    assert!(run.stdout.contains(calls), "{}", run.stdout);
    let json = prfmon(&root, &["list", "jobs", "--json"]);
    let parsed: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let counter = &parsed[0]["counters"][1];
    assert_eq!(counter["type_code"], 0x1041_0500);
    assert_eq!(counter["unit"], "/sec");
    assert_eq!(counter["differentiate"], true);
}

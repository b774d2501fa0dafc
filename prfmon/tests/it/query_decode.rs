//! `prfmon query` and `prfmon decode` through the real binary: the `--raw` / `decode` round
//! trip, query strings and names, and a decoder that refuses bad files with the offset.

use crate::common;

use std::path::Path;

use common::{name_object, prfmon, provider_copy, register};
use prfdata_registry::FileRegistry;

fn setup(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("reg");
    let registry = FileRegistry::open(&root).unwrap();
    for (name, index) in [("Jobs", 1848), ("Workers", 1860)] {
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
fn raw_bytes_written_by_query_decode_to_the_same_output() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    let raw = dir.path().join("block.bin");
    let raw_arg = raw.display().to_string();

    let query = prfmon(&root, &["query", "--raw", &raw_arg, "--json"]);
    assert_eq!(query.code, 0, "{}", query.stderr);
    let bytes = std::fs::read(&raw).unwrap();
    assert_eq!(&bytes[..8], b"P\0E\0R\0F\0");
    let decoded = prfmon(&root, &["decode", &raw_arg, "--json"]);
    assert_eq!(decoded.code, 0, "{}", decoded.stderr);
    // The same output, but for the service of each object, which query knows and a
    // PERF_DATA_BLOCK has no room for.
    let mut queried: serde_json::Value = serde_json::from_str(&query.stdout).unwrap();
    let mut services = Vec::new();
    for object in queried["objects"].as_array_mut().unwrap() {
        let service = object.as_object_mut().unwrap().remove("service");
        services.push(service.and_then(|s| s.as_str().map(str::to_owned)));
    }
    assert_eq!(services, [Some("Jobs".into()), Some("Workers".into())]);
    let json: serde_json::Value = serde_json::from_str(&decoded.stdout).unwrap();
    assert_eq!(json, queried);

    assert_eq!(json["total_byte_length"].as_u64(), Some(bytes.len() as u64));
    let jobs = &json["objects"][0];
    assert_eq!(jobs["name"], "Jobs");
    assert_eq!(jobs["help"], "Jobs help.");
    assert_eq!(jobs["counters"][0]["name"], "Jobs Count");
    assert_eq!(jobs["counters"][0]["type_name"], "PERF_COUNTER_RAWCOUNT");
    assert_eq!(jobs["counters"][1]["differentiate"], true);
    assert_eq!(jobs["instances"][1]["name"], "beta");
    assert_eq!(jobs["instances"][2]["name"], "alpha#1");
    assert_eq!(jobs["instances"][2]["values"][0], 30);
    assert_eq!(json["objects"][1]["name"], "Workers");

    // The table: query (without --raw) and decode print the same layout.
    let table = prfmon(&root, &["decode", &raw_arg]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table
            .stdout
            .contains("Object Jobs (1848), detail novice, 2 counters, 3 instances"),
        "{}",
        table.stdout
    );
    let row = table
        .stdout
        .lines()
        .find(|l| l.contains("Jobs Count") && l.contains("alpha#1"))
        .unwrap_or_else(|| panic!("{}", table.stdout));
    assert!(
        row.contains("PERF_COUNTER_RAWCOUNT") && row.trim_end().ends_with("30"),
        "{row}"
    );
}

#[test]
fn query_takes_object_indexes_or_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    let objects = |args: &[&str]| -> Vec<String> {
        let run = prfmon(&root, args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        json["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(objects(&["query", "1860", "--json"]), ["Workers"]);
    assert_eq!(
        objects(&["query", "1848 1860", "--json"]),
        ["Jobs", "Workers"]
    );
    assert_eq!(
        objects(&["query", "1848", "1860", "--json"]),
        ["Jobs", "Workers"]
    );
    assert_eq!(
        objects(&["query", "workers", "Jobs", "--json"]),
        ["Jobs", "Workers"]
    );
    assert_eq!(
        objects(&["query", "Costly", "--json"]),
        Vec::<String>::new()
    );
    assert_eq!(
        objects(&["query", "--in-process", "--json"]),
        ["Jobs", "Workers"]
    );
    let unknown = prfmon(&root, &["query", "Nothing"]);
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains(r#"no object named "Nothing""#),
        "{}",
        unknown.stderr
    );
}

#[test]
fn decode_refuses_garbage_and_truncated_files_naming_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    let raw = dir.path().join("block.bin");
    let raw_arg = raw.display().to_string();
    assert_eq!(prfmon(&root, &["query", "--raw", &raw_arg]).code, 0);
    let bytes = std::fs::read(&raw).unwrap();

    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"this is not a perf data block, not at all, no").unwrap();
    let run = prfmon(&root, &["decode", &garbage.display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("at offset 0"), "{}", run.stderr);

    // Cut inside the second object and fix TotalByteLength to match: the error names where
    // the object runs out.
    let cut = bytes.len() - 40;
    let mut truncated = bytes[..cut].to_vec();
    truncated[20..24].copy_from_slice(&(cut as u32).to_le_bytes());
    let short = dir.path().join("short.bin");
    std::fs::write(&short, &truncated).unwrap();
    let run = prfmon(&root, &["decode", &short.display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("truncated PERF_OBJECT_TYPE (TotalByteLength) at offset"),
        "{}",
        run.stderr
    );

    let missing = prfmon(&root, &["decode", "/nonexistent/block.bin"]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("cannot read"), "{}", missing.stderr);
}

/// One `prfmon query` reads the registry store once: the names, scale factors, apps' name
/// ranges, disabled services and the collector's services all come from that one read. The
/// registry traces each read with its number and process; the provider hosts' own reads are
/// theirs, not the collector's.
#[test]
fn query_reads_the_registry_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    let child = std::process::Command::new(common::PRFMON)
        .args(["query", "--json", "--log-to", "stderr"])
        .env("PRFDATA_REGISTRY", &root)
        .env("PRFMON_LOG", "trace")
        .env("PRFDATA_PROVIDER_LOG", "off")
        .env_remove("PRFDATA_SHM_DIR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mine = format!(" in process {}: ", child.id());
    let run = common::finish(child);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reads: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("registry store read") && l.contains(&mine))
        .collect();
    assert_eq!(reads.len(), 1, "{}", run.stderr);
}

#[test]
fn an_object_name_with_spaces_is_one_name_with_near_matches() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reg");
    let registry = FileRegistry::open(&root).unwrap();
    register(
        &registry,
        "TP",
        &provider_copy(dir.path(), "TP"),
        "good",
        1848,
        5_000,
    );
    name_object(&registry, 1848, "TP Service");
    let run = prfmon(&root, &["query", "TP Service", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = prfmon(&root, &["query", "TP Servce"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(r#"prfmon query: no object named "TP Servce"; did you mean "TP Service"?"#),
        "{}",
        run.stderr
    );
    let run = prfmon(&root, &["list", "TP Servce"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(r#"prfmon list: no object named "TP Servce"; did you mean "TP Service"?"#),
        "{}",
        run.stderr
    );
}

#[test]
fn a_counter_name_given_as_an_object_names_its_object() {
    let dir = tempfile::tempdir().unwrap();
    let root = setup(dir.path());
    for sub in ["query", "list"] {
        let run = prfmon(&root, &[sub, "Jobs Count"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                r#"prfmon {sub}: "Jobs Count" is a counter of object "Jobs": prfmon {sub} "Jobs""#
            )),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn decode_says_one_counter_in_the_singular() {
    use prfdata_wire::build::ObjectBuilder;
    use prfdata_wire::snapshot::{InstanceData, RawValue};
    use prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT;
    use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};

    let dir = tempfile::tempdir().unwrap();
    let one = ObjectBuilder::new(1848)
        .counter(1850, PERF_COUNTER_RAWCOUNT, 4)
        .instance(InstanceData {
            name: "only".into(),
            unique_id: -1,
            values: vec![RawValue::Int(7)],
            ..Default::default()
        });
    let block = build_data_block("h", &CollectionTimes::now(), &[ProviderOutput::from(&one)]);
    let file = dir.path().join("one.bin");
    std::fs::write(&file, block).unwrap();
    let run = prfmon(dir.path(), &["decode", &file.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("1 object, ") && run.stdout.contains(", 1 counter, 1 instance\n"),
        "{}",
        run.stdout
    );
}

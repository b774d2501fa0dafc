//! Histograms through the real binary: percentile paths (`Name:pQ`) in `typeperf` (command line
//! and `-cf`), the histogram's summary in `query` and `decode`, its buckets in
//! `list --verbose`, and a histogram that does not decode shown as no data, never as a number.
//!
//! The objects are laid out as a prfdata block publishes a histogram (sum, base, bucket
//! counter: [`histogram_object`]) and answered by the test provider in its `replay` mode, one
//! file per collection, so each collection's bucket counts are known in advance.

use crate::common;

use std::path::{Path, PathBuf};

use common::{prfmon, provider_copy, register_exporting, write_names};
use prfdata_registry::FileRegistry;
use prfdata_testkit::sample::histogram_object;
use prfdata_wire::build::DataBlockWriter;

/// The object's name index: object "Hist", histograms "Latency" (us, 5 .. 40 at p = 2) and
/// "Sizes" (bytes, bounds 10 and 20), a plain counter "Position".
const INDEX: u32 = 3000;

/// Latency counts with `a` values of 8..=9 us (bucket 4) and `b` of 10..=11 us (bucket 5).
fn latency(a: u64, b: u64) -> Vec<u64> {
    let mut counts = vec![0; 15];
    counts[4] = a;
    counts[5] = b;
    counts
}

/// One collection's object: instances `a` and `b` with these counts.
type Collection = [(&'static str, Vec<u64>, Vec<u64>); 2];

fn object(collection: &Collection) -> Vec<u8> {
    let instances: Vec<(&str, &[u64], &[u64])> = collection
        .iter()
        .map(|(name, l, s)| (*name, l.as_slice(), s.as_slice()))
        .collect();
    histogram_object(INDEX, &instances)
}

/// Three collections: nothing yet; then a: 50 values of 8..=9 and 50 of 10..=11 us, sizes 90
/// of ..=10 and 10 of 11..=20 bytes; then a: 100 more of 10..=11 us.
fn collections() -> [Collection; 3] {
    let zero = || vec![0, 0, 0];
    [
        [("a", latency(0, 0), zero()), ("b", latency(0, 0), zero())],
        [
            ("a", latency(50, 50), vec![90, 10, 0]),
            ("b", latency(0, 0), zero()),
        ],
        [
            ("a", latency(50, 150), vec![90, 10, 0]),
            ("b", latency(0, 0), zero()),
        ],
    ]
}

/// A registry under `dir/reg` whose service "Hist" replays `objects` (the n-th collection
/// answers `objects[n]`, then the last again), with the names of [`INDEX`]'s object.
fn replaying(dir: &Path, objects: &[Vec<u8>]) -> PathBuf {
    let prefix = dir.join("object");
    for (n, bytes) in objects.iter().enumerate() {
        std::fs::write(format!("{}.{n}", prefix.display()), bytes).unwrap();
    }
    let root = dir.join("reg");
    let registry = FileRegistry::open(&root).unwrap();
    let library = provider_copy(dir, "replay");
    let export = [
        "replay".into(),
        INDEX.to_string(),
        prefix.display().to_string(),
    ];
    register_exporting(&registry, "Hist", &library, &export, 5_000);
    let entries = [
        ("Hist", "Histograms for the tests."),
        ("Latency", "Job latency, microseconds."),
        ("Sizes", "Request sizes, bytes."),
        ("Position", "The instance's position."),
    ];
    let entries: Vec<(String, String)> = entries
        .iter()
        .map(|(n, h)| ((*n).to_owned(), (*h).to_owned()))
        .collect();
    write_names(&registry, INDEX, &entries);
    root
}

/// The CSV rows of a typeperf log.
fn rows(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.expect("a CSV record").iter().map(str::to_owned).collect())
        .collect()
}

#[test]
fn typeperf_logs_percentile_columns_from_the_bucket_counts_of_two_collections() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Vec<Vec<u8>> = collections().iter().map(object).collect();
    let root = replaying(dir.path(), &objects);
    let run = prfmon(
        &root,
        &[
            "typeperf",
            r"\Hist(a)\Latency:p50",
            r"\Hist(a)\Latency:p99.9",
            r"\Hist(*)\Sizes:p90",
            "-si",
            "0.2",
            "-sc",
            "3",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let host = prfmon::datablock::host_name();
    let table = rows(&run.stdout);
    assert_eq!(
        table[0][1..],
        [
            format!(r"\\{host}\Hist(a)\Latency:p50"),
            format!(r"\\{host}\Hist(a)\Latency:p99.9"),
            format!(r"\\{host}\Hist(a)\Sizes:p90"),
            format!(r"\\{host}\Hist(b)\Sizes:p90"),
        ],
        "{}",
        run.stdout
    );
    let values: Vec<Vec<&str>> = table[1..]
        .iter()
        .map(|row| row[1..].iter().map(String::as_str).collect())
        .collect();
    // The first sample has no interval; then 8..=9 reads 8.5, 10..=11 10.5, ..=10 bytes 5; b
    // counted nothing: no value (an empty cell is a space, as typeperf writes it), as for an
    // average whose base did not advance.
    assert_eq!(
        values,
        [
            vec![" ", " ", " ", " "],
            vec!["8.500000", "10.500000", "5.000000", " "],
            vec!["10.500000", "10.500000", " ", " "],
        ],
        "{}",
        run.stdout
    );
}

#[test]
fn a_counter_file_names_percentiles_and_a_percentile_of_no_histogram_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Vec<Vec<u8>> = collections().iter().map(object).collect();
    let root = replaying(dir.path(), &objects);
    let list = dir.path().join("counters.txt");
    std::fs::write(&list, "# latency\n\\Hist(a)\\Latency:p50\n").unwrap();
    let run = prfmon(
        &root,
        &[
            "typeperf",
            "-cf",
            list.to_str().unwrap(),
            "-si",
            "0.2",
            "-sc",
            "2",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let table = rows(&run.stdout);
    assert!(
        table[0][1].ends_with(r"\Hist(a)\Latency:p50"),
        "{}",
        run.stdout
    );
    assert_eq!(table[2][1], "8.500000", "{}", run.stdout);

    let refused = prfmon(&root, &["typeperf", r"\Hist(a)\Position:p99", "-sc", "1"]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            r"counter path `\Hist(a)\Position:p99`: `Position` is not a histogram; a percentile (`:p99`) is read only from a histogram's buckets"
        ),
        "{}",
        refused.stderr
    );
}

#[test]
fn query_and_decode_show_each_histogram_as_count_sum_and_percentiles_never_raw_words() {
    let dir = tempfile::tempdir().unwrap();
    let [_, second, _] = collections();
    let root = replaying(dir.path(), &[object(&second)]);
    let raw = dir.path().join("block.bin");
    let raw_arg = raw.display().to_string();
    let query = prfmon(&root, &["query", "--raw", &raw_arg]);
    assert_eq!(query.code, 0, "{}", query.stderr);
    let row = |text: &str, counter: &str, instance: &str| -> String {
        text.lines()
            .find(|l| l.contains(counter) && l.contains(&format!("  {instance}  ")))
            .unwrap_or_else(|| panic!("no row {counter} {instance}:\n{text}"))
            .to_owned()
    };
    let decoded = prfmon(&root, &["decode", &raw_arg]);
    assert_eq!(decoded.code, 0, "{}", decoded.stderr);
    for text in [&query.stdout, &decoded.stdout] {
        // The sum stays a PERF_AVERAGE_BULK of its raw value: 50 × 8 + 50 × 10 us.
        let sum = row(text, "Latency  ", "a");
        assert!(
            sum.contains("PERF_AVERAGE_BULK") && sum.ends_with(" 900"),
            "{sum}"
        );
        let buckets = row(text, "buckets of Latency", "a");
        assert!(
            buckets.ends_with("count 100, sum 900 us; since start p50 8.5, p90 10.5, p99 10.5 us"),
            "{buckets}"
        );
        let sizes = row(text, "buckets of Sizes", "b");
        assert!(sizes.ends_with("count 0, sum 0 bytes"), "{sizes}");
        assert!(!text.contains("0x4748"), "no raw descriptor words:\n{text}");
    }
    let json = prfmon(&root, &["decode", &raw_arg, "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let object = &json["objects"][0];
    assert_eq!(object["counters"][3]["name"], "buckets of Latency");
    let histogram = &object["instances"][0]["values"][3];
    assert_eq!(
        *histogram,
        serde_json::json!({
            "unit": "us", "count": 100, "sum": 900, "p50": 8.5, "p90": 10.5, "p99": 10.5,
            "buckets": [[9, 50], [11, 50]],
        })
    );
    let sizes = &object["instances"][0]["values"][6];
    assert_eq!(sizes["buckets"], serde_json::json!([[10, 90], [20, 10]]));
}

#[test]
fn list_verbose_shows_each_histograms_buckets_and_its_percentile_paths() {
    let dir = tempfile::tempdir().unwrap();
    let [first, _, _] = collections();
    let root = replaying(dir.path(), &[object(&first)]);
    let run = prfmon(&root, &["list", "Hist", "--verbose"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = &run.stdout;
    assert!(
        text.contains(
            "    Histogram: log-linear, 5 .. 47 us within 25 % (p = 2), 15 buckets (with underflow and overflow)\n    Percentiles: Latency:p50, Latency:p90, Latency:p99"
        ),
        "{text}"
    );
    assert!(
        text.contains("    Histogram: explicit bounds 10, 20 bytes, 3 buckets (the last above 20)"),
        "{text}"
    );
    // A histogram's sum reads as the mean, in the unit its values are recorded in.
    assert!(
        text.contains("    Unit: us\n    Histogram: log-linear"),
        "{text}"
    );
    assert!(
        text.contains("    Unit: bytes\n    Histogram: explicit"),
        "{text}"
    );
    // The sums and the plain counter are listed; no base, no bucket counter.
    let counters: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("  Counter: "))
        .collect();
    assert_eq!(
        counters,
        ["Position (3006)", "Latency (3002)", "Sizes (3004)"],
        "{text}"
    );
    let json = prfmon(&root, &["list", "Hist", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let latency = &json[0]["counters"][1]["histogram"];
    assert_eq!(latency["buckets"]["scheme"], "log-linear");
    assert_eq!(latency["buckets"]["buckets"], 15);
    assert_eq!(latency["buckets"]["error"], 0.25);
    assert_eq!(json[0]["counters"][1]["unit"], "us");
}

#[test]
fn a_histogram_whose_descriptor_does_not_decode_is_no_data_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Vec<Vec<u8>> = collections()
        .iter()
        .map(|c| {
            let mut bytes = object(c);
            // Every descriptor's magic zeroed: how a reader marks a copy with no data.
            let magic = 0x4748u16.to_le_bytes();
            while let Some(at) = bytes.windows(2).position(|w| w == magic) {
                bytes[at..at + 2].fill(0);
            }
            bytes
        })
        .collect();
    let root = replaying(dir.path(), &objects);
    let run = prfmon(
        &root,
        &[
            "typeperf",
            r"\Hist(a)\Latency:p50",
            "-si",
            "0.2",
            "-sc",
            "3",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let table = rows(&run.stdout);
    assert_eq!(table.len(), 4, "{}", run.stdout);
    assert!(table[1..].iter().all(|row| row[1] == " "), "{}", run.stdout);

    let query = prfmon(&root, &["query"]);
    assert!(
        query
            .stdout
            .lines()
            .any(|l| l.contains("buckets of Latency")
                && l.ends_with("no data: histogram descriptor: magic 0x0000, not 0x4748")),
        "{}",
        query.stdout
    );
    let list = prfmon(&root, &["list", "Hist", "--verbose"]);
    assert!(
        list.stdout.contains(
            "    Histogram: buckets no data: histogram descriptor: magic 0x0000, not 0x4748"
        ),
        "{}",
        list.stdout
    );
}

/// A block file built in the test, read by `decode` alone (no provider, no registry names):
/// the unnamed bucket counter is still named for its histogram's sum.
#[test]
fn decode_reads_a_saved_block_with_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let [_, second, _] = collections();
    let bytes = DataBlockWriter::new("box", 0)
        .objects(&object(&second), 1)
        .finish();
    let file = dir.path().join("block.bin");
    std::fs::write(&file, bytes).unwrap();
    let root = dir.path().join("reg");
    FileRegistry::open(&root).unwrap();
    let run = prfmon(&root, &["decode", file.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.lines().any(|l| l.contains("buckets of #3002")
            // The type has no winperf.h name: its number.
            && l.contains("0xc0000f00")
            && l.ends_with("count 100, sum 900 us; since start p50 8.5, p90 10.5, p99 10.5 us")),
        "{}",
        run.stdout
    );
}

/// `watch` charts a percentile path like any counter: its legend line shows the percentile of
/// each interval (here every collection counts 50 more values of 8..=9 us and of 10..=11 us,
/// so p50 is 8.5 and p99 10.5 in every interval).
#[test]
#[cfg_attr(not(prfmon_tests_tmux), ignore = "needs tmux (apt-get install tmux)")]
fn watch_charts_a_percentile_path_as_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let zero = || vec![0, 0, 0];
    let objects: Vec<Vec<u8>> = (0..400)
        .map(|k| {
            object(&[
                ("a", latency(50 * k, 50 * k), zero()),
                ("b", latency(0, 0), zero()),
            ])
        })
        .collect();
    let root = replaying(dir.path(), &objects);
    let env = format!("PRFDATA_REGISTRY='{}' TZ=UTC", root.display());
    let pane = crate::watch::Pane::start_with(
        &env,
        r"'\Hist(a)\Latency:p50' '\Hist(a)\Latency:p99' --interval 0.25",
    );
    let screen = pane.wait_for("both percentiles in the legend", |s| {
        let line = |name: &str| s.lines().find(|l| l.contains(name)).map(str::to_owned);
        line(r"Hist(a)\Latency:p50").is_some_and(|l| l.contains("8.500"))
            && line(r"Hist(a)\Latency:p99").is_some_and(|l| l.contains("10.500"))
    });
    assert!(screen.contains("Legend"), "{screen}");
    pane.keys(&["q"]);
    pane.wait_for("a clean exit", |s| s.contains("EXITED 0"));
}

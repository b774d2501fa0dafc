//! `/metrics` of a huge collection: the OpenMetrics encoding (and the classic text one)
//! costs at most about twice the collection's size, as every other consumer's. The text is
//! written as it is encoded (`prfmon serve` sends it in chunks as the client reads), so it
//! is never held whole; what the encoding keeps is the collection and a number or two per
//! instance.
//!
//! Measured in a child (this test binary re-executed), which reads the collection from a file
//! after resetting its peak resident memory (`/proc/self/clear_refs`, 5), so that the peak
//! (`VmHWM`) is what reading and encoding cost.

use crate::hostile_http::{huge_names, many_instances};

use std::fmt::Write as _;
use std::time::Duration;

use prfdata_wire::snapshot::decode_owned;
use prfmon::names::Names;
use prfmon::openmetrics::exposition::Exposition;

/// The instances of the collection: 500,000 of 48 bytes (24 MB).
const HUGE: u32 = 500_000;

/// What the child holds besides the collection: the test binary, its libraries, the
/// allocator's arenas.
const BASE_MEMORY: u64 = 32 << 20;

/// The variable that makes this test binary the encoding child: the folder with the
/// collection (`block`), where the result goes.
const ENCODE_DIR: &str = "PRFMON_ENCODE_DIR";

/// A `fmt::Write` that counts what it is given and the lines, and keeps the last series
/// (the last line that is not a `#` comment).
#[derive(Default)]
struct Counted {
    bytes: u64,
    lines: u64,
    last: String,
    line: String,
}

impl std::fmt::Write for Counted {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.bytes += text.len() as u64;
        for c in text.chars() {
            if c == '\n' {
                self.lines += 1;
                let line = std::mem::take(&mut self.line);
                if !line.starts_with('#') {
                    self.last = line;
                }
            } else {
                self.line.push(c);
            }
        }
        Ok(())
    }
}

/// `VmHWM` of this process, in bytes.
fn peak() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// The encoding child: resets its peak, reads `block`, encodes it both ways, and writes its
/// peak, the bytes and lines encoded and the last OpenMetrics series to `result`.
#[test]
#[ignore = "entry point for the encoding child"]
fn encode_child() {
    let Some(dir) = std::env::var_os(ENCODE_DIR).map(std::path::PathBuf::from) else {
        return;
    };
    // Writing 5 resets the peak resident set size to the current one (proc(5)).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let names: Names = serde_json::from_str(&huge_names()).unwrap();
    let snapshot = decode_owned(std::fs::read(dir.join("block")).unwrap()).unwrap();
    let exposition = Exposition::new(&snapshot, &["Huge".to_owned()], &names);
    drop(snapshot);
    let mut open = Counted::default();
    exposition.encode_to(&mut open).unwrap();
    let mut classic = Counted::default();
    exposition.encode_text_to(&mut classic).unwrap();
    let mut result = String::new();
    let _ = write!(
        result,
        "{}\n{} {}\n{} {}\n{}",
        peak(),
        open.bytes,
        open.lines,
        classic.bytes,
        classic.lines,
        open.last
    );
    std::fs::write(dir.join("result"), result).unwrap();
}

#[test]
fn encoding_a_huge_collection_costs_at_most_twice_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let block = many_instances(HUGE);
    let size = block.len() as u64;
    std::fs::write(dir.path().join("block"), &block).unwrap();
    drop(block);
    let child = prfdata_testkit::self_command(&prfdata_testkit::test_path!("encode_child"))
        .env(ENCODE_DIR, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the encoding child");
    let run = prfdata_testkit::finish(child, Duration::from_secs(120));
    let result = std::fs::read_to_string(dir.path().join("result"))
        .unwrap_or_else(|e| panic!("the child left no result ({e}): {run:?}"));
    let mut lines = result.lines();
    let peak: u64 = lines.next().unwrap().parse().unwrap();
    let counts = |line: Option<&str>| -> Vec<u64> {
        line.unwrap()
            .split(' ')
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let (open, classic) = (counts(lines.next()), counts(lines.next()));
    let last = lines.next().unwrap_or_default();
    eprintln!(
        "encoding {HUGE} instances: peak {peak} bytes for a {size}-byte collection ({:.2}x), \
         {} bytes of OpenMetrics, {} of classic text",
        peak as f64 / size as f64,
        open[0],
        classic[0]
    );
    // HELP, TYPE, a series per instance, EOF; classic: no EOF.
    assert_eq!(open[1], u64::from(HUGE) + 3, "{result}");
    assert_eq!(classic[1], u64::from(HUGE) + 2, "{result}");
    let expected = format!(
        "prfdata_huge_value{{perf_instance=\"7a11f\",app=\"Huge\"}} {}",
        HUGE - 1
    );
    assert_eq!(last, expected, "{result}");
    let bound = 2 * size + BASE_MEMORY;
    assert!(
        peak <= bound,
        "encoding a {size}-byte collection held {peak} bytes at its peak (bound {bound})"
    );
}

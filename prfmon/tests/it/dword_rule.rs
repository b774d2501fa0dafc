//! Perflib's DWORD rule: "The data returned must be a multiple of a DWORD in length". A
//! provider whose byte count and object lengths are multiples of 4 but not of 8 is valid: the
//! collector keeps it and moves its objects onto 8-byte boundaries in the PERF_DATA_BLOCK
//! (each padded, its TotalByteLength grown to match, nothing inside it moved). A byte count
//! that is not a multiple of 4 still disables the provider.
//!
//! Regression: the collector used to disable any provider whose byte count was not a
//! multiple of 8.

use crate::common;

use common::{bounded, c_large, c_provider, name_c_object, options, register_c, TEST_WAIT};
use prfdata_registry::{performance_services, FileRegistry};
use prfdata_wire::snapshot::{decode, RawValue};
use prfmon::collector::validate::ProviderFault;
use prfmon::collector::{Collector, CollectorOptions, Isolation};

/// The DWORD provider's objects: indexes 7000, 7010, 7020 (value 5).
const DWORD_INDEX: u32 = 7000;
const DWORD_VALUE: u32 = 5;
/// The WORD provider's object (206 bytes).
const WORD_INDEX: u32 = 7100;
/// What the C provider writes: a 64-byte header, three 40-byte definitions, a 20-byte block.
const DEFINITION_LENGTH: u32 = 64 + 3 * 40;
const DWORD_OBJECT: u32 = DEFINITION_LENGTH + 20;

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// A registry with the DWORD provider (`Dword`) and the WORD one (`Word`), each its own copy.
fn setup(dir: &std::path::Path) -> FileRegistry {
    let registry = FileRegistry::open(dir.join("reg")).expect("registry");
    let c = c_provider(dir);
    register_c(&registry, "Dword", &c, "dword", DWORD_INDEX, DWORD_VALUE);
    register_c(&registry, "Word", &c, "word", WORD_INDEX, 9);
    for k in 0..3 {
        name_c_object(&registry, DWORD_INDEX + 10 * k, &format!("Dword {k}"));
    }
    registry
}

#[test]
fn a_provider_returning_dword_multiples_is_kept_and_realigned_and_a_word_multiple_is_disabled() {
    bounded(TEST_WAIT, || {
        for isolation in [Isolation::HostProcess, Isolation::InProcess] {
            let dir = tempfile::tempdir().expect("temp dir");
            let registry = setup(dir.path());
            let opts = CollectorOptions {
                isolation,
                ..options()
            };
            let mut collector = Collector::open(registry.clone(), opts).expect("collector");
            for calls in 1..=3 {
                let collection = collector.collect_with_services("Global");
                let bytes = &collection.bytes;
                let snap = decode(bytes).expect("the block decodes");
                assert_eq!(
                    snap.total_byte_length as usize,
                    bytes.len(),
                    "{isolation:?}"
                );
                let indexes: Vec<u32> = snap.objects.iter().map(|o| o.name_index).collect();
                assert_eq!(indexes, [7000, 7010, 7020], "{isolation:?}");
                assert_eq!(collection.services, ["Dword"; 3], "{isolation:?}");
                for (k, object) in snap.objects.iter().enumerate() {
                    // Each object starts 8-aligned, 4 bytes after the previous one's 204.
                    assert_eq!(object.offset % 8, 0, "{isolation:?}");
                    assert_eq!(
                        object.offset,
                        snap.header_length as usize + k * (DWORD_OBJECT as usize + 4)
                    );
                    // Its TotalByteLength grew by the padding; nothing inside moved.
                    assert_eq!(le32(bytes, object.offset), DWORD_OBJECT + 4);
                    assert_eq!(le32(bytes, object.offset + 4), DEFINITION_LENGTH);
                    assert_eq!(le32(bytes, object.offset + 8), 64);
                    assert_eq!(
                        &bytes[object.offset + DWORD_OBJECT as usize..][..4],
                        &[0; 4],
                        "the padding is zero"
                    );
                    // The values, including the 64-bit one, decode right.
                    assert_eq!(
                        object.values().map(|v| v.to_vec()).unwrap_or_default(),
                        [
                            RawValue::Int(DWORD_VALUE.into()),
                            RawValue::Int(c_large(DWORD_VALUE)),
                            RawValue::Int(calls)
                        ],
                        "{isolation:?}"
                    );
                    let large = object.offset + DEFINITION_LENGTH as usize + 8;
                    assert_eq!(large % 8, 0, "the LARGE_INTEGER value is 8-aligned");
                }
            }
            // Checked as it came, realigned, then viewed: what a parse of the bytes finds.
            let block = collector.collect_checked("Global");
            let parsed =
                prfdata_wire::view::DataView::parse(block.bytes()).expect("the block decodes");
            assert_eq!(block.to_snapshot(), parsed.to_snapshot(), "{isolation:?}");
            // The WORD provider: disabled, for its byte count.
            let disabled = collector.disabled().to_vec();
            assert_eq!(disabled.len(), 1, "{isolation:?}: {disabled:?}");
            assert_eq!(disabled[0].service, "Word");
            assert_eq!(
                disabled[0].fault,
                ProviderFault::Misaligned {
                    bytes: DWORD_OBJECT + 2
                }
            );
            collector.close();
            let state: Vec<(String, bool)> = performance_services(&registry)
                .expect("services")
                .into_iter()
                .map(|s| (s.name, s.disabled))
                .collect();
            assert_eq!(
                state,
                [("Dword".to_owned(), false), ("Word".to_owned(), true)],
                "{isolation:?}"
            );
        }
    });
}

#[test]
fn prfmon_query_prints_a_dword_providers_values() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("reg");
    setup(dir.path());
    let run = common::prfmon(&root, &["query", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let objects = json["objects"].as_array().expect("objects");
    let names: Vec<&str> = objects
        .iter()
        .map(|o| o["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["Dword 0", "Dword 1", "Dword 2"]);
    for o in objects {
        assert_eq!(o["service"], "Dword");
        assert_eq!(o["values"][0], DWORD_VALUE);
        assert_eq!(o["values"][1], c_large(DWORD_VALUE));
    }
    assert!(
        run.stderr
            .contains("disabled the performance counters of service Word")
            && run.stderr.contains("not a multiple of 4"),
        "{}",
        run.stderr
    );
}

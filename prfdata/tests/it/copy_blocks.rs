//! `InstanceTable::copy_blocks_after` (a provider writes every instance of an object
//! in one call): on a real block, byte for byte what a definition copied by the caller followed
//! by `copy_counter_block` gives, for a plain object (the fast path) and for one whose blocks
//! need fix-ups (text, `_Total`: the path per instance); and every size it is given is checked
//! before anything is written.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use prfdata::reader::{BlockReader, InstanceTable, ReadError};

prfdata::prfdata_map! {
    /// A plain object, and one with a text counter and a `_Total`.
    pub mod cb {
        app: "CopyBlocksTest",
        object PLAIN {
            name: "CB Plain", help: "Plain counters only.",
            instances: { max: 16, name_len: 16 },
            counters {
                A: LargeRawCount { name: "CB A", help: name },
                B: RawCount { name: "CB B", help: name },
                C: LargeRawCount { name: "CB C", help: name },
            }
        }
        object FIXED {
            name: "CB Fixed", help: "Counters a plain copy cannot give.",
            instances: { max: 8, name_len: 16 }, total: true,
            counters {
                N: LargeRawCount { name: "CB N", help: name },
                LABEL: Text16 { name: "CB Label", help: name },
            }
        }
    }
}

const DEADLINE: Duration = Duration::from_secs(5);

/// What `copy_blocks_after` must write: each prefix, then `copy_counter_block` of its slot.
fn one_by_one(
    table: &InstanceTable<'_>,
    entries: &[(u32, u32)],
    prefixes: &[u8],
    block: usize,
) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    let mut h = 0;
    for &(slot, prefix) in entries {
        out.extend_from_slice(&prefixes[h..h + prefix as usize]);
        h += prefix as usize;
        let pos = (0..table.len())
            .find(|&p| table.get(p).is_ok_and(|i| i.slot == slot))
            .expect("a listed slot");
        let mut data = vec![0; block];
        table.copy_counter_block(&table.get(pos)?, &mut data)?;
        out.extend_from_slice(&data);
    }
    Ok(out)
}

/// The listed slots of object `k`, each with a prefix of its own length and bytes.
fn entries_of(reader: &BlockReader, k: usize) -> (Vec<(u32, u32)>, Vec<u8>) {
    reader
        .read_with(DEADLINE, |view| {
            let table = view.instances(k)?;
            let mut entries = Vec::new();
            let mut prefixes = Vec::new();
            for p in 0..table.len() {
                let slot = table.get(p)?.slot;
                // Lengths around the 64-byte inline copy: 8 to 96, multiples of 8.
                let len = 8 * (1 + (p * 5) % 12);
                entries.push((slot, len));
                prefixes.extend((0..len).map(|b| (b as u8) ^ (slot as u8).wrapping_mul(31)));
            }
            Ok((entries, prefixes))
        })
        .expect("a window")
}

#[test]
fn writes_what_a_copy_per_instance_writes() {
    let dir = tempfile::tempdir().unwrap();
    let prf = cb::PrfData::activate_in(dir.path()).unwrap();
    for i in 0..12 {
        let inst = prf.add_instance(cb::PLAIN, &format!("p{i}")).unwrap();
        prf.get_ctr64(cb::A, inst).store(1000 + i, Relaxed);
        prf.get_ctr32(cb::B, inst).store(i as i32, Relaxed);
        prf.get_ctr64(cb::C, inst).store(-i, Relaxed);
    }
    // Removing two makes the live list's order differ from the slots'.
    let gone = prf.add_instance(cb::PLAIN, "gone").unwrap();
    prf.remove_instance(gone).unwrap();
    for i in 0..5 {
        let inst = prf.add_instance(cb::FIXED, &format!("f{i}")).unwrap();
        prf.get_ctr64(cb::N, inst).store(7 * i, Relaxed);
        prf.text().set(cb::LABEL, inst, &format!("label {i}"));
    }
    let reader = BlockReader::open_path("CopyBlocksTest", prf.path()).unwrap();
    for k in 0..2 {
        let block = reader.objects()[k].counter_block_size as usize;
        let (entries, prefixes) = entries_of(&reader, k);
        assert!(
            entries.len() >= 5,
            "object {k}: {} instances",
            entries.len()
        );
        let (bulk, expected) = reader
            .read_with(DEADLINE, |view| {
                let table = view.instances(k)?;
                let mut out = vec![0xEEu8; prefixes.len() + entries.len() * block + 40];
                let n = table.copy_blocks_after(&entries, &prefixes, &mut out)?;
                assert!(
                    out[n..].iter().all(|&b| b == 0xEE),
                    "nothing written past the end"
                );
                out.truncate(n);
                Ok((out, one_by_one(&table, &entries, &prefixes, block)?))
            })
            .unwrap();
        assert_eq!(bulk.len(), prefixes.len() + entries.len() * block);
        assert_eq!(bulk, expected, "object {k}");
    }
    // The fast path's blocks hold the values written, after the validated ByteLength.
    let (entries, prefixes) = entries_of(&reader, 0);
    let block = reader.objects()[0].counter_block_size as usize;
    let bulk = reader
        .read_with(DEADLINE, |view| {
            let mut out = vec![0u8; prefixes.len() + entries.len() * block];
            view.instances(0)?
                .copy_blocks_after(&entries, &prefixes, &mut out)
                .map(|_| out)
        })
        .unwrap();
    let first = entries[0].1 as usize;
    let data = &bulk[first..first + block];
    assert_eq!(&data[..4], &(block as u32).to_le_bytes());
    let a = i64::from_ne_bytes(data[8..16].try_into().unwrap());
    assert_eq!(a, 1000, "the first instance's A");
}

#[test]
fn checks_every_size_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let prf = cb::PrfData::activate_in(dir.path()).unwrap();
    for i in 0..3 {
        prf.add_instance(cb::PLAIN, &format!("p{i}")).unwrap();
    }
    let reader = BlockReader::open_path("CopyBlocksTest", prf.path()).unwrap();
    let block = reader.objects()[0].counter_block_size as usize;
    let (entries, prefixes) = entries_of(&reader, 0);
    let need = prefixes.len() + entries.len() * block;
    reader
        .read_with(DEADLINE, |view| {
            let table = view.instances(0)?;
            // One byte short of room: refused, nothing written.
            let mut out = vec![0xEEu8; need - 1];
            assert!(matches!(
                table.copy_blocks_after(&entries, &prefixes, &mut out),
                Err(ReadError::Inconsistent)
            ));
            assert!(out.iter().all(|&b| b == 0xEE));
            // Prefixes shorter than their lengths say: refused, nothing written.
            let mut out = vec![0xEEu8; need];
            assert!(matches!(
                table.copy_blocks_after(&entries, &prefixes[..prefixes.len() - 1], &mut out),
                Err(ReadError::Inconsistent)
            ));
            assert!(out.iter().all(|&b| b == 0xEE));
            // A slot past the object's limit: an error naming the object, not a read out of it.
            // What came before it is written, and the bad entry's own prefix where it goes.
            let mut bad = entries.clone();
            bad[2].0 = 1_000_000;
            let mut out = vec![0xEEu8; need];
            assert!(matches!(
                table.copy_blocks_after(&bad, &prefixes, &mut out),
                Err(ReadError::Field { .. })
            ));
            let before = one_by_one(&table, &entries[..2], &prefixes, block)?;
            assert_eq!(
                &out[..before.len()],
                &before[..],
                "the two entries before it"
            );
            let (h, p) = (
                (entries[0].1 + entries[1].1) as usize,
                entries[2].1 as usize,
            );
            assert_eq!(
                &out[before.len()..before.len() + p],
                &prefixes[h..h + p],
                "its prefix, after them"
            );
            // Nothing to write: nothing written.
            assert_eq!(table.copy_blocks_after(&[], &[], &mut [])?, 0);
            Ok(())
        })
        .unwrap();
}

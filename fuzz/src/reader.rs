//! The block reader over a block file: open it, copy a [`Snapshot`], walk every [`BlockView`] and
//! [`InstanceTable`] call, and check that the two read paths agree.
//!
//! What must hold, whatever the bytes:
//! - every call returns a value or a typed [`ReadError`] (whose message and kind can be made):
//!   no panic, no overflow, no access outside the mapping (the address sanitizer and the
//!   mapping's own bounds catch one);
//! - a block that opens is not "replaced" and its owner is alive (this process holds the lock);
//! - when both the [`Snapshot`] copy and the view walk succeed, they saw the same instances:
//!   slots, names, parents, children and counter blocks (the ByteLength word aside, which the
//!   view sets to the validated size).
//!
//! Reads use a zero deadline: one window, no retry. A block with an odd sequence is "busy", at
//! once, instead of after the 20 ms the default deadline waits (the file never changes, so
//! waiting could not help).

use std::path::Path;
use std::time::Duration;

use prfdata::reader::{
    counter_value, BlockReader, BlockView, InstanceTable, ParentLink, ReadError, Snapshot,
};

/// One instance as the view walk saw it.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    slot: u32,
    unique_id: i32,
    parent: Option<ParentLink>,
    children: u32,
    name: Vec<u8>,
    block: Vec<u8>,
}

/// Places `bytes` as a block file and reads it every way the reader offers (see the module
/// docs for what is checked).
///
/// # Panics
///
/// When a property of the module docs does not hold.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::reader::check_block(b"PRFDATA\0 but nothing after");
/// prfdata_fuzz::reader::check_block(&prfdata_fuzz::maps::templates()[1].bytes);
/// ```
pub fn check_block(bytes: &[u8]) {
    let path = crate::env::get().work.join("Reader.blk");
    let placed = crate::block_file::place(&path, bytes);
    check_path(placed.path());
}

/// [`check_block`] on a block already at `path`, whose owner lock is held.
///
/// # Panics
///
/// As [`check_block`].
pub fn check_path(path: &Path) {
    let reader = match BlockReader::open_path("Reader", path) {
        Ok(r) => r,
        Err(e) => return describe(&e),
    };
    assert!(!reader.is_replaced(), "a block just opened is not replaced");
    assert!(reader.owner_alive(), "the owner's lock is held");
    let _ = (reader.path(), reader.header());
    for obj in reader.objects() {
        let _ = &reader.counters()[obj.counters.clone()];
    }

    let mut snap = Snapshot::default();
    let copied = reader.read_within(&mut snap, Duration::ZERO);
    if let Err(e) = &copied {
        describe(e);
    } else {
        values(&reader, &snap);
    }
    let walked = reader.read_with(Duration::ZERO, |view| Ok(walk(view)));
    let walked = match walked {
        Ok(w) => w,
        Err(e) => return describe(&e),
    };
    if copied.is_ok() {
        agree(&reader, &snap, &walked);
    }
}

/// Makes the error's message and kind, as a provider logging it does.
fn describe(e: &ReadError) {
    let _ = (e.to_string(), e.kind());
}

/// Every counter value of the snapshot, through [`counter_value`].
fn values(reader: &BlockReader, snap: &Snapshot) {
    for (info, obj) in reader.objects().iter().zip(&snap.objects) {
        let counters = &reader.counters()[info.counters.clone()];
        let mut blocks: Vec<&[u8]> = obj
            .instances
            .iter()
            .map(|i| snap.instance_block(i))
            .collect();
        if !info.instanced {
            blocks.push(snap.global_block(obj));
        }
        for inst in &obj.instances {
            let _ = String::from_utf16_lossy(snap.name(inst));
        }
        for block in blocks {
            for c in counters {
                let _ = counter_value(block, c.block_offset, c.size);
            }
        }
    }
}

/// Every view call on every object: per object, the instances seen (or the error that stopped
/// the walk of that object).
fn walk(view: &BlockView<'_>) -> Vec<Result<Vec<Seen>, String>> {
    let reader = view.reader();
    let _ = view.seq();
    (0..reader.objects().len())
        .map(|k| {
            let info = &reader.objects()[k];
            let _ = view.live_count(k);
            if !info.instanced {
                let mut block = vec![0u8; info.counter_block_size as usize];
                view.copy_global_block(k, &mut block)
                    .map_err(|e| e.to_string())?;
                // An object without instances has no table.
                assert!(view.instances(k).is_err(), "a table of a global object");
                return Ok(Vec::new());
            }
            let table = view.instances(k).map_err(|e| e.to_string())?;
            let _ = table.is_empty();
            walk_table(view, &table, info.counter_block_size as usize)
        })
        .collect()
}

fn walk_table(
    view: &BlockView<'_>,
    table: &InstanceTable<'_>,
    stride: usize,
) -> Result<Vec<Seen>, String> {
    let mut seen = Vec::new();
    // One past the end too: it must be refused, not read.
    assert!(
        table.get(table.len()).is_err(),
        "a position past the live count"
    );
    for pos in 0..table.len() {
        let _ = (table.name_len(pos), table.parent(pos));
        let children = table.children(pos).map_err(|e| e.to_string())?;
        let inst = table.get(pos).map_err(|e| e.to_string())?;
        if let Some(link) = inst.parent {
            let _ = view.parent_position(link);
        }
        let mut name = vec![0u8; (inst.name_len as usize * 2 + 2).next_multiple_of(8)];
        table
            .copy_name(&inst, &mut name)
            .map_err(|e| e.to_string())?;
        name.truncate(inst.name_len as usize * 2);
        let mut block = vec![0u8; stride];
        table
            .copy_counter_block(&inst, &mut block)
            .map_err(|e| e.to_string())?;
        seen.push(Seen {
            slot: inst.slot,
            unique_id: inst.unique_id,
            parent: inst.parent,
            children,
            name,
            block,
        });
    }
    Ok(seen)
}

/// The snapshot and the view walk, both kept, saw the same instances.
fn agree(reader: &BlockReader, snap: &Snapshot, walked: &[Result<Vec<Seen>, String>]) {
    for (k, (obj, walk)) in snap.objects.iter().zip(walked).enumerate() {
        let walk = match walk {
            Ok(w) => w,
            Err(e) => panic!("object {k}: the snapshot read it, the view refused it: {e}"),
        };
        if !reader.objects()[k].instanced {
            continue;
        }
        let copied: Vec<Seen> = obj
            .instances
            .iter()
            .map(|i| Seen {
                slot: i.slot,
                unique_id: i.unique_id,
                parent: i.parent,
                children: i.children,
                name: snap.name(i).iter().flat_map(|u| u.to_le_bytes()).collect(),
                block: snap.instance_block(i).to_vec(),
            })
            .collect();
        assert_eq!(copied.len(), walk.len(), "object {k}: instance counts");
        for (c, w) in copied.iter().zip(walk) {
            let strip = |s: &Seen| (s.slot, s.unique_id, s.parent, s.children, s.name.clone());
            assert_eq!(strip(c), strip(w), "object {k}: an instance");
            assert_eq!(
                c.block.get(4..),
                w.block.get(4..),
                "object {k}, slot {}: counter block",
                c.slot
            );
        }
    }
}

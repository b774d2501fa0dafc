//! The block reader over a block file: open it, then walk every [`BlockView`] and
//! [`InstanceTable`] call of its one read path, and check that the calls agree with each other.
//!
//! What must hold, whatever the bytes:
//! - every call returns a value or a typed [`ReadError`] (whose message and kind can be made):
//!   no panic, no overflow, no access outside the mapping (the address sanitizer and the
//!   mapping's own bounds catch one);
//! - a block that opens is not "replaced" and its owner is alive (this process holds the lock);
//! - within one window, each counter's value ([`BlockView::global_value`],
//!   [`InstanceTable::value`]) is the one in the counter block copied for it
//!   ([`BlockView::copy_global_block`], [`InstanceTable::copy_counter_block`]).
//!
//! Reads use a zero deadline: one window, no retry. A block with an odd sequence is "busy", at
//! once, instead of after the 20 ms the default deadline waits (the file never changes, so
//! waiting could not help).

use std::path::Path;
use std::time::Duration;

use prfdata::reader::{BlockReader, BlockView, CounterInfo, InstanceTable, ObjectInfo, ReadError};

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
/// prfdata_fuzz::reader::check_block(&prfdata_fuzz::env::templates()[1].bytes);
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
    let _ = (reader.path(), reader.owner_pid());
    for obj in reader.objects() {
        let _ = &reader.counters()[obj.counters.clone()];
    }
    if let Err(e) = reader.read_with(Duration::ZERO, |view| Ok(walk(view))) {
        describe(&e);
    }
}

/// Makes the error's message and kind, as a provider logging it does.
fn describe(e: &ReadError) {
    let _ = (e.to_string(), e.kind());
}

/// Whether every counter is a DWORD or a LARGE (or has no value).
fn numbers_only(counters: &[CounterInfo]) -> bool {
    counters.iter().all(|c| matches!(c.size, 0 | 4 | 8))
}

/// The value of `c` in a copied counter block, as the reader's value calls give it: a DWORD
/// sign-extended, a LARGE as it is, nothing for text.
fn in_block(block: &[u8], c: &CounterInfo) -> Option<i64> {
    let at = c.block_offset as usize;
    match c.size {
        4 => Some(i64::from(i32::from_le_bytes(
            block.get(at..at + 4)?.try_into().ok()?,
        ))),
        8 => Some(i64::from_le_bytes(block.get(at..at + 8)?.try_into().ok()?)),
        _ => None,
    }
}

/// Every view call on every object: per object, the instances walked (or the error that
/// stopped the walk of that object).
fn walk(view: &BlockView<'_>) -> Vec<Result<u32, String>> {
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
                info.fixups().apply(&mut block);
                let counters = &reader.counters()[info.counters.clone()];
                for (i, c) in counters
                    .iter()
                    .enumerate()
                    .filter(|_| numbers_only(counters))
                {
                    let value = view.global_value(k, i).ok();
                    assert_eq!(value, in_block(&block, c), "object {k}, counter {i}");
                }
                // An object without instances has no table.
                assert!(view.instances(k).is_err(), "a table of a global object");
                return Ok(0);
            }
            let table = view.instances(k).map_err(|e| e.to_string())?;
            let _ = table.is_empty();
            let counters = &reader.counters()[info.counters.clone()];
            walk_table(view, &table, info, counters)
        })
        .collect()
}

fn walk_table(
    view: &BlockView<'_>,
    table: &InstanceTable<'_>,
    info: &ObjectInfo,
    counters: &[CounterInfo],
) -> Result<u32, String> {
    let stride = info.counter_block_size as usize;
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
        info.fixups().apply(&mut block);
        // Text is made well-formed by the fix-ups, and a corrupt record may lay text over a number:
        // compare only blocks of numbers.
        for (i, c) in counters
            .iter()
            .enumerate()
            .filter(|_| numbers_only(counters))
        {
            let value = table.value(&inst, i).ok();
            assert_eq!(
                value,
                in_block(&block, c),
                "slot {}, counter {i}",
                inst.slot
            );
        }
        let _ = (children, inst.unique_id, &name);
    }
    Ok(table.len())
}

//! Real blocks with typed edits of their fields, read by the reader and collected by the
//! provider (structure-aware: see `prfdata_fuzz::mutation`).
#![no_main]

use prfdata_fuzz::mutation::{apply, BlockInput};

libfuzzer_sys::fuzz_target!(|input: BlockInput| {
    let block = apply(&input);
    prfdata_fuzz::reader::check_block(&block);
    prfdata_fuzz::provider::check_collect(&block);
});

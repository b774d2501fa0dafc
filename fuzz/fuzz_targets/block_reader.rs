//! The block reader on arbitrary bytes: a block file as another process could leave it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    prfdata_fuzz::reader::check_block(data);
});

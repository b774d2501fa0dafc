//! The registry store file, `registry.toml`, and its journal `registry.log` (after `\0JOURNAL\0`), as every tool reads them.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    prfdata_fuzz::registry::check_store(data);
});

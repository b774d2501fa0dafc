//! The registry store file, `registry.toml`, as every tool reads it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    prfdata_fuzz::registry::check_store(data);
});

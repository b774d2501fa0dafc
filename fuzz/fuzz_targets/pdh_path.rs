//! PDH counter paths (`typeperf`, `watch`), parsed and resolved against a real collection.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        prfdata_fuzz::consumers::check_path(text);
    }
});

//! The provider's Collect over an arbitrary block file, its output judged by the collector.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    prfdata_fuzz::provider::check_collect(data);
});

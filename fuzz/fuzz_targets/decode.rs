//! `prfmon decode`: a PERF_DATA_BLOCK (a `query --raw` file), and what consumes it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    prfdata_fuzz::consumers::check_data_block(data);
});

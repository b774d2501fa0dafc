//! lodctr's counter .INI file (and its symbol file), then lodctr and unlodctr on a hive.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    prfdata_fuzz::registry::check_ini(data);
});

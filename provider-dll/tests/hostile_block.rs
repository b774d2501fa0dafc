//! A block is untrusted input: random bytes, truncation and replacement never crash Collect,
//! never make it read out of bounds, and never make it write a malformed buffer.

mod common;

use std::os::unix::fs::FileExt;

use common::{app_a, parse, serial, Provider, ERROR_SUCCESS};
use prfdata::InstanceSpec;
use proptest::prelude::*;

fn populated() -> app_a::PrfData {
    let prf = app_a::PrfData::activate().unwrap();
    let pool = prf.add_instance(app_a::POOL, "pool").unwrap();
    for i in 0..5 {
        prf.add_child_instance(app_a::WORKER, InstanceSpec::named(&format!("w{i}")), pool)
            .unwrap();
    }
    prf
}

/// Collect must succeed (perhaps with no data) and whatever it returns must parse.
fn collect_is_sane(p: &Provider) {
    for q in ["Global", "Costly"] {
        let (out, data) = p.collect(q);
        assert_eq!(out.status, ERROR_SUCCESS);
        parse(&data, out.objects);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_anywhere_in_the_block_never_crash_collect(
        writes in proptest::collection::vec((0usize..8192, proptest::collection::vec(any::<u8>(), 1..64)), 1..8),
    ) {
        let _s = serial();
        let prf = populated();
        let p = Provider::load();
        prop_assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
        let file = std::fs::OpenOptions::new().write(true).open(prf.path()).unwrap();
        let len = file.metadata().unwrap().len() as usize;
        for (offset, bytes) in &writes {
            let at = offset % len;
            let n = bytes.len().min(len - at);
            file.write_all_at(&bytes[..n], at as u64).unwrap();
        }
        collect_is_sane(&p);
        prop_assert_eq!(p.close(), ERROR_SUCCESS);
        // The owner's own structures may be garbage now: forget the handle without touching it
        // beyond removing its file.
        drop(prf);
    }
}

#[test]
fn a_truncated_or_grown_block_yields_no_data_and_no_sigbus() {
    let _s = serial();
    let prf = populated();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    assert_eq!(p.collect("Global").0.objects, 3, "mapped and served");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(prf.path())
        .unwrap();
    let len = file.metadata().unwrap().len();
    for new_len in [len / 2, 100, 0, len + 4096] {
        file.set_len(new_len).unwrap();
        let (out, _) = p.collect("Global");
        assert_eq!(out.objects, 0, "length {new_len}");
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
    std::mem::forget(prf); // its mapping now extends past the file: do not touch it again
}

#[test]
fn a_block_replaced_under_the_reader_is_reopened() {
    let _s = serial();
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestA"]), ERROR_SUCCESS);
    let first = populated();
    assert_eq!(p.collect("Global").0.objects, 3);
    drop(first);
    let second = app_a::PrfData::activate().unwrap();
    second
        .get_global_ctr32(app_a::REQUESTS)
        .store(1234, std::sync::atomic::Ordering::Relaxed);
    let (out, data) = p.collect("Global");
    let objs = parse(&data, out.objects);
    assert_eq!(objs[0].value(0, 0), 1234, "the new block is read");
    assert_eq!(objs[2].header.num_instances, 0);
    assert_eq!(p.close(), ERROR_SUCCESS);
}

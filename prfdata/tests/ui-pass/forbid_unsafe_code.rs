// A crate that forbids unsafe code can still declare a map and publish counters: the `unsafe`
// the macro writes is prfdata's own.
#![forbid(unsafe_code)]

include!("../ui/shared/map.rs");

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let prf = m::PrfData::activate_in(dir.path()).unwrap();
    prf.get_ctr32(m::QUEUE, ()).store(3, std::sync::atomic::Ordering::Relaxed);
    let worker = prf.add_instance(m::WORKER, "w").unwrap();
    prf.get_ctr64(m::BUSY, worker).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    drop(prf);
}

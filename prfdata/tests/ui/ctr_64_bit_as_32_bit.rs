include!("shared/map.rs");

fn main() {
    let prf = m::PrfData::activate().unwrap();
    // BYTES is a 64-bit BULK_COUNT: its accessor gives an AtomicI64, never an AtomicI32.
    let _: &std::sync::atomic::AtomicI32 = prf.get_ctr64(m::BYTES, ());
}

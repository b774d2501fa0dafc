include!("shared/map.rs");

fn main() {
    let prf = m::PrfData::activate().unwrap();
    // BYTES is a 64-bit BULK_COUNT: get_ctr32 must not accept it.
    prf.get_ctr32(m::BYTES, ());
}

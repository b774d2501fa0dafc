include!("shared/map.rs");

fn main() {
    let prf = m::PrfData::activate().unwrap();
    let w = prf.add_instance(m::WORKER, "w").unwrap();
    // DONE is a 32-bit COUNTER_COUNTER: get_ctr64 must not accept it.
    prf.get_ctr64(m::DONE, w);
}

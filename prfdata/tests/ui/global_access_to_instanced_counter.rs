include!("shared/map.rs");

fn main() {
    let prf = m::PrfData::activate().unwrap();
    // WORKER has instances: its counters need one.
    prf.get_ctr64(m::BUSY, ());
}

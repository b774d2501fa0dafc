include!("shared/map.rs");

fn main() {
    let prf = m::PrfData::activate().unwrap();
    let pool = prf.add_instance(m::POOL, "p").unwrap();
    // BUSY belongs to WORKER: an instance of POOL must not reach it.
    prf.get_ctr64(m::BUSY, pool);
}

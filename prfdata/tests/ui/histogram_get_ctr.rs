//! A histogram has no single value: `get_ctr64`, `get_ctr32` and `sharded` do not take its id.

prfdata::prfdata_map! {
    pub mod m {
        app: "UiHistogramGetCtr",
        object SERVICE {
            name: "Service", help: name,
            counters {
                LATENCY: Histogram { name: "Latency", help: name, unit: us, range: 1us..1s, error: 10% },
            }
        }
    }
}

fn use_it(prf: &m::PrfData) {
    prf.get_ctr64(m::LATENCY, ());
    prf.get_ctr32(m::LATENCY, ());
    prf.sharded(m::LATENCY, ());
}

fn main() {}

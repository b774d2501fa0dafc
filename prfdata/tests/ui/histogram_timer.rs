// A timer records a duration: only a histogram with a time unit has one.
prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object SERVICE {
            name: "Service", help: "s",
            counters {
                SIZES: Histogram { name: "Sizes", help: name, unit: bytes, buckets: [64, 1024] },
            }
        }
    }
}

fn main() {
    let dir = std::env::temp_dir();
    let prf = m::PrfData::activate_in(&dir).unwrap();
    let sizes = prf.histogram(m::SIZES, ());
    let _timer = sizes.start_timer();
    sizes.record_duration(std::time::Duration::from_millis(1));
}

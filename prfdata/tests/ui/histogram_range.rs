prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object SERVICE {
            name: "Service", help: "s",
            counters {
                BACKWARDS: Histogram { name: "B", help: name, unit: us, range: 10s..10us, error: 2% },
                FROM_ZERO: Histogram { name: "Z", help: name, unit: us, range: 0us..10us, error: 2% },
                TOO_HIGH: Histogram { name: "H", help: name, unit: ns, range: 1ns..5000000000s, error: 2% },
                NO_SUFFIX: Histogram { name: "N", help: name, unit: us, range: 10..10s, error: 2% },
                TIME_IN_BYTES: Histogram { name: "T", help: name, unit: bytes, range: 64..1s, error: 2% },
                NOT_WHOLE: Histogram { name: "W", help: name, unit: us, range: 1500ns..10s, error: 2% },
                COARSE: Histogram { name: "C", help: name, unit: us, range: 1us..10s, error: 60% },
                FINE: Histogram { name: "F", help: name, unit: us, range: 1us..10s, error: 0.25% },
                WIDE: Histogram { name: "D", help: name, unit: ns, range: 1ns..1000s, error: 1% },
            }
        }
    }
}

fn main() {}

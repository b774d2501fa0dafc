prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object PROC {
            name: "Process", help: "p",
            counters {
                FILES: RawCount { name: "Files", help: name },
            }
        }
    }
}

fn main() {
    let prf = m::PrfData::activate().unwrap();
    // Compiles: whether a counter is on demand is the map's, checked at run time.
    let _ = prf.on_demand().serve(m::FILES, || 1);
    // Does not: the closure returns the counter's width.
    let _ = prf.on_demand().serve(m::FILES, || 1i64);
}

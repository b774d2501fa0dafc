prfdata::prfdata_map! {
    pub mod m {
        app: "UiTest",
        object SESSION {
            name: "Session", help: "s", instances: { max: 4, name_len: 8 },
            counters {
                USER: Text16 { name: "User", help: "u" },
            }
        }
    }
}

fn main() {
    let prf = m::PrfData::activate().unwrap();
    let s = prf.add_instance(m::SESSION, "tty1").unwrap();
    // A text counter has no atomic value of any width: it is set with set_text.
    prf.get_ctr32(m::USER, s);
}

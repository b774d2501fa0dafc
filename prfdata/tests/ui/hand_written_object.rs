// Regression: before, this compiled, and safe code wrote 1 TiB past the block (a
// debug assertion in debug builds, SIGSEGV in release). A hand-written `Object` needs `unsafe`,
// no layout constant can be overridden (`DATA_OFFSET` is gone: prfdata computes every offset
// from the map), and counter ids cannot be made by hand (`CtrId::new` is gone).
include!("shared/map.rs");

#[derive(Clone, Copy)]
struct Evil;

impl prfdata::map::Object for Evil {
    type Map = m::Map;
    type Scope = prfdata::map::Global;
    const INDEX: usize = 0;
    const DATA_OFFSET: usize = 1 << 40;
}

fn main() {
    let dir = std::env::temp_dir().join(format!("prfdata-ui-evil-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prf = m::PrfData::activate_in(&dir).unwrap();
    let ctr = prfdata::map::CtrId::<prfdata::counter_type::RawCount, Evil>::new(1);
    prf.get_ctr32(ctr, ()).store(1, std::sync::atomic::Ordering::Relaxed);
}

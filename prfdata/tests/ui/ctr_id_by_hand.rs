// Counter ids come from `prfdata_map!` only: the constructor it uses needs `unsafe`.
include!("shared/map.rs");

fn main() {
    let _ = prfdata::map::CtrId::<prfdata::counter_type::RawCount, m::TOTALS>::__from_macro(1);
}

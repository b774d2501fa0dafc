// A hand-written `PerfDataMap` needs `unsafe`: the block's layout is computed from its `DEF`.
use prfdata::map::{MapDef, PerfDataMap};

struct Mine;

impl PerfDataMap for Mine {
    const DEF: &'static MapDef = &MapDef { app: "Mine", objects: &[] };
}

fn main() {}

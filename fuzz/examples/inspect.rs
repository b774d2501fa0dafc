//! Triage: what the block reader and the provider make of a block file (a fuzz input).
//!
//! Usage: `cargo run --example inspect -- FILE`

use std::time::Duration;

use prfdata::reader::{BlockReader, Snapshot};

fn main() {
    let file = std::env::args().nth(1).expect("usage: inspect FILE");
    let bytes = std::fs::read(&file).expect("read");
    let env = prfdata_fuzz::env::get();
    let placed = prfdata_fuzz::block_file::place(&env.work.join("Inspect.blk"), &bytes);
    match BlockReader::open_path("Inspect", placed.path()) {
        Err(e) => println!("open: {e}"),
        Ok(r) => {
            println!("header: {:?}", r.header());
            for (k, o) in r.objects().iter().enumerate() {
                println!("object {k}: {o:?}");
                for c in &r.counters()[o.counters.clone()] {
                    println!("    {c:?}");
                }
            }
            let mut snap = Snapshot::default();
            match r.read_within(&mut snap, Duration::ZERO) {
                Ok(()) => println!("read: {} objects", snap.objects.len()),
                Err(e) => println!("read: {e}"),
            }
        }
    }
}

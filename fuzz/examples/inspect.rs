//! Triage: what the block reader and the provider make of a block file (a fuzz input).
//!
//! Usage: `cargo run --example inspect -- FILE`

use std::time::Duration;

use prfdata::reader::BlockReader;

fn main() {
    let file = std::env::args().nth(1).expect("usage: inspect FILE");
    let bytes = std::fs::read(&file).expect("read");
    let env = prfdata_fuzz::env::get();
    let placed = prfdata_fuzz::block_file::place(&env.work.join("Inspect.blk"), &bytes);
    match BlockReader::open_path("Inspect", placed.path()) {
        Err(e) => println!("open: {e}"),
        Ok(r) => {
            println!("owner pid: {}", r.owner_pid());
            for (k, o) in r.objects().iter().enumerate() {
                println!("object {k}: {o:?}");
                for c in &r.counters()[o.counters.clone()] {
                    println!("    {c:?}");
                }
            }
            let live = r.read_with(Duration::ZERO, |view| {
                (0..r.objects().len())
                    .map(|k| view.live_count(k))
                    .collect::<Result<Vec<_>, _>>()
            });
            match live {
                Ok(counts) => println!("read: live instances per object {counts:?}"),
                Err(e) => println!("read: {e}"),
            }
        }
    }
}

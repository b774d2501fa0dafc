//! Writes the seeds that come from the fuzz harness's own maps into `fuzz/corpus/`: the rich
//! map's blocks (`block_reader`, `provider_collect`) and the provider's real Collect output of
//! them as PERF_DATA_BLOCKs (`decode`), plus the harness registry's store (`registry_store`)
//! and the rich map's .INI (`lodctr_ini`). `fuzz/make-seeds.sh` runs it after the demo's seeds.
//!
//! Usage: `cargo run --example seeds -- CORPUS_DIR`

use std::ffi::c_void;
use std::path::PathBuf;

use prfdata_fuzz::{block_file, env, maps};
use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};

fn collect(query: &str) -> ProviderOutput {
    let mut buf = vec![0u64; 1 << 17];
    let start: *mut c_void = buf.as_mut_ptr().cast();
    let mut data = start;
    let mut bytes = (buf.len() * 8) as u32;
    let mut objects = 0u32;
    let q: Vec<u16> = query.encode_utf16().chain([0]).collect();
    // SAFETY: a NUL-terminated query, `bytes` writable bytes at `data`, valid out-pointers.
    let status = unsafe {
        prfdata_provider::CollectPerformanceData(q.as_ptr(), &mut data, &mut bytes, &mut objects)
    };
    assert_eq!(status, 0, "Collect({query})");
    let n = bytes as usize;
    // SAFETY: Collect wrote `n` bytes at the start of `buf`.
    let out = unsafe { std::slice::from_raw_parts(start.cast::<u8>(), n) }.to_vec();
    ProviderOutput {
        bytes: out,
        num_objects: objects,
    }
}

fn main() {
    let corpus = PathBuf::from(std::env::args().nth(1).expect("usage: seeds CORPUS_DIR"));
    let write = |target: &str, name: &str, bytes: &[u8]| {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir).expect("corpus folder");
        std::fs::write(dir.join(name), bytes).expect("seed");
    };
    let env = env::get();
    let templates = env::templates();
    for (name, t) in [
        ("rich-populated.blk", &templates[2]),
        ("rich-empty.blk", &templates[3]),
    ] {
        write("block_reader", name, &t.bytes);
        write("provider_collect", name, &t.bytes);
    }
    let names: Vec<u16> = maps::rich::MAP.app.encode_utf16().chain([0, 0]).collect();
    // SAFETY: a double-NUL-terminated multi-string.
    assert_eq!(
        unsafe { prfdata_provider::OpenPerformanceData(names.as_ptr()) },
        0
    );
    block_file::place_app_block(&templates[2].bytes);
    for (query, name) in [("Global", "rich-global.raw"), ("Costly", "rich-costly.raw")] {
        let block = build_data_block("fuzzhost", &CollectionTimes::now(), &[collect(query)]);
        write("decode", name, &block);
    }
    let store = std::fs::read(env.registry.join("registry.toml")).expect("store");
    write("registry_store", "demo-and-rich.toml", &store);
    let ini = std::fs::read_to_string(env.root.join("ini/PrfDataFuzz.ini")).expect("ini");
    let h = std::fs::read(env.root.join("ini/PrfDataFuzz.h")).expect("h");
    let mut input = ini.replace("PrfDataFuzz.h", "devdef.h").into_bytes();
    input.extend_from_slice(prfdata_fuzz::registry::SYMBOLS_MARKER);
    input.extend_from_slice(&h);
    write("lodctr_ini", "rich-install.ini", &input);
}

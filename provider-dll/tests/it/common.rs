//! Shared by the provider tests: the built cdylib loaded with libloading and driven as perflib
//! drives it, two installed test apps, and a strict parser of what Collect returns.
#![allow(dead_code)]

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use libloading::{Library, Symbol};
use prfdata::install::{install_in, InstallOptions};
use prfdata_registry::FileRegistry;
use prfdata_wire::winperf::{PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType};
use zerocopy::FromBytes;

prfdata::prfdata_map! {
    pub mod app_a {
        app: "ProvTestA",
        object SERVICE = 0 {
            name: "Prov Service", help: "The whole service.",
            detail: Novice, default: REQUESTS, instances: none, costly: false,
            counters {
                REQUESTS = 2: CounterCounter { name: "Requests/sec", help: "r", detail: Novice, scale: 0 },
                BYTES = 4: BulkCount { name: "Bytes/sec", help: "b", detail: Advanced, scale: -3 },
                LATENCY = 6: AverageTimer { name: "Avg. latency", help: "l", detail: Advanced, scale: 3 },
                LATENCY_BASE: AverageBase,
                UPTIME = 8: ElapsedTime { name: "Uptime", help: "u", detail: Novice, scale: 0 },
            }
        }
        object POOL = 10 {
            name: "Prov Pool", help: "A pool.",
            detail: Novice, default: SIZE, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                SIZE = 12: RawCount { name: "Size", help: "s", detail: Novice, scale: 0 },
            }
        }
        object WORKER = 14 {
            name: "Prov Worker", help: "A worker.",
            detail: Advanced, default: DONE, instances: { max: 64, name_len: 24 }, costly: false,
            counters {
                DONE = 16: CounterCounter { name: "Done/sec", help: "d", detail: Novice, scale: 0 },
                BUSY = 18: Timer100Ns { name: "% Busy", help: "b", detail: Novice, scale: 0 },
            }
        }
        object DEBUG = 20 {
            name: "Prov Debug", help: "Expensive to collect.",
            detail: Wizard, default: none, instances: none, costly: true,
            counters {
                SCANS = 22: LargeRawCount { name: "Scans", help: "s", detail: Wizard, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    pub mod app_b {
        app: "ProvTestB",
        object TOTAL = 0 {
            name: "Prov B", help: "The second app.",
            detail: Novice, default: ITEMS, instances: none, costly: false,
            counters {
                ITEMS = 2: RawCount { name: "Items", help: "i", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// Parents in every configuration: a non-costly child of a costly parent (ENTRY of SHARD),
    /// and three levels with a costly grandchild (TASK of JOB of HOST).
    pub mod app_c {
        app: "ProvTestC",
        object SHARD = 0 {
            name: "Prov Shard", help: "A costly parent.",
            detail: Novice, default: none, instances: { max: 4, name_len: 16 }, costly: true,
            counters {
                SHARD_SIZE = 2: RawCount { name: "Shard size", help: "s", detail: Novice, scale: 0 },
            }
        }
        object ENTRY = 4 {
            name: "Prov Entry", help: "A child of a shard.",
            detail: Novice, default: none, instances: { max: 16, name_len: 16 }, costly: false,
            counters {
                ENTRY_HITS = 6: RawCount { name: "Entry hits", help: "h", detail: Novice, scale: 0 },
            }
        }
        object HOST = 8 {
            name: "Prov Host", help: "A host.",
            detail: Novice, default: none, instances: { max: 4, name_len: 16 }, costly: false,
            counters {
                HOST_LOAD = 10: RawCount { name: "Load", help: "l", detail: Novice, scale: 0 },
            }
        }
        object JOB = 12 {
            name: "Prov Job", help: "A job of a host.",
            detail: Novice, default: none, instances: { max: 16, name_len: 16 }, costly: false,
            counters {
                JOB_DONE = 14: RawCount { name: "Job done", help: "d", detail: Novice, scale: 0 },
            }
        }
        object TASK = 16 {
            name: "Prov Task", help: "A costly task of a job.",
            detail: Novice, default: none, instances: { max: 32, name_len: 16 }, costly: true,
            counters {
                TASK_STEPS = 18: RawCount { name: "Steps", help: "s", detail: Novice, scale: 0 },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// The Windows 95 stat-server extras: sums (of 32-bit and 64-bit counters, global and per
    /// instance), an on-demand counter and a scale factor.
    pub mod app_s {
        app: "ProvTestS",
        object STATS = 0 {
            name: "Prov Stats", help: "Sums, on demand, factors.",
            counters {
                READS = 2: RawCount { name: "Reads", help: name },
                WRITES = 4: RawCount { name: "Writes", help: name },
                TOTAL = 6: RawCount { name: "Total", help: name, sum: [READS, WRITES] },
                BIG_A = 8: LargeRawCount { name: "Big A", help: name },
                BIG_B = 10: LargeRawCount { name: "Big B", help: name },
                BIG_TOTAL = 12: LargeRawCount { name: "Big total", help: name, sum: [BIG_A, BIG_B] },
                ANSWER = 14: RawCount { name: "Answer", help: name, on_demand: true },
                MEMORY = 16: LargeRawCount { name: "Memory KiB", help: name, factor: / 1024 },
            }
        }
        object SHELF = 18 {
            name: "Prov Shelf", help: "Per-instance sums.",
            instances: { max: 4, name_len: 16 },
            counters {
                LEFT = 20: RawCount { name: "Left", help: name },
                RIGHT = 22: RawCount { name: "Right", help: name },
                BOTH = 24: RawCount { name: "Both", help: name, sum: [LEFT, RIGHT] },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// Worker processes with their own instances and a `_Total`.
    pub mod app_o {
        app: "ProvTestO",
        object POOL = 0 {
            name: "Prov Pool", help: "One instance per worker process.",
            instances: { max: 8, name_len: 16 }, total: true,
            counters {
                DONE = 2: CounterCounter { name: "Done", help: name },
                QUEUE = 4: RawCount { name: "Queue", help: name },
                BYTES = 6: BulkCount { name: "Bytes", help: name, sharded: true },
            }
        }
    }
}

prfdata::prfdata_map! {
    /// Histograms: a global one (sharded buckets) and one per instance with a `_Total`.
    pub mod app_h {
        app: "ProvTestH",
        object SERVICE {
            name: "Prov Hist Service", help: "Histograms of the whole service.",
            counters {
                LATENCY: Histogram { name: "Prov latency", help: "Microseconds.", unit: us,
                    range: 1us..10s, error: 5%, sharded: true },
            }
        }
        object WORKER {
            name: "Prov Hist Worker", help: "One worker.",
            instances: { max: 4, name_len: 16 }, total: true,
            counters {
                SIZE: Histogram { name: "Prov size", help: "Bytes.", unit: bytes,
                    buckets: [64, 1024, 65536] },
            }
        }
    }
}

pub const ERROR_SUCCESS: u32 = 0;
pub const ERROR_MORE_DATA: u32 = 234;

/// The folder this test process uses for its registry and blocks (set once, before any Open).
pub struct Env {
    pub root: PathBuf,
    pub shm: PathBuf,
    pub first_a: (u32, u32),
    pub first_b: (u32, u32),
    pub first_c: (u32, u32),
    pub first_s: (u32, u32),
    pub first_o: (u32, u32),
    pub first_h: (u32, u32),
}

/// The `libprfdata_provider.so` built with these tests (the shared helper).
pub use prfdata_testkit::provider_library as library_path;

/// The prefix of [`env`]'s folder in the temp folder; the process id follows.
const ROOT_PREFIX: &str = "prfdata-provider-tests-";

/// Removes the folders of test processes that are gone without removing theirs (killed).
fn remove_stale_roots() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(ROOT_PREFIX)) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Sets up the registry (both apps installed) and shm folder for this process, once; the
/// folder goes when the process exits.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        remove_stale_roots();
        let root = std::env::temp_dir().join(format!("{ROOT_PREFIX}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        prfdata_testkit::remove_at_exit(&root);
        let shm = root.join("shm");
        std::fs::create_dir_all(&shm).unwrap();
        std::env::set_var("PRFDATA_REGISTRY", root.join("registry"));
        std::env::set_var("PRFDATA_SHM_DIR", &shm);
        let reg = FileRegistry::open(root.join("registry")).unwrap();
        let opts = InstallOptions {
            library: library_path(),
            ini_dir: root.join("ini"),
            replace: true,
        };
        let a = install_in(&reg, &app_a::MAP, &opts).unwrap();
        let b = install_in(&reg, &app_b::MAP, &opts).unwrap();
        let c = install_in(&reg, &app_c::MAP, &opts).unwrap();
        let s = install_in(&reg, &app_s::MAP, &opts).unwrap();
        let o = install_in(&reg, &app_o::MAP, &opts).unwrap();
        let h = install_in(&reg, &app_h::MAP, &opts).unwrap();
        Env {
            root,
            shm,
            first_a: (a.first_counter, a.first_help),
            first_b: (b.first_counter, b.first_help),
            first_c: (c.first_counter, c.first_help),
            first_s: (s.first_counter, s.first_help),
            first_o: (o.first_counter, o.first_help),
            first_h: (h.first_counter, h.first_help),
        }
    })
}

/// Tests share one loaded library (its state is per process): one at a time. Also sets up the
/// environment first, so that blocks the test activates land where the provider looks.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    env();
    guard
}

type OpenFn = unsafe extern "system" fn(*const u16) -> u32;
type CollectFn = unsafe extern "system" fn(*const u16, *mut *mut c_void, *mut u32, *mut u32) -> u32;
type CloseFn = unsafe extern "system" fn() -> u32;

/// The provider, loaded.
pub struct Provider {
    lib: Library,
}

/// What one Collect call did.
#[derive(Debug)]
pub struct Outcome {
    pub status: u32,
    pub advanced: usize,
    pub bytes: u32,
    pub objects: u32,
}

pub fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

pub fn multi_sz(names: &[&str]) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::new();
    for n in names {
        out.extend(n.encode_utf16());
        out.push(0);
    }
    out.push(0);
    out
}

impl Provider {
    pub fn load() -> Provider {
        env();
        // SAFETY: loading our own provider library, whose initialisers are Rust's only.
        let lib = unsafe { Library::new(library_path()) }.expect("dlopen the provider");
        Provider { lib }
    }

    pub fn open(&self, names: &[&str]) -> u32 {
        let arg = multi_sz(names);
        // SAFETY: the symbol has the perflib Open signature; the argument is a double-NUL
        // terminated UTF-16 multi-string.
        unsafe {
            let f: Symbol<OpenFn> = self.lib.get(b"OpenPerformanceData").unwrap();
            f(arg.as_ptr())
        }
    }

    pub fn close(&self) -> u32 {
        // SAFETY: the symbol has the perflib Close signature.
        unsafe {
            let f: Symbol<CloseFn> = self.lib.get(b"ClosePerformanceData").unwrap();
            f()
        }
    }

    /// Collect into `buf[..size]` (the rest of `buf` is the canary area).
    pub fn collect_into(&self, query: &str, buf: &mut [u8], size: usize) -> Outcome {
        let q = wide(query);
        let start = buf.as_mut_ptr();
        let mut ptr: *mut c_void = start.cast();
        let mut bytes = size as u32;
        let mut objects = 0xDEAD_BEEF_u32;
        // SAFETY: perflib's contract: `ptr` has `bytes` writable bytes (size <= buf.len()).
        let status = unsafe {
            let f: Symbol<CollectFn> = self.lib.get(b"CollectPerformanceData").unwrap();
            f(q.as_ptr(), &mut ptr, &mut bytes, &mut objects)
        };
        let advanced = (ptr as usize).wrapping_sub(start as usize);
        Outcome {
            status,
            advanced,
            bytes,
            objects,
        }
    }

    /// Collect with a buffer grown until it fits; returns the data.
    pub fn collect(&self, query: &str) -> (Outcome, Vec<u8>) {
        let mut size = 256;
        loop {
            let mut buf = vec![0u8; size];
            let out = self.collect_into(query, &mut buf, size);
            if out.status == ERROR_MORE_DATA {
                size *= 2;
                assert!(size < 1 << 26);
                continue;
            }
            assert_eq!(out.status, ERROR_SUCCESS);
            assert_eq!(
                out.advanced, out.bytes as usize,
                "pointer advanced by the byte count"
            );
            buf.truncate(out.bytes as usize);
            return (out, buf);
        }
    }
}

/// A parsed object.
#[derive(Debug)]
pub struct Obj {
    pub header: PerfObjectType,
    pub counters: Vec<PerfCounterDefinition>,
    /// (instance definition, name, counter block) per instance; one entry with no definition for
    /// an object without instances.
    pub instances: Vec<(Option<PerfInstanceDefinition>, String, Vec<u8>)>,
}

impl Obj {
    /// The value of counter `index` of instance `inst`.
    pub fn value(&self, inst: usize, index: usize) -> i64 {
        let c = &self.counters[index];
        let block = &self.instances[inst].2;
        let at = c.counter_offset.get() as usize;
        match c.counter_size.get() {
            4 => i64::from(u32::from_le_bytes(block[at..at + 4].try_into().unwrap())),
            8 => i64::from_le_bytes(block[at..at + 8].try_into().unwrap()),
            n => panic!("size {n}"),
        }
    }
}

/// Parses Collect output strictly: every length is checked and must add up.
pub fn parse(data: &[u8], count: u32) -> Vec<Obj> {
    assert_eq!(data.len() % 8, 0, "a multiple of 8");
    let mut objs = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let (header, _) = PerfObjectType::read_from_prefix(&data[at..]).unwrap();
        let total = header.total_byte_length.get() as usize;
        assert!(
            total.is_multiple_of(8) && at + total <= data.len(),
            "object length {total}"
        );
        assert_eq!(header.header_length, 64);
        assert_eq!(header.definition_length, 64 + 40 * header.num_counters);
        let obj = &data[at..at + total];
        let mut counters = Vec::new();
        for i in 0..header.num_counters.get() as usize {
            let (def, _) = PerfCounterDefinition::read_from_prefix(&obj[64 + 40 * i..]).unwrap();
            assert_eq!(def.byte_length, 40);
            counters.push(def);
        }
        let mut pos = header.definition_length.get() as usize;
        let block = |pos: usize| {
            let len = u32::from_le_bytes(obj[pos..pos + 4].try_into().unwrap()) as usize;
            assert!(
                len >= 8 && len.is_multiple_of(8) && pos + len <= obj.len(),
                "counter block {len}"
            );
            for c in &counters {
                assert!(c.counter_offset.get() as usize + c.counter_size.get() as usize <= len);
            }
            obj[pos..pos + len].to_vec()
        };
        let mut instances = Vec::new();
        if header.num_instances == -1 {
            let b = block(pos);
            pos += b.len();
            instances.push((None, String::new(), b));
        } else {
            for _ in 0..header.num_instances.get() {
                let (def, _) = PerfInstanceDefinition::read_from_prefix(&obj[pos..]).unwrap();
                assert_eq!(def.name_offset, 24);
                assert_eq!(def.byte_length % 8, 0);
                let n = def.name_length.get() as usize;
                assert!(n >= 2 && n.is_multiple_of(2) && 24 + n <= def.byte_length.get() as usize);
                let units: Vec<u16> = obj[pos + 24..pos + 24 + n]
                    .chunks(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                assert_eq!(units.last(), Some(&0), "NUL-terminated name");
                // Well-formed UTF-16 whatever the block holds: the provider serves a lone
                // surrogate of a corrupt block as U+FFFD.
                let name = String::from_utf16(&units[..units.len() - 1])
                    .expect("an instance name is well-formed UTF-16");
                pos += def.byte_length.get() as usize;
                let b = block(pos);
                pos += b.len();
                instances.push((Some(def), name, b));
            }
        }
        assert_eq!(
            pos, total,
            "the object's parts add up to its TotalByteLength"
        );
        objs.push(Obj {
            header,
            counters,
            instances,
        });
        at += total;
    }
    assert_eq!(objs.len() as u32, count, "object count");
    objs
}

/// Shards s1, s2 (costly) with entries; hosts h1, h2 with jobs, jobs with (costly) tasks. Added
/// in an order that puts parents at other positions than their children.
pub fn populate_c(prf: &app_c::PrfData) {
    let s1 = prf.add_instance(app_c::SHARD, "s1").unwrap();
    let s2 = prf.add_instance(app_c::SHARD, "s2").unwrap();
    prf.add_instance(app_c::ENTRY, prfdata::InstanceSpec::named("e1").parent(s2))
        .unwrap();
    prf.add_instance(app_c::ENTRY, prfdata::InstanceSpec::named("e2").parent(s1))
        .unwrap();
    let h1 = prf.add_instance(app_c::HOST, "h1").unwrap();
    let h2 = prf.add_instance(app_c::HOST, "h2").unwrap();
    let j1 = prf
        .add_instance(app_c::JOB, prfdata::InstanceSpec::named("j1").parent(h2))
        .unwrap();
    prf.add_instance(app_c::JOB, prfdata::InstanceSpec::named("j2").parent(h1))
        .unwrap();
    let j3 = prf
        .add_instance(app_c::JOB, prfdata::InstanceSpec::named("j3").parent(h2))
        .unwrap();
    for (name, job) in [("t1", j3), ("t2", j1), ("t3", j3)] {
        prf.add_instance(app_c::TASK, prfdata::InstanceSpec::named(name).parent(job))
            .unwrap();
    }
}

/// Each object's title and its instances as `parent/name` (the parent's own name, found by
/// following the link inside `objs`), failing if a link points at anything `objs` lacks.
pub fn resolved(objs: &[Obj]) -> std::collections::BTreeMap<u32, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    for obj in objs {
        let names = obj
            .instances
            .iter()
            .map(|(def, name, _)| {
                let Some(def) = def else {
                    return name.clone();
                };
                if def.parent_object_title_index == 0 {
                    return name.clone();
                }
                let parent = objs
                    .iter()
                    .find(|o| o.header.object_name_title_index == def.parent_object_title_index)
                    .unwrap_or_else(|| {
                        panic!(
                            "{name}: parent object {} is not in the buffer",
                            def.parent_object_title_index
                        )
                    });
                let (_, parent_name, _) = parent
                    .instances
                    .get(def.parent_object_instance.get() as usize)
                    .unwrap_or_else(|| {
                        panic!("{name}: no parent instance {}", def.parent_object_instance)
                    });
                format!("{parent_name}/{name}")
            })
            .collect();
        let title = obj.header.object_name_title_index.get();
        assert!(
            out.insert(title, names).is_none(),
            "object {title} appears twice"
        );
    }
    out
}

//! A provider is disabled for misbehaving only, never for a large valid answer: an app whose
//! block `activate` accepted is collected whole, however large its Collect answer, through the
//! real provider in a provider host process.
//!
//! The app has 33,000 instances with 1,024-character names (winperf.h's
//! `PERF_MAX_INSTANCE_NAME`): a 74 MB block whose Collect answer is 69 MB, past the 64 MiB the
//! collector once capped its buffer at (it disabled the provider: "Collect still returned
//! ERROR_MORE_DATA with a 67108864-byte buffer"). The smallest count past 64 MiB is 32,019
//! instances (2,096 bytes each in the answer); a 50,000-instance, 449 MB block fails the same
//! way and only costs a CI machine more memory and time.

use std::process::Stdio;
use std::time::Duration;

use prfdata_registry::Registry;
use prfdata_testkit::{ready, ChildGuard, Sandbox, WAIT};
use prfmon::collector::Collector;
use prfmon::names::Names;

use crate::common;

/// Instances of the large app: just past 64 MiB of Collect answer (see the module docs).
const INSTANCES: u32 = 33_000;

prfdata::prfdata_map! {
    pub mod big {
        app: "BigAnswerApp",
        object SESSION = 0 {
            name: "Big Answer Session", help: "One of many sessions with long names.",
            instances: { max: 33000, name_len: 1024 },
            counters {
                BYTES = 2: RawCount { name: "Session bytes", help: "The session's number." },
            }
        }
    }
}

/// The 1,024-unit name of instance `i` (unique: its number first).
fn name(i: u32) -> String {
    let mut name = format!("session {i:05} ");
    let fill = 1024 - name.len();
    name.extend(std::iter::repeat_n('x', fill));
    name
}

/// The app child: activates the block, adds every instance (value = its number), says ready.
#[test]
#[ignore = "entry point for the app child process"]
fn app_entry() {
    if std::env::var_os("PRFMON_BIG_ANSWER_APP").is_none() {
        return;
    }
    use std::sync::atomic::Ordering::Relaxed;
    let prf = big::PrfData::activate().expect("activate the large app");
    for i in 0..INSTANCES {
        let inst = prf
            .add_instance(big::SESSION, &name(i))
            .expect("add an instance");
        prf.get_ctr32(big::BYTES, inst).store(i as i32, Relaxed);
    }
    let shm = std::env::var_os("PRFDATA_SHM_DIR").expect("PRFDATA_SHM_DIR");
    ready::publish(&std::path::Path::new(&shm).join("ready"), b"").expect("say ready");
    std::thread::sleep(Duration::from_secs(300));
}

/// `VmHWM` (peak resident memory) of process `pid` (or `self`), as `/proc` says it.
fn peak_memory(pid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_owned()))
        })
        .unwrap_or_default()
}

#[test]
fn a_large_valid_answer_does_not_disable_its_provider() {
    let sandbox = Sandbox::new();
    sandbox.install(&big::MAP);
    let mut command = prfdata_testkit::self_command(&prfdata_testkit::test_path!("app_entry"));
    sandbox
        .apply_env(&mut command)
        .env("PRFMON_BIG_ANSWER_APP", "1")
        .stdout(Stdio::null());
    let _app = ChildGuard::new(command.spawn().expect("spawn the app"), "the large app");
    ready::wait(&sandbox.shm.join("ready"), WAIT);
    let block = std::fs::metadata(sandbox.shm.join("BigAnswerApp.blk")).unwrap();

    let _env = sandbox.process_env();
    let registry = sandbox.open();
    let mut collector = Collector::open(sandbox.open(), common::options()).expect("collector");
    let bytes = collector.collect("Global");
    eprintln!(
        "block {} bytes, collection {} bytes; peak memory (VmHWM): collector {}, provider host {}",
        block.len(),
        bytes.len(),
        peak_memory("self"),
        common::provider_hosts()
            .iter()
            .map(|(pid, _)| peak_memory(pid))
            .collect::<Vec<_>>()
            .join(", "),
    );
    assert!(
        collector.disabled().is_empty(),
        "a healthy provider was disabled: {:?}",
        collector.disabled()
    );
    assert!(
        bytes.len() > 64 << 20,
        "the answer ({} bytes) is past the old 64 MiB cap, as this test needs",
        bytes.len()
    );
    let snapshot = prfdata_wire::snapshot::decode(&bytes).expect("a valid PERF_DATA_BLOCK");
    // prfdata's rule: a block's objects answer at most the block's size.
    let objects = bytes.len() as u64 - u64::from(snapshot.header_length);
    assert!(
        objects <= block.len(),
        "{objects} bytes of objects from a {}-byte block",
        block.len()
    );
    let names = Names::load(&registry, "009").unwrap();
    let session = snapshot
        .objects
        .iter()
        .find(|o| names.name(o.name_index) == "Big Answer Session")
        .expect("the object collected");
    assert_eq!(session.instance_count(), INSTANCES as usize);
    for (i, inst) in session.instances().enumerate() {
        assert_eq!(inst.name(), name(i as u32), "instance {i}'s name");
        assert_eq!(inst.values().int(0), Some(i as i64), "instance {i}'s value");
    }
    let hive = registry.snapshot().unwrap();
    let service = prfdata_registry::service::read_service(&hive, "BigAnswerApp").unwrap();
    assert!(service.is_some_and(|s| !s.disabled), "not disabled");
    // The next, smaller collection (an index list the app does not have) is served too.
    assert_eq!(
        prfdata_wire::snapshot::decode(&collector.collect("2"))
            .unwrap()
            .objects
            .len(),
        0
    );
    assert!(collector.disabled().is_empty());
}

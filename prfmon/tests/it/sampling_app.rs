//! A real app publishing counters through prfdata, installed in a temp registry with the real
//! provider (`libprfdata_provider.so`), for the tests of `prfmon typeperf` and `prfmon watch`.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};

use prfdata_testkit::Sandbox;

prfdata::prfdata_map! {
    pub mod tp {
        app: "SamplingTest",
        object SERVICE = 0 {
            name: "TP Service", help: "The test service.",
            detail: Novice, default: QUEUE, instances: none, costly: false,
            counters {
                QUEUE = 2: RawCount { name: "Queue length", help: "Jobs waiting.", detail: Novice, scale: 0 },
                JOBS = 4: CounterCounter { name: "Jobs/sec", help: "Jobs done per second.", detail: Novice, scale: -1 },
            }
        }
        object WORKER = 6 {
            name: "TP Worker", help: "One worker.",
            detail: Novice, default: DONE, instances: { max: 8, name_len: 16 }, costly: false,
            counters {
                DONE = 8: RawCount { name: "Done", help: "Jobs this worker did.", detail: Novice, scale: 0 },
            }
        }
        object DEBUG = 10 {
            name: "TP Debug", help: "Expensive to collect: not in Global.",
            detail: Wizard, default: SCANS, instances: none, costly: true,
            counters {
                SCANS = 12: LargeRawCount { name: "Scans", help: "Scans so far.", detail: Wizard, scale: 0 },
            }
        }
        object CHURN = 14 {
            name: "TP Churn", help: "Instances that come and go, more than a legend shows.",
            detail: Novice, default: VALUE, instances: { max: 64, name_len: 16 }, costly: false,
            counters {
                VALUE = 16: RawCount { name: "Value", help: "The instance's number.", detail: Novice, scale: 0 },
            }
        }
    }
}

/// A temp registry and shm folder (a [`Sandbox`]: `dir`, `registry`, `shm`) with the app
/// installed and active in this process.
pub struct App {
    pub sandbox: Sandbox,
    pub prf: tp::PrfData,
}

impl std::ops::Deref for App {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl App {
    /// Installs and activates the app: queue length 42, jobs 0, workers `w1` (7) and `w2` (9),
    /// and the costly object's scans 1234.
    pub fn start() -> App {
        let sandbox = Sandbox::new();
        sandbox.install(&tp::MAP);
        let shm = sandbox.shm.clone();
        let prf = tp::PrfData::activate_in(&shm).expect("activate the app");
        prf.get_ctr32(tp::QUEUE, ())
            .store(42, std::sync::atomic::Ordering::Relaxed);
        prf.get_ctr64(tp::SCANS, ())
            .store(1234, std::sync::atomic::Ordering::Relaxed);
        for (name, done) in [("w1", 7), ("w2", 9)] {
            let inst = prf.add_instance(tp::WORKER, name).expect("add a worker");
            prf.get_ctr32(tp::DONE, inst)
                .store(done, std::sync::atomic::Ordering::Relaxed);
        }
        App { sandbox, prf }
    }

    /// `prfmon args...` against this app's registry and blocks, in UTC.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_prfmon"));
        self.sandbox.apply_env(&mut cmd).args(args).env("TZ", "UTC");
        cmd
    }

    /// Starts `prfmon args...` with piped output.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn prfmon")
    }
}

/// The environment a shell command needs to run prfmon against `sandbox`'s registry and
/// blocks (an [`App`]'s, say), for tmux.
pub fn shell_env(sandbox: &Sandbox) -> String {
    let q = |p: &Path| format!("'{}'", p.display());
    format!(
        "PRFDATA_REGISTRY={} PRFDATA_SHM_DIR={} TZ=UTC",
        q(&sandbox.registry),
        q(&sandbox.shm)
    )
}

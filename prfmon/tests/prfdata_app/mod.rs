//! A prfdata app installed with the real provider (`libprfdata_provider.so`) in a temp
//! registry, run as a child process (this test binary re-executed), and `prfmon` run against it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prfdata_registry::FileRegistry;

use super::common::{finish, Run, TEST_WAIT};

/// A temp registry with a map installed (the real `libprfdata_provider.so` as its library),
/// and a block folder.
pub struct Installed {
    pub dir: tempfile::TempDir,
    pub registry: PathBuf,
    pub shm: PathBuf,
    pub first_counter: u32,
}

/// Installs `map` into a new temp registry.
pub fn install(map: &prfdata::map::MapDef) -> Installed {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = dir.path().join("registry");
    let shm = dir.path().join("shm");
    std::fs::create_dir_all(&shm).expect("block folder");
    let exe = std::env::current_exe().expect("current exe");
    let library = exe
        .parent()
        .expect("deps folder")
        .join("libprfdata_provider.so");
    assert!(library.is_file(), "{} is built", library.display());
    let reg = FileRegistry::open(&registry).expect("registry");
    let options = prfdata::install::InstallOptions {
        library,
        ini_dir: dir.path().join("ini"),
        replace: true,
    };
    let range = prfdata::install::install_in(&reg, map, &options).expect("install the map");
    Installed {
        dir,
        registry,
        shm,
        first_counter: range.first_counter,
    }
}

/// The environment variable that tells a re-executed test binary it is the app.
pub const APP_ROLE: &str = "PRFMON_TEST_APP";

/// An app child process (killed when dropped).
pub struct AppProcess {
    child: std::process::Child,
    /// What the app wrote into its `ready` file.
    pub ready: Vec<u8>,
}

impl Drop for AppProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `ready` file an app child writes into its block folder once it publishes.
pub fn ready_file(shm: &Path) -> PathBuf {
    shm.join("ready")
}

/// Starts this test binary again running only the ignored test `entry`, as the app (with
/// [`APP_ROLE`] set and `installed`'s folders), and waits (bounded) for its `ready` file.
pub fn spawn_app(installed: &Installed, entry: &str) -> AppProcess {
    let ready = ready_file(&installed.shm);
    let _ = std::fs::remove_file(&ready);
    let child = Command::new(std::env::current_exe().expect("current exe"))
        .args(["--exact", entry, "--include-ignored", "--test-threads=1"])
        .env(APP_ROLE, "1")
        .env("PRFDATA_REGISTRY", &installed.registry)
        .env("PRFDATA_SHM_DIR", &installed.shm)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn the app");
    let mut app = AppProcess {
        child,
        ready: Vec::new(),
    };
    let start = Instant::now();
    loop {
        // Published whole by a rename, so a file that exists is complete.
        if let Ok(bytes) = std::fs::read(&ready) {
            app.ready = bytes;
            return app;
        }
        assert!(start.elapsed() < TEST_WAIT, "the app did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// In the app child: says it is ready, with `contents`.
pub fn app_ready(contents: &[u8]) {
    let shm = PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").expect("PRFDATA_SHM_DIR"));
    let tmp = shm.join("ready.tmp");
    std::fs::write(&tmp, contents).expect("write ready");
    std::fs::rename(&tmp, ready_file(&shm)).expect("publish ready");
}

/// Runs `prfmon args...` against `installed`'s registry and blocks, in UTC.
pub fn prfmon_for(installed: &Installed, args: &[&str]) -> Run {
    let child = Command::new(env!("CARGO_BIN_EXE_prfmon"))
        .args(args)
        .env("PRFDATA_REGISTRY", &installed.registry)
        .env("PRFDATA_SHM_DIR", &installed.shm)
        .env("TZ", "UTC")
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prfmon");
    finish(child)
}

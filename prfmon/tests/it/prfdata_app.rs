//! A prfdata app installed with the real provider (`libprfdata_provider.so`) in a temp
//! registry, run as a child process (this test binary re-executed), and `prfmon` run against it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use prfdata_testkit::{ready, ChildGuard, Sandbox};

use super::common::{finish, Run, PRFMON, TEST_WAIT};

/// A temp registry with a map installed (the real `libprfdata_provider.so` as its library),
/// and a block folder: a [`Sandbox`] (its `dir`, `registry` and `shm`) and the map's first
/// counter index.
pub struct Installed {
    pub sandbox: Sandbox,
    pub first_counter: u32,
}

impl std::ops::Deref for Installed {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl std::ops::DerefMut for Installed {
    fn deref_mut(&mut self) -> &mut Sandbox {
        &mut self.sandbox
    }
}

/// Installs `map` into a new temp registry.
pub fn install(map: &prfdata::map::MapDef) -> Installed {
    let sandbox = Sandbox::new();
    let range = sandbox.install(map);
    Installed {
        sandbox,
        first_counter: range.first_counter,
    }
}

/// The environment variable that tells a re-executed test binary it is the app.
pub const APP_ROLE: &str = "PRFMON_TEST_APP";

/// An app child process (stopped when dropped).
pub struct AppProcess {
    _child: ChildGuard,
    /// What the app wrote into its `ready` file.
    pub ready: Vec<u8>,
}

/// The `ready` file an app child writes into its block folder once it publishes.
pub fn ready_file(shm: &Path) -> PathBuf {
    shm.join("ready")
}

/// Starts this test binary again running only the ignored test `entry` (its full name:
/// `prfdata_testkit::test_path!`), as the app (with [`APP_ROLE`] set and `installed`'s
/// folders), and waits (bounded) for its `ready` file.
pub fn spawn_app(installed: &Installed, entry: &str) -> AppProcess {
    let ready = ready_file(&installed.shm);
    let _ = std::fs::remove_file(&ready);
    let mut command = prfdata_testkit::self_command(entry);
    installed
        .apply_env(&mut command)
        .env(APP_ROLE, "1")
        .stdout(Stdio::null());
    let child = ChildGuard::new(command.spawn().expect("spawn the app"), "the app");
    AppProcess {
        _child: child,
        ready: ready::wait(&ready, TEST_WAIT),
    }
}

/// In the app child: says it is ready, with `contents`.
pub fn app_ready(contents: &[u8]) {
    let shm = PathBuf::from(std::env::var_os("PRFDATA_SHM_DIR").expect("PRFDATA_SHM_DIR"));
    ready::publish(&ready_file(&shm), contents).expect("publish ready");
}

/// Runs `prfmon args...` against `installed`'s registry and blocks, in UTC.
pub fn prfmon_for(installed: &Installed, args: &[&str]) -> Run {
    let mut command = Command::new(PRFMON);
    installed
        .apply_env(&mut command)
        .args(args)
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().expect("spawn prfmon"))
}

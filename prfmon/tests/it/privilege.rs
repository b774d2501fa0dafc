//! Real users for the privilege tests: they run as root (as this machine and CI do), make
//! files owned by an unprivileged user (uid 65534, `nobody`) and run `prfmon` against them.
//! Not root: they are compiled as ignored, with the reason, when the build is not root
//! (`#[cfg_attr(not(prfmon_tests_root), ignore = "...")]`, see `prfmon/build.rs`) and check
//! again when they run ([`assert_root`]).

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use prfdata_registry::FileRegistry;

use super::common::{finish, name_object, test_providers_library, Run};

/// The unprivileged user: `nobody` on Debian and most systems.
pub const OTHER_UID: u32 = 65534;

/// For a test the build found runnable as root (`cfg(prfmon_tests_root)`): fails at once, with
/// the reason, if this process is not root after all (built as root, run as another user).
pub fn assert_root(test: &str) {
    let euid = rustix::process::geteuid().as_raw();
    assert_eq!(
        euid, 0,
        "{test}: this build ran as root, but the test runs as uid {euid}: run it as root, or \
         rebuild as this user (`cargo clean -p prfmon`) so that it is reported ignored"
    );
}

/// The name of [`OTHER_UID`] in the user database (for `--host-user`); its absence fails the
/// test, with what to do.
pub fn other_user_name(test: &str) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(OTHER_UID))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| {
            panic!(
                "{test}: no user with uid {OTHER_UID} in the user database: add one (Debian's \
                 `nobody`)"
            )
        })
}

/// Gives `path` to `uid` (and group `uid`).
pub fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).expect("chown");
}

/// Sets `path`'s permission bits.
pub fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A temp folder every user may traverse (root's, 0755), so that what the tests place in it
/// is reached through folders that pass the trust checks.
pub fn shared_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    chmod(dir.path(), 0o755);
    dir
}

/// A folder `dir/name` owned by [`OTHER_UID`], 0755.
pub fn other_users_folder(dir: &Path, name: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir(&folder).expect("mkdir");
    chown(&folder, OTHER_UID);
    chmod(&folder, 0o755);
    folder
}

/// Copies `from` to `to` with `mode`; returns `to`.
pub fn copy(from: &Path, to: &Path, mode: u32) -> PathBuf {
    std::fs::copy(from, to).expect("copy");
    chmod(to, mode);
    to.to_path_buf()
}

/// A copy of `prfmon` in `dir` that any user may run (the build folder may sit where another
/// user cannot reach it): it also runs the provider hosts.
pub fn public_prfmon(dir: &Path) -> PathBuf {
    copy(
        Path::new(env!("CARGO_BIN_EXE_prfmon")),
        &dir.join("prfmon"),
        0o755,
    )
}

/// A copy of the test providers' library at `path`, owned by `uid`, with `mode`.
pub fn test_provider_at(path: &Path, uid: u32, mode: u32) -> PathBuf {
    copy(&test_providers_library(), path, mode);
    chown(path, uid);
    path.to_path_buf()
}

/// Registers the test provider at `library` as `service`, good mode, its object at `index`
/// named `title`; Open and Close append to `call_log`.
pub fn register_good(
    registry: &FileRegistry,
    service: &str,
    library: &Path,
    index: u32,
    title: &str,
    call_log: &Path,
) {
    let export = [
        "good".into(),
        index.to_string(),
        call_log.display().to_string(),
    ];
    let timeout = prfdata_registry::service::DEFAULT_OPEN_TIMEOUT_MS;
    crate::common::register_exporting(registry, service, library, &export, timeout);
    name_object(registry, index, title);
}

/// Runs `exe args...` with `PRFDATA_REGISTRY=registry` (and `env`), to the end. The block
/// folder is the default one unless `env` names one: this process's `PRFDATA_SHM_DIR` (another
/// test's, while it holds [`prfdata_testkit::ProcessEnv`]) is not passed on.
pub fn run(exe: &Path, registry: &Path, args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut command = Command::new(exe);
    command
        .args(args)
        .env("PRFDATA_REGISTRY", registry)
        .env_remove("PRFDATA_SHM_DIR")
        .env_remove("PRFDATA_REGISTRY_FAULT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    finish(spawn_copied(&mut command).expect("spawn prfmon"))
}

/// A command that runs this test binary's ignored test `entry` (its full name:
/// `prfdata_testkit::test_path!`), on one thread: as `uid` (and group `uid`) from a copy in
/// `dir` that every user can run (the build folder may sit where that user cannot reach), or
/// as this process's user from the binary itself. Start it with [`spawn_copied`].
pub fn self_command_as(dir: &Path, entry: &str, uid: Option<u32>) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = match uid {
        None => Command::new(exe),
        Some(uid) => {
            let copied = dir.join("test-binary");
            if !copied.exists() {
                copy(&exe, &copied, 0o755);
            }
            let mut command = Command::new(copied);
            std::os::unix::process::CommandExt::uid(&mut command, uid);
            std::os::unix::process::CommandExt::gid(&mut command, uid);
            command
        }
    };
    // The registry and block folders are the default ones unless the caller sets them: this
    // process's (another test's, while it holds `prfdata_testkit::ProcessEnv`) are not passed on.
    command
        .args(["--exact", entry, "--include-ignored", "--test-threads=1"])
        .env_remove("PRFDATA_REGISTRY")
        .env_remove("PRFDATA_SHM_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

/// Spawns `command`, whose program this test process may have just written ([`copy`]): while
/// another test thread forks, its child holds the copy's write descriptor until it execs, and
/// exec of the copy fails with `ETXTBSY` meanwhile. Retried for up to 5 s; any other error at
/// once.
pub fn spawn_copied(command: &mut Command) -> std::io::Result<std::process::Child> {
    let start = std::time::Instant::now();
    loop {
        match command.spawn() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && start.elapsed() < std::time::Duration::from_secs(5) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

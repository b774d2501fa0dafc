//! The block folder against other local users. Another user who makes `/dev/shm/prfdata-<uid>`
//! first must not stop that uid's apps: with a runtime folder (`XDG_RUNTIME_DIR`) the app
//! publishes there and `prfmon query` finds it; without one the error names the folder's owner
//! and a fix the user can apply. A root collector with `--host-user` finds an app of that user
//! in the user's runtime folder (`/run/user/<uid>`), though its own environment is root's.
//!
//! These run the real paths: each scenario runs in a child of this test with a mount namespace
//! of its own, where `/dev/shm` and `/run` are fresh tmpfs mounts (so nothing another test or
//! user has there is touched), as root, with real processes as uid 65534.

use std::ffi::CStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;

use prfdata_testkit::{ready, ChildGuard};

use crate::common::{Run, PRFMON, TEST_WAIT};
use crate::prfdata_app;
use crate::privilege::{
    assert_root, chown, copy, other_user_name, other_users_folder, public_prfmon, run,
    self_command_as, shared_tempdir, spawn_copied, OTHER_UID,
};

prfdata::prfdata_map! {
    /// One value the collector must find.
    pub mod sf {
        app: "ShmFolderTest",
        object PROBE {
            name: "Shm Folder Probe", help: "The probe app.",
            counters {
                ANSWER: RawCount { name: "Answer", help: "A value the test looks for." },
            }
        }
    }
}

/// The value the app publishes.
const ANSWER: i32 = 616_161;

/// Which scenario the child in its own mount namespace runs.
const SCENARIO: &str = "PRFMON_TEST_SHM_SCENARIO";
/// Where the app child writes `ok <block path>` or `error: <message>`.
const APP_REPORT: &str = "PRFMON_TEST_SHM_APP_REPORT";

/// The app: activates in the default folder (no `PRFDATA_SHM_DIR`), publishes [`ANSWER`] and
/// reports its block's path, then waits to be stopped; or reports why it could not activate.
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    let Some(report) = std::env::var_os(APP_REPORT).map(PathBuf::from) else {
        return;
    };
    match sf::PrfData::activate() {
        Ok(prf) => {
            prf.get_ctr32(sf::ANSWER, ()).store(ANSWER, Relaxed);
            let said = format!("ok {}", prf.path().display());
            ready::publish(&report, said.as_bytes()).expect("report");
            std::thread::sleep(TEST_WAIT);
        }
        Err(e) => ready::publish(&report, format!("error: {e}").as_bytes()).expect("report"),
    }
}

/// Starts the app (as `uid` if given, from a copy in `dir`) with `env`, and waits for its
/// report (in `report_dir`).
fn start_app(
    dir: &Path,
    report_dir: &Path,
    env: &[(&str, &Path)],
    uid: Option<u32>,
) -> (ChildGuard, String) {
    let report = report_dir.join("app-report");
    let _ = std::fs::remove_file(&report);
    let mut command = self_command_as(dir, &prfdata_testkit::test_path!("app_child"), uid);
    command
        .env_remove("PRFDATA_SHM_DIR")
        .env_remove("XDG_RUNTIME_DIR")
        .env(APP_REPORT, &report);
    for (k, v) in env {
        command.env(k, v);
    }
    let child = spawn_copied(&mut command).expect("spawn the app");
    let guard = ChildGuard::new(child, "the app");
    let said = String::from_utf8(ready::wait(&report, TEST_WAIT)).unwrap();
    (guard, said)
}

/// Fails unless `out`, a `prfmon query`, shows the app's value.
fn assert_found(out: &Run) {
    assert!(
        out.stdout.contains("Shm Folder Probe") && out.stdout.contains(&ANSWER.to_string()),
        "prfmon query did not find the app:\n{}\n{}",
        out.stdout,
        out.stderr
    );
}

/// Runs this binary's test `entry` with [`SCENARIO`] set, in a mount namespace of its own where
/// `/dev/shm` and `/run` are empty tmpfs mounts, to the end; fails with its output if it fails.
/// The scenarios use the default folders: this process's `PRFDATA_SHM_DIR` and
/// `PRFDATA_REGISTRY` (another test's, while it holds [`prfdata_testkit::ProcessEnv`]) are not
/// passed on.
fn in_own_namespace(entry: &str) {
    let mut command = prfdata_testkit::self_command(&prfdata_testkit::test_path!(entry));
    command
        .env(SCENARIO, "1")
        .env_remove("PRFDATA_SHM_DIR")
        .env_remove("PRFDATA_REGISTRY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs in the forked child before `exec`, and only makes system calls
    // (`unshare`, `mount`) with C strings that are constants: it allocates nothing, takes no
    // lock and touches no state another thread of the parent could have left half-changed.
    unsafe {
        command.pre_exec(|| {
            check(libc::unshare(libc::CLONE_NEWNS))?;
            // Nothing mounted below may reach the parent's namespace.
            check(libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for (target, mode) in [(c"/dev/shm", c"mode=1777"), (c"/run", c"mode=0755")] {
                tmpfs(target, mode)?;
            }
            Ok(())
        });
    }
    let child = command
        .spawn()
        .expect("a child with a mount namespace of its own (needs CAP_SYS_ADMIN)");
    let out: Run = prfdata_testkit::finish(child, 3 * TEST_WAIT);
    assert_eq!(
        out.code, 0,
        "the scenario failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stdout.contains("1 passed"),
        "the scenario did not run:\n{}",
        out.stdout
    );
}

/// A fresh tmpfs at `target`.
///
/// # Safety
///
/// Only a system call: callable between `fork` and `exec`.
unsafe fn tmpfs(target: &CStr, mode: &CStr) -> std::io::Result<()> {
    // SAFETY: every pointer is a NUL-terminated constant string.
    check(unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            mode.as_ptr().cast(),
        )
    })
}

fn check(ret: libc::c_int) -> std::io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether this process is a scenario child (in its own namespace).
fn scenario() -> bool {
    std::env::var_os(SCENARIO).is_some()
}

#[test]
#[cfg_attr(
    not(prfmon_tests_mount),
    ignore = "needs root with CAP_SYS_ADMIN, for a mount namespace of its own (see prfmon/build.rs)"
)]
fn an_app_is_not_stopped_by_another_user_taking_its_dev_shm_folder() {
    assert_root("an_app_is_not_stopped_by_another_user_taking_its_dev_shm_folder");
    in_own_namespace("squatted_dev_shm");
}

/// The scenario of [`an_app_is_not_stopped_by_another_user_taking_its_dev_shm_folder`].
#[test]
#[ignore = "runs in a mount namespace of its own"]
fn squatted_dev_shm() {
    if !scenario() {
        return;
    }
    let uid = rustix::process::geteuid().as_raw();
    let taken = format!("/dev/shm/prfdata-{uid}");
    // Another user makes the folder first: a real process as uid 65534.
    let status = Command::new("mkdir")
        .args(["-m", "0700", &taken])
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .status()
        .expect("run mkdir as the other user");
    assert!(status.success(), "uid {OTHER_UID} could not make {taken}");

    let installed = prfdata_app::install(&sf::MAP);
    // A runtime folder as a login session has it: ours, 0700.
    let runtime = tempfile::tempdir().unwrap();
    crate::privilege::chmod(runtime.path(), 0o700);
    let env = [
        ("PRFDATA_REGISTRY", installed.registry.as_path()),
        ("XDG_RUNTIME_DIR", runtime.path()),
    ];
    let (app, said) = start_app(installed.dir.path(), installed.dir.path(), &env, None);
    let expected = runtime.path().join("prfdata/ShmFolderTest.blk");
    assert_eq!(said, format!("ok {}", expected.display()));

    let mut query = Command::new(PRFMON);
    query
        .arg("query")
        .env_remove("PRFDATA_SHM_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        query.env(k, v);
    }
    assert_found(&crate::common::finish(query.spawn().expect("spawn prfmon")));
    drop(app);

    // Without a runtime folder: the folder taken, and what to do about it.
    let (_app, said) = start_app(installed.dir.path(), installed.dir.path(), &env[..1], None);
    for part in [
        "error: ".to_owned(),
        taken.clone(),
        format!("belongs to uid {OTHER_UID}"),
        "PRFDATA_SHM_DIR".to_owned(),
        "XDG_RUNTIME_DIR".to_owned(),
        format!("ask uid {OTHER_UID} or root to remove"),
    ] {
        assert!(said.contains(&part), "{part:?} in {said}");
    }
}

#[test]
#[cfg_attr(
    not(prfmon_tests_mount),
    ignore = "needs root with CAP_SYS_ADMIN, for a mount namespace of its own (see prfmon/build.rs)"
)]
fn a_host_user_collector_finds_the_app_in_that_users_runtime_folder() {
    assert_root("a_host_user_collector_finds_the_app_in_that_users_runtime_folder");
    in_own_namespace("host_user_runtime_folder");
}

/// The scenario of [`a_host_user_collector_finds_the_app_in_that_users_runtime_folder`].
#[test]
#[ignore = "runs in a mount namespace of its own"]
fn host_user_runtime_folder() {
    if !scenario() {
        return;
    }
    let user = other_user_name("host_user_runtime_folder");
    // The runtime folders systemd-logind makes: the app user's, and root's.
    let runtime = |uid: u32| {
        let dir = PathBuf::from(format!("/run/user/{uid}"));
        std::fs::create_dir_all(&dir).unwrap();
        chown(&dir, uid);
        crate::privilege::chmod(&dir, 0o700);
        dir
    };
    let app_runtime = runtime(OTHER_UID);
    let root_runtime = runtime(0);

    // What the app user can reach: the provider, the app, and the user's own registry.
    let dir = shared_tempdir();
    let prfmon = public_prfmon(dir.path());
    let library = copy(
        &prfdata_testkit::provider_library(),
        &dir.path().join("libprfdata_provider.so"),
        0o755,
    );
    let registry_root = other_users_folder(dir.path(), "registry");
    let registry = prfdata_registry::FileRegistry::open(&registry_root).unwrap();
    let options = prfdata::install::InstallOptions {
        library,
        ini_dir: dir.path().join("ini"),
        replace: true,
    };
    prfdata::install::install_in(&registry, &sf::MAP, &options).unwrap();
    let reports = other_users_folder(dir.path(), "reports");

    // The app runs as the user, in a session: its runtime folder in its environment.
    let mut command_env = vec![
        ("PRFDATA_REGISTRY", registry_root.as_path()),
        ("XDG_RUNTIME_DIR", app_runtime.as_path()),
    ];
    let (_app, said) = start_app(dir.path(), &reports, &command_env, Some(OTHER_UID));
    let expected = app_runtime.join("prfdata/ShmFolderTest.blk");
    assert_eq!(said, format!("ok {}", expected.display()));

    // Root collects from its own session: XDG_RUNTIME_DIR is root's.
    command_env[1] = ("XDG_RUNTIME_DIR", root_runtime.as_path());
    let trust = registry_root.display().to_string();
    let out = run(
        &prfmon,
        &registry_root,
        &["query", "--trust-path", &trust, "--host-user", &user],
        &command_env[1..],
    );
    assert_found(&out);
}

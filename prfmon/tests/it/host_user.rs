//! `--host-user NAME`: when root collects, provider hosts run as a less privileged user, set
//! (groups, group, user) before they load anything; data still flows from what that user can
//! read; a library only root can read is skipped with an error that says so; a collector that
//! is not root refuses the option. Real `prfmon` processes, a real unprivileged user (uid
//! 65534), the real provider library reading a real block.

use crate::common;
use crate::prfdata_app;
use crate::privilege;

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use prfdata_registry::{performance_services, FileRegistry};
use privilege::{
    assert_root, copy, other_user_name, other_users_folder, public_prfmon, register_good, run,
    shared_tempdir, spawn_copied, test_provider_at, OTHER_UID,
};

prfdata::prfdata_map! {
    /// One object with one value the test can find.
    pub mod hu {
        app: "HostUserTest",
        object SERVICE = 0 {
            name: "Host User Probe", help: "The probe app.",
            detail: Novice, default: ANSWER, instances: none, costly: false,
            counters {
                ANSWER = 2: RawCount { name: "Answer", help: "A value the test looks for.", detail: Novice, scale: 0 },
            }
        }
    }
}

/// The value the app publishes.
const ANSWER: i32 = 424_242;

/// The app: publishes [`ANSWER`], says it is ready, waits to be killed.
#[test]
#[ignore = "entry point for the app child process"]
fn app_child() {
    if std::env::var_os(prfdata_app::APP_ROLE).is_none() {
        return;
    }
    let prf = hu::PrfData::activate().expect("the app activates");
    prf.get_ctr32(hu::ANSWER, ())
        .store(ANSWER, std::sync::atomic::Ordering::Relaxed);
    prfdata_app::app_ready(b"ready");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn provider_hosts_run_as_the_host_user() {
    const TEST: &str = "provider_hosts_run_as_the_host_user";
    assert_root(TEST);
    let user = other_user_name(TEST);
    let dir = shared_tempdir();
    let prfmon = public_prfmon(dir.path());
    let library = test_provider_at(&dir.path().join("libprobe.so"), 0, 0o755);
    let logs = other_users_folder(dir.path(), "logs");
    let call_log = logs.join("calls.log");
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    register_good(&registry, "Probe", &library, 1848, "Probe", &call_log);

    let out = run(
        &prfmon,
        &registry_root,
        &["query", "--host-user", &user],
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("from service Probe"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    // The provider's Open created its log as the host process's user.
    let owner = std::fs::metadata(&call_log)
        .expect("Open wrote its log")
        .uid();
    assert_eq!(owner, OTHER_UID, "the provider ran as uid {owner}");

    // Without the option, the host runs as root (the log is appended to, its owner stays).
    std::fs::remove_file(&call_log).unwrap();
    let out = run(&prfmon, &registry_root, &["query"], &[]);
    assert!(out.stdout.contains("from service Probe"), "{}", out.stderr);
    assert_eq!(std::fs::metadata(&call_log).unwrap().uid(), 0);
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn data_flows_from_a_block_the_host_user_can_read() {
    const TEST: &str = "data_flows_from_a_block_the_host_user_can_read";
    assert_root(TEST);
    let user = other_user_name(TEST);
    let dir = shared_tempdir();
    let prfmon = public_prfmon(dir.path());
    // The real provider, where the host user can read it.
    let exe = std::env::current_exe().unwrap();
    let built = prfdata_testkit::provider_library();
    let library = copy(&built, &dir.path().join("libprfdata_provider.so"), 0o755);
    // The registry is the app user's (a registry is private to its owner, and the provider
    // reads it in the host, as that user); root installs into it, and trusts it explicitly.
    let registry_root = other_users_folder(dir.path(), "registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let trust = registry_root.display().to_string();
    let options = prfdata::install::InstallOptions {
        library,
        ini_dir: dir.path().join("ini"),
        replace: true,
    };
    prfdata::install::install_in(&registry, &hu::MAP, &options).unwrap();

    // The app runs as the unprivileged user, as a service does: its block is that user's,
    // owner-only.
    let shm = other_users_folder(dir.path(), "shm");
    let app_exe = copy(&exe, &dir.path().join("app"), 0o755);
    let child = spawn_copied(
        std::process::Command::new(&app_exe)
            .args([
                "--exact",
                &prfdata_testkit::test_path!("app_child"),
                "--include-ignored",
                "--test-threads=1",
            ])
            .env(prfdata_app::APP_ROLE, "1")
            .env("PRFDATA_SHM_DIR", &shm)
            .uid(OTHER_UID)
            .gid(OTHER_UID)
            .stdout(std::process::Stdio::null()),
    )
    .expect("spawn the app");
    let _app = KillOnDrop(child);
    let ready = prfdata_app::ready_file(&shm);
    let start = std::time::Instant::now();
    while !ready.exists() {
        assert!(start.elapsed() < common::TEST_WAIT, "the app did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    let env = [("PRFDATA_SHM_DIR", shm.as_path())];

    // A root host refuses a block another user owns: no data (and no harm).
    let out = run(
        &prfmon,
        &registry_root,
        &["query", "--trust-path", &trust],
        &env,
    );
    assert!(!out.stdout.contains(&ANSWER.to_string()), "{}", out.stdout);

    // Run as the block's user, the host reads it.
    let out = run(
        &prfmon,
        &registry_root,
        &["query", "--trust-path", &trust, "--host-user", &user],
        &env,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Host User Probe") && out.stdout.contains(&ANSWER.to_string()),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    let services = performance_services(&registry).unwrap();
    assert!(services.iter().all(|s| !s.disabled), "{services:?}");
}

/// A child process killed and reaped when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn a_library_only_root_can_read_is_skipped_with_a_clear_error() {
    const TEST: &str = "a_library_only_root_can_read_is_skipped_with_a_clear_error";
    assert_root(TEST);
    let user = other_user_name(TEST);
    let dir = shared_tempdir();
    let prfmon = public_prfmon(dir.path());
    let library = test_provider_at(&dir.path().join("libprobe.so"), 0, 0o700);
    let call_log = dir.path().join("calls.log");
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    register_good(&registry, "Probe", &library, 1848, "Probe", &call_log);

    let out = run(
        &prfmon,
        &registry_root,
        &["query", "--host-user", &user],
        &[],
    );
    assert!(!out.stdout.contains("from service Probe"), "{}", out.stdout);
    let expected = format!(
        "service Probe: the provider host runs as uid {OTHER_UID}, which cannot read provider library {}",
        library.display()
    );
    assert!(
        out.stderr.contains(&expected),
        "expected `{expected}` in:\n{}",
        out.stderr
    );
    assert!(out.stderr.contains("skipped"), "{}", out.stderr);
    let services = performance_services(&registry).unwrap();
    assert!(
        services.iter().all(|s| !s.disabled),
        "skipped, not disabled: {services:?}"
    );
    assert!(!call_log.exists());
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn a_collector_that_is_not_root_refuses_host_user() {
    const TEST: &str = "a_collector_that_is_not_root_refuses_host_user";
    assert_root(TEST);
    let user = other_user_name(TEST);
    let dir = shared_tempdir();
    let prfmon = public_prfmon(dir.path());
    let home = other_users_folder(dir.path(), "home");
    let registry_root = home.join("registry");
    let child = spawn_copied(
        std::process::Command::new(&prfmon)
            .args(["query", "--host-user", &user])
            .env("PRFDATA_REGISTRY", &registry_root)
            .env("HOME", &home)
            .uid(OTHER_UID)
            .gid(OTHER_UID)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    )
    .unwrap();
    let out = common::finish(child);
    assert_ne!(out.code, 0, "{}", out.stdout);
    let expected = format!(
        "--host-user {user}: only a collector running as root can run provider hosts as another user (this one runs as uid {OTHER_UID})"
    );
    assert!(
        out.stderr.contains(&expected),
        "expected `{expected}` in:\n{}",
        out.stderr
    );
}

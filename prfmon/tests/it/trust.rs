//! A collector never loads a provider library, or trusts a registry, that a user other than
//! root or the collector's own user could change (Privilege). Real files owned by a
//! real unprivileged user (uid 65534), real `prfmon` processes running as root.
//!
//! Before the fix, root with another user's `PRFDATA_REGISTRY` (or a registry naming that
//! user's library) loaded the library as root: every refusal below was a load.

use crate::common;
use crate::privilege;

use std::path::Path;

use prfdata_registry::{performance_services, FileRegistry};
use privilege::{
    assert_root, chmod, other_users_folder, register_good, run, shared_tempdir, test_provider_at,
    OTHER_UID,
};

const INDEX: u32 = 1848;
const TITLE: &str = "Trust Probe";

/// Whether `prfmon query`'s table has the probe's object.
fn collected(stdout: &str) -> bool {
    stdout.contains("from service Probe")
}

/// Asserts the run refused `library` because of `component` breaking `rule`, skipped the
/// service without disabling it, and never called the library's Open.
fn assert_refused(
    run: &common::Run,
    registry: &Path,
    library: &Path,
    component: &Path,
    rule: &str,
    call_log: &Path,
) {
    assert!(
        !collected(&run.stdout),
        "the object was collected:\n{}",
        run.stdout
    );
    let expected = format!(
        "refusing provider library {}: {} (owner uid",
        library.display(),
        component.display()
    );
    assert!(
        run.stderr.contains(&expected),
        "expected `{expected}` in:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(rule),
        "expected the rule `{rule}` in:\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("--trust-path"), "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("refusing provider library").count(),
        1,
        "logged once:\n{}",
        run.stderr
    );
    assert!(!call_log.exists(), "the library's Open ran");
    let services = performance_services(&FileRegistry::open(registry).unwrap()).unwrap();
    assert!(
        services.iter().all(|s| !s.disabled),
        "skipped, not disabled: {services:?}"
    );
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn root_refuses_a_provider_library_in_another_users_folder() {
    assert_root("root_refuses_a_provider_library_in_another_users_folder");
    let dir = shared_tempdir();
    let home = other_users_folder(dir.path(), "home");
    let library = test_provider_at(&home.join("libprobe.so"), OTHER_UID, 0o755);
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let call_log = dir.path().join("calls.log");
    register_good(&registry, "Probe", &library, INDEX, TITLE, &call_log);
    for extra in [&[][..], &["--in-process"][..]] {
        let args: Vec<&str> = ["query"]
            .iter()
            .copied()
            .chain(extra.iter().copied())
            .collect();
        let out = run(
            Path::new(env!("CARGO_BIN_EXE_prfmon")),
            &registry_root,
            &args,
            &[],
        );
        assert_refused(
            &out,
            &registry_root,
            &library,
            &home,
            "is owned by neither root nor the collector's user",
            &call_log,
        );
    }
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn root_refuses_a_root_owned_library_in_another_users_folder() {
    assert_root("root_refuses_a_root_owned_library_in_another_users_folder");
    // The file is root's, but its folder is not: the user could rename another file over it.
    let dir = shared_tempdir();
    let home = other_users_folder(dir.path(), "home");
    let library = test_provider_at(&home.join("libprobe.so"), 0, 0o755);
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let call_log = dir.path().join("calls.log");
    register_good(&registry, "Probe", &library, INDEX, TITLE, &call_log);
    let out = run(
        Path::new(env!("CARGO_BIN_EXE_prfmon")),
        &registry_root,
        &["query"],
        &[],
    );
    assert_refused(
        &out,
        &registry_root,
        &library,
        &home,
        "is owned by neither root nor the collector's user",
        &call_log,
    );
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn a_group_writable_parent_folder_is_refused() {
    assert_root("a_group_writable_parent_folder_is_refused");
    let dir = shared_tempdir();
    let lib_dir = dir.path().join("lib");
    std::fs::create_dir(&lib_dir).unwrap();
    chmod(&lib_dir, 0o775);
    let library = test_provider_at(&lib_dir.join("libprobe.so"), 0, 0o755);
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let call_log = dir.path().join("calls.log");
    register_good(&registry, "Probe", &library, INDEX, TITLE, &call_log);
    let out = run(
        Path::new(env!("CARGO_BIN_EXE_prfmon")),
        &registry_root,
        &["query"],
        &[],
    );
    assert_refused(
        &out,
        &registry_root,
        &library,
        &lib_dir,
        "is writable by its group",
        &call_log,
    );
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn another_users_library_in_a_sticky_folder_is_refused_roots_is_not() {
    assert_root("another_users_library_in_a_sticky_folder_is_refused_roots_is_not");
    // A world-writable sticky folder, as /tmp: others cannot replace root's file in it.
    let dir = shared_tempdir();
    let sticky = dir.path().join("sticky");
    std::fs::create_dir(&sticky).unwrap();
    chmod(&sticky, 0o1777);
    let theirs = test_provider_at(&sticky.join("libtheirs.so"), OTHER_UID, 0o755);
    let ours = test_provider_at(&sticky.join("libours.so"), 0, 0o755);
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let call_log = dir.path().join("calls.log");
    register_good(&registry, "Probe", &theirs, INDEX, TITLE, &call_log);
    let out = run(
        Path::new(env!("CARGO_BIN_EXE_prfmon")),
        &registry_root,
        &["query"],
        &[],
    );
    assert_refused(
        &out,
        &registry_root,
        &theirs,
        &theirs,
        "is owned by neither root nor the collector's user",
        &call_log,
    );

    register_good(&registry, "Probe", &ours, INDEX, TITLE, &call_log);
    let out = run(
        Path::new(env!("CARGO_BIN_EXE_prfmon")),
        &registry_root,
        &["query"],
        &[],
    );
    assert!(collected(&out.stdout), "{}\n{}", out.stdout, out.stderr);
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn trust_path_admits_a_library_in_another_users_folder() {
    assert_root("trust_path_admits_a_library_in_another_users_folder");
    let dir = shared_tempdir();
    let home = other_users_folder(dir.path(), "home");
    let library = test_provider_at(&home.join("libprobe.so"), OTHER_UID, 0o755);
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let call_log = dir.path().join("calls.log");
    register_good(&registry, "Probe", &library, INDEX, TITLE, &call_log);
    let home_arg = home.display().to_string();
    for extra in [&[][..], &["--in-process"][..]] {
        let mut args = vec!["query", "--trust-path", &home_arg];
        args.extend_from_slice(extra);
        let out = run(
            Path::new(env!("CARGO_BIN_EXE_prfmon")),
            &registry_root,
            &args,
            &[],
        );
        assert!(
            collected(&out.stdout),
            "{args:?}:\n{}\n{}",
            out.stdout,
            out.stderr
        );
        assert!(!out.stderr.contains("refusing"), "{}", out.stderr);
    }
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn the_normal_case_everything_owned_by_the_collectors_user_is_collected() {
    assert_root("the_normal_case_everything_owned_by_the_collectors_user_is_collected");
    let dir = shared_tempdir();
    let library = test_provider_at(&dir.path().join("libprobe.so"), 0, 0o755);
    let registry_root = dir.path().join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let call_log = dir.path().join("calls.log");
    register_good(&registry, "Probe", &library, INDEX, TITLE, &call_log);
    for args in [&["query"][..], &["query", "--in-process"][..]] {
        let out = run(
            Path::new(env!("CARGO_BIN_EXE_prfmon")),
            &registry_root,
            args,
            &[],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            collected(&out.stdout),
            "{args:?}:\n{}\n{}",
            out.stdout,
            out.stderr
        );
        assert!(!out.stderr.contains("refusing"), "{}", out.stderr);
    }
}

#[test]
#[cfg_attr(not(prfmon_tests_root), ignore = "needs root (see prfmon/build.rs)")]
fn root_refuses_a_registry_in_another_users_folder() {
    assert_root("root_refuses_a_registry_in_another_users_folder");
    // The user's own registry names a library of root's: the registry itself is refused,
    // since its owner chooses what root loads.
    let dir = shared_tempdir();
    let home = other_users_folder(dir.path(), "home");
    let library = test_provider_at(&dir.path().join("libprobe.so"), 0, 0o755);
    let registry_root = home.join("registry");
    let registry = FileRegistry::open(&registry_root).unwrap();
    let call_log = dir.path().join("calls.log");
    register_good(&registry, "Probe", &library, INDEX, TITLE, &call_log);
    privilege::chown(&registry_root, OTHER_UID);
    privilege::chown(&registry.store_path(), OTHER_UID);
    let prfmon = Path::new(env!("CARGO_BIN_EXE_prfmon"));
    for subcommand in ["query", "list", "serve"] {
        let out = run(prfmon, &registry_root, &[subcommand], &[]);
        assert_ne!(out.code, 0, "{subcommand}: {}", out.stdout);
        let expected = format!(
            "refusing registry folder {}: {} (owner uid {OTHER_UID}",
            registry_root.display(),
            home.display()
        );
        assert!(
            out.stderr.contains(&expected),
            "{subcommand}: expected `{expected}` in:\n{}",
            out.stderr
        );
        assert!(!collected(&out.stdout), "{}", out.stdout);
        assert!(!call_log.exists(), "{subcommand}: the library's Open ran");
    }
    // A store file another user owns, in a folder of root's, is refused too.
    let root_registry = dir.path().join("root-registry");
    let registry = FileRegistry::open(&root_registry).unwrap();
    register_good(&registry, "Probe", &library, INDEX, TITLE, &call_log);
    privilege::chown(&registry.store_path(), OTHER_UID);
    let out = run(prfmon, &root_registry, &["query"], &[]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains(&format!(
            "refusing registry store {}",
            registry.store_path().display()
        )),
        "{}",
        out.stderr
    );
    assert!(!call_log.exists(), "the library's Open ran");

    // --trust-path admits the user's registry.
    let home_arg = home.display().to_string();
    let out = run(
        prfmon,
        &registry_root,
        &["query", "--trust-path", &home_arg],
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(collected(&out.stdout), "{}\n{}", out.stdout, out.stderr);
}

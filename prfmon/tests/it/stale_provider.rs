//! A provider library older than the registry it reads: the registry's `format` is newer than
//! the library knows. The library's message names itself, both formats and how to rebuild it,
//! instead of calling the registry corrupt.
//!
//! A really old library cannot be built from these sources, so the library built with these
//! tests reads a registry written in a format newer than any build reads yet (`format = 99`):
//! the same mismatch, seen from the library's side. The library is loaded with `dlopen` in a
//! child process, as a provider host loads it, and says it on stderr.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Stdio;

use prfdata_testkit::{finish, self_command, test_path, Sandbox, WAIT};

/// The env var that makes the test binary load the provider instead of running the tests.
const CHILD_ENV: &str = "PRFMON_STALE_PROVIDER_CHILD";

/// A registry format no build reads yet.
const NEWER_FORMAT: u32 = 99;

/// Child: `dlopen` the provider named by [`CHILD_ENV`] and Open the app `StaleApp`; exits 0
/// when Open refuses (the expected answer), 1 when it succeeds.
#[test]
#[ignore = "entry point for child processes"]
fn child_entry() {
    let Some(library) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    type OpenFn = unsafe extern "C" fn(*const u16) -> u32;
    // SAFETY: loading the provider library built with these tests, whose initialisers are
    // Rust's only.
    let lib = unsafe { libloading::Library::new(PathBuf::from(library)) }.expect("dlopen");
    let names: Vec<u16> = "StaleApp".encode_utf16().chain([0, 0]).collect();
    // SAFETY: the symbol has the perflib Open signature; the argument is a double-NUL
    // terminated UTF-16 multi-string that outlives the call.
    let status = unsafe {
        let open: libloading::Symbol<OpenFn> =
            lib.get(b"OpenPerformanceData").expect("the Open export");
        open(names.as_ptr())
    };
    std::process::exit(i32::from(status == 0));
}

#[test]
fn a_provider_older_than_the_registry_names_itself_the_formats_and_the_rebuild() {
    let sandbox = Sandbox::new();
    // Private, as the registry makes its files: nothing else to say about them.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&sandbox.registry)
        .expect("the registry folder");
    let store = sandbox.registry.join("registry.toml");
    std::fs::write(&store, format!("format = {NEWER_FORMAT}\n")).expect("the registry file");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600))
        .expect("the registry file made private");
    let library = prfdata_testkit::provider_library();

    let mut command = self_command(&test_path!("child_entry"));
    sandbox
        .apply_env(&mut command)
        .env(CHILD_ENV, &library)
        .env("PRFDATA_PROVIDER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let run = finish(command.spawn().expect("spawn the child"), WAIT);

    assert_eq!(run.code, 0, "Open refuses: {}", run.stderr);
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("prfdata-provider: "))
        .unwrap_or_else(|| panic!("the provider says why: {}", run.stderr));
    assert!(!line.contains("corrupt"), "{line}");
    for part in [
        format!("the provider library {}", library.display()),
        format!("format {NEWER_FORMAT}"),
        "cargo build -p prfdata-provider".to_owned(),
        "install".to_owned(),
    ] {
        assert!(line.contains(&part), "`{part}` in: {line}");
    }
}

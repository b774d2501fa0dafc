//! What the machine building the tests has (tools on `PATH`, files, the build's uid and
//! capabilities), for the build scripts of the crates whose tests need them: they emit a `cfg`
//! per need, and a test says `#[cfg_attr(not(that_cfg), ignore = "needs ...")]`, so a missing
//! tool makes the test *ignored, with its reason*, never passed.
//!
//! Build scripts cannot depend on this crate cheaply (it links the library), so they include
//! this file, which uses `std` only: `#[path = "../prfdata-testkit/src/probe.rs"] mod probe;`
//! (prfmon's and demo-app's; prfdata's own reads one capability and stays self-contained, as a
//! library users build from its folder).
//! Each function prints the `cargo::rerun-if-...` lines that make cargo look again when the
//! answer may change.

use std::path::{Path, PathBuf};

/// Whether every one of `names` is a file in a `PATH` folder. Asks cargo to look again when
/// `PATH` changes, when a file found changes or goes, and, while one is missing, when a `PATH`
/// folder changes (the tool installed).
///
/// # Examples
///
/// ```
/// // `sh` is on every PATH this project builds on; no tool has this name.
/// assert!(prfdata_testkit::probe::tools_on_path(&["sh"]));
/// assert!(!prfdata_testkit::probe::tools_on_path(&["sh", "no-such-tool-4d1f"]));
/// ```
pub fn tools_on_path(names: &[&str]) -> bool {
    println!("cargo::rerun-if-env-changed=PATH");
    let folders: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let mut all = true;
    for name in names {
        match folders.iter().map(|f| f.join(name)).find(|p| p.is_file()) {
            Some(file) => println!("cargo::rerun-if-changed={}", file.display()),
            None => all = false,
        }
    }
    if !all {
        for folder in folders.iter().filter(|f| f.is_dir()) {
            println!("cargo::rerun-if-changed={}", folder.display());
        }
    }
    all
}

/// Whether `file` exists; asks cargo to look again when it changes or, while it is missing,
/// when its nearest existing parent folder changes.
///
/// # Examples
///
/// ```
/// use std::path::Path;
/// assert!(prfdata_testkit::probe::found(Path::new("/proc/self/status")));
/// assert!(!prfdata_testkit::probe::found(Path::new("/proc/no-such-file-4d1f")));
/// ```
pub fn found(file: &Path) -> bool {
    let watched = file.ancestors().find(|p| p.exists()).unwrap_or(file);
    println!("cargo::rerun-if-changed={}", watched.display());
    watched == file
}

/// Whether the build runs as root (effective uid 0), and its effective capability set, from
/// `/proc/self/status` (its `Uid:` and `CapEff:` lines). Asks cargo to look again when the
/// build is run by another user (sudo, su).
///
/// # Examples
///
/// ```
/// let (root, _caps) = prfdata_testkit::probe::privileges();
/// // SAFETY: geteuid has no preconditions and cannot fail.
/// assert_eq!(root, unsafe { libc::geteuid() } == 0);
/// ```
pub fn privileges() -> (bool, u64) {
    println!("cargo::rerun-if-env-changed=USER");
    println!("cargo::rerun-if-env-changed=SUDO_USER");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
            .to_owned()
    };
    // `Uid:` lists the real, effective, saved and file-system uids.
    let root = field("Uid:").split_whitespace().nth(1) == Some("0");
    let caps = u64::from_str_radix(&field("CapEff:"), 16).unwrap_or(0);
    (root, caps)
}

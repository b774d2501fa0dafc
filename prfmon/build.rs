//! Tells the integration tests what the machine building them has, so that a test that needs
//! it is reported by libtest as *ignored, with its reason* (`#[cfg_attr(not(..), ignore =
//! "..")]`) instead of passing without having run:
//!
//! - `cfg(prfmon_tests_root)`: the build runs as root (effective uid 0), so the tests can make
//!   files owned by another user and run processes as one (`tests/it/privilege.rs`);
//! - `cfg(prfmon_tests_mount)`: it also holds `CAP_SYS_ADMIN`, so a test can give a child a
//!   mount namespace of its own with a private tmpfs at `/dev/shm` and `/run`;
//! - `cfg(prfmon_tests_tmux)`: `tmux` is on `PATH` (`prfmon watch` in a real terminal pane);
//! - `cfg(prfmon_tests_prometheus)`: `prometheus` and `promtool` are on `PATH` (Debian's
//!   `prometheus` package: a real server scrapes `prfmon serve`, `promtool` checks its text);
//! - `cfg(prfmon_tests_tz)`: the tz database is at `/usr/share/zoneinfo` (Debian's `tzdata`).
//!
//! Tests are run by the user and on the machine that built them; a test that finds at run time
//! that what the build saw is gone fails and says so, it never passes silently (CI runs the
//! ignored tests too, so there a missing tool fails). Uid and capabilities come from
//! `/proc/self/status` (its `Uid:` and `CapEff:` lines), so the script needs no crate.

use std::path::{Path, PathBuf};

/// `CAP_SYS_ADMIN`'s bit in a capability set (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;

/// A file of the tz database the tests use (a zone with a half-hour offset).
const TZ_PROBE: &str = "/usr/share/zoneinfo/Asia/Kolkata";

fn main() {
    for cfg in ["root", "mount", "tmux", "prometheus", "tz"] {
        println!("cargo::rustc-check-cfg=cfg(prfmon_tests_{cfg})");
    }
    println!("cargo::rerun-if-changed=build.rs");
    privileges();
    let tmux = tools_on_path(&["tmux"]);
    let prometheus = tools_on_path(&["prometheus", "promtool"]);
    let tz = found(Path::new(TZ_PROBE));
    for (cfg, have) in [("tmux", tmux), ("prometheus", prometheus), ("tz", tz)] {
        if have {
            println!("cargo::rustc-cfg=prfmon_tests_{cfg}");
        }
    }
}

/// Emits `prfmon_tests_root` and `prfmon_tests_mount` from this process' uid and capabilities.
fn privileges() {
    // A build by another user (sudo, su) sets these differently: look again.
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
    if root {
        println!("cargo::rustc-cfg=prfmon_tests_root");
        if caps & (1 << CAP_SYS_ADMIN) != 0 {
            println!("cargo::rustc-cfg=prfmon_tests_mount");
        }
    }
}

/// Whether every one of `names` is a file in a `PATH` folder. Asks cargo to look again when
/// `PATH` changes, when a file found changes or goes, and, while one is missing, when a `PATH`
/// folder changes (the tool installed).
fn tools_on_path(names: &[&str]) -> bool {
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
fn found(file: &Path) -> bool {
    let watched = file.ancestors().find(|p| p.exists()).unwrap_or(file);
    println!("cargo::rerun-if-changed={}", watched.display());
    watched == file
}

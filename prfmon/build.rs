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

use std::path::Path;

#[path = "../prfdata-testkit/src/probe.rs"]
mod probe;

/// `CAP_SYS_ADMIN`'s bit in a capability set (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;

/// A file of the tz database the tests use (a zone with a half-hour offset).
const TZ_PROBE: &str = "/usr/share/zoneinfo/Asia/Kolkata";

fn main() {
    for cfg in ["root", "mount", "tmux", "prometheus", "tz"] {
        println!("cargo::rustc-check-cfg=cfg(prfmon_tests_{cfg})");
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../prfdata-testkit/src/probe.rs");
    privileges();
    let tmux = probe::tools_on_path(&["tmux"]);
    let prometheus = probe::tools_on_path(&["prometheus", "promtool"]);
    let tz = probe::found(Path::new(TZ_PROBE));
    for (cfg, have) in [("tmux", tmux), ("prometheus", prometheus), ("tz", tz)] {
        if have {
            println!("cargo::rustc-cfg=prfmon_tests_{cfg}");
        }
    }
}

/// Emits `prfmon_tests_root` and `prfmon_tests_mount` from this process' uid and capabilities.
fn privileges() {
    let (root, caps) = probe::privileges();
    if root {
        println!("cargo::rustc-cfg=prfmon_tests_root");
        if caps & (1 << CAP_SYS_ADMIN) != 0 {
            println!("cargo::rustc-cfg=prfmon_tests_mount");
        }
    }
}

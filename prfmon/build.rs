//! Tells the integration tests what the user building them may do, so that a test that needs
//! it is reported by libtest as *ignored, with its reason* (`#[cfg_attr(not(..), ignore =
//! "..")]`) instead of passing without having run:
//!
//! - `cfg(prfmon_tests_root)`: the build runs as root (effective uid 0), so the tests can make
//!   files owned by another user and run processes as one (`tests/it/privilege.rs`);
//! - `cfg(prfmon_tests_mount)`: it also holds `CAP_SYS_ADMIN`, so a test can give a child a
//!   mount namespace of its own with a private tmpfs at `/dev/shm` and `/run`.
//!
//! Tests are run by the user who built them; a test that finds at run time that it was built
//! with more rights than it has fails and says so (rebuild), it never passes silently. Both come
//! from `/proc/self/status` (its `Uid:` and `CapEff:` lines), so the script needs no crate.

/// `CAP_SYS_ADMIN`'s bit in a capability set (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(prfmon_tests_root)");
    println!("cargo::rustc-check-cfg=cfg(prfmon_tests_mount)");
    println!("cargo::rerun-if-changed=build.rs");
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

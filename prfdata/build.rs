//! Tells the integration tests what the user building them may do, so that a test that needs
//! it is reported by libtest as *ignored, with its reason* (`#[cfg_attr(not(..), ignore =
//! "..")]`) instead of passing without having run:
//!
//! - `cfg(prfdata_tests_mknod)`: the build holds `CAP_MKNOD` (root, as a rule), so a test can
//!   make a device node at a block's path (`tests/it/block_files.rs`).
//!
//! A test that finds at run time that it was built with more rights than it has fails and says
//! so (rebuild), it never passes silently. The capability comes from `/proc/self/status` (its
//! `CapEff:` line), so the script needs no crate; the library itself uses none of this.

/// `CAP_MKNOD`'s bit in a capability set (linux/capability.h).
const CAP_MKNOD: u32 = 27;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(prfdata_tests_mknod)");
    println!("cargo::rerun-if-changed=build.rs");
    // A build by another user (sudo, su) has other capabilities: look again.
    println!("cargo::rerun-if-env-changed=USER");
    println!("cargo::rerun-if-env-changed=SUDO_USER");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    if caps & (1 << CAP_MKNOD) != 0 {
        println!("cargo::rustc-cfg=prfdata_tests_mknod");
    }
}

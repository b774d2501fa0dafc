//! Tells the integration tests what the machine building them has, so that a test that needs
//! it is reported by libtest as *ignored, with its reason* (`#[cfg_attr(not(..), ignore =
//! "..")]`) instead of passing without having run:
//!
//! - `cfg(demo_app_tests_tmux)`: `tmux` is on `PATH` (`demo-app live` in a real terminal pane).
//!
//! Tests are run by the user and on the machine that built them; a test that finds at run time
//! that what the build saw is gone fails and says so, it never passes silently (CI runs the
//! ignored tests too, so there a missing tool fails).

#[path = "../prfdata-testkit/src/probe.rs"]
#[allow(dead_code, reason = "this script needs only tools_on_path")]
mod probe;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(demo_app_tests_tmux)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../prfdata-testkit/src/probe.rs");
    if probe::tools_on_path(&["tmux"]) {
        println!("cargo::rustc-cfg=demo_app_tests_tmux");
    }
}

//! Tells the integration tests what the machine building them has, so that a test that needs
//! it is reported by libtest as *ignored, with its reason* (`#[cfg_attr(not(..), ignore =
//! "..")]`) instead of passing without having run:
//!
//! - `cfg(demo_app_tests_tmux)`: `tmux` is on `PATH` (`demo-app live` in a real terminal pane).
//!
//! Tests are run by the user and on the machine that built them; a test that finds at run time
//! that what the build saw is gone fails and says so, it never passes silently (CI runs the
//! ignored tests too, so there a missing tool fails).

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(demo_app_tests_tmux)");
    println!("cargo::rerun-if-changed=build.rs");
    if tools_on_path(&["tmux"]) {
        println!("cargo::rustc-cfg=demo_app_tests_tmux");
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

//! The files cargo builds with the tests, found from the running test binary.
//!
//! `cargo test` puts a test binary in `target/<profile>/deps/`, and with it the cdylibs of the
//! package's dev-dependencies (`libprfdata_provider.so` when the package dev-depends on
//! `prfdata-provider`); `cargo build` copies cdylibs and binaries up to `target/<profile>/`.
//! Each helper looks beside the test binary first, then one folder up.

use std::path::{Path, PathBuf};

/// The folders searched: the test binary's own (`deps/`) and the one above it.
fn search_folders() -> Vec<PathBuf> {
    let exe = std::env::current_exe().expect("the path of the running test binary");
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(Path::to_path_buf)
        .collect()
}

/// The first of `file_name` in the search folders; panics naming what to build otherwise.
fn find(file_name: &str, how: &str) -> PathBuf {
    let folders = search_folders();
    folders
        .iter()
        .map(|folder| folder.join(file_name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{file_name} is not in {folders:?}: {how}"))
}

/// The cdylib `lib<crate_name>.so` built with these tests (`crate_name` as in `[lib] name`).
///
/// # Examples
///
/// ```no_run
/// // prfmon's tests dev-depend on its deliberately bad test providers.
/// let bad = prfdata_testkit::cdylib("prfmon_test_providers");
/// assert!(bad.ends_with("libprfmon_test_providers.so"));
/// ```
pub fn cdylib(crate_name: &str) -> PathBuf {
    find(
        &format!("lib{crate_name}.so"),
        "add the package that builds it to this package's [dev-dependencies]",
    )
}

/// The real provider library, `libprfdata_provider.so`, built with these tests (the testing
/// package dev-depends on `prfdata-provider`, or is it).
///
/// # Examples
///
/// ```no_run
/// let library = prfdata_testkit::provider_library();
/// assert!(library.ends_with("libprfdata_provider.so"));
/// ```
pub fn provider_library() -> PathBuf {
    cdylib("prfdata_provider")
}

/// The workspace binary `name` (`target/<profile>/<name>`), for a test of another package
/// (a package's own tests have `env!("CARGO_BIN_EXE_<name>")`, which is exact).
///
/// # Examples
///
/// ```no_run
/// // Built by `cargo build --workspace` or `cargo test --workspace`.
/// let prfmon = prfdata_testkit::target_binary("prfmon");
/// assert!(prfmon.ends_with("prfmon"));
/// ```
pub fn target_binary(name: &str) -> PathBuf {
    find(
        name,
        "build the workspace (cargo build --workspace) or the package that has this binary",
    )
}

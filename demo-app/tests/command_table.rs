//! docs/prfmon.md's `demo-app` table lists every option each subcommand's `--help` shows.

use std::process::Command;

const DEMO_APP: &str = env!("CARGO_BIN_EXE_demo-app");

/// The long options (`--name`) `demo-app <command> --help` lists, `--help` aside.
fn options(command: &str) -> Vec<String> {
    let out = Command::new(DEMO_APP)
        .args([command, "--help"])
        .output()
        .expect("run demo-app --help");
    assert!(out.status.success(), "demo-app {command} --help failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().find(|word| word.starts_with("--")))
        .map(|word| word.trim_end_matches(',').to_owned())
        .filter(|option| option != "--help")
        .collect()
}

#[test]
fn demo_app_help_matches_the_command_table() {
    let table = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/prfmon.md"))
        .expect("docs/prfmon.md is readable");
    let mut missing = Vec::new();
    for command in ["install", "run", "live", "uninstall"] {
        let start = format!("| `demo-app {command}");
        let row = table
            .lines()
            .find(|line| line.starts_with(&start))
            .unwrap_or_else(|| panic!("docs/prfmon.md has no row for demo-app {command}"));
        for option in options(command) {
            if !row.contains(&option) {
                missing.push(format!("demo-app {command} {option}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "options missing from docs/prfmon.md's table: {missing:?}"
    );
}

//! What the libraries warn about (prfdata logs through the `log` facade) reaches the demo's
//! stderr as one of its notes, instead of being dropped for want of a logger.

use std::process::{Command, Stdio};
use std::time::Duration;

use prfdata_testkit::Sandbox;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-app");

#[test]
fn a_warning_of_the_library_is_written_as_a_note() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(&sandbox.registry).unwrap();
    // A registry the library cannot read: it warns that it cannot check the installed names,
    // and publishes anyway.
    std::fs::write(
        sandbox.registry.join("registry.toml"),
        "this is [not toml\n",
    )
    .unwrap();
    let mut demo = Command::new(DEMO);
    sandbox.apply_env(&mut demo);
    demo.args(["run", "--duration", "0.5", "--workers", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let run = prfdata_testkit::finish(demo.spawn().unwrap(), Duration::from_secs(60));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("demo-app: warning: app PrfDataDemo: cannot check its installed names in "),
        "the library's warning, as a note:\n{}",
        run.stderr
    );
}

//! `prfmon watch` with no terminal to draw in (output piped, no controlling terminal, as under
//! cron, CI or a service manager) says so and names the command that logs the same counters
//! to a pipe or a file: `prfmon typeperf`.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::serve_common::setup;

#[test]
fn without_a_terminal_watch_names_typeperf_and_exits_1() {
    let setup = setup();
    let _app = setup.start_app("static");
    let path = r"\Serve Test Service\Queue length";
    let mut command = Command::new(env!("CARGO_BIN_EXE_prfmon"));
    command
        .args(["watch", path, "--interval", "0.5"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    setup.apply_env(&mut command);
    // SAFETY: the closure runs in the forked child before exec and makes one system call
    // (setsid, async-signal-safe); it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
    let child = command.spawn().expect("spawn prfmon watch");
    let run = prfdata_testkit::finish(child, Duration::from_secs(10));

    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "", "nothing drawn: {run:?}");
    let last = run.stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!(
            "prfmon watch: watch draws in a terminal, and standard output is not one; for a \
             pipe or a file, log the same counters with: prfmon typeperf '{path}' -si 0.5"
        ),
        "{run:?}"
    );
}

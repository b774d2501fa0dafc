//! prfdata's side of the worker-churn scenario, at CI scale: the `churn` binary
//! with real worker processes, a third of them `SIGKILL`ed, 200 deaths. The Python side
//! (`benches/scripts/multiprocess_compare.sh`) needs PyPI and is not run here.

use std::collections::HashMap;
use std::process::Command;

fn figures(out: &str) -> HashMap<String, u64> {
    out.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            // The timings are decimals: only their presence matters here.
            let v = v.parse::<f64>().ok()? as u64;
            Some((k.to_string(), v))
        })
        .collect()
}

#[test]
fn two_hundred_deaths_keep_the_total_exact_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_churn"))
        .args(["--deaths", "200", "--k", "1000", "--reads", "20"])
        .args(["--sample-us", "300"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("run churn");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "churn failed: {stdout}\n{stderr}");
    let f = figures(&stdout);
    let get = |k: &str| *f.get(k).unwrap_or_else(|| panic!("no {k} in:\n{stdout}"));

    assert_eq!(get("deaths"), 200);
    assert_eq!(
        get("reported"),
        208 * 1000,
        "every worker reported its increments"
    );
    assert_eq!(get("total_end"), get("reported"), "_Total is exact");
    assert!(get("samples") > 0, "{stdout}");
    assert_eq!(get("decreases"), 0, "_Total never went down: {stderr}");
    assert_eq!(get("scrape_errors"), 0, "every sample read: {stderr}");
    assert_eq!(get("rows_start"), 9, "8 workers and _Total");
    assert_eq!(
        get("rows_end"),
        9,
        "8 workers and _Total: the dead ones are gone"
    );
    assert_eq!(
        get("block_bytes_max"),
        get("block_bytes_start"),
        "the block never grew"
    );
    assert_eq!(get("files_end"), get("files_start"), "no file per worker");
    assert_eq!(get("bytes_end"), get("bytes_start"));
    assert_eq!(get("files_after_exit"), 0);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left"
    );
}

//! An app with many instances, for a `/metrics` of several megabytes: what
//! `benches/scripts/serve_load.sh` scrapes and attacks with `WIDE_INSTANCES=N` (60,000
//! instances of two counters give about 11 MB of classic text), where the demo app's 7 KB fit
//! in the kernel's socket buffers and no client that does not read can hold an answer up.
//!
//! ```sh
//! cargo build --release -p prfdata-benches --bin wide_app -p prfdata-provider
//! target/release/wide_app install            # next to target/release/libprfdata_provider.so
//! target/release/wide_app run 60000 3600     # instances, seconds
//! ```

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use prfdata::install::InstallOptions;

prfdata::prfdata_map! {
    /// One object with up to 200,000 instances.
    pub mod wide {
        app: "PrfDataWide",
        object SESSION {
            name: "Wide Session", help: "One of many sessions.",
            instances: { max: 200000, name_len: 32 },
            counters {
                BYTES: RawCount { name: "Session bytes", help: "Bytes the session moved." },
                PACKETS: RawCount { name: "Session packets", help: "Packets the session moved." },
            }
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: wide_app install | wide_app run INSTANCES SECONDS");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["install"] => install(),
        ["run", instances, seconds] => match (instances.parse(), seconds.parse()) {
            (Ok(n), Ok(s)) => run(n, s),
            _ => usage(),
        },
        _ => usage(),
    };
    if let Err(e) = result {
        eprintln!("wide_app: {e}");
        std::process::exit(1);
    }
}

/// Installs the app with the provider library next to this executable.
fn install() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let library = exe.with_file_name("libprfdata_provider.so");
    if !library.exists() {
        return Err(format!(
            "{} does not exist: cargo build --release -p prfdata-provider",
            library.display()
        ));
    }
    let ini_dir = library.parent().map(PathBuf::from).unwrap_or_default();
    wide::PrfData::install(&InstallOptions {
        library,
        ini_dir,
        replace: true,
    })
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Publishes `instances` sessions for `seconds`.
fn run(instances: u32, seconds: u64) -> Result<(), String> {
    let prf = wide::PrfData::activate().map_err(|e| e.to_string())?;
    for i in 0..instances {
        let inst = prf
            .add_instance(wide::SESSION, &format!("session {i:07}"))
            .map_err(|e| format!("instance {i}: {e}"))?;
        prf.get_ctr32(wide::BYTES, inst).store(i as i32, Relaxed);
        prf.get_ctr32(wide::PACKETS, inst).store(7, Relaxed);
    }
    println!("ready: {instances} instances");
    std::thread::sleep(Duration::from_secs(seconds));
    Ok(())
}

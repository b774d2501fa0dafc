#!/usr/bin/env bash
# The figures ARCHITECTURE.md reports, measured on the checkout this script is in:
#   1. prfdata's normal dependency count (crates in `cargo tree -p prfdata -e normal`, itself excluded);
#   2. the clean build time of a one-file app that depends on prfdata only (debug, its own target dir);
#   3. the number of test binaries `cargo test --workspace` runs (integration test targets,
#      unit-test targets of libs and bins, doctest runs);
#   4. the wall time of `cargo test --workspace` once everything is built.
# Usage: benches/scripts/architecture_metrics.sh   (takes a few minutes; run it on a quiet machine)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

deps=$(cargo tree -p prfdata -e normal --prefix none --format '{p}' 2>/dev/null \
  | sed 's/ (\*)//' | sort -u | grep -v '^prfdata v' | wc -l)
echo "prfdata normal dependencies: $deps"

app=$(mktemp -d)
trap 'rm -rf "$app"' EXIT
mkdir -p "$app/src"
cat > "$app/Cargo.toml" <<TOML
[package]
name = "one-file-app"
version = "0.1.0"
edition = "2021"
[dependencies]
prfdata = { path = "$root/prfdata" }
[workspace]
TOML
cat > "$app/src/main.rs" <<'RS'
use std::sync::atomic::Ordering::Relaxed;
prfdata::prfdata_map! {
    pub mod app {
        app: "OneFileApp",
        object JOBS = 0 {
            name: "Jobs", help: "Jobs processed.", detail: Novice, default: DONE,
            instances: none, costly: false,
            counters {
                DONE = 2: CounterCounter { name: "Jobs/sec", help: "Jobs done per second.", detail: Novice, scale: 0 },
            }
        }
    }
}
fn main() {
    if let Ok(prf) = app::PrfData::activate() {
        prf.get_ctr32(app::DONE, ()).fetch_add(1, Relaxed);
    }
}
RS
cp "$root/Cargo.lock" "$app/Cargo.lock" 2>/dev/null || true
start=$(date +%s.%N)
(cd "$app" && cargo build --quiet --offline 2>/dev/null || cargo build --quiet)
end=$(date +%s.%N)
printf 'clean build of a one-file app using prfdata: %.1f s\n' "$(echo "$end - $start" | bc)"

cargo test --workspace --no-run --quiet 2>/dev/null
log=$(mktemp)
start=$(date +%s.%N)
cargo test --workspace >"$log" 2>&1 || true
end=$(date +%s.%N)
echo "test binaries run by cargo test --workspace: $(grep -cE '^\s+(Running|Doc-tests) ' "$log")"
printf 'cargo test --workspace wall time (built): %.0f s\n' "$(echo "$end - $start" | bc)"
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i-1); if ($i ~ /^failed;?$/) f += $(i-1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"

#!/usr/bin/env bash
# The worker-churn scenario of process-owned instances, side by side: prfdata (benches/src/bin/churn.rs) and
# prometheus_client's multiprocess mode (benches/scripts/multiprocess_compare.py). Prints each
# side's figures and a table for BENCHMARKS.md.
#
# Usage: benches/scripts/multiprocess_compare.sh [DEATHS]   (default 1000)
# Needs python3 with venv and access to PyPI (a venv is made under target/); not run in CI,
# whose prfdata half is benches/tests/churn.rs.
set -euo pipefail

deaths=${1:-1000}
# The version the figures in BENCHMARKS.md were measured with.
prometheus_client_version=0.26.0

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
venv=target/multiprocess-venv
if ! "$venv/bin/python" -c "import prometheus_client, sys; sys.exit(prometheus_client.__version__ != '$prometheus_client_version')" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "prometheus-client==$prometheus_client_version"
fi
cargo build --quiet --release -p prfdata-benches --bin churn

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--deaths "$deaths" --pool 8 --k 10000 --kill-every 3)

echo "== prfdata (churn --dir $work/prfdata ${common[*]})"
mkdir "$work/prfdata"
target/release/churn --dir "$work/prfdata" "${common[@]}" --reads 2000 | tee "$work/prfdata.txt"
echo "== prometheus_client $prometheus_client_version multiprocess (${common[*]})"
"$venv/bin/python" benches/scripts/multiprocess_compare.py "$work/python" "${common[@]}" --reads 200 \
    | tee "$work/python.txt"

"$venv/bin/python" - "$work/prfdata.txt" "$work/python.txt" "$deaths" <<'EOF'
import sys

def load(path):
    return dict(line.split(None, 1) for line in open(path).read().splitlines())

p, q, deaths = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
rows = [
    ("files in the directory, 8 live workers, 0 deaths", "files_start"),
    (f"files in the directory, 8 live workers, {deaths} deaths", "files_end"),
    ("bytes (apparent), 0 deaths", "bytes_start"),
    (f"bytes (apparent), {deaths} deaths", "bytes_end"),
    ("bytes allocated, 0 deaths", "allocated_start"),
    (f"bytes allocated, {deaths} deaths", "allocated_end"),
    ("collect / scrape median (µs), 0 deaths", "collect_us_start"),
    (f"collect / scrape median (µs), {deaths} deaths", "collect_us_end"),
    ("samples of the total during the churn", "samples"),
    ("samples below the one before", "decreases"),
    ("samples that failed", "scrape_errors"),
    ("increments the workers reported", "reported"),
    ("final total", "total_end"),
    ("files left once every process exited", "files_after_exit"),
    ("churn wall time (s)", "churn_s"),
]
print()
print("| | prfdata | prometheus_client multiprocess |")
print("|---|---:|---:|")
for label, key in rows:
    print(f"| {label} | {p.get(key, '-')} | {q.get(key, '-')} |")
EOF

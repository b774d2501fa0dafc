#!/usr/bin/env bash
# Load on `prfmon serve`'s /metrics against prometheus-node-exporter's, in the same run: wrk
# (--latency) on each alone, then again while benches/scripts/serve_attack.py attacks each (an
# idle-connection flood, slowloris headers, pipeliners that never read, endless header lines).
# Prints each /metrics payload's size, requests/s and p99 latency, the ratios, and prfmon
# serve's peak resident memory under attack. The demo app (`demo-app run`) publishes the counters.
#
# Installs nothing: needs `wrk` and `prometheus-node-exporter` (Debian: apt-get install -y wrk
# prometheus-node-exporter), curl and python3. Everything listens on loopback only.
#
# Usage: benches/scripts/serve_load.sh [SECONDS per wrk run, default 10]
# Environment: WRK_THREADS (2), WRK_CONNECTIONS (16), SERVE_PORT (19358), NODE_PORT (19100),
#   NODE_COLLECTORS (the node_exporter collectors enabled, see below),
#   WIDE_INSTANCES (unset: the demo app alone; N: also the wide app of prfdata-benches with N
#   instances, for a multi-megabyte /metrics: 60000 give about 10 MB; node_exporter's payload
#   then stays small, so compare serve with itself alone and under attack),
#   ATTACK_ARGS (more arguments for serve_attack.py; with WIDE_INSTANCES the default is
#   "--rcvbuf 65536 --slow-readers 4", so that the pipeliners and slow readers hold their answers).
set -euo pipefail
seconds=${1:-10}
threads=${WRK_THREADS:-2}
connections=${WRK_CONNECTIONS:-16}
serve_port=${SERVE_PORT:-19358}
node_port=${NODE_PORT:-19100}
# Chosen so that node_exporter's payload is about the size of prfmon serve's for the demo app
# (the sizes are printed below): its own go_/process_/promhttp_ metrics and every default
# collector off, then these on.
node_collectors=${NODE_COLLECTORS:-"cpu loadavg meminfo"}
wide_instances=${WIDE_INSTANCES:-}
if [ -n "$wide_instances" ]; then
  attack_args=${ATTACK_ARGS:-"--rcvbuf 65536 --slow-readers 4"}
else
  attack_args=${ATTACK_ARGS:-}
fi

for tool in wrk prometheus-node-exporter curl python3; do
  command -v "$tool" >/dev/null || {
    echo "serve_load.sh: $tool is not installed (apt-get install -y wrk prometheus-node-exporter curl)" >&2
    exit 2
  }
done

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build --release -q -p prfmon -p demo-app -p prfdata-provider
[ -z "$wide_instances" ] || cargo build --release -q -p prfdata-benches --bin wide_app
bin=$root/target/release

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export PRFDATA_REGISTRY=$work/registry PRFDATA_SHM_DIR=$work/shm
mkdir -p "$PRFDATA_REGISTRY" "$PRFDATA_SHM_DIR"

"$bin/demo-app" install >/dev/null
"$bin/demo-app" run --duration 3600 >/dev/null 2>&1 &
pids+=($!)
if [ -n "$wide_instances" ]; then
  "$bin/wide_app" install
  "$bin/wide_app" run "$wide_instances" 3600 >"$work/wide.out" &
  pids+=($!)
  for _ in $(seq 600); do grep -q ready "$work/wide.out" 2>/dev/null && break; sleep 0.1; done
fi
"$bin/prfmon" serve --log-to stderr --listen "127.0.0.1:$serve_port" 2>"$work/serve.log" &
serve_pid=$!
pids+=($serve_pid)
node_args=(--web.listen-address="127.0.0.1:$node_port" --web.disable-exporter-metrics --collector.disable-defaults)
for c in $node_collectors; do node_args+=("--collector.$c"); done
prometheus-node-exporter "${node_args[@]}" 2>"$work/node.log" &
pids+=($!)

serve_url=http://127.0.0.1:$serve_port/metrics
node_url=http://127.0.0.1:$node_port/metrics
for url in "$serve_url" "$node_url"; do
  for _ in $(seq 100); do
    curl -sf -o /dev/null "$url" && break
    sleep 0.1
  done
  curl -sf -o /dev/null "$url" || { echo "serve_load.sh: $url does not answer" >&2; cat "$work"/*.log >&2; exit 1; }
done
# Let the demo app's workers start and publish.
sleep 2
serve_size=$(curl -sf "$serve_url" | wc -c)
node_size=$(curl -sf "$node_url" | wc -c)
echo "payload: prfmon serve $serve_size bytes (classic text format, demo app${wide_instances:+ and $wide_instances wide instances}), node_exporter $node_size bytes (collectors: $node_collectors)"

# wrk's requests/s and p99 (ms) for one URL.
measure() {
  local out rps p99
  out=$(wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency "$1")
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; print v}' <<<"$out")
  local errors
  errors=$(awk '/Non-2xx|Socket errors/ {printf "%s ", $0}' <<<"$out")
  echo "$rps $p99 ${errors:-}"
}

peak_rss() {
  local peak=0 rss
  while kill -0 "$serve_pid" 2>/dev/null && [ ! -e "$work/stop_rss" ]; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$serve_pid/status" 2>/dev/null || echo 0)
    [ "${rss:-0}" -gt "$peak" ] && peak=$rss && echo "$peak" >"$work/peak_rss"
    sleep 0.1
  done
}

read -r s_rps s_p99 s_err < <(measure "$serve_url")
read -r n_rps n_p99 n_err < <(measure "$node_url")
echo "alone:        prfmon serve $s_rps req/s p99 $s_p99 ms ${s_err:-} | node_exporter $n_rps req/s p99 $n_p99 ms ${n_err:-}"

attack_seconds=$((2 * seconds + 10))
# shellcheck disable=SC2086 # attack_args is a list of words
python3 benches/scripts/serve_attack.py "127.0.0.1:$serve_port" --seconds "$attack_seconds" $attack_args &
pids+=($!)
# shellcheck disable=SC2086
python3 benches/scripts/serve_attack.py "127.0.0.1:$node_port" --seconds "$attack_seconds" $attack_args &
pids+=($!)
peak_rss &
pids+=($!)
sleep 3
read -r sa_rps sa_p99 sa_err < <(measure "$serve_url")
read -r na_rps na_p99 na_err < <(measure "$node_url")
touch "$work/stop_rss"
echo "under attack: prfmon serve $sa_rps req/s p99 $sa_p99 ms ${sa_err:-} | node_exporter $na_rps req/s p99 $na_p99 ms ${na_err:-}"
echo "prfmon serve peak RSS under attack: $(cat "$work/peak_rss" 2>/dev/null || echo '?') KiB"

python3 - "$s_rps" "$n_rps" "$s_p99" "$sa_p99" "$sa_rps" "$na_rps" "$n_p99" "$na_p99" <<'PY'
import sys
s, n, p, pa, sa, na, np_, npa = map(float, sys.argv[1:])
print(f"ratios: serve/node req/s alone {s / n:.2f}, under attack {sa / na:.2f}; "
      f"serve p99 under attack / alone {pa / p:.2f} (node_exporter {npa / np_:.2f})")
PY

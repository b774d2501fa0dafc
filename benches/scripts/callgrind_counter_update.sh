#!/usr/bin/env bash
# Instructions per counter update, free of timing noise: runs each counter_update implementation
# N1 and N2 times under callgrind (PRFDATA_BENCH_COUNT=id:N, see benches/counter_update.rs) and
# prints (Ir(N2) - Ir(N1)) / (N2 - N1). Run from the workspace root after
# `cargo bench -p prfdata-benches --no-run`.
set -euo pipefail
N1=${N1:-1000000}
N2=${N2:-2000000}
bin=$(ls -t target/release/deps/counter_update-* | grep -v '\.d$' | head -1)
ir() {
  PRFDATA_BENCH_COUNT="$1:$2" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -1 # the last total is this process's
}
printf '%-26s %s\n' id instructions/update
# The counter_update ids, then the histogram group's (one record each; the ring read included:
# compare with raw_atomic_add; metrics_histogram's count includes draining its values).
for id in raw_atomic_u64 prfdata_get_ctr64 prfdata_get_ctr32 prfdata_cached prometheus_client prometheus metrics \
  raw_atomic_add prfdata_record prfdata_record_sharded prometheus_client_observe metrics_histogram hdrhistogram_record; do
  a=$(ir "$id" "$N1")
  b=$(ir "$id" "$N2")
  printf '%-26s %s\n' "$id" "$(echo "scale=2; ($b - $a) / ($N2 - $N1)" | bc)"
done

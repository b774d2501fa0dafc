#!/usr/bin/env bash
# Regenerates the committed seed corpora (fuzz/corpus/<target>/) from real runs: the demo
# service publishing its block, prfmon collecting it (`query --raw`, `typeperf -q`), the
# registry and .INI files `demo-app install` writes, the lodctr design specification's .INI
# example, and the fuzz harness's own rich map (examples/seeds.rs). Run from anywhere; needs only cargo.
set -euo pipefail
fuzz=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$fuzz")
corpus=$fuzz/corpus
cd "$root"
cargo build -q -p demo-app -p prfmon -p prfdata-provider
bin=$root/target/debug

tmp=$(mktemp -d)
trap '[ -n "${demo:-}" ] && kill "$demo" 2>/dev/null; rm -rf "$tmp"' EXIT
export PRFDATA_REGISTRY=$tmp/registry PRFDATA_SHM_DIR=$tmp/shm
mkdir -p -m 700 "$PRFDATA_SHM_DIR"
mkdir -p "$corpus"/{block_reader,provider_collect,decode,lodctr_ini,registry_store,pdh_path}

# The registry folder as a registry_store input: the store, then (after the harness's marker)
# the journal that holds the updates made since the store was last written.
registry_input() {
  cat "$PRFDATA_REGISTRY/registry.toml"
  if [ -s "$PRFDATA_REGISTRY/registry.log" ]; then
    printf '\0JOURNAL\0'; cat "$PRFDATA_REGISTRY/registry.log"
  fi
}

"$bin/demo-app" install --ini-dir "$tmp/ini" >/dev/null
registry_input >"$corpus/registry_store/demo-installed.toml"
# The harness writes the symbol file as devdef.h; the input carries it after a marker.
{ sed 's/^symbolfile=.*/symbolfile=devdef.h/' "$tmp/ini/PrfDataDemo.ini"
  printf '\0SYMBOLS\0'; cat "$tmp/ini/PrfDataDemo.h"; } >"$corpus/lodctr_ini/demo-install.ini"

# A block, copied from the running demo (the start, then at work), and its collections.
"$bin/demo-app" run --duration 6 --workers 3 >/dev/null &
demo=$!
for _ in $(seq 100); do [ -e "$PRFDATA_SHM_DIR/PrfDataDemo.blk" ] && break; sleep 0.05; done
cp "$PRFDATA_SHM_DIR/PrfDataDemo.blk" "$corpus/block_reader/demo-started.blk"
sleep 2
cp "$PRFDATA_SHM_DIR/PrfDataDemo.blk" "$corpus/block_reader/demo-working.blk"
cp "$corpus/block_reader/demo-working.blk" "$corpus/provider_collect/"
cp "$corpus/block_reader/demo-started.blk" "$corpus/provider_collect/"
"$bin/prfmon" query --raw "$corpus/decode/demo-global.raw" >/dev/null
"$bin/prfmon" query "PrfData Demo Worker" --raw "$corpus/decode/demo-worker.raw" >/dev/null
# Real counter paths, one per file: what typeperf -q lists, and the syntax's other forms.
"$bin/prfmon" typeperf -q >"$tmp/paths"
"$bin/prfmon" typeperf --query-expanded "PrfData Demo Worker" >>"$tmp/paths"
wait "$demo"
demo=
n=0
grep '^\\' "$tmp/paths" | sort -u | head -12 | while IFS= read -r p; do
  n=$((n + 1)); printf '%s' "$p" >"$corpus/pdh_path/typeperf-q-$n.txt"
done
printf '%s' '\\localhost\PrfData Demo Service\Jobs/sec' >"$corpus/pdh_path/machine.txt"
printf '%s' '\PrfData Demo Worker(fast/worker-1#1)\% Busy' >"$corpus/pdh_path/parent-index.txt"
printf '%s' '\PrfData Demo Worker(*/*)\*' >"$corpus/pdh_path/wildcards.txt"
printf '%s' '\prfdata demo pool(bulk)\workers' >"$corpus/pdh_path/case.txt"
printf '%s' '\Process(svchost\% Processor Time' >"$corpus/pdh_path/unclosed.txt"

# The lodctr design specification's .INI example, as it prints it (its devdef.h is the harness's default).
cat >"$corpus/lodctr_ini/seed-001.ini" <<'INI'
// begin .INI file example
[info]
drivername=DriverName
symbolfile=devdef.h

[languages]
009=English
00C=OtherLanguage

[text]
OBJECT_1_009_NAME=Device Name
OBJECT_1_009_HELP=Displays performance statistics on Device Name
OBJECT_1_00C_NAME=Device Name in other language
OBJECT_1_00C_HELP=Displays performance of Device Name in other language

DEVICE_COUNTER_1_009_NAME=Counter A
DEVICE_COUNTER_1_009_HELP=Displays the current value of Counter A
DEVICE_COUNTER_1_00C_NAME=Counter A in other language
DEVICE_COUNTER_1_00C_HELP=Displays the value of Counter A in other language

DEVICE_COUNTER_2_009_NAME=Counter B
DEVICE_COUNTER_2_009_HELP=Displays the current rate of Devices B
DEVICE_COUNTER_2_00C_NAME=Counter B in other language
DEVICE_COUNTER_2_00C_HELP=Displays the rate of Device B in other language

// end .INI file
INI
# The same, saved by Windows' Notepad as "Unicode": UTF-16LE with a BOM.
{ printf '\xff\xfe'; iconv -f UTF-8 -t UTF-16LE "$corpus/lodctr_ini/seed-001.ini"; } \
  >"$corpus/lodctr_ini/seed-001-utf16.ini"
cp "$corpus/lodctr_ini/seed-001.ini" "$tmp/ini/seed-001.ini"
printf '#define OBJECT_1 0\n#define DEVICE_COUNTER_1 2\n#define DEVICE_COUNTER_2 4\n' >"$tmp/ini/devdef.h"
"$bin/prfmon" lodctr "$tmp/ini/seed-001.ini" >/dev/null
registry_input >"$corpus/registry_store/demo-and-seed-001.toml"
# The same with the last record torn, as a writer killed while appending it leaves it.
{ registry_input; printf '0badc0de {"seq":'; } >"$corpus/registry_store/torn-record.toml"
# A new registry whose every update is a journal record: the lodctr design specification's example loaded, then a REG_MULTI_SZ
# set, one entry changed (a splice) and deleted.
(
  export PRFDATA_REGISTRY=$tmp/journal
  "$bin/prfmon" lodctr "$tmp/ini/seed-001.ini" >/dev/null
  "$bin/prfmon" reg add 'HKLM\SOFTWARE\Seed' /v Multi /t REG_MULTI_SZ /d 'a\0b\0c' /f >/dev/null
  "$bin/prfmon" reg add 'HKLM\SOFTWARE\Seed' /v Multi /t REG_MULTI_SZ /d 'a\0x\0c' /f >/dev/null
  "$bin/prfmon" reg delete 'HKLM\SOFTWARE\Seed' /v Multi /f >/dev/null
  registry_input >"$corpus/registry_store/journal-seed-001.toml"
)

# The fuzz harness's rich map: blocks, collections, its .INI, the harness registry.
cargo run -q --manifest-path "$fuzz/Cargo.toml" --example seeds -- "$corpus"
du -sh "$corpus"/*

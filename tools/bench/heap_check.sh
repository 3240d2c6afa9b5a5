#!/bin/bash
# Heap in use against RSS between runs of `sluice stream` (issue 9's soak): is RSS growth a leak
# (glibc's "in use bytes" grows) or memory the allocator keeps ("system bytes" >> in use)?
# Reads glibc malloc_stats() of the running server with gdb after each run. Not a test.
#   tools/bench/heap_check.sh [runs=7] [sessions=205] [build=build/release]
set -u
cd "$(dirname "$0")/../.."
N=${1:-7}; S=${2:-205}; B=${3:-build/release}; P=18796
log=$(mktemp)
"$B/tools/sluice" serve --server.port=$P --log.level=warn 2> "$log" > /dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:$P/readyz > /dev/null && break; sleep 0.2; done
for r in $(seq "$N"); do
  "$B/tools/sluice" stream tests/data/sample_call_8k_mulaw_stereo.wav --url ws://127.0.0.1:$P/v1/stream \
    --concurrency "$S" --stagger-ms $((20000 / S)) --speed 1 > /dev/null 2>&1
  gdb -p $pid -batch -ex 'call (void)malloc_stats()' > /dev/null 2>&1
  inuse=$(grep 'in use bytes' "$log" | tail -1 | awk '{print $NF}')
  sys=$(grep 'system bytes' "$log" | tail -1 | awk '{print $NF}')
  rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  echo "run $r: rss_kib $rss malloc_system_bytes $sys malloc_in_use_bytes $inuse"
done

#!/usr/bin/env bash
# serve_bench.sh: `sluice stream --concurrency N` from a separate process against `sluice serve`
# on loopback, for each N: p50/p99 partial and final latency as the client sees them, whether
# every session finished cleanly, and the server's CPU use (cores) and peak RSS over the run.
# Real time is held when p99 final <= 800 ms and no session failed.
#
#   tools/bench/serve_bench.sh [BUILD_DIR] [AUDIO] [N...]
set -euo pipefail
build=${1:-build/release}
audio=${2:-tests/data/sample_call_8k_mulaw_stereo.wav}
shift 2 2>/dev/null || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(4 16 64)
port=18790
"$build/tools/sluice" serve --server.port=$port --log.level=warn > /dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/readyz" > /dev/null && break; sleep 0.2; done
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
printf "%8s %10s %10s %10s %10s %8s %8s %10s %9s\n" sessions partial50 partial99 final50 final99 ok errors cpu_cores rss_MiB
for n in "${counts[@]}"; do
  c0=$(cpu); t0=$(date +%s.%N)
  out=$("$build/tools/sluice" stream "$audio" --url "ws://127.0.0.1:$port/v1/stream" --concurrency "$n" \
        --stagger-ms $((20000 / n)) --speed 1 2>/dev/null | tail -1)
  c1=$(cpu); t1=$(date +%s.%N)
  rss=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")
  python3 - "$out" "$n" "$c0" "$c1" "$t0" "$t1" "$ticks" "$rss" <<'PY'
import json, sys
j = json.loads(sys.argv[1]) if sys.argv[1].startswith("{") else {"sessions_ok": 1, "errors": 0}
n = int(sys.argv[2])
c0, c1, t0, t1, ticks, rss = map(float, sys.argv[3:9])
cores = (c1 - c0) / ticks / (t1 - t0)
print("%8d %10.0f %10.0f %10.0f %10.0f %8d %8d %10.2f %9.0f" % (n, j.get("partial_p50_ms", 0), j.get("partial_p99_ms", 0),
      j.get("final_p50_ms", 0), j.get("final_p99_ms", 0), j.get("sessions_ok", 0), j.get("errors", 0), cores, rss))
PY
done

#!/usr/bin/env bash
# rtsp_calls_bench.sh: RTSP pushes held at once. For each N, N ffmpeg processes push the committed
# phone recording (tests/data/e2e/cancelled_march_8k_mulaw.wav, 6.3 s) in real time (-re) as PCMU
# into `sluice serve` (rtsp.max_sessions = N) at once, over RTP interleaved on TCP, then TEARDOWN.
# Reports the pushes that completed (ffmpeg exit 0), the calls the server logged as over by
# TEARDOWN (after their last final), and the server's CPU use (cores) and peak RSS. The ffmpeg
# processes run on the same machine and take CPU of their own. Transcription latency under that
# load is not measured by it (as in sip_calls_bench.sh).
#
#   tools/bench/rtsp_calls_bench.sh [BUILD_DIR] [N...]
set -euo pipefail
build=${1:-build/release}
shift 1 2>/dev/null || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(8 32 64)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rtsp_port=28554
rec=tests/data/e2e/cancelled_march_8k_mulaw.wav
ticks=$(getconf CLK_TCK)
printf "%6s %10s %12s %10s %9s %8s\n" pushes completed server_over wall_s cpu_cores rss_MiB
for n in "${counts[@]}"; do
  "$build/tools/sluice" serve --server.port=0 --sip.enabled=false --rtsp.port=$rtsp_port \
    --rtsp.max_sessions="$n" > /dev/null 2> "$tmp/serve.err" &
  pid=$!
  for _ in $(seq 200); do grep -q "rtsp: listening" "$tmp/serve.err" && break; sleep 0.1; done
  c0=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t0=$(date +%s.%N)
  pids=()
  for i in $(seq "$n"); do
    ffmpeg -nostdin -loglevel error -re -i "$rec" -c:a pcm_mulaw -f rtsp -rtsp_transport tcp \
      "rtsp://127.0.0.1:$rtsp_port/bench$i" > "$tmp/ff$i.log" 2>&1 &
    pids+=($!)
  done
  done_ok=0
  for p in "${pids[@]}"; do if wait "$p"; then done_ok=$((done_ok + 1)); fi; done
  # The last finals arrive after TEARDOWN: wait (bounded) until the server has ended every call.
  for _ in $(seq 300); do
    [ "$(grep -c "over (teardown)" "$tmp/serve.err" || true)" -ge "$done_ok" ] && break
    sleep 0.1
  done
  c1=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t1=$(date +%s.%N)
  rss=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")
  kill -INT $pid; wait $pid 2>/dev/null || true
  over=$(grep -c "over (teardown)" "$tmp/serve.err" || true)
  python3 -c "import sys; n,ok,over,c0,c1,t0,t1,tk,rss=sys.argv[1:]; w=float(t1)-float(t0); \
print(f'{n:>6} {ok:>10} {over:>12} {w:>10.1f} {(float(c1)-float(c0))/float(tk)/w:>9.2f} {float(rss):>8.0f}')" \
    "$n" "$done_ok" "$over" "$c0" "$c1" "$t0" "$t1" "$ticks" "$rss"
done

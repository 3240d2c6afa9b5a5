#!/usr/bin/env bash
# rtsp_calls_bench.sh: RTSP pushes held at once. For each N, ffmpeg pushes the committed phone
# recording (tests/data/e2e/cancelled_march_8k_mulaw.wav, 6.3 s) N times at once, in real time
# (-re), as PCMU into `sluice serve` (rtsp.max_sessions = N), over RTP interleaved on TCP, then
# TEARDOWN. One ffmpeg process carries up to 64 of the pushes (one output each): N separate
# ffmpeg processes take this 2-core machine for seconds just starting, so the pushes would not
# overlap and the engine would see a start-up storm instead of N calls.
# Reports the pushes the server logged as over by TEARDOWN (after their last final), those
# refused, the most calls live at once (from the server's log: RECORD to call over), the ffmpeg
# processes that exited 0, and the server's CPU use (cores) and peak RSS. ffmpeg runs on the same
# machine and takes CPU of its own. Transcription latency under that load is not measured by it
# (as in sip_calls_bench.sh).
#
#   tools/bench/rtsp_calls_bench.sh [BUILD_DIR] [N...]
set -euo pipefail
build=${1:-build/release}
shift 1 2>/dev/null || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(32 64 128)
tmp=$(mktemp -d)
trap '[ -n "${KEEP_LOG:-}" ] && cp "$tmp/serve.err" "$KEEP_LOG"; rm -rf "$tmp"' EXIT
rtsp_port=28554
per_process=64
rec=tests/data/e2e/cancelled_march_8k_mulaw.wav
ticks=$(getconf CLK_TCK)
printf "%6s %12s %8s %6s %8s %10s %9s %8s\n" pushes server_over refused peak ffmpeg_ok wall_s cpu_cores rss_MiB
for n in "${counts[@]}"; do
  "$build/tools/sluice" serve --server.port=0 --sip.enabled=false --rtsp.port=$rtsp_port \
    --rtsp.max_sessions="$n" > /dev/null 2> "$tmp/serve.err" &
  pid=$!
  for _ in $(seq 200); do grep -q "rtsp: listening" "$tmp/serve.err" && break; sleep 0.1; done
  c0=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t0=$(date +%s.%N)
  pids=()
  for ((first = 1; first <= n; first += per_process)); do
    args=()
    for ((i = first; i < first + per_process && i <= n; i++)); do
      args+=(-map 0:a -c:a pcm_mulaw -f rtsp -rtsp_transport tcp "rtsp://127.0.0.1:$rtsp_port/bench$i")
    done
    ffmpeg -nostdin -loglevel error -re -i "$rec" "${args[@]}" > "$tmp/ff$first.log" 2>&1 &
    pids+=($!)
  done
  ok=0
  for p in "${pids[@]}"; do if wait "$p"; then ok=$((ok + 1)); fi; done
  # The last finals arrive after TEARDOWN: wait (bounded) until the server has ended every call.
  for _ in $(seq 300); do
    [ "$(grep -c " over (" "$tmp/serve.err" || true)" -ge "$n" ] && break
    sleep 0.1
  done
  c1=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t1=$(date +%s.%N)
  rss=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")
  kill -INT $pid; wait $pid 2>/dev/null || true
  over=$(grep -c "over (teardown)" "$tmp/serve.err" || true)
  refused=$(grep -c "answered 503" "$tmp/serve.err" || true)
  # Live at once: +1 at each "RECORD ...: call", -1 at each "call ... over (", in log order.
  peak=$(awk '/: RECORD .*: call / {n++; if (n > m) m = n} / over \(/ {n--} END {print m + 0}' "$tmp/serve.err")
  python3 -c "import sys; n,over,ref,pk,ok,np,c0,c1,t0,t1,tk,rss=sys.argv[1:]; w=float(t1)-float(t0); \
print(f'{n:>6} {over:>12} {ref:>8} {pk:>6} {ok + \"/\" + np:>8} {w:>10.1f} {(float(c1)-float(c0))/float(tk)/w:>9.2f} {float(rss):>8.0f}')" \
    "$n" "$over" "$refused" "$peak" "$ok" "${#pids[@]}" "$c0" "$c1" "$t0" "$t1" "$ticks" "$rss"
done

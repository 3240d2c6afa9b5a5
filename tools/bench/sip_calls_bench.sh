#!/usr/bin/env bash
# sip_calls_bench.sh: calls held at once through SIP. For each N, SIPp (sip-tester) places N calls
# at once into `sluice serve` (sip.max_calls = N), each playing the committed phone recording
# (tests/data/e2e/cancelled_march_8k_mulaw.wav, 6.3 s) as RTP in real time, then hangs up. Reports
# whether every call was answered and completed (SIPp's successful/failed counts), the calls the
# server logged as over, and its CPU use (cores) and peak RSS over the run.
#
#   tools/bench/sip_calls_bench.sh [BUILD_DIR] [N...]
set -euo pipefail
build=${1:-build/release}
shift 1 2>/dev/null || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(8 32 64)
tmp=$(mktemp -d)
sip_port=25160
/usr/bin/python3 tests/net/sip/make_rtp_pcap.py tests/data/e2e/cancelled_march_8k_mulaw.wav "$tmp/call.pcap" 2>/dev/null
sed -e "s#@PCAP@#$tmp/call.pcap#" -e "s#@PAUSE_MS@#7800#" tests/net/sip/uac_pcap.xml > "$tmp/uac.xml"
ticks=$(getconf CLK_TCK)
printf "%6s %10s %8s %12s %10s %9s %8s\n" calls successful failed server_over wall_s cpu_cores rss_MiB
for n in "${counts[@]}"; do
  "$build/tools/sluice" serve --server.port=0 --sip.port=$sip_port --sip.max_calls="$n" \
    --sip.rtp_port_min=42000 --sip.rtp_port_max=$((42001 + 2 * n)) > /dev/null 2> "$tmp/serve.err" &
  pid=$!
  for _ in $(seq 100); do grep -q "sip: listening" "$tmp/serve.err" && break; sleep 0.1; done
  c0=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t0=$(date +%s.%N)
  timeout 120 sipp 127.0.0.1:$sip_port -sf "$tmp/uac.xml" -m "$n" -l "$n" -r "$n" -i 127.0.0.1 -p 25170 -mp 26000 \
    -nostdin -s sluice > "$tmp/sipp.out" 2>&1 || true
  c1=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t1=$(date +%s.%N)
  rss=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")
  kill -INT $pid; wait $pid 2>/dev/null || true
  ok=$(awk -F'|' '/Successful call/ {gsub(/ /, "", $3); print $3}' "$tmp/sipp.out")
  bad=$(awk -F'|' '/Failed call/ {gsub(/ /, "", $3); print $3}' "$tmp/sipp.out")
  over=$(grep -c "over (hangup)" "$tmp/serve.err" || true)
  python3 -c "import sys; n,ok,bad,over,c0,c1,t0,t1,tk,rss=sys.argv[1:]; w=float(t1)-float(t0); \
print(f'{n:>6} {ok:>10} {bad:>8} {over:>12} {w:>10.1f} {(float(c1)-float(c0))/float(tk)/w:>9.2f} {float(rss):>8.0f}')" \
    "$n" "${ok:-?}" "${bad:-?}" "$over" "$c0" "$c1" "$t0" "$t1" "$ticks" "$rss"
done
rm -rf "$tmp"

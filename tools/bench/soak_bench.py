#!/usr/bin/python3
"""Soak and overload benchmarks of `sluice serve` (issue 9 point 7). Not a test: run by hand on a
quiet machine; every mode prints a table and, with --json FILE, writes the figures.

  soak_bench.py soak     --sessions N --duration-s S   N real-time sessions, back to back, for S
                         seconds; RSS, open fds and threads sampled every --sample-s; drift is
                         the last sample against the first one after --warmup-s, between runs
                         and at settled points (every --settle-every runs, idle for --settle-s,
                         so the server's periodic malloc_trim has run).
  soak_bench.py overload --capacity C                  engine.max_channels = C, 1.5 C sessions at
                         once: how many were refused and with what reason; latency of the rest.
  soak_bench.py harm     --sessions N                  N honest sessions alone, then again beside a
                         flooding, a stalled (never reads), a half-closing and a slow-header
                         client: the honest sessions' finals and latency in both runs.

The honest load is `sluice stream --concurrency N` (the same client as serve_bench.sh); the
hostile clients are raw sockets speaking just enough HTTP/WebSocket (RFC 6455) to do harm.
"""
import argparse
import base64
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_server(build, port, overrides, log_path):
    cmd = [os.path.join(build, "tools", "sluice"), "serve", f"--server.port={port}",
           "--log.level=" + ("info" if log_path else "warn")]
    for o in overrides:
        cmd += ["--set", o]
    log = open(log_path, "w") if log_path else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            return proc
        except Exception:
            if proc.poll() is not None:
                sys.exit(f"sluice serve exited with {proc.returncode}")
            time.sleep(0.1)
    proc.kill()
    sys.exit("sluice serve did not become ready")


def proc_figures(pid):
    with open(f"/proc/{pid}/status") as f:
        status = f.read()
    rss_kib = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return {"rss_mib": rss_kib / 1024, "threads": threads, "fds": fds}


def stream(build, port, audio, n, stagger_ms):
    """One `sluice stream --concurrency n` run: its JSON summary and the server errors it printed."""
    cmd = [os.path.join(build, "tools", "sluice"), "stream", audio, "--url", f"ws://127.0.0.1:{port}/v1/stream",
           "--concurrency", str(max(n, 2)), "--stagger-ms", str(stagger_ms), "--speed", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    summary = json.loads(lines[-1]) if lines else {}
    errors = [l for l in r.stderr.splitlines() if "server error" in l]
    return summary, errors


def ws_connect(port, path="/v1/stream"):
    s = socket.create_connection(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    resp = b""
    while b"\r\n\r\n" not in resp:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        resp += chunk
    return s


def ws_frame(payload, opcode):
    """A masked client frame (RFC 6455 5.2)."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


START = json.dumps({"type": "start", "sample_rate": 8000, "encoding": "pcm_s16le"}).encode()


def hostile_clients(port, stop):
    """Starts the four harmful clients; each runs until `stop` is set. Returns their threads."""
    def flood():
        # Start, then 20 ms packets of noise as fast as the socket takes them, reconnecting
        # whenever the server ends the stream.
        noise = ws_frame(os.urandom(320), 0x2)
        while not stop.is_set():
            try:
                s = ws_connect(port)
                s.sendall(ws_frame(START, 0x1))
                while not stop.is_set():
                    s.sendall(noise)
            except OSError:
                pass

    def stall():
        # Starts a stream and sends audio, but never reads: the server's writes back up.
        try:
            s = ws_connect(port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(ws_frame(START, 0x1))
            pkt = ws_frame(os.urandom(320), 0x2)
            while not stop.is_set():
                s.sendall(pkt)
                time.sleep(0.02)  # paced like a phone, which is what makes its results pile up
        except OSError:
            pass

    def half_close():
        while not stop.is_set():
            try:
                s = ws_connect(port)
                s.sendall(ws_frame(START, 0x1))
                s.sendall(ws_frame(os.urandom(3200), 0x2))
                s.sendall(ws_frame(json.dumps({"type": "end"}).encode(), 0x1))
                s.shutdown(socket.SHUT_WR)
                while s.recv(4096):
                    pass
                s.close()
            except OSError:
                pass

    def slow_headers():
        while not stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", port))
                for b in b"GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                    if stop.is_set():
                        break
                    s.send(bytes([b]))
                    time.sleep(0.5)
                s.close()
            except OSError:
                pass

    threads = [threading.Thread(target=f, daemon=True) for f in (flood, stall, half_close, slow_headers)]
    for t in threads:
        t.start()
    return threads


def row(label, summary, errors):
    print(f"{label:>16} {summary.get('sessions', 0):8d} {summary.get('sessions_ok', 0):8d} "
          f"{summary.get('finals', 0):8d} {summary.get('final_p50_ms', 0):9.0f} {summary.get('final_p99_ms', 0):9.0f} "
          f"{len(errors):8d}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["soak", "overload", "harm"])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--audio", default=os.path.join(ROOT, "tests", "data", "sample_call_8k_mulaw_stereo.wav"))
    ap.add_argument("--port", type=int, default=18795)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--capacity", type=int, default=32)
    ap.add_argument("--duration-s", type=float, default=3600)
    ap.add_argument("--warmup-s", type=float, default=120)
    ap.add_argument("--sample-s", type=float, default=10)
    ap.add_argument("--settle-every", type=int, default=10,
                    help="every N runs, wait --settle-s with no session open, then take a settled sample")
    ap.add_argument("--settle-s", type=float, default=35,
                    help="longer than the server's 30 s malloc_trim period, so one has run since the last session")
    ap.add_argument("--json")
    ap.add_argument("--server-log", help="the server's output, at info level, goes here")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config override for the server (sluice serve --set), repeatable")
    a = ap.parse_args()
    report = {"mode": a.mode}
    overrides = ([f"engine.max_channels={a.capacity}"] if a.mode == "overload" else []) + a.set
    report["overrides"] = overrides
    server = start_server(a.build, a.port, overrides, a.server_log)
    try:
        header = f"{'run':>16} {'sessions':>8} {'ok':>8} {'finals':>8} {'final50':>9} {'final99':>9} {'refused':>8}"
        if a.mode == "soak":
            samples, runs = [], []
            t0 = time.monotonic()
            sampler_stop = threading.Event()

            def sampler():
                while not sampler_stop.wait(a.sample_s):
                    samples.append({"t_s": time.monotonic() - t0, **proc_figures(server.pid)})
            th = threading.Thread(target=sampler, daemon=True)
            th.start()
            print(header)
            idle = []  # taken between runs, every session closed: fds and threads compare like with like
            # Settled: idle, and after the server's periodic malloc_trim. Right after a run RSS
            # reads whatever glibc's arenas still hold of it (129-299 MiB in one earlier hour,
            # by the time since the last trim), which says nothing about a leak; the settled
            # points compare like with like. The bench waits for them: no session is open then.
            settled = []
            while time.monotonic() - t0 < a.duration_s:
                summary, errors = stream(a.build, a.port, a.audio, a.sessions, 20000 // a.sessions)
                idle.append({"t_s": time.monotonic() - t0, **proc_figures(server.pid)})
                runs.append({"summary": summary, "errors": len(errors), "idle": idle[-1]})
                row(f"t={time.monotonic() - t0:.0f}s", summary, errors)
                if a.settle_every > 0 and len(runs) % a.settle_every == 0:
                    time.sleep(a.settle_s)
                    settled.append({"t_s": time.monotonic() - t0, **proc_figures(server.pid)})
                    s = settled[-1]
                    print(f"{'settled':>16} rss {s['rss_mib']:.1f} MiB, fds {s['fds']}, threads {s['threads']}",
                          flush=True)
                if samples:  # the latest sample, so a run cut short still shows its trend
                    s = samples[-1]
                    print(f"{'':>16} rss {s['rss_mib']:.1f} MiB, fds {s['fds']}, threads {s['threads']}", flush=True)
            sampler_stop.set()
            th.join()
            # Drift between runs (no session open), the first idle point after warm-up against
            # the last; the samples taken during runs show the peaks.
            after = [s for s in idle if s["t_s"] >= a.warmup_s] or idle
            first, last = after[0], after[-1]
            drift = {k: (last[k] - first[k]) / first[k] * 100 for k in ("rss_mib", "fds", "threads")}
            peak = max(s["rss_mib"] for s in samples) if samples else None
            print(f"\nfirst idle point after warm-up {first}\nlast idle point {last}\ndrift % {drift}\n"
                  f"peak RSS during runs {peak} MiB")
            report.update(samples=samples, runs=runs, idle=idle, drift_percent=drift, peak_rss_mib=peak,
                          settled=settled)
            after = [s for s in settled if s["t_s"] >= a.warmup_s]
            if len(after) >= 2:
                first, last = after[0], after[-1]
                sdrift = {k: (last[k] - first[k]) / first[k] * 100 for k in ("rss_mib", "fds", "threads")}
                # The trend through every settled point (least squares), as % of their mean per
                # hour: one point's noise (the arenas' fragmentation at that moment) moves the
                # first-to-last drift but hardly the slope.
                ts = [s["t_s"] / 3600 for s in after]
                rs = [s["rss_mib"] for s in after]
                mt, mr = sum(ts) / len(ts), sum(rs) / len(rs)
                slope = sum((t - mt) * (r - mr) for t, r in zip(ts, rs)) / sum((t - mt) ** 2 for t in ts)
                print(f"settled points after warm-up: {[round(r, 1) for r in rs]} MiB (min {min(rs):.1f}, "
                      f"max {max(rs):.1f})\n"
                      f"settled drift % (first {first['t_s']:.0f} s, last {last['t_s']:.0f} s) {sdrift}\n"
                      f"settled RSS trend {slope:+.2f} MiB/h = {slope / mr * 100:+.2f}% of the mean per hour")
                report.update(settled_drift_percent=sdrift, settled_trend_mib_per_h=slope,
                              settled_trend_percent_per_h=slope / mr * 100)
            else:
                print("settled drift: fewer than two settled points after warm-up")
        elif a.mode == "overload":
            n = a.capacity * 3 // 2
            summary, errors = stream(a.build, a.port, a.audio, n, 10)
            reasons = sorted({re.sub(r"\d+", "N", e.split("server error ", 1)[-1]) for e in errors})
            print(header)
            row(f"{n} on {a.capacity}", summary, errors)
            print("refusal reasons:", reasons)
            report.update(summary=summary, refused=len(errors), reasons=reasons)
        else:
            print(header)
            alone = stream(a.build, a.port, a.audio, a.sessions, 20000 // a.sessions)
            row("alone", *alone)
            stop = threading.Event()
            threads = hostile_clients(a.port, stop)
            beside = stream(a.build, a.port, a.audio, a.sessions, 20000 // a.sessions)
            stop.set()
            row("beside hostile", *beside)
            for t in threads:
                t.join(timeout=5)
            report.update(alone=alone[0], beside=beside[0], server_alive=server.poll() is None)
            print("server still running:", server.poll() is None)
    finally:
        # A clean stop drains every stream: time it, since a hostile client must not hold it up.
        t_stop = time.monotonic()
        server.terminate()
        try:
            server.wait(timeout=90)
            report["stop_s"] = time.monotonic() - t_stop
        except subprocess.TimeoutExpired:
            server.kill()
            report["stop_s"] = None
        print("server stop took", "more than 90 s (killed)" if report["stop_s"] is None else f"{report['stop_s']:.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

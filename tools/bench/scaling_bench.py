#!/usr/bin/python3
"""`sluice transcribe` of many files on 1..N cores, its CPU use, and PyTorch eager's batched
forward of the same model on the same audio and cores, in one run (issue 11's targets), PyTorch
timed right after each sluice run and the ratio taken per pair.

  /usr/bin/python3 tools/bench/scaling_bench.py --sluice build/release/tools/sluice \
      [--model models/default] [--audio tests/data/sample_call_8k_mulaw_stereo.wav] \
      [--copies 16] [--runs 3] [--cores 1,2] [--no-torch] [--set section.key=value ...] [--json FILE]

For each core count C: `sluice transcribe` of --copies copies of the call (symlinks in a
scratch folder), pinned to cores 0..C-1 (taskset) with [engine] lanes = C and C scheduler
threads: the whole job (decode, VAD, fbank, model, lexicon decoding, post-processing). Wall time,
CPU time (the child's rusage) and so CPU use in % of one core; x real time = call seconds x
copies / wall. min and median over --runs rounds. Start-up (model, LM and lexicon loading; not the
placement probe, which an explicit lane count skips) is in the wall time: few copies understate
the steady speed. Lanes are not pinned unless --set engine.pin_lanes=true (one lane per allowed
core is then pinned to it). --set passes config overrides to sluice (repeatable).

The reference, unless --no-torch: tools/bench/moe_bench_torch.py (the same weights in
tools/train/model.py, PyTorch eager, torch.set_num_threads(C), pinned the same way), the model's
forward alone -- no audio decoding, no fbank, no decoding -- on as many frames as the engine runs
the model on: one stream per speech segment `sluice segment` cuts from the call, times --copies,
each of the segments' mean length, run in batches of the size at which PyTorch is fastest
(moe_bench_torch.py --best-batch; the chosen size is printed). Until
2026-12-03 it was one batch of all the streams, PyTorch's slowest way: its masked full attention
makes the time per stream grow several-fold with the batch (on one core of this 2-core machine
2.4-2.7 ms per second of audio at batch 1-2, 11 at 16, 19 at 192), so the ratios printed before
then flattered sluice. Its x real time counts the same call seconds, so `sluice / torch` is end
to end against the forward alone. Since 2026-12-06 PyTorch's batch size is searched once per
core count and PyTorch is then timed (median of 3 forwards) right after each sluice run: on a
shared machine whose speed drifts by 10-50% within minutes, a ratio of two medians taken minutes
apart moved more with the drift than with the code; `sluice/torch` is now min / median over those
pairs. For C > 1 cores a second reference runs beside it: C PyTorch processes of one thread
each, pinned to one core each, each with its share of the streams, at the same time (their
slowest median counts). On the 2-core host of session 38 PyTorch with 2 threads was slower than
with one (167x against 227x in one run), so against the 2-thread reference alone sluice looked
better than it is; the ratio is now taken against whichever of the two was faster in that pair.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def call_seconds(sluice: str, audio: str) -> float:
    out = subprocess.run([sluice, "probe", "--json", audio], check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    if isinstance(j, list):
        j = j[0]
    return float(j["duration_s"])


def segment_lengths(sluice: str, audio: str) -> list[float]:
    out = subprocess.run([sluice, "segment", audio], check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    return [(s["end_ms"] - s["start_ms"]) / 1000.0 for c in j["channels"] for s in c["segments"]]


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process (its own rusage, from wait4)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}\n{err[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--model", default="models/default")
    ap.add_argument("--audio", default="tests/data/sample_call_8k_mulaw_stereo.wav")
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", default="1,2")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--torch-dtype", default="f32",
                    help="comma-separated PyTorch references: f32 (eager) and/or bf16 (eager under CPU bf16 "
                         "autocast); ratios are reported against each (compare --set model.math=bf16 with both)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json")
    args = ap.parse_args()
    cores = [int(c) for c in args.cores.split(",")]
    if max(cores) > os.cpu_count():
        sys.exit(f"--cores asks for {max(cores)} cores; this machine has {os.cpu_count()}")
    call_s = call_seconds(args.sluice, args.audio)
    segs = segment_lengths(args.sluice, args.audio)
    audio_s = call_s * args.copies
    report = {"audio": args.audio, "copies": args.copies, "set": args.set, "call_s": call_s, "segments_per_copy": len(segs),
              "segment_s_mean": statistics.mean(segs), "runs": args.runs, "cores": {}}
    print(f"{args.copies} copies of {args.audio} ({call_s:.1f} s each, {len(segs)} segments, "
          f"{sum(segs):.1f} s of them); min/median of {args.runs} runs")
    print(f"{'cores':>5} {'sluice xRT min':>15} {'median':>8} {'CPU % med':>10} {'torch fwd xRT median':>30} "
          f"{'sluice/best torch min/med':>24}")
    dtypes = [] if args.no_torch else [d for d in args.torch_dtype.split(",") if d]
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i in range(args.copies):
            f = os.path.join(tmp, f"call{i:03d}.wav")
            os.symlink(os.path.abspath(args.audio), f)
            files.append(f)

        streams = len(segs) * args.copies

        def cpus(c: int) -> str:
            return f"0-{c - 1}"

        def sluice_cmd(c: int) -> list[str]:
            return ["taskset", "-c", cpus(c), args.sluice, f"--model.dir={args.model}", f"--engine.lanes={c}",
                    f"--engine.scheduler_threads={c}"] + [f"--{kv}" for kv in args.set] + \
                ["transcribe", "--format", "json"] + files

        def torch_cmd(on: str, threads: int, n: int, dtype: str, extra: list[str]) -> list[str]:
            """moe_bench_torch.py on CPUs `on` with `threads` threads, for n streams."""
            return ["taskset", "-c", on, sys.executable, os.path.join(HERE, "moe_bench_torch.py"), "--json",
                    "--model", args.model, "--threads", str(threads), "--batch", str(n), "--seconds",
                    f"{statistics.mean(segs):.3f}", "--dtype", dtype] + extra

        # PyTorch's best batch size is searched once per core count and reference (and for one
        # thread, which the C-process reference uses).
        searched, failed = {}, {}
        for c in sorted(set(cores) | ({1} if max(cores) > 1 else set())):
            for dtype in dtypes:
                run = subprocess.run(torch_cmd(cpus(c), c, streams, dtype, ["--best-batch", "--runs", "1"]),
                                     capture_output=True, text=True, env=env)
                if run.returncode != 0:
                    # Debian's PyTorch 1.13 cannot run this model under CPU bf16 autocast
                    # (LayerNorm: "expected scalar type BFloat16 but found Float"): say so.
                    failed[(c, dtype)] = (run.stderr.strip().splitlines() or ["failed"])[-1]
                    print(f"PyTorch {dtype} reference failed: {failed[(c, dtype)]}", file=sys.stderr)
                    continue
                searched[(c, dtype)] = json.loads(run.stdout.strip().splitlines()[-1])

        def torch_in_procs(c: int, dtype: str) -> float:
            """Seconds for all the streams as c one-thread PyTorch processes, each pinned to its own
            core with its share of the streams, run at the same time: the slowest one's median."""
            shares = [streams // c + (1 if i < streams % c else 0) for i in range(c)]
            extra = ["--forward-batch", str(searched[(1, dtype)]["batch"]), "--runs", "3"]
            procs = [subprocess.Popen(torch_cmd(str(i), 1, shares[i], dtype, extra),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                     for i in range(c)]
            outs = [p.communicate() for p in procs]
            for p, (_, err) in zip(procs, outs):
                if p.returncode != 0:
                    sys.exit(f"PyTorch process failed: {err[-2000:]}")
            return max(json.loads(out.strip().splitlines()[-1])["median_ms"] for out, _ in outs) / 1000.0

        # Then rounds: in each, every core count's sluice run, each followed at once by PyTorch
        # (median of 3 forwards at the batch found): one process of C threads and, for C > 1, C
        # processes of one thread (PyTorch's own threads barely help this small model here, so
        # running streams apart is its better use of C cores). A pair -- and a round's core
        # counts -- see the same state of a shared machine whose speed drifts within minutes;
        # ratios are taken per pair against the faster of the two references, scaling per round,
        # then min and median over them.
        runs = {c: [] for c in cores}
        torch_s = {(c, d, mode): [] for c in cores for d in dtypes for mode in ("threads", "procs")}
        for _ in range(args.runs):
            for c in cores:
                runs[c].append(timed(sluice_cmd(c)))
                for dtype in dtypes:
                    if (c, dtype) in searched:
                        extra = ["--forward-batch", str(searched[(c, dtype)]["batch"]), "--runs", "3"]
                        run = subprocess.run(torch_cmd(cpus(c), c, streams, dtype, extra), capture_output=True,
                                             text=True, env=env, check=True)
                        torch_s[(c, dtype, "threads")].append(
                            json.loads(run.stdout.strip().splitlines()[-1])["median_ms"] / 1000.0)
                    if c > 1 and (1, dtype) in searched:
                        torch_s[(c, dtype, "procs")].append(torch_in_procs(c, dtype))
        for c in cores:
            walls = [w for w, _ in runs[c]]
            cpu_share = statistics.median([cpu / w for w, cpu in runs[c]])
            row = {"wall_s_min": min(walls), "wall_s_median": statistics.median(walls),
                   "x_real_time_min_wall": audio_s / min(walls), "x_real_time_median": audio_s / statistics.median(walls),
                   "cpu_percent_median": 100.0 * cpu_share, "walls_s": walls}
            texts, ratio_texts = [], []
            for dtype in dtypes:
                suffix = "" if dtype == "f32" else "_" + dtype
                if (c, dtype) in failed:
                    row["torch" + suffix] = {"error": failed[(c, dtype)]}
                    texts.append(f"{dtype}: failed")
                    ratio_texts.append("-")
                    continue
                found, ts = searched[(c, dtype)], torch_s[(c, dtype, "threads")]
                row["torch" + suffix] = {"batch": found["batch"], "tried": found["tried"], "torch": found["torch"],
                                         "seconds_per_run": ts}
                row["torch_x_real_time_median" + suffix] = audio_s / statistics.median(ts)
                text = f"{row['torch_x_real_time_median' + suffix]:.0f} (b{found['batch']}{suffix})"
                best = list(ts)
                if torch_s[(c, dtype, "procs")]:
                    tp = torch_s[(c, dtype, "procs")]
                    row["torch_procs" + suffix] = {"processes": c, "batch": searched[(1, dtype)]["batch"],
                                                   "seconds_per_run": tp}
                    row["torch_procs_x_real_time_median" + suffix] = audio_s / statistics.median(tp)
                    text += f", {row['torch_procs_x_real_time_median' + suffix]:.0f} ({c} procs)"
                    best = [min(a, b) for a, b in zip(ts, tp)]
                pair = [t / w for t, w in zip(best, walls)]  # (audio / wall) / (audio / torch's time)
                row["sluice_over_torch_pairs" + suffix] = pair
                row["sluice_over_torch_min" + suffix] = min(pair)
                row["sluice_over_torch_median" + suffix] = statistics.median(pair)
                texts.append(text)
                ratio_texts.append(f"{min(pair):.2f} / {statistics.median(pair):.2f}")
            report["cores"][str(c)] = row
            print(f"{c:>5} {row['x_real_time_min_wall']:>15.1f} {row['x_real_time_median']:>8.1f} "
                  f"{row['cpu_percent_median']:>10.0f} {' / '.join(texts) or '-':>30} {' / '.join(ratio_texts) or '-':>24}")
    if len(cores) > 1:
        lo, hi = min(cores), max(cores)
        per_round = [w_lo / w_hi for (w_lo, _), (w_hi, _) in zip(runs[lo], runs[hi])]
        s = report["cores"][str(hi)]["x_real_time_median"] / report["cores"][str(lo)]["x_real_time_median"]
        report["scaling_median"] = s
        report["scaling_per_round"] = per_round
        print(f"scaling {lo} -> {hi} cores: {s:.2f}x (medians); per round min {min(per_round):.2f}x, "
              f"median {statistics.median(per_round):.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()

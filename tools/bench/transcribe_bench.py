#!/usr/bin/python3
"""`sluice transcribe` against the PyTorch reference: same model, same audio, same thread count,
in one run. Reports RTF (wall time / audio time) of each, the ratio, and peak memory (max RSS).

  /usr/bin/python3 tools/bench/transcribe_bench.py --sluice build/release/tools/sluice \
      --model models/default --runs 3 FILE.wav ...

Both sides do the whole job on each file: decode + resample to 16 kHz, cut the speech segments
(the reference reuses the segments sluice reported, so both run the model on the same audio),
80-dim Kaldi fbank, the acoustic model, CTC decoding (sluice: prefix beam search, with the word
LM when the model ships one; reference: greedy, which is cheaper). Each side runs in its own
process so that its peak RSS is its own; min and median wall time over --runs are reported.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = r'''
import json, os, sys, time
import numpy as np, soundfile as sf, torch, torchaudio
sys.path.insert(0, {train!r})
from model import AcousticModel, ModelConfig
import safetensors_io, ctc_metrics
torch.set_num_threads({threads})
meta = json.load(open(os.path.join({model!r}, "model.json")))
tokens = [l.rstrip("\n") for l in open(os.path.join({model!r}, "tokens.txt")) if l.strip()]
m = AcousticModel(ModelConfig.from_json(meta["architecture"]))
m.load_state_dict(safetensors_io.load(os.path.join({model!r}, "weights.safetensors")))
m.eval()
segments = json.loads(sys.stdin.read())
with torch.no_grad():
    for path, chans in segments.items():
        x, sr = sf.read(path, dtype="float64", always_2d=True)
        w = torchaudio.functional.resample(torch.from_numpy(x.T.copy()), sr, 16000)
        for ch, segs in chans.items():
            for a, b in segs:
                piece = w[int(ch), a * 16: b * 16]
                fb = torchaudio.compliance.kaldi.fbank(piece[None] * 32768.0, num_mel_bins=80, frame_length=25,
                                                       frame_shift=10, dither=0.0, energy_floor=0.0,
                                                       sample_frequency=16000).float()
                logits, n = m(fb[None], torch.tensor([fb.shape[0]]))
                ctc_metrics.greedy_decode(logits, n, tokens)
'''


def run_sluice(args, env) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run([args.sluice, "transcribe", "--model.dir=" + args.model, "--format", "json"] + args.files,
                       env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"sluice failed: {p.stderr}")
    return wall, p.stdout


def peak_rss_kib(cmd, env, stdin=None) -> tuple[float, int]:
    """Runs cmd in a fresh process via a tiny wrapper so RUSAGE_CHILDREN is that process alone."""
    wrapper = ("import resource,subprocess,sys,time,json;t=time.perf_counter();"
               "p=subprocess.run(json.loads(sys.argv[1]),input=sys.stdin.read(),text=True,capture_output=True);"
               "w=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
               "print(json.dumps([w,r,p.returncode,p.stderr[-2000:]]))")
    p = subprocess.run([sys.executable, "-c", wrapper, json.dumps(cmd)], input=stdin or "", env=env,
                       capture_output=True, text=True)
    wall, rss, rc, err = json.loads(p.stdout)
    if rc != 0:
        sys.exit(f"{cmd[0]} failed: {err}")
    return wall, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sluice", default="build/release/tools/sluice")
    ap.add_argument("--model", default="models/default")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads),
               OMP_WAIT_POLICY="PASSIVE")

    _, out = run_sluice(args, env)
    doc = json.loads("[" + out.replace("}\n{", "},\n{") + "]") if out.count('"file"') > 1 else [json.loads(out)]
    audio_s = sum(d["duration_s"] * len(d["channels"]) for d in doc)
    segments = {d["file"]: {str(c["channel"]): [[s["start_ms"], s["end_ms"]] for s in c["segments"]]
                            for c in d["channels"]} for d in doc}

    sluice_cmd = [args.sluice, "transcribe", "--model.dir=" + args.model, "--format", "json"] + args.files
    ref_code = REFERENCE.format(train=os.path.join(HERE, "..", "train"), threads=args.threads, model=args.model)
    ref_cmd = ["/usr/bin/python3", "-c", ref_code]
    results = {}
    for name, cmd, stdin in (("sluice", sluice_cmd, None), ("pytorch", ref_cmd, json.dumps(segments))):
        walls, rss = [], 0
        for _ in range(args.runs):
            w, r = peak_rss_kib(cmd, env, stdin)
            walls.append(w)
            rss = max(rss, r)
        results[name] = {"min_s": min(walls), "median_s": statistics.median(walls), "max_rss_mib": rss / 1024}
    for name, r in results.items():
        print(f"{name:8s} wall min {r['min_s']:.2f} s, median {r['median_s']:.2f} s | RTF min "
              f"{r['min_s'] / audio_s:.4f} median {r['median_s'] / audio_s:.4f} | peak RSS {r['max_rss_mib']:.0f} MiB")
    ratio_min = results["pytorch"]["min_s"] / results["sluice"]["min_s"]
    ratio_med = results["pytorch"]["median_s"] / results["sluice"]["median_s"]
    print(f"audio {audio_s:.1f} s (channels counted separately), {args.threads} thread(s): "
          f"sluice is {ratio_min:.1f}x faster (min), {ratio_med:.1f}x (median) than the PyTorch reference")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The reference beside tools/bench/moe_bench and recognizer_bench: the same offline forward in
PyTorch eager (tools/train/model.py), on random fbank of the same length; --batch streams of
--seconds each in one batched forward, on --threads threads.

  /usr/bin/python3 tools/bench/moe_bench_torch.py --model DIR [--seconds 60] [--runs 5]
      [--batch 1] [--threads 1] [--json]

--json prints one line {"torch", "threads", "batch", "seconds", "min_ms", "median_ms"} instead of
the sentence, for benchmarks that run it beside themselves.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
from model import AcousticModel, ModelConfig  # noqa: E402
import safetensors_io  # noqa: E402

FRAMES_PER_SECOND = 100


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    meta = json.load(open(os.path.join(args.model, "model.json")))
    model = AcousticModel(ModelConfig.from_json(meta["architecture"]))
    model.load_state_dict(safetensors_io.load(os.path.join(args.model, "weights.safetensors")))
    model.eval()
    n = int(args.seconds * FRAMES_PER_SECOND)
    fbank = torch.randn(args.batch, n, model.cfg.n_mels, generator=torch.Generator().manual_seed(7)) * 2.0 + 8.0
    lengths = torch.tensor([n] * args.batch)
    times = []
    with torch.no_grad():
        model(fbank, lengths)  # warm-up
        for _ in range(args.runs):
            t0 = time.perf_counter()
            model(fbank, lengths)
            times.append((time.perf_counter() - t0) * 1000.0)
    times.sort()
    best = times[0]
    if args.json:
        print(json.dumps({"torch": torch.__version__, "threads": args.threads, "batch": args.batch,
                          "seconds": args.seconds, "min_ms": best, "median_ms": times[len(times) // 2]}))
        return
    print(f"pytorch {torch.__version__} eager, 1 thread, {args.seconds:.1f} s: min {best:.2f} ms, "
          f"median {times[len(times) // 2]:.2f} ms | {best / args.seconds:.3f} ms per s of audio, "
          f"RTF {best / 1000.0 / args.seconds:.5f}")


if __name__ == "__main__":
    main()

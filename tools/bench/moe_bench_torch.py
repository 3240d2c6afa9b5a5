#!/usr/bin/python3
"""The reference beside tools/bench/moe_bench and recognizer_bench: the same offline forward in
PyTorch eager (tools/train/model.py), on random fbank of the same length; --batch streams of
--seconds each in one batched forward, on --threads threads.

  /usr/bin/python3 tools/bench/moe_bench_torch.py --model DIR [--seconds 60] [--runs 5]
      [--batch 1] [--threads 1] [--best-batch] [--json] [--device cpu|cuda] [--dtype f32|bf16]

--forward-batch B: the --batch streams are run in forwards of B streams each (what an earlier
--best-batch chose; scaling_bench.py searches once and then times PyTorch beside each of its runs).

--best-batch: the --batch streams are run in forwards of b streams each, b the batch size at
which PyTorch is fastest per stream: 1, 2, 4, ... up to --batch and --batch itself are each timed
twice (after a warm-up; the faster counts), the sweep stopping once a size is 3x slower per stream than the best so
far, and the best is timed --runs times. PyTorch's forward computes the chunked attention as full
attention under a mask (tools/train/model.py), so its time per stream grows with the batch once
the [batch, heads, T, T] scores leave the caches: one batch of every stream is its slowest way,
not its best, and a reference should be the best. Times are then for all --batch streams
(forward time x --batch / b).

--device cuda runs the model on the GPU (synchronised before each time is taken), the reference
for tools/bench/device_bench; --dtype bf16 runs it under bf16 autocast.

--json prints one line {"torch", "threads", "batch", "streams", "seconds", "min_ms", "median_ms"}
(and "tried": {b: ms per stream} with --best-batch) instead of the sentence, for benchmarks that
run it beside themselves.
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
    ap.add_argument("--best-batch", action="store_true")
    ap.add_argument("--forward-batch", type=int, default=0,
                    help="run the --batch streams in forwards of this many (the size an earlier --best-batch chose); "
                         "no search")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    meta = json.load(open(os.path.join(args.model, "model.json")))
    model = AcousticModel(ModelConfig.from_json(meta["architecture"]))
    model.load_state_dict(safetensors_io.load(os.path.join(args.model, "weights.safetensors")))
    model.eval()
    model.to(device)
    n = int(args.seconds * FRAMES_PER_SECOND)

    def timed_forward(batch: int, runs: int) -> list[float]:
        """ms of one forward of `batch` streams, `runs` times, after a warm-up."""
        fbank = torch.randn(batch, n, model.cfg.n_mels, generator=torch.Generator().manual_seed(7)) * 2.0 + 8.0
        fbank = fbank.to(device)
        lengths = torch.tensor([n] * batch, device=device)
        times = []
        autocast = torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.dtype == "bf16")

        def sync() -> None:
            if args.device == "cuda":
                torch.cuda.synchronize()

        with torch.no_grad(), autocast:
            model(fbank, lengths)  # warm-up
            sync()
            for _ in range(runs):
                t0 = time.perf_counter()
                model(fbank, lengths)
                sync()
                times.append((time.perf_counter() - t0) * 1000.0)
        return sorted(times)

    batch, tried = args.batch, {}
    if args.forward_batch > 0:
        if args.best_batch:
            sys.exit("--forward-batch and --best-batch: give one")
        batch = min(args.forward_batch, args.batch)
    elif args.best_batch:
        sizes, b = [], 1
        while b < args.batch:
            sizes.append(b)
            b *= 2
        sizes.append(args.batch)
        for b in sizes:
            tried[b] = timed_forward(b, 2)[0] / b
            if tried[b] > 3.0 * min(tried.values()):
                break
        batch = min(tried, key=tried.get)
    scale = args.batch / batch  # forwards of `batch` streams that make up --batch streams
    times = [t * scale for t in timed_forward(batch, args.runs)]
    best = times[0]
    if args.json:
        print(json.dumps({"torch": torch.__version__, "device": args.device, "dtype": args.dtype, "threads": args.threads, "batch": batch, "streams": args.batch,
                          "seconds": args.seconds, "min_ms": best, "median_ms": times[len(times) // 2],
                          "tried": {str(k): v for k, v in tried.items()}}))
        return
    per = f"batch {batch} of {args.batch} streams" if args.best_batch else f"batch {batch}"
    print(f"pytorch {torch.__version__} eager on {args.device} ({args.dtype}), {args.threads} thread(s), {per}, {args.seconds:.1f} s each: "
          f"min {best:.2f} ms, median {times[len(times) // 2]:.2f} ms | "
          f"{best / (args.seconds * args.batch):.3f} ms per s of audio, RTF {best / 1000.0 / (args.seconds * args.batch):.5f}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Training-step throughput of the recipe's model (tools/train/model.py, train.py's step):
audio seconds trained per wall second ("x real time") for each routed-expert formulation and
precision, on the CPU or a CUDA GPU.

  /usr/bin/python3 tools/bench/train_bench.py [--device cpu|cuda] [--impl loop,dense]
      [--amp none,bf16] [--batch 16] [--seconds 10] [--steps 5] [--warmup 2] [--threads N]
      [--model models/default] [--json]

One step = train.py's: forward (chunked attention, chunk 16, 4 chunks left), CTC loss in f32,
backward, gradient clipping, AdamW, balancing-bias update, on a batch of --batch utterances of
--seconds s of synthetic log-mel features (the time of a step does not depend on what is said;
targets are 12 characters per second, a fast talker). The weights are the model directory's
(--model) or random with the default architecture (--model ''). On CUDA every timed step ends
with a synchronisation, so the time is the GPU's. Prints one line per configuration: ms per step
(min / median over --steps), x real time at the median, peak GPU memory.

"loop" is the per-expert loop (a host synchronisation per layer), "dense" the three GEMMs over
all experts (none); NOTES-debian12.md measured ~3,200x real time for the loop on the lent H200.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))

import torch  # noqa: E402

from model import AcousticModel, ModelConfig  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--impl", default="loop,dense")
    ap.add_argument("--amp", default="none,bf16")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="torch threads on the CPU (0: torch's default)")
    ap.add_argument("--model", default="models/default")
    ap.add_argument("--json", action="store_true", help="also print each result as a JSON line")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("train_bench: --device cuda, but torch sees no GPU", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    import train  # noqa: E402  (tools/train/train.py: the step's loss)
    device = torch.device(args.device)
    torch.manual_seed(0)
    if args.model:
        model = train.load_model_dir(args.model)
    else:
        model = AcousticModel(ModelConfig())
    model.to(device).train()
    frames = int(args.seconds * 100)
    gen = torch.Generator().manual_seed(1)
    feats = (torch.randn(args.batch, frames, 80, generator=gen) * 2.0 + 8.0).to(device)
    lengths = torch.full((args.batch,), frames, dtype=torch.long)           # host: as train.py
    n_chars = int(args.seconds * 12)
    targets = torch.randint(1, model.cfg.vocab_size, (args.batch, n_chars), generator=gen).to(device)
    target_lengths = torch.full((args.batch,), n_chars, dtype=torch.long)
    audio_s = args.batch * args.seconds
    print(f"train_bench: {args.device}, {torch.get_num_threads()} CPU threads, batch {args.batch} x "
          f"{args.seconds:g} s, torch {torch.__version__}", flush=True)
    for impl in args.impl.split(","):
        for amp in args.amp.split(","):
            for moe in model.moe_layers():
                moe.impl = impl
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            times, loss = [], float("nan")
            try:
                for i in range(args.warmup + args.steps):
                    t0 = time.perf_counter()
                    opt.zero_grad(set_to_none=True)
                    l = train.ctc_step_loss(model, feats, lengths, targets, target_lengths, 16, 4, amp == "bf16")
                    l.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                    opt.step()
                    for moe in model.moe_layers():
                        moe.update_bias(1e-3)
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                    if i >= args.warmup:
                        times.append(time.perf_counter() - t0)
                loss = float(l)
            except RuntimeError as e:
                print(f"{impl:5s} {amp:4s}  FAILED: {str(e).splitlines()[0]}", flush=True)
                continue
            med = statistics.median(times)
            rec = {"bench": "train_step", "device": args.device, "impl": impl, "amp": amp,
                   "batch": args.batch, "seconds": args.seconds, "ms_min": 1e3 * min(times),
                   "ms_median": 1e3 * med, "x_real_time": audio_s / med, "loss": loss,
                   "threads": torch.get_num_threads()}
            if device.type == "cuda":
                rec["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
            print(f"{impl:5s} {amp:4s}  {rec['ms_min']:8.1f} / {rec['ms_median']:8.1f} ms per step  "
                  f"{rec['x_real_time']:9.0f}x real time"
                  + (f"  peak {rec['peak_mib']:.0f} MiB" if "peak_mib" in rec else ""), flush=True)
            if args.json:
                print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

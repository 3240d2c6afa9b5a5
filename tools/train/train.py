#!/usr/bin/python3
"""Train the sluice MoE CTC acoustic model on the data of make_data.py.

  /usr/bin/python3 tools/train/train.py --data data --out runs/default [--hours-budget 6]

Resumable: a checkpoint (model, optimiser, step, sampler state) is written every
--checkpoint-min minutes and at the end of each epoch to OUT/last.pt; rerunning the same command
continues from it. The best dev-CER model is kept in OUT/best.pt. Progress goes to OUT/log.jsonl.

Output units: --units chars (tools/train/tokens.txt) or --units pieces --pieces DIR (a pieces.py
directory: SentencePiece word pieces). --init of a model with other units keeps every tensor but
the CTC output layer, which starts fresh.

Debian's torch is fast only with libopenblas0-pthread and OMP_WAIT_POLICY=PASSIVE: this script
sets the latter itself (re-executing if needed) and warns when the former is missing.
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.environ.get("OMP_WAIT_POLICY") != "PASSIVE":
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import AcousticModel, ModelConfig, subsampled_length  # noqa: E402
import dataset  # noqa: E402
import ctc_metrics  # noqa: E402

# Dynamic-chunk training: each batch draws its attention chunk (in 40 ms frames; 0 = full
# context) and left context (chunks; -1 = unbounded), so one model serves streaming and offline.
CHUNK_CHOICES = [8, 12, 16, 0]
LEFT_CHOICES = [2, 4, -1]


def spec_augment(x: torch.Tensor, lengths: torch.Tensor, rng: random.Random) -> torch.Tensor:
    """Two frequency masks (<= 10 bins) and time masks (<= 40 frames, about 1 per 3 s)."""
    x = x.clone()
    b, t, m = x.shape
    for i in range(b):
        n = int(lengths[i])
        fill = x[i, :n].mean()
        for _ in range(2):
            w = rng.randint(0, 10)
            f0 = rng.randint(0, m - w)
            x[i, :n, f0:f0 + w] = fill
        for _ in range(max(1, n // 300)):
            w = rng.randint(0, min(40, n // 10))
            t0 = rng.randint(0, max(0, n - w))
            x[i, t0:t0 + w, :] = fill
    return x


def time_shift(x: torch.Tensor, lengths: torch.Tensor, rng: random.Random, max_frames: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Moves each utterance earlier by a random k + a frames (k in 0..max_frames-1 whole 10 ms
    frames, a in [0, 1) of one by linear interpolation between neighbouring log-mel frames).
    The features are fixed per utterance on disk, so without this every epoch shows the x4
    subsampling the same phase of each utterance. Measured (session 23, evaluate.py --shift-ms):
    one epoch of fine-tuning with it did not make the text any steadier under a 2.5-5 ms delay
    than without (30-77% of the words move either way); it is kept as an option, off by default.
    Returns the shifted batch and its lengths (each k + 1 frames shorter; utterances under k + 9
    frames are left as they are)."""
    if max_frames <= 0:
        return x, lengths
    out = torch.zeros_like(x)
    new_len = lengths.clone()
    for i in range(x.shape[0]):
        n = int(lengths[i])
        k = rng.randrange(max_frames)
        a = rng.random()
        m = n - k - 1
        if m < 8:                      # too short to shift: keep as it is
            out[i, :n] = x[i, :n]
            continue
        out[i, :m] = (1 - a) * x[i, k:k + m] + a * x[i, k + 1:k + 1 + m]
        new_len[i] = m
    return out, new_len


def lr_at(step: int, peak: float, warmup: int, total: int, progress: float | None = None) -> float:
    """Linear warmup over `warmup` steps, then cosine from peak to 5% of it over the rest of
    `total` steps, or at `progress` (0..1) of the decay when given (the time schedule)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    if progress is None:
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))


def ctc_step_loss(net, feats, lengths, targets, target_lengths, chunk: int, left: int,
                  amp: bool) -> torch.Tensor:
    """The training loss of one batch: the forward (bf16 autocast when amp) and the CTC loss in
    f32, summed over the batch's utterances and divided by their number. `lengths` and
    `target_lengths` stay on the CPU (feats and targets may be on a GPU): CTC reads the lengths
    on the host, so lengths on the GPU would make every step wait for it."""
    with torch.autocast(feats.device.type, dtype=torch.bfloat16, enabled=amp):
        logits, _ = net(feats, lengths.to(feats.device), chunk=chunk, left_chunks=left)
    out_len = subsampled_length(lengths).clamp(max=logits.shape[1])    # = the model's, on the host
    logp = F.log_softmax(logits.float(), -1).transpose(0, 1)
    return F.ctc_loss(logp, targets, out_len, target_lengths, blank=0, reduction="sum",
                      zero_infinity=True) / feats.shape[0]


def evaluate(model: AcousticModel, batches, tokens, max_utts: int = 400) -> dict:
    """Greedy CER/WER and expert balance on the first max_utts utterances of batches, in f32 on
    the model's device."""
    model.eval()
    device = model.cmvn_mean.device
    rates = ctc_metrics.ErrorRates()
    loads = [torch.zeros(model.cfg.n_routed) for _ in model.moe_layers()]
    n = 0
    with torch.no_grad():
        for feats, lengths, targets, target_lengths, _ in batches:
            logits, out_len = model(feats.to(device), lengths.to(device))
            logits, out_len = logits.cpu(), out_len.cpu()
            for li, moe in enumerate(model.moe_layers()):
                loads[li] += moe.last_load.cpu()
            hyps = ctc_metrics.greedy_decode(logits, out_len, tokens)
            refs = ctc_metrics.targets_to_text(targets, target_lengths, tokens)
            for h, r in zip(hyps, refs):
                rates.add(h, r)
            n += len(hyps)
            if n >= max_utts:
                break
    model.train()
    return {"cer": rates.cer(), "wer": rates.wer(), "utts": n, "balance_max_mean": ctc_metrics.balance_max_mean(loads)}


def head_from_chars(weight: torch.Tensor, bias: torch.Tensor, char_tokens: list[str],
                    piece_tokens: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """A word-piece CTC output layer started from a characters one: <blank> keeps the blank row,
    each piece's row (and bias) is the mean of the rows of its characters (U+2581 -> <space>;
    '<unk>' and characters the chars model lacks are left out, and a piece with none of its
    characters known gets the mean of all non-blank rows)."""
    index = {t: i for i, t in enumerate(char_tokens)}
    rows_w, rows_b = [weight[0]], [bias[0]]
    for piece in piece_tokens[1:]:
        chars = [] if piece.startswith("<") else ["<space>" if c == "\u2581" else c for c in piece]
        ids = [index[c] for c in chars if c in index and index[c] != 0]
        if not ids:
            ids = list(range(1, len(char_tokens)))
        rows_w.append(weight[ids].mean(0))
        rows_b.append(bias[ids].mean(0))
    return torch.stack(rows_w), torch.stack(rows_b)


def load_model_dir(path: str, tokens: list[str] | None = None,
                   new_head: bool = False, head_init: str = "fresh") -> AcousticModel:
    """An AcousticModel from an exported model directory (export.py writes every state_dict
    entry under its own name, f32). Refuses a directory whose tokens differ from `tokens` when
    given, and any missing or unexpected tensor. With new_head and tokens that differ (e.g. a
    chars model fine-tuned to word pieces), every tensor except the CTC output layer (ctc.*) is
    loaded, and that layer is freshly initialised for len(tokens) outputs (head_init "fresh") or
    started from the characters layer (head_init "chars", see head_from_chars)."""
    import safetensors_io
    with open(os.path.join(path, "model.json")) as f:
        meta = json.load(f)
    with open(os.path.join(path, meta.get("tokens", "tokens.txt")), encoding="utf-8") as f:
        dir_tokens = [line.rstrip("\n") for line in f if line.rstrip("\n")]
    fresh_head = tokens is not None and dir_tokens != tokens
    if fresh_head and not new_head:
        raise ValueError(f"{path}: tokens.txt differs from the recipe's tokens")
    cfg_json = dict(meta["architecture"])
    if fresh_head:
        cfg_json["vocab_size"] = len(tokens)
    model = AcousticModel(ModelConfig.from_json(cfg_json))
    tensors = safetensors_io.load(os.path.join(path, meta.get("weights", "weights.safetensors")))
    state = {k: v.float() for k, v in tensors.items()}
    if fresh_head:
        head = {k for k in state if k.startswith("ctc.")}
        if not head:
            raise RuntimeError(f"{path}: no CTC output layer (ctc.*) in the weights")
        for k in head:
            state[k] = model.state_dict()[k]
        if head_init == "chars":
            state["ctc.weight"], state["ctc.bias"] = head_from_chars(
                tensors["ctc.weight"].float(), tensors["ctc.bias"].float(), dir_tokens, tokens)
    model.load_state_dict(state, strict=True)
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="data")
    ap.add_argument("--out", default="runs/default")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch-frames", type=int, default=16000, help="fbank frames per batch (10 ms each)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=800)
    ap.add_argument("--bias-rate", type=float, default=1e-3, help="balancing bias step per update")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--checkpoint-min", type=float, default=10.0)
    ap.add_argument("--hours-budget", type=float, default=0.0, help="stop after this much wall time (0 = no limit)")
    ap.add_argument("--max-utt-s", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--init", default="",
                    help="start from these weights (fine-tuning): a train.py checkpoint (.pt) or an "
                         "exported model directory (model.json + weights.safetensors)")
    ap.add_argument("--moe-impl", choices=["auto", "loop", "dense"], default="auto",
                    help="routed experts: per-expert GEMMs with a host synchronisation per layer "
                         "(loop) or three GEMMs over all experts with none (dense); same math, see "
                         "test_model_io.py. tools/bench/train_bench.py on 2 cores, 16 x 10 s: loop "
                         "128x real time, dense 102x (f32) / 155x (bf16 autocast). auto: dense on "
                         "CUDA, loop on the CPU")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                    help="where to train (auto: CUDA when torch sees a GPU). Under torchrun each "
                         "process takes the GPU of its LOCAL_RANK")
    ap.add_argument("--amp", choices=["none", "bf16"], default="none",
                    help="bf16 autocast for the matrix products (routing, layer norms and the CTC "
                         "loss stay f32; weights and optimiser state stay f32)")
    ap.add_argument("--accum", type=int, default=1,
                    help="micro-batches per optimiser step (gradients averaged): larger steps on "
                         "one device; under torchrun each process takes its own micro-batches")
    ap.add_argument("--nproc", type=int, default=1,
                    help="start this many training processes on this machine (DDP: one per GPU with "
                         "--device cuda, else gloo between CPU processes), like torchrun "
                         "--nproc_per_node; under torchrun leave it at 1")
    ap.add_argument("--dist-timeout-min", type=float, default=30.0,
                    help="with several processes: a collective that waits longer than this fails "
                         "(with a message) instead of hanging")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="stop after this many optimiser steps in all, saving last.pt (0 = no limit)")
    ap.add_argument("--prefetch", type=int, default=-1,
                    help="steps of batches a background thread prepares ahead (read, augmented, "
                         "pinned) while the device computes; -1: 2 on CUDA, 0 on the CPU")
    ap.add_argument("--log-every", type=int, default=50, help="optimiser steps between loss records")
    ap.add_argument("--no-spec-augment", action="store_true", help="train without SpecAugment masks")
    ap.add_argument("--train-splits", default="train",
                    help="comma-separated splits to train on (e.g. train,train_real), each with an optional "
                         "weight: train:3,train_fotaq:0.4 hears train 3 times and a fixed 40%% of "
                         "train_fotaq per epoch")
    ap.add_argument("--units", choices=["chars", "pieces"], default="chars",
                    help="output units: characters (tools/train/tokens.txt) or word pieces (--pieces)")
    ap.add_argument("--pieces", default="",
                    help="with --units pieces: a pieces.py output directory (pieces.model + tokens.txt)")
    ap.add_argument("--head-init", choices=["fresh", "chars"], default="fresh",
                    help="--init of a chars model dir with --units pieces: the new CTC output layer "
                         "random (fresh) or from the characters layer (chars: each piece's row the "
                         "mean of its characters' rows)")
    ap.add_argument("--shift-frames", type=int, default=0,
                    help="time-shift augmentation: move each utterance earlier by a random 0 to N "
                         "frames, fractions included (4 covers every phase of the x4 subsampling; "
                         "0 = off, as the runs before session 23)")
    ap.add_argument("--lr-schedule", choices=["steps", "time"], default="steps",
                    help="the cosine decay follows the steps of --epochs (steps) or the wall time of "
                         "--hours-budget (time: for a fixed lease, e.g. the lent GPU, where the step "
                         "rate is not known beforehand; process 0's clock)")
    ap.add_argument("--reschedule", action="store_true",
                    help="on resume, stretch or shrink the LR schedule to end at --epochs instead of the stored length")
    args = ap.parse_args()
    if (args.units == "pieces") != bool(args.pieces):
        ap.error("--pieces DIR goes with --units pieces (and only with it)")

    if args.accum < 1:
        ap.error("--accum must be >= 1")
    if args.lr_schedule == "time" and not args.hours_budget:
        ap.error("--lr-schedule time needs --hours-budget")
    if args.nproc > 1 and "WORLD_SIZE" not in os.environ:
        sys.exit(launch(args.nproc))
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import faulthandler
        import signal
        faulthandler.register(signal.SIGUSR1, all_threads=True)   # launch()'s stuck-process dump
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dist = Distributed(args.device, args.dist_timeout_min)
    device = dist.device
    if dist.rank == 0:
        os.makedirs(args.out, exist_ok=True)
    if device.type == "cpu" and not os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"):
        print("warning: libopenblas0-pthread is not installed: torch will be ~30x slower", file=sys.stderr)
    say = print if dist.rank == 0 else (lambda *a, **k: None)
    say(f"device: {device}, {dist.world} process(es) ({dist.backend or 'no'} collectives), "
        f"amp {args.amp}, {args.accum} micro-batch(es) per step per process", flush=True)

    units = dataset.Units.from_pieces_dir(args.pieces) if args.units == "pieces" else dataset.Units.chars()
    tokens = units.tokens
    say(f"units: {units.kind}, {len(tokens)} tokens", flush=True)
    train = dataset.FeatureSet(args.data, args.train_splits, units, max_seconds=args.max_utt_s)
    dev = dataset.FeatureSet(args.data, "dev", units, max_seconds=args.max_utt_s)
    say(f"train: {len(train)} utts, {train.hours():.2f} h per epoch; dev: {len(dev)} utts", flush=True)
    for sp, (have, used) in train.split_counts.items():
        say(f"  {sp}: {have} utts, {used} per epoch", flush=True)

    init_dir = args.init if args.init and os.path.isdir(args.init) else ""
    if init_dir:
        # Fine-tuning an exported model: same architecture; same tokens, except that other units
        # (chars -> pieces) get a fresh CTC output layer over the rest of the loaded weights.
        # Only a change of units may replace the output layer: a character model with other
        # characters is refused, as before word pieces.
        other_units = dataset.Units.from_model_dir(init_dir).kind != units.kind
        model = load_model_dir(init_dir, tokens, new_head=other_units, head_init=args.head_init)
        cfg = model.cfg
    else:
        cfg = ModelConfig(vocab_size=len(tokens))
        model = AcousticModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=1e-2)
    state = {"step": 0, "epoch": 0, "best_cer": 1e9, "elapsed_s": 0.0}
    last = os.path.join(args.out, "last.pt")
    if os.path.exists(last):
        ck = torch.load(last, map_location="cpu", weights_only=False)  # our own checkpoint (torch >= 2.6 defaults to True)
        if dataset.Units.from_checkpoint(ck).tokens != tokens:
            sys.exit(f"{last}: its units/tokens differ from --units {args.units}: use another --out")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        state = ck["state"]
        say(f"resumed at epoch {state['epoch']} step {state['step']}", flush=True)
    else:
        if init_dir:
            # Loaded above, CMVN included: the weights were trained on that normalisation.
            if dataset.Units.from_model_dir(init_dir).tokens != tokens:
                how = ("started from the characters layer (mean of each piece's character rows)"
                       if args.head_init == "chars" else "freshly initialised")
                say(f"init {init_dir}: loaded every tensor except the CTC output layer (ctc.weight, "
                      f"ctc.bias), {how} for {len(tokens)} {units.kind} tokens", flush=True)
        elif args.init:
            # Fine-tuning keeps the checkpoint's CMVN: its weights were trained on that normalisation.
            ck = torch.load(args.init, map_location="cpu", weights_only=False)
            init_state = ck["model"]
            init_units = dataset.Units.from_checkpoint(ck)
            if init_units.tokens != tokens:
                if init_units.kind == units.kind:
                    sys.exit(f"{args.init}: its {units.kind} tokens differ from this run's")
                if args.head_init != "fresh":
                    sys.exit("--head-init chars needs --init to be a model directory")
                for k in [k for k in init_state if k.startswith("ctc.")]:
                    init_state[k] = model.state_dict()[k]
                say(f"init {args.init}: loaded every tensor except the CTC output layer, freshly "
                      f"initialised for {len(tokens)} {units.kind} tokens", flush=True)
            model.load_state_dict(init_state)
        else:
            mean, istd = train.cmvn_stats()
            model.cmvn_mean.copy_(mean)
            model.cmvn_istd.copy_(istd)
    impl = args.moe_impl if args.moe_impl != "auto" else ("dense" if device.type == "cuda" else "loop")
    for moe in model.moe_layers():
        moe.impl = impl
    total, active = model.param_counts()
    say(f"params: {total/1e6:.2f} M total, {active/1e6:.2f} M active; routed experts: {impl}", flush=True)
    model.to(device)
    # Optimiser state was loaded on the CPU: move it with the parameters.
    for st in opt.state.values():
        for k, v in st.items():
            if torch.is_tensor(v):
                st[k] = v.to(device)
    net = dist.wrap(model, find_unused=(impl == "loop"))

    # Each optimiser step consumes world x accum batches of the epoch's (seeded, identical on every
    # process) batch list: micro-batch a of process r is batch step * group + a * world + r, so
    # one process with --accum N sees exactly the batches of N processes with --accum 1.
    group = dist.world * args.accum
    n_batches = len(train.batches(args.batch_frames, seed=0))
    steps_per_epoch = n_batches // group
    if steps_per_epoch == 0:
        sys.exit(f"{n_batches} batches per epoch: fewer than the {group} one step needs "
                 f"({dist.world} processes x --accum {args.accum})")
    # Kept in the checkpoint so a resume follows the same LR schedule and skips exactly the batches
    # already done, even if the data grew meanwhile (older checkpoints: derived as before).
    state.setdefault("total_steps", steps_per_epoch * args.epochs)
    if args.reschedule:
        state["total_steps"] = steps_per_epoch * args.epochs
        say(f"schedule now ends at step {state['total_steps']} (epoch {args.epochs})", flush=True)
    state.setdefault("batch_in_epoch", state["step"] - state["epoch"] * steps_per_epoch)
    # batch_in_epoch counts batches consumed (older checkpoints: one per step, the same thing).
    total_steps = state["total_steps"]
    aug_rng = random.Random(args.seed * 1009 + state["step"] * 31 + dist.rank)
    prefetch = args.prefetch if args.prefetch >= 0 else (2 if device.type == "cuda" else 0)
    log = open(os.path.join(args.out, "log.jsonl"), "a") if dist.rank == 0 else None
    amp = args.amp == "bf16"

    def save(path: str) -> None:
        if dist.rank != 0:
            return
        tmp = path + ".tmp"
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": state,
                    "config": cfg.to_json(), **units.checkpoint_fields()}, tmp)
        os.replace(tmp, path)

    def record(rec: dict) -> None:
        say(json.dumps(rec), flush=True)
        if log:
            log.write(json.dumps(rec) + "\n")
            log.flush()

    t_start = time.time()
    elapsed0 = state["elapsed_s"]
    last_ck = time.time()
    model.train()
    while state["epoch"] < args.epochs:
        batches = train.batches(args.batch_frames, seed=args.seed * 1000 + state["epoch"])
        t_epoch, utts, done = time.time(), 0, False
        def prepared(start: int):
            """Each remaining step of the epoch: (its first batch, its micro-batches, augmented,
            pinned on CUDA), in order, so aug_rng is drawn in the same order with or without
            prefetching."""
            for first in range(start, steps_per_epoch * group - group + 1, group):
                micro = []
                for a in range(args.accum):
                    feats, lengths, targets, target_lengths, _ = batches[first + a * dist.world + dist.rank]
                    feats, lengths = time_shift(feats, lengths, aug_rng, args.shift_frames)
                    if not args.no_spec_augment:
                        feats = spec_augment(feats, lengths, aug_rng)
                    if device.type == "cuda":
                        # Pinned, so the copy is queued behind the GPU's work instead of waiting for it.
                        feats, targets = feats.pin_memory(), targets.pin_memory()
                    micro.append((feats, lengths, targets, target_lengths))
                yield first, micro

        steps_iter = Prefetch(prepared(state["batch_in_epoch"]), prefetch)
        for first, micro in steps_iter:
            if first != state["batch_in_epoch"]:
                raise RuntimeError(f"batch {first} prepared for step at batch {state['batch_in_epoch']}")
            if args.lr_schedule == "time":
                # The share of the budget spent, as process 0 sees it (every process the same LR).
                frac = dist.from_rank0(state["elapsed_s"] / (args.hours_budget * 3600))
                lr = lr_at(state["step"], args.lr, args.warmup, total_steps, progress=min(1.0, frac))
            else:
                lr = lr_at(state["step"], args.lr, args.warmup, total_steps)
            for g in opt.param_groups:
                g["lr"] = lr
            # The attention context of the step: the same on every process and micro-batch.
            step_rng = random.Random(args.seed * 7919 + state["step"])
            chunk = step_rng.choice(CHUNK_CHOICES)
            left = step_rng.choice(LEFT_CHOICES)
            loads = None
            loss_sum = torch.zeros((), device=device)
            opt.zero_grad(set_to_none=True)
            for a, (feats, lengths, targets, target_lengths) in enumerate(micro):
                feats = feats.to(device, non_blocking=True)
                targets = targets.to(device, non_blocking=True)
                sync = dist.no_sync(net) if a + 1 < args.accum else contextlib.nullcontext()
                with sync:
                    loss = ctc_step_loss(net, feats, lengths, targets, target_lengths, chunk, left, amp)
                    (loss / args.accum).backward()
                loss_sum += loss.detach()
                step_loads = torch.stack([torch.cat([m.last_load, m.last_group_load])
                                          for m in model.moe_layers()])
                loads = step_loads if loads is None else loads + step_loads
                utts += feats.shape[0]
            # Every process nudges the balancing biases by the load of all processes, so the
            # biases (buffers DDP does not broadcast here) stay the same everywhere.
            loads = dist.all_reduce_sum(loads)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            n_e = model.cfg.n_routed
            for li, moe in enumerate(model.moe_layers()):
                moe.update_bias(args.bias_rate, loads[li, :n_e], loads[li, n_e:])
            state["step"] += 1
            state["batch_in_epoch"] = first + group
            state["elapsed_s"] = elapsed0 + time.time() - t_start
            final = bool(args.max_steps) and state["step"] >= args.max_steps
            if state["step"] % args.log_every == 0 or final:
                mean_loss = float(dist.all_reduce_sum(loss_sum / args.accum)) / dist.world
                record({"step": state["step"], "epoch": state["epoch"], "loss": mean_loss,
                        "lr": opt.param_groups[0]["lr"],
                        "utt_per_s": utts * dist.world / (time.time() - t_epoch),
                        "elapsed_h": state["elapsed_s"] / 3600})
            if time.time() - last_ck > args.checkpoint_min * 60:
                save(last)
                last_ck = time.time()
            # Process 0's clock decides, so every process stops at the same step (checked every
            # 20 steps when there are several: each check waits for all of them).
            if args.hours_budget and (dist.world == 1 or state["step"] % 20 == 0):
                over = dist.agree(state["elapsed_s"] > args.hours_budget * 3600)
                if over:
                    save(last)
                    say("time budget reached", flush=True)
                    done = True
            if final:
                save(last)
                say(f"stopped at step {state['step']} (--max-steps)", flush=True)
                done = True
            if done:
                steps_iter.close()
                dist.close()
                return
        state["epoch"] += 1
        state["batch_in_epoch"] = 0
        if dist.rank == 0:
            metrics = evaluate(model, dev.batches(args.batch_frames, seed=0, shuffle=False), units)
            record({"epoch": state["epoch"], "step": state["step"], "dev": metrics,
                    "epoch_min": (time.time() - t_epoch) / 60})
            if metrics["cer"] < state["best_cer"]:
                state["best_cer"] = metrics["cer"]
                save(os.path.join(args.out, "best.pt"))
            save(last)
        dist.barrier()
        last_ck = time.time()
    dist.close()


class Prefetch:
    """Iterates `it` in a background thread, up to `depth` items ahead (depth 0: in the caller's
    thread, as before). Items come out in order; an exception in the thread is raised in the
    caller at the item where it happened; close() stops the thread."""

    def __init__(self, it, depth: int):
        import queue
        import threading
        self.depth = depth
        self.it = it
        if depth <= 0:
            return
        self.q = queue.Queue(maxsize=depth)
        self.stop = threading.Event()

        def run():
            try:
                for item in it:
                    while not self.stop.is_set():
                        try:
                            self.q.put((True, item), timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if self.stop.is_set():
                        return
                self.q.put((False, None))
            except BaseException as e:          # noqa: BLE001 - handed to the consumer
                self.q.put((False, e))

        self.thread = threading.Thread(target=run, daemon=True, name="train-prefetch")
        self.thread.start()

    def __iter__(self):
        if self.depth <= 0:
            yield from self.it
            return
        while True:
            ok, item = self.q.get()
            if not ok:
                if item is not None:
                    raise item
                return
            yield item

    def close(self) -> None:
        if self.depth > 0:
            self.stop.set()
            self.thread.join(timeout=10)


def launch(n: int, grace_s: float = 60.0) -> int:
    """Starts n copies of this command as the processes of one DDP group on this machine (RANK,
    LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT in their environment) and waits for them: the exit
    status is the first failure's, and a failure stops the others (they would wait for it).

    A process ends cleanly only after Distributed.close's barrier, which every process reaches
    once its work is done (the checkpoints are written before it). So once one has ended
    cleanly, the others have nothing left to do but leave the group; one still running grace_s
    later is stuck in that teardown (torch 1.13's gloo was seen to hang there under load): its
    threads' stacks are printed (SIGUSR1, faulthandler), it is killed, and the launch keeps the
    status it had, with a warning, rather than waiting for ever."""
    import signal
    import socket
    import subprocess
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    procs = []
    for r in range(n):
        env = dict(os.environ, WORLD_SIZE=str(n), RANK=str(r), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    status = 0
    deadline = None     # set by the first clean exit: the others have that long to follow
    while procs:
        if deadline is None:
            pid, code = os.wait()
        else:
            pid, code = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                if time.monotonic() < deadline:
                    time.sleep(0.5)     # polling a child's exit: no signal to wait on here
                    continue
                print(f"train.py: warning: {len(procs)} process(es) still leaving the group "
                      f"{grace_s:.0f} s after another ended cleanly (all had passed the closing "
                      "barrier): their stacks, then killed", file=sys.stderr, flush=True)
                for p in procs:
                    p.send_signal(signal.SIGUSR1)
                for p in procs:
                    try:
                        rc = p.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        rc = p.wait()
                    if rc > 0 and status == 0:
                        status = rc     # it failed by itself meanwhile (a signal gives rc < 0)
                return status
        done = [p for p in procs if p.pid == pid]
        if not done:
            continue
        procs.remove(done[0])
        done[0].returncode = code >> 8 if code & 0xFF == 0 else 128 + (code & 0x7F)
        if done[0].returncode == 0 and deadline is None:
            deadline = time.monotonic() + grace_s
        if done[0].returncode != 0 and status == 0:
            status = done[0].returncode
            deadline = None     # the others are stopped and waited for
            print(f"train.py: process {done[0].args} exited with {status}: stopping the others",
                  file=sys.stderr)
            for p in procs:
                p.send_signal(signal.SIGTERM)
    return status


class Distributed:
    """One process, or one of several started by torchrun (WORLD_SIZE, RANK, LOCAL_RANK in the
    environment): NCCL between GPUs, gloo between CPU processes. Gradients are averaged by
    DistributedDataParallel; the rest (loads, loss, the stop decision) by the methods here."""

    def __init__(self, want: str, timeout_min: float = 30.0):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        cuda = torch.cuda.is_available()
        if want == "cuda" and not cuda:
            sys.exit("--device cuda: torch sees no GPU (torch.cuda.is_available() is False)")
        use_cuda = want == "cuda" or (want == "auto" and cuda)
        if use_cuda:
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        else:
            self.device = torch.device("cpu")
        self.backend = None
        if self.world > 1:
            import torch.distributed as tdist
            self.backend = "nccl" if use_cuda else "gloo"
            import datetime
            tdist.init_process_group(self.backend, rank=self.rank, world_size=self.world,
                                     timeout=datetime.timedelta(minutes=timeout_min))
            self._d = tdist

    def wrap(self, model, find_unused: bool):
        if self.world == 1:
            return model
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(
            model, device_ids=[self.local_rank] if self.device.type == "cuda" else None,
            broadcast_buffers=False, find_unused_parameters=find_unused)

    def no_sync(self, net):
        return net.no_sync() if self.world > 1 else contextlib.nullcontext()

    def all_reduce_sum(self, t: torch.Tensor) -> torch.Tensor:
        if self.world > 1:
            t = t.clone()
            self._d.all_reduce(t)
        return t

    def from_rank0(self, x: float) -> float:
        """Process 0's value of x, on every process."""
        if self.world == 1:
            return x
        t = torch.tensor([x], dtype=torch.float64, device=self.device)
        self._d.broadcast(t, 0)
        return float(t.item())

    def agree(self, flag: bool) -> bool:
        """Process 0's flag, on every process."""
        return self.from_rank0(1.0 if flag else 0.0) != 0.0

    def barrier(self) -> None:
        if self.world > 1:
            self._d.barrier()

    def close(self) -> None:
        """Waits for every process (none leaves while another is still in a collective), then
        leaves the group."""
        if self.world > 1:
            self._d.barrier()
            self._d.destroy_process_group()


if __name__ == "__main__":
    main()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # One of several processes, its group left (Distributed.close): leave without the
        # interpreter's teardown, where a test run once saw a second process spin after the first
        # had ended (torch 1.13, gloo, twice while other tests loaded the machine; not reproduced in 12
        # runs of the test since, 6 of them with both cores busy).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

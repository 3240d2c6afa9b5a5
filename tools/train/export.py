#!/usr/bin/python3
"""Export a trained checkpoint to the engine's model directory, with golden vectors.

  /usr/bin/python3 tools/train/export.py --ckpt runs/default/best.pt --out models/default \
      --golden-wavs a.wav b.wav
  /usr/bin/python3 tools/train/export.py --random-tiny --out tests/data/tiny_model --golden-synthetic 3
  /usr/bin/python3 tools/train/export.py --model-dir models/default --dtype f16 --out /tmp/default_f16

Model directory (the engine validates all of it on load):
  model.json          format, version, architecture, feature settings, tokens, streaming defaults
  weights.safetensors every parameter and buffer under its PyTorch state_dict name, stored as
                      --dtype: f32 (the default), f16 or bf16 (torch's own .half() / .bfloat16()
                      rounding; the engine widens them to f32 on load, the dtype is in the file)
  tokens.txt          one token per line, id = line number, <blank> first; characters ("units":
                      "chars", "space_token": "<space>" stands for ' ') or word pieces ("units":
                      "pieces", line i+1 = piece i of pieces.model, see pieces.py)
  pieces.model        word pieces only: the SentencePiece model ("tokenizer": "pieces.model")
Golden vectors (golden/NAME.safetensors), for the C++ parity tests:
  fbank f32 [T, 80] (raw log-mel input), logits f32 [T', V] (offline, the model's default chunking),
  layer{i}.out f32 [T', D] (hidden state after block i),
  layer{i}.experts i32 [T', k] (chosen experts, sorted ascending), layer{i}.groups i32 [T', g] (sorted),
  logits_full f32 [T', V] (full-context attention: chunk 0).
With --dtype f16 or bf16 the model's weights are rounded to that dtype before the golden vectors
are computed, so they describe the model the engine loads. --model-dir re-exports an exported
directory (its golden cases recomputed from their fbank inputs, its other files such as lm.arpa
copied).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import AcousticModel, ModelConfig  # noqa: E402
import dataset  # noqa: E402
import safetensors_io  # noqa: E402

FORMAT = "sluice-moe-ctc"
VERSION = 1
FEATURES = {"sample_rate": 16000, "num_mel_bins": 80, "frame_length_ms": 25.0, "frame_shift_ms": 10.0,
            "dither": 0.0, "preemphasis": 0.97, "low_freq_hz": 20.0, "high_freq_hz": 0.0,
            "window": "povey", "input_scale": 32768.0}
TINY = dict(d_model=32, n_heads=2, n_layers=2, conv_channels=8, shared_hidden=24, n_routed=8, n_groups=4,
            top_groups=2, top_k=2, expert_hidden=16, chunk_frames=4, left_chunks=2)


def kaldi_fbank(wav_path: str) -> torch.Tensor:
    import soundfile as sf
    import torchaudio
    x, sr = sf.read(wav_path, dtype="float64", always_2d=True)
    assert sr == 16000, f"{wav_path}: golden inputs must be 16 kHz"
    w = torch.from_numpy(x[:, 0] * 32768.0)[None]
    f = torchaudio.compliance.kaldi.fbank(w, num_mel_bins=80, frame_length=25, frame_shift=10, dither=0.0,
                                          energy_floor=0.0, sample_frequency=16000)
    return f.float()


STORAGE_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# Written by write_model_dir itself; --model-dir copies every other file of the source directory.
OWN_FILES = ("model.json", "tokens.txt", "weights.safetensors", "golden", "pieces.model")
PIECES_FILE = "pieces.model"


def round_to_storage(model: AcousticModel, dtype: str) -> None:
    """Rounds every parameter and buffer in place to what `dtype` stores (torch's conversion,
    round to nearest even), so that computing with the model gives what the engine computes with
    the widened weights. f32 leaves the model untouched."""
    if dtype == "f32":
        return
    with torch.no_grad():
        for v in model.state_dict().values():
            v.copy_(v.to(STORAGE_DTYPES[dtype]).float())


def write_model_dir(model: AcousticModel, tokens, out: str, extra: dict | None = None,
                    dtype: str = "f32") -> None:
    """tokens: a chars token list or a dataset.Units (chars or pieces)."""
    units = dataset.as_units(tokens)
    tokens = units.tokens
    if len(tokens) != model.cfg.vocab_size:
        raise ValueError(f"{len(tokens)} tokens for a model of {model.cfg.vocab_size} outputs")
    os.makedirs(out, exist_ok=True)
    tensors = {k: v.float().to(STORAGE_DTYPES[dtype]) for k, v in model.state_dict().items()}
    safetensors_io.save(tensors, os.path.join(out, "weights.safetensors"),
                        metadata={"format": FORMAT, "version": str(VERSION)})
    with open(os.path.join(out, "tokens.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    total, active = model.param_counts()
    meta = {"format": FORMAT, "version": VERSION, "architecture": model.cfg.to_json(), "features": FEATURES,
            "tokens": "tokens.txt", "weights": "weights.safetensors", "blank_id": 0}
    if units.kind == "chars":
        meta["space_token"] = "<space>"
    meta["units"] = units.kind
    if units.kind == "pieces":
        meta["tokenizer"] = PIECES_FILE
    meta["streaming"] = {"chunk_frames": model.cfg.chunk_frames, "left_chunks": model.cfg.left_chunks}
    meta["params"] = {"total": total, "active": active}
    if units.kind == "chars":
        stale = os.path.join(out, PIECES_FILE)
        if os.path.exists(stale):
            os.remove(stale)
    else:
        with open(os.path.join(out, PIECES_FILE), "wb") as f:
            f.write(units.pieces_model)
    if extra:
        meta.update(extra)
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


def golden(model: AcousticModel, fbank: torch.Tensor, path: str) -> None:
    model.eval()
    lengths = torch.tensor([fbank.shape[0]])
    t = {"fbank": fbank.contiguous()}
    with torch.no_grad():
        logits, _, hidden = model(fbank[None], lengths, return_hidden=True)
        t["logits"] = logits[0].contiguous()
        # Each MoE layer keeps the routing of the pass just run (the offline, default-chunk pass).
        for i, (h, moe) in enumerate(zip(hidden, model.moe_layers())):
            groups, experts, _ = moe.last_route
            t[f"layer{i}.out"] = h[0].contiguous()
            t[f"layer{i}.experts"] = torch.sort(experts, dim=-1).values.to(torch.int32).contiguous()
            t[f"layer{i}.groups"] = torch.sort(groups, dim=-1).values.to(torch.int32).contiguous()
        logits_full, _ = model(fbank[None], lengths, chunk=0, left_chunks=-1)
        t["logits_full"] = logits_full[0].contiguous()
    safetensors_io.save(t, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", help="checkpoint from train.py")
    ap.add_argument("--random-tiny", action="store_true", help="a tiny randomly initialised model (tests)")
    ap.add_argument("--model-dir", help="an exported model directory to re-export (e.g. as another --dtype)")
    ap.add_argument("--dtype", choices=sorted(STORAGE_DTYPES), default="f32",
                    help="storage dtype of weights.safetensors (default f32)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--golden-wavs", nargs="*", default=[])
    ap.add_argument("--golden-synthetic", type=int, default=0, help="N random-fbank golden cases")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--pieces", default="",
                    help="with --random-tiny: word-piece units from this pieces.py directory")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    here = os.path.dirname(os.path.abspath(__file__))
    if args.random_tiny:
        tokens = (dataset.Units.from_pieces_dir(args.pieces) if args.pieces
                  else dataset.Units.chars(os.path.join(here, "tokens.txt")))
        model = AcousticModel(ModelConfig(vocab_size=len(tokens.tokens), **TINY))
        with torch.no_grad():
            # Non-trivial buffers so the engine must apply them: CMVN and balancing biases.
            model.cmvn_mean.uniform_(5.0, 10.0)
            model.cmvn_istd.uniform_(0.2, 0.5)
            for moe in model.moe_layers():
                moe.expert_bias.uniform_(-0.05, 0.05)
                moe.group_bias.uniform_(-0.05, 0.05)
    elif args.model_dir:
        from train import load_model_dir
        if os.path.realpath(args.model_dir) == os.path.realpath(args.out):
            ap.error("--model-dir and --out must differ")
        model = load_model_dir(args.model_dir)
        tokens = dataset.Units.from_model_dir(args.model_dir)
    else:
        if not args.ckpt:
            ap.error("one of --ckpt, --random-tiny, --model-dir is needed")
        ck = torch.load(args.ckpt, map_location="cpu", weights_only=False)  # our own checkpoint (torch >= 2.6 defaults to True)
        tokens = dataset.Units.from_checkpoint(ck)
        model = AcousticModel(ModelConfig.from_json(ck["config"]))
        model.load_state_dict(ck["model"])
    model.eval()
    round_to_storage(model, args.dtype)
    shutil.rmtree(os.path.join(args.out, "golden"), ignore_errors=True)
    write_model_dir(model, tokens, args.out, dtype=args.dtype)
    gdir = os.path.join(args.out, "golden")
    os.makedirs(gdir, exist_ok=True)
    if args.model_dir:
        for name in sorted(os.listdir(args.model_dir)):
            src = os.path.join(args.model_dir, name)
            if name not in OWN_FILES and os.path.isfile(src):
                shutil.copy(src, os.path.join(args.out, name))
        src_golden = os.path.join(args.model_dir, "golden")
        for name in sorted(os.listdir(src_golden)) if os.path.isdir(src_golden) else []:
            fbank = safetensors_io.load(os.path.join(src_golden, name))["fbank"]
            golden(model, fbank, os.path.join(gdir, name))
    for w in args.golden_wavs:
        golden(model, kaldi_fbank(w), os.path.join(gdir, os.path.splitext(os.path.basename(w))[0] + ".safetensors"))
    g = torch.Generator().manual_seed(args.seed)
    for i in range(args.golden_synthetic):
        n = int(torch.randint(60, 400, (1,), generator=g))
        fb = torch.randn(n, 80, generator=g) * 2.0 + 8.0
        golden(model, fb, os.path.join(gdir, f"synthetic{i}.safetensors"))
    print(f"wrote {args.out}: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()

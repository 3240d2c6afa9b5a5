#!/usr/bin/python3
"""Training data for the lent GPU machine (tools/train/device_train.sh), in two halves:

  pack (here):   /usr/bin/python3 tools/train/device_data.py pack --data data --out .device_train
                     [--splits train_real,train:1.2,train_bass,train_fotaq] [--bitrate 12000]
                     [--budget-mb auto]
  unpack (there): python3 tools/train/device_data.py unpack --pack .device_train --out DIR
                     [--copies 4] [--workers 16] [--seed 1]

The machine gets the working tree and at most 64 MiB in all, no Debian packages (no sox, no
synthesizers) and PyTorch with torchaudio. So `pack` carries the clean real speech of the
recipe's training splits (each distinct source recording once: the asterisk prompts, the two
games' voice acting; of the TTS voices, whose synthesizers cannot travel, up to 1.2 h of what
make_data rendered) as 16 kHz Opus (opus_pack.py, 12 kbit/s: ~5.4 MB per hour), in the order of
--splits (SPLIT:H caps a split at H hours) until the budget is spent (auto: 64 MiB less the working
tree less 3 MiB), plus the dev split's audio as it is, and libopus. `unpack` decodes it on every
core and makes --copies versions of each recording: the first as recorded, the others through a
numpy/torchaudio augmentation (speed 0.9-1.1, synthetic room reverb; augment.py's own noise -
white/pink/brown/babble at 5-30 dB SNR - level and rare clipping; and for half of them the
telephone channel: 300-3400 Hz, 8 kHz, G.711 mu-law; sox's effects and codecs are not there), then the recipe's fbank (make_data.py's own),
written as a data directory train.py reads (shards/<split>/*.json + feats/<split>/*.npy).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import augment as recipe_augment  # noqa: E402  (device_data.augment is this module's own)
import opus_pack  # noqa: E402

SR = 16000
TREE_LIMIT = 64 * 2**20


def fbank16k(x: np.ndarray) -> np.ndarray:
    """The recipe's features of int16 16 kHz samples: make_data.py's own fbank (its module imports
    nothing a machine without Debian packages lacks)."""
    import make_data
    if "torch" not in make_data._WORKER:
        make_data._worker_init()
    return make_data._fbank(x)


def resample(x: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    if sr_in == sr_out:
        return x
    import torch
    import torchaudio.functional as AF
    return AF.resample(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), sr_in, sr_out).numpy()


def read_int16_16k(path: str) -> np.ndarray:
    import soundfile as sf
    x, sr = sf.read(path, dtype="float32", always_2d=True)
    x = resample(x.mean(1), sr, SR)
    return recipe_augment.to_int16(x)


def tree_bytes(root: str) -> int:
    """Bytes of what the device tool sends: tracked and untracked-not-ignored files."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    total = 0
    for name in out.split(b"\0"):
        p = os.path.join(root, name.decode())
        if name and os.path.isfile(p):
            total += os.path.getsize(p)
    return total


def source_lines(data: str, split: str) -> list[dict]:
    """Each distinct source recording of a training split once: {"id", "text", "path", "split",
    "source", "duration"} (duration of the shard's version, an estimate for the budget). Real
    speech names its source recording (tts.path); a synthesized utterance (make_data.py's TTS
    splits) has none that could travel, so its rendered audio goes: the voice, tempo, pitch, room
    and channel make_data gave it, which the device's augmentation then varies further."""
    seen, out = set(), []
    for p in sorted(glob.glob(os.path.join(data, "shards", split, "*.json"))):
        with open(p) as f:
            for u in json.load(f)["utts"]:
                path = u.get("tts", {}).get("path")
                if not path and u.get("voice") and u.get("path"):
                    path = os.path.join(data, u["path"])
                if not path or path in seen:
                    continue
                seen.add(path)
                out.append({"id": f"{split}-{len(out):06d}", "text": u["text"], "path": path,
                            "split": split, "source": u.get("source", split), "duration": u["duration"]})
    return out


def cmd_pack(args) -> int:
    os.makedirs(args.out, exist_ok=True)
    if args.budget_mb == "auto":
        budget = TREE_LIMIT - tree_bytes(args.repo) - 3 * 2**20
        # What is already in --out would travel too: it is replaced, so it does not count.
    else:
        budget = int(float(args.budget_mb) * 2**20)
    rate_bytes = args.bitrate / 8.0 * 1.04 + 2 * 50       # bytes per second with packet lengths
    dev_utts = []
    for p in sorted(glob.glob(os.path.join(args.data, "shards", "dev", "*.json"))):
        with open(p) as f:
            dev_utts += [{"id": u["id"], "text": u["text"], "path": os.path.join(args.data, u["path"]),
                          "split": "dev", "duration": u["duration"]} for u in json.load(f)["utts"]]
    budget -= int(sum(u["duration"] for u in dev_utts) * rate_bytes) + (400 << 10)   # + libopus
    chosen, skipped, capped = [], {}, {}
    for spec in args.splits.split(","):
        split, _, cap = spec.partition(":")
        cap_s = float(cap) * 3600 if cap else float("inf")
        for u in source_lines(args.data, split):
            need = u["duration"] * rate_bytes
            if u["duration"] > cap_s:
                capped[split] = capped.get(split, 0) + 1
                continue
            if need > budget:
                skipped[split] = skipped.get(split, 0) + 1
                continue
            budget -= need
            cap_s -= u["duration"]
            chosen.append(u)
    if not chosen:
        print("device_data pack: no training audio fits the budget", file=sys.stderr)
        return 1
    t0 = time.time()
    train_h = opus_pack.write(os.path.join(args.out, "train.pack"), chosen,
                              lambda u: read_int16_16k(u["path"]), args.bitrate)
    dev_h = opus_pack.write(os.path.join(args.out, "dev.pack"), dev_utts,
                            lambda u: read_int16_16k(u["path"]), args.bitrate)
    lib = opus_pack.lib()._name
    shutil.copyfile(os.path.realpath(lib) if os.path.isabs(lib) else
                    "/usr/lib/x86_64-linux-gnu/libopus.so.0", os.path.join(args.out, "libopus.so.0"))
    per_split = {}
    for u in train_h["utts"]:
        s = per_split.setdefault(u["split"], {"utts": 0, "hours": 0.0})
        s["utts"] += 1
        s["hours"] += u["samples"] / SR / 3600
    manifest = {"bitrate": args.bitrate, "splits": per_split, "skipped_for_budget": skipped,
                "left_out_by_hours": capped,
                "dev_utts": len(dev_h["utts"]),
                "bytes": {n: os.path.getsize(os.path.join(args.out, n)) for n in sorted(os.listdir(args.out))}}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    total = sum(manifest["bytes"].values())
    print(f"device_data pack: {len(chosen)} recordings, "
          + ", ".join(f"{k} {v['utts']} ({v['hours']:.2f} h)" for k, v in per_split.items())
          + f"; dev {len(dev_utts)}; {total / 2**20:.1f} MiB in {args.out} ({time.time() - t0:.0f} s)"
          + (f"; left out for the budget: {skipped}" if skipped else ""), flush=True)
    return 0


# ---------------------------------------------------------------- augmentation (numpy, torchaudio)

def _conv(x: np.ndarray, h: np.ndarray) -> np.ndarray:
    n = len(x) + len(h) - 1
    m = 1 << (n - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(x, m) * np.fft.rfft(h, m), m)[:len(x)]


def augment(x: np.ndarray, rnd: random.Random, others: list[np.ndarray]) -> tuple[np.ndarray, dict]:
    """float32 16 kHz in [-1, 1] -> a degraded version and what was done to it."""
    g = np.random.default_rng(rnd.getrandbits(32))
    a = {}
    # Played faster or slower (tempo and pitch together): read as if recorded at SR * speed. The
    # rate is a multiple of 100 Hz, so the resampler's polyphase filter has at most 160 phases
    # (coprime rates would make it thousands, and the call minutes long).
    rate = 100 * round(SR * rnd.uniform(0.9, 1.1) / 100)
    a["speed"] = rate / SR                                  # exact: rate is a multiple of 100
    y = resample(x, rate, SR)
    if rnd.random() < 0.4:                                  # room: exponentially decaying noise
        rt60 = rnd.uniform(0.15, 0.7)
        t = np.arange(int(rt60 * SR)) / SR
        h = g.standard_normal(len(t)) * np.exp(-6.9 * t / rt60)
        h[0] = 1.0 / rnd.uniform(0.3, 1.0)                  # direct path vs reverberant energy
        y = _conv(y, h / np.sqrt(np.sum(h ** 2)))
        a["rt60"] = round(rt60, 2)
    # Noise (white, pink, brown or babble of the other recordings), level and rare clipping:
    # augment.py's own stage 2 (numpy only), with its parameters.
    if rnd.random() < 0.7:
        a["noise"] = recipe_augment._draw_noise(rnd, 5.0, 30.0)
    a["level_dbfs"] = round(rnd.uniform(-35.0, -12.0), 1)
    if rnd.random() < 0.05:
        a["clip_db"] = round(rnd.uniform(1, 6), 1)
    y = recipe_augment.noise_and_level(y, a, others)
    if rnd.random() < 0.5:                                  # telephone: band, 8 kHz, mu-law
        lo, hi = rnd.uniform(200, 400), rnd.uniform(3000, 3600)
        spec = np.fft.rfft(y)
        f = np.fft.rfftfreq(len(y), 1.0 / SR)
        spec[(f < lo) | (f > hi)] = 0
        z = resample(np.fft.irfft(spec, len(y)).astype(np.float32), SR, 8000)
        mu = 255.0
        z = np.clip(z, -1.0, 1.0)
        q = np.round(np.sign(z) * np.log1p(mu * np.abs(z)) / np.log1p(mu) * 127) / 127
        z = np.sign(q) * np.expm1(np.abs(q) * np.log1p(mu)) / mu
        y = resample(z.astype(np.float32), 8000, SR)
        a["phone"] = {"low_hz": round(lo), "high_hz": round(hi)}
    return np.clip(np.asarray(y, np.float32), -1.0, 1.0), a


def _unpack_chunk(job: dict) -> dict:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(1)
    out, split, k, items, copies = job["out"], job["split"], job["k"], job["items"], job["copies"]
    name = f"{split}-{k:05d}"
    rnd = random.Random(job["seed"] * 1000003 + k * 7919 + zlib.crc32(split.encode()))
    clean = [x.astype(np.float32) / 32768.0 for _, x in items]
    utts, feats, offset = [], [], 0
    for i, (u, x) in enumerate(items):
        for c in range(copies):
            if c == 0:
                y, a = x, {}
            else:
                others = clean[:i] + clean[i + 1:]
                yf, a = augment(clean[i], rnd, others)
                y = recipe_augment.to_int16(yf)
            f = fbank16k(y).astype(np.float16)
            feats.append(f)
            utts.append({"id": f"{u['id']}-{c}", "text": u["text"], "split": split, "source": u.get("source", split),
                         "condition": "clean" if c == 0 else "train", "augment": a,
                         "duration": round(len(y) / SR, 3),
                         "feats": {"path": f"feats/{split}/{name}.npy", "offset": offset, "frames": int(f.shape[0])}})
            offset += f.shape[0]
    os.makedirs(os.path.join(out, "feats", split), exist_ok=True)
    os.makedirs(os.path.join(out, "shards", split), exist_ok=True)
    np.save(os.path.join(out, "feats", split, name + ".npy"),
            np.concatenate(feats) if feats else np.zeros((0, 80), np.float16))
    with open(os.path.join(out, "shards", split, name + ".json"), "w") as f:
        json.dump({"shard": name, "utts": utts}, f)
    return {"split": split, "utts": len(utts), "seconds": sum(u["duration"] for u in utts)}


def cmd_unpack(args) -> int:
    import multiprocessing as mp
    t0 = time.time()
    os.environ.setdefault("SLUICE_LIBOPUS", os.path.join(args.pack, "libopus.so.0"))
    jobs = []
    for pack, copies in (("train.pack", args.copies), ("dev.pack", 1)):
        _, it = opus_pack.read(os.path.join(args.pack, pack))
        by_split: dict[str, list] = {}
        for u, x in it:
            by_split.setdefault(u["split"], []).append((u, x))
        for split, items in by_split.items():
            for k in range(0, len(items), args.shard_utts):
                jobs.append({"out": args.out, "split": split, "k": k // args.shard_utts,
                             "items": items[k:k + args.shard_utts], "copies": copies, "seed": args.seed})
    t_dec = time.time() - t0
    ctx = mp.get_context("spawn")
    with ctx.Pool(args.workers) as pool:
        done = pool.map(_unpack_chunk, jobs, chunksize=1)
    per = {}
    for d in done:
        s = per.setdefault(d["split"], [0, 0.0])
        s[0] += d["utts"]
        s[1] += d["seconds"]
    print(f"device_data unpack: decoded in {t_dec:.0f} s, features in {time.time() - t0 - t_dec:.0f} s on "
          f"{args.workers} workers: " + ", ".join(f"{k} {v[0]} utts {v[1] / 3600:.2f} h" for k, v in per.items()),
          flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--data", default="data")
    p.add_argument("--out", default=".device_train")
    p.add_argument("--splits", default="train_real,train:1.2,train_bass,train_fotaq",
                   help="training splits whose recordings travel, in this order until the budget is spent; "
                        "SPLIT:H takes at most H hours of that split. The default carries 1.2 h of the TTS "
                        "voices (split train): without them a fine-tune on real speech alone lost 9 CER "
                        "points on unseen TTS voices (MODEL_CARD.md, session 28)")
    p.add_argument("--bitrate", type=int, default=12000)
    p.add_argument("--budget-mb", default="auto", help="MiB for the pack (auto: what the 64 MiB tree limit leaves)")
    p.add_argument("--repo", default=os.path.normpath(os.path.join(HERE, "..", "..")))
    u = sub.add_parser("unpack")
    u.add_argument("--pack", default=".device_train")
    u.add_argument("--out", required=True)
    u.add_argument("--copies", type=int, default=4, help="versions of each recording: as recorded + augmented")
    u.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    u.add_argument("--shard-utts", type=int, default=200)
    u.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    return cmd_pack(args) if args.cmd == "pack" else cmd_unpack(args)


if __name__ == "__main__":
    sys.exit(main())

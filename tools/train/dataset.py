"""Reading the features and transcripts that make_data.py wrote, in length-bucketed batches.

Shard records (DATA/shards/<split>/*.json) are read directly, so training can start on the
shards finished so far. Features are memory-mapped .npy arrays [frames, 80] per shard.
"""
from __future__ import annotations

import glob
import json
import os
import random

import numpy as np
import torch

SPACE = "<space>"
FRAME_S = 0.01


def read_tokens(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.rstrip("\n")]


def text_to_ids(text: str, tokens: list[str]) -> list[int]:
    index = {t: i for i, t in enumerate(tokens)}
    return [index[SPACE if ch == " " else ch] for ch in text if (SPACE if ch == " " else ch) in index]


class Units:
    """The model's output units: "chars" (tokens.txt of the recipe: <blank>, a-z, ', <space>) or
    "pieces" (a SentencePiece model, pieces.py: token id = piece id + 1). Carries what is needed
    to encode transcripts and decode CTC outputs, and the pieces.model bytes to store with a
    checkpoint or model directory."""

    def __init__(self, kind: str, tokens: list[str], pieces_model: bytes | None = None):
        if kind not in ("chars", "pieces"):
            raise ValueError(f"unknown units {kind!r}")
        if (kind == "pieces") != (pieces_model is not None):
            raise ValueError("a pieces model is needed for (and only for) units 'pieces'")
        self.kind = kind
        self.tokens = list(tokens)
        self.pieces_model = pieces_model
        self._sp = None
        if kind == "pieces":
            import pieces
            self._sp = pieces.load_bytes(pieces_model)
            pieces.check_tokens(self._sp, self.tokens)

    @staticmethod
    def chars(tokens_path: str | None = None) -> "Units":
        here = os.path.dirname(os.path.abspath(__file__))
        return Units("chars", read_tokens(tokens_path or os.path.join(here, "tokens.txt")))

    @staticmethod
    def from_pieces_dir(path: str) -> "Units":
        """A pieces.py output directory (pieces.model + tokens.txt, checked against each other)."""
        import pieces
        with open(os.path.join(path, pieces.MODEL_FILE), "rb") as f:
            blob = f.read()
        with open(os.path.join(path, pieces.TOKENS_FILE), encoding="utf-8") as f:
            tokens = [line.rstrip("\n") for line in f if line.rstrip("\n")]
        return Units("pieces", tokens, blob)

    @staticmethod
    def from_model_dir(path: str) -> "Units":
        """An exported model directory's units (model.json "units", default chars)."""
        with open(os.path.join(path, "model.json")) as f:
            meta = json.load(f)
        tokens = read_tokens(os.path.join(path, meta.get("tokens", "tokens.txt")))
        if meta.get("units", "chars") == "chars":
            return Units("chars", tokens)
        with open(os.path.join(path, meta["tokenizer"]), "rb") as f:
            return Units("pieces", tokens, f.read())

    @staticmethod
    def from_checkpoint(ck: dict) -> "Units":
        """A train.py checkpoint's units (checkpoints older than units are chars)."""
        return Units(ck.get("units", "chars"), ck["tokens"], ck.get("pieces_model"))

    def checkpoint_fields(self) -> dict:
        out = {"units": self.kind, "tokens": self.tokens}
        if self.pieces_model is not None:
            out["pieces_model"] = self.pieces_model
        return out

    def encode(self, text: str) -> list[int]:
        if self.kind == "chars":
            return text_to_ids(text, self.tokens)
        import pieces
        return pieces.encode(self._sp, text)

    def decode(self, ids) -> str:
        """Text of token ids (blanks and repeats already removed), spaces collapsed."""
        if self.kind == "chars":
            return " ".join("".join(" " if self.tokens[i] == SPACE else self.tokens[i] for i in ids).split())
        import pieces
        return pieces.decode(self.tokens, ids)


def as_units(units) -> Units:
    """A Units from a Units or a plain chars token list (the form older callers pass)."""
    return units if isinstance(units, Units) else Units("chars", units)


def parse_split_weights(split: str) -> list[tuple[str, float]]:
    """'train:3,train_real,train_fotaq:0.4' -> [('train', 3.0), ('train_real', 1.0), ('train_fotaq', 0.4)].
    A weight scales how much of a split one epoch sees (see FeatureSet); it must be > 0."""
    out = []
    for item in split.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, w = item.partition(":")
        weight = 1.0
        if sep:
            try:
                weight = float(w)
            except ValueError:
                raise ValueError(f"split weight of {name!r} is not a number: {w!r}") from None
            if not weight > 0 or weight != weight or weight == float("inf"):
                raise ValueError(f"split weight of {name!r} must be a finite number > 0, not {w!r}")
        if not name:
            raise ValueError(f"empty split name in {split!r}")
        out.append((name, weight))
    return out


def weighted_pick(n: int, weight: float, key: str) -> list[int]:
    """Indices 0..n-1 that one epoch uses for a split of weight `weight`: every index floor(weight)
    times, plus a fixed random subset of round(frac * n) (the same subset every call for `key`).
    Weight 1 keeps each once, 3 three times, 0.4 a fixed 40%."""
    whole = int(weight)
    frac = weight - whole
    picked = [i for _ in range(whole) for i in range(n)]
    extra = round(frac * n)
    if extra:
        picked += sorted(random.Random(f"split-weight/{key}").sample(range(n), extra))
    return picked


class FeatureSet:
    """split may name several splits, comma-separated (e.g. 'train,train_real'), each with an
    optional weight ('train:3,train_fotaq:0.4'): a split of weight w contributes each utterance
    floor(w) times plus a fixed random share frac(w) of them to every epoch (parse_split_weights,
    weighted_pick), so a small split can be heard more often than a large one."""

    def __init__(self, root: str, split: str, units, max_seconds: float = 20.0):
        self.root = root
        self.units = as_units(units)
        self.tokens = self.units.tokens
        self.utts = []
        self.split_counts: dict[str, tuple[int, int]] = {}
        for sp, weight in parse_split_weights(split):
            kept = []
            for rec_path in sorted(glob.glob(os.path.join(root, "shards", sp, "*.json"))):
                with open(rec_path) as f:
                    rec = json.load(f)
                for u in rec["utts"]:
                    if "feats" not in u or u["duration"] > max_seconds:
                        continue
                    ids = self.units.encode(u["text"])
                    if not ids:
                        continue
                    kept.append({"id": u["id"], "feats": u["feats"], "ids": ids, "text": u["text"],
                                 "condition": u.get("condition", ""), "voice": u.get("voice", "")})
            picked = weighted_pick(len(kept), weight, sp)
            self.utts += [kept[i] for i in picked]
            self.split_counts[sp] = (len(kept), len(picked))
        self._maps: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.utts)

    def hours(self) -> float:
        return sum(u["feats"]["frames"] for u in self.utts) * FRAME_S / 3600

    def feats(self, u: dict) -> np.ndarray:
        path = os.path.join(self.root, u["feats"]["path"])
        if path not in self._maps:
            self._maps[path] = np.load(path, mmap_mode="r")
        a = u["feats"]["offset"]
        return np.asarray(self._maps[path][a:a + u["feats"]["frames"]], dtype=np.float32)

    def cmvn_stats(self, max_utts: int = 2000) -> tuple[torch.Tensor, torch.Tensor]:
        rng = random.Random(0)
        pick = rng.sample(self.utts, min(max_utts, len(self.utts)))
        s = np.zeros(80, np.float64)
        s2 = np.zeros(80, np.float64)
        n = 0
        for u in pick:
            f = self.feats(u).astype(np.float64)
            s += f.sum(0)
            s2 += (f * f).sum(0)
            n += f.shape[0]
        mean = s / n
        var = np.maximum(s2 / n - mean * mean, 1e-6)
        return torch.tensor(mean, dtype=torch.float32), torch.tensor(1.0 / np.sqrt(var), dtype=torch.float32)

    def batches(self, max_frames: int, seed: int, shuffle: bool = True):
        """Batches of utterances of similar length, at most max_frames padded frames each.
        Returns a list of (feats [B,T,80], lengths [B], targets [B,U], target_lengths [B], utts)."""
        order = sorted(range(len(self.utts)), key=lambda i: self.utts[i]["feats"]["frames"])
        groups, cur, cur_max = [], [], 0
        for i in order:
            n = self.utts[i]["feats"]["frames"]
            if cur and max(cur_max, n) * (len(cur) + 1) > max_frames:
                groups.append(cur)
                cur, cur_max = [], 0
            cur.append(i)
            cur_max = max(cur_max, n)
        if cur:
            groups.append(cur)
        if shuffle:
            random.Random(seed).shuffle(groups)
        return _Batches(self, groups)


class _Batches:
    def __init__(self, fs: FeatureSet, groups: list[list[int]]):
        self.fs = fs
        self.groups = groups

    def __len__(self) -> int:
        return len(self.groups)

    def __iter__(self):
        for i in range(len(self.groups)):
            yield self[i]

    def __getitem__(self, index: int):
        """Batch `index`: (feats [B,T,80], lengths [B], targets [B,U], target_lengths [B], utts)."""
        utts = [self.fs.utts[i] for i in self.groups[index]]
        feats = [self.fs.feats(u) for u in utts]
        t = max(f.shape[0] for f in feats)
        x = np.zeros((len(feats), t, 80), np.float32)
        for i, f in enumerate(feats):
            x[i, :f.shape[0]] = f
        u_max = max(len(u["ids"]) for u in utts)
        y = np.zeros((len(utts), u_max), np.int64)
        for i, u in enumerate(utts):
            y[i, :len(u["ids"])] = u["ids"]
        return (torch.from_numpy(x), torch.tensor([f.shape[0] for f in feats]), torch.from_numpy(y),
                torch.tensor([len(u["ids"]) for u in utts]), utts)

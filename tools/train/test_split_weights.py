"""Tests of the per-split weights of the training set (dataset.parse_split_weights,
weighted_pick, FeatureSet 'name:weight'): parsing and its errors, how many times each utterance
of a split is used per epoch, and that the fractional share is fixed across loads. A tiny data
directory is written to a temporary folder. Needs python3-torch (dataset.py imports it); exits 77
without it, which ctest reports as skipped (not passed).

  /usr/bin/python3 tools/train/test_split_weights.py
"""
from __future__ import annotations

import collections
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import torch  # noqa: F401
except ImportError:
    print("SKIPPED: python3-torch is not installed", file=sys.stderr)
    sys.exit(77)
import numpy as np  # noqa: E402

import dataset  # noqa: E402


def write_split(root: str, split: str, n: int) -> None:
    """n utterances 'a', 'ab', ... of 10 frames each, in one shard and one feature file."""
    os.makedirs(os.path.join(root, "shards", split), exist_ok=True)
    os.makedirs(os.path.join(root, "feats", split), exist_ok=True)
    np.save(os.path.join(root, "feats", split, "f.npy"), np.zeros((10 * n, 80), np.float32))
    utts = [{"id": f"{split}-{i}", "text": "word", "duration": 0.1,
             "feats": {"path": f"feats/{split}/f.npy", "offset": 10 * i, "frames": 10}}
            for i in range(n)]
    with open(os.path.join(root, "shards", split, f"{split}-0.json"), "w") as f:
        json.dump({"utts": utts}, f)


class ParseTest(unittest.TestCase):
    def test_names_and_weights(self):
        self.assertEqual(dataset.parse_split_weights("train:3,train_real,train_fotaq:0.4"),
                         [("train", 3.0), ("train_real", 1.0), ("train_fotaq", 0.4)])
        self.assertEqual(dataset.parse_split_weights("train, dev ,"), [("train", 1.0), ("dev", 1.0)])

    def test_bad_weights_refused(self):
        for bad in ("train:0", "train:-1", "train:x", "train:", "train:nan", "train:inf", ":2"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                dataset.parse_split_weights(bad)


class PickTest(unittest.TestCase):
    def test_counts(self):
        # weight 2.5 of 10: every index twice plus 5 of them a third time.
        c = collections.Counter(dataset.weighted_pick(10, 2.5, "s"))
        self.assertEqual(sorted(c), list(range(10)))
        self.assertEqual(sorted(c.values()), [2] * 5 + [3] * 5)
        self.assertEqual(dataset.weighted_pick(4, 1.0, "s"), [0, 1, 2, 3])
        third = dataset.weighted_pick(30, 1 / 3, "s")
        self.assertEqual(len(third), 10)
        self.assertEqual(len(set(third)), 10)

    def test_share_fixed_per_split_name(self):
        self.assertEqual(dataset.weighted_pick(100, 0.3, "a"), dataset.weighted_pick(100, 0.3, "a"))
        self.assertNotEqual(dataset.weighted_pick(100, 0.3, "a"), dataset.weighted_pick(100, 0.3, "b"))


class FeatureSetTest(unittest.TestCase):
    def test_weighted_splits(self):
        with tempfile.TemporaryDirectory() as root:
            write_split(root, "big", 20)
            write_split(root, "small", 3)
            fs = dataset.FeatureSet(root, "big:0.25,small:3", dataset.Units.chars())
            ids = collections.Counter(u["id"] for u in fs.utts)
            self.assertEqual(fs.split_counts, {"big": (20, 5), "small": (3, 9)})
            self.assertEqual(len(fs), 14)
            self.assertEqual(sum(1 for k in ids if k.startswith("big-")), 5)
            self.assertEqual({k: v for k, v in ids.items() if k.startswith("small-")},
                             {"small-0": 3, "small-1": 3, "small-2": 3})
            # Unweighted: each utterance once, as before weights existed.
            plain = dataset.FeatureSet(root, "big,small", dataset.Units.chars())
            self.assertEqual(len(plain), 23)
            self.assertEqual(len({u["id"] for u in plain.utts}), 23)
            # The batches hold every picked utterance once per epoch.
            seen = collections.Counter(u["id"] for b in fs.batches(40, seed=1) for u in b[4])
            self.assertEqual(seen, ids)


if __name__ == "__main__":
    unittest.main()

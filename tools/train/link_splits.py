#!/usr/bin/python3
"""A data directory that trains on splits of several data directories at once (train.py --data
reads one): each split's shards are rewritten with their feature paths under the new directory
(and the split renamed when asked), and its feature folder is a symlink, so nothing is copied.

  /usr/bin/python3 tools/train/link_splits.py --out DIR --split SRC_DIR:SPLIT[:NEW_NAME] ...

Session 29's fine-tune (MODEL_CARD.md) trained on the recipe's splits plus the device recipe's
augmented real speech unpacked elsewhere:
  link_splits.py --out /tmp/mix --split data:train --split data:train_real --split data:train_fotaq \\
    --split data:train_bass --split data:dev --split /tmp/dtfull:train_real:aug_real \\
    --split /tmp/dtfull:train_bass:aug_bass --split /tmp/dtfull:train_fotaq:aug_fotaq
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys


def link_split(src: str, split: str, name: str, out: str) -> int:
    """Links SRC/SPLIT into OUT as NAME; returns its utterance count."""
    shards = sorted(glob.glob(os.path.join(src, "shards", split, "*.json")))
    if not shards:
        raise SystemExit(f"link_splits: no shards in {src}/shards/{split}")
    os.makedirs(os.path.join(out, "shards", name), exist_ok=False)   # a name is linked once
    os.makedirs(os.path.join(out, "feats"), exist_ok=True)
    os.symlink(os.path.abspath(os.path.join(src, "feats", split)), os.path.join(out, "feats", name))
    n = 0
    prefix = f"feats/{split}/"
    for p in shards:
        with open(p) as f:
            d = json.load(f)
        for u in d["utts"]:
            path = u["feats"]["path"]
            if not path.startswith(prefix):
                raise SystemExit(f"link_splits: {p}: feature path {path} is not under {prefix}")
            u["feats"]["path"] = f"feats/{name}/" + path[len(prefix):]
            u["split"] = name
            n += 1
        with open(os.path.join(out, "shards", name, os.path.basename(p)), "w") as f:
            json.dump(d, f)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--split", action="append", required=True, metavar="SRC_DIR:SPLIT[:NEW_NAME]")
    a = ap.parse_args(argv)
    for spec in a.split:
        parts = spec.split(":")
        if len(parts) not in (2, 3) or not all(parts):
            raise SystemExit(f"link_splits: --split wants SRC_DIR:SPLIT[:NEW_NAME], not {spec}")
        name = parts[2] if len(parts) == 3 else parts[1]
        n = link_split(parts[0], parts[1], name, a.out)
        print(f"{parts[0]}/{parts[1]} -> {a.out}/{name}: {n} utterances")
    return 0


if __name__ == "__main__":
    sys.exit(main())

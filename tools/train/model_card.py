#!/usr/bin/python3
"""Write MODEL_CARD.md for an exported model from the evaluation report and the training log.

  /usr/bin/python3 tools/train/model_card.py --eval eval.json --log runs/default/log.jsonl \
      --data data --out models/default/MODEL_CARD.md [--status "interim: ..."]
"""
from __future__ import annotations

import argparse
import json
import os

CONDITIONS = [
    ("test_clean", "clean, seen voices, unseen sentences"),
    ("test_phone", "8 kHz phone channel + noise, seen voices"),
    ("test_unseen", "unseen voices, clean"),
    ("test_unseen_phone", "unseen voices, phone channel + noise"),
    ("dev_unseen", "dev voices never trained on, clean"),
    ("real_asterisk", "REAL human speech: Debian asterisk-core-sounds-en prompts (one female US speaker, 8 kHz)"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--status", default="")
    args = ap.parse_args()
    ev = json.load(open(args.eval))
    log = [json.loads(l) for l in open(args.log) if l.strip()]
    devs = [r for r in log if "dev" in r]
    stats = {}
    stats_path = os.path.join(args.data, "stats.json")
    if os.path.exists(stats_path):
        stats = json.load(open(stats_path))
    p = ev["params"]
    lines = [
        "# sluice default model: MoE CTC, English call-center speech",
        "",
    ]
    if args.status:
        lines += [f"**Status: {args.status}**", ""]
    lines += [
        "## What it is",
        f"- Parameters: {p['total'] / 1e6:.2f} M total, {p['active'] / 1e6:.2f} M active per frame "
        "(routed experts: top-4 of 32 in 8 groups, top-2 groups; 1 shared expert per layer).",
        "- Architecture: tools/train/model.py (conv x4 subsampling, 6 chunked-attention blocks with a "
        "two-level-gated MoE feed-forward, CTC over 28 characters + blank). Streaming chunk 640 ms, "
        "4 chunks of left context; the same weights run offline.",
        "- Files: model.json, weights.safetensors (f32), tokens.txt"
        + (", lm.arpa (3-gram Kneser-Ney word LM over the training text)" if os.path.exists(
            os.path.join(os.path.dirname(args.out), "lm.arpa")) else "") + ".",
        "",
        "## Training",
        f"- Checkpoint: epoch {ev['epoch']}, step {ev['step']}, {ev['train_hours']:.2f} h of training on 2 CPU cores "
        "(Debian's python3-torch 1.13, OpenBLAS pthread).",
        "- Data: tools/train/make_data.py --hours 10 --seed 1: synthetic speech from every English voice Debian "
        "ships (espeak-ng accents x variants incl. 240 generated ones, flite, festival), call-center grammar and "
        "fortunes text, noise/reverb/speed/pitch and phone-channel (G.711, GSM, AMR-NB, Opus) augmentation.",
    ]
    for split, st in stats.items():
        if isinstance(st, dict) and "hours" in st:
            lines.append(f"- {split}: {st.get('utts', '?')} utterances, {st['hours']:.2f} h, "
                         f"{st.get('voices', '?')} voices")
    if devs:
        lines.append("- Dev CER by epoch: " + ", ".join(f"{r['epoch']}: {r['dev']['cer']:.3f}" for r in devs))
    lines += ["", "## Held-out results (greedy CTC decoding, no LM)", "",
              "| condition | utterances | CER | WER |", "|---|---|---|---|"]
    for key, desc in CONDITIONS:
        c = ev["conditions"].get(key)
        if c:
            lines.append(f"| {desc} | {c['utts']} | {c['cer'] * 100:.1f}% | {c['wer'] * 100:.1f}% |")
    lines += ["", "Examples (reference / hypothesis):", ""]
    for key, _ in CONDITIONS:
        c = ev["conditions"].get(key)
        if c and c.get("samples"):
            s = c["samples"][0]
            lines.append(f"- {key}: `{s['ref']}` / `{s['hyp']}`")
    lines += ["", "## Expert load balance", "",
              "max/mean tokens per routed expert, per layer, over the test sets: " +
              ", ".join(f"{b:.2f}" for b in ev["balance_max_mean"]), "",
              "## What it is not good at yet", "",
              "- It has only heard synthetic voices: real human speech (the asterisk row) is far worse than "
              "synthetic speech, and unseen synthetic voices are worse than seen ones.",
              "- English only; characters only (no punctuation, casing or inverse text normalisation: "
              "numbers come out as words).",
              "- Overlapping speech, music on hold and far-field audio are not in the training data.",
              "", "Reproduce: see tools/train/ (make_data.py, train.py, evaluate.py, export.py, build_lm.py).", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()

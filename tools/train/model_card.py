#!/usr/bin/python3
"""Write MODEL_CARD.md for an exported model from the evaluation report and the training log.

  /usr/bin/python3 tools/train/model_card.py --eval eval.json --log runs/default/log.jsonl \
      --data data --out models/default/MODEL_CARD.md [--status "interim: ..."] \
      [--baseline old_eval.json --training-note "..."]

With --baseline (evaluate.py's report for the previous model on the same data), the results table
shows both models side by side. The data section counts hours per source and split from the
shard records of --data.
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
    ("test_real", "REAL human speech, held-out asterisk prompt sets (one female US speaker, 8 kHz recordings)"),
    ("test_real_phone", "REAL human speech, same held-out prompts through a phone codec + noise"),
    ("test_uqm", "REAL human speech of UNSEEN speakers: held-out Ur-Quan Masters voice actors (ilwrath, spathi, supox, utwig, vux; 11 kHz game dialogue)"),
    ("test_uqm_phone", "REAL human speech of unseen speakers through a phone codec + noise"),
    ("test_fotaq", "REAL human speech of held-out Flight of the Amazon Queen characters (11 kHz game dialogue; characters, not guaranteed unseen voices)"),
    ("test_fotaq_phone", "REAL human speech of unseen game characters through a phone codec + noise"),
    ("test_bass", "REAL human speech of held-out Beneath a Steel Sky character groups (11 kHz 8-bit game dialogue; groups, not guaranteed unseen voices)"),
    ("test_bass_phone", "REAL human speech of held-out Beneath a Steel Sky character groups through a phone codec + noise"),
    ("real_asterisk", "every asterisk prompt (includes prompts the fine-tuned model trained on: not a hold-out for it)"),
]
SPLIT_ORDER = ["train", "train_real", "train_uqm", "train_fotaq", "train_bass", "dev", "dev_unseen", "test_clean", "test_phone", "test_unseen",
               "test_unseen_phone", "test_real", "test_real_phone", "test_uqm", "test_uqm_phone", "test_fotaq", "test_fotaq_phone",
               "test_bass", "test_bass_phone"]
SOURCES = {
    "rhvoice": "RHVoice alan, bdl, slt, clb (held out) under LGPL-2.1+ (CMU ARCTIC recordings), evgeniy-eng and lyubov under CC BY-NC-ND 4.0 (non-commercial: drop them from voices.RHVOICE_VOICES for a commercial build); Debian non-free rhvoice, rhvoice-english",
    "mbrola": "MBROLA us1/us2/us3/en1 through espeak-ng mb-* (Debian contrib/non-free mbrola-*; the diphone databases may be used with the MBROLA program and may not be sold or incorporated into a product that is sold without the owner's permission)",
    "pico": "SVOX pico en-US / en-GB (Debian non-free libttspico-data; Apache-2.0 code, voice data under its own licence)",
    "flite": "flite kal, kal16, awb, slt, rms (Debian main; BSD-like)",
    "festival": "festival kal/ked diphones, cmu_us_slt_arctic_hts (Debian main; free)",
    "espeak": "espeak-ng formant voices incl. generated variants (Debian main; GPL-3+)",
    "uqm": "The Ur-Quan Masters 3DO voice acting, real speech of many voice actors, line-level cuts by tools/train/uqm_data.py (Debian non-free uqm-voice + uqm-content; CC BY-NC-SA 2.5: NON-COMMERCIAL, so a model trained on it is for evaluation; the recipe without uqm_data.py's splits builds one without it)",
    "fotaq": "Flight of the Amazon Queen talkie voice acting, real speech of ~36 characters (one actor may voice several), line-level clips paired with their text by tools/train/fotaq_data.py (Debian main flight-of-the-amazon-queen; (C) John Passfield and Steven Stamatiadis, freeware: may be given away, modified and redistributed marked as modified, with attribution, not sold on its own; no non-commercial clause (whether a trained model is a modified version is not settled here))",
    "bass": "Beneath a Steel Sky CD talkie voice acting, real speech of the game's characters (the game names characters, not voice actors), line-level clips paired with their text by tools/train/bass_data.py (Debian main beneath-a-steel-sky; (C) Revolution Software, freeware under the same licence text as Flight of the Amazon Queen: may be given away, modified and redistributed marked as modified, with attribution, not sold on its own; no non-commercial clause (whether a trained model is a modified version is not settled here))",
    "asterisk": "asterisk-core-sounds-en-wav, real speech of one speaker, Allison Smith (Debian main; CC BY-SA 3.0)",
}


def source_hours(data: str) -> dict:
    """{split: {engine: (hours, utterances, voices)}} from the shard records under data/shards."""
    import glob
    out: dict = {}
    for split in SPLIT_ORDER:
        per: dict = {}
        for path in sorted(glob.glob(os.path.join(data, "shards", split, "*.json"))):
            with open(path) as f:
                for u in json.load(f)["utts"]:
                    e = u["voice"].split(":", 1)[0]
                    h, n, v = per.get(e, (0.0, 0, set()))
                    v.add(u["voice"])
                    per[e] = (h + u["duration"] / 3600, n + 1, v)
        if per:
            out[split] = {e: (h, n, len(v)) for e, (h, n, v) in per.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--status", default="")
    ap.add_argument("--baseline", default="", help="evaluate.py report of the previous model")
    ap.add_argument("--baseline-name", default="previous default")
    ap.add_argument("--training-note", default="", help="a paragraph on how this model was trained")
    ap.add_argument("--data-note", default="", help="a paragraph on how the data was made")
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
    base = json.load(open(args.baseline)) if args.baseline else None
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
    ]
    if args.training_note:
        lines.append("- " + args.training_note)
    if args.data_note:
        lines.append("- Data: " + args.data_note)
    else:
        lines.append("- Data: tools/train/make_data.py --hours 10 --seed 1: synthetic speech from every English "
                     "voice Debian ships (espeak-ng accents x variants incl. 240 generated ones, flite, festival), "
                     "call-center grammar and fortunes text, noise/reverb/speed/pitch and phone-channel (G.711, GSM, "
                     "AMR-NB, Opus) augmentation.")
    hours = source_hours(args.data)
    if hours:
        lines += ["", "Hours per source and split (utterances, distinct voices):", "",
                  "| split | " + " | ".join(sorted(SOURCES)) + " | total |",
                  "|---|" + "---|" * (len(SOURCES) + 1)]
        for split, per in hours.items():
            cells = []
            for e in sorted(SOURCES):
                h = per.get(e)
                cells.append(f"{h[0]:.2f} h ({h[1]}, {h[2]})" if h else "")
            lines.append(f"| {split} | " + " | ".join(cells) + f" | {sum(h[0] for h in per.values()):.2f} h |")
        lines += ["", "Sources and licences:", ""]
        used = {e for per in hours.values() for e in per}
        lines += [f"- {e}: {SOURCES[e]}" for e in sorted(used) if e in SOURCES]
        lines.append("")
    else:
        for split, st in stats.items():
            if isinstance(st, dict) and "hours" in st:
                lines.append(f"- {split}: {st.get('utts', '?')} utterances, {st['hours']:.2f} h, "
                             f"{st.get('voices', '?')} voices")
    if devs:
        lines.append("- Dev CER by epoch: " + ", ".join(f"{r['epoch']}: {r['dev']['cer']:.3f}" for r in devs))
    lines += ["", "## Held-out results (greedy CTC decoding, no LM)", ""]
    if base:
        lines += ["Same test sets for both models. \"not in word list\": share of output words missing from "
                  "/usr/share/dict/american-english (run-together or misspelt words).", "",
                  f"| condition | utterances | CER ({args.baseline_name}) | CER (this) | WER ({args.baseline_name}) "
                  f"| WER (this) | not in word list ({args.baseline_name}) | not in word list (this) |",
                  "|---|---|---|---|---|---|---|---|"]
    else:
        lines += ["| condition | utterances | CER | WER | not in word list |", "|---|---|---|---|---|"]

    def pct(c, k):
        return f"{c[k] * 100:.1f}%" if c and k in c else "-"
    for key, desc in CONDITIONS:
        c = ev["conditions"].get(key)
        if not c:
            continue
        if base:
            b = base["conditions"].get(key)
            lines.append(f"| {desc} | {c['utts']} | {pct(b, 'cer')} | {pct(c, 'cer')} | {pct(b, 'wer')} | "
                         f"{pct(c, 'wer')} | {pct(b, 'oov_rate')} | {pct(c, 'oov_rate')} |")
        else:
            lines.append(f"| {desc} | {c['utts']} | {pct(c, 'cer')} | {pct(c, 'wer')} | {pct(c, 'oov_rate')} |")
    lines += ["", "Examples (reference / hypothesis):", ""]
    for key, _ in CONDITIONS:
        c = ev["conditions"].get(key)
        if c and c.get("samples"):
            s = c["samples"][0]
            lines.append(f"- {key}: `{s['ref']}` / `{s['hyp']}`")
    lines += ["", "## Expert load balance", "",
              "max/mean tokens per routed expert, per layer, over the test sets: " +
              ", ".join(f"{b:.2f}" for b in ev["balance_max_mean"]), "",
              "## What it is not good at yet", ""]
    used_sources = {e for per in hours.values() for e in per} if hours else set()
    games = [name for key, name in (("uqm", "the training voice actors of The Ur-Quan Masters (some voices "
                                             "effect-processed; its test_uqm rows: five speakers never trained on)"),
                                     ("fotaq", "the training characters of Flight of the Amazon Queen"),
                                     ("bass", "the training character groups of Beneath a Steel Sky"))
             if key in used_sources]
    if games:
        lines += ["- Real human speech in training: the asterisk prompts (one speaker) and game dialogue: " +
                  "; ".join(games) + ". The games name characters, not voice actors, and lines whose speaker "
                  "was not resolved train, so the held-out game rows are held-out characters, not guaranteed "
                  "unseen voices.",
                  "- No conversational telephone speech of real callers: call-center sentences come from TTS voices "
                  "and one IVR speaker."]
        if "uqm" in used_sources:
            lines += ["- The Ur-Quan Masters voice acting is licensed for non-commercial use only, so this model is "
                      "for evaluation: tools/train/recipe_cpu.sh --commercial builds one without it."]
    else:
        lines += ["- Real human speech in training is one speaker (asterisk prompts): the real-speech rows measure "
                  "held-out prompts of that voice, not unseen people; no multi-speaker real corpus was used."]
    lines += [
              "- English only; characters only (no punctuation, casing or inverse text normalisation: "
              "numbers come out as words).",
              "- Overlapping speech, music on hold and far-field audio are not in the training data.",
              "", "Reproduce: see tools/train/ (make_data.py, train.py, evaluate.py, export.py, build_lm.py).", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()

"""What the talkie-game extractors (fotaq_data.py, bass_data.py) share once each game's own
parser has paired its clips with their lines: the dictionary filter, the hold-out of whole
speakers, the shard plans, the speaker listing and the outputs (manifest, make_data shards).
A line is anything with .clip, .text and .speaker.
"""
from __future__ import annotations

import hashlib
import os
import random

import text_norm

DICTIONARY = "/usr/share/dict/american-english"


def mostly_words(text: str, dictionary: set[str]) -> bool:
    """At least half the words are English words or names (not "mmf", "aargh", "hmmm"): drops
    growls, hesitations and names spelt letter by letter."""
    ws = text.split()
    known = sum(w in dictionary or w.removesuffix("'s") in dictionary for w in ws)
    return 2 * known >= len(ws)


def keep_words(lines: list, stats: dict, source: str) -> list:
    """The lines that are mostly words (wamerican); their count dropped goes to stats."""
    if not os.path.exists(DICTIONARY):
        print(f"{source}_data: no {DICTIONARY} (Debian wamerican): non-word lines kept", flush=True)
        return lines
    words = text_norm.load_dictionary(DICTIONARY)
    kept = [ln for ln in lines if mostly_words(ln.text, words)]
    stats["not_words"] = len(lines) - len(kept)
    return kept


def hold_out(lines: list, source: str, never: set[str], fraction: float) -> set[str]:
    """Whole speakers held out, in an order fixed by a hash of their names, until `fraction` of
    the lines are; speakers in `never` and any larger than that on their own stay in training."""
    counts: dict[str, int] = {}
    for ln in lines:
        counts[ln.speaker] = counts.get(ln.speaker, 0) + 1
    budget = fraction * sum(counts.values())
    eligible = [s for s, n in counts.items() if s not in never and n <= budget]
    taken, out = 0, set()
    for s in sorted(eligible, key=lambda s: hashlib.sha1(f"{source}-holdout/{s}".encode()).hexdigest()):
        if taken >= budget:
            break
        out.add(s)
        taken += counts[s]
    return out


def plans(source: str, lines: list, wavs: dict, held: set[str], copies: int, seed: int,
          shard_size: int) -> dict[str, list[list[dict]]]:
    """make_data shard plans: train_SOURCE (`copies` copies, the first as recorded, the others
    through the training augmentation), test_SOURCE and test_SOURCE_phone (held-out speakers)."""
    import augment
    import make_data
    train, test, phone = f"train_{source}", f"test_{source}", f"test_{source}_phone"
    items: dict[str, list[dict]] = {train: [], test: [], phone: []}
    for ln in lines:
        if ln.clip not in wavs:
            continue
        if ln.speaker in held:
            copies_of = [(test, "clean"), (phone, "phone_noise")]
        else:
            copies_of = [(train, "clean" if c == 0 else "train") for c in range(copies)]
        for c, (split, cond) in enumerate(copies_of):
            rng = random.Random(f"{seed}/{split}/{ln.clip}/{c}")
            items[split].append({
                "id": f"{split}-{ln.clip}-{c}", "tts_text": ln.text, "text": ln.text,
                "source": f"{source}:{ln.speaker}", "voice": f"{source}:{ln.speaker}",
                "tts": {"path": wavs[ln.clip][0]}, "split": split, "condition": cond,
                "augment": augment.draw(rng, cond)})
    return make_data.shard_items(items, seed, shard_size)


def print_speakers(lines: list, held: set[str], width: int) -> None:
    per: dict[str, int] = {}
    for ln in lines:
        per[ln.speaker] = per.get(ln.speaker, 0) + 1
    for s, n in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"{s:{width}s} {n:5d} lines {'TEST' if s in held else ''}", flush=True)


def write_outputs(args, source: str, lines: list, wavs: dict, held: set[str], third_column,
                  licence: str) -> int:
    """--manifest (clip, speaker, third_column(line), seconds, wav, transcript, train|test), then,
    unless --no-shards, the make_data shards and the hold-out report."""
    if args.manifest:
        with open(args.manifest, "w", encoding="utf-8") as f:
            for ln in lines:
                if ln.clip in wavs:
                    path, seconds = wavs[ln.clip]
                    split = "test" if ln.speaker in held else "train"
                    f.write(f"{ln.clip}\t{ln.speaker}\t{third_column(ln)}\t{seconds:.3f}\t{path}\t"
                            f"{ln.text}\t{split}\n")
    if args.no_shards:
        return 0
    import make_data
    make_data.run_plans(args.out, plans(source, lines, wavs, held, args.copies, args.seed,
                                        args.shard_size), args.workers)
    make_data.holdout_report(args.out, (f"train_{source}", f"test_{source}", f"test_{source}_phone"),
                             lambda u: u["voice"], "speakers", f"{source}_stats.json", {"licence": licence})
    return 0
